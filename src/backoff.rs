//! The wait policy shared by every local wait (barriers, collectives,
//! `wait_until`, locks): spin, then yield, then sleep.
//!
//! * **Spin** while every rank on this host has a core of its own, for up
//!   to [`SPIN_FOR`]. A background process that takes a core for a while
//!   then delays a wait by that while, no more: yielding early instead hands
//!   the core to the background process for a whole time slice, which cost
//!   a 2-rank barrier 25× its quiet time here.
//! * **Yield** at once when the host runs more ranks than it has cores, as
//!   Open MPI's `mpi_yield_when_idle` does: the rank we wait for may need
//!   this core. A rank with a TCP progress thread counts twice, since the
//!   thread must run for any request from another host to land. Also after
//!   the spin phase.
//! * **Sleep** in short naps after [`YIELD_FOR`], so a rank idle in a long
//!   wait (a master waiting for workers) does not burn a core forever.

use std::time::{Duration, Instant};

/// How long a wait spins before it starts yielding.
pub(crate) const SPIN_FOR: Duration = Duration::from_millis(2);
/// How long a wait yields before it starts sleeping.
pub(crate) const YIELD_FOR: Duration = Duration::from_millis(20);
/// One nap of a long wait.
const NAP: Duration = Duration::from_micros(50);
/// Polls before the first clock read, so short waits never read the clock.
const FREE_POLLS: u32 = 256;

/// One wait's back-off state.
pub(crate) struct Backoff {
    polls: u32,
    spin: bool,
    since: Option<Instant>,
}

impl Backoff {
    /// A new wait; `spin` is whether this rank may spin (a core per local rank).
    #[inline]
    pub(crate) fn new(spin: bool) -> Backoff {
        Backoff {
            polls: 0,
            spin,
            since: None,
        }
    }

    /// Called after each unsuccessful poll.
    #[inline]
    pub(crate) fn pause(&mut self) {
        self.polls = self.polls.saturating_add(1);
        if self.spin && self.polls < FREE_POLLS {
            std::hint::spin_loop();
            return;
        }
        self.slow_pause();
    }

    #[inline(never)]
    fn slow_pause(&mut self) {
        let waited = self.since.get_or_insert_with(Instant::now).elapsed();
        if self.spin && waited < SPIN_FOR {
            std::hint::spin_loop();
        } else if waited < YIELD_FOR {
            std::thread::yield_now();
        } else {
            std::thread::sleep(NAP);
        }
    }
}

/// Whether local waits may spin: only when this host's ranks each have a core.
pub(crate) fn may_spin(local_ranks: usize) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    local_ranks <= cores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_wait_ends_up_sleeping() {
        let mut wait = Backoff::new(true);
        let start = Instant::now();
        while start.elapsed() < SPIN_FOR + YIELD_FOR {
            wait.pause();
        }
        let before = Instant::now();
        for _ in 0..20 {
            wait.pause();
        }
        assert!(before.elapsed() >= NAP * 20, "20 naps took {:?}", before.elapsed());
    }
}
