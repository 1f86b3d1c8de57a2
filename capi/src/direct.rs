//! The table behind `shmem.h`'s direct paths (`header_direct.h`): inline
//! functions in the program do puts, gets and atomics on mapped memory
//! themselves, from this exported struct, instead of calling the library.
//! `shmem_init` fills it in from `World::direct_map` and `shmem_finalize`
//! empties it (`n_pes` 0 sends every call to the library, which reports a
//! call outside init .. finalize). It is written only by those two calls,
//! which no other call may overlap, like the state in `state`.
//!
//! A profiling tool that defines one of the inlined names in an object
//! loaded ahead of this library (`LD_PRELOAD`, or linked first) must see
//! those calls too: `shmem_init` then leaves the table empty
//! (`interposed`), and every inline function calls the named routine,
//! which the dynamic linker resolves to the tool's.

use libc::{c_int, c_void};
use oneside::World;
use std::cell::UnsafeCell;
use std::ffi::CString;

/// The array calls `shmem.h` inlines per standard RMA type (`shmem_long_put`).
pub const RMA_OPS: [&str; 4] = ["put", "get", "put_nbi", "get_nbi"];
/// The sized calls it inlines (`shmem_put64`, `shmem_putmem`).
pub const SIZED_OPS: [&str; 2] = ["put", "get"];
/// The by-value calls it inlines per scalar type (`shmem_long_p`).
pub const SCALAR_OPS: [&str; 2] = ["p", "g"];
/// The atomics it inlines per standard AMO type, with their arguments.
pub const AMO_OPS: [(&str, &str); 8] = [
    ("fetch_add", "dest, value, pe"),
    ("add", "dest, value, pe"),
    ("fetch_inc", "dest, pe"),
    ("inc", "dest, pe"),
    ("compare_swap", "dest, cond, value, pe"),
    ("swap", "dest, value, pe"),
    ("fetch", "source, pe"),
    ("set", "dest, value, pe"),
];

/// `struct oneside_direct` of `header_direct.h`, field for field.
#[repr(C)]
pub struct Direct {
    heap: usize,
    heap_len: usize,
    data: usize,
    data_len: usize,
    bases: *const *mut u8,
    n_pes: c_int,
    cpu_atomics: c_int,
    quiet_is_fence: c_int,
}

const EMPTY: Direct = Direct {
    heap: 0,
    heap_len: 0,
    data: 0,
    data_len: 0,
    bases: std::ptr::null(),
    n_pes: 0,
    cpu_atomics: 0,
    quiet_is_fence: 0,
};

#[repr(transparent)]
pub struct Exported(UnsafeCell<Direct>);

// SAFETY: see the module docs: written only by shmem_init and
// shmem_finalize, which no other call overlaps.
unsafe impl Sync for Exported {}

/// The symbol `shmem.h` declares as `extern struct oneside_direct oneside_direct`.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static oneside_direct: Exported = Exported(UnsafeCell::new(EMPTY));

/// The published table: it points into the bases this owns, and empties
/// itself when dropped (at `shmem_finalize`).
pub struct Published {
    _bases: Box<[*mut u8]>,
}

/// Every routine name `shmem.h` turns into an inline direct path.
pub fn inlined_names() -> Vec<String> {
    let mut names = vec!["shmem_quiet".to_string(), "shmem_fence".to_string()];
    macro_rules! rma {
        ($n:tt, $t:ty, $c:literal) => {
            names.extend(RMA_OPS.iter().map(|op| format!("shmem_{}_{op}", stringify!($n))));
        };
    }
    macro_rules! sized {
        ($n:tt, $t:ty, $c:literal) => {
            names.extend(SIZED_OPS.iter().map(|op| format!("shmem_{op}{}", stringify!($n))));
        };
    }
    macro_rules! scalar {
        ($n:tt, $t:ty, $c:literal) => {
            names.extend(
                SCALAR_OPS
                    .iter()
                    .map(|op| format!("shmem_{}_{op}", stringify!($n))),
            );
        };
    }
    macro_rules! amo {
        ($n:tt, $t:ty, $c:literal) => {
            names.extend(
                AMO_OPS
                    .iter()
                    .map(|(op, _)| format!("shmem_{}_atomic_{op}", stringify!($n))),
            );
        };
    }
    for_rma_types!(rma);
    for_sizes!(sized);
    for_scalar_rma_types!(scalar);
    for_amo_types!(amo);
    names
}

/// Where the loaded object holding `addr` starts, if any holds it.
fn object_base(addr: *const c_void) -> Option<usize> {
    // SAFETY: Dl_info is plain data; dladdr only writes it.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads no memory at `addr`, only the loader's tables.
    let found = unsafe { libc::dladdr(addr, &mut info) };
    (found != 0).then_some(info.dli_fbase as usize)
}

/// A private item of this library, which no other object can interpose.
static ANCHOR: u8 = 0;

/// The first inlined routine whose name the dynamic linker resolves to an
/// object other than this library (a profiling tool's wrapper), if any.
pub fn interposed() -> Option<String> {
    let own = object_base(std::ptr::addr_of!(ANCHOR).cast())?;
    inlined_names().into_iter().find(|name| {
        let Ok(symbol) = CString::new(name.as_str()) else {
            return false;
        };
        // SAFETY: a NUL-terminated name looked up in the global scope.
        let at = unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) };
        !at.is_null() && object_base(at) != Some(own)
    })
}

/// Fills the table from `world`, or leaves it empty when a tool interposes
/// an inlined routine (so that the program's calls reach the tool) or the
/// runtime profiles (`rlaunch --profile`, so that it counts every call).
pub fn publish(world: &World) -> Published {
    if interposed().is_some() || oneside::profile::configured() || world.checking() {
        return Published { _bases: Box::new([]) };
    }
    let map = world.direct_map();
    let bases = map.bases.into_boxed_slice();
    let table = Direct {
        heap: map.heap,
        heap_len: map.heap_len,
        data: map.data,
        data_len: map.data_len,
        bases: bases.as_ptr(),
        n_pes: c_int::try_from(bases.len()).unwrap_or(0),
        cpu_atomics: c_int::from(map.cpu_atomics),
        quiet_is_fence: c_int::from(map.quiet_is_fence),
    };
    // SAFETY: see the module docs; called by shmem_init only.
    unsafe { *oneside_direct.0.get() = table };
    Published { _bases: bases }
}

impl Drop for Published {
    /// Empties the table, so that every call goes to the library again.
    fn drop(&mut self) {
        // SAFETY: see the module docs; dropped by shmem_finalize only.
        unsafe { *oneside_direct.0.get() = EMPTY };
    }
}
