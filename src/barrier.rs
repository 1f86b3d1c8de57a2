//! The dissemination barrier (Hensgen, Finkel and Manber), built on puts
//! into flag words rather than on the bootstrap sockets.
//!
//! In round k, rank r signals rank (r + 2^k) mod N by storing the barrier's
//! epoch into that peer's flag word for round k, then waits until its own
//! flag for round k holds at least that epoch. ⌈log2 N⌉ rounds. Epochs only
//! grow, so flags never need resetting, and a fast rank that already signals
//! the next barrier cannot confuse a slow one.

use crate::error::Result;
use crate::segment::Segment;
use crate::transport::Path;
use crate::world::World;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Busy-polls this many times before yielding the core, when every local
/// rank has a core of its own.
pub(crate) const SPINS_BEFORE_YIELD: u32 = 200;
/// Yields this many times before sleeping between polls.
const YIELDS_BEFORE_SLEEP: u32 = 20_000;

impl World {
    /// Completes all of this rank's puts ([`quiet`](World::quiet)), then
    /// waits until every rank has entered the barrier.
    pub fn barrier(&self) -> Result<()> {
        self.quiet()?;
        let epoch = self.barrier_epoch.get() + 1;
        self.barrier_epoch.set(epoch);
        let mut distance = 1;
        let mut round = 0;
        while distance < self.size {
            let target = (self.rank + distance) % self.size;
            self.barrier_signal(target, round, epoch)?;
            self.wait_at_least(self.own.barrier_flag(round), epoch)?;
            distance <<= 1;
            round += 1;
        }
        Ok(())
    }

    /// Stores `epoch` into `target`'s flag for `round`: a put of one word
    /// with Release ordering, so every earlier put is visible before it.
    /// Over TCP the target's progress engine makes that store, after every
    /// earlier request on the connection.
    fn barrier_signal(&self, target: usize, round: usize, epoch: u64) -> Result<()> {
        let segment: &Segment = match &self.paths[target] {
            Path::Local => &self.own,
            Path::Shm(segment) => segment,
            Path::Verbs => {
                return self
                    .rdma_link()
                    .signal(target, round, epoch)
                    .map_err(|f| self.rdma_failed(f));
            }
            Path::Tcp(link) => {
                return link
                    .borrow_mut()
                    .signal(round, epoch)
                    .map_err(|source| self.lost(target, "barrier", source))
            }
        };
        segment.barrier_flag(round).store(epoch, Ordering::Release);
        Ok(())
    }
}

impl World {
    /// Polls a local flag word until it reaches `epoch`.
    fn wait_at_least(&self, flag: &AtomicU64, epoch: u64) -> Result<()> {
        let mut polls: u32 = 0;
        while flag.load(Ordering::Acquire) < epoch {
            self.check_links()?;
            polls = polls.saturating_add(1);
            back_off(polls, self.spins_before_yield);
        }
        Ok(())
    }
}

/// One step of the back-off shared by every local wait: spin `spins` times,
/// then yield (the rank we wait for may need this core), then sleep briefly
/// so an idle wait costs little.
pub(crate) fn back_off(polls: u32, spins: u32) {
    if polls < spins {
        std::hint::spin_loop();
    } else if polls < YIELDS_BEFORE_SLEEP {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}
