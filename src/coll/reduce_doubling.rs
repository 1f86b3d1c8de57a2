//! Recursive doubling for small reductions on teams spread one rank per
//! node (every pair over TCP or verbs): in round k each member trades its
//! partial result with the member whose number differs in bit k, so a
//! member sends log2(n) messages in sequence instead of n - 1 at once (the
//! exchange), as MPI's allreduce does for small messages. Two partials
//! combine in member order (the lower block first), so every member builds
//! the same tree and computes the same bits.
//!
//! Each round has its own region of one scratch half: a partner may be a
//! round ahead. The half alternates between calls like the exchange's (this
//! takes one exchange turn), and no member can start the next call's round
//! 0 before every member has sent this call's last round.

use super::ops::{self, Number, ReduceOp};
use super::Coll;
use crate::error::Result;
use crate::team::layout::SCRATCH_BYTES;
use std::mem::size_of;

impl Coll<'_> {
    /// The largest reduction, in bytes, that recursive doubling takes on
    /// this team: none unless the team has a power-of-two number (above
    /// two) of members, one per node.
    pub(super) fn doubling_capacity(&self) -> usize {
        let (m, nodes) = (self.n(), &self.t.nodes);
        match m > 2 && m.is_power_of_two() && nodes.groups.len() == m {
            true => region_bytes(m),
            false => 0,
        }
    }

    /// Combines `n` elements at `src` of every member into `dst` (this
    /// rank's, heap or private; they may be equal).
    pub(super) fn reduce_doubling<T: Number, O: ReduceOp<T>>(
        &self,
        src: *const T,
        dst: *mut T,
        n: usize,
    ) -> Result<()> {
        let (m, me) = (self.n(), self.me());
        let bytes = n * size_of::<T>();
        assert!(
            bytes <= self.doubling_capacity(),
            "a doubling payload larger than its region"
        );
        let region = region_bytes(m);
        let base = self.next_exchange_half();
        self.skip_exchanges(1);
        let mut acc: Vec<T> = Vec::with_capacity(n);
        let mut next: Vec<T> = Vec::with_capacity(n);
        // SAFETY: the caller's source holds n elements; `acc` has room.
        unsafe {
            std::ptr::copy_nonoverlapping(src, acc.as_mut_ptr(), n);
            acc.set_len(n);
        }
        for round in 0..m.trailing_zeros() as usize {
            let partner = me ^ (1 << round);
            let at = base + round * region;
            let step = 1 + round as u64;
            // SAFETY: `acc` holds n initialized elements of a Pod type.
            let mine = unsafe { std::slice::from_raw_parts(acc.as_ptr().cast::<u8>(), bytes) };
            self.put(partner, at, mine)?;
            self.notify(partner, step)?;
            self.wait(partner, step)?;
            let theirs: *const T = self.own(at).cast_const().cast();
            let ordered = match me < partner {
                true => [acc.as_ptr(), theirs],
                false => [theirs, acc.as_ptr()],
            };
            // SAFETY: both partials hold n elements (the partner's arrived
            // in our region this round, which no one else writes before we
            // send our next round); `next` has room for n and overlaps
            // neither.
            unsafe {
                ops::combine_into::<T, O>(next.as_mut_ptr(), ordered.into_iter(), n);
                next.set_len(n);
            }
            std::mem::swap(&mut acc, &mut next);
        }
        // SAFETY: `dst` holds n elements and `acc` is private.
        unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dst, n) };
        Ok(())
    }
}

/// Bytes of one round's region: a scratch half split across the rounds,
/// in whole cache lines.
fn region_bytes(m: usize) -> usize {
    (SCRATCH_BYTES / 2 / (m.trailing_zeros() as usize).max(1)) / 64 * 64
}
