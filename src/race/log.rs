//! What the race checker writes down during a phase: each thread's
//! accesses to symmetric memory, this PE's own (`target` = `LOCAL`) and
//! its puts, gets and atomics to others, kept in a log of the thread's own
//! so that a load or store takes no shared lock. A run of accesses from
//! one place (a loop over an array) becomes one entry: an access that
//! touches the last entry of its site, kind and sequence number extends
//! it. The phase's end drains every thread's log.
//!
//! A C program's loads and stores first meet the thread's *slots*: the
//! current run of each of a few places, extended with plain atomic loads
//! and stores, no lock; a run enters the log only when its slot is wanted
//! for another place or another synchronization number, or at the phase's
//! end. An extension racing with the phase's end may be lost: a lost
//! access can hide a race, never invent one.

use super::check::{Access, Kind};
use super::ops;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// The `target` of an access to this PE's own memory.
pub(crate) const LOCAL: u32 = u32::MAX;

/// Entries one thread keeps in a phase; past it, accesses are counted as
/// lost and the phase's reports say so.
const MOST: usize = 1 << 22;

/// One access, and whose memory it touched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub target: u32,
    pub access: Access,
    /// In an OpenMP team, the team's publications counted when it was
    /// made (`threads::counted`); 0 outside one (`reach`).
    pub counted: u64,
    /// The strand that made it: its thread, or one section of a
    /// `sections` construct the thread ran (`new_strand`).
    pub thread: u32,
}

/// One thread's log.
#[derive(Default)]
pub(crate) struct ThreadLog {
    entries: Vec<Entry>,
    /// Loads and stores of the phase before, by a team thread that no
    /// synchronization has brought into this one (`threads`): judged
    /// against that phase at this one's end.
    late: Vec<Entry>,
    /// The last entry of each of a few sites (by a hash of the site).
    recent: [Option<u32>; 16],
    lost: u64,
    /// The strand its accesses belong to now (`Entry::thread`).
    strand: u32,
    /// The phase after the last one drained: a run of a drained phase
    /// flushed later (the thread ran on while the phase ended) is late.
    floor: u64,
}

impl ThreadLog {
    /// Adds an access made when the team's publications were `counted`,
    /// joined to its site's last entry where it touches it.
    pub fn add(&mut self, target: u32, a: Access, counted: u64) {
        let slot = ((a.site ^ (a.site >> 17) ^ u64::from(a.kind.code())) % 16) as usize;
        if let Some(e) = self.recent[slot].and_then(|i| self.entries.get_mut(i as usize)) {
            let b = &mut e.access;
            if e.target == target
                && e.thread == self.strand
                && b.site == a.site
                && b.kind == a.kind
                && b.seq == a.seq
                && b.op == a.op
                && a.offset <= b.offset + b.len
                && b.offset <= a.offset + a.len
            {
                let end = (b.offset + b.len).max(a.offset + a.len);
                b.offset = b.offset.min(a.offset);
                b.len = end - b.offset;
                e.counted = e.counted.max(counted);
                return;
            }
        }
        if self.entries.len() >= MOST {
            self.lost += 1;
            return;
        }
        self.recent[slot] = Some(self.entries.len() as u32);
        self.entries.push(Entry {
            target,
            access: a,
            counted,
            thread: self.strand,
        });
    }

    fn drain(&mut self, into: &mut Vec<Entry>, late: &mut Vec<Entry>) -> u64 {
        into.append(&mut self.entries);
        late.append(&mut self.late);
        self.recent = [None; 16];
        std::mem::take(&mut self.lost)
    }
}

/// No run in a slot.
const EMPTY: u64 = u64::MAX;
const SLOTS: usize = 16;

/// The current run of loads or stores from one place.
struct Slot {
    site: AtomicU64,
    /// The access kind (0 load, 1 store, 2 atomic), and an atomic's size
    /// from bit 8.
    kind: AtomicU64,
    /// `race::STAMP` when the run began: its phase and number.
    stamp: AtomicU64,
    /// The team's publications counted when the run began (`reach`).
    counted: AtomicU64,
    lo: AtomicU64,
    hi: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            site: AtomicU64::new(0),
            kind: AtomicU64::new(0),
            stamp: AtomicU64::new(EMPTY),
            counted: AtomicU64::new(0),
            lo: AtomicU64::new(0),
            hi: AtomicU64::new(0),
        }
    }

    /// Moves the slot's run into `log`: its entries if it belongs to
    /// `phase`, its late ones if to the phase before.
    fn flush(&self, phase: u64, log: &mut ThreadLog) {
        let phase = phase.max(log.floor);
        // An empty slot (most, at most phases' ends) costs a load, not a swap.
        if self.stamp.load(Relaxed) == EMPTY {
            return;
        }
        let stamp = self.stamp.swap(EMPTY, Relaxed);
        if stamp == EMPTY || (stamp >> 32 != phase && (stamp >> 32) + 1 != phase) {
            return;
        }
        let (lo, hi) = (self.lo.load(Relaxed), self.hi.load(Relaxed));
        let code = self.kind.load(Relaxed);
        let (kind, op) = match code & 0xff {
            0 => (Kind::Read, ops::LOAD),
            1 => (Kind::Write, ops::STORE),
            // A C program's own atomics know only their size: tags apart
            // from the API's (`race::type_tag`, under 48).
            2 => (Kind::Atomic(48 + (code >> 8) as u8), ops::ATOMIC),
            _ => (Kind::AtomicRead(48 + (code >> 8) as u8), ops::ATOMIC),
        };
        let access = Access {
            offset: lo,
            len: hi - lo,
            kind,
            op,
            done_at_return: true,
            seq: stamp as u32,
            site: self.site.load(Relaxed),
            pe: 0,
        };
        let counted = self.counted.load(Relaxed);
        match stamp >> 32 == phase {
            true => log.add(LOCAL, access, counted),
            false if log.late.len() < MOST => log.late.push(Entry {
                target: LOCAL,
                access,
                counted,
                thread: log.strand,
            }),
            false => log.lost += 1,
        }
    }
}

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

/// The team's publications so far (`threads`), and whether accesses are
/// stamped with their count: while a team runs with views on.
pub(crate) static PUBLICATIONS: AtomicU64 = AtomicU64::new(0);
pub(crate) static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The count of publications an access made now is stamped with; 0
/// outside a team, or while views are off (`reach` then orders nothing
/// less than before).
#[inline]
pub(crate) fn counted() -> u64 {
    match COUNTING.load(Relaxed) {
        true => PUBLICATIONS.load(Relaxed),
        false => 0,
    }
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

/// The calling thread: its strand and the publications it has learned of.
pub(crate) fn me() -> Option<(u32, u64)> {
    mine().map(|t| (crate::sync::lock(&t.log).strand, t.known.load(Relaxed)))
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
        if let Some(extended) = slot.extend(thread, stamp, site, code, offset, len) {
            return extended;
        }
    }
    for (i, slot) in thread.slots.iter().enumerate() {
        if i == a || i == b {
            continue;
        }
        if let Some(extended) = slot.extend(thread, stamp, site, code, offset, len) {
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
    begin(thread, slot, (stamp, site, code), offset, len);
    false
}

/// A place's two home slots, from its return address's bits.
#[inline(always)]
fn homes(site: u64) -> (usize, usize) {
    let h = site ^ (site >> 17);
    let a = (h % SLOTS as u64) as usize;
    let b = ((h >> 4) % SLOTS as u64) as usize;
    (a, if b == a { (a + 1) % SLOTS } else { b })
}

impl Slot {
    /// Extends this slot's run with an access of place `(stamp, site,
    /// code)`, if the run is that place's: `Some(true)` when it touched
    /// the run, `Some(false)` when it began a new one here (the same place
    /// elsewhere), `None` when the slot holds another place.
    #[inline(always)]
    fn extend(&self, thread: &Thread, stamp: u64, site: u64, code: u64, offset: u64, len: u64) -> Option<bool> {
        if self.site.load(Relaxed) != site || self.stamp.load(Relaxed) != stamp || self.kind.load(Relaxed) != code {
            return None;
        }
        let (lo, hi) = (self.lo.load(Relaxed), self.hi.load(Relaxed));
        if lo <= offset && offset <= hi {
            if offset + len > hi {
                self.hi.store(offset + len, Relaxed);
            }
            return Some(true);
        }
        if offset < lo && offset + len >= lo {
            self.lo.store(offset, Relaxed);
            if offset + len > hi {
                self.hi.store(offset + len, Relaxed);
            }
            return Some(true);
        }
        begin(thread, self, (stamp, site, code), offset, len);
        Some(false)
    }
}

/// Starts a new run in `slot`, moving its old one into the log.
#[inline(never)]
fn begin(thread: &Thread, slot: &Slot, (stamp, site, code): (u64, u64, u64), offset: u64, len: u64) {
    let mut log = crate::sync::lock(&thread.log);
    // The PE's phase: a team thread's view may be a phase behind it.
    slot.flush((stamp >> 32).max(super::STAMP.load(Relaxed) >> 32), &mut log);
    slot.site.store(site, Relaxed);
    slot.kind.store(code, Relaxed);
    slot.lo.store(offset, Relaxed);
    slot.hi.store(offset + len, Relaxed);
    slot.counted.store(counted(), Relaxed);
    slot.stamp.store(stamp, Relaxed);
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

    fn load(offset: u64, site: u64) -> Access {
        Access {
            offset,
            len: 8,
            kind: Kind::Read,
            op: 0,
            done_at_return: true,
            seq: 0,
            site,
            pe: 0,
        }
    }

    #[test]
    fn a_loop_over_an_array_is_one_entry_per_site() {
        let mut log = ThreadLog::default();
        for i in 0..100 {
            log.add(LOCAL, load(1024 + 8 * i, 7), 0);
            log.add(LOCAL, load(8192 + 8 * i, 9), 0);
        }
        assert_eq!(log.entries.len(), 2);
        assert_eq!((log.entries[0].access.offset, log.entries[0].access.len), (1024, 800));
    }

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

    #[test]
    fn a_run_of_a_drained_phase_flushed_after_the_drain_is_late() {
        // The thread ran on while its phase ended, before the PE's count
        // moved to the next phase: its run is not this phase's entry.
        let mut log = ThreadLog {
            floor: 8,
            ..ThreadLog::default()
        };
        let slot = Slot::new();
        slot.stamp.store(7 << 32 | 1, Relaxed);
        slot.hi.store(8, Relaxed);
        slot.flush(7, &mut log);
        assert!(log.entries.is_empty());
        assert_eq!(log.late.len(), 1);
    }

    #[test]
    fn a_gap_or_another_target_starts_an_entry() {
        let mut log = ThreadLog::default();
        log.add(LOCAL, load(0, 7), 0);
        log.add(LOCAL, load(64, 7), 0);
        log.add(3, load(72, 7), 0);
        assert_eq!(log.entries.len(), 3);
        let mut out = Vec::new();
        assert_eq!(log.drain(&mut out, &mut Vec::new()), 0);
        assert_eq!(out.len(), 3);
        assert!(log.entries.is_empty());
    }
}
