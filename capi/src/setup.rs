//! Library setup, exit and query (`shmem_init` ... `shmem_info_get_name`),
//! symmetric memory management (`shmem_malloc` ...), ordering and the
//! world barriers, locks, and the deprecated names of the same calls.

use crate::convert::sym;
use crate::state::{self, fail, ok, world, State};
use libc::{c_char, c_int, c_long, c_void};
use oneside::prelude::*;
use oneside::{Lock, Options};

/// `SHMEM_THREAD_MULTIPLE`: the highest level this library grants (the
/// world is shared by threads; see `state`).
const THREAD_MULTIPLE: c_int = 3;
const VENDOR: &[u8] = b"oneside\0";

fn init(api: &'static str, requested: c_int) {
    // Messages say "PE", as OpenSHMEM does.
    oneside::speak_of_pes();
    // The race checker names the C caller's line, not the library's.
    oneside::race::set_c_program();
    // OpenSHMEM 1.6: init may be called many times; the library stays
    // initialized until the matching number of finalize calls.
    match state::enter() {
        state::Entry::Again => return,
        state::Entry::AfterFinalize => fail(
            api,
            &"called after the last shmem_finalize: the library cannot be initialized again \
              (call shmem_init as often as shmem_finalize, and finalize last)",
        ),
        state::Entry::First => {}
    }
    // OpenSHMEM's variable for the heap size, unless ours is set.
    if std::env::var_os("ONESIDE_HEAP_SIZE").is_none() {
        if let Some(size) = std::env::var_os("SHMEM_SYMMETRIC_SIZE") {
            std::env::set_var("ONESIDE_HEAP_SIZE", size);
        }
    }
    // Reports and errors name a Python program's own line, not shmem4py's C.
    oneside::site::set_foreign_caller(|| crate::python::caller().map(|at| format!("{at} (Python)")));
    let world = ok(api, oneside::init_with(Options::new().symmetric_globals(true)));
    // Checking modes name the C caller of every call: noted at entry.
    crate::caller::set_noting(world.checking());
    // SHMEM_TEAM_SHARED is the library's, not the program's: its
    // collectives are profiled as init's.
    let (shared, direct) = oneside::profile::runtime_own(|| {
        let shared = ok(api, world.split_node());
        // The race checker's phase then begins after the split, whose
        // acquires would otherwise count as the program's first (and
        // order every access of the phase after them).
        if world.checking() {
            ok(api, world.barrier());
            oneside::race::init_ended();
        }
        (shared, crate::direct::publish(&world))
    });
    state::install(State {
        world,
        shared,
        direct,
        thread_level: requested.clamp(0, THREAD_MULTIPLE),
    });
    // A program that returns from main without shmem_finalize still says
    // goodbye to its peers, as in Sandia OpenSHMEM; one that exits with a
    // failure does not (glibc's on_exit, unlike atexit, gives the status).
    // SAFETY: registering a plain extern "C" function with no argument.
    unsafe { on_exit(finalize_at_exit, std::ptr::null_mut()) };
}

extern "C" {
    /// glibc's `on_exit(3)`: `f(status, arg)` at `exit`, as `atexit` but
    /// with the exit status.
    fn on_exit(f: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

/// At exit: a PE that exits with status 0 (main returned, `exit(0)`,
/// shmem4py's exit hook deferred to here) says goodbye to its peers, which
/// may compute for a long time yet. One that exits with any other status
/// has failed: it leaves at once without a farewell, so rlaunch (or
/// mpirun) sees it go with its status and ends the job within a second
/// (an `exit(3)` right after `shmem_init` used to sleep in this farewell
/// until the others finished their work, and the job then ended 0 s after
/// them). An error or shmem_global_exit ends the PE without one too; the
/// profile and trace asked for are still written.
extern "C" fn finalize_at_exit(status: c_int, _: *mut c_void) {
    match state::exiting() || status != 0 {
        false => finalize_now("at exit, without shmem_finalize (main returned, or exit was called)"),
        true => {
            let _ = oneside::profile::write_now();
        }
    }
}

/// `shmem_finalize`: the last of as many calls as `shmem_init` had
/// finalizes the library. Called from a Python interpreter's shutdown
/// (shmem4py's exit hook), it is left to the exit handler above, which
/// knows whether the program failed: `sys.exit(3)` and an uncaught
/// exception reach the hook before the process's status exists.
fn finalize() {
    if crate::python::finalizing() {
        return;
    }
    if state::leave() {
        finalize_now("from shmem_finalize");
    }
}

/// `at`: how the program got here, for rlaunch's reports.
fn finalize_now(at: &str) {
    oneside::watch::c_entered("shmem_finalize");
    if !state::initialized() {
        return;
    }
    crate::ctx::destroy_all();
    let Some(state) = state::take() else {
        return;
    };
    let State {
        world, shared, direct, ..
    } = state;
    drop(direct);
    ok(
        "shmem_finalize",
        oneside::profile::runtime_own(|| world.team_destroy(shared)),
    );
    match world.finalize_from(at) {
        // rlaunch ended the job because a peer waits for this PE in a call
        // it will never make, and says so: the process goes on to its own
        // exit, whose status becomes the job's.
        Err(e) if matches!(e.kind(), oneside::Error::FinalizeAbandoned { .. }) => {}
        other => ok("shmem_finalize", other),
    }
}

export! {
    pub extern "C" fn shmem_init() {
        init("shmem_init", 0);
    }
}

export! {
    /// # Safety
    /// `provided` must be null or valid for one write of an int.
    pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
        init("shmem_init_thread", requested);
        if !provided.is_null() {
            // SAFETY: the caller passes a writable int.
            unsafe { provided.write(state::state("shmem_init_thread").thread_level) };
        }
        0
    }
}

export! {
    /// Nonzero between the first `shmem_init` and the last `shmem_finalize`.
    ///
    /// # Safety
    /// `initialized` must be valid for one write of an int.
    pub unsafe extern "C" fn shmem_query_initialized(initialized: *mut c_int) {
        // SAFETY: the caller passes a writable int.
        unsafe { initialized.write(c_int::from(state::initialized())) };
    }
}

export! {
    /// # Safety
    /// `provided` must be valid for one write of an int.
    pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
        // SAFETY: the caller passes a writable int.
        unsafe { provided.write(state::state("shmem_query_thread").thread_level) };
    }
}

export! {
    pub extern "C" fn shmem_finalize() {
        finalize();
    }
}

export! {
    pub extern "C" fn shmem_my_pe() -> c_int {
        world("shmem_my_pe").rank() as c_int
    }
}

export! {
    pub extern "C" fn shmem_n_pes() -> c_int {
        world("shmem_n_pes").size() as c_int
    }
}

export! {
    pub extern "C" fn shmem_global_exit(status: c_int) -> ! {
        state::global_exit(status)
    }
}

export! {
    pub extern "C" fn shmem_pe_accessible(pe: c_int) -> c_int {
        c_int::from((0..shmem_n_pes()).contains(&pe))
    }
}

export! {
    pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
        let symmetric = world("shmem_addr_accessible").offset_of(addr as usize, 1).is_some();
        c_int::from(symmetric && shmem_pe_accessible(pe) == 1)
    }
}

export! {
    pub extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
        let target = crate::convert::pe(pe);
        world("shmem_ptr")
            .peer_address(dest as usize, target)
            .map_or(std::ptr::null_mut(), |p| p.cast())
    }
}

export! {
    /// # Safety
    /// `major` and `minor` must each be valid for one write of an int.
    pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
        // SAFETY: the caller passes writable ints.
        unsafe {
            major.write(1);
            minor.write(6);
        }
    }
}

export! {
    /// # Safety
    /// `name` must be valid for writes of `SHMEM_MAX_NAME_LEN` bytes, as
    /// the specification says (this writes 8: `oneside` and its NUL).
    pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
        // SAFETY: the caller passes SHMEM_MAX_NAME_LEN writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(VENDOR.as_ptr().cast(), name, VENDOR.len()) };
    }
}

/// Collective allocation of `size` bytes aligned to `align`; NULL for 0.
fn allocate(api: &'static str, size: usize, align: usize) -> *mut c_void {
    if size == 0 {
        return std::ptr::null_mut();
    }
    if !align.is_power_of_two() {
        fail(api, &format!("alignment {align} is not a power of two"));
    }
    let w = world(api);
    let e = match w.alloc_aligned::<u8>(size, align) {
        Ok(object) => return w.address_of(&object).cast(),
        Err(e) => e,
    };
    let line = match *e.kind() {
        // The same on every PE (the heap is symmetric): all return NULL,
        // as the specification asks, and none waits in the barrier.
        oneside::Error::HeapExhausted {
            requested,
            largest_free,
            heap_size,
            capped,
            ..
        } => crate::alloc_note::full(api, w.rank(), requested, largest_free, (heap_size, capped)),
        // The vote made every PE fail together.
        oneside::Error::HeapGrowth { .. } => crate::alloc_note::cannot_grow(api, &e),
        _ => return ok(api, Err(e)),
    };
    crate::alloc_note::keep(&line, w.rank(), w.checking());
    std::ptr::null_mut()
}

export! {
    /// Bytes the symmetric heap has now (the same on every PE): oneside's
    /// heap grows as the program allocates. An extension (`shmemx.h`).
    pub extern "C" fn shmemx_heap_size() -> usize {
        world("shmemx_heap_size").heap_info().size
    }
}

export! {
    /// The most the symmetric heap may grow to: `SHMEM_SYMMETRIC_SIZE`
    /// when set, else the address space reserved for it.
    pub extern "C" fn shmemx_heap_cap() -> usize {
        world("shmemx_heap_cap").heap_info().cap
    }
}

export! {
    /// The cap less what live objects hold: what may still be allocated
    /// if the host has the memory (in one piece or several).
    pub extern "C" fn shmemx_heap_free() -> usize {
        world("shmemx_heap_free").heap_info().free()
    }
}

export! {
    pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
        allocate("shmem_malloc", size, 64)
    }
}

export! {
    pub extern "C" fn shmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
        allocate("shmem_malloc_with_hints", size, 64)
    }
}

export! {
    pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
        match count.checked_mul(size) {
            Some(bytes) => allocate("shmem_calloc", bytes, 64),
            None => fail("shmem_calloc", &format!("{count} x {size} bytes overflows")),
        }
    }
}

export! {
    pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
        allocate("shmem_align", size, alignment)
    }
}

fn release(api: &'static str, ptr: *mut c_void) {
    // A Python interpreter that shuts down frees shmem4py's arrays as it
    // collects them, each free a collective barrier: a PE that left early
    // (sys.exit(0), an exception) hung there, out of sight of rlaunch's
    // deadlock check, while a peer waited for it. The heap goes with the
    // process: nothing is freed then.
    if ptr.is_null() || crate::python::finalizing() {
        return;
    }
    let w = world(api);
    // One byte, so that the object is found by its address.
    ok(api, w.free(sym(api, w, ptr.cast::<u8>().cast_const(), 1)));
}

export! {
    pub extern "C" fn shmem_free(ptr: *mut c_void) {
        release("shmem_free", ptr);
    }
}

export! {
    pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
        const API: &str = "shmem_realloc";
        if ptr.is_null() {
            return allocate(API, size, 64);
        }
        if size == 0 {
            release(API, ptr);
            return std::ptr::null_mut();
        }
        let w = world(API);
        let offset = w.offset_of(ptr as usize, 0);
        let Some(old) = offset.and_then(|o| w.allocation_bytes(o)) else {
            fail(API, &format!("{ptr:?} is not memory from shmem_malloc"));
        };
        let new = allocate(API, size, 64);
        if new.is_null() {
            // The old block stays, as the specification says (and on every
            // PE: the failure is symmetric).
            return new;
        }
        // SAFETY: both blocks are live in this rank's heap and disjoint.
        unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), new.cast::<u8>(), old.min(size)) };
        release(API, ptr);
        new
    }
}

export! {
    pub extern "C" fn shmem_quiet() {
        ok("shmem_quiet", world("shmem_quiet").quiet());
    }
}

export! {
    pub extern "C" fn shmem_fence() {
        ok("shmem_fence", world("shmem_fence").fence());
    }
}

export! {
    pub extern "C" fn shmem_barrier_all() {
        crate::ctx::quiet_all("shmem_barrier_all");
        ok("shmem_barrier_all", world("shmem_barrier_all").barrier());
    }
}

export! {
    pub extern "C" fn shmem_sync_all() {
        ok("shmem_sync_all", world("shmem_sync_all").sync_all());
    }
}

fn lock_at(api: &'static str, lock: *mut c_long) -> Lock {
    Lock::from_word(sym(api, world(api), lock.cast::<u64>().cast_const(), 1))
}

export! {
    pub extern "C" fn shmem_set_lock(lock: *mut c_long) {
        const API: &str = "shmem_set_lock";
        ok(API, world(API).set_lock(&lock_at(API, lock)));
    }
}

export! {
    pub extern "C" fn shmem_test_lock(lock: *mut c_long) -> c_int {
        const API: &str = "shmem_test_lock";
        // OpenSHMEM returns 0 when the lock was taken.
        c_int::from(!ok(API, world(API).test_lock(&lock_at(API, lock))))
    }
}

export! {
    pub extern "C" fn shmem_clear_lock(lock: *mut c_long) {
        const API: &str = "shmem_clear_lock";
        ok(API, world(API).clear_lock(&lock_at(API, lock)));
    }
}

export! {
    pub extern "C" fn start_pes(_npes: c_int) {
        init("start_pes", 0);
    }
}

export! {
    pub extern "C" fn _my_pe() -> c_int {
        shmem_my_pe()
    }
}

export! {
    pub extern "C" fn _num_pes() -> c_int {
        shmem_n_pes()
    }
}

export! {
    pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
        allocate("shmalloc", size, 64)
    }
}

export! {
    pub extern "C" fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
        allocate("shmemalign", size, alignment)
    }
}

export! {
    pub extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
        shmem_realloc(ptr, size)
    }
}

export! {
    pub extern "C" fn shfree(ptr: *mut c_void) {
        release("shfree", ptr);
    }
}

export! {
    /// `shmem_pcontrol(level, ...)`: records the profiling level where the
    /// library's own profiling and any tool read it (`oneside::profiling_level`).
    /// The C declaration is variadic, as the specification's; the arguments
    /// after `level` are a tool's own, and on the System V ABIs a variadic
    /// call passes `level` in the register this definition reads.
    pub extern "C" fn shmem_pcontrol(level: c_int) {
        oneside::set_profiling_level(level);
    }
}

/// The cache-management calls of OpenSHMEM 1.0, deprecated and without
/// effect on cache-coherent machines.
macro_rules! no_effect {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        export! {
            pub extern "C" fn $name($($arg: $ty),*) {
                $(let _ = $arg;)*
            }
        }
    )*};
}

no_effect! {
    shmem_set_cache_inv();
    shmem_clear_cache_inv();
    shmem_udcflush();
    shmem_set_cache_line_inv(target: *mut c_void);
    shmem_clear_cache_line_inv(target: *mut c_void);
    shmem_udcflush_line(target: *mut c_void);
}
