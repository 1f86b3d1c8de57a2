//! One-time initialization told to the race checker
//! (`oneside::race::threads`): `pthread_once` and C11's `call_once`. The
//! routine's completion orders every caller's return (POSIX), so the
//! caller that runs it publishes on the control's address as the routine
//! returns, and every caller acquires there after libc's call. The
//! routine runs on the calling thread, inside libc's call: libc is given
//! a routine of this library's (`run`), which finds the program's in a
//! thread-local. As the lock calls (`pthread`), only a call the
//! program's executable makes is told; the rest are libc's call alone.

// Each function's safety is its POSIX or C11 contract: called by the
// program with the arguments libc's own takes.
#![allow(clippy::missing_safety_doc)]
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use crate::pthread::orders_threads;
use oneside::race::threads;
use std::cell::Cell;
use std::ffi::c_int;

/// An initialization routine.
type Init = unsafe extern "C" fn();

thread_local! {
    /// The program's routine and its control's address, for `run`.
    static PENDING: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The routine libc runs in the program's place: the program's, then a
/// release on its control's address.
unsafe extern "C" fn run() {
    let (init, control) = PENDING.with(|p| p.get());
    // SAFETY: `once` set it to the program's routine before libc's call.
    unsafe { std::mem::transmute::<usize, Init>(init)() };
    threads::publish(control);
}

/// libc's call `real` with `run` for the program's routine `init` when the
/// program's executable makes it (`at`) while its threads are told apart,
/// then an acquire on `control`; else with `init` itself. A routine that
/// calls for another one-time initialization finds its own restored.
fn once<R>(control: usize, init: usize, at: usize, real: impl FnOnce(Init) -> R) -> R {
    // SAFETY: `init` is the program's routine, of this type.
    let init_fn = unsafe { std::mem::transmute::<usize, Init>(init) };
    if !orders_threads(at) {
        return real(init_fn);
    }
    let outer = PENDING.with(|p| p.replace((init, control)));
    let result = real(run);
    PENDING.with(|p| p.set(outer));
    threads::acquire(control);
    result
}

unsafe extern "C" fn pthread_once_at(control: usize, init: usize, _: usize, _: usize, _: usize, at: usize) -> c_int {
    let real = libc_real!(pthread_once: unsafe extern "C" fn(usize, Init) -> c_int);
    // SAFETY: the program's own call, its routine or `run` in its place.
    once(control, init, at, |f| unsafe { real(control, f) })
}

unsafe extern "C" fn call_once_at(flag: usize, init: usize, _: usize, _: usize, _: usize, at: usize) {
    let real = libc_real!(call_once: unsafe extern "C" fn(usize, Init));
    // SAFETY: as in `pthread_once_at`.
    once(flag, init, at, |f| unsafe { real(flag, f) })
}

crate::tsan::trampoline! {
    pthread_once => pthread_once_at;
    call_once => call_once_at;
}
