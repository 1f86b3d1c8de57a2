//! The race checker (`rlaunch --check-races`, `ONESIDE_CHECK_RACES=1`):
//! two accesses of different PEs to the same bytes, one of them a write,
//! that nothing in the program orders, each reported once with both
//! places.
//!
//! The job's world barriers cut it into *phases*. During a phase each PE
//! writes down (`log`) its own loads and stores of symmetric memory (Rust
//! through the API's local accessors; C through `oshcc --check-races`,
//! whose `-fsanitize=thread` calls come to `access`), its puts, gets and
//! atomics to every PE, and its synchronizations, numbered (`Syncs`). At
//! the barrier that ends the phase the records travel to the PE whose
//! memory they touched (`exchange`), and that PE judges the phase
//! (`check`) and reports (`report`). The ordering thus travels with the
//! data, on whatever transport carried it. Off, every hook is one relaxed
//! load and a branch.
//!
//! Also found at once, without waiting for the phase: a load or store of
//! a buffer that a non-blocking put or get still uses before the quiet
//! that completes it (`nbi`).

mod answer;
pub(crate) mod check;
mod entries;
pub(crate) mod exchange;
pub(crate) mod log;
mod nbi;
mod order;
mod origin;
mod reach;
mod report;
pub mod shadow;
pub(crate) mod site;
mod slots;
#[doc(hidden)]
pub mod threads;
mod trail;

use crate::error::{Error, Result};
use crate::links::Links;
use check::{Access, Kind, Syncs};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

pub use nbi::{nbi_buffer, Use};

/// Every context, for [`release`].
pub(crate) const ALL: usize = usize::MAX;

/// What the checker does on a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Reports each race once and lets the job go on; its exit status
    /// then says races were found.
    Report,
    /// Ends the job at the first race.
    Abort,
}

/// The mode `ONESIDE_CHECK_RACES` asks for: `1` or `report`, `abort`.
pub(crate) fn requested() -> Option<Mode> {
    match std::env::var("ONESIDE_CHECK_RACES").ok()?.as_str() {
        "" | "0" | "off" => None,
        "abort" => Some(Mode::Abort),
        _ => Some(Mode::Report),
    }
}

/// The operations a report names, by number (`Access::op`).
#[doc(hidden)]
pub mod ops {
    pub const LOAD: u8 = 0;
    pub const STORE: u8 = 1;
    pub const ATOMIC: u8 = 2;
    pub const PUT: u8 = 3;
    pub const GET: u8 = 4;
    pub const PUT_NBI: u8 = 5;
    pub const GET_NBI: u8 = 6;
    pub const PUT_SIGNAL: u8 = 7;
    pub const LOCAL_READ: u8 = 8;
    pub const LOCAL_WRITE: u8 = 9;
    pub const WAIT: u8 = 10;
    pub const COLLECTIVE: u8 = 11;
    /// In words, for a report: `a put`.
    pub(crate) fn words(op: u8) -> &'static str {
        const WORDS: [&str; 12] = [
            "a load",
            "a store",
            "an atomic",
            "a put",
            "a get",
            "a non-blocking put",
            "a non-blocking get",
            "a put-with-signal",
            "a local read",
            "a local write",
            "a wait",
            "a collective",
        ];
        WORDS.get(op as usize).copied().unwrap_or("an access")
    }
}

/// Whether the checker is on: the one load every hook pays when it is off.
static ON: AtomicBool = AtomicBool::new(false);
/// This PE's symmetric memory, for the load and store hooks' filter
/// (zero lengths while off or before init).
static HEAP_LO: AtomicUsize = AtomicUsize::new(0);
static HEAP_LEN: AtomicUsize = AtomicUsize::new(0);
static DATA_LO: AtomicUsize = AtomicUsize::new(0);
static DATA_LEN: AtomicUsize = AtomicUsize::new(0);
/// Whether an access complete at its return was written down since the
/// last synchronization: only then does an issued write need a number.
static DIRTY: AtomicBool = AtomicBool::new(false);
/// Whether the program calls through the C API (its sites are return
/// addresses, found by unwinding).
static C_PROGRAM: AtomicBool = AtomicBool::new(false);

/// What the checker knows of its rank's memory, given by `World` at start
/// (the checker names nothing above the links).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memory {
    pub rank: usize,
    pub size: usize,
    /// This rank's heap: its base address and length (global data lies
    /// past it, at heap offsets from `heap_len` on).
    pub heap_base: usize,
    pub heap_len: usize,
    /// The program's symmetric global data: its address and length.
    pub data: Option<(usize, usize)>,
    /// Heap offset of the checking area (`exchange`).
    pub area: usize,
}

/// The checker's state in a PE.
pub(crate) struct Races {
    mode: Mode,
    rank: u32,
    memory: Memory,
    /// The current phase: world barriers passed.
    phase: AtomicU64,
    /// The numbers of the last release, the last issued write and the
    /// first acquire in this phase (the count so far is `STAMP`'s).
    released: AtomicU32,
    issued: AtomicU32,
    acquired: AtomicU32,
    /// The locks taken in this phase, each from its last holder
    /// (`check::Syncs::handed`).
    handed: std::sync::Mutex<Vec<(u32, u32)>>,
    /// Where the barrier that began this phase was called (a site code).
    began_at: AtomicU64,
    /// Races reported by this PE.
    found: AtomicUsize,
    report: report::Reported,
    /// The last phase judged, while an OpenMP team runs (`threads`).
    kept: std::sync::Mutex<Option<report::Kept>>,
}

static STATE: OnceLock<Races> = OnceLock::new();

/// Whether `ONESIDE_RACE_DEBUG` asks for the checker's own trace at each
/// phase's end (for its developers), read once.
fn debugging() -> bool {
    static ASKED: OnceLock<bool> = OnceLock::new();
    *ASKED.get_or_init(|| std::env::var_os("ONESIDE_RACE_DEBUG").is_some())
}

/// Whether the checker is on in this process.
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Relaxed)
}

fn state() -> Option<&'static Races> {
    STATE.get()
}

/// Turns the checker on for the rank whose memory is `memory`: from here
/// on the hooks write down.
pub(crate) fn start(memory: Memory, mode: Mode) {
    let races = Races {
        mode,
        rank: memory.rank as u32,
        memory,
        phase: AtomicU64::new(0),
        released: AtomicU32::new(0),
        issued: AtomicU32::new(0),
        acquired: AtomicU32::new(u32::MAX),
        handed: std::sync::Mutex::new(Vec::new()),
        began_at: AtomicU64::new(0),
        found: AtomicUsize::new(0),
        report: report::Reported::default(),
        kept: std::sync::Mutex::new(None),
    };
    if STATE.set(races).is_err() {
        return;
    }
    crate::watch::record_calls();
    HEAP_LO.store(memory.heap_base, Relaxed);
    HEAP_LEN.store(memory.heap_len, Relaxed);
    if let Some((start, len)) = memory.data {
        DATA_LO.store(start, Relaxed);
        DATA_LEN.store(len, Relaxed);
        shadow::mark(start, len);
    }
    ON.store(true, Relaxed);
    crate::hooks::set(crate::hooks::RACES, true);
}

/// Says the program calls through the C API (`shmem_init`).
#[doc(hidden)]
pub fn set_c_program() {
    C_PROGRAM.store(true, Relaxed);
}

/// Init's last world barrier is passed: a report of a race in the phases
/// so far names init as the last synchronization.
#[doc(hidden)]
pub fn init_ended() {
    if let Some(s) = state() {
        report::INIT_PHASES.store(s.phase.load(Relaxed), Relaxed);
    }
}

/// Races this PE reported (0 when the checker is off).
pub fn found() -> usize {
    state().map_or(0, |s| s.found.load(Relaxed))
}

/// The raw site of an API call: the C caller's return address, or the
/// outermost Rust call's `Location` (`at`, the hook's caller, otherwise).
fn api_site(at: &'static Location<'static>) -> u64 {
    match C_PROGRAM.load(Relaxed) {
        true => site::raw_c(site::c_caller_pc()),
        false => site::raw_rust(crate::site::outermost_or(at)),
    }
}

/// The number of this PE's synchronizations so far in the phase that
/// happen before the calling thread's next access (`threads`: a view from
/// a phase before this one counts none of this phase's).
fn seq() -> u32 {
    let global = STAMP.load(Relaxed);
    match log::stamp(global) {
        mine if mine >> 32 == global >> 32 => mine as u32,
        _ => 0,
    }
}

/// The phase (high half) and this PE's synchronizations in it so far
/// (low half): what the log's entries are stamped with.
static STAMP: AtomicU64 = AtomicU64::new(0);

/// The stamp the calling thread's next access carries: its view in an
/// OpenMP team (`threads`), else `STAMP`.
fn thread_stamp() -> u64 {
    log::stamp(STAMP.load(Relaxed))
}

/// Counts a synchronization; returns its number in the phase.
fn next_seq() -> u32 {
    let stamp = STAMP.fetch_add(1, Relaxed) + 1;
    threads::synced(stamp);
    stamp as u32
}

/// A put, get or atomic of this PE to `target`'s bytes `[offset, offset + len)`.
#[inline(never)]
/// `done`: complete when the call returns (a blocking get, a fetching
/// atomic), not only at the next quiet.
/// `ctx`: the context (`Channel::race_id`).
pub(crate) fn remote(
    at: &'static Location<'static>,
    (target, ctx): (usize, usize),
    (offset, len): (usize, usize),
    (kind, op): (Kind, u8),
    done_at_return: bool,
) {
    let access = Access {
        offset: offset as u64,
        len: len as u64,
        kind,
        op,
        done_at_return,
        seq: seq(),
        site: api_site(at),
        pe: 0,
    };
    if done_at_return {
        DIRTY.store(true, Relaxed);
    }
    origin::issued(access.site, (target, ctx), (offset, len), (kind, op), done_at_return);
    log::with(|l| l.add(target as u32, access, log::counted()));
}

/// A put (`op`: blocking, non-blocking, with signal) of `len` bytes to
/// `target` at heap `offset`: written down, then counted as an issued write.
#[inline(never)]
pub(crate) fn put(at: &'static Location<'static>, target: usize, offset: usize, len: usize, (op, ctx): (u8, usize)) {
    remote(at, (target, ctx), (offset, len), (Kind::Write, op), false);
    issued();
}

/// A blocking get: complete when it returns, and read as a flag may be
/// (a loop of gets is a wait), so an acquire after it.
#[inline(never)]
pub(crate) fn get(at: &'static Location<'static>, target: usize, offset: usize, len: usize, ctx: usize) {
    remote(at, (target, ctx), (offset, len), (Kind::Read, ops::GET), true);
    acquire(None);
}

/// An atomic on `target`'s word: fetching ones are acquires (an atomic
/// read as a flag), every one an issued write.
#[inline(never)]
/// `tag` names the atomic's type (`type_tag`); `reads_only`: a fetch
/// that writes nothing.
pub(crate) fn atomic(
    at: &'static Location<'static>,
    target: usize,
    (offset, width): (usize, usize),
    (tag, reads_only): (u8, bool),
    (fetch, ctx): (bool, usize),
) {
    let kind = match reads_only {
        true => Kind::AtomicRead(tag),
        false => Kind::Atomic(tag),
    };
    remote(at, (target, ctx), (offset, width), (kind, ops::ATOMIC), fetch);
    issued();
    if fetch {
        acquire(None);
    }
}

/// The tag of an atomic's type `T`: atomics of two types on one word race.
/// A C program's own atomics (`__tsan_atomic*`) know only their size,
/// which gives tags of their own (`log`).
pub(crate) fn type_tag<T>() -> u8 {
    let name = std::any::type_name::<T>();
    let hash = name
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    (hash % 48) as u8
}

/// The tag of an atomic of type `T` on a context of atomicity domain
/// `domain` (`Channel::domain`): atomics of one type on contexts of two
/// teams race as atomics of two types do. The world's domain (0) keeps
/// `type_tag`; another moves it among the same 48 tags (13 is prime to 48,
/// so one type's tags in domains 0 to 47 all differ). Two types of two
/// domains may share a tag: a race missed, never one invented.
pub(crate) fn domain_tag<T>(domain: usize) -> u8 {
    ((usize::from(type_tag::<T>()) + 13 * (domain % 48)) % 48) as u8
}

/// A local read or write of this PE's own bytes through the Rust API.
#[inline(never)]
pub(crate) fn local(at: &'static Location<'static>, (offset, len): (usize, usize), kind: Kind, op: u8) {
    let access = Access {
        offset: offset as u64,
        len: len as u64,
        kind,
        op,
        done_at_return: true,
        seq: seq(),
        site: api_site(at),
        pe: 0,
    };
    DIRTY.store(true, Relaxed);
    log::with(|l| l.add(log::LOCAL, access, log::counted()));
}

/// A load (`kind` 0), store (1), atomic (2) or atomic load (3) (an
/// atomic's type is its width) of `size` bytes at `addr`, made by a C program's code at
/// return address `pc` (`oshcc --check-races`'s `__tsan_*` calls).
///
/// Inlined into each entry: the filter, a few loads and compares, then a
/// jump out of line only for symmetric memory or while a non-blocking
/// buffer is pending. An access to private memory (most of a program's)
/// thus pays no call and no saved register.
#[doc(hidden)]
#[inline(always)]
pub fn access(addr: usize, size: usize, kind: u8, pc: usize) {
    let off = addr.wrapping_sub(HEAP_LO.load(Relaxed));
    let heap_len = HEAP_LEN.load(Relaxed);
    if off < heap_len {
        return symmetric(addr, off, size, kind, pc);
    }
    let d = addr.wrapping_sub(DATA_LO.load(Relaxed));
    if d < DATA_LEN.load(Relaxed) {
        return symmetric(addr, heap_len + d, size, kind, pc);
    }
    if log::WATCH.load(Relaxed) != 0 {
        watched(addr, size, kind, pc);
    }
}

/// [`access`] while a buffer is pending or a team keeps trails.
#[inline(never)]
fn watched(addr: usize, size: usize, kind: u8, pc: usize) {
    let watch = log::WATCH.load(Relaxed);
    if watch & log::WATCH_PENDING != 0 {
        nbi::touched(addr, size, kind, pc);
    }
    if watch & log::WATCH_TRAIL != 0 {
        log::trail((addr, size, kind, pc));
    }
}

/// Whether `[addr, addr + len)` touches this PE's symmetric memory.
pub(crate) fn symmetric_range(addr: usize, len: usize) -> bool {
    let (heap, data) = (HEAP_LO.load(Relaxed), DATA_LO.load(Relaxed));
    (addr < heap + HEAP_LEN.load(Relaxed) && heap < addr + len)
        || (addr < data + DATA_LEN.load(Relaxed) && data < addr + len)
}

/// A symmetric allocation of `len` bytes at `addr`: a C program's
/// accesses to it come to [`access`] (`shadow`).
pub(crate) fn allocated(addr: usize, len: usize) {
    if on() {
        shadow::mark(addr, len);
    }
}

/// [`access`] of symmetric memory, at heap offset `offset`.
#[inline(never)]
fn symmetric(addr: usize, offset: usize, size: usize, kind: u8, pc: usize) {
    if log::WATCH.load(Relaxed) != 0 {
        watched(addr, size, kind, pc);
    }
    let stamp = STAMP.load(Relaxed);
    if !log::extend(stamp, site::raw_c(pc), kind, offset as u64, size as u64) {
        DIRTY.store(true, Relaxed);
    }
}

/// A release: a quiet, fence, signal, lock release or collective, on
/// context `ctx` (`ALL`: every one). A quiet also completes every
/// non-blocking buffer (`nbi`), and the context's own operations
/// (`origin`).
#[inline(never)]
pub(crate) fn release(quiet: bool, ctx: usize) {
    DIRTY.store(false, Relaxed);
    if let Some(s) = state() {
        let view = seq();
        let n = next_seq();
        s.released.store(n, Relaxed);
        s.issued.store(n, Relaxed);
        // A collective tells the other members; a quiet or fence no one.
        let what = match !quiet && ctx == ALL {
            true => reach::What::Told,
            false => reach::What::Release,
        };
        reach::record(n, what, view);
    }
    match quiet {
        true => {
            nbi::completed(threads::active());
            origin::completed_on(ctx);
        }
        false => origin::fenced(ctx),
    }
}

/// A write issued to another PE (a put, atomic or signal): it orders this
/// PE's earlier accesses that were complete when their calls returned.
#[inline(never)]
pub(crate) fn issued() {
    // While a team runs, every issued write is numbered: the thread that
    // made the access it orders may not be the one that dirtied the PE.
    if !DIRTY.swap(false, Relaxed) && !reach::recording() {
        return;
    }
    if let Some(s) = state() {
        let view = seq();
        let n = next_seq();
        s.issued.store(n, Relaxed);
        reach::record(n, reach::What::Issued, view);
    }
}

/// A lock released (after its quiet): another PE that takes it next
/// acquires what this one released.
pub(crate) fn lock_released() {
    if on() {
        reach::record(STAMP.load(Relaxed) as u32, reach::What::Told, seq());
    }
}

/// A lock taken: an acquire of what its last holder (`from`; `None`: it
/// was never held) released, and of nothing else (`race::order`).
#[inline(never)]
pub(crate) fn lock_taken(from: Option<usize>) {
    let Some(s) = state() else { return };
    origin::completed();
    threads::acquired_all();
    let n = next_seq();
    nbi::acquired(STAMP.load(Relaxed) >> 32, n);
    if let Some(from) = from.filter(|&from| from != s.rank as usize) {
        let mut handed = crate::sync::lock(&s.handed);
        if !handed.iter().any(|&(f, _)| f == from as u32) {
            handed.push((from as u32, n));
        }
    }
}

/// An acquire: a wait or test that returned true, a fetching atomic, a
/// collective. `seen`: the bytes a wait or test read.
#[inline(never)]
pub(crate) fn acquire(seen: Option<(usize, usize)>) {
    let Some(s) = state() else { return };
    origin::completed();
    threads::acquired_all();
    let n = next_seq();
    nbi::acquired(STAMP.load(Relaxed) >> 32, n);
    let _ = s.acquired.compare_exchange(u32::MAX, n, Relaxed, Relaxed);
    if let Some((offset, len)) = seen {
        let access = Access {
            offset: offset as u64,
            len: len as u64,
            kind: Kind::Observe,
            op: ops::WAIT,
            done_at_return: true,
            seq: n,
            site: 0,
            pe: 0,
        };
        log::with(|l| l.add(log::LOCAL, access, log::counted()));
    }
}

/// A wait or test of this PE's bytes at heap offset `offset` (`None`: not
/// symmetric) returned, having seen `len` of them.
pub(crate) fn observed(offset: Option<usize>, len: usize) {
    if on() {
        acquire(offset.map(|offset| (offset, len)));
    }
}

/// A collective wrote this PE's destination, `len` bytes at heap
/// `offset`, before it returned: another PE's access to them after its
/// own return from the collective is not ordered with that write (the
/// collective ends at each member on its own), unless a synchronization
/// after it orders them.
#[inline(never)]
pub(crate) fn collective_wrote(at: &'static Location<'static>, (offset, len): (usize, usize)) {
    local(at, (offset, len), Kind::Write, ops::COLLECTIVE);
}

/// A collective other than a world barrier: a release and an acquire.
pub(crate) fn collective() {
    release(false, ALL);
    acquire(None);
}

/// The end of a phase, before the world barrier's sync: sends every
/// other PE the records of its memory, and completes them. Returns what
/// this PE keeps to judge once the sync is done.
pub(crate) fn phase_ends(links: &Links, at: &'static Location<'static>) -> Result<Option<report::Phase>> {
    let Some(s) = state() else { return Ok(None) };
    report::phase_ends(s, links, api_site(at), threads::active())
}

/// After the world barrier's sync: judges the phase at this PE.
pub(crate) fn phase_ended(phase: Option<report::Phase>) -> Result<()> {
    match (state(), phase) {
        (Some(s), Some(phase)) => report::judge(s, phase, threads::active()),
        _ => Ok(()),
    }
}

impl Races {
    /// Takes the phase's synchronizations and starts the next phase.
    fn next_phase(&self, began_at: u64) -> (u64, Syncs, u64) {
        let mut syncs = Syncs {
            released: self.released.swap(0, Relaxed),
            issued: self.issued.swap(0, Relaxed),
            acquired: self.acquired.swap(u32::MAX, Relaxed),
            ..Syncs::NONE
        };
        let handed = std::mem::take(&mut *crate::sync::lock(&self.handed));
        for (i, (from, seq)) in handed.into_iter().enumerate() {
            match syncs.handed.get_mut(i) {
                Some(slot) => *slot = (from, seq),
                // More than a header carries: taken as acquiring everything.
                None => syncs.acquired = syncs.acquired.min(seq),
            }
        }
        let phase = self.phase.fetch_add(1, Relaxed);
        STAMP.store((phase + 1) << 32, Relaxed);
        threads::synced((phase + 1) << 32);
        let previous = self.began_at.swap(began_at, Relaxed);
        (phase, syncs, previous)
    }

    /// Counts a race; in abort mode, the error that ends the job.
    fn count(&self, text: &str) -> Result<()> {
        self.found.fetch_add(1, Relaxed);
        match self.mode {
            Mode::Report => Ok(()),
            Mode::Abort => Err(Error::DataRace {
                rank: self.rank as usize,
                report: text.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_type_keeps_its_tag_in_the_world_and_gets_another_in_each_team() {
        assert_eq!(super::domain_tag::<i64>(0), super::type_tag::<i64>());
        let tags: std::collections::HashSet<u8> = (0..48).map(super::domain_tag::<i64>).collect();
        assert_eq!(tags.len(), 48);
        assert!(tags.iter().all(|&t| t < 48));
    }
}
