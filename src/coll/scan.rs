//! `inscan` and `exscan` (OpenSHMEM 1.6): member i gets the combination of
//! the sources of members 0..=i (inclusive) or 0..i (exclusive).
//!
//! Through the exchange, in chunks: each member sends its chunk to the
//! members above it, and an empty payload to those below (every member
//! hears from every other in each round, which keeps the scratch halves
//! safe), then combines what came from below in member order.

use super::exchange::Bytes;
use super::ops::{self, Number, ReduceOp};
use super::Coll;
use crate::debug::Signature;
use crate::error::Result;
use crate::sym::Sym;
use crate::team::Team;
use crate::world::World;
use std::mem::size_of;

impl World {
    /// Inclusive scan: member i's `dst` gets the combination of the first
    /// `n` elements of `src` of members `0..=i` (`shmem_<type>_sum_inscan`).
    /// `dst` may be `src`.
    #[track_caller]
    pub fn inscan<T: Number, O: ReduceOp<T>>(
        &self,
        team: &Team,
        _op: O,
        dst: &Sym<T>,
        src: &Sym<T>,
        n: usize,
    ) -> Result<()> {
        crate::error::located_call(|| self.scan::<T, O>("inscan", team, dst, src, n, true))
    }

    /// Exclusive scan: member i's `dst` gets the combination over members
    /// `0..i`; member 0's `dst` is left as it was (`shmem_<type>_sum_exscan`).
    /// `dst` may be `src`.
    #[track_caller]
    pub fn exscan<T: Number, O: ReduceOp<T>>(
        &self,
        team: &Team,
        _op: O,
        dst: &Sym<T>,
        src: &Sym<T>,
        n: usize,
    ) -> Result<()> {
        crate::error::located_call(|| self.scan::<T, O>("exscan", team, dst, src, n, false))
    }

    #[track_caller]
    fn scan<T: Number, O: ReduceOp<T>>(
        &self,
        op: &'static str,
        team: &Team,
        dst: &Sym<T>,
        src: &Sym<T>,
        n: usize,
        inclusive: bool,
    ) -> Result<()> {
        let c = Coll::begin(self, team, op)?;
        let (dst_off, src_off) = c.same_or_disjoint(dst, src, n, n)?;
        c.agree(
            Signature::of::<T>(op, None, n),
            Some((dst_off, n * std::mem::size_of::<T>())),
        )?;
        let src: *const T = c.own(src_off).cast();
        let dst: *mut T = c.own(dst_off).cast();
        let me = c.me();
        let last = if inclusive { me + 1 } else { me };
        let chunk = (c.exchange_capacity() / size_of::<T>()).max(1);
        let mut acc: Vec<T> = Vec::with_capacity(chunk.min(n));
        let mut done = 0;
        let mut step = 1;
        while done < n || step == 1 {
            let len = chunk.min(n - done);
            // SAFETY: done + len <= n, inside our checked source.
            let mine = unsafe { src.add(done) };
            let inbox = c.exchange(step, |to| match to > me {
                true => Bytes {
                    ptr: mine.cast(),
                    len: len * size_of::<T>(),
                },
                false => Bytes::EMPTY,
            })?;
            let contributions = (0..last).map(|member| match member == me {
                true => mine,
                false => inbox.from(member).cast(),
            });
            // SAFETY: each contribution holds `len` elements; `acc` has
            // room for a chunk and overlaps none of them.
            unsafe { ops::combine_into::<T, O>(acc.as_mut_ptr(), contributions, len) };
            if last > 0 {
                // SAFETY: our destination holds n elements; our source chunk was read above.
                unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dst.add(done), len) };
            }
            done += len;
            step += 1;
        }
        Ok(())
    }
}
