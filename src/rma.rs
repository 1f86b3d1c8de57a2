//! One-sided data movement: `put`, `get`, and the local accessors. Every
//! call checks the target rank and the index range first
//! ([`World::checked_offset`]), so a bad argument is an `Err` with the
//! numbers, never a stray write; then it is one transport primitive (see
//! `links::primitives`).

use crate::ctx::Endpoint;
use crate::error::{Error, Result};
use crate::links::Channel;
use crate::profile::{self, Family};
use crate::race::{self, check::Kind, ops};
use crate::sym::{Pod, Sym};
use crate::world::World;

/// Puts and gets, blocking and non-blocking, with the calls that order
/// and complete them, on an [`Endpoint`]: the [`World`] (its default
/// context) or a [`Ctx`](crate::Ctx). Written once, for both.
pub trait Rma: Endpoint {
    /// Writes `src` into `target`'s copy of `sym`, starting at element `index`.
    ///
    /// Returns when `src` may be reused. The data is complete at the target
    /// after [`quiet`](Rma::quiet), and visible to it after a
    /// [`barrier`](World::barrier) (see the crate docs).
    // Always inlined: the shared-memory path is a few checks and a copy, and
    // a call per 8-byte put doubles its cost (measured with examples/bench).
    #[inline(always)]
    #[track_caller]
    fn put<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, src: &[T]) -> Result<()> {
        // An argument error is placed at the program's call by hand: a
        // `located` wrapper cost an 8-byte shared-memory put 3 ns, a third
        // (the data path's own errors name the ranks instead).
        let at = std::panic::Location::caller();
        let w = self.world();
        profile::leaf!(Family::Put, Some(target), std::mem::size_of_val(src), |races| {
            let offset = w
                .checked_offset("put", sym, target, index, src.len())
                .map_err(|e| e.located_at(at))?;
            if races {
                race::put(
                    at,
                    target,
                    offset,
                    std::mem::size_of_val(src),
                    (ops::PUT, self.channel().race_id()),
                );
            }
            w.links
                .copy_in(self.channel(), target, offset, bytemuck::cast_slice(src))
        })
    }

    /// Reads `dst.len()` elements of `target`'s copy of `sym`, from element `index`.
    ///
    /// Returns with the data in `dst`.
    #[inline(always)]
    #[track_caller]
    fn get<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, dst: &mut [T]) -> Result<()> {
        let at = std::panic::Location::caller();
        let w = self.world();
        profile::leaf!(Family::Get, Some(target), std::mem::size_of_val(dst), |races| {
            let offset = w
                .checked_offset("get", sym, target, index, dst.len())
                .map_err(|e| e.located_at(at))?;
            if races {
                race::get(at, target, offset, std::mem::size_of_val(dst), self.channel().race_id());
            }
            w.links
                .copy_out(self.channel(), target, offset, bytemuck::cast_slice_mut(dst))
        })
    }

    /// Puts one value.
    #[track_caller]
    fn put_value<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, value: T) -> Result<()> {
        self.put(sym, target, index, std::slice::from_ref(&value))
    }

    /// Gets one value.
    #[track_caller]
    fn get_value<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize) -> Result<T> {
        let mut value = T::zeroed();
        self.get(sym, target, index, std::slice::from_mut(&mut value))?;
        Ok(value)
    }

    /// Writes `src` into `target`'s copy of `sym` from `index`, without
    /// waiting: `src` is copied or staged before this returns, and the put
    /// is complete at the target after the next [`quiet`](Rma::quiet).
    #[track_caller]
    fn put_nbi<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, src: &[T]) -> Result<()> {
        let at = std::panic::Location::caller();
        let w = self.world();
        profile::leaf!(Family::PutNbi, Some(target), std::mem::size_of_val(src), |races| {
            let offset = w
                .checked_offset("put_nbi", sym, target, index, src.len())
                .map_err(|e| e.located_at(at))?;
            if races {
                race::put(
                    at,
                    target,
                    offset,
                    std::mem::size_of_val(src),
                    (ops::PUT_NBI, self.channel().race_id()),
                );
            }
            w.links
                .copy_in_nbi(self.channel(), target, offset, bytemuck::cast_slice(src))
        })
    }

    /// [`put_nbi`](Rma::put_nbi) from a buffer the caller keeps unchanged
    /// until the next quiet (the C API's `shmem_put_nbi`, as OpenSHMEM
    /// defines it): over libfabric a put larger than its bounce buffer
    /// is then posted from `src` itself and completes at quiet, so a
    /// window of them is posted at once and waited for once.
    ///
    /// # Safety
    /// `src` must be valid for `len` elements of reads, and nothing may
    /// write it, until this endpoint's next `quiet` returns.
    #[track_caller]
    unsafe fn put_nbi_from<T: Pod>(
        &self,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        src: *const T,
        len: usize,
    ) -> Result<()> {
        let at = std::panic::Location::caller();
        let w = self.world();
        let bytes = len * std::mem::size_of::<T>();
        profile::leaf!(Family::PutNbi, Some(target), bytes, |races| {
            let offset = w
                .checked_offset("put_nbi", sym, target, index, len)
                .map_err(|e| e.located_at(at))?;
            if races {
                race::put(at, target, offset, bytes, (ops::PUT_NBI, self.channel().race_id()));
                race::nbi_buffer(at, src as usize, bytes, race::Use::Reads, ops::PUT_NBI);
            }
            // SAFETY: forwarded from this function's contract.
            unsafe {
                w.links
                    .copy_in_nbi_from(self.channel(), target, offset, src.cast(), bytes)
            }
        })
    }

    /// Starts reading `len` elements of `target`'s copy of `sym` from
    /// `index` into `dst`, which is filled after the next
    /// [`quiet`](Rma::quiet) of this endpoint. For bindings whose callers
    /// keep the buffer alive themselves (the C API's `shmem_get_nbi`); Rust
    /// code uses the scoped [`World::nbi`].
    ///
    /// # Safety
    /// `dst` must be valid for `len` elements of writes, and nothing may
    /// read or write it, until this endpoint's next `quiet` returns.
    #[track_caller]
    unsafe fn get_nbi<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, dst: *mut T, len: usize) -> Result<()> {
        let at = std::panic::Location::caller();
        let w = self.world();
        let bytes = len * std::mem::size_of::<T>();
        profile::leaf!(Family::GetNbi, Some(target), bytes, |races| {
            let offset = w
                .checked_offset("get_nbi", sym, target, index, len)
                .map_err(|e| e.located_at(at))?;
            if races {
                race::remote(
                    at,
                    (target, self.channel().race_id()),
                    (offset, bytes),
                    (Kind::Read, ops::GET_NBI),
                    false,
                );
                race::nbi_buffer(at, dst as usize, bytes, race::Use::Writes, ops::GET_NBI);
            }
            // SAFETY: forwarded from this function's contract.
            unsafe { w.links.copy_out_nbi(self.channel(), target, offset, dst.cast(), bytes) }
        })
    }

    /// Orders this endpoint's earlier puts, signals and non-fetching
    /// atomics to each target before its later ones to the same target.
    #[track_caller]
    fn fence(&self) -> Result<()> {
        profile::leaf!(Family::Fence, None, 0, |races| {
            if races {
                race::release(false, self.channel().race_id());
            }
            self.world().links.fence_on(self.channel())
        })
    }

    /// Completes every earlier put, non-blocking get and non-fetching
    /// atomic of this endpoint at its target (see the crate docs, "Threads
    /// and contexts", for what it says about other contexts).
    #[inline]
    #[track_caller]
    fn quiet(&self) -> Result<()> {
        profile::leaf!(Family::Quiet, None, 0, |races| {
            let quiet = self.world().links.quiet_on(self.channel());
            if races {
                race::release(true, self.channel().race_id());
            }
            quiet
        })
    }

    /// Completes this endpoint's earlier puts, non-blocking gets and
    /// non-fetching atomics to the ranks in `targets` only (OpenSHMEM
    /// 1.6's `pe_quiet`). Over TCP only those peers are asked for an
    /// acknowledgement, so it costs less than [`quiet`](Rma::quiet) when
    /// the endpoint wrote to others; elsewhere it is a quiet.
    #[track_caller]
    fn pe_quiet(&self, targets: &[usize]) -> Result<()> {
        crate::error::located(|| {
            let w = self.world();
            for &target in targets {
                w.check_rank("pe_quiet", target)?;
            }
            w.links.quiet_pes_on(self.channel(), targets)?;
            if crate::race::on() {
                race::release(true, self.channel().race_id());
            }
            Ok(())
        })
    }

    /// Pushes out this endpoint's batched puts, signals and non-fetching
    /// atomics without waiting for them to complete (the end of an
    /// OpenSHMEM 1.6 communication session): they reach their targets
    /// without another call of this rank.
    #[track_caller]
    fn flush(&self) -> Result<()> {
        crate::error::located(|| self.world().links.send_batch_of(self.channel()))
    }

    /// Puts `nblocks` blocks of `block` elements (OpenSHMEM 1.6's
    /// `ibput`): block `b` is `src[b * src_stride..][..block]` and lands at
    /// element `index + b * dst_stride` of `target`'s copy of `sym`. Every
    /// block is checked before any is written; returns when `src` may be
    /// reused.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    fn ibput<T: Pod>(
        &self,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        dst_stride: usize,
        src: &[T],
        src_stride: usize,
        block: usize,
        nblocks: usize,
    ) -> Result<()> {
        crate::error::located(|| {
            let w = self.world();
            let blocks = Blocks { block, nblocks };
            blocks.check(w, "ibput", src.len(), src_stride)?;
            blocks.check_remote(w, "ibput", sym, target, index, dst_stride)?;
            for b in 0..nblocks {
                self.put(sym, target, index + b * dst_stride, &src[b * src_stride..][..block])?;
            }
            Ok(())
        })
    }

    /// Gets `nblocks` blocks of `block` elements (OpenSHMEM 1.6's
    /// `ibget`), the mirror of [`ibput`](Rma::ibput): block `b` of
    /// `target`'s `sym` from element `index + b * src_stride` lands at
    /// `dst[b * dst_stride..][..block]`.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    fn ibget<T: Pod>(
        &self,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        src_stride: usize,
        dst: &mut [T],
        dst_stride: usize,
        block: usize,
        nblocks: usize,
    ) -> Result<()> {
        crate::error::located(|| {
            let w = self.world();
            let blocks = Blocks { block, nblocks };
            blocks.check(w, "ibget", dst.len(), dst_stride)?;
            blocks.check_remote(w, "ibget", sym, target, index, src_stride)?;
            for b in 0..nblocks {
                self.get(sym, target, index + b * src_stride, &mut dst[b * dst_stride..][..block])?;
            }
            Ok(())
        })
    }
}

/// The shape of a blocked strided transfer (`ibput`, `ibget`).
struct Blocks {
    block: usize,
    nblocks: usize,
}

impl Blocks {
    /// The elements from the first block's start to the last block's end
    /// at `stride`, or `None` on overflow; 0 for no blocks.
    fn span(&self, stride: usize) -> Option<usize> {
        match self.nblocks {
            0 => Some(0),
            n => (n - 1).checked_mul(stride)?.checked_add(self.block),
        }
    }

    /// Checks that a local buffer of `len` elements holds every block.
    fn check(&self, w: &World, op: &'static str, len: usize, stride: usize) -> Result<()> {
        match self.span(stride) {
            Some(span) if span <= len => Ok(()),
            _ => Err(w.out_of_range(op, 0, self.span(stride).unwrap_or(usize::MAX), len)),
        }
    }

    /// Checks every block's range of `target`'s copy of `sym` from `index`.
    fn check_remote<T: Pod>(
        &self,
        w: &World,
        op: &'static str,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        stride: usize,
    ) -> Result<()> {
        let span = self.span(stride).unwrap_or(usize::MAX);
        w.checked_offset(op, sym, target, index, span).map(|_| ())
    }
}

impl Rma for World {}
impl Rma for crate::Ctx<'_> {}
impl Rma for crate::ctx::AnyEndpoint<'_> {}

impl World {
    /// Copies this rank's own elements `[index, index + dst.len())` of `sym` into `dst`.
    /// Not communication, so a profile does not count it.
    #[track_caller]
    pub fn local_read<T: Pod>(&self, sym: &Sym<T>, index: usize, dst: &mut [T]) -> Result<()> {
        let at = std::panic::Location::caller();
        crate::error::located(|| {
            let offset = self.checked_offset("local_read", sym, self.rank, index, dst.len())?;
            if crate::race::on() {
                race::local(at, (offset, std::mem::size_of_val(dst)), Kind::Read, ops::LOCAL_READ);
            }
            self.links
                .copy_out(Channel::Default, self.rank, offset, bytemuck::cast_slice_mut(dst))
        })
    }

    /// Writes `src` into this rank's own elements of `sym`, from `index`.
    #[track_caller]
    pub fn local_write<T: Pod>(&self, sym: &Sym<T>, index: usize, src: &[T]) -> Result<()> {
        let at = std::panic::Location::caller();
        crate::error::located(|| {
            let offset = self.checked_offset("local_write", sym, self.rank, index, src.len())?;
            if crate::race::on() {
                race::local(at, (offset, std::mem::size_of_val(src)), Kind::Write, ops::LOCAL_WRITE);
            }
            self.links
                .copy_in(Channel::Default, self.rank, offset, bytemuck::cast_slice(src))
        })
    }

    /// This rank's whole copy of `sym`, as a vector.
    #[track_caller]
    pub fn local_to_vec<T: Pod>(&self, sym: &Sym<T>) -> Result<Vec<T>> {
        crate::error::located_call(|| {
            let mut out = vec![T::zeroed(); sym.len()];
            self.local_read(sym, 0, &mut out)?;
            Ok(out)
        })
    }

    /// Borrows this rank's copy of `sym` as a slice, without copying.
    ///
    /// # Safety
    /// No put from any rank may target this object while the slice lives: a
    /// remote write under a live `&[T]` is a data race. Take the slice after a
    /// barrier and drop it before the next one, in a phase where the program
    /// sends no puts to this object (the OpenSHMEM rule for local access).
    #[track_caller]
    pub unsafe fn local_slice<'a, T: Pod>(&'a self, sym: &'a Sym<T>) -> Result<&'a [T]> {
        let at = std::panic::Location::caller();
        crate::error::located(|| {
            let ptr = self.local_ptr("local_slice", sym, 0, sym.len())?;
            if crate::race::on() {
                race::local(
                    at,
                    (sym.byte_offset(0), sym.len() * std::mem::size_of::<T>()),
                    Kind::Read,
                    ops::LOCAL_READ,
                );
            }
            // SAFETY: the range is checked, aligned (heap offsets are 64-byte
            // aligned, T is Pod), and the mapping outlives 'a because `self`
            // owns it; exclusivity is the caller's contract.
            Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<T>(), sym.len()) })
        })
    }

    /// Borrows this rank's copy of `sym` mutably, without copying.
    ///
    /// The `&mut Sym` borrow stops this process from using `sym` in any other
    /// way (no put, get or second view) while the slice lives.
    ///
    /// # Safety
    /// As for [`local_slice`](World::local_slice): no other rank may put to or
    /// get from this object while the slice lives.
    #[track_caller]
    pub unsafe fn local_slice_mut<'a, T: Pod>(&'a self, sym: &'a mut Sym<T>) -> Result<&'a mut [T]> {
        let at = std::panic::Location::caller();
        crate::error::located(|| {
            let ptr = self.local_ptr("local_slice_mut", sym, 0, sym.len())?;
            if crate::race::on() {
                race::local(
                    at,
                    (sym.byte_offset(0), sym.len() * std::mem::size_of::<T>()),
                    Kind::Write,
                    ops::LOCAL_WRITE,
                );
            }
            // SAFETY: as in `local_slice`; `&mut Sym` makes the view unique here.
            Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<T>(), sym.len()) })
        })
    }

    /// Checks the arguments of an access to `count` elements of `target`'s
    /// copy of `sym` from `index`, and returns its heap byte offset.
    #[inline(always)]
    pub(crate) fn checked_offset<T: Pod>(
        &self,
        op: &'static str,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        count: usize,
    ) -> Result<usize> {
        self.check_rank(op, target)?;
        self.check_object(op, sym)?;
        if index.checked_add(count).is_none_or(|end| end > sym.len()) {
            return Err(self.out_of_range(op, index, count, sym.len()));
        }
        Ok(sym.byte_offset(index))
    }

    /// A pointer to this rank's own elements `[index, index + count)`, checked.
    pub(crate) fn local_ptr<T: Pod>(
        &self,
        op: &'static str,
        sym: &Sym<T>,
        index: usize,
        count: usize,
    ) -> Result<*mut u8> {
        let offset = self.checked_offset(op, sym, self.rank, index, count)?;
        // SAFETY: the object lies inside the heap (the allocator only hands
        // out in-heap ranges) and [index, index+count) inside the object.
        Ok(unsafe { self.own.heap_base().add(offset) })
    }

    #[cold]
    pub(crate) fn out_of_range(&self, op: &'static str, index: usize, count: usize, len: usize) -> Error {
        Error::IndexOutOfRange {
            rank: self.rank,
            op,
            index,
            count,
            len,
        }
    }
}
