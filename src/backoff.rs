//! The wait policy shared by every local wait (barriers, collectives,
//! `wait_until`, locks): spin briefly, then yield, then nap.
//!
//! * **Spin** for [`SPIN_FOR`] (1 ms) while every rank on this host (and
//!   its TCP progress thread, if it has one) has a core of its own. rlaunch
//!   pins ranks to disjoint CPU shares when they fit (`--bind-to core`, as
//!   Open MPI does), so two ranks never start out on one core: unpinned, a
//!   short benchmark whose ranks the kernel happened to place together ran
//!   80x slower. Spinning costs nobody anything then, and a yield does: on
//!   a core shared with a CPU-bound process, `sched_yield` hands that
//!   process the rest of its slice (1-4 ms). A 2-rank broadcast of 512 KiB
//!   or 1 MiB, whose root waits some 15-45 µs for its member's copy, took
//!   42-90x its quiet time beside one busy process when it yielded after
//!   256 polls, and 2.3-5.8x spinning 1 ms or 5 ms (`LOAD=1
//!   bench/compare_coll.sh`-style runs, alternating, 2026-11-22).
//! * **Yield** after that, and at once when ranks outnumber cores, as Open
//!   MPI's `mpi_yield_when_idle` does: the rank we wait for may need this
//!   core.
//! * A wait that only a TCP peer's message can end (a collective's wait for
//!   a member behind TCP, a link's wait for an answer) sleeps in `poll(2)`
//!   after a few yields instead (`Backoff::pause_or_sleep`).
//! * A wait for a collective's flag on a host whose ranks outnumber its
//!   cores more than four times blocks on a futex after a few yields, and the peer that stores
//!   the flag wakes it (`Backoff::pause_or_block`, `futex`): a thousand
//!   ranks napping on two cores spent the cores on their wake-ups.
//! * **Nap** after [`YIELD_FOR`], so a rank idle in a long wait (a master
//!   waiting for workers) does not burn a core forever: sleeps of a
//!   twentieth of the wait so far, from 50 µs up to [`MAX_NAP`] (10 ms).
//! * **Keep polling** instead of napping, however long the wait, when the
//!   wait serves its rank's TCP peers itself and the rank has a core of its own
//!   ([`Backoff::keep_polling`]): as an MPI rank polls its sockets in a
//!   wait, a peer's put or get is then served the moment it arrives,
//!   rather than by a thread that must first be woken. Measured here (2
//!   ranks on 2 cores, put+quiet 8 B to a rank waiting in a barrier):
//!   31-35 µs napping, 8.3-8.8 µs polling. `ONESIDE_YIELD_WHEN_IDLE=1`
//!   turns spinning and polling off where the counts lie (hosts that are
//!   namespaces or VMs of one machine).
//! * A wait past spinning is counted while it lasts
//!   ([`some_wait_gives_way`]): the ofi progress thread polls only while
//!   the rank's core is free, never against a rank that computes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Polls a wait that may spin makes before it starts timing its spin.
const SPIN_POLLS: u32 = 256;
/// How long a wait that may spin spins before it yields.
const SPIN_FOR: Duration = Duration::from_millis(1);
/// How long a wait yields before it starts napping.
const YIELD_FOR: Duration = Duration::from_millis(20);
/// The shortest nap of a long wait.
const NAP: Duration = Duration::from_micros(50);
/// The longest nap: a wait that has lasted 20 ms or more naps a
/// twentieth of its length so far, between these two, so napping adds
/// at most about 5% to a long wait and wakes a long-idle rank at most
/// 100 times a second. With 1 ms naps, an idle rank's 1000 wake-ups a
/// second took 5-10% of a vCPU in the Soft-RoCE guest, from a neighbour
/// whose two threads needed both (2 threads / 1 thread over verbs, three
/// alternating runs in one boot: put 1.68-1.74 -> 1.76-1.90, fetch-add
/// 1.72-1.83 -> 1.80-1.89).
const MAX_NAP: Duration = Duration::from_millis(10);
/// Polls a wait that may not spin yields before it sleeps until a TCP
/// peer's message arrives (`pause_or_sleep`). 32 and 128 measured alike
/// across 2 hosts x 2 ranks; sleeping at once made every all-TCP
/// collective slower (each hop paid a wake-up), never sleeping left four
/// polling ranks taking turns on two cores.
const YIELDS_BEFORE_SLEEP: u32 = 32;

/// Yields a wait that can block on a futex makes before it blocks.
const YIELDS_BEFORE_BLOCK: u32 = 8;
/// The shortest and longest timeout of a futex block: a twentieth of the
/// wait so far, between these, only a safety net against a missed wake
/// (see `futex`). With 10-100 ms, 2048 ranks spent a second of the cores
/// on timeouts alone; hello_put at 2048 ranks took 13.6 s, and 6.3 s with
/// these.
const BLOCK_MIN: Duration = Duration::from_millis(100);
const BLOCK_MAX: Duration = Duration::from_millis(1000);

/// How many of this process's waits are past spinning (yielding, napping,
/// sleeping or blocked): while one is, its thread leaves its core to
/// others. The ofi progress thread polls after an arrival only then (or
/// with a core of its own), never against a rank that computes.
static SLOW_WAITS: AtomicUsize = AtomicUsize::new(0);

/// Whether some thread of this process is in a wait past spinning.
pub(crate) fn some_wait_gives_way() -> bool {
    SLOW_WAITS.load(Ordering::Relaxed) > 0
}

/// One wait's back-off state.
pub(crate) struct Backoff {
    polls: u32,
    spin: bool,
    /// Never nap or sleep: keep yielding between polls however long the
    /// wait (`keep_polling`).
    busy: bool,
    since: Option<Instant>,
    /// Counted in [`SLOW_WAITS`].
    slow: bool,
}

impl Backoff {
    /// A new wait; `spin` is whether this rank may spin (a core per local rank).
    #[inline]
    pub(crate) fn new(spin: bool) -> Backoff {
        Backoff {
            polls: 0,
            spin,
            busy: false,
            since: None,
            slow: false,
        }
    }

    /// The same wait, polling for as long as it lasts when `busy`: for a
    /// wait that serves its rank's TCP peers itself on a core of its own,
    /// where a nap or a sleep would hand each request to a thread that
    /// must first be woken (put+quiet 8 B over TCP to a rank waiting in a
    /// barrier, 2 ranks on 2 cores: 31-35 µs napping, 8.5-8.8 µs polling).
    /// It changes only what happens past [`YIELD_FOR`], where the wait
    /// would nap: it yields between polls instead, and still shows the
    /// watchdog it is idle, so hang reports see it as a napping wait.
    #[inline]
    pub(crate) fn keep_polling(mut self, busy: bool) -> Backoff {
        self.busy = busy;
        self
    }

    /// Counts this wait in [`SLOW_WAITS`], once.
    #[inline]
    fn gives_way(&mut self) {
        if !self.slow {
            self.slow = true;
            SLOW_WAITS.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Called after each unsuccessful poll.
    #[inline]
    pub(crate) fn pause(&mut self) {
        self.polls = self.polls.saturating_add(1);
        if self.spin && (self.polls < SPIN_POLLS || self.spinning_on()) {
            std::hint::spin_loop();
            return;
        }
        self.slow_pause();
    }

    /// Whether a wait that may spin is still within [`SPIN_FOR`] (timed
    /// from its first poll past [`SPIN_POLLS`], so short waits never read
    /// the clock).
    #[inline(never)]
    fn spinning_on(&mut self) -> bool {
        self.since.get_or_insert_with(Instant::now).elapsed() < SPIN_FOR
    }

    /// Like [`pause`](Self::pause), for a wait that can sleep until its
    /// condition may have changed (`sleep`: a `poll(2)` on the sockets a
    /// TCP peer's message arrives on). A wait that may not spin calls
    /// `sleep` instead of yielding once it has yielded
    /// [`YIELDS_BEFORE_SLEEP`] times, until it turns into naps.
    #[inline]
    pub(crate) fn pause_or_sleep(&mut self, sleep: impl FnOnce()) {
        if self.spin || self.polls < YIELDS_BEFORE_SLEEP || self.napping() || self.polling_on() {
            return self.pause();
        }
        self.polls = self.polls.saturating_add(1);
        self.since.get_or_insert_with(Instant::now);
        self.gives_way();
        crate::watch::idle();
        sleep();
    }

    /// For a wait on a host whose ranks outnumber its cores, whose
    /// condition a same-host peer signals with a futex wake: a few yields,
    /// then `block(timeout)` (a futex wait) instead of naps.
    #[inline]
    pub(crate) fn pause_or_block(&mut self, block: impl FnOnce(Duration)) {
        self.polls = self.polls.saturating_add(1);
        self.gives_way();
        if self.polls <= YIELDS_BEFORE_BLOCK {
            return std::thread::yield_now();
        }
        let waited = self.since.get_or_insert_with(Instant::now).elapsed();
        crate::watch::idle();
        block((waited / 20).clamp(BLOCK_MIN, BLOCK_MAX));
    }

    /// Whether a wait that keeps polling has lasted past [`YIELD_FOR`],
    /// where another wait would nap: it yields between polls from then on,
    /// instead of sleeping in `poll(2)`. A short wait (a collective's
    /// lockstep) passes its time as any other, so ranks that share cores
    /// unawares still sleep through each other's turns there.
    #[inline]
    fn polling_on(&self) -> bool {
        self.busy && self.past_yielding()
    }

    /// Whether the wait has turned into naps (a long wait: the rank is
    /// idle, not in a collective's lockstep).
    #[inline]
    pub(crate) fn napping(&self) -> bool {
        !self.busy && self.past_yielding()
    }

    /// Whether the wait has lasted past [`YIELD_FOR`].
    #[inline]
    fn past_yielding(&self) -> bool {
        self.since.is_some_and(|since| since.elapsed() >= YIELD_FOR)
    }

    #[inline(never)]
    fn slow_pause(&mut self) {
        self.gives_way();
        let waited = self.since.get_or_insert_with(Instant::now).elapsed();
        if waited < YIELD_FOR {
            return std::thread::yield_now();
        }
        crate::watch::idle();
        match self.busy {
            true => std::thread::yield_now(),
            false => std::thread::sleep(nap_for(waited)),
        }
    }
}

impl Drop for Backoff {
    fn drop(&mut self) {
        if self.slow {
            SLOW_WAITS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The longest pause between two failed tests of one loop of tests (see
/// [`Streak`]): longer than a time slice lost on a full core (with 1 ms, a
/// loop of tests at 2 ranks on 2 cores kept breaking its streak).
const TEST_GAP: Duration = Duration::from_millis(20);

thread_local! {
    /// This thread's loop of failed tests: when it began and its last test.
    static TESTS: std::cell::Cell<Option<(Instant, Instant)>> = const { std::cell::Cell::new(None) };
}

/// A loop of failed tests, the program's own wait: the tests that found
/// their condition false each within [`TEST_GAP`] of the last, since the
/// last test that found it true. Hang reports show one that lasts
/// (`watch::tested_in_vain`).
/// The loop's times; the struct is the watch's, which this module names (never the other way).
pub(crate) use crate::watch::Streak;

/// Counts a failed test. Costs a clock read.
#[inline]
pub(crate) fn failed_test() -> Streak {
    let now = Instant::now();
    let (since, fresh) = match TESTS.get() {
        Some((since, last)) if now.duration_since(last) < TEST_GAP => (since, false),
        _ => (now, true),
    };
    TESTS.set(Some((since, now)));
    Streak { since, now, fresh }
}

/// A test found its condition: the loop, if any, ended.
#[inline]
pub(crate) fn test_found() {
    TESTS.set(None);
}

/// Passes a failed test's time as one wait's step does: spins for
/// [`SPIN_FOR`] where the rank may `spin`, then yields, and naps past
/// [`YIELD_FOR`] unless it must keep polling (`busy`, as
/// [`Backoff::keep_polling`]). A rank polling with tests on a full core
/// otherwise kept the core from the peer it waited for (a token ring
/// at 4 ranks on 2 cores: 2-2.6 ms a hop), and one with a core of its
/// own never left it idle, so its watchdog, which runs only on an idle
/// core, never reported it.
#[inline]
pub(crate) fn pause_test(streak: Streak, spin: bool, busy: bool) {
    let waited = streak.now.duration_since(streak.since);
    if spin && waited < SPIN_FOR {
        return std::hint::spin_loop();
    }
    if busy || waited < YIELD_FOR {
        return std::thread::yield_now();
    }
    crate::watch::idle();
    std::thread::sleep(nap_for(waited));
}

/// A nap of a wait that has lasted `waited`: a twentieth of it, from
/// [`NAP`] to [`MAX_NAP`].
fn nap_for(waited: Duration) -> Duration {
    (waited / 20).clamp(NAP, MAX_NAP)
}

/// Whether local waits may spin: only when each of this rank's busy
/// `threads` (itself, and its TCP progress thread if it has one) has a core.
/// Pinned by rlaunch (`--bind-to core`), the rank's own CPUs count;
/// otherwise the host's CPUs are shared by its `local_ranks` ranks.
pub(crate) fn may_spin(local_ranks: usize, threads: usize) -> bool {
    if std::env::var(crate::protocol::env::YIELD_WHEN_IDLE).is_ok_and(|v| v == "1") {
        return false;
    }
    let cores = cores();
    let pinned = std::env::var(crate::protocol::env::BOUND).is_ok_and(|v| v == "1");
    match pinned {
        true => threads <= cores,
        false => local_ranks * threads <= cores,
    }
}

/// How many times more ranks than cores a host must run before its
/// collective waits block on futexes (`block_waits`). At 2 ranks a core
/// yielding is cheaper: a futex wake is a system call on every flag store,
/// and it made a 4-rank barrier on 2 cores 16% slower.
const BLOCK_WHEN_RANKS_PER_CORE: usize = 4;

/// Whether this host's ranks so outnumber its cores that collective waits
/// should block on futexes rather than yield.
pub(crate) fn block_waits(local_ranks: usize) -> bool {
    local_ranks > BLOCK_WHEN_RANKS_PER_CORE * cores()
}

/// The cores this process may use, read once: `available_parallelism`
/// reads the affinity mask and the cgroup's quota files each time, and
/// init asks three times (4% of a rank's start in a 2048-rank job).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_wait_ends_up_sleeping() {
        let mut wait = Backoff::new(true);
        let start = Instant::now();
        while start.elapsed() < YIELD_FOR + Duration::from_millis(5) {
            wait.pause();
        }
        let before = Instant::now();
        for _ in 0..20 {
            wait.pause();
        }
        assert!(before.elapsed() >= NAP * 20, "20 naps took {:?}", before.elapsed());
    }

    #[test]
    fn a_wait_that_keeps_polling_never_naps_nor_sleeps() {
        let mut wait = Backoff::new(false).keep_polling(true);
        // Until the wait's own clock (started at its first sleep, after
        // YIELDS_BEFORE_SLEEP polls) is past YIELD_FOR: timed from before
        // the first poll, a loaded machine left it short of that, and the
        // next pause still slept, as it should.
        while !wait.past_yielding() {
            wait.pause_or_sleep(|| std::thread::sleep(Duration::from_micros(100)));
        }
        let mut slept = false;
        for _ in 0..100 {
            wait.pause_or_sleep(|| slept = true);
        }
        assert!(!wait.napping(), "a polling wait turned into naps");
        assert!(!slept, "a polling wait slept past the point where others nap");
        let mut plain = Backoff::new(false);
        let start = Instant::now();
        while start.elapsed() < YIELD_FOR + Duration::from_millis(5) {
            plain.pause();
        }
        assert!(plain.napping(), "a plain wait should nap by now");
    }
}
