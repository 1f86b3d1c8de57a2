//! Threads a C program starts itself (POSIX threads, and C11's), for the
//! race checker (`oneside::race::threads`), as ThreadSanitizer's runtime
//! sees them: this library defines `pthread_create`, `pthread_join` and
//! `pthread_exit` (and C11's `thrd_create`, `thrd_join`, `thrd_exit`,
//! whose pthread calls glibc makes inside libc, unseen) in front of
//! libc's, tells the checker what each orders, and calls libc's own
//! (`next`). With the checker off each is that call and one load more.
//!
//! A thread whose start routine is in the program's executable begins in
//! its creator's view and publishes its own when it returns (or calls
//! `pthread_exit`), for the join to acquire. Threads that libraries start
//! (libgomp's, libomp's, this library's own) are not the program's, and
//! are passed through. What the threads' locks, condition variables,
//! barriers and semaphores order is `locks`'s; one-time initialization is
//! `once`'s. The program must be built with ThreadSanitizer's
//! instrumentation, whose atomics the checker sees (GCC's, or Clang's with
//! `-pthread`): otherwise its threads follow their PE's count, as before.

// Each function's safety is its POSIX contract: called by the program
// with the arguments libc's own takes.
#![allow(clippy::missing_safety_doc)]
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use oneside::race::threads;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

type Start = unsafe extern "C" fn(*mut c_void) -> *mut c_void;

/// Whether a synchronization call made from return address `at` orders
/// the program's threads: they are told apart now, and the program's
/// executable made it (a library's own locks, libfabric's inside a put,
/// order nothing of the program's). `locks` and `once` ask it.
pub(crate) fn orders_threads(at: usize) -> bool {
    threads::active() && in_executable(at)
}

/// Whether `address` is in the program's executable (its loaded
/// segments, found once): a start routine or a caller of the program's
/// own, not a library's.
fn in_executable(address: usize) -> bool {
    static RANGE: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
    if RANGE[1].load(Relaxed) == 0 {
        let (lo, hi) = executable_range();
        RANGE[0].store(lo, Relaxed);
        RANGE[1].store(hi.max(1), Relaxed);
    }
    (RANGE[0].load(Relaxed)..RANGE[1].load(Relaxed)).contains(&address)
}

/// The lowest and highest address of the executable's loaded segments
/// (the first object `dl_iterate_phdr` gives).
fn executable_range() -> (usize, usize) {
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, _size: usize, out: *mut c_void) -> c_int {
        // SAFETY: glibc passes a valid `info`; `out` is the pair below.
        let (info, out) = unsafe { (&*info, &mut *(out as *mut (usize, usize))) };
        let mut range = (usize::MAX, 0);
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: `dlpi_phdr` holds `dlpi_phnum` headers.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD {
                let lo = info.dlpi_addr as usize + ph.p_vaddr as usize;
                range = (range.0.min(lo), range.1.max(lo + ph.p_memsz as usize));
            }
        }
        *out = range;
        1
    }
    let mut range = (0usize, 0usize);
    // SAFETY: `first` stops at the first object, writing `range`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut range as *mut (usize, usize)).cast()) };
    range
}

/// What a started thread runs before the program's routine.
struct Begin {
    /// The routine: a `Start`, or a `C11Start` (`thrd_create`).
    start: usize,
    arg: *mut c_void,
    stamp: u64,
}

/// A C11 thread's routine (`thrd_start_t`).
type C11Start = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The threads the program started and has not joined, with the stamp
/// each began with.
static STARTED: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());

thread_local! {
    /// In a thread the program started: the view it had before, for
    /// `pthread_exit`.
    static PREV: Cell<Option<u64>> = const { Cell::new(None) };
}

/// A started thread's own beginning and end around the program's
/// routine, which `call` runs with its argument.
///
/// # Safety
/// `begin` is a `Begin` that `create` boxed for this thread.
unsafe fn around<R>(begin: *mut c_void, call: impl FnOnce(usize, *mut c_void) -> R) -> R {
    // SAFETY: as the caller promises.
    let b = unsafe { Box::from_raw(begin as *mut Begin) };
    let prev = threads::entered(b.stamp);
    PREV.with(|p| p.set(Some(prev)));
    let result = call(b.start, b.arg);
    done();
    result
}

unsafe extern "C" fn begin(begin: *mut c_void) -> *mut c_void {
    // SAFETY: `pthread_create` passes the box `create` made, whose routine
    // is the program's `Start`.
    unsafe { around(begin, |start, arg| std::mem::transmute::<usize, Start>(start)(arg)) }
}

unsafe extern "C" fn begin_c11(begin: *mut c_void) -> c_int {
    // SAFETY: as in `begin`, from `thrd_create`, with a `C11Start`.
    unsafe { around(begin, |start, arg| std::mem::transmute::<usize, C11Start>(start)(arg)) }
}

/// The calling started thread is done (returned, or `pthread_exit`).
fn done() {
    if let Some(prev) = PREV.with(|p| p.take()) {
        // SAFETY: pthread_self has no preconditions.
        threads::ended(unsafe { libc::pthread_self() } as usize, prev);
    }
}

/// A thread started by libc's `real`: given `Some` box, the program's
/// (its routine `start` is in the executable), which `real` must start
/// through `begin` or `begin_c11`; given `None`, a library's, started
/// as asked. Returns libc's result (0: started, for both APIs).
fn create(
    thread: *mut libc::pthread_t,
    start: usize,
    arg: *mut c_void,
    real: impl FnOnce(Option<*mut Begin>) -> c_int,
) -> c_int {
    let program = !thread.is_null() && in_executable(start);
    let stamp = match program {
        true => threads::spawned(),
        false => threads::OFF,
    };
    if stamp == threads::OFF {
        return real(None);
    }
    let b = Box::into_raw(Box::new(Begin { start, arg, stamp }));
    // The started list is written before the thread can be joined.
    let mut started = lock(&STARTED);
    let result = real(Some(b));
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

/// The program joined `thread` (libc's join succeeded).
fn joined(thread: libc::pthread_t) {
    let mut started = lock(&STARTED);
    if let Some(i) = started.iter().position(|&(t, _)| t == thread as usize) {
        let (_, stamp) = started.swap_remove(i);
        drop(started);
        threads::reaped(thread as usize, stamp);
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
    create(thread, start as usize, arg, |b| match b {
        // SAFETY: the program's own call.
        None => unsafe { real(thread, attr, start, arg) },
        // SAFETY: libc's, with `begin` and the box it frees.
        Some(b) => unsafe { real(thread, attr, begin, b.cast()) },
    })
}

/// C11's `thrd_create`, whose `pthread_create` glibc calls inside itself.
#[no_mangle]
pub unsafe extern "C" fn thrd_create(thread: *mut libc::pthread_t, start: C11Start, arg: *mut c_void) -> c_int {
    let real = libc_real!(thrd_create: unsafe extern "C" fn(*mut libc::pthread_t, C11Start, *mut c_void) -> c_int);
    create(thread, start as usize, arg, |b| match b {
        // SAFETY: the program's own call.
        None => unsafe { real(thread, start, arg) },
        // SAFETY: libc's, with `begin_c11` and the box it frees.
        Some(b) => unsafe { real(thread, begin_c11, b.cast()) },
    })
}

#[no_mangle]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, ret: *mut *mut c_void) -> c_int {
    let real = libc_real!(pthread_join: unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int);
    // SAFETY: the program's own call.
    let result = unsafe { real(thread, ret) };
    if result == 0 {
        joined(thread);
    }
    result
}

#[no_mangle]
pub unsafe extern "C" fn thrd_join(thread: libc::pthread_t, ret: *mut c_int) -> c_int {
    let real = libc_real!(thrd_join: unsafe extern "C" fn(libc::pthread_t, *mut c_int) -> c_int);
    // SAFETY: the program's own call.
    let result = unsafe { real(thread, ret) };
    if result == 0 {
        joined(thread);
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

#[no_mangle]
pub unsafe extern "C" fn thrd_exit(value: c_int) -> ! {
    done();
    let real = libc_real!(thrd_exit: unsafe extern "C" fn(c_int) -> !);
    // SAFETY: the program's own call.
    unsafe { real(value) }
}

/// The list's lock, whatever a panicking holder left.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
