//! The symmetric heap's collective calls on `World`: `alloc`, `free`, the
//! growth an allocation may need between them, and the heap's query.
//!
//! Each rank's heap is a reservation of address space (`heap::reserve`)
//! of which only the committed part has memory. An allocation the
//! allocator places past the committed extent, or over a range given
//! back, first commits that memory on every rank (`segment::commit`);
//! every rank plans the same growth (`heap::extent` is deterministic), so
//! offsets stay symmetric. A commit can fail on one rank only (its host
//! is short of memory), so a growing allocation ends with a vote, a
//! reduction of every rank's outcome, which also serves as the barrier
//! the allocation ends with: no extra collective. When any rank failed,
//! every rank undoes the growth and returns the same error.

use crate::coll::ops::Max;
use crate::error::{Error, Result};
use crate::heap::extent::Growth;
use crate::heap::Exhausted;
use crate::segment::room::Limit;
use crate::segment::Shortfall;
use crate::sym::{Pod, Sym};
use crate::world::World;

/// The heap's size, cap and use on this rank (the same on every rank),
/// without the runtime's own areas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeapInfo {
    /// Bytes committed now: the heap's current size.
    pub size: usize,
    /// The most the heap may grow to: the cap, or the reservation.
    pub cap: usize,
    /// Whether `cap` was set by the user (`ONESIDE_HEAP_SIZE`,
    /// `rlaunch --heap-size`, `SHMEM_SYMMETRIC_SIZE`).
    pub capped: bool,
    /// Bytes live objects hold (each rounded up to 64 bytes).
    pub used: usize,
}

impl HeapInfo {
    /// Bytes that may still be allocated, if the host has the memory
    /// (free space may be split in several blocks).
    pub fn free(&self) -> usize {
        self.cap.saturating_sub(self.used)
    }
}

/// A rank's outcome in the vote: 0, or its shortfall, so that the
/// largest code (a reduction's `Max`) names one rank that failed.
fn vote_code(rank: usize, outcome: &std::result::Result<(), Shortfall>) -> u64 {
    match outcome {
        Ok(()) => 0,
        Err(short) => {
            let mib = (short.available >> 20).min((1 << 37) - 1);
            // The lowest failing rank wins the Max: its complement is stored.
            let rank_bits = (1 << 24) - 1 - (rank as u64).min((1 << 24) - 1);
            (short.limit.code() << 62) | (u64::from(short.simulated) << 61) | (mib << 24) | rank_bits
        }
    }
}

/// The refusal a nonzero vote code names: (limit, bytes left, simulated,
/// rank), the inverse of [`vote_code`].
fn refusal(code: u64) -> (Limit, u64, bool, usize) {
    let limit = Limit::from_code(code >> 62).unwrap_or(Limit::Memory);
    let available = ((code >> 24) & ((1 << 37) - 1)) << 20;
    let rank = ((1 << 24) - 1 - (code & ((1 << 24) - 1))) as usize;
    (limit, available, (code >> 61) & 1 == 1, rank)
}

impl World {
    /// Collectively allocates `len` zeroed elements on every rank.
    ///
    /// Every rank must call `alloc` and `free` in the same order with the same
    /// lengths, as with `shmem_malloc`. Ends with a barrier, so the object is
    /// zeroed everywhere before anyone can put into it. The heap grows
    /// here if it must ([`HeapInfo`]).
    #[track_caller]
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<Sym<T>> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("alloc");
            let bytes = len.saturating_mul(std::mem::size_of::<T>());
            let offset = self.alloc_offset(bytes, crate::heap::ALIGN)?;
            Ok(Sym::new(offset, len, self.id))
        })
    }

    /// The heap's current size, its cap and what is in use.
    pub fn heap_info(&self) -> HeapInfo {
        // The runtime's areas end with the vote's words.
        let areas = self.vote_at + crate::world::VOTE_BYTES;
        let used = crate::sync::lock(&self.heap).used();
        let size = crate::sync::lock(&self.extent).extent();
        HeapInfo {
            size: size.saturating_sub(areas),
            cap: self.heap_cap.unwrap_or(self.own.alloc_len().saturating_sub(areas)),
            capped: self.heap_cap.is_some(),
            used: used.saturating_sub(areas),
        }
    }

    /// Whether this rank's NIC registers the heap as it grows (verbs; ofi
    /// with a provider that pins memory, or `ONESIDE_OFI_REGISTER=parts`):
    /// the same on every rank. For tests of that registration.
    #[doc(hidden)]
    pub fn heap_registered(&self) -> bool {
        self.links.registers_memory()
    }

    /// The most `alloc` can hand out, in bytes: [`HeapInfo::cap`].
    pub fn heap_size(&self) -> usize {
        self.heap_info().cap
    }

    /// Reserves `bytes` at an address aligned to `align`, commits and
    /// zeroes them, then meets every rank; returns the heap offset.
    pub(crate) fn alloc_offset(&self, bytes: usize, align: usize) -> Result<usize> {
        let _span = crate::profile::span(crate::profile::Family::Alloc);
        if self.debug.is_some() {
            crate::debug::outer("alloc", bytes);
        }
        let limit = crate::segment::mapping::HEAP_ALIGN;
        if align > limit {
            return Err(Error::BadAlignment {
                rank: self.rank,
                align,
                max: limit,
            });
        }
        // Every rank's segment starts at a multiple of HEAP_ALIGN, so the
        // base modulo it is the same everywhere, and so is every offset.
        let base = self.own.heap_base() as usize % limit;
        let placed = {
            let mut heap = crate::sync::lock(&self.heap);
            heap.alloc_aligned(bytes, align, base).map(|offset| {
                let reserved = heap.block(offset).unwrap_or(bytes);
                (offset, crate::sync::lock(&self.extent).needs(offset, reserved))
            })
        };
        let (offset, growth) = placed.map_err(|e| self.full(e))?;
        if growth.is_empty() {
            self.zero(offset, bytes, &[]);
            self.barrier()?;
        } else {
            self.grow(offset, bytes, &growth)?;
        }
        crate::watch::allocated(offset, bytes);
        crate::race::allocated(self.own.heap_base() as usize + offset, bytes);
        Ok(offset)
    }

    /// The growth of an allocation at `offset`: commit, zero what was not
    /// fresh, vote; on success record it (and register it with the NIC),
    /// on failure undo it on every rank.
    fn grow(&self, offset: usize, bytes: usize, growth: &Growth) -> Result<()> {
        let old_extent = self.own.committed();
        let mut outcome = Ok(());
        for (i, &(start, len)) in growth.ranges.iter().enumerate() {
            outcome = self.own.commit(self.rank, start, len);
            if outcome.is_err() {
                for &(start, len) in &growth.ranges[..i] {
                    self.own.release(start, len);
                }
                break;
            }
        }
        if outcome.is_ok() {
            // Peers may reach the object as soon as they leave the vote.
            self.own.publish(growth.extent.max(old_extent));
            let fresh: &[(usize, usize)] = if self.heap_releases { &growth.ranges } else { &[] };
            self.zero(offset, bytes, fresh);
        }
        let code = self.vote(vote_code(self.rank, &outcome));
        let code = match code {
            Ok(code) => code,
            Err(e) => {
                crate::sync::lock(&self.heap).free(offset);
                return Err(e);
            }
        };
        // A NIC registers the range on every rank, or the growth fails on
        // every rank (`Links::grown`); the extent records it only then.
        let registered = match code == 0 && self.links.registers_memory() && growth.extent > old_extent {
            true => {
                let (start, len) = (old_extent, growth.extent - old_extent);
                self.links.grown(start, len, &mut |mine| self.exchange_bytes(mine))
            }
            false => Ok(()),
        };
        if code == 0 && registered.is_ok() {
            crate::sync::lock(&self.extent).grow(growth);
            return Ok(());
        }
        // Someone failed: every rank undoes what it did.
        if outcome.is_ok() {
            for &(start, len) in &growth.ranges {
                self.own.release(start, len);
            }
            self.own.publish(old_extent);
        }
        if let Err(e) = registered {
            crate::sync::lock(&self.heap).free(offset);
            return Err(e);
        }
        crate::sync::lock(&self.heap).free(offset);
        let (limit, available, simulated, short_rank) = refusal(code);
        Err(Error::HeapGrowth {
            rank: self.rank,
            requested: bytes,
            growth: growth.bytes(),
            short_rank,
            available,
            limit: limit.words(),
            simulated,
        })
    }

    /// The largest of every rank's `code`, through the two words `init`
    /// set aside for it (a reduction of a value without a symmetric
    /// object does not fit a large job's exchange).
    fn vote(&self, code: u64) -> Result<u64> {
        let (src, dst) = (
            Sym::<u64>::new(self.vote_at, 1, self.id),
            Sym::<u64>::new(self.vote_at + 8, 1, self.id),
        );
        // SAFETY: the vote's own words, which only this call uses, one
        // allocation at a time (allocations are collective).
        unsafe { self.own.heap_base().add(self.vote_at).cast::<u64>().write(code) };
        self.reduce(&self.world_team, Max, &dst, &src, 1)?;
        // SAFETY: as above; the reduction has written it.
        Ok(unsafe { self.own.heap_base().add(self.vote_at + 8).cast::<u64>().read_volatile() })
    }

    /// Zeroes `[offset, offset + bytes)` but for the `fresh` ranges (just
    /// committed, so zero already, and better left untouched).
    fn zero(&self, offset: usize, bytes: usize, fresh: &[(usize, usize)]) {
        let end = offset + bytes;
        let mut at = offset;
        let mut fresh: Vec<(usize, usize)> = fresh
            .iter()
            .copied()
            .filter(|&(s, n)| s + n > offset && s < end)
            .collect();
        fresh.sort_unstable();
        fresh.push((end, 0));
        for (start, len) in fresh {
            let stop = start.clamp(at, end);
            if stop > at {
                // SAFETY: the allocator handed out [offset, end) inside our
                // heap, committed; no other rank writes it until the barrier.
                unsafe { self.own.heap_base().add(at).write_bytes(0, stop - at) };
            }
            at = at.max((start + len).min(end));
        }
    }

    /// An allgather of up to 255 bytes per rank, for a NIC's keys, in
    /// the area `init` set aside for it (`World::keys_at`): an allocation
    /// here could land in the very range being registered, which no peer
    /// can reach yet, or grow the heap again.
    fn exchange_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let room = crate::world::KEY_ROOM;
        let Some(at) = self.keys_at.filter(|_| mine.len() < room) else {
            return Err(Error::RdmaSetup {
                rank: self.rank,
                detail: format!(
                    "a heap growth's keys take {} bytes, and the exchange has room for {} (or none)",
                    mine.len(),
                    room - 1
                ),
            });
        };
        let (src, dst) = (
            Sym::<u8>::new(at, room, self.id),
            Sym::<u8>::new(at + room, room * self.size, self.id),
        );
        // SAFETY: the exchange's own area, which only this call uses, one
        // growth at a time (allocations are collective); peers write only
        // `dst`, inside the fcollect.
        unsafe {
            let base = self.own.heap_base().add(at);
            base.write(mine.len() as u8);
            std::ptr::copy_nonoverlapping(mine.as_ptr(), base.add(1), mine.len());
        }
        self.fcollect(&self.world_team, &dst, &src, room)?;
        // SAFETY: as above; the fcollect has written every rank's bytes.
        let all = unsafe { std::slice::from_raw_parts(self.own.heap_base().add(at + room), room * self.size) };
        let all = all.chunks(room).map(|c| c[1..=usize::from(c[0])].to_vec()).collect();
        // The area is reused by the next growth: every rank has read its copy first.
        self.barrier()?;
        Ok(all)
    }

    #[cold]
    fn full(&self, e: Exhausted) -> Error {
        let info = self.heap_info();
        Error::HeapExhausted {
            rank: self.rank,
            requested: e.requested,
            largest_free: e.largest_free,
            heap_size: info.cap,
            used: info.used,
            capped: info.capped,
        }
    }

    /// The bytes reserved for the live object at heap offset `offset`.
    pub fn allocation_bytes(&self, offset: usize) -> Option<usize> {
        crate::sync::lock(&self.heap).block(offset)
    }

    /// Collectively frees an object. Starts with a barrier, so no rank is
    /// still reading or writing it. A large free range gives its memory
    /// back to the host.
    #[track_caller]
    pub fn free<T: Pod>(&self, sym: Sym<T>) -> Result<()> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("free");
            let _span = crate::profile::span(crate::profile::Family::Free);
            self.check_object("free", &sym)?;
            if self.debug.is_some() {
                crate::debug::outer("free", self.allocation_bytes(sym.offset).unwrap_or(0));
            }
            self.barrier()?;
            let Some((start, len)) = crate::sync::lock(&self.heap).free_merged(sym.offset) else {
                return Err(self.unknown("free", &sym));
            };
            crate::watch::freed(sym.offset);
            if self.heap_releases {
                let mut extent = crate::sync::lock(&self.extent);
                if let Some((start, len)) = extent.release(start, len) {
                    self.own.publish(extent.extent());
                    self.own.release(start, len);
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vote_names_the_lowest_failing_rank_and_its_room() {
        let short = Shortfall {
            limit: Limit::ShmFs,
            available: 3 << 30,
            simulated: false,
        };
        let (a, b) = (vote_code(5, &Err(short)), vote_code(2, &Err(short)));
        assert_eq!(vote_code(0, &Ok(())), 0);
        let code = a.max(b);
        assert_eq!(code, b, "rank 2 is named");
        assert_eq!(Limit::from_code(code >> 62), Some(Limit::ShmFs));
        assert_eq!(((code >> 24) & ((1 << 37) - 1)) << 20, 3 << 30);
        assert_eq!(refusal(code), (Limit::ShmFs, 3 << 30, false, 2), "decoded as encoded");
    }
}
