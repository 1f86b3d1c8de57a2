//! What a team thread's access reaches: which of its PE's releases order
//! it, and whether the world sync that ends the phase does.
//!
//! Outside an OpenMP team a release orders every earlier access of its
//! PE. Inside one, thread A's put is made visible by thread B's release
//! only if the put happens before it between the threads
//! (RMARaceBench's hybrid/021 and 022: one thread puts and fences or
//! quiets, another signals or syncs, nothing orders the two threads).
//! While a team runs this PE's releases and issued writes are *recorded*
//! with the thread that made them and the publications it had learned of
//! (`threads`); at the phase's end each team entry keeps its number only
//! if some recorded release reaches it:
//! * made by its own thread after it, or by a thread that learned of a
//!   publication made after it (conservative: any later one);
//! * and able to tell another PE: an issued write, a lock release or a
//!   collective is; a quiet or fence is only once a write follows it
//!   from a thread that saw it (a write entry, or such a release, whose
//!   view includes it).
//!
//! Otherwise its number becomes the phase's last, so no release of the
//! phase orders it. And an entry the thread ending the phase has learned
//! nothing after is *carried*: judged again in the next phase, as if made
//! at its start (the mirror of `log`'s late entries).
//!
//! Every doubt falls on the side of order: a race can be missed, a
//! correct program is never reported.

use super::log::{self, Entry};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

/// What a recorded synchronization can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum What {
    /// A quiet or fence: completes or orders, but no other PE sees it.
    Release,
    /// A release another PE can acquire: a lock's release, a collective.
    Told,
    /// A write issued to another PE: orders accesses complete at their
    /// return, and tells.
    Issued,
}

#[derive(Clone, Copy, Debug)]
struct Event {
    n: u32,
    what: What,
    thread: u32,
    /// The publications the thread had learned of.
    known: u64,
    /// The thread's view before it, in this phase's numbers.
    view: u32,
}

/// Events a phase records; past it, the phase orders as if no team ran.
const MOST: usize = 1 << 16;

static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());
/// A team ran in this phase: its releases are recorded.
static RECORDING: AtomicBool = AtomicBool::new(false);
/// The phase's events are not all known (too many, or views went off).
static BLIND: AtomicBool = AtomicBool::new(false);

/// A team was forked or a task created: record from now to the end of
/// the phase in which no team runs.
pub(super) fn teamed() {
    RECORDING.store(true, Relaxed);
}

pub(super) fn recording() -> bool {
    RECORDING.load(Relaxed)
}

/// Views went off (`threads::unmodeled`): this phase orders as before.
pub(super) fn unmodeled() {
    BLIND.store(true, Relaxed);
}

/// Records synchronization `n` of the calling thread, whose view before
/// it was `view`.
pub(super) fn record(n: u32, what: What, view: u32) {
    if !recording() {
        return;
    }
    let Some((thread, known)) = log::me() else { return };
    let mut events = crate::sync::lock(&EVENTS);
    if events.len() >= MOST {
        BLIND.store(true, Relaxed);
        return;
    }
    events.push(Event {
        n,
        what,
        thread,
        known,
        view,
    });
}

/// At the phase's end, with its entries drained: lowers the reach of the
/// team entries no release reaches (their number becomes `last`, the
/// phase's last release or issued write), and returns copies of those the
/// ending thread (`ender`: its id and what it learned) has learned
/// nothing after, to carry into the next phase.
pub(super) fn settle(
    entries: &mut [Entry],
    last: u32,
    ender: impl FnOnce() -> Option<(u32, u64)>,
    team_runs: bool,
) -> Vec<Entry> {
    // No team in the phase (a world barrier's common case): no lock taken.
    if !recording() {
        return Vec::new();
    }
    let events = std::mem::take(&mut *crate::sync::lock(&EVENTS));
    let blind = BLIND.swap(false, Relaxed);
    if !team_runs {
        RECORDING.store(false, Relaxed);
    }
    match blind {
        true => Vec::new(),
        false => settle_with(&events, entries, last, ender()),
    }
}

/// [`settle`] with the phase's events.
fn settle_with(events: &[Event], entries: &mut [Entry], last: u32, ender: Option<(u32, u64)>) -> Vec<Entry> {
    if !entries.iter().any(|e| e.counted != 0) {
        return Vec::new();
    }
    let reach = Reach::new(events, entries);
    if super::debugging() {
        eprintln!("settle: ender {ender:?} last {last} events {events:?}");
        for e in entries.iter() {
            eprintln!(
                "  entry thread {} counted {} seq {} target {}",
                e.thread, e.counted, e.access.seq, e.target
            );
        }
    }
    let mut carried = Vec::new();
    for e in entries.iter_mut().filter(|e| e.counted != 0) {
        if ender.is_some_and(|(id, known)| id != e.thread && known <= e.counted) {
            let mut c = *e;
            c.access.seq = 0;
            carried.push(c);
        }
        if !reach.released(e) {
            e.access.seq = e.access.seq.max(last);
        }
    }
    carried
}

/// The recorded releases that can tell another PE, sorted for lookup.
struct Reach {
    /// Per thread, the last such release, and the last counting issued writes.
    own: std::collections::HashMap<u32, (u32, u32)>,
    /// By what their thread had learned, ascending, with the largest
    /// number from there on (releases only; with issued writes).
    by_known: Vec<(u64, u32, u32)>,
}

impl Reach {
    fn new(events: &[Event], entries: &[Entry]) -> Reach {
        // The latest view from which a write or a telling release was
        // made: a quiet or fence at or below it was followed by one.
        let written = entries
            .iter()
            .filter(|e| e.access.kind.writes())
            .map(|e| e.access.seq)
            .chain(events.iter().filter(|v| v.what != What::Release).map(|v| v.view))
            .max()
            .unwrap_or(0);
        let tells = |v: &Event| v.what != What::Release || written >= v.n;
        let mut own: std::collections::HashMap<u32, (u32, u32)> = std::collections::HashMap::new();
        let mut by_known: Vec<(u64, u32, u32)> = Vec::new();
        for v in events.iter().filter(|v| tells(v)) {
            let release = if v.what == What::Issued { 0 } else { v.n };
            let mine = own.entry(v.thread).or_default();
            *mine = (mine.0.max(release), mine.1.max(v.n));
            by_known.push((v.known, release, v.n));
        }
        by_known.sort_unstable_by_key(|&(known, ..)| known);
        for i in (0..by_known.len().saturating_sub(1)).rev() {
            let next = by_known[i + 1];
            by_known[i].1 = by_known[i].1.max(next.1);
            by_known[i].2 = by_known[i].2.max(next.2);
        }
        Reach { own, by_known }
    }

    /// Whether some recorded release after `e` orders it.
    fn released(&self, e: &Entry) -> bool {
        let pick = |(release, any): (u32, u32)| match e.access.done_at_return {
            true => any,
            false => release,
        };
        let own = self.own.get(&e.thread).map_or(0, |&m| pick(m));
        let i = self.by_known.partition_point(|&(known, ..)| known <= e.counted);
        let other = self.by_known.get(i).map_or(0, |&(_, r, a)| pick((r, a)));
        own.max(other) > e.access.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::race::check::{Access, Kind};

    fn entry(strand: u32, counted: u64, seq: u32, kind: Kind, done: bool) -> Entry {
        Entry {
            target: 1,
            access: Access {
                offset: 64,
                len: 8,
                kind,
                op: 0,
                done_at_return: done,
                seq,
                site: 7,
                pe: 0,
            },
            counted,
            thread: strand,
        }
    }

    fn event(n: u32, what: What, strand: u32, known: u64, view: u32) -> Event {
        Event {
            n,
            what,
            thread: strand,
            known,
            view,
        }
    }

    #[test]
    fn a_fence_orders_a_put_only_before_what_its_thread_or_a_follower_writes() {
        // Strand 1 puts (publications counted: 5) and fences (2); strand
        // 2, which learned nothing since, puts the flag (3).
        let put = entry(1, 5, 1, Kind::Write, false);
        let flag = |seq| entry(2, 5, seq, Kind::Write, false);
        let fence = event(2, What::Release, 1, 0, 1);
        let mut entries = [put, flag(1)];
        settle_with(&[fence, event(3, What::Issued, 2, 0, 1)], &mut entries, 3, None);
        assert_eq!(entries[0].access.seq, 3, "no release reaches the put");
        // The flag's strand learned of a publication after the put, and
        // its view includes the fence.
        let mut entries = [put, flag(2)];
        settle_with(&[fence, event(3, What::Issued, 2, 6, 2)], &mut entries, 3, None);
        assert_eq!(entries[0].access.seq, 1, "the fence, then the flag, order it");
        // The put's own strand writes the flag after its fence.
        let mut entries = [put, entry(1, 5, 2, Kind::Write, false)];
        settle_with(&[fence, event(3, What::Issued, 1, 0, 2)], &mut entries, 3, None);
        assert_eq!(entries[0].access.seq, 1);
    }

    #[test]
    fn a_load_is_ordered_by_a_later_write_of_its_own_strand_only() {
        let load = entry(1, 5, 1, Kind::Read, true);
        let mut entries = [load];
        settle_with(&[event(2, What::Issued, 2, 5, 1)], &mut entries, 2, None);
        assert_eq!(entries[0].access.seq, 2, "another strand's write, not after it");
        let mut entries = [load];
        settle_with(&[event(2, What::Issued, 1, 0, 1)], &mut entries, 2, None);
        assert_eq!(entries[0].access.seq, 1);
    }

    #[test]
    fn the_ender_carries_what_it_learned_nothing_after() {
        let put = entry(1, 5, 3, Kind::Write, false);
        let told = [event(4, What::Told, 1, 0, 3)];
        let carried = settle_with(&told, &mut [put], 4, Some((2, 5)));
        assert_eq!(carried.len(), 1);
        assert_eq!((carried[0].access.seq, carried[0].thread), (0, 1));
        assert!(
            settle_with(&told, &mut [put], 4, Some((2, 6))).is_empty(),
            "it learned of one after"
        );
        assert!(
            settle_with(&told, &mut [put], 4, Some((1, 0))).is_empty(),
            "its own strand"
        );
    }

    #[test]
    fn entries_outside_a_team_are_left_alone() {
        let mut entries = [entry(1, 0, 1, Kind::Write, false)];
        assert!(settle_with(&[], &mut entries, 9, Some((2, 0))).is_empty());
        assert_eq!(entries[0].access.seq, 1);
    }
}
