//! The progress thread of a provider with manual data progress (rxm's
//! software atomics, rxd, shm): while the rank computes without calling
//! oneside, or naps in a long wait, its peers' operations on it still need
//! someone to drive the provider.
//!
//! While the rank itself polls (its waits read the CQ at least
//! [`RANK_POLLING`] times between two looks of the thread), the thread only
//! reads the CQ every [`PERIOD`] under the transport's lock. Once the rank
//! has stopped polling, the thread sleeps on the CQ's wait
//! file descriptor instead (`FI_WAIT_FD`): `fi_trywait` under the lock,
//! then `poll(2)` without it, as libfabric's wait objects are meant to be
//! used. The provider wakes it when a peer's operation arrives, so a rank
//! idle in a barrier answers a get in a thread wake-up rather than in up to
//! a period, and costs nothing while nothing arrives. A provider without a
//! wait descriptor keeps the periodic reads. The thread stops when dropped.
//!
//! A provider without a wait descriptor but with remote events (shm, rxd)
//! counts peers' operations on the endpoint instead: while the rank
//! naps, the thread reads the CQ every period until that counter moves,
//! and then at once, as below.
//!
//! A wake-up is not free: waking a sleeping thread took 30-50 µs here, and
//! a get of a rank idle in a barrier took 3x Sandia OpenSHMEM's, whose
//! target spins in its barrier. So for [`SPIN_AFTER_ARRIVAL`] after an
//! arrival the thread checks the descriptor with `poll(2)` and no timeout
//! instead of sleeping on it, when it may have a core (`may_spin` for one
//! thread a rank: the rank itself naps meanwhile). A stream of operations
//! on an idle rank is then served at polling speed, and a rank that hears
//! nothing for that long still costs nothing. A rank that computes has
//! stopped polling too, and shares its core with this thread when pinned:
//! the thread polls after an arrival only while one of the process's
//! waits has given its core away (`backoff::some_wait_gives_way`), or
//! when it has a core of its own.

use super::Ofi;
use crate::transport::fault::Fault;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Sleep between two polls while the rank polls too.
pub const PERIOD: Duration = Duration::from_micros(500);

/// The longest sleep on the wait descriptor (a bound on how late the
/// thread sees it must stop).
const WAIT_MS: c_int = 10;

/// How long after an arrival the thread polls the wait descriptor
/// instead of sleeping on it (when it may spin).
pub const SPIN_AFTER_ARRIVAL: Duration = Duration::from_millis(1);

/// `fi_trywait` refusals in a row after which the thread sleeps a period.
const TRYWAIT_REFUSALS: u32 = 64;

/// How long the thread polls the descriptor in one go while spinning,
/// before it reads the CQ anyway (work the provider holds internally does
/// not show on the descriptor; `fi_trywait` would have said so).
const SPIN_STRETCH: Duration = Duration::from_micros(50);

/// Reads of the CQ by the rank since the thread's last visit from which on
/// the rank counts as polling (and the thread leaves the CQ to it). A rank
/// napping in a long wait reads it once each time it wakes; when that one
/// read counted, a rank napping in a wait sent its thread to sleep a whole
/// [`PERIOD`], each time leaving its peers' operations unserved meanwhile:
/// 364 times during 40000 8-byte put + quiet on it over tcp;ofi_rxm (16
/// with this rule).
const RANK_POLLING: u64 = 2;

/// What the thread does after one visit to the transport.
enum Next {
    /// Sleep a period: the rank polls, or the lock was taken while the
    /// thread was not spinning.
    Sleep,
    /// Read the CQ again at once: the provider has work pending.
    Again,
    /// Sleep on the wait descriptor until the provider signals it.
    Wait(c_int),
    /// Poll the wait descriptor without sleeping: a peer's operation
    /// arrived within [`SPIN_AFTER_ARRIVAL`].
    Spin(c_int),
    /// Without a wait descriptor: peers' operations arrived since the last
    /// visit (the arrivals counter moved); visit again at once.
    Arrived,
    /// Visit again after a yield: without a wait descriptor, within
    /// [`SPIN_AFTER_ARRIVAL`] of an arrival; or the lock was taken while
    /// the thread was spinning.
    Poll,
}

/// The running thread; stops and joins in `Drop`.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts driving `ofi` (rank `rank`, for the thread's name); `alone`,
    /// whether the thread has a core of its own (besides the rank's); `spin`
    /// says whether the thread may poll its wait descriptor for a while
    /// after an arrival (a core for each local rank's one busy thread).
    pub fn start(rank: usize, ofi: Arc<Mutex<Ofi>>, alone: bool, spin: bool) -> Result<Progress, Fault> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = crate::service::spawn(format!("oneside-ofi-{rank}"), rank, "ofi progress", move || {
            crate::service::panic_if_asked("ofi progress");
            let mut seen = u64::MAX;
            let mut refusals = 0;
            // When a peer's operation last woke the thread, if it may spin.
            let mut arrived: Option<Instant> = None;
            while !stopping.load(Ordering::Relaxed) {
                // Polling without sleeping takes the core from a rank
                // that shares it and computes: only while the thread
                // has a core, or the rank's waits give theirs away.
                let may_poll = spin && (alone || crate::backoff::some_wait_gives_way());
                let spinning = may_poll && arrived.is_some_and(|at| at.elapsed() < SPIN_AFTER_ARRIVAL);
                let next = match ofi.try_lock() {
                    Ok(mut ofi) => ofi.visit(&mut seen, spinning),
                    Err(_) if spinning => Next::Poll,
                    Err(_) => Next::Sleep,
                };
                let readable = match next {
                    Next::Spin(fd) => poll_readable_until(fd, Instant::now() + SPIN_STRETCH),
                    Next::Wait(fd) => {
                        refusals = 0;
                        wait_readable(fd)
                    }
                    Next::Arrived if may_poll => true,
                    Next::Poll => {
                        std::thread::yield_now();
                        false
                    }
                    Next::Again if refusals < TRYWAIT_REFUSALS => {
                        refusals += 1;
                        std::thread::yield_now();
                        false
                    }
                    Next::Again | Next::Sleep | Next::Arrived => {
                        refusals = 0;
                        std::thread::sleep(PERIOD);
                        false
                    }
                };
                if readable && may_poll {
                    arrived = Some(Instant::now());
                }
            }
        })
        .map_err(|e| Fault::setup_io("start the libfabric progress thread", e))?;
        Ok(Progress {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Ofi {
    /// The thread's step: reads the CQ (an error entry stays there for the
    /// rank's own wait, whose operation it belongs to), then decides how to
    /// sleep. `seen` is the rank's poll count at the previous visit;
    /// `spinning`, whether a peer's operation arrived lately.
    fn visit(&mut self, seen: &mut u64, spinning: bool) -> Next {
        self.read_cq();
        let rank_idle = self.own_polls.wrapping_sub(*seen) < RANK_POLLING;
        *seen = self.own_polls;
        let arrived = self.wait_fd.is_none() && rank_idle && self.peers_arrived();
        match self.wait_fd {
            Some(fd) if rank_idle && spinning => Next::Spin(fd),
            Some(fd) if rank_idle => match self.try_wait() {
                true => Next::Wait(fd),
                false => Next::Again,
            },
            None if arrived => Next::Arrived,
            None if rank_idle && spinning => Next::Poll,
            _ => Next::Sleep,
        }
    }

    /// Whether the arrivals counter moved since the last look (never,
    /// without one).
    fn peers_arrived(&mut self) -> bool {
        let Some(counter) = &self.arrivals else {
            return false;
        };
        // SAFETY: fi_cntr_read through the live counter's ops.
        let count = unsafe { ((*(*counter.raw).ops).read)(counter.raw) };
        let moved = count != self.arrivals_seen;
        self.arrivals_seen = count;
        moved
    }

    /// `fi_trywait` on the CQ: whether sleeping on its descriptor is safe
    /// (nothing left to progress).
    fn try_wait(&mut self) -> bool {
        let fabric = self.fabric.raw;
        let mut cq = self.cq.fid();
        // SAFETY: a live fabric whose ops table was filled by libfabric;
        // the CQ has a wait descriptor only if that table reaches
        // `trywait` (`setup::has_trywait`), and only then is this called.
        unsafe { ((*(*fabric).ops).trywait)(fabric, &mut cq, 1) == 0 }
    }
}

/// Sleeps until `fd` is readable, for at most [`WAIT_MS`]; whether it is.
fn wait_readable(fd: c_int) -> bool {
    poll_once(fd, WAIT_MS)
}

/// Polls `fd` without sleeping until it is readable or `until` passes;
/// whether it became readable.
fn poll_readable_until(fd: c_int, until: Instant) -> bool {
    loop {
        if poll_once(fd, 0) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// One `poll(2)` of `fd` for input, waiting at most `timeout_ms`.
fn poll_once(fd: c_int, timeout_ms: c_int) -> bool {
    let mut entry = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; the descriptor stays open while the
    // transport lives, which outlives this thread (joined in `Drop`).
    unsafe { libc::poll(&mut entry, 1, timeout_ms) > 0 }
}
