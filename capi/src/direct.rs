//! The table behind `shmem.h`'s direct paths (`header_direct.h`): inline
//! functions in the program do puts, gets and atomics on mapped memory
//! themselves, from this exported struct, instead of calling the library.
//! `shmem_init` fills it in from `World::direct_map` and `shmem_finalize`
//! empties it (`n_pes` 0 sends every call to the library, which reports a
//! call outside init .. finalize). It is written only by those two calls,
//! which no other call may overlap, like the state in `state`.

use libc::c_int;
use oneside::World;
use std::cell::UnsafeCell;

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

/// Fills the table from `world`.
pub fn publish(world: &World) -> Published {
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
