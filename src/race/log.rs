//! What the race checker writes down during a phase: each thread's
//! accesses to symmetric memory, this PE's own (`target` = `LOCAL`) and
//! its puts, gets and atomics to others, kept in a log of the thread's own
//! so that a load or store takes no shared lock. A run of accesses from
//! one place (a loop over an array) becomes one entry: an access that
//! touches the last entry of its site, kind and sequence number extends
//! it. The phase's end drains every thread's log.
//!
//! Each thread's log (`entries`) and slots (`slots`) hang off its
//! `Thread`, found without a thread-local; this file keeps the list of
//! them, each thread's view and strand, and the phase's end (`drain`).

use super::slots::{begin, homes, Slot, SLOTS};
use super::trail::{Seen, Trail};
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

pub(crate) use super::entries::{
    counted, set_counting, watch, Entry, ThreadLog, COUNTING, LOCAL, PUBLICATIONS, WATCH, WATCH_PENDING, WATCH_TRAIL,
};

/// One thread's slots and log.
pub(crate) struct Thread {
    /// Its place in `THREADS`.
    id: u32,
    /// The team's publications it has learned of (`threads`, `reach`).
    known: AtomicU64,
    slots: [Slot; SLOTS],
    /// In an OpenMP team (`threads`), the stamp of the last synchronization
    /// that happens before this thread's next access; `FOLLOW` otherwise
    /// (the PE's count, `race::STAMP`).
    view: AtomicU64,
    /// The view its sections begin in (`threads::next_section`).
    section_base: AtomicU64,
    /// The slot the next new run takes (round robin).
    next: AtomicU64,
    /// Its strand (`log`'s, read without its lock).
    strand: AtomicU32,
    /// Its last accesses while a team runs (`trail`).
    trail: Trail,
    log: Mutex<ThreadLog>,
}

/// Every thread's, for the phase's end.
static THREADS: Mutex<Vec<Arc<Thread>>> = Mutex::new(Vec::new());
/// The phase after the last one drained: a thread made since begins its
/// log with it as its floor (made during a drain, it waits for it).
static DRAINED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's, once it has written anything down; kept for the
    /// process's life (also in `THREADS`).
    static MINE: Cell<*const Thread> = const { Cell::new(std::ptr::null()) };
}

/// The first thread to write anything down (the main thread, in nearly
/// every program) and its thread pointer: found without a thread-local.
/// A thread-local in this library is a call (`__tls_get_addr`, the model
/// of a shared library's), which was most of a C load's cost.
static FIRST: std::sync::atomic::AtomicPtr<Thread> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
static FIRST_TP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// This thread's pointer (the TCB's address, `fs:0` on x86_64): another
/// thread's is never the same while this one lives. A thread that reuses
/// an exited one's block takes over its `Thread` too, which then still has
/// one writer. 0 where it is not read this way.
#[inline(always)]
fn thread_pointer() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let tp: usize;
        // SAFETY: reads the thread control block's self pointer, which
        // glibc and musl keep at fs:0 for the thread's life.
        unsafe { std::arch::asm!("mov {}, qword ptr fs:0", out(reg) tp, options(nostack, readonly, preserves_flags)) };
        tp
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        0
    }
}

#[inline(always)]
fn mine() -> Option<&'static Thread> {
    let tp = thread_pointer();
    if tp != 0 && tp == FIRST_TP.load(Relaxed) {
        // SAFETY: FIRST is set before FIRST_TP (below), from a leaked `Arc`.
        return Some(unsafe { &*FIRST.load(std::sync::atomic::Ordering::Acquire) });
    }
    mine_slow(tp)
}

#[inline(never)]
fn mine_slow(tp: usize) -> Option<&'static Thread> {
    let ptr = MINE.try_with(|m| m.get()).ok()?;
    if !ptr.is_null() {
        // SAFETY: made below from an `Arc` that is never dropped.
        return Some(unsafe { &*ptr });
    }
    let mut threads = crate::sync::lock(&THREADS);
    let thread = Arc::new(Thread {
        id: threads.len() as u32,
        known: AtomicU64::new(0),
        slots: [const { Slot::new() }; SLOTS],
        next: AtomicU64::new(0),
        strand: AtomicU32::new(threads.len() as u32),
        trail: Trail::new(),
        view: AtomicU64::new(FOLLOW),
        section_base: AtomicU64::new(FOLLOW),
        log: Mutex::new(ThreadLog {
            strand: threads.len() as u32,
            floor: DRAINED.load(Relaxed),
            ..ThreadLog::default()
        }),
    });
    threads.push(thread.clone());
    drop(threads);
    let ptr = Arc::into_raw(thread);
    MINE.try_with(|m| m.set(ptr)).ok()?;
    if tp != 0
        && FIRST
            .compare_exchange(
                std::ptr::null_mut(),
                ptr.cast_mut(),
                std::sync::atomic::Ordering::Release,
                Relaxed,
            )
            .is_ok()
    {
        FIRST_TP.store(tp, std::sync::atomic::Ordering::Release);
    }
    // SAFETY: as above: the `Arc` is leaked, so it lives for good.
    Some(unsafe { &*ptr })
}

/// A thread's view outside a team: the PE's own count.
pub(crate) const FOLLOW: u64 = u64::MAX;

/// The stamp this thread's next access carries: its view in a team, else
/// `global` (`race::STAMP`).
#[inline(always)]
fn stamp_of(thread: &Thread, global: u64) -> u64 {
    match thread.view.load(Relaxed) {
        FOLLOW => global,
        view => view,
    }
}

/// [`stamp_of`] for the calling thread.
pub(crate) fn stamp(global: u64) -> u64 {
    mine().map_or(global, |t| stamp_of(t, global))
}

/// The calling thread's view (`FOLLOW` outside a team).
pub(crate) fn view() -> u64 {
    mine().map_or(FOLLOW, |t| t.view.load(Relaxed))
}

/// Sets the calling thread's view.
pub(crate) fn set_view(view: u64) {
    if let Some(t) = mine() {
        t.view.store(view, Relaxed);
    }
}

/// The view the calling thread's next section begins in.
pub(crate) fn section_base() -> u64 {
    mine().map_or(FOLLOW, |t| t.section_base.load(Relaxed))
}

pub(crate) fn set_section_base(view: u64) {
    if let Some(t) = mine() {
        t.section_base.store(view, Relaxed);
    }
}

/// The calling thread learns of the team's publications up to `n`.
pub(crate) fn learn(n: u64) {
    if let Some(t) = mine() {
        t.known.fetch_max(n, Relaxed);
    }
}

/// Writes `access` (address, size, kind, place) down in the calling
/// thread's trail (while a team runs with views on: `WATCH_TRAIL`).
pub(crate) fn trail(access: (usize, usize, u8, usize)) {
    let counted = counted();
    if let (Some(t), true) = (mine(), counted != 0) {
        t.trail
            .record(access, t.strand.load(Relaxed), counted, super::trail::team());
    }
}

/// An access in another strand's trail that races with an operation the
/// calling thread issues now on `[lo, hi)`, which `writes` it or reads it
/// (`trail::races`). None unless a team runs with views on.
pub(super) fn trailed(lo: usize, hi: usize, writes: bool) -> Option<Seen> {
    if !COUNTING.load(Relaxed) {
        return None;
    }
    let me = mine()?;
    let mine = (me.strand.load(Relaxed), me.known.load(Relaxed));
    let team = super::trail::team();
    let threads = crate::sync::lock(&THREADS);
    threads.iter().find_map(|t| {
        t.trail
            .overlapping(lo, hi, team)
            .find(|seen| super::trail::races(seen, mine, writes))
    })
}

/// The calling thread: its strand and the publications it has learned of.
pub(crate) fn me() -> Option<(u32, u64)> {
    mine().map(|t| (t.strand.load(Relaxed), t.known.load(Relaxed)))
}

/// Strands begun by `new_strand`, numbered apart from threads' own.
static STRANDS: AtomicU32 = AtomicU32::new(1 << 31);

/// The calling thread begins a new strand (a section of a `sections`
/// construct: unordered with its other sections, whichever thread runs
/// them): its runs so far are written down under the old one.
pub(crate) fn new_strand() {
    switch_strand(|_| STRANDS.fetch_add(1, Relaxed));
}

/// The calling thread is back on its own strand (its sections done).
pub(crate) fn end_strand() {
    switch_strand(|thread| thread.id);
}

fn switch_strand(to: impl FnOnce(&Thread) -> u32) {
    let Some(thread) = mine() else { return };
    let mut log = crate::sync::lock(&thread.log);
    let phase = super::STAMP.load(Relaxed) >> 32;
    for slot in &thread.slots {
        slot.flush(phase, &mut log);
    }
    log.strand = to(thread);
    thread.strand.store(log.strand, Relaxed);
    log.recent = [None; 16];
}

/// Gives entries carried past a phase's end (`reach`) to the calling
/// thread's log, in the phase that begins now, each still its strand's.
pub(crate) fn carry(entries: Vec<Entry>) {
    if entries.is_empty() {
        return;
    }
    if let Some(t) = mine() {
        let mut log = crate::sync::lock(&t.log);
        log.recent = [None; 16];
        log.entries.extend(entries);
    }
}

/// Every thread back to the PE's count, as outside a team.
pub(crate) fn follow_all() {
    for thread in crate::sync::lock(&THREADS).iter() {
        thread.view.store(FOLLOW, Relaxed);
    }
}

/// Runs `f` on this thread's log.
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&mut ThreadLog) -> R) -> Option<R> {
    mine().map(|t| f(&mut crate::sync::lock(&t.log)))
}

/// A C program's load (`kind` 0), store (1), atomic (2) or atomic load (3) of `len` bytes at
/// `offset`, from `site`, stamped `stamp`: true when it only extended its
/// place's current run (the hot path: a few relaxed loads, no lock).
#[inline]
pub(crate) fn extend(stamp: u64, site: u64, kind: u8, offset: u64, len: u64) -> bool {
    let Some(thread) = mine() else { return true };
    let stamp = stamp_of(thread, stamp);
    let code = match kind {
        2 | 3 => u64::from(kind) | (len << 8),
        k => u64::from(k),
    };
    // A place's run is looked for first in its two home slots, where it
    // begins when one is free: the loads and stores of a loop's body, each
    // from its own place, mostly find theirs at the first or second look.
    let (a, b) = homes(site);
    for i in [a, b] {
        let slot = &thread.slots[i];
        if let Some(extended) = slot.extend(&thread.log, stamp, site, code, offset, len) {
            return extended;
        }
    }
    for (i, slot) in thread.slots.iter().enumerate() {
        if i == a || i == b {
            continue;
        }
        if let Some(extended) = slot.extend(&thread.log, stamp, site, code, offset, len) {
            return extended;
        }
    }
    let slot = match (
        thread.slots[a].stamp.load(Relaxed) == stamp,
        thread.slots[b].stamp.load(Relaxed) == stamp,
    ) {
        (false, _) => &thread.slots[a],
        (true, false) => &thread.slots[b],
        (true, true) => &thread.slots[thread.next.fetch_add(1, Relaxed) as usize % SLOTS],
    };
    begin(&thread.log, slot, (stamp, site, code), offset, len);
    false
}

/// What a phase's end takes from the threads' logs.
pub(crate) struct Drained {
    pub entries: Vec<Entry>,
    /// Entries of the phase before (`ThreadLog::late`).
    pub late: Vec<Entry>,
    /// Accesses lost to a full log.
    pub lost: u64,
}

/// Takes every thread's entries of `phase` (slots first). A thread made
/// meanwhile waits for the lock on the list, then begins after `phase`.
pub(crate) fn drain(phase: u64) -> Drained {
    let threads = crate::sync::lock(&THREADS);
    let mut d = Drained {
        entries: Vec::new(),
        late: Vec::new(),
        lost: 0,
    };
    for thread in threads.iter() {
        let mut log = crate::sync::lock(&thread.log);
        for slot in &thread.slots {
            slot.flush(phase, &mut log);
        }
        d.lost += log.drain(&mut d.entries, &mut d.late);
        log.floor = phase + 1;
    }
    DRAINED.store(phase + 1, Relaxed);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that drain every thread's slots, one at a time: a drain
    /// of another phase would take (and drop) the other's run.
    static DRAINS: Mutex<()> = Mutex::new(());

    /// A phase number no other test has drained (every thread's log
    /// keeps the last drained one as its floor).
    fn fresh_phase() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(100);
        NEXT.fetch_add(10, Relaxed)
    }

    #[test]
    fn a_run_of_loads_stays_in_its_slot_until_drained() {
        let _one = crate::sync::lock(&DRAINS);
        let phase = fresh_phase();
        let stamp = phase << 32 | 2;
        assert!(!extend(stamp, 0x40, 0, 64, 8), "the first load begins a run");
        for i in 1..100 {
            assert!(extend(stamp, 0x40, 0, 64 + 8 * i, 8), "the next ones extend it");
        }
        assert!(!extend(stamp + 1, 0x40, 0, 864, 8), "a new number begins another run");
        let entries = drain(phase).entries;
        let mine: Vec<_> = entries.iter().filter(|e| e.access.site == 0x40).collect();
        assert_eq!(mine.len(), 2, "{mine:?}");
        let first = mine.iter().find(|e| e.access.seq == 2).unwrap();
        assert_eq!((first.access.offset, first.access.len), (64, 800));
        assert!(
            drain(phase).entries.iter().all(|e| e.access.site != 0x40),
            "drained once"
        );
    }

    #[test]
    fn a_run_of_the_phase_before_is_drained_as_late() {
        let _one = crate::sync::lock(&DRAINS);
        let phase = fresh_phase();
        assert!(!extend(phase << 32 | 1, 0x77, 0, 64, 8));
        let d = drain(phase + 1);
        assert!(d.entries.iter().all(|e| e.access.site != 0x77));
        let late: Vec<_> = d.late.iter().filter(|e| e.access.site == 0x77).collect();
        assert_eq!(late.len(), 1, "{late:?}");
        assert_eq!((late[0].access.seq, late[0].access.offset), (1, 64));
    }
}
