//! Origin progress over TCP: small puts, signals and non-fetching atomics
//! wait in their link's batch for the next operation that sends it
//! (`tcp` module docs). OpenSHMEM 1.5 section 4.1 asks that communication
//! progress "regardless of when that PE next engages in an OpenSHMEM
//! call", and programs written for other libraries rely on it: a rank
//! that puts and then computes must not keep its put to itself.
//!
//! The **flusher** is one thread per rank with TCP peers. Every link that
//! can batch is registered with it ([`Nudge::register`]). While links are
//! batching it wakes every [`TICK`] and pushes out each batch that was
//! already waiting at its previous tick (a link counts the batches it
//! starts; the flusher remembers the count it saw), so nothing waits
//! longer than about two ticks, and a batch its owner is still filling and
//! sends itself (a loop of puts, a put and its quiet) is never touched. It
//! takes a link's lock only with `try_lock`: a link in use is being pushed
//! out by its owner anyway. After [`IDLE_AFTER`] without a new batch it
//! sleeps until a link starts one again.
//!
//! What the links pay: a link whose batch goes from empty to non-empty
//! calls [`Nudge::batched`], one store and one load; only when the flusher
//! sleeps does it also wake it, which costs a system call once per idle
//! period, not per operation. Collectives' own traffic, always followed by
//! a flush of its own, does not nudge.

use super::TcpPeer;
use crate::transport::fault::Fault;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often an active flusher looks for batches: a batched operation
/// waits at most two ticks for its origin's next call, give or take the
/// scheduler's lateness, so under 1 ms.
pub const TICK: Duration = Duration::from_micros(400);

/// How long the flusher stays active after the last batch it saw.
pub const IDLE_AFTER: Duration = Duration::from_millis(100);

const IDLE: u8 = 0;
const ACTIVE: u8 = 1;
const STOP: u8 = 2;

/// What the flusher and the links share.
struct Shared {
    state: AtomicU8,
    /// A link started a batch since the flusher last looked.
    dirty: AtomicBool,
    sleep: Mutex<()>,
    wake: Condvar,
    /// Each registered link, with the number of its batch that was
    /// waiting at the flusher's last tick (`None`: no batch then).
    links: Mutex<Vec<Watched>>,
}

/// A registered link and the number of its batch seen waiting at the last tick.
type Watched = (Weak<Mutex<TcpPeer>>, Option<u64>);

/// A link's handle on its rank's flusher (in every link's `Dial`).
#[derive(Clone)]
pub struct Nudge(Arc<Shared>);

impl Nudge {
    /// A handle for links to use; the flusher thread starts with [`Flusher::start`].
    pub fn new() -> Nudge {
        Nudge(Arc::new(Shared {
            state: AtomicU8::new(IDLE),
            dirty: AtomicBool::new(false),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            links: Mutex::new(Vec::new()),
        }))
    }

    /// Lets the flusher push out `link`'s batches (for as long as it lives).
    pub fn register(&self, link: &Arc<Mutex<TcpPeer>>) {
        crate::sync::lock(&self.0.links).push((Arc::downgrade(link), None));
    }

    /// A link's batch went from empty to non-empty.
    #[inline]
    pub fn batched(&self) {
        // SeqCst on both sides (here: dirty, then state; the flusher going
        // idle: state, then dirty), so one of the two sees the other.
        self.0.dirty.store(true, Ordering::SeqCst);
        if self.0.state.load(Ordering::SeqCst) == IDLE {
            self.0.kick();
        }
    }
}

impl Default for Nudge {
    fn default() -> Self {
        Nudge::new()
    }
}

impl Shared {
    /// Wakes an idle flusher.
    #[cold]
    fn kick(&self) {
        if self
            .state
            .compare_exchange(IDLE, ACTIVE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let _sleeping = crate::sync::lock(&self.sleep);
            self.wake.notify_one();
        }
    }

    /// Pushes out every registered link's batch that was already waiting
    /// at the last tick and is free to take; returns whether any link had
    /// a batch waiting.
    fn flush_stale(&self) -> bool {
        let mut links = crate::sync::lock(&self.links);
        links.retain(|(link, _)| link.strong_count() > 0);
        let mut found = false;
        for (link, seen) in links.iter_mut() {
            let Some(link) = link.upgrade() else { continue };
            let Ok(mut link) = link.try_lock() else { continue };
            if !link.has_batch() {
                *seen = None;
                continue;
            }
            found = true;
            let batch = link.batch_number();
            if *seen == Some(batch) {
                // A broken link is the owner's error to report, at its next call.
                let _ = link.flush();
                *seen = None;
            } else {
                *seen = Some(batch);
            }
        }
        found
    }

    /// The flusher thread: sleeps while idle, ticks while links batch.
    fn run(&self) {
        loop {
            {
                let mut sleeping = crate::sync::lock(&self.sleep);
                while self.state.load(Ordering::SeqCst) == IDLE {
                    sleeping = crate::sync::wait(&self.wake, sleeping);
                }
            }
            let idle_ticks = (IDLE_AFTER.as_micros() / TICK.as_micros()) as u32;
            let mut quiet = 0;
            while self.state.load(Ordering::SeqCst) == ACTIVE {
                std::thread::sleep(TICK);
                let dirty = self.dirty.swap(false, Ordering::SeqCst);
                let waiting = self.flush_stale();
                quiet = if dirty || waiting { 0 } else { quiet + 1 };
                if quiet >= idle_ticks
                    && self
                        .state
                        .compare_exchange(ACTIVE, IDLE, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                    && self.dirty.load(Ordering::SeqCst)
                {
                    // A batch began as we went idle, without waking us.
                    self.kick();
                }
            }
            if self.state.load(Ordering::SeqCst) == STOP {
                return;
            }
        }
    }
}

/// A rank's running flusher; dropping it stops and joins the thread.
pub struct Flusher {
    nudge: Nudge,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Starts the flusher thread for the links registered with `nudge`.
    pub fn start(rank: usize, nudge: Nudge) -> Result<Flusher, Fault> {
        let shared = Arc::clone(&nudge.0);
        let thread = crate::service::spawn(format!("oneside-flush-{rank}"), rank, "TCP flusher", move || {
            crate::service::panic_if_asked("TCP flusher");
            shared.run()
        })
        .map_err(|e| Fault::setup_io("start the TCP flusher thread", e))?;
        Ok(Flusher {
            nudge,
            thread: Some(thread),
        })
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        let shared = &self.nudge.0;
        shared.state.store(STOP, Ordering::SeqCst);
        {
            let _sleeping = crate::sync::lock(&shared.sleep);
            shared.wake.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
