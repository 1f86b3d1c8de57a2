//! Which PEs' releases reach which PEs' later accesses in one phase: the
//! order `check` asks of two accesses of different PEs.
//!
//! Most acquires (a wait, a fetching atomic, a collective) are taken as
//! acquiring every release before them, whoever made it: a PE's first
//! such acquire (`Syncs::acquired`) orders every other PE's released
//! accesses before its later ones. A lock is different: taking it acquires
//! only what its last holder released, so a PE that took a lock first is
//! not ordered after a PE that took it later. Each lock taken is kept as a
//! *hand-off* (`Syncs::handed`): from which PE, at which number. Orders
//! chain: what PE y released before PE z took the lock from it (or before
//! z's first acquire) reaches PE x once x takes the lock from z, if z
//! released after. A hand-off from a PE whose synchronizations this PE
//! was not sent (it touched nothing here) is taken as an acquire of
//! everything, as are hand-offs past the few a header carries; an order
//! is only ever added, never missed, so a correct program gets no report.

use std::collections::HashMap;

/// One PE's synchronizations in the phase, numbered as `Access::seq` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Syncs {
    /// The last quiet, fence, signal, lock release or collective (0: none).
    pub released: u32,
    /// The last of those or of any write the PE issued (0: none).
    pub issued: u32,
    /// The first wait, test, fetching atomic or collective (`u32::MAX`:
    /// none): taken as acquiring every PE's releases before it.
    pub acquired: u32,
    /// Locks taken: from which PE (the last holder) and at which number,
    /// the first from each (`NO_PE`: none); `order` chains them.
    pub handed: [(u32, u32); HANDS],
}

/// The lock hand-offs a PE's phase keeps; more are taken as `acquired`.
pub(crate) const HANDS: usize = 3;
/// No PE: an unused hand-off.
pub(crate) const NO_PE: u32 = u32::MAX;

impl Syncs {
    pub const NONE: Syncs = Syncs {
        released: 0,
        issued: 0,
        acquired: u32::MAX,
        handed: [(NO_PE, u32::MAX); HANDS],
    };

    /// The first acquire of any kind (`u32::MAX`: none).
    pub fn first_acquire(&self) -> u32 {
        self.handed.iter().map(|&(_, seq)| seq).fold(self.acquired, u32::min)
    }
}

/// For each PE, from which number on it has acquired each other PE's
/// releases (`from`), or everyone's (`any`).
#[derive(Debug, Default)]
pub(crate) struct Order {
    any: HashMap<u32, u32>,
    from: HashMap<(u32, u32), u32>,
}

impl Order {
    /// The phase's order among `pes` (those whose synchronizations are
    /// known here), from each one's `syncs`.
    pub fn new(pes: &[u32], syncs: &impl Fn(u32) -> Syncs) -> Order {
        let mut order = Order::default();
        let mut hands: Vec<(u32, u32, u32)> = Vec::new();
        for &x in pes {
            let s = syncs(x);
            if s.acquired != u32::MAX {
                order.lower_any(x, s.acquired);
            }
            for &(from, seq) in s.handed.iter().filter(|&&(from, _)| from != NO_PE && from != x) {
                match pes.contains(&from) {
                    true => {
                        order.lower((from, x), seq);
                        hands.push((from, x, seq));
                    }
                    false => {
                        order.lower_any(x, seq);
                    }
                }
            }
        }
        // What a lock's giver had acquired before its release passes on.
        // Each round only lowers numbers, so this ends.
        let mut changed = !hands.is_empty();
        while changed {
            changed = false;
            for &(z, x, seq) in &hands {
                let released = syncs(z).released;
                if order.any.get(&z).is_some_and(|&s| released > s) {
                    changed |= order.lower_any(x, seq);
                }
                let reached: Vec<u32> = order
                    .from
                    .iter()
                    .filter(|&(&(y, to), &s)| to == z && y != x && released > s)
                    .map(|(&(y, _), _)| y)
                    .collect();
                for y in reached {
                    changed |= order.lower((y, x), seq);
                }
            }
        }
        order
    }

    /// The first number of PE `to` at which it has acquired what PE
    /// `from` released before (`u32::MAX`: never in this phase).
    pub fn after(&self, from: u32, to: u32) -> u32 {
        let any = self.any.get(&to).copied().unwrap_or(u32::MAX);
        let from = self.from.get(&(from, to)).copied().unwrap_or(u32::MAX);
        any.min(from)
    }

    fn lower_any(&mut self, pe: u32, seq: u32) -> bool {
        lower(self.any.entry(pe).or_insert(u32::MAX), seq)
    }

    fn lower(&mut self, key: (u32, u32), seq: u32) -> bool {
        lower(self.from.entry(key).or_insert(u32::MAX), seq)
    }
}

fn lower(at: &mut u32, seq: u32) -> bool {
    let lowered = seq < *at;
    *at = (*at).min(seq);
    lowered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syncs(released: u32, acquired: u32, handed: &[(u32, u32)]) -> Syncs {
        let mut s = Syncs {
            released,
            acquired,
            ..Syncs::NONE
        };
        s.handed[..handed.len()].copy_from_slice(handed);
        s
    }

    #[test]
    fn a_lock_orders_only_its_giver_before_its_taker() {
        // PE 1 took the lock (from nobody) at 1, released it at 2; PE 0
        // took it from PE 1 at 1.
        let all = |pe| match pe {
            0 => syncs(2, u32::MAX, &[(1, 1)]),
            _ => syncs(2, u32::MAX, &[]),
        };
        let order = Order::new(&[0, 1], &all);
        assert_eq!(order.after(1, 0), 1);
        assert_eq!(
            order.after(0, 1),
            u32::MAX,
            "the first taker acquired nothing from the second"
        );
    }

    #[test]
    fn hand_overs_chain_and_a_plain_acquire_passes_on() {
        // 2 took it from 1 at 3, 1 from 0 at 1 and released at 2.
        let chain = |pe| match pe {
            1 => syncs(2, u32::MAX, &[(0, 1)]),
            2 => syncs(0, u32::MAX, &[(1, 3)]),
            _ => syncs(5, u32::MAX, &[]),
        };
        let order = Order::new(&[0, 1, 2], &chain);
        assert_eq!(order.after(0, 2), 3);
        // 1 acquired everything at 1 (a wait) and released at 2.
        let waited = |pe| match pe {
            1 => syncs(2, 1, &[]),
            2 => syncs(0, u32::MAX, &[(1, 3)]),
            _ => syncs(5, u32::MAX, &[]),
        };
        assert_eq!(Order::new(&[0, 1, 2], &waited).after(0, 2), 3);
        // Released before it took the lock: nothing passes on.
        let early = |pe| match pe {
            1 => syncs(1, u32::MAX, &[(0, 2)]),
            2 => syncs(0, u32::MAX, &[(1, 3)]),
            _ => syncs(5, u32::MAX, &[]),
        };
        assert_eq!(Order::new(&[0, 1, 2], &early).after(0, 2), u32::MAX);
    }

    #[test]
    fn a_hand_over_from_an_unknown_pe_acquires_everything() {
        let all = |pe| match pe {
            0 => syncs(0, u32::MAX, &[(7, 4)]),
            _ => syncs(2, u32::MAX, &[]),
        };
        assert_eq!(Order::new(&[0, 1], &all).after(1, 0), 4);
    }
}
