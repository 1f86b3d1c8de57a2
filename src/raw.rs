//! Address-based access, for bindings to languages that name symmetric
//! objects by pointer (the OpenSHMEM C API): the object at a local address,
//! the local address of an object, aligned allocation and `shmem_ptr`.
//!
//! A symmetric address is one inside this rank's heap or, when
//! [`Options::symmetric_globals`](crate::Options) is set, inside the
//! program's global data (`globals`); the same offset from the start of
//! that region names the same object on every rank.

use crate::error::{Error, Result};
use crate::sym::{Pod, Sym};
use crate::world::World;

impl World {
    /// The heap offset of `[addr, addr + bytes)`, if it is symmetric.
    #[inline]
    pub fn offset_of(&self, addr: usize, bytes: usize) -> Option<usize> {
        let heap = self.own.heap_base() as usize;
        let heap_len = self.own.alloc_len();
        if addr >= heap && addr.saturating_add(bytes) <= heap + heap_len {
            return Some(addr - heap);
        }
        match self.data {
            Some(range) if range.contains(addr, bytes) => Some(heap_len + (addr - range.start)),
            _ => None,
        }
    }

    /// The symmetric object of `len` elements at this rank's address `addr`.
    ///
    /// # Safety
    /// The returned handle aliases whatever else names those bytes; the
    /// caller must not use it, or any handle overlapping it, for
    /// [`World::local_slice_mut`] or [`World::free`] unless it came from the
    /// matching allocation.
    #[inline]
    #[track_caller]
    pub unsafe fn sym_at<T: Pod>(&self, op: &'static str, addr: *const T, len: usize) -> Result<Sym<T>> {
        // Not `located`: the C API calls this on every transfer (and places
        // its errors at the C caller itself).
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        if bytes == 0 {
            // An empty object names no memory: any address will do, as
            // OpenSHMEM allows NULL for zero-length transfers.
            return Ok(Sym::new(0, 0, self.id));
        }
        match self.offset_of(addr as usize, bytes) {
            Some(offset) if self.debug.is_some() => self
                .in_one_object(op, offset, bytes)
                .map(|_| Sym::new(offset, len, self.id)),
            Some(offset) => Ok(Sym::new(offset, len, self.id)),
            None => Err(self.not_symmetric(op, addr as usize, bytes)),
        }
    }

    /// The checking mode's bound check for symmetric global data: a range
    /// that starts in a global of the executable's symbol table must end in
    /// it, not run on into the next one.
    #[cold]
    fn in_one_global(&self, op: &'static str, offset: usize, bytes: usize) -> Result<()> {
        let Some(data) = self.data else { return Ok(()) };
        let addr = data.start + (offset - self.own.alloc_len());
        let Some((name, at, size)) = crate::watch::symbols::global_at(addr) else {
            return Ok(());
        };
        if at + bytes <= size {
            return Ok(());
        }
        let past = at + bytes - size;
        let into = match crate::watch::symbols::global_at(addr + size - at) {
            Some((next, _, _)) if next != name => format!(", into the global '{next}'"),
            _ => String::new(),
        };
        Err(Error::Check {
            rank: self.rank,
            call: crate::watch::current_call().unwrap_or(op).to_string(),
            at: crate::watch::here(),
            detail: format!(
                "the range of {bytes} bytes from byte {at} of the global '{name}' ({size} bytes) runs past its end by {past} bytes{into}"
            ),
        })
    }

    /// The checking mode's bound check: a heap range must lie inside one
    /// allocated object, not merely inside the heap.
    #[cold]
    fn in_one_object(&self, op: &'static str, offset: usize, bytes: usize) -> Result<()> {
        if offset >= self.own.alloc_len() {
            return self.in_one_global(op, offset, bytes);
        }
        let heap = crate::sync::lock(&self.heap);
        if heap.holding(offset, bytes).is_some() {
            return Ok(());
        }
        let detail = match heap.holding(offset, 1) {
            Some((start, len)) => format!(
                "the range at heap offset {offset} of {bytes} bytes runs past the end of its object (heap offset {start}, {len} bytes) by {} bytes",
                offset + bytes - (start + len)
            ),
            None => format!("heap offset {offset} ({bytes} bytes) is in no allocated object (freed, or never allocated)"),
        };
        Err(Error::Check {
            rank: self.rank,
            call: crate::watch::current_call().unwrap_or(op).to_string(),
            at: crate::watch::here(),
            detail,
        })
    }

    #[cold]
    fn not_symmetric(&self, op: &'static str, addr: usize, bytes: usize) -> Error {
        Error::NotSymmetric {
            rank: self.rank,
            op,
            addr,
            bytes,
        }
    }

    /// This rank's address of `sym`'s first element.
    pub fn address_of<T: Pod>(&self, sym: &Sym<T>) -> *mut T {
        self.own.heap_base().wrapping_add(sym.offset).cast()
    }

    /// Where this process can load and store `target`'s copy of the
    /// symmetric address `addr` directly (OpenSHMEM's `shmem_ptr`): on
    /// this rank and on same-host peers whose memory is mapped.
    pub fn peer_address(&self, addr: usize, target: usize) -> Option<*mut u8> {
        let offset = self.offset_of(addr, 1)?;
        // This rank's own copy is `addr` itself: a symmetric global's offset
        // lies past the heap, so it is not `heap base + offset` here.
        if target == self.rank {
            return Some(addr as *mut u8);
        }
        Some(self.links.map_base(target)?.wrapping_add(offset))
    }

    /// The memory this process reaches by loads and stores, for bindings
    /// that want to skip a call on that path (the C API's inline
    /// functions in `shmem.h`). The map stays valid until
    /// [`World::finalize`]; an address outside it, or a rank without a
    /// base, must take the ordinary call.
    pub fn direct_map(&self) -> DirectMap {
        let data = self.data.unwrap_or(crate::globals::DataRange { start: 0, len: 0 });
        DirectMap {
            heap: self.own.heap_base() as usize,
            heap_len: self.own.alloc_len(),
            data: data.start,
            data_len: data.len,
            bases: (0..self.size)
                // A peer not mapped yet takes the ordinary call, which maps it.
                .map(|rank| self.links.mapped_base(rank).unwrap_or(std::ptr::null_mut()))
                .collect(),
            cpu_atomics: !self.links.nic_atomics(),
            quiet_is_fence: self.links.quiet_is_a_fence(),
        }
    }

    /// Like [`World::alloc`], with the first element aligned to `align`
    /// bytes (a power of two); collective.
    #[track_caller]
    pub fn alloc_aligned<T: Pod>(&self, len: usize, align: usize) -> Result<Sym<T>> {
        crate::error::located(|| {
            let bytes = len.saturating_mul(std::mem::size_of::<T>());
            let offset = self.alloc_offset(bytes, align)?;
            Ok(Sym::new(offset, len, self.id))
        })
    }
}

/// See [`World::direct_map`]. Offsets follow [`World::offset_of`]: an
/// address in `[heap, heap + heap_len)` is at `addr - heap`, one in
/// `[data, data + data_len)` at `heap_len + (addr - data)`; rank `r`'s copy
/// of an offset is at `bases[r] + offset` when `bases[r]` is not null.
#[derive(Debug, Clone)]
pub struct DirectMap {
    /// This rank's heap, and its length in bytes.
    pub heap: usize,
    pub heap_len: usize,
    /// The program's symmetric global data (length 0 when there is none).
    pub data: usize,
    pub data_len: usize,
    /// Per rank, the base its offsets are added to, or null when that
    /// rank's memory is not mapped into this process.
    pub bases: Vec<*mut u8>,
    /// Whether atomics on mapped memory are CPU atomics (sequentially
    /// consistent); false in a job whose atomics all go through a NIC.
    pub cpu_atomics: bool,
    /// Whether `quiet` is only a sequentially consistent fence (no rank
    /// is reached by TCP or RDMA), and `fence` only a release fence.
    pub quiet_is_fence: bool,
}
