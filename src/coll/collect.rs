//! `fcollect` (every member contributes the same count) and `collect`
//! (counts differ): every member's source, concatenated in member order,
//! into every member's destination (MPI's allgather and allgatherv).

use super::collect_nodes::starts;
use super::exchange::Bytes;
use super::plan::{self, MoveAlgo};
use super::Coll;
use crate::debug::Signature;
use crate::error::Result;
use crate::sym::{Pod, Sym};
use crate::team::Team;
use crate::world::World;
use std::mem::size_of;

impl World {
    /// Concatenates the first `n` elements of `src` of every member, in
    /// member order, into `dst` on every member (`shmem_fcollect`). `dst`
    /// needs `n * team.n_pes()` elements and must not overlap `src`.
    #[track_caller]
    pub fn fcollect<T: Pod>(&self, team: &Team, dst: &Sym<T>, src: &Sym<T>, n: usize) -> Result<()> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "fcollect")?;
            let total = n.saturating_mul(c.n());
            let (dst_off, src_off) = c.disjoint(dst, src, total, n)?;
            let len = n * size_of::<T>();
            c.agree(
                Signature::of::<T>("fcollect", None, n),
                Some((dst_off, total * size_of::<T>())),
            )?;
            c.gather_blocks(1, |i| Block {
                from: src_off,
                to: dst_off + i * len,
                len,
            })
        })
    }

    /// Concatenates the first `n` elements of `src` of every member, where
    /// `n` may differ between members, in member order into `dst` on every
    /// member (`shmem_collect`). Returns the number of elements gathered.
    /// `dst` must hold them all and must not overlap `src`.
    #[track_caller]
    pub fn collect<T: Pod>(&self, team: &Team, dst: &Sym<T>, src: &Sym<T>, n: usize) -> Result<usize> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "collect")?;
            // Members' counts may differ: only the call and type are compared.
            let dst_first = self.checked_offset("collect", dst, self.rank, 0, 0)?;
            c.agree(
                Signature::of::<T>("collect", None, 0),
                Some((dst_first, dst.len() * size_of::<T>())),
            )?;
            let src_off = self.checked_offset("collect", src, self.rank, 0, n)?;
            if c.collect_by_nodes() {
                return c.collect_nodes(dst, src, src_off, n);
            }
            let size = size_of::<T>();
            // The count travels beside the exchange flag (`exchange_noted`: no
            // cache line of its own on one node); the elements ride along when
            // they fit the exchange region, so a small collect takes one round
            // and the same cache lines as fcollect, and allocates nothing.
            let inline_max = plan::collect_inline_max(&c);
            let inline = |count: usize| count.checked_mul(size).is_some_and(|bytes| bytes <= inline_max);
            let payload = match inline(n) {
                true => Bytes {
                    ptr: c.own(src_off),
                    len: n * size,
                },
                false => Bytes::EMPTY,
            };
            let inbox = c.exchange_noted(1, n as u64, |_| payload)?;
            let count = |i: usize| match i == c.me() {
                true => n,
                false => inbox.note(i) as usize,
            };
            let (mut total, mut all_inline) = (0usize, true);
            for i in 0..c.n() {
                total = total.saturating_add(count(i));
                all_inline &= inline(count(i));
            }
            let counts = || (0..c.n()).map(count).collect::<Vec<_>>();
            let dst_off = c.collect_destination(dst, src, total, n, counts)?;
            if !all_inline {
                c.gather_counted(2, src_off, dst_off, &counts(), size)?;
                return Ok(total);
            }
            let mut start = 0;
            for i in 0..c.n() {
                let from = match i == c.me() {
                    true => c.own(src_off).cast_const(),
                    false => inbox.from(i),
                };
                // SAFETY: the destination range is ours, inside the checked
                // object, and disjoint from the source and the scratch.
                unsafe { std::ptr::copy_nonoverlapping(from, c.own(dst_off + start * size), count(i) * size) };
                start += count(i);
            }
            Ok(total)
        })
    }
}

impl Coll<'_> {
    /// Checks that `dst` takes every member's elements (`total` of them)
    /// and does not overlap this rank's `n`-element source; returns the
    /// destination's heap offset. `counts` lists every member's count for
    /// the error message.
    pub(super) fn collect_destination<T: Pod>(
        &self,
        dst: &Sym<T>,
        src: &Sym<T>,
        total: usize,
        n: usize,
        counts: impl FnOnce() -> Vec<usize>,
    ) -> Result<usize> {
        if total > dst.len() {
            return Err(self.bad(format!(
                "the members contribute {total} elements in all ({:?}), but the destination holds {}",
                counts(),
                dst.len()
            )));
        }
        let (dst_off, _) = self.disjoint(dst, src, total, n)?;
        Ok(dst_off)
    }

    /// Moves every member's `counts[i]` elements of `size` bytes from its
    /// source at `src_off` to their place in every destination at
    /// `dst_off`, from step `first` (`gather_blocks`).
    pub(super) fn gather_counted(
        &self,
        first: u64,
        src_off: usize,
        dst_off: usize,
        counts: &[usize],
        size: usize,
    ) -> Result<()> {
        let starts = starts(counts);
        self.gather_blocks(first, |i| Block {
            from: src_off,
            to: dst_off + starts[i] * size,
            len: counts[i] * size,
        })
    }
}

/// One block of a movement: where it lies in the sending member's heap,
/// where it lands in the receiving member's heap, and its length in bytes.
#[derive(Clone, Copy)]
pub(super) struct Block {
    pub from: usize,
    pub to: usize,
    pub len: usize,
}

impl Coll<'_> {
    /// Moves `block(i, j)`, member i's block for member j, from every member
    /// to every member (this rank's block to itself included), by the
    /// exchange, by reading in place, or by puts (`plan::movement`). Block
    /// lengths must depend only on the sender, so that every member picks
    /// the same algorithm. Uses steps `first` and `first + 1`.
    pub(super) fn move_blocks(&self, first: u64, block: impl Fn(usize, usize) -> Block) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        let own = block(me, me);
        // SAFETY: callers pass blocks inside their checked, disjoint objects.
        unsafe { std::ptr::copy_nonoverlapping(self.own(own.from), self.own(own.to), own.len) };
        let largest = (0..n).map(|i| block(i, me).len).max().unwrap_or(0);
        match plan::movement(self, largest) {
            MoveAlgo::Exchange => {
                let inbox = self.exchange(first, |j| {
                    let b = block(me, j);
                    Bytes {
                        ptr: self.own(b.from),
                        len: b.len,
                    }
                })?;
                for i in (0..n).filter(|&i| i != me) {
                    let b = block(i, me);
                    // SAFETY: member i sent `b.len` bytes this round; the
                    // destination range is ours and inside the checked object.
                    unsafe { std::ptr::copy_nonoverlapping(inbox.from(i), self.own(b.to), b.len) };
                }
            }
            MoveAlgo::Pull => {
                self.notify_all(first)?;
                self.wait_all(first)?;
                for k in 1..n {
                    let i = (me + k) % n;
                    let b = block(i, me);
                    let base = self.peer_base(i)?;
                    // SAFETY: member i's source holds the block and stays
                    // put until we notify `first + 1`.
                    unsafe { std::ptr::copy_nonoverlapping(base.add(b.from), self.own(b.to), b.len) };
                }
                self.notify_all(first + 1)?;
                self.wait_all(first + 1)?;
            }
            MoveAlgo::Push => {
                for k in 1..n {
                    let to = (me + k) % n;
                    let b = block(me, to);
                    if b.len > 0 {
                        self.forward(to, b.to, b.from, b.len)?;
                    }
                    self.notify(to, first)?;
                }
                self.wait_all(first)?;
            }
        }
        Ok(())
    }
}
