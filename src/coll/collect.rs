//! `fcollect` (every member contributes the same count) and `collect`
//! (counts differ): every member's source, concatenated in member order,
//! into every member's destination (MPI's allgather and allgatherv).

use super::exchange::Bytes;
use super::plan::{self, MoveAlgo};
use super::Coll;
use crate::error::Result;
use crate::sym::{Pod, Sym};
use crate::team::Team;
use crate::world::World;
use std::mem::size_of;

impl World {
    /// Concatenates the first `n` elements of `src` of every member, in
    /// member order, into `dst` on every member (`shmem_fcollect`). `dst`
    /// needs `n * team.n_pes()` elements and must not overlap `src`.
    pub fn fcollect<T: Pod>(&self, team: &Team, dst: &Sym<T>, src: &Sym<T>, n: usize) -> Result<()> {
        let c = Coll::begin(self, team, "fcollect")?;
        let total = n.saturating_mul(c.n());
        let (dst_off, src_off) = c.disjoint(dst, src, total, n)?;
        let bytes = n * size_of::<T>();
        let blocks: Vec<(usize, usize)> = (0..c.n()).map(|i| (i * bytes, bytes)).collect();
        c.gather(&blocks, dst_off, src_off, 1)
    }

    /// Concatenates the first `n` elements of `src` of every member, where
    /// `n` may differ between members, in member order into `dst` on every
    /// member (`shmem_collect`). Returns the number of elements gathered.
    /// `dst` must hold them all and must not overlap `src`.
    pub fn collect<T: Pod>(&self, team: &Team, dst: &Sym<T>, src: &Sym<T>, n: usize) -> Result<usize> {
        let c = Coll::begin(self, team, "collect")?;
        let src_off = self.checked_offset("collect", src, self.rank, 0, n)?;
        let mine = n as u64;
        let inbox = c.exchange(1, |_| Bytes::of(std::slice::from_ref(&mine)))?;
        let counts: Vec<usize> = (0..c.n())
            .map(|i| match i == c.me() {
                true => n,
                // SAFETY: every member sent one u64 in this round.
                false => unsafe { inbox.from(i).cast::<u64>().read() as usize },
            })
            .collect();
        let total: usize = counts.iter().sum();
        if total > dst.len() {
            return Err(c.bad(format!(
                "the members contribute {total} elements in all ({counts:?}), but the destination holds {}",
                dst.len()
            )));
        }
        let (dst_off, _) = c.disjoint(dst, src, total, n)?;
        let size = size_of::<T>();
        let mut at = 0;
        let blocks: Vec<(usize, usize)> = counts
            .iter()
            .map(|&count| {
                at += count * size;
                (at - count * size, count * size)
            })
            .collect();
        c.gather(&blocks, dst_off, src_off, 2)?;
        Ok(total)
    }
}

impl Coll<'_> {
    /// Member i's `blocks[i].1` source bytes go to `blocks[i].0` bytes into
    /// every member's destination. Uses steps `first` and `first + 1`.
    fn gather(&self, blocks: &[(usize, usize)], dst_off: usize, src_off: usize, first: u64) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        let (at, len) = blocks[me];
        // SAFETY: our source and destination are checked and disjoint.
        unsafe { std::ptr::copy_nonoverlapping(self.own(src_off), self.own(dst_off + at), len) };
        let largest = blocks.iter().map(|b| b.1).max().unwrap_or(0);
        match plan::movement(self, largest) {
            MoveAlgo::Exchange => {
                let mine = Bytes {
                    ptr: self.own(src_off),
                    len,
                };
                let inbox = self.exchange(first, |_| mine)?;
                for (i, &(at, len)) in blocks.iter().enumerate().filter(|&(i, _)| i != me) {
                    // SAFETY: member i sent `len` bytes this round; the
                    // destination range is ours and inside the checked object.
                    unsafe { std::ptr::copy_nonoverlapping(inbox.from(i), self.own(dst_off + at), len) };
                }
            }
            MoveAlgo::Pull => {
                self.notify_all(first)?;
                self.wait_all(first)?;
                for k in 1..n {
                    let i = (me + k) % n;
                    let (at, len) = blocks[i];
                    let base = self.mapped(i).expect("a mapped team");
                    // SAFETY: member i's source holds `len` bytes and stays
                    // put until we notify `first + 1`.
                    unsafe { std::ptr::copy_nonoverlapping(base.add(src_off), self.own(dst_off + at), len) };
                }
                self.notify_all(first + 1)?;
                self.wait_all(first + 1)?;
            }
            MoveAlgo::Push => {
                for k in 1..n {
                    let to = (me + k) % n;
                    if len > 0 {
                        self.forward(to, dst_off + at, src_off, len)?;
                    }
                    self.notify(to, first)?;
                }
                self.wait_all(first)?;
            }
        }
        Ok(())
    }
}
