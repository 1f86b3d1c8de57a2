//! Locks shared between rlaunch's threads. No thread panics while it holds
//! one, so a poisoned lock only means a panic elsewhere: these take the
//! data anyway rather than turn that panic into a second one (as
//! `oneside`'s own `sync::lock`).

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Locks `m`, ignoring poisoning.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` with `guard`, ignoring poisoning.
pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(PoisonError::into_inner)
}
