//! A C program's loads and stores first meet its thread's *slots*: the
//! current run of each of a few places, extended with plain atomic loads
//! and stores, no lock; a run enters the thread's log only when its slot
//! is wanted for another place or another synchronization number, or at
//! the phase's end. An extension racing with the phase's end may be lost:
//! a lost access can hide a race, never invent one.

use super::check::{Access, Kind};
use super::entries::{counted, Entry, ThreadLog, LOCAL, MOST};
use super::ops;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// No run in a slot.
pub(super) const EMPTY: u64 = u64::MAX;
pub(super) const SLOTS: usize = 16;

/// The current run of loads or stores from one place.
pub(super) struct Slot {
    site: AtomicU64,
    /// The access kind (0 load, 1 store, 2 atomic), and an atomic's size
    /// from bit 8.
    kind: AtomicU64,
    /// `race::STAMP` when the run began: its phase and number.
    pub(super) stamp: AtomicU64,
    /// The team's publications counted when the run began (`reach`).
    counted: AtomicU64,
    lo: AtomicU64,
    hi: AtomicU64,
}

/// A place's two home slots, from its return address's bits.
#[inline(always)]
pub(super) fn homes(site: u64) -> (usize, usize) {
    let h = site ^ (site >> 17);
    let a = (h % SLOTS as u64) as usize;
    let b = ((h >> 4) % SLOTS as u64) as usize;
    (a, if b == a { (a + 1) % SLOTS } else { b })
}

impl Slot {
    pub(super) const fn new() -> Slot {
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
    pub(super) fn flush(&self, phase: u64, log: &mut ThreadLog) {
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

    /// Extends this slot's run with an access of place `(stamp, site,
    /// code)`, if the run is that place's: `Some(true)` when it touched
    /// the run, `Some(false)` when it began a new one here (the same place
    /// elsewhere), `None` when the slot holds another place.
    #[inline(always)]
    pub(super) fn extend(
        &self,
        log: &Mutex<ThreadLog>,
        stamp: u64,
        site: u64,
        code: u64,
        offset: u64,
        len: u64,
    ) -> Option<bool> {
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
        begin(log, self, (stamp, site, code), offset, len);
        Some(false)
    }
}

/// Starts a new run in `slot`, moving its old one into the log.
#[inline(never)]
pub(super) fn begin(log: &Mutex<ThreadLog>, slot: &Slot, (stamp, site, code): (u64, u64, u64), offset: u64, len: u64) {
    let mut log = crate::sync::lock(log);
    // The PE's phase: a team thread's view may be a phase behind it.
    slot.flush((stamp >> 32).max(super::STAMP.load(Relaxed) >> 32), &mut log);
    slot.site.store(site, Relaxed);
    slot.kind.store(code, Relaxed);
    slot.lo.store(offset, Relaxed);
    slot.hi.store(offset + len, Relaxed);
    slot.counted.store(counted(), Relaxed);
    slot.stamp.store(stamp, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
