//! Hang reports, the rank's side: which call each thread is blocked in,
//! where the program made it, and what it waits for.
//!
//! A blocking entry point (a wait, a collective, a lock, finalize) names
//! itself with `call`, which keeps the outermost call and its source
//! location (`#[track_caller]` in Rust; in C a backtrace taken once the
//! wait has lasted, see `idle`). The loop that actually waits opens
//! `blocked` with what it waits for. Both cost one relaxed load and a
//! branch when rlaunch did not ask for reports (`ONESIDE_WATCH`), and
//! nothing at all on a wait whose condition already holds.
//!
//! The watchdog thread (`dog`) reads every thread's slot a few times a
//! second and tells rlaunch when all of them have been blocked for a while
//! (`Msg::Stalled`), and when one gets going again (`Msg::Moving`).

mod dog;
pub(crate) mod objects;
mod polling;
pub(crate) mod symbols;

use crate::site::Site;
pub(crate) use dog::start;
pub(crate) use objects::{allocated, freed};

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;

/// Whether this rank records what it blocks in: set once at start when
/// rlaunch asked for hang reports.
static WATCHING: AtomicBool = AtomicBool::new(false);

/// How many blocks have been published, and the watchdog's wake-up.
static NEWS: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());

/// The number of blocks published so far.
fn news() -> u64 {
    *crate::sync::lock(&NEWS.0)
}

/// Sleeps until a block is published after the `seen`-th.
fn wait_for_news(seen: u64) {
    let mut count = crate::sync::lock(&NEWS.0);
    while *count == seen {
        count = crate::sync::wait(&NEWS.1, count);
    }
}

/// Every thread's slot, for the watchdog (dead threads' slots drop out).
static SLOTS: Mutex<Vec<Weak<Slot>>> = Mutex::new(Vec::new());

/// What a blocked thread waits for. Cheap to build (no allocation): the
/// watchdog turns it into words.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Waiting {
    /// Elements of this rank's own heap, from heap offset `offset`, to
    /// satisfy a comparison (`cmp`: its symbol and operand's bits) or, with
    /// `None`, a condition the caller holds.
    Words {
        addr: usize,
        offset: usize,
        /// A global variable of the program (`offset` is then not shown).
        global: bool,
        size: u8,
        count: usize,
        cmp: Option<(&'static str, u64)>,
    },
    /// Member rank `rank` of the team in team slot `slot` to reach `step`
    /// of call `call` of collective `op`; `value`, the flag value that
    /// says so (`(call << 24) | step`).
    Step {
        op: &'static str,
        rank: usize,
        slot: usize,
        value: u64,
        call: u64,
        step: u64,
    },
    /// The lock at heap offset `offset` to be handed to this rank.
    Lock { offset: usize },
    /// Rank `rank`'s answer (a get's data, a fetching atomic's value, a
    /// quiet's acknowledgement), which its progress engine sends even
    /// while that rank is in finalize.
    Answer { rank: usize },
    /// A condition this layer cannot name.
    Condition,
}

/// A call in progress on this thread, outermost first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    pub name: &'static str,
    pub site: Site,
}

/// One thread's current block, as the watchdog reads it.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub call: Call,
    pub waiting: Waiting,
    pub since: Instant,
    /// A backtrace, for calls from C (taken once the wait has lasted).
    pub trace: Option<Arc<std::backtrace::Backtrace>>,
    /// The caller in a binding's language (a Python line), which names a
    /// C call better than the trace.
    pub place: Option<String>,
    /// A loop of tests rather than one call's wait (`polling`).
    pub polling: bool,
}

/// One thread's slot: its current block, if any.
#[derive(Default)]
pub(crate) struct Slot {
    pub block: Mutex<Option<Block>>,
    /// Set by the watchdog when a `Stalled` it sent named this block: the
    /// thread then says `Moving` itself as it leaves the wait (see
    /// [`BlockedGuard`]).
    pub reported: AtomicBool,
    /// When this thread's last test found nothing (`polling`'s clock).
    pub polled: std::sync::atomic::AtomicU64,
}

/// The watchdog's link to rlaunch, for a thread that leaves a reported
/// wait, with this rank's number.
static MOVING: std::sync::OnceLock<(u32, crate::reporter::Reporter)> = std::sync::OnceLock::new();

/// Sends `msg` to rlaunch now if the link is free (never waits for it:
/// the crash report calls this from a signal handler); false otherwise.
pub(crate) fn tell_launcher_now(msg: &crate::protocol::wire::Msg) -> bool {
    MOVING.get().is_some_and(|(_, reporter)| reporter.try_send(msg))
}

/// Keeps `reporter` for the threads' own `Moving`.
pub(crate) fn keep_reporter(rank: usize, reporter: crate::reporter::Reporter) {
    let _ = MOVING.set((rank as u32, reporter));
}

struct Local {
    call: Cell<Option<Call>>,
    /// The C API entry point this thread last entered (each entry
    /// replaces it), which names the thread's waits in a C program.
    c_call: Cell<Option<&'static str>>,
    /// The wait in progress, not yet shown to the watchdog.
    pending: Cell<Option<(Call, Waiting)>>,
    /// Whether `pending` is in the slot.
    published: Cell<bool>,
    /// Whether a loop of failed tests is in the slot.
    polling: Cell<bool>,
}

impl Local {
    /// The call a block of this thread's belongs to: the C entry point it
    /// last entered, else its outermost named call, else `name`, unplaced.
    fn current(&self, name: &'static str) -> Call {
        match (self.c_call.get(), self.call.get()) {
            (Some(name), _) => Call { name, site: Site::C },
            (None, Some(call)) => call,
            (None, None) => Call {
                name,
                site: Site::Unknown,
            },
        }
    }
}

thread_local! {
    /// This thread's slot, made when it first publishes a block. Apart
    /// from `LOCAL`, which has no destructor and so costs a plain
    /// thread-local access on every wait.
    static SLOT: RefCell<Option<Arc<Slot>>> = const { RefCell::new(None) };
    static LOCAL: Local = const {
        Local {
            call: Cell::new(None),
            c_call: Cell::new(None),
            pending: Cell::new(None),
            published: Cell::new(false),
            polling: Cell::new(false),
        }
    };
}

/// Records every blocking call's name and location from now on, for the
/// checking mode's messages (`rlaunch --debug`), with or without reports.
pub(crate) fn record_calls() {
    WATCHING.store(true, Ordering::Relaxed);
}

/// Where this thread's current outermost call was made: `file:line:col`
/// (for C, from a backtrace taken now), or empty.
pub(crate) fn here() -> String {
    LOCAL.with(|local| match (local.c_call.get(), local.call.get()) {
        (Some(_), _) => crate::site::c_call_site(),
        (None, Some(call)) => call.site.describe(None),
        (None, None) => String::new(),
    })
}

/// The Rust caller's location of this thread's current outermost call,
/// when it is a Rust call (not one of the C API) and placed.
pub(crate) fn rust_site() -> Option<&'static std::panic::Location<'static>> {
    LOCAL.with(|local| match (local.c_call.get(), local.call.get()) {
        (
            None,
            Some(Call {
                site: Site::Rust(at), ..
            }),
        ) => Some(at),
        _ => None,
    })
}

/// Whether this thread is in a call of the C API (named by `c_entered`).
pub(crate) fn in_c_call() -> bool {
    LOCAL.with(|local| local.c_call.get().is_some())
}

/// The name of this thread's current outermost call, if one is named.
pub(crate) fn current_call() -> Option<&'static str> {
    LOCAL.with(|local| local.c_call.get().or(local.call.get().map(|c| c.name)))
}

/// Whether hang reports are on in this process.
#[inline(always)]
fn watching() -> bool {
    WATCHING.load(Ordering::Relaxed)
}

/// The guard of an outermost call: clears it when the call returns.
pub(crate) struct CallGuard(());

impl Drop for CallGuard {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|local| local.call.set(None));
    }
}

/// Names the blocking call this thread is entering, at the caller's
/// location; `None` (nothing recorded) when reports are off or an outer
/// call is already named.
#[inline(always)]
#[track_caller]
pub(crate) fn call(name: &'static str) -> Option<CallGuard> {
    if !watching() {
        return None;
    }
    enter(name, Site::Rust(crate::site::call_site()))
}

/// Like `call`, for a call whose location is not known (finalize from
/// a `World`'s drop).
#[inline(always)]
pub(crate) fn call_unplaced(name: &'static str) -> Option<CallGuard> {
    if !watching() {
        return None;
    }
    enter(name, Site::Unknown)
}

/// Called at every entry point of the C API (`liboneside_shmem`): names
/// the thread's waits until its next entry, with the C caller's location
/// taken from a backtrace once a wait has lasted.
#[inline(always)]
pub fn c_entered(name: &'static str) {
    if watching() {
        let _ = LOCAL.try_with(|local| local.c_call.set(Some(name)));
    }
}

#[inline(never)]
fn enter(name: &'static str, site: Site) -> Option<CallGuard> {
    LOCAL.with(|local| match local.call.get() {
        Some(_) => None,
        None => {
            local.call.set(Some(Call { name, site }));
            Some(CallGuard(()))
        }
    })
}

/// The guard of a wait in progress: forgets the thread's pending block,
/// and clears its published one. A block that rlaunch was told of is
/// followed by `Moving` from this thread, before the call returns: rlaunch
/// judges a deadlock from the blocks it knows, so it must hear at once
/// that one ended (the watchdog may not run for a while on a busy core).
pub(crate) struct BlockedGuard(());

impl Drop for BlockedGuard {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|local| {
            local.pending.set(None);
            if local.published.replace(false) {
                clear_slot();
            }
        });
    }
}

/// Empties this thread's slot, and says `Moving` if rlaunch was told of
/// the block it held.
fn clear_slot() {
    let _ = SLOT.try_with(|slot| {
        if let Some(slot) = slot.borrow().as_ref() {
            *crate::sync::lock(&slot.block) = None;
            if slot.reported.swap(false, Ordering::AcqRel) {
                if let Some((rank, reporter)) = MOVING.get() {
                    reporter.send(&crate::protocol::wire::Msg::Moving { rank: *rank });
                }
            }
        }
    });
}

/// A test (`name`, unless a C entry point names it) found its condition
/// false: a loop of such tests is shown to hang reports as a wait
/// (`polling`). `waiting` is built only when the loop is published.
#[inline(always)]
pub(crate) fn tested_in_vain(name: &'static str, waiting: impl FnOnce() -> Waiting, streak: Streak) {
    if watching() {
        polling::in_vain(name, waiting, streak);
    }
}

/// A loop of failed tests as the backoff counts it (`backoff::Streak`,
/// which names this module, so the loop's times come here as plain
/// values): when its first failed test was, this test, and whether this
/// test began it.
#[derive(Clone, Copy)]
pub(crate) struct Streak {
    pub since: Instant,
    pub now: Instant,
    pub fresh: bool,
}

/// A test found its condition: a loop of tests ends.
#[inline(always)]
pub(crate) fn tested_true() {
    if watching() {
        polling::ended();
    }
}

/// Notes that this thread waits for `waiting`, until the guard drops;
/// `None` when reports are off or an outer wait is noted. Called only
/// once a wait's condition has been seen false. It costs two thread-local
/// stores: the watchdog sees the wait only once it has lasted (`idle`).
#[inline(always)]
pub(crate) fn blocked(waiting: Waiting) -> Option<BlockedGuard> {
    if !watching() {
        return None;
    }
    note(waiting)
}

#[inline(never)]
fn note(waiting: Waiting) -> Option<BlockedGuard> {
    LOCAL.with(|local| {
        if local.pending.get().is_some() {
            return None;
        }
        if local.polling.get() {
            polling::ended();
        }
        local.pending.set(Some((local.current("wait"), waiting)));
        Some(BlockedGuard(()))
    })
}

/// Called by a wait that is about to yield its core for a while (it has
/// lasted): publishes the thread's pending block to its slot for the
/// watchdog, once, with a backtrace for a call made from C (so the report
/// can name the C caller's file and line).
#[inline]
pub(crate) fn idle() {
    if !watching() {
        return;
    }
    let _ = LOCAL.try_with(|local| {
        let Some((call, waiting)) = local.pending.get().filter(|_| !local.published.get()) else {
            return;
        };
        let (trace, place) = c_caller(call.site);
        let Ok(slot) = SLOT.try_with(|slot| slot.borrow_mut().get_or_insert_with(register).clone()) else {
            return;
        };
        *crate::sync::lock(&slot.block) = Some(Block {
            call,
            waiting,
            since: Instant::now(),
            trace,
            place,
            polling: false,
        });
        local.published.set(true);
        announce();
    });
}

/// For a call from C: where its caller is, as a binding names it (a
/// Python line), or else a backtrace to find the C caller in.
fn c_caller(site: Site) -> (Option<Arc<std::backtrace::Backtrace>>, Option<String>) {
    if !matches!(site, Site::C) {
        return (None, None);
    }
    match crate::site::foreign_caller() {
        Some(place) => (None, Some(place)),
        None => (Some(Arc::new(std::backtrace::Backtrace::force_capture())), None),
    }
}

/// Wakes the watchdog for a block just published.
fn announce() {
    *crate::sync::lock(&NEWS.0) += 1;
    NEWS.1.notify_one();
}

fn register() -> Arc<Slot> {
    let slot = Arc::new(Slot::default());
    let mut slots = crate::sync::lock(&SLOTS);
    slots.retain(|s| s.strong_count() > 0);
    slots.push(Arc::downgrade(&slot));
    slot
}

/// Every live thread's slot.
fn slots() -> Vec<Arc<Slot>> {
    let slots = crate::sync::lock(&SLOTS);
    slots.iter().filter_map(Weak::upgrade).collect()
}
