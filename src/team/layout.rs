//! Where each team's collective state lives: a fixed area at the start of
//! every rank's symmetric heap, reserved before the first user allocation,
//! so one heap offset names it on every rank and every transport reaches it.
//!
//! The area holds [`MAX_TEAMS`] slots. A slot belongs to at most one team
//! containing this rank at a time (creation picks a slot free on every
//! member of the parent); the world team always holds slot 0.
//!
//! ```text
//! slot s:  | step flags: one cache line per team member index | scratch |
//! ```
//!
//! A flag word at index `i` is written only by the member with team index
//! `i`, with values that only grow (see `coll::Steps`), so it never needs
//! resetting while the team lives. The same member may leave a *note* (one
//! word per exchange half) in the rest of the flag's cache line before it
//! raises the flag: a receiver that sees the flag has the note in the same
//! line, so a small word (a collect's count) travels without a cache miss
//! of its own. The word after the notes is the checking mode's: a sync's
//! digest of its call (`coll::agree`), which the receiver compares without
//! reading the sender's record.

/// Teams a rank can belong to at once, the world team included.
pub const MAX_TEAMS: usize = 32;
/// Scratch bytes per slot, for reductions and scans that combine data
/// arriving from other members. Larger collectives run in chunks.
pub const SCRATCH_BYTES: usize = 64 << 10;
/// Every flag word has its own cache line, so concurrent writers do not share one.
const FLAG_STRIDE: usize = 64;
const PAGE: usize = 4096;

/// The team area's geometry for a job of `world_size` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    world_size: usize,
}

impl Layout {
    pub fn new(world_size: usize) -> Layout {
        Layout { world_size }
    }

    fn flags_bytes(self) -> usize {
        (self.world_size * FLAG_STRIDE).next_multiple_of(PAGE)
    }

    fn slot_bytes(self) -> usize {
        self.flags_bytes() + SCRATCH_BYTES
    }

    /// Bytes reserved at the start of the heap.
    pub fn area_bytes(self) -> usize {
        MAX_TEAMS * self.slot_bytes()
    }

    /// Heap offset of the flag that the member with team index `from`
    /// writes in slot `slot`.
    pub fn flag(self, slot: usize, from: usize) -> usize {
        debug_assert!(slot < MAX_TEAMS && from < self.world_size);
        slot * self.slot_bytes() + from * FLAG_STRIDE
    }

    /// Heap offset of the note that the member with team index `from`
    /// leaves beside its flag in slot `slot`, for exchange half `half`.
    pub fn note(self, slot: usize, from: usize, half: usize) -> usize {
        debug_assert!(half < 2);
        self.flag(slot, from) + 8 + half * 8
    }

    /// Heap offset of the word that the member with team index `from`
    /// leaves beside its flag in slot `slot` under `--debug`: its sync's
    /// digest (`debug::Signature::digest`).
    pub fn check_note(self, slot: usize, from: usize) -> usize {
        self.flag(slot, from) + 24
    }

    /// Heap offset of slot `slot`'s scratch.
    pub fn scratch(self, slot: usize) -> usize {
        slot * self.slot_bytes() + self.flags_bytes()
    }

    /// The heap range of slot `slot`'s flags, to clear when the slot is given back.
    pub fn flags_range(self, slot: usize) -> std::ops::Range<usize> {
        let start = slot * self.slot_bytes();
        start..start + self.world_size * FLAG_STRIDE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_disjoint_and_aligned() {
        let layout = Layout::new(5);
        assert_eq!(layout.flag(0, 0), 0);
        assert_eq!(layout.flag(0, 4), 256);
        assert_eq!(layout.scratch(0), 4096);
        assert_eq!(layout.flag(1, 0), 4096 + SCRATCH_BYTES);
        assert!(layout.scratch(MAX_TEAMS - 1) + SCRATCH_BYTES <= layout.area_bytes());
        for slot in 0..MAX_TEAMS {
            assert_eq!(layout.flag(slot, 0) % PAGE, 0);
            assert_eq!(layout.scratch(slot) % PAGE, 0);
            assert!(layout.flags_range(slot).end <= layout.scratch(slot));
        }
    }
}
