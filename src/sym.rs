//! Typed handles to symmetric objects.

use std::marker::PhantomData;

pub use bytemuck::Pod;

/// A symmetric array of `len` elements of `T`, at the same heap offset on every rank.
///
/// Created by the collective [`World::alloc`](crate::World::alloc) and given
/// back with [`World::free`](crate::World::free). It is neither `Clone` nor
/// `Copy`, so a freed object can never be used again, and a mutable local
/// view ([`World::local_slice_mut`](crate::World::local_slice_mut)) excludes
/// every other use of the object while it lives.
#[derive(Debug)]
pub struct Sym<T: Pod> {
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) world_id: u64,
    _elem: PhantomData<fn() -> T>,
}

impl<T: Pod> Sym<T> {
    pub(crate) fn new(offset: usize, len: usize, world_id: u64) -> Sym<T> {
        Sym {
            offset,
            len,
            world_id,
            _elem: PhantomData,
        }
    }

    /// Number of elements on each rank.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the object has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte offset of element `index` from the start of the heap.
    pub(crate) fn byte_offset(&self, index: usize) -> usize {
        self.offset + index * std::mem::size_of::<T>()
    }
}
