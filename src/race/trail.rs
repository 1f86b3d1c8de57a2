//! A thread's *trail*: its last accesses, private memory included, while
//! an OpenMP team runs with views on (`entries::COUNTING`). A buffer is
//! watched (`nbi`) only from the issue of the operation that uses it, so
//! another thread's load of a `get_nbi`'s destination made just *before*
//! the issue, with nothing ordering the two, would go unseen: at the
//! issue, the other threads' trails are searched for such an access.
//!
//! Each entry is stamped with its strand and the count of publications
//! when it was made (`threads`): the issuing strand is ordered after it
//! only if it has learned of a later publication (as `reach` judges a
//! release). An entry is a run: accesses from one place, of one kind,
//! with no publication between, that touch each other. The trail keeps
//! [`LEN`] runs, the oldest overwritten: a race on an older one is missed,
//! never invented. Its owner writes it without a lock; a reader takes an
//! entry only if its sequence word did not move while it read (a
//! seqlock). An entry of an earlier team is ordered by that team's join.

use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// How many runs a trail keeps.
pub(super) const LEN: usize = 64;

/// Teams ended (`team_ended`): an entry of an earlier one is ordered.
static TEAMS: AtomicU64 = AtomicU64::new(0);

/// The team now running, by the count of those ended before it.
pub(super) fn team() -> u64 {
    TEAMS.load(Relaxed)
}

/// One run of accesses.
struct Run {
    /// Even while the run is whole; odd while its owner writes it.
    seq: AtomicU64,
    lo: AtomicUsize,
    hi: AtomicUsize,
    pc: AtomicUsize,
    /// The strand, its kind (`race::access`'s) and the team, packed:
    /// `team << 40 | kind << 32 | strand`.
    whose: AtomicU64,
    /// The count of publications when it was made (never 0).
    counted: AtomicU64,
}

/// What a reader takes of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seen {
    pub lo: usize,
    pub hi: usize,
    pub pc: usize,
    pub kind: u8,
    pub strand: u32,
    pub counted: u64,
}

/// A thread's trail.
pub(super) struct Trail {
    runs: [Run; LEN],
    /// Runs begun; the newest is `next - 1`. Written by the owner only.
    next: AtomicUsize,
}

/// How far back a new access looks for a run to extend (two or three
/// arrays walked in one loop).
const LOOK_BACK: usize = 4;

impl Trail {
    pub(super) const fn new() -> Trail {
        Trail {
            runs: [const {
                Run {
                    seq: AtomicU64::new(0),
                    lo: AtomicUsize::new(0),
                    hi: AtomicUsize::new(0),
                    pc: AtomicUsize::new(0),
                    whose: AtomicU64::new(0),
                    counted: AtomicU64::new(0),
                }
            }; LEN],
            next: AtomicUsize::new(0),
        }
    }

    /// Writes down the owner's access of `size` bytes at `addr` (`kind`, at
    /// `pc`), made on `strand` after `counted` publications, in `team`.
    pub(super) fn record(
        &self,
        (addr, size, kind, pc): (usize, usize, u8, usize),
        strand: u32,
        counted: u64,
        team: u64,
    ) {
        let whose = team << 40 | u64::from(kind) << 32 | u64::from(strand);
        let (lo, hi) = (addr, addr + size);
        let next = self.next.load(Relaxed);
        for back in 1..=LOOK_BACK.min(next) {
            let run = &self.runs[(next - back) % LEN];
            if run.pc.load(Relaxed) == pc
                && run.whose.load(Relaxed) == whose
                && run.counted.load(Relaxed) == counted
                && lo <= run.hi.load(Relaxed)
                && run.lo.load(Relaxed) <= hi
            {
                let (old_lo, old_hi) = (run.lo.load(Relaxed), run.hi.load(Relaxed));
                if lo >= old_lo && hi <= old_hi {
                    return;
                }
                if lo >= old_lo {
                    // Growing at its end only (a loop walking up): a reader
                    // sees the run as it was or as it is, both whole.
                    run.hi.store(hi, Relaxed);
                    return;
                }
                self.write(run, |run| {
                    run.lo.store(lo.min(old_lo), Relaxed);
                    run.hi.store(hi.max(old_hi), Relaxed);
                });
                return;
            }
        }
        self.write(&self.runs[next % LEN], |run| {
            run.lo.store(lo, Relaxed);
            run.hi.store(hi, Relaxed);
            run.pc.store(pc, Relaxed);
            run.whose.store(whose, Relaxed);
            run.counted.store(counted, Relaxed);
        });
        self.next.store(next + 1, Relaxed);
    }

    /// Changes `run` under its sequence word.
    fn write(&self, run: &Run, change: impl FnOnce(&Run)) {
        let seq = run.seq.load(Relaxed);
        run.seq.store(seq + 1, Relaxed);
        fence(Release);
        change(run);
        run.seq.store(seq + 2, Release);
    }

    /// The runs of `team` that overlap `[lo, hi)`, as whole (a run being
    /// written is passed over).
    pub(super) fn overlapping(&self, lo: usize, hi: usize, team: u64) -> impl Iterator<Item = Seen> + '_ {
        self.runs.iter().filter_map(move |run| {
            let seq = run.seq.load(Acquire);
            if seq == 0 || seq % 2 == 1 {
                return None;
            }
            let seen = Seen {
                lo: run.lo.load(Relaxed),
                hi: run.hi.load(Relaxed),
                pc: run.pc.load(Relaxed),
                kind: (run.whose.load(Relaxed) >> 32) as u8,
                strand: run.whose.load(Relaxed) as u32,
                counted: run.counted.load(Relaxed),
            };
            let whose_team = run.whose.load(Relaxed) >> 40;
            fence(Acquire);
            (run.seq.load(Relaxed) == seq && whose_team == team && seen.lo < hi && lo < seen.hi).then_some(seen)
        })
    }
}

/// The last team ended: every trail's runs are ordered by its join.
pub(super) fn team_ended() {
    TEAMS.fetch_add(1, Relaxed);
}

/// Whether `seen`, another strand's run, races with an operation the
/// strand `strand`, which has learned of publications up to `known`, now
/// issues and that `writes` its buffer (a get's destination) or reads it
/// (a put's source, which only a store races with).
pub(super) fn races(seen: &Seen, (strand, known): (u32, u64), writes: bool) -> bool {
    seen.strand != strand && known <= seen.counted && (writes || matches!(seen.kind, 1 | 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_is_one_run_and_a_publication_begins_another() {
        let trail = Trail::new();
        for i in 0..16 {
            trail.record((0x1000 + 4 * i, 4, 0, 7), 3, 5, 0);
        }
        let runs: Vec<Seen> = trail.overlapping(0, usize::MAX, 0).collect();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].lo, runs[0].hi, runs[0].strand, runs[0].counted),
            (0x1000, 0x1040, 3, 5)
        );
        trail.record((0x1040, 4, 0, 7), 3, 6, 0);
        assert_eq!(trail.overlapping(0x1040, 0x1044, 0).count(), 1);
        assert_eq!(trail.overlapping(0x1000, 0x1004, 0).next().map(|s| s.counted), Some(5));
    }

    #[test]
    fn the_oldest_runs_are_overwritten_and_another_team_sees_none() {
        let trail = Trail::new();
        for i in 0..(LEN + 8) {
            trail.record((0x10_000 * (i + 1), 8, 1, i), 1, 9, 4);
        }
        assert_eq!(trail.overlapping(0x10_000, 0x10_008, 4).count(), 0);
        assert_eq!(
            trail
                .overlapping(0x10_000 * (LEN + 8), 0x10_000 * (LEN + 8) + 8, 4)
                .count(),
            1
        );
        // The next team's search sees none of them.
        assert_eq!(trail.overlapping(0, usize::MAX, 5).count(), 0);
    }

    #[test]
    fn what_races_with_an_issue() {
        let load = Seen {
            lo: 0,
            hi: 4,
            pc: 1,
            kind: 0,
            strand: 2,
            counted: 10,
        };
        // Another strand that learned nothing after the load: a get races.
        assert!(races(&load, (1, 10), true));
        // A put only reads its source: a load does not race with it.
        assert!(!races(&load, (1, 10), false));
        // A later publication learned: ordered. The same strand: ordered.
        assert!(!races(&load, (1, 11), true));
        assert!(!races(&load, (2, 0), true));
        let store = Seen { kind: 1, ..load };
        assert!(races(&store, (1, 3), false));
    }
}
