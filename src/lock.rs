//! Distributed mutual exclusion: a queue lock (Mellor-Crummey and Scott)
//! built on remote atomics, as OpenSHMEM's `set_lock`/`test_lock`/
//! `clear_lock`.
//!
//! A [`Lock`] is one symmetric 64-bit word per rank, read as two 32-bit
//! halves: `tail` (used on rank 0, the lock's home: the last rank in the
//! queue, plus one; when free, 0, or under the race checker the last
//! holder, plus one, with the [`FREED`] bit) and `next` (on every rank: its
//! successor in the queue, plus one, with the [`GRANTED`] bit set when its
//! predecessor hands the lock over). A rank joins the queue with one swap
//! on the home's tail, links itself behind its predecessor, and then waits
//! on its *own* memory; releasing hands the lock to the successor with one
//! atomic. So ranks get the lock in the order they asked (FIFO, fair), and
//! a waiting rank sends nothing: no storm of remote test-and-set polls.
//! Whoever takes the lock learns from whom (its predecessor, or the last
//! holder a free tail names), which the race checker needs: taking a lock
//! orders only what its last holder did before releasing it. Both free
//! tails are taken whatever this rank's mode.

use crate::error::Result;
use crate::links::Channel;
use crate::rma::Rma;
use crate::sym::Sym;
use crate::transport::amo::{Amo, AmoOp, Width};
use crate::world::World;

/// Set in a rank's `next` half when the lock is handed to it.
const GRANTED: u64 = 1 << 31;
/// Set in the `tail` half when the lock is free, over its last holder.
const FREED: u64 = 1 << 31;
/// The rank the `tail` half lives on.
const HOME: usize = 0;
/// Byte offsets of the halves within the lock word.
const TAIL: usize = 0;
const NEXT: usize = 4;

/// A symmetric lock; see the module docs. Allocate it with
/// [`World::alloc_lock`] (collective) and hold it with [`World::lock`].
#[derive(Debug)]
pub struct Lock {
    word: Sym<u64>,
}

impl Lock {
    /// A lock on an existing symmetric 64-bit word, as OpenSHMEM's
    /// `shmem_set_lock(long *)` takes one. The word must be zero on every
    /// rank (free) before its first use and only used as a lock.
    pub fn from_word(word: Sym<u64>) -> Lock {
        Lock { word }
    }
}

/// Holds a [`Lock`] until dropped or [`unlock`](LockGuard::unlock)ed.
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard<'a> {
    world: &'a World,
    lock: &'a Lock,
    held: bool,
}

impl LockGuard<'_> {
    /// Releases the lock, reporting any failure.
    #[track_caller]
    pub fn unlock(mut self) -> Result<()> {
        crate::error::located(|| {
            self.held = false;
            self.world.clear_lock(self.lock)
        })
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        if self.held {
            if let Err(e) = self.world.clear_lock(self.lock) {
                eprintln!("oneside: releasing a lock failed: {e}");
            }
        }
    }
}

impl World {
    /// Collectively allocates a lock, free on every rank.
    #[track_caller]
    pub fn alloc_lock(&self) -> Result<Lock> {
        crate::error::located(|| {
            Ok(Lock {
                word: self.alloc::<u64>(1)?,
            })
        })
    }

    /// Collectively frees a lock. No rank may hold or wait for it.
    #[track_caller]
    pub fn free_lock(&self, lock: Lock) -> Result<()> {
        crate::error::located(|| self.free(lock.word))
    }

    /// Takes the lock, waiting in line behind the ranks that asked first;
    /// released when the guard is dropped.
    #[track_caller]
    pub fn lock<'a>(&'a self, lock: &'a Lock) -> Result<LockGuard<'a>> {
        crate::error::located(|| {
            self.set_lock(lock)?;
            Ok(LockGuard {
                world: self,
                lock,
                held: true,
            })
        })
    }

    /// Takes the lock if it is free right now.
    #[track_caller]
    pub fn try_lock<'a>(&'a self, lock: &'a Lock) -> Result<Option<LockGuard<'a>>> {
        crate::error::located(|| {
            Ok(self.test_lock(lock)?.then(|| LockGuard {
                world: self,
                lock,
                held: true,
            }))
        })
    }

    /// Takes the lock, waiting for it (OpenSHMEM's `shmem_set_lock`).
    #[track_caller]
    pub fn set_lock(&self, lock: &Lock) -> Result<()> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("set_lock");
            let _span = crate::profile::span(crate::profile::Family::Lock);
            let me = self.rank as u64 + 1;
            // Fetching, so our node is clean before anyone can find it.
            self.lock_amo(lock, self.rank, NEXT, AmoOp::Swap, 0, true)?;
            let prev = self.lock_amo(lock, HOME, TAIL, AmoOp::Swap, me, true)?;
            if prev != 0 && prev & FREED == 0 {
                self.lock_amo(lock, prev as usize - 1, NEXT, AmoOp::Or, me, false)?;
                self.wait_own_next(lock, |next| next & GRANTED != 0)?;
            }
            if crate::race::on() {
                crate::race::lock_taken(last_holder(prev));
            }
            Ok(())
        })
    }

    /// Takes the lock if nobody holds or waits for it; returns whether it
    /// did (OpenSHMEM's `shmem_test_lock`, with the opposite truth value).
    #[track_caller]
    pub fn test_lock(&self, lock: &Lock) -> Result<bool> {
        crate::error::located(|| {
            let _span = crate::profile::span(crate::profile::Family::Lock);
            let me = self.rank as u64 + 1;
            self.lock_amo(lock, self.rank, NEXT, AmoOp::Swap, 0, true)?;
            // Free is 0 or a FREED tail; each retry follows a hand-off
            // that another rank completed, so this ends.
            let mut free = 0;
            let taken = loop {
                match self.lock_cas(lock, TAIL, free, me)? {
                    seen if seen == free => break true,
                    seen if seen & FREED != 0 => free = seen,
                    _ => break false,
                }
            };
            if taken && crate::race::on() {
                crate::race::lock_taken(last_holder(free));
            }
            Ok(taken)
        })
    }

    /// Releases the lock this rank holds, after completing every put and
    /// atomic it issued (OpenSHMEM's `shmem_clear_lock`).
    #[track_caller]
    pub fn clear_lock(&self, lock: &Lock) -> Result<()> {
        crate::error::located(|| {
            let _span = crate::profile::span(crate::profile::Family::Lock);
            self.quiet()?;
            crate::race::lock_released();
            let me = self.rank as u64 + 1;
            let mut next = self.lock_amo(lock, self.rank, NEXT, AmoOp::Fetch, 0, true)? & !GRANTED;
            if next == 0 {
                // Under the race checker the free tail names this rank,
                // from whom the next taker takes it (`race::lock_taken`);
                // otherwise 0, which `test_lock` takes in one compare-and-swap.
                let free = match crate::race::on() {
                    true => FREED | me,
                    false => 0,
                };
                if self.lock_cas(lock, TAIL, me, free)? == me {
                    return Ok(());
                }
                // A rank swapped itself in behind us and is linking itself now.
                next = self.wait_own_next(lock, |n| n & !GRANTED != 0)? & !GRANTED;
            }
            // Fetching, so the hand-off is delivered before this returns.
            self.lock_amo(lock, next as usize - 1, NEXT, AmoOp::Or, GRANTED, true)
                .map(drop)
        })
    }
}

/// The rank a lock was taken from, given the `tail` its taker replaced:
/// its predecessor in the queue, or the last holder of a free lock
/// (`None`: never held, or freed with the checker off).
fn last_holder(tail: u64) -> Option<usize> {
    match tail & !FREED {
        0 => None,
        holder => Some(holder as usize - 1),
    }
}

impl World {
    /// Compare-and-swap on the home rank's `half`; returns the old value.
    fn lock_cas(&self, lock: &Lock, half: usize, expected: u64, value: u64) -> Result<u64> {
        let amo = Amo {
            op: AmoOp::CompareSwap,
            width: Width::W32,
            operand: value,
            compare: expected,
            fetch: true,
        };
        self.lock_word(lock, HOME, half, amo)
    }

    /// A 32-bit atomic without a compare operand on one half of `target`'s lock word.
    fn lock_amo(&self, lock: &Lock, target: usize, half: usize, op: AmoOp, operand: u64, fetch: bool) -> Result<u64> {
        let amo = Amo {
            op,
            width: Width::W32,
            operand,
            compare: 0,
            fetch,
        };
        self.lock_word(lock, target, half, amo)
    }

    fn lock_word(&self, lock: &Lock, target: usize, half: usize, amo: Amo) -> Result<u64> {
        let offset = self.checked_offset("lock", &lock.word, target, 0, 1)? + half;
        self.links.amo(Channel::Default, "lock", target, offset, amo)
    }

    /// Waits on this rank's own `next` half until `done` holds; returns it.
    fn wait_own_next(&self, lock: &Lock, done: impl Fn(u64) -> bool) -> Result<u64> {
        let ptr = self
            .local_ptr("lock", &lock.word, 0, 1)?
            .wrapping_add(NEXT)
            .cast::<u32>();
        let offset = self.checked_offset("lock", &lock.word, self.rank, 0, 1)?;
        self.poll_until_for(crate::watch::Waiting::Lock { offset }, || {
            // SAFETY: `local_ptr` checked the word is in our heap; the half
            // is 4-byte aligned; a volatile read forms no reference.
            let next = u64::from(unsafe { ptr.read_volatile() });
            done(next).then(|| {
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                next
            })
        })
    }
}
