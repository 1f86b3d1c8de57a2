//! The race checker's verdict on one barrier phase, at the PE whose memory
//! was accessed: which two accesses of different PEs touched the same
//! bytes, at least one of them writing, with nothing ordering them.
//!
//! Pure: it sees the phase's accesses (this PE's own loads and stores,
//! and every other PE's puts, gets and atomics that landed here) and each
//! PE's synchronizations in the phase, and nothing of the runtime.
//!
//! Inside a phase, accesses are ordered only point to point: the earlier
//! PE must *release* after its access (a quiet or fence for a put, which
//! completes only then; any later write it issues for an access complete
//! when its call returned) and the later PE must *acquire* before its own
//! (a wait, test, lock, fetching atomic or collective). A PE's releases
//! and acquires are numbered in the phase (`seq`), and an access carries
//! the number of the last one before it; only the last release and first
//! acquire of each PE are kept, which can only ever order more pairs than
//! the program did: a missing order is never invented, so a correct
//! program gets no report. One more order: a wait or test that saw a
//! value *observed* the write that put it there, so that write is ordered
//! before everything this PE did after the wait.

pub(crate) use super::order::{Order, Syncs};

/// What an access did to its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Read,
    Write,
    /// An atomic that writes, of one type (its tag): atomics of one type
    /// never race with each other.
    Atomic(u8),
    /// An atomic that only reads (a fetch, an atomic load), of one type.
    AtomicRead(u8),
    /// A wait or test that returned, having seen these bytes' value.
    Observe,
}

impl Kind {
    pub fn code(self) -> u8 {
        match self {
            Kind::Read => 0,
            Kind::Write => 1,
            Kind::Observe => 2,
            Kind::Atomic(tag) => 16 + (tag & 0x3f),
            Kind::AtomicRead(tag) => 80 + (tag & 0x3f),
        }
    }

    pub fn from_code(code: u8) -> Kind {
        match code {
            0 => Kind::Read,
            1 => Kind::Write,
            2 => Kind::Observe,
            c @ 80.. => Kind::AtomicRead(c - 80),
            c => Kind::Atomic(c.wrapping_sub(16)),
        }
    }

    pub fn writes(self) -> bool {
        matches!(self, Kind::Write | Kind::Atomic(_))
    }

    /// An atomic's tag (its type, moved by its atomicity domain); `None`
    /// for a plain access or an observe.
    pub fn atomic(self) -> Option<u8> {
        match self {
            Kind::Atomic(tag) | Kind::AtomicRead(tag) => Some(tag),
            _ => None,
        }
    }
}

/// One access of the phase, to the checking PE's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Access {
    /// Heap offset (symmetric globals lie past the heap) and bytes.
    pub offset: u64,
    pub len: u64,
    pub kind: Kind,
    /// The operation, as `race::ops` numbers it (load, put, get, ...).
    pub op: u8,
    /// Complete when its call returned (a load or store, a blocking get,
    /// a fetching atomic): any later write its PE issues orders it. A put
    /// or non-fetching atomic completes only at its PE's next release.
    pub done_at_return: bool,
    /// The number of its PE's synchronizations before it in the phase.
    pub seq: u32,
    /// Where the program made it (`race::site`).
    pub site: u64,
    /// The PE that made it.
    pub pe: u32,
}

impl Access {
    fn end(&self) -> u64 {
        self.offset + self.len
    }

    fn overlaps(&self, other: &Access) -> bool {
        self.offset < other.end() && other.offset < self.end()
    }
}

/// Whether the two accesses conflict: different PEs, the same bytes, and
/// a write among them that is not an atomic of the other's type. One PE's
/// atomics of two types on another PE's word conflict too: nothing orders
/// two atomics from one origin, and mixing types on a word is undefined.
fn conflict(a: &Access, b: &Access, me: u32) -> bool {
    if a.kind == Kind::Observe || b.kind == Kind::Observe || !a.overlaps(b) {
        return false;
    }
    if a.pe == b.pe {
        return a.pe != me
            && matches!((a.kind.atomic(), b.kind.atomic()), (Some(x), Some(y)) if x != y)
            && (a.kind.writes() || b.kind.writes());
    }
    match (a.kind.atomic(), b.kind.atomic()) {
        // Atomics of one type never race; of two types, when one writes.
        (Some(x), Some(y)) => x != y && (a.kind.writes() || b.kind.writes()),
        // An atomic and a plain access: when one writes.
        _ => a.kind.writes() || b.kind.writes(),
    }
}

/// Whether `a` is ordered before `b` by a release of `a`'s PE after it and
/// an acquire of `b`'s PE before `b` that reached it (`order`).
fn before(a: &Access, b: &Access, syncs: &impl Fn(u32) -> Syncs, order: &Order) -> bool {
    let from = syncs(a.pe);
    let released = match a.done_at_return {
        true => from.issued.max(from.released),
        false => from.released,
    };
    released > a.seq && order.after(a.pe, b.pe) <= b.seq
}

/// Whether `b`, made by the checking PE `me`, follows a wait or test of
/// `me`'s that observed `a`'s write.
fn observed(a: &Access, b: &Access, me: u32, observes: &[Access]) -> bool {
    b.pe == me && a.pe != me && a.kind.writes() && observes.iter().any(|o| o.overlaps(a) && o.seq <= b.seq)
}

/// The racing pairs of one phase at PE `me`, earlier-listed access first,
/// among `accesses` (this PE's own and other PEs' accesses to its memory,
/// `Observe`s included); `syncs` gives each PE's synchronizations. At most
/// `limit` pairs.
pub(crate) fn races(
    me: u32,
    accesses: &mut [Access],
    syncs: impl Fn(u32) -> Syncs,
    limit: usize,
) -> Vec<(Access, Access)> {
    let observes: Vec<Access> = accesses.iter().filter(|a| a.kind == Kind::Observe).copied().collect();
    let mut pes: Vec<u32> = accesses.iter().map(|a| a.pe).chain([me]).collect();
    pes.sort_unstable();
    pes.dedup();
    let order = Order::new(&pes, &syncs);
    accesses.sort_unstable_by_key(|a| (a.offset, a.pe));
    let mut found = Vec::new();
    let mut open: Vec<Access> = Vec::new();
    for b in accesses.iter().filter(|a| a.kind != Kind::Observe) {
        open.retain(|a| a.end() > b.offset);
        for a in &open {
            if conflict(a, b, me)
                && (a.pe == b.pe || !before(a, b, &syncs, &order))
                && (a.pe == b.pe || !before(b, a, &syncs, &order))
                && !observed(a, b, me, &observes)
                && !observed(b, a, me, &observes)
            {
                found.push((*a, *b));
                if found.len() >= limit {
                    return found;
                }
            }
        }
        open.push(*b);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pe: u32, offset: u64, kind: Kind, seq: u32, done: bool) -> Access {
        Access {
            offset,
            len: 8,
            kind,
            op: 0,
            done_at_return: done,
            seq,
            site: u64::from(pe) * 100 + offset,
            pe,
        }
    }

    fn none(_: u32) -> Syncs {
        Syncs::NONE
    }

    #[test]
    fn a_put_and_a_load_of_the_same_bytes_in_one_phase_race() {
        let mut a = [at(1, 64, Kind::Write, 0, false), at(0, 64, Kind::Read, 0, true)];
        assert_eq!(races(0, &mut a, none, 10).len(), 1);
    }

    #[test]
    fn other_bytes_or_two_reads_or_one_pe_do_not_race() {
        let mut a = [at(1, 64, Kind::Write, 0, false), at(0, 72, Kind::Read, 0, true)];
        assert!(races(0, &mut a, none, 10).is_empty());
        let mut b = [at(1, 64, Kind::Read, 0, true), at(0, 64, Kind::Read, 0, true)];
        assert!(races(0, &mut b, none, 10).is_empty());
        let mut c = [at(0, 64, Kind::Write, 0, true), at(0, 64, Kind::Read, 0, true)];
        assert!(races(0, &mut c, none, 10).is_empty());
    }

    #[test]
    fn quiet_then_flag_then_wait_orders_a_put_before_the_load() {
        // PE 1: put (seq 0), quiet (release 1), put flag; PE 0: wait
        // (acquire 1), load (seq 1).
        let syncs = |pe| match pe {
            1 => Syncs {
                released: 1,
                issued: 2,
                acquired: u32::MAX,
                ..Syncs::NONE
            },
            _ => Syncs {
                released: 0,
                issued: 0,
                acquired: 1,
                ..Syncs::NONE
            },
        };
        let mut a = [at(1, 64, Kind::Write, 0, false), at(0, 64, Kind::Read, 1, true)];
        assert!(races(0, &mut a, syncs, 10).is_empty());
        // The load before the wait races.
        let mut b = [at(1, 64, Kind::Write, 0, false), at(0, 64, Kind::Read, 0, true)];
        assert_eq!(races(0, &mut b, syncs, 10).len(), 1);
    }

    #[test]
    fn a_put_needs_a_quiet_but_a_load_is_ordered_by_any_later_write() {
        // PE 1 issued a flag put after the data put but never released.
        let syncs = |pe| match pe {
            1 => Syncs {
                released: 0,
                issued: 1,
                acquired: u32::MAX,
                ..Syncs::NONE
            },
            _ => Syncs {
                released: 0,
                issued: 0,
                acquired: 1,
                ..Syncs::NONE
            },
        };
        let mut put = [at(1, 64, Kind::Write, 0, false), at(0, 64, Kind::Read, 1, true)];
        assert_eq!(races(0, &mut put, syncs, 10).len(), 1, "no fence between data and flag");
        let mut get = [at(1, 64, Kind::Read, 0, true), at(0, 64, Kind::Write, 1, true)];
        assert!(
            races(0, &mut get, syncs, 10).is_empty(),
            "the get was done before the flag"
        );
    }

    #[test]
    fn atomics_of_one_type_do_not_race_but_mixed_ones_do() {
        let mut a = [
            at(1, 64, Kind::Atomic(3), 0, false),
            at(2, 64, Kind::Atomic(3), 0, false),
        ];
        assert!(races(0, &mut a, none, 10).is_empty());
        let mut b = [
            at(1, 64, Kind::Atomic(3), 0, false),
            at(2, 64, Kind::Atomic(4), 0, false),
        ];
        assert_eq!(races(0, &mut b, none, 10).len(), 1);
        let mut c = [at(1, 64, Kind::Atomic(3), 0, false), at(0, 64, Kind::Read, 0, true)];
        assert_eq!(races(0, &mut c, none, 10).len(), 1);
        // An atomic fetch reads: with a plain read or a same-type atomic, no race.
        let mut d = [at(1, 64, Kind::AtomicRead(3), 0, true), at(0, 64, Kind::Read, 0, true)];
        assert!(races(0, &mut d, none, 10).is_empty());
        let mut e = [
            at(1, 64, Kind::AtomicRead(3), 0, true),
            at(2, 64, Kind::Atomic(3), 0, false),
        ];
        assert!(races(0, &mut e, none, 10).is_empty());
        let mut f = [at(1, 64, Kind::AtomicRead(3), 0, true), at(0, 64, Kind::Write, 0, true)];
        assert_eq!(races(0, &mut f, none, 10).len(), 1);
    }

    #[test]
    fn a_wait_that_saw_the_flag_orders_the_flag_put_before_what_follows() {
        // PE 1 puts the flag; PE 0 waits on it (observe, seq 1) and then
        // clears it (seq 1).
        let syncs = |pe| match pe {
            0 => Syncs {
                released: 0,
                issued: 0,
                acquired: 1,
                ..Syncs::NONE
            },
            _ => Syncs::NONE,
        };
        let mut a = [
            at(1, 64, Kind::Write, 0, false),
            at(0, 64, Kind::Observe, 1, true),
            at(0, 64, Kind::Write, 1, true),
        ];
        assert!(races(0, &mut a, syncs, 10).is_empty());
        // A store before the wait still races with the put.
        let mut b = [
            at(1, 64, Kind::Write, 0, false),
            at(0, 64, Kind::Observe, 1, true),
            at(0, 64, Kind::Write, 0, true),
        ];
        assert_eq!(races(0, &mut b, syncs, 10).len(), 1);
    }

    #[test]
    fn one_origin_mixing_atomic_types_on_a_word_races_but_its_own_memory_does_not() {
        let mut a = [
            at(1, 64, Kind::Atomic(3), 0, false),
            at(1, 64, Kind::Atomic(4), 0, false),
        ];
        assert_eq!(races(0, &mut a, none, 10).len(), 1);
        let mut b = [at(0, 64, Kind::Atomic(3), 0, true), at(0, 64, Kind::Atomic(4), 0, true)];
        assert!(races(0, &mut b, none, 10).is_empty());
        let mut c = [at(1, 64, Kind::Write, 0, false), at(1, 64, Kind::Read, 0, true)];
        assert!(
            races(0, &mut c, none, 10).is_empty(),
            "one origin's plain accesses: not judged"
        );
    }

    #[test]
    fn two_pes_putting_the_same_bytes_race_and_the_limit_holds() {
        let mut a = [
            at(1, 64, Kind::Write, 0, false),
            at(2, 64, Kind::Write, 0, false),
            at(3, 64, Kind::Write, 0, false),
        ];
        assert_eq!(races(0, &mut a, none, 10).len(), 3);
        assert_eq!(races(0, &mut a, none, 2).len(), 2);
    }

    #[test]
    fn kinds_round_trip_their_codes() {
        for k in [
            Kind::Read,
            Kind::Write,
            Kind::Observe,
            Kind::Atomic(0),
            Kind::Atomic(9),
            Kind::AtomicRead(0),
            Kind::AtomicRead(63),
        ] {
            assert_eq!(Kind::from_code(k.code()), k);
        }
    }
}
