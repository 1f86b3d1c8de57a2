//! Threads a C program starts itself (POSIX threads), for the race
//! checker (`oneside::race::threads`), as ThreadSanitizer's runtime sees
//! them: this library defines `pthread_create`, `pthread_join`, the
//! mutex, condition variable, barrier and semaphore calls in front of
//! libc's, tells the checker what each orders, and calls libc's own
//! (`next`). With the checker off each is that call and one load more.
//!
//! - A thread whose start routine is in the program's executable begins
//!   in its creator's view and publishes its own when it returns (or
//!   calls `pthread_exit`), for `pthread_join` to acquire. Threads that
//!   libraries start (libgomp's, libomp's, this library's own) are not
//!   the program's, and are passed through.
//! - Unlocking a mutex, waiting on a condition variable (which unlocks
//!   its mutex), a barrier and `sem_post` release on the object's
//!   address; locking, the end of the wait, the barrier and `sem_wait`
//!   acquire it.
//!
//! Read-write and spin locks are not modeled: a program that orders its
//! threads only with them can be told of a race that is not one. The
//! program must be built with ThreadSanitizer's instrumentation, whose
//! atomics the checker sees (GCC's, or Clang's with `-pthread`):
//! otherwise its threads follow their PE's count, as before.

// Each function's safety is its POSIX contract: called by the program
// with the arguments libc's own takes.
#![allow(clippy::missing_safety_doc)]

use oneside::race::threads;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

type Start = unsafe extern "C" fn(*mut c_void) -> *mut c_void;

/// libc's `$name`, of C type `$ty`.
macro_rules! libc_real {
    ($name:ident: $ty:ty) => {
        real!($name: $ty, c"libc.so.6")
    };
}

/// Where the program's executable is loaded (its base), found once from
/// its entry point.
fn executable_base() -> usize {
    static BASE: AtomicUsize = AtomicUsize::new(0);
    let cached = BASE.load(Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: getauxval and dladdr with a valid out-parameter.
    let base = unsafe { object_base(libc::getauxval(libc::AT_ENTRY) as usize) };
    BASE.store(base, Relaxed);
    base
}

/// The base of the object that holds `address` (0 if none).
///
/// # Safety
///
/// Any address may be asked about.
unsafe fn object_base(address: usize) -> usize {
    // SAFETY: `Dl_info` is plain C data, for which all zeroes is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-parameter.
    match unsafe { libc::dladdr(address as *const c_void, &mut info) } {
        0 => 0,
        _ => info.dli_fbase as usize,
    }
}

/// What a started thread runs before the program's routine.
struct Begin {
    start: Start,
    arg: *mut c_void,
    stamp: u64,
}

/// The threads the program started and has not joined, with the stamp
/// each began with.
static STARTED: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());

thread_local! {
    /// In a thread the program started: the view it had before, for
    /// `pthread_exit`.
    static PREV: Cell<Option<u64>> = const { Cell::new(None) };
}

/// A started thread's own beginning and end around the program's routine.
unsafe extern "C" fn begin(begin: *mut c_void) -> *mut c_void {
    // SAFETY: `pthread_create` passes a `Begin` it boxed for this thread.
    let b = unsafe { Box::from_raw(begin as *mut Begin) };
    let prev = threads::entered(b.stamp);
    PREV.with(|p| p.set(Some(prev)));
    // SAFETY: the program's routine and argument, as it gave them.
    let result = unsafe { (b.start)(b.arg) };
    done();
    result
}

/// The calling started thread is done (returned, or `pthread_exit`).
fn done() {
    if let Some(prev) = PREV.with(|p| p.take()) {
        // SAFETY: pthread_self has no preconditions.
        threads::ended(unsafe { libc::pthread_self() } as usize, prev);
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: Start,
    arg: *mut c_void,
) -> c_int {
    let real = libc_real!(pthread_create: unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, Start, *mut c_void) -> c_int);
    // SAFETY: dladdr of a code address.
    let program = !thread.is_null() && unsafe { object_base(start as usize) } == executable_base();
    let stamp = match program {
        true => threads::spawned(),
        false => threads::OFF,
    };
    if stamp == threads::OFF {
        // SAFETY: the program's own call.
        return unsafe { real(thread, attr, start, arg) };
    }
    let b = Box::into_raw(Box::new(Begin { start, arg, stamp }));
    // The started list is written before the thread can be joined.
    let mut started = lock(&STARTED);
    // SAFETY: libc's, with `begin` and the box it frees.
    let result = unsafe { real(thread, attr, begin, b.cast()) };
    match result {
        // SAFETY: on success libc wrote the thread's id.
        0 => started.push((unsafe { *thread } as usize, stamp)),
        _ => {
            drop(started);
            // SAFETY: the thread was not made, so the box is still ours.
            drop(unsafe { Box::from_raw(b) });
            threads::reaped(0, stamp);
        }
    }
    result
}

#[no_mangle]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, ret: *mut *mut c_void) -> c_int {
    let real = libc_real!(pthread_join: unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int);
    // SAFETY: the program's own call.
    let result = unsafe { real(thread, ret) };
    if result == 0 {
        let mut started = lock(&STARTED);
        if let Some(i) = started.iter().position(|&(t, _)| t == thread as usize) {
            let (_, stamp) = started.swap_remove(i);
            drop(started);
            threads::reaped(thread as usize, stamp);
        }
    }
    result
}

#[no_mangle]
pub unsafe extern "C" fn pthread_exit(value: *mut c_void) -> ! {
    done();
    let real = libc_real!(pthread_exit: unsafe extern "C" fn(*mut c_void) -> !);
    // SAFETY: the program's own call.
    unsafe { real(value) }
}

/// The list's lock, whatever a panicking holder left.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Calls that release on their first argument's address before libc's,
/// acquire on it after (when libc's succeeded), or both.
macro_rules! orders {
    ($($name:ident($first:ident: $t:ty $(, $arg:ident: $at:ty)*) => $release:literal, $acquire:literal;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($first: $t $(, $arg: $at)*) -> c_int {
            let real = libc_real!($name: unsafe extern "C" fn($t $(, $at)*) -> c_int);
            if $release {
                threads::publish($first as usize);
            }
            // SAFETY: the program's own call.
            let result = unsafe { real($first $(, $arg)*) };
            if $acquire && result == 0 {
                threads::acquire($first as usize);
            }
            result
        }
    )*};
}

orders! {
    pthread_mutex_lock(m: *mut libc::pthread_mutex_t) => false, true;
    pthread_mutex_trylock(m: *mut libc::pthread_mutex_t) => false, true;
    pthread_mutex_timedlock(m: *mut libc::pthread_mutex_t, t: *const libc::timespec) => false, true;
    pthread_mutex_unlock(m: *mut libc::pthread_mutex_t) => true, false;
    sem_post(s: *mut libc::sem_t) => true, false;
    sem_wait(s: *mut libc::sem_t) => false, true;
    sem_trywait(s: *mut libc::sem_t) => false, true;
    sem_timedwait(s: *mut libc::sem_t, t: *const libc::timespec) => false, true;
}

/// A condition variable's wait: its mutex is released, then taken again.
macro_rules! waits {
    ($($name:ident($($arg:ident: $at:ty),*);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(c: *mut libc::pthread_cond_t, m: *mut libc::pthread_mutex_t $(, $arg: $at)*) -> c_int {
            let real = libc_real!($name: unsafe extern "C" fn(*mut libc::pthread_cond_t, *mut libc::pthread_mutex_t $(, $at)*) -> c_int);
            threads::publish(m as usize);
            // SAFETY: the program's own call.
            let result = unsafe { real(c, m $(, $arg)*) };
            threads::acquire(m as usize);
            result
        }
    )*};
}

waits! {
    pthread_cond_wait();
    pthread_cond_timedwait(t: *const libc::timespec);
}

/// A barrier: a release as a thread arrives, an acquire as it leaves.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut libc::pthread_barrier_t) -> c_int {
    let real = libc_real!(pthread_barrier_wait: unsafe extern "C" fn(*mut libc::pthread_barrier_t) -> c_int);
    threads::publish(b as usize);
    // SAFETY: the program's own call.
    let result = unsafe { real(b) };
    threads::acquire(b as usize);
    result
}
