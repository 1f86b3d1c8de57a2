//! What a C program's locks order between its threads, for the race
//! checker (`oneside::race::threads`): unlocking a mutex (or a read-write
//! or spin lock, or C11's `mtx_t`), waiting on a condition variable (which
//! unlocks its mutex), a barrier and `sem_post` release on the object's
//! address; locking, the end of the wait, the barrier and `sem_wait`
//! acquire it. Only when the program's executable makes the call: a
//! library's own locks (libfabric's, taken inside a put) order nothing of
//! the program's, and would hide its races. Each is defined in front of
//! libc's as a trampoline that passes the caller's return address on, as
//! the instrumentation's entries are (`tsan`), and calls libc's own
//! (`next`); with the checker off, that call and one load more.

// Each function's safety is its POSIX or C11 contract: called by the
// program with the arguments libc's own takes.
#![allow(clippy::missing_safety_doc)]
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use crate::pthread::orders_threads;
use oneside::race::threads;
use std::ffi::c_int;

/// Calls that release on an argument's address (the object's: the first;
/// a condition variable's mutex: the second) before libc's, acquire on it
/// after (when libc's succeeded, for a lock), or both, when the program's
/// executable makes them: a library's own locks (libfabric's, inside a
/// put) order nothing of the program's. Each is a trampoline (`tsan`) to
/// a function that also takes the caller's return address, sixth.
macro_rules! orders {
    ($($name:ident => $at:ident($n:tt) on $on:tt => $release:literal, $acquire:literal;)*) => {$(
        crate::tsan::trampoline! { $name => $at; }

        #[allow(unused_variables)]
        unsafe extern "C" fn $at(a: usize, b: usize, c: usize, _: usize, _: usize, at: usize) -> c_int {
            let real = libc_real!($name: orders!(@type $n));
            let program = orders_threads(at);
            let key = orders!(@arg $on, a, b);
            if $release && program {
                threads::publish(key);
            }
            // SAFETY: the program's own call, with its arguments.
            let result = unsafe { orders!(@call real, $n, a, b, c) };
            if $acquire && program && (result == 0 || !orders!(@lock $on)) {
                threads::acquire(key);
            }
            result
        }
    )*};
    (@type 1) => { unsafe extern "C" fn(usize) -> c_int };
    (@type 2) => { unsafe extern "C" fn(usize, usize) -> c_int };
    (@type 3) => { unsafe extern "C" fn(usize, usize, usize) -> c_int };
    (@call $r:ident, 1, $a:ident, $b:ident, $c:ident) => { $r($a) };
    (@call $r:ident, 2, $a:ident, $b:ident, $c:ident) => { $r($a, $b) };
    (@call $r:ident, 3, $a:ident, $b:ident, $c:ident) => { $r($a, $b, $c) };
    (@arg 1, $a:ident, $b:ident) => { $a };
    (@arg 2, $a:ident, $b:ident) => { $b };
    // A lock (on its first argument) is taken only when libc says so; a
    // condition variable's wait takes its mutex back whatever it says.
    (@lock 1) => { true };
    (@lock 2) => { false };
}

orders! {
    pthread_mutex_lock => mutex_lock(1) on 1 => false, true;
    pthread_mutex_trylock => mutex_trylock(1) on 1 => false, true;
    pthread_mutex_timedlock => mutex_timedlock(2) on 1 => false, true;
    pthread_mutex_unlock => mutex_unlock(1) on 1 => true, false;
    sem_post => sem_post_at(1) on 1 => true, false;
    sem_wait => sem_wait_at(1) on 1 => false, true;
    sem_trywait => sem_trywait_at(1) on 1 => false, true;
    sem_timedwait => sem_timedwait_at(2) on 1 => false, true;
    pthread_cond_wait => cond_wait(2) on 2 => true, true;
    pthread_cond_timedwait => cond_timedwait(3) on 2 => true, true;
    pthread_rwlock_rdlock => rwlock_rdlock(1) on 1 => false, true;
    pthread_rwlock_wrlock => rwlock_wrlock(1) on 1 => false, true;
    pthread_rwlock_tryrdlock => rwlock_tryrdlock(1) on 1 => false, true;
    pthread_rwlock_trywrlock => rwlock_trywrlock(1) on 1 => false, true;
    pthread_rwlock_timedrdlock => rwlock_timedrdlock(2) on 1 => false, true;
    pthread_rwlock_timedwrlock => rwlock_timedwrlock(2) on 1 => false, true;
    pthread_rwlock_unlock => rwlock_unlock(1) on 1 => true, false;
    pthread_spin_lock => spin_lock(1) on 1 => false, true;
    pthread_spin_trylock => spin_trylock(1) on 1 => false, true;
    pthread_spin_unlock => spin_unlock(1) on 1 => true, false;
    mtx_lock => c11_mtx_lock(1) on 1 => false, true;
    mtx_trylock => c11_mtx_trylock(1) on 1 => false, true;
    mtx_timedlock => c11_mtx_timedlock(2) on 1 => false, true;
    mtx_unlock => c11_mtx_unlock(1) on 1 => true, false;
    cnd_wait => c11_cnd_wait(2) on 2 => true, true;
    cnd_timedwait => c11_cnd_timedwait(3) on 2 => true, true;
}

/// A barrier: a release as a thread arrives, an acquire as it leaves
/// (`PTHREAD_BARRIER_SERIAL_THREAD` for one of them, 0 for the others).
unsafe extern "C" fn barrier_wait(b: usize, _: usize, _: usize, _: usize, _: usize, at: usize) -> c_int {
    let real = libc_real!(pthread_barrier_wait: unsafe extern "C" fn(usize) -> c_int);
    let program = orders_threads(at);
    if program {
        threads::publish(b);
    }
    // SAFETY: the program's own call.
    let result = unsafe { real(b) };
    if program {
        threads::acquire(b);
    }
    result
}

crate::tsan::trampoline! { pthread_barrier_wait => barrier_wait; }
