//! What the race checker writes down during a phase: each thread's
//! accesses to symmetric memory, this PE's own (`target` = `LOCAL`) and
//! its puts, gets and atomics to others, kept in a log of the thread's own
//! so that a load or store takes no shared lock. A run of accesses from
//! one place (a loop over an array) becomes one entry: an access that
//! touches the last entry of its site, kind and sequence number extends
//! it. The phase's end drains every thread's log.

use super::check::{Access, Kind};
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
}

/// One thread's log.
#[derive(Default)]
pub(crate) struct ThreadLog {
    entries: Vec<Entry>,
    /// The last entry of each of a few sites (by a hash of the site).
    recent: [Option<u32>; 16],
    lost: u64,
}

impl ThreadLog {
    /// Adds an access, joined to its site's last entry where it touches it.
    pub fn add(&mut self, target: u32, a: Access) {
        let slot = ((a.site ^ (a.site >> 17) ^ u64::from(a.kind.code())) % 16) as usize;
        if let Some(e) = self.recent[slot].and_then(|i| self.entries.get_mut(i as usize)) {
            let b = &mut e.access;
            if e.target == target
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
                return;
            }
        }
        if self.entries.len() >= MOST {
            self.lost += 1;
            return;
        }
        self.recent[slot] = Some(self.entries.len() as u32);
        self.entries.push(Entry { target, access: a });
    }

    /// Whether an access of `kind` from `site` to `[offset, offset+len)`
    /// is inside its site's last entry already (the hot path's filter).
    #[inline]
    pub fn covered(&self, site: u64, kind: Kind, seq: u32, offset: u64, len: u64) -> bool {
        let slot = ((site ^ (site >> 17) ^ u64::from(kind.code())) % 16) as usize;
        match self.recent[slot].and_then(|i| self.entries.get(i as usize)) {
            Some(e) => {
                let b = &e.access;
                e.target == LOCAL
                    && b.site == site
                    && b.kind == kind
                    && b.seq == seq
                    && b.offset <= offset
                    && offset + len <= b.offset + b.len
            }
            None => false,
        }
    }

    fn drain(&mut self, into: &mut Vec<Entry>) -> u64 {
        into.append(&mut self.entries);
        self.recent = [None; 16];
        std::mem::take(&mut self.lost)
    }
}

/// Every thread's log, for the phase's end.
static LOGS: Mutex<Vec<Arc<Mutex<ThreadLog>>>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: Arc<Mutex<ThreadLog>> = {
        let log = Arc::new(Mutex::new(ThreadLog::default()));
        crate::sync::lock(&LOGS).push(log.clone());
        log
    };
}

/// Runs `f` on this thread's log.
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&mut ThreadLog) -> R) -> Option<R> {
    MINE.try_with(|log| f(&mut crate::sync::lock(log))).ok()
}

/// Takes every thread's entries of the phase; returns them and how many
/// accesses were lost to a full log.
pub(crate) fn drain() -> (Vec<Entry>, u64) {
    let logs: Vec<_> = crate::sync::lock(&LOGS).clone();
    let mut all = Vec::new();
    let mut lost = 0;
    for log in logs {
        lost += crate::sync::lock(&log).drain(&mut all);
    }
    (all, lost)
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
            log.add(LOCAL, load(1024 + 8 * i, 7));
            log.add(LOCAL, load(8192 + 8 * i, 9));
        }
        assert_eq!(log.entries.len(), 2);
        assert_eq!((log.entries[0].access.offset, log.entries[0].access.len), (1024, 800));
        assert!(log.covered(7, Kind::Read, 0, 1024 + 80, 8));
        assert!(!log.covered(7, Kind::Read, 1, 1024 + 80, 8), "another sequence number");
        assert!(!log.covered(7, Kind::Write, 0, 1024 + 80, 8));
    }

    #[test]
    fn a_gap_or_another_target_starts_an_entry() {
        let mut log = ThreadLog::default();
        log.add(LOCAL, load(0, 7));
        log.add(LOCAL, load(64, 7));
        log.add(3, load(72, 7));
        assert_eq!(log.entries.len(), 3);
        let mut out = Vec::new();
        assert_eq!(log.drain(&mut out), 0);
        assert_eq!(out.len(), 3);
        assert!(log.entries.is_empty());
    }
}
