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
use crate::transport::Path;
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
    pub unsafe fn sym_at<T: Pod>(&self, op: &'static str, addr: *const T, len: usize) -> Result<Sym<T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        if bytes == 0 {
            // An empty object names no memory: any address will do, as
            // OpenSHMEM allows NULL for zero-length transfers.
            return Ok(Sym::new(0, 0, self.id));
        }
        match self.offset_of(addr as usize, bytes) {
            Some(offset) => Ok(Sym::new(offset, len, self.id)),
            None => Err(self.not_symmetric(op, addr as usize, bytes)),
        }
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
        match self.paths.get(target)? {
            Path::Local => Some(addr as *mut u8),
            Path::Shm(segment) => Some(segment.heap_base().wrapping_add(offset)),
            Path::Tcp(_) | Path::Verbs => None,
        }
    }

    /// Like [`World::alloc`], with the first element aligned to `align`
    /// bytes (a power of two); collective.
    pub fn alloc_aligned<T: Pod>(&self, len: usize, align: usize) -> Result<Sym<T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        let offset = self.alloc_offset(bytes, align)?;
        Ok(Sym::new(offset, len, self.id))
    }
}
