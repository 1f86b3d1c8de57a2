//! `alltoall` and `alltoalls`: member i's block j lands in member j's
//! destination as block i (MPI's alltoall).

use super::collect::Block;
use super::exchange::Bytes;
use super::gather_nodes::Spread;
use super::Coll;
use crate::debug::Signature;
use crate::error::Result;
use crate::sym::{Pod, Sym};
use crate::team::Team;
use crate::world::World;
use std::mem::size_of;

impl World {
    /// Sends elements `[j*n, (j+1)*n)` of `src` to member `j`, which
    /// stores them at `[i*n, (i+1)*n)` of its `dst`, where `i` is this
    /// rank's member number (`shmem_alltoall`). Both objects need
    /// `n * team.n_pes()` elements, and must not overlap.
    #[track_caller]
    pub fn alltoall<T: Pod>(&self, team: &Team, dst: &Sym<T>, src: &Sym<T>, n: usize) -> Result<()> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "alltoall")?;
            let total = n.saturating_mul(c.n());
            let (dst_off, src_off) = c.disjoint(dst, src, total, total)?;
            let len = n * size_of::<T>();
            c.agree(
                Signature::of::<T>("alltoall", None, n),
                Some((dst_off, total * size_of::<T>())),
            )?;
            c.blocks_by_nodes(1, Spread::PerReceiver, |i, j| Block {
                from: src_off + j * len,
                to: dst_off + i * len,
                len,
            })
        })
    }

    /// Strided [`alltoall`](World::alltoall) (`shmem_alltoalls`): the `n`
    /// elements for member `j` are `src[(j*n + k) * src_stride]` for
    /// `k < n`, and those from member `i` land at
    /// `dst[(i*n + k) * dst_stride]`. Strides are at least 1.
    #[track_caller]
    pub fn alltoalls<T: Pod>(
        &self,
        team: &Team,
        dst: &Sym<T>,
        src: &Sym<T>,
        dst_stride: usize,
        src_stride: usize,
        n: usize,
    ) -> Result<()> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "alltoalls")?;
            if dst_stride == 0 || src_stride == 0 {
                return Err(c.bad(format!(
                    "strides must be at least 1 (dst {dst_stride}, src {src_stride})"
                )));
            }
            let count = n * c.n();
            let span = |stride: usize| match count {
                0 => 0,
                _ => (count - 1) * stride + 1,
            };
            let (dst_off, src_off) = c.disjoint(dst, src, span(dst_stride), span(src_stride))?;
            c.agree(Signature::of::<T>("alltoalls", None, n), None)?;
            let packed: Vec<T> = (0..count)
                // SAFETY: index i * src_stride < span(src_stride), inside the checked source.
                .map(|i| unsafe { c.own(src_off).cast::<T>().add(i * src_stride).read() })
                .collect();
            let mut received: Vec<T> = packed.clone();
            let block = n * size_of::<T>();
            c.alltoall_exchange(packed.as_ptr().cast(), received.as_mut_ptr().cast(), block)?;
            for (i, value) in received.into_iter().enumerate() {
                // SAFETY: inside the checked destination, as for the source.
                unsafe { c.own(dst_off).cast::<T>().add(i * dst_stride).write(value) };
            }
            Ok(())
        })
    }
}

impl Coll<'_> {
    /// Alltoall of `block`-byte blocks through the exchange, in rounds of
    /// at most the exchange's capacity; this rank's own block is the caller's.
    fn alltoall_exchange(&self, src: *const u8, dst: *mut u8, block: usize) -> Result<()> {
        let chunk = self.exchange_capacity().max(1);
        let mut done = 0;
        let mut step = 1;
        while done < block || step == 1 {
            let len = chunk.min(block - done);
            let inbox = self.exchange(step, |j| Bytes {
                // SAFETY: every block of `src` holds `block` bytes; done + len <= block.
                ptr: unsafe { src.add(j * block + done) },
                len,
            })?;
            for from in (0..self.n()).filter(|&i| i != self.me()) {
                // SAFETY: member `from` sent `len` bytes; our destination block
                // `from` holds `block` bytes.
                unsafe { std::ptr::copy_nonoverlapping(inbox.from(from), dst.add(from * block + done), len) };
            }
            done += len;
            step += 1;
        }
        Ok(())
    }
}
