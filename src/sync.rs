//! Locks shared between a rank's threads.
//!
//! A `World` is shared by every thread of its rank (see the crate docs,
//! "Threads"). What threads may touch at once is behind a [`Mutex`]: the
//! heap allocator, each TCP link of the default context, and the verbs
//! transport. No operation panics while it holds one of these locks, so a
//! poisoned lock only means a panic elsewhere in the program: [`lock`]
//! takes the data anyway rather than turn that panic into a second one.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Locks `m`, ignoring poisoning (see the module docs).
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` with `guard`, ignoring poisoning as [`lock`] does.
pub(crate) fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// A number for the calling thread, never 0.
fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}

/// Which thread of the rank is in a collective (0: none): collectives run
/// one at a time per rank, on one thread, so a second thread entering one
/// is an error rather than a corrupted call count.
#[derive(Default)]
pub(crate) struct CollectiveOwner(AtomicU64);

/// Held for the length of a collective; lets the next one in when dropped.
pub(crate) struct InCollective<'a> {
    owner: &'a CollectiveOwner,
    outermost: bool,
}

impl CollectiveOwner {
    /// Enters a collective on this thread. A collective that runs another
    /// inside it (an allocation's barrier) enters again on the same thread.
    #[inline]
    pub fn enter(&self, rank: usize, op: &'static str) -> Result<InCollective<'_>> {
        let me = thread_number();
        match self.0.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Ok(InCollective {
                owner: self,
                outermost: true,
            }),
            Err(owner) if owner == me => Ok(InCollective {
                owner: self,
                outermost: false,
            }),
            Err(_) => Err(Error::ConcurrentCollective { rank, op }),
        }
    }
}

impl Drop for InCollective<'_> {
    fn drop(&mut self) {
        if self.outermost {
            self.owner.0.store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_thread_in_a_collective_is_an_error_and_nesting_is_not() {
        let owner = CollectiveOwner::default();
        let outer = owner.enter(3, "barrier").expect("the first collective enters");
        let inner = owner.enter(3, "alloc").expect("the same thread nests");
        std::thread::scope(|s| {
            let other = s.spawn(|| owner.enter(3, "reduce").map(drop)).join().unwrap();
            match other {
                Err(Error::ConcurrentCollective { rank: 3, op: "reduce" }) => {}
                other => panic!("expected ConcurrentCollective, got {other:?}"),
            }
        });
        drop(inner);
        std::thread::scope(|s| {
            let other = s.spawn(|| owner.enter(3, "reduce").map(drop)).join().unwrap();
            assert!(other.is_err(), "the outer collective still runs");
        });
        drop(outer);
        std::thread::scope(|s| {
            s.spawn(|| owner.enter(3, "reduce").map(drop))
                .join()
                .unwrap()
                .expect("free again");
        });
    }
}
