//! The exchange: the small-message engine under most collectives.
//!
//! In one exchange round every member puts a payload (possibly empty) into
//! every other member's scratch, notifies it, and then waits for all the
//! others. A receiver hears from the round's m - 1 other members, so a
//! scratch half holds m - 1 regions: the member k places after the
//! receiver (among the round's members, cyclically) writes region k - 1. A
//! round among a few members (node leaders) thus gets large regions: the
//! whole half between two. Since every member hears
//! from every other member in every round, no member can begin round r + 2
//! before every other has finished reading round r; the scratch therefore
//! has two halves, used alternately.
//!
//! ```text
//! scratch: | half 0: region 0 | region 1 | ... | half 1: region 0 | ... |
//! ```

use super::{Coll, Members};
use crate::error::Result;
use crate::team::layout::{Layout, SCRATCH_BYTES};

/// A payload: bytes this rank sends, from private memory or its own heap.
#[derive(Clone, Copy)]
pub(crate) struct Bytes {
    pub ptr: *const u8,
    pub len: usize,
}

impl Bytes {
    pub const EMPTY: Bytes = Bytes {
        ptr: std::ptr::null(),
        len: 0,
    };

    pub fn of<T>(items: &[T]) -> Bytes {
        Bytes {
            ptr: items.as_ptr().cast(),
            len: std::mem::size_of_val(items),
        }
    }
}

/// What arrived in one round: one region per other member of the round,
/// in this rank's scratch.
pub(crate) struct Inbox<'m> {
    base: *const u8,
    region: usize,
    notes: Notes,
    members: Members<'m>,
    /// This rank's position among the members.
    at: usize,
}

impl Inbox<'_> {
    /// Where member `from`'s payload of this round lies (valid until this
    /// rank's exchange round after next). `from` is another member.
    #[inline]
    pub fn from(&self, from: usize) -> *const u8 {
        let sender = self.members.position(from).expect("a member of the round");
        assert_ne!(sender, self.at, "no payload from oneself");
        // SAFETY: the slot is below m - 1, and the half holds m - 1 regions.
        unsafe { self.base.add(slot(sender, self.at, self.members.len()) * self.region) }
    }

    /// The note that member `from` sent this round with
    /// [`exchange_noted`](Coll::exchange_noted).
    #[inline]
    pub fn note(&self, from: usize) -> u64 {
        let n = &self.notes;
        // SAFETY: the note lies in this rank's team area, 8-byte aligned in
        // member `from`'s flag line, written before the flag we waited for
        // and not again before our exchange round after next.
        unsafe { n.heap.add(n.layout.note(n.slot, from, n.half)).cast::<u64>().read() }
    }
}

/// Where a round's notes lie in this rank's heap: the team slot's flag
/// lines, at the round's exchange half (`Layout::note`).
struct Notes {
    heap: *const u8,
    layout: Layout,
    slot: usize,
    half: usize,
}

/// The region that the member at position `sender` writes in the scratch of
/// the member at position `receiver`, among `m`.
#[inline]
fn slot(sender: usize, receiver: usize, m: usize) -> usize {
    (sender + m - receiver - 1) % m
}

impl Coll<'_> {
    /// The largest payload one member can send another in one round of the
    /// whole team.
    pub fn exchange_capacity(&self) -> usize {
        region_bytes(self.n())
    }

    /// The largest payload in one round among `members` members.
    pub fn exchange_capacity_among(&self, members: usize) -> usize {
        region_bytes(members)
    }

    /// Runs one exchange round at `step`: sends `payload(j)` to every other
    /// member `j`, then waits for theirs.
    #[track_caller]
    pub fn exchange(&self, step: u64, payload: impl FnMut(usize) -> Bytes) -> Result<Inbox<'static>> {
        crate::error::located(|| self.exchange_among(Members::All(self.n()), self.me(), step, payload))
    }

    /// An exchange round that also leaves `note` beside this rank's flag
    /// on every other member ([`Inbox::note`]): a word that costs no cache
    /// line of its own on one node.
    #[track_caller]
    pub fn exchange_noted(&self, step: u64, note: u64, payload: impl FnMut(usize) -> Bytes) -> Result<Inbox<'static>> {
        crate::error::located(|| self.exchange_round(Members::All(self.n()), self.me(), step, Some(note), payload))
    }

    /// An exchange round among `members` only (this rank is
    /// `members[at]`). Every other member of the team must call
    /// [`skip_exchanges`](Coll::skip_exchanges) for it, so that all agree
    /// on which scratch half comes next.
    #[track_caller]
    pub fn exchange_among<'m>(
        &self,
        members: Members<'m>,
        at: usize,
        step: u64,
        payload: impl FnMut(usize) -> Bytes,
    ) -> Result<Inbox<'m>> {
        crate::error::located(|| self.exchange_round(members, at, step, None, payload))
    }

    fn exchange_round<'m>(
        &self,
        members: Members<'m>,
        at: usize,
        step: u64,
        note: Option<u64>,
        mut payload: impl FnMut(usize) -> Bytes,
    ) -> Result<Inbox<'m>> {
        let m = members.len();
        let half = self.exchange_half();
        let region = region_bytes(m);
        let base = self.next_exchange_half();
        self.skip_exchanges(1);
        for k in 1..m {
            let to = members.get((at + k) % m);
            let bytes = payload(to);
            if bytes.len > region {
                return Err(self.bad(format!(
                    "{} bytes per member do not fit the exchange among {m} members ({region} bytes each); with more than {} members, reduce a symmetric object instead",
                    bytes.len,
                    SCRATCH_BYTES / 2 / 64 + 1
                )));
            }
            if bytes.len > 0 {
                // SAFETY: the caller's payload points at `len` readable bytes
                // that nobody writes during this round.
                let data = unsafe { std::slice::from_raw_parts(bytes.ptr, bytes.len) };
                self.put(to, base + slot(at, (at + k) % m, m) * region, data)?;
            }
            if let Some(note) = note {
                self.put(to, self.note_offset(self.me(), half), &note.to_ne_bytes())?;
            }
            self.notify(to, step)?;
        }
        for k in 1..m {
            self.wait(members.get((at + m - k) % m), step)?;
        }
        Ok(Inbox {
            base: self.own(base),
            region,
            notes: Notes {
                heap: self.own(0),
                layout: self.layout,
                slot: self.t.slot,
                half,
            },
            members,
            at,
        })
    }
}

impl Coll<'_> {
    /// Heap offset of the scratch half that this rank's next exchange
    /// round uses.
    pub fn next_exchange_half(&self) -> usize {
        self.scratch() + self.exchange_half() * SCRATCH_BYTES / 2
    }

    /// Which half (0 or 1) this rank's next exchange round uses.
    fn exchange_half(&self) -> usize {
        (self.t.exchanges.load(std::sync::atomic::Ordering::Relaxed) % 2) as usize
    }

    /// Accounts for `rounds` exchange rounds this rank took no part in.
    pub fn skip_exchanges(&self, rounds: u64) {
        self.t.exchanges.fetch_add(rounds, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Bytes of one region in a round among `m` members: half the scratch
/// split m - 1 ways, in whole cache lines.
fn region_bytes(m: usize) -> usize {
    (SCRATCH_BYTES / 2 / (m.max(2) - 1)) / 64 * 64
}
