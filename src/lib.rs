//! # oneside: one-sided put/get over a symmetric heap
//!
//! Start ranks with `rlaunch -n 4 ./my_program`; each calls [`init`] and gets
//! a [`World`]. Started without `rlaunch`, a program runs as a single rank
//! (an MPI "singleton"), so `./hello_put` alone still works.
//!
//! ```no_run
//! let world = oneside::init()?;
//! let inbox = world.alloc::<u8>(64)?;             // collective, same offset everywhere
//! let right = (world.rank() + 1) % world.size();
//! world.put(&inbox, right, 0, b"hello")?;        // one-sided write into `right`
//! world.barrier()?;                              // quiet + everyone meets
//! let mut got = [0u8; 5];
//! world.local_read(&inbox, 0, &mut got)?;        // what the left neighbour wrote
//! # Ok::<(), oneside::Error>(())
//! ```
//!
//! ## The symmetric heap
//! Every rank has a heap of the same size (`ONESIDE_HEAP_SIZE`, default
//! 64 MiB). [`World::alloc`] is collective: all ranks call it in the same
//! order with the same length and get a [`Sym<T>`] naming the same offset on
//! every rank, like `shmem_malloc` in OpenSHMEM or a window from
//! `MPI_Win_allocate`. `T` must be plain old data ([`Pod`]).
//!
//! ## Memory model
//! The vocabulary is OpenSHMEM's; the MPI RMA equivalent is in brackets.
//!
//! * **Blocking put** ([`World::put`]): returns when the source buffer may be
//!   reused (*locally complete*). It is not yet promised to be visible at
//!   the target. [`MPI_Put` followed by a local completion].
//! * **Blocking get** ([`World::get`]): returns with the data in the
//!   destination buffer. [`MPI_Get` + `MPI_Win_flush_local`].
//! * **quiet** ([`World::quiet`]): every put this rank issued before it is
//!   *remotely complete*: written into the target's memory.
//!   [`MPI_Win_flush_all`].
//! * **barrier** ([`World::barrier`]): quiet, then all ranks meet. A put made
//!   before the barrier is visible to every load the target makes after it
//!   (release/acquire: each rank's barrier signal is a Release store, its wait
//!   an Acquire load). [`MPI_Win_fence`].
//! * Progress: a put always completes eventually without help from the
//!   target's application thread. Over TCP, small puts from one rank are
//!   batched and leave at this rank's next `quiet`, `get`, `barrier` or
//!   `wait_until` (or when the batch fills), so a flag put that another rank
//!   waits for is delivered once the putter reaches its next oneside call
//!   (MPI's progress rule). Call `quiet` to push it out at once.
//! * Ordering between two puts to the same target without an intervening
//!   quiet is not promised, as in OpenSHMEM; use `quiet` (or a barrier) to
//!   order them.
//! * Two puts to the same element in one barrier phase, or a put and a local
//!   access to the same element in one phase, are a data race in the program:
//!   the element's value is unspecified, as in both standards.
//!
//! ## Local access and Rust aliasing
//! Other processes write into this rank's heap at any time, so a Rust
//! reference into it would be unsound while a remote write can land. The
//! library therefore never hands out references on its own:
//!
//! * **Safe, copying**: [`World::local_read`], [`World::local_write`],
//!   [`World::local_to_vec`] copy between the heap and private memory through
//!   raw pointers. A racing remote put makes the copied values unspecified,
//!   never undefined behaviour in the Rust sense, since no reference into
//!   shared memory exists.
//! * **Zero-copy, `unsafe`**: [`World::local_slice`] and
//!   [`World::local_slice_mut`] borrow the local copy as a slice, for a phase
//!   between barriers in which no rank targets that object (the OpenSHMEM
//!   rule for local access). `local_slice_mut` takes `&mut Sym<T>`, so this
//!   process cannot put to, get from or view the object while the slice lives.
//!
//! ## Errors
//! A wrong rank, an index out of range or an exhausted heap is an [`Error`]
//! with the numbers in it; see [`Error`] for the rest.
//!
//! ## Teardown
//! [`World::finalize`] (or dropping the `World`) runs a final barrier and
//! tells the launcher this rank finished. A rank that panics skips the
//! barrier and exits; `rlaunch` then stops the whole job.

mod atomic;
mod barrier;
mod bootstrap;
mod error;
mod heap;
mod lock;
mod nbi;
pub mod protocol;
mod rma;
mod segment;
mod signal;
mod sym;
mod transport;
mod wait;
mod world;

pub use atomic::{AtomicElem, AtomicInt};
pub use error::{Error, Result};
pub use lock::{Lock, LockGuard};
pub use nbi::Nbi;
pub use sym::{Pod, Sym};
pub use transport::primitives::SignalOp;
pub use wait::Cmp;
pub use world::{init, World};

/// Re-exported so applications can `#[derive(Pod, Zeroable)]` their element types.
pub use bytemuck;

/// This machine's host name, or `localhost` when it cannot be read.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
