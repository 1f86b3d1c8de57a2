//! One-sided data movement: `put`, `get`, `quiet`, and the local accessors
//! built on them. Every call checks the target rank and the index range
//! first, so a bad argument is an `Err` with the numbers, never a stray write.

use crate::error::{Error, Result};
use crate::sym::{Pod, Sym};
use crate::transport::rdma::RdmaLink;
use crate::transport::tcp::TcpPeer;
use crate::transport::{shm, Path};
use crate::world::World;
use std::cell::RefCell;
use std::sync::atomic::{fence, Ordering};

/// Where an access lands.
enum Target<'w> {
    /// Memory mapped into this process (our own heap or a same-host peer's).
    Mapped(*mut u8),
    /// A heap offset on a peer reached over TCP.
    Remote {
        peer: usize,
        link: &'w RefCell<TcpPeer>,
        offset: usize,
    },
    /// A heap offset on a peer reached by RDMA.
    Rdma { peer: usize, offset: usize },
}

impl World {
    /// Writes `src` into `target`'s copy of `sym`, starting at element `index`.
    ///
    /// Returns when `src` may be reused. The data is complete at the target
    /// after [`quiet`](World::quiet), and visible to it after a
    /// [`barrier`](World::barrier) (see the crate docs).
    // Always inlined: the shared-memory path is a few checks and a copy, and
    // a call per 8-byte put doubles its cost (measured with examples/bench).
    #[inline(always)]
    pub fn put<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, src: &[T]) -> Result<()> {
        let bytes: &[u8] = bytemuck::cast_slice(src);
        match self.locate("put", sym, target, index, src.len())? {
            // SAFETY: `locate` checked that [index, index+len) lies inside the
            // object, hence inside the target's mapped heap; `src` is private
            // memory, so the ranges cannot overlap.
            Target::Mapped(dst) => unsafe { shm::copy(bytes.as_ptr(), dst, bytes.len()) },
            Target::Remote { peer, link, offset } => return self.put_remote(peer, link, offset, bytes),
            Target::Rdma { peer, offset } => return self.put_rdma(peer, offset, bytes),
        }
        Ok(())
    }

    /// Reads `dst.len()` elements of `target`'s copy of `sym`, from element `index`.
    ///
    /// Returns with the data in `dst`.
    #[inline(always)]
    pub fn get<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, dst: &mut [T]) -> Result<()> {
        let count = dst.len();
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst);
        match self.locate("get", sym, target, index, count)? {
            Target::Mapped(src) => {
                // SAFETY: as in `put`, with the roles of the two ranges swapped.
                unsafe { shm::copy(src, bytes.as_mut_ptr(), bytes.len()) };
                fence(Ordering::Acquire);
            }
            Target::Remote { peer, link, offset } => return self.get_remote(peer, link, offset, bytes),
            Target::Rdma { peer, offset } => return self.get_rdma(peer, offset, bytes),
        }
        Ok(())
    }

    /// The TCP branch of `put`, out of line so the shared-memory path stays small.
    #[inline(never)]
    fn put_remote(&self, peer: usize, link: &RefCell<TcpPeer>, offset: usize, bytes: &[u8]) -> Result<()> {
        link.borrow_mut()
            .put(offset, bytes)
            .map_err(|source| self.lost(peer, "put", source))
    }

    /// The TCP branch of `get`, out of line like `put_remote`.
    #[inline(never)]
    fn get_remote(&self, peer: usize, link: &RefCell<TcpPeer>, offset: usize, bytes: &mut [u8]) -> Result<()> {
        link.borrow_mut()
            .get(offset, bytes)
            .map_err(|source| self.lost(peer, "get", source))
    }

    /// The RDMA branch of `put`: an RDMA WRITE (inline or from staging).
    #[inline(never)]
    fn put_rdma(&self, peer: usize, offset: usize, bytes: &[u8]) -> Result<()> {
        self.rdma_link()
            .put(peer, offset, bytes)
            .map_err(|f| self.rdma_failed(f))
    }

    /// The RDMA branch of `get`: an RDMA READ, waited for.
    #[inline(never)]
    fn get_rdma(&self, peer: usize, offset: usize, bytes: &mut [u8]) -> Result<()> {
        self.rdma_link()
            .get(peer, offset, bytes)
            .map_err(|f| self.rdma_failed(f))
    }

    pub(crate) fn rdma_link(&self) -> &RdmaLink {
        self.rdma
            .as_ref()
            .expect("a verbs path exists only with a connected RDMA transport")
    }

    #[cold]
    pub(crate) fn rdma_failed(&self, failure: crate::transport::rdma::Failure) -> Error {
        self.broken.set(true);
        failure.into_error(self.rank)
    }

    /// Puts one value.
    pub fn put_value<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, value: T) -> Result<()> {
        self.put(sym, target, index, std::slice::from_ref(&value))
    }

    /// Gets one value.
    pub fn get_value<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize) -> Result<T> {
        let mut value = T::zeroed();
        self.get(sym, target, index, std::slice::from_mut(&mut value))?;
        Ok(value)
    }

    /// Completes every earlier put of this rank at its target.
    ///
    /// On shared memory a put is complete when its copy returns, and `quiet`
    /// orders those stores before anything this rank does next. Over RDMA it
    /// waits until every posted work request has completed. Over TCP it asks
    /// every peer written to since the last quiet for an acknowledgement
    /// (all at once), then waits for each.
    #[inline]
    pub fn quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        if let Some(rdma) = &self.rdma {
            rdma.quiet().map_err(|f| self.rdma_failed(f))?;
        }
        if self.tcp_peers.is_empty() {
            return Ok(());
        }
        self.quiet_tcp()
    }

    #[inline(never)]
    fn quiet_tcp(&self) -> Result<()> {
        let mut owed = Vec::new();
        for &peer in &self.tcp_peers {
            let link = self.tcp_link(peer);
            if link
                .borrow_mut()
                .start_quiet()
                .map_err(|source| self.lost(peer, "quiet", source))?
            {
                owed.push(peer);
            }
        }
        for peer in owed {
            self.tcp_link(peer)
                .borrow_mut()
                .finish_quiet()
                .map_err(|source| self.lost(peer, "quiet", source))?;
        }
        Ok(())
    }

    fn tcp_link(&self, peer: usize) -> &RefCell<TcpPeer> {
        match &self.paths[peer] {
            Path::Tcp(link) => link,
            _ => unreachable!("tcp_peers lists only TCP paths"),
        }
    }

    /// Waits until this rank's own element `index` of `sym` satisfies `done`,
    /// and returns it (OpenSHMEM's `shmem_wait_until`). Puts the sender made
    /// before a `quiet` that precedes the awaited put are visible after this
    /// returns.
    pub fn wait_until<T: Pod>(&self, sym: &Sym<T>, index: usize, mut done: impl FnMut(T) -> bool) -> Result<T> {
        let ptr = self.local_ptr("wait_until", sym, index, 1)?.cast::<T>();
        // What we wait for may depend on a put of ours still in a batch.
        self.send_batches()?;
        let mut polls: u32 = 0;
        loop {
            // SAFETY: `local_ptr` checked the element lies in our heap;
            // heap objects are 64-byte aligned and Pod sizes are multiples of
            // their alignment, so `ptr` is aligned. A volatile read never
            // forms a reference to the shared element.
            let value = unsafe { ptr.read_volatile() };
            if done(value) {
                fence(Ordering::Acquire);
                return Ok(value);
            }
            polls = polls.saturating_add(1);
            crate::barrier::back_off(polls, self.spins_before_yield);
        }
    }

    /// Copies this rank's own elements `[index, index + dst.len())` of `sym` into `dst`.
    pub fn local_read<T: Pod>(&self, sym: &Sym<T>, index: usize, dst: &mut [T]) -> Result<()> {
        self.get(sym, self.rank, index, dst)
    }

    /// Writes `src` into this rank's own elements of `sym`, from `index`.
    pub fn local_write<T: Pod>(&self, sym: &Sym<T>, index: usize, src: &[T]) -> Result<()> {
        self.put(sym, self.rank, index, src)
    }

    /// This rank's whole copy of `sym`, as a vector.
    pub fn local_to_vec<T: Pod>(&self, sym: &Sym<T>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); sym.len()];
        self.local_read(sym, 0, &mut out)?;
        Ok(out)
    }

    /// Borrows this rank's copy of `sym` as a slice, without copying.
    ///
    /// # Safety
    /// No put from any rank may target this object while the slice lives: a
    /// remote write under a live `&[T]` is a data race. Take the slice after a
    /// barrier and drop it before the next one, in a phase where the program
    /// sends no puts to this object (the OpenSHMEM rule for local access).
    pub unsafe fn local_slice<'a, T: Pod>(&'a self, sym: &'a Sym<T>) -> Result<&'a [T]> {
        let ptr = self.local_ptr("local_slice", sym, 0, sym.len())?;
        // SAFETY: the range is checked, aligned (heap offsets are 64-byte
        // aligned, T is Pod), and the mapping outlives 'a because `self`
        // owns it; exclusivity is the caller's contract.
        Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<T>(), sym.len()) })
    }

    /// Borrows this rank's copy of `sym` mutably, without copying.
    ///
    /// The `&mut Sym` borrow stops this process from using `sym` in any other
    /// way (no put, get or second view) while the slice lives.
    ///
    /// # Safety
    /// As for [`local_slice`](World::local_slice): no other rank may put to or
    /// get from this object while the slice lives.
    pub unsafe fn local_slice_mut<'a, T: Pod>(&'a self, sym: &'a mut Sym<T>) -> Result<&'a mut [T]> {
        let ptr = self.local_ptr("local_slice_mut", sym, 0, sym.len())?;
        // SAFETY: as in `local_slice`; `&mut Sym` makes the view unique here.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<T>(), sym.len()) })
    }

    /// Checks the arguments and says where element `index` of `target`'s
    /// copy of `sym` is: mapped here, behind a TCP link, or reached by RDMA.
    #[inline(always)]
    fn locate<T: Pod>(
        &self,
        op: &'static str,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        count: usize,
    ) -> Result<Target<'_>> {
        self.check_rank(op, target)?;
        self.check_object(op, sym)?;
        if index.checked_add(count).is_none_or(|end| end > sym.len()) {
            return Err(self.out_of_range(op, index, count, sym.len()));
        }
        let offset = sym.byte_offset(index);
        let base = match &self.paths[target] {
            Path::Local => self.own.heap_base(),
            Path::Shm(segment) => segment.heap_base(),
            Path::Tcp(link) => {
                return Ok(Target::Remote {
                    peer: target,
                    link,
                    offset,
                })
            }
            Path::Verbs => return Ok(Target::Rdma { peer: target, offset }),
        };
        // SAFETY: the object lies inside the heap (the allocator only hands
        // out in-heap ranges, every heap has the same size, checked at init),
        // and [index, index+count) lies inside the object (checked above).
        Ok(Target::Mapped(unsafe { base.add(offset) }))
    }

    /// Like `locate`, for this rank's own memory, which is always mapped.
    fn local_ptr<T: Pod>(&self, op: &'static str, sym: &Sym<T>, index: usize, count: usize) -> Result<*mut u8> {
        match self.locate(op, sym, self.rank, index, count)? {
            Target::Mapped(ptr) => Ok(ptr),
            Target::Remote { .. } | Target::Rdma { .. } => unreachable!("a rank's path to itself is always Local"),
        }
    }

    /// Pushes out every TCP peer's batch of small puts.
    fn send_batches(&self) -> Result<()> {
        for &peer in &self.tcp_peers {
            self.tcp_link(peer)
                .borrow_mut()
                .flush()
                .map_err(|source| self.lost(peer, "put", source))?;
        }
        Ok(())
    }

    #[cold]
    fn out_of_range(&self, op: &'static str, index: usize, count: usize, len: usize) -> Error {
        Error::IndexOutOfRange {
            rank: self.rank,
            op,
            index,
            count,
            len,
        }
    }

    #[cold]
    pub(crate) fn lost(&self, peer: usize, op: &'static str, source: std::io::Error) -> Error {
        self.broken.set(true);
        Error::PeerLost {
            rank: self.rank,
            peer,
            op,
            source,
        }
    }
}
