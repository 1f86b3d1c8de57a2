//! What a thread writes down in a phase: its log of entries, each one
//! access (or a run of them from one place) and whose memory it touched,
//! kept per thread so that a load or store takes no shared lock; and what
//! a team thread's entries are stamped with (`counted`).

use super::check::Access;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};

/// The `target` of an access to this PE's own memory.
pub(crate) const LOCAL: u32 = u32::MAX;

/// Entries one thread keeps in a phase; past it, accesses are counted as
/// lost and the phase's reports say so.
pub(super) const MOST: usize = 1 << 22;

/// One access, and whose memory it touched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub target: u32,
    pub access: Access,
    /// In an OpenMP team, the team's publications counted when it was
    /// made (`counted`); 0 outside one (`reach`).
    pub counted: u64,
    /// The strand that made it: its thread, or one section of a
    /// `sections` construct the thread ran (`new_strand`).
    pub thread: u32,
}

/// One thread's log.
#[derive(Default)]
pub(crate) struct ThreadLog {
    pub(super) entries: Vec<Entry>,
    /// Loads and stores of the phase before, by a team thread that no
    /// synchronization has brought into this one (`threads`): judged
    /// against that phase at this one's end.
    pub(super) late: Vec<Entry>,
    /// The last entry of each of a few sites (by a hash of the site).
    pub(super) recent: [Option<u32>; 16],
    pub(super) lost: u64,
    /// The strand its accesses belong to now (`Entry::thread`).
    pub(super) strand: u32,
    /// The phase after the last one drained: a run of a drained phase
    /// flushed later (the thread ran on while the phase ended) is late.
    pub(super) floor: u64,
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

    pub(super) fn drain(&mut self, into: &mut Vec<Entry>, late: &mut Vec<Entry>) -> u64 {
        into.append(&mut self.entries);
        late.append(&mut self.late);
        self.recent = [None; 16];
        std::mem::take(&mut self.lost)
    }
}

/// The team's publications so far (`threads`), and whether accesses are
/// stamped with their count: while a team runs with views on.
pub(crate) static PUBLICATIONS: AtomicU64 = AtomicU64::new(0);
pub(crate) static COUNTING: AtomicBool = AtomicBool::new(false);

/// What a C access is checked for besides the phase's log, one bit each:
/// a pending buffer's (`nbi`), a team's trail (`trail`). One load tells
/// an access that neither is on.
pub(crate) static WATCH: AtomicU8 = AtomicU8::new(0);
pub(crate) const WATCH_PENDING: u8 = 1;
pub(crate) const WATCH_TRAIL: u8 = 2;

/// Turns `bit` of [`WATCH`] on or off.
pub(crate) fn watch(bit: u8, on: bool) {
    match on {
        true => WATCH.fetch_or(bit, Relaxed),
        false => WATCH.fetch_and(!bit, Relaxed),
    };
}

/// Turns the count on or off (and the trails with it).
pub(crate) fn set_counting(on: bool) {
    COUNTING.store(on, Relaxed);
    watch(WATCH_TRAIL, on);
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::race::check::Kind;

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
