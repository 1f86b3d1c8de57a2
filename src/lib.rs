//! # oneside: one-sided put/get over a symmetric heap
//!
//! Start ranks with `rlaunch -n 4 ./my_program`; each calls [`init`] and gets
//! a [`World`]. Started without `rlaunch`, a program runs as a single rank
//! (an MPI "singleton"), so `./hello_put` alone still works.
//!
//! ```no_run
//! use oneside::prelude::*; // the one-sided traits: Rma, Atomics, Signals
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
//!   `MPI_Win_flush_all`.
//! * **barrier** ([`World::barrier`]): quiet, then all ranks meet. A put made
//!   before the barrier is visible to every load the target makes after it
//!   (release/acquire: each rank's barrier signal is a Release store, its wait
//!   an Acquire load). `MPI_Win_fence`.
//! * Progress: a put always completes eventually without help from the
//!   target's application thread. Over TCP, small puts from one rank are
//!   batched and leave at this rank's next `quiet`, `get`, `barrier` or
//!   `wait_until` (or when the batch fills), so a flag put that another rank
//!   waits for is delivered once the putter reaches its next oneside call
//!   (MPI's progress rule). Call `quiet` to push it out at once.
//! * Ordering between two puts to the same target without an intervening
//!   quiet or fence is not promised, as in OpenSHMEM; use [`World::fence`]
//!   (ordering only, per target, cheaper) or `quiet` (completion) to order them.
//! * **fence** ([`World::fence`]): puts, signals and non-fetching atomics
//!   this rank issued to a target before the fence are delivered there
//!   before those it issues after. [`MPI_Win_flush` without the wait].
//! * **Non-blocking put and get** ([`World::put_nbi`], [`Nbi::get`]):
//!   return at once; `quiet` completes them. A non-blocking get's
//!   destination is borrowed by its [`World::nbi`] scope until it is filled.
//!   [`MPI_Rput`/`MPI_Rget` + `MPI_Win_flush_all`].
//! * **Atomics** ([`World::atomic_fetch_add`] and the rest): each is
//!   atomic with respect to every other atomic on the same element, from
//!   any rank, over any path. A fetching atomic returns when it is done; a
//!   non-fetching one (`atomic_add`, `atomic_set`, ...) may complete at the
//!   next quiet. Atomics are sequentially consistent with each other; a
//!   plain put or a local store racing with an atomic on the same element
//!   is a data race, as in OpenSHMEM. [`MPI_Fetch_and_op`, `MPI_Accumulate`].
//! * **Which unit does an atomic.** A NIC's atomics are not atomic with a
//!   CPU's on the same word. So when a job uses verbs at all, *every*
//!   atomic of every rank goes through the NIC, including atomics on the
//!   rank's own memory (a loopback queue pair) and on same-host peers
//!   (whose data still moves through shared memory), as UCX and Sandia
//!   OpenSHMEM do. Otherwise every atomic is a CPU atomic: the issuing core
//!   on shared memory, the target's TCP progress engine (which applies it to
//!   the target's memory with the same CPU instructions) over TCP. The
//!   choice is made once per job from the all-gathered cards, identically on
//!   every rank. Local reads (`wait_until`, `signal_fetch`, `test`) are
//!   plain loads either way, which both units keep coherent.
//! * **Put-with-signal** ([`World::put_signal`]): the data, then an atomic
//!   set or add of a 64-bit signal word at the same target; a rank that
//!   sees the signal ([`World::signal_wait_until`]) sees the data, with no
//!   extra round trip on any path. Over verbs a set signal is an aligned
//!   8-byte RDMA WRITE (an add is an RDMA atomic): it is atomic with other
//!   signal sets and with reads, but not with NIC atomics on the same word,
//!   so a program should not mix set signals with atomics on one signal
//!   word at the same time.
//! * **Locks** ([`World::lock`]): taking a lock is an acquire, releasing
//!   it quiets first, so a holder sees every put of the previous holders.
//! * Two puts to the same element in one barrier phase, or a put and a local
//!   access to the same element in one phase, are a data race in the program:
//!   the element's value is unspecified, as in both standards.
//!
//! ## The rest of the model, by example
//!
//! ```no_run
//! use oneside::prelude::*;
//! use oneside::{Cmp, SignalOp};
//! let world = oneside::init()?;
//! let (me, n) = (world.rank(), world.size());
//!
//! // Atomics: a global work counter on rank 0, and a histogram.
//! let next_task = world.alloc::<u64>(1)?;
//! let task = world.atomic_fetch_inc(&next_task, 0, 0)?;  // a unique task number
//! let bins = world.alloc::<u32>(16)?;
//! world.atomic_inc(&bins, (me + 1) % n, 3)?;               // completes by the next quiet
//!
//! // Put-with-signal: the neighbour waits on one word, not a barrier.
//! let halo = world.alloc::<f64>(8)?;
//! let arrived = world.alloc::<u64>(1)?;
//! world.put_signal(&halo, (me + 1) % n, 0, &[1.0; 8], &arrived, 0, SignalOp::Set, 1)?;
//! world.signal_wait_until(&arrived, 0, Cmp::Ge(1))?;       // our left neighbour's halo is here
//!
//! // Non-blocking get: the buffer is filled when the scope ends.
//! let mut copy = vec![0.0; 8];
//! world.nbi(|s| s.get(&halo, (me + 1) % n, 0, &mut copy))?;
//!
//! // Waits on many elements, and a fair distributed lock.
//! let flags = world.alloc::<u32>(n)?;
//! world.atomic_set(&flags, 0, me, 1)?;
//! if me == 0 {
//!     world.wait_until_all(&flags, 0..n, Cmp::Eq(1))?;
//!     world.wait_until(&flags, 0, Cmp::Eq(1))?;            // one element: a comparison,
//!     world.wait_until(&flags, 0, |v| v % 2 == 1)?;        // or any predicate
//! }
//! let lock = world.alloc_lock()?;
//! {
//!     let _held = world.lock(&lock)?;                      // FIFO queue lock
//!     let total = world.get_value(&next_task, 0, 0)?;
//!     world.put_value(&next_task, 0, 0, total + 1)?;
//! }                                                         // released here, after a quiet
//! # let _ = task;
//! # Ok::<(), oneside::Error>(())
//! ```
//!
//! ## Teams and collectives
//! A [`Team`] is an ordered set of ranks that run collectives together, as
//! in OpenSHMEM 1.5: the world team ([`World::team_world`]), strided
//! subsets ([`World::split_strided`]) and the rows and columns of a grid
//! ([`World::split_2d`]). Every member of a team calls its collectives in
//! the same order; one thread per rank at a time.
//!
//! | collective | OpenSHMEM | MPI |
//! | --- | --- | --- |
//! | [`World::team_sync`], [`World::team_barrier`], [`World::barrier`] | `shmem_team_sync`, `shmem_barrier_all` | `MPI_Barrier` |
//! | [`World::broadcast`] | `shmem_broadcast` | `MPI_Bcast` |
//! | [`World::reduce`] with [`Sum`], [`Prod`], [`Min`], [`Max`], [`And`], [`Or`], [`Xor`] | `shmem_<type>_<op>_reduce` | `MPI_Allreduce` |
//! | [`World::reduce_value`], [`World::reduce_values`] (private values) | | `MPI_Allreduce` |
//! | [`World::fcollect`], [`World::collect`] | `shmem_fcollect`, `shmem_collect` | `MPI_Allgather(v)` |
//! | [`World::alltoall`], [`World::alltoalls`] | `shmem_alltoall(s)` | `MPI_Alltoall` |
//! | [`World::inscan`], [`World::exscan`] | `shmem_<type>_sum_inscan/exscan` (1.6) | `MPI_Scan`, `MPI_Exscan` |
//!
//! ```no_run
//! use oneside::{Max, Sum};
//! let world = oneside::init()?;
//! let (me, n) = (world.rank(), world.size());
//!
//! // A reduction of private values needs no symmetric object.
//! let total = world.reduce_value(world.team_world(), Sum, me as u64)?;
//! assert_eq!(total, (n * (n - 1) / 2) as u64);
//!
//! // Rows and columns of a grid two ranks wide; reduce along each row.
//! let (row, column) = world.split_2d(world.team_world(), 2)?;
//! let x = world.alloc::<f64>(4)?;
//! world.local_write(&x, 0, &[me as f64; 4])?;
//! world.reduce(&row, Max, &x, &x, 4)?;              // in place
//! let all = world.alloc::<f64>(4 * n)?;
//! world.fcollect(world.team_world(), &all, &x, 4)?; // allgather
//! world.team_destroy(row)?;
//! world.team_destroy(column)?;
//! # Ok::<(), oneside::Error>(())
//! ```
//!
//! Reductions combine in member order, so every member gets bit-identical
//! floats. A collective's destination must be ready to receive on every
//! member when any member enters (data from another host may land before
//! this rank calls), as OpenSHMEM requires; on one host, members only ever
//! write their own destinations. Bad arguments (a root outside the team, a
//! destination too small, splits whose arguments differ between members)
//! are errors on every member, not hangs; running out of team slots
//! ([`MAX_TEAMS`]) is [`Error::TeamsExhausted`].
//!
//! Waits spin while every rank on the host has a core, for up to a few
//! milliseconds, then yield, then nap; when ranks outnumber cores they
//! yield at once.
//!
//! ## Threads and contexts
//! A [`World`] is `Send + Sync`: every thread of a rank may use it at once
//! (OpenSHMEM's `SHMEM_THREAD_MULTIPLE`). The one-sided operations are
//! traits ([`Rma`], [`Atomics`], [`Signals`]; `use oneside::prelude::*`)
//! implemented by the world, which is the *default context*, and by a
//! [`Ctx`], an independent stream of operations from
//! [`World::ctx_create`]:
//!
//! ```no_run
//! use oneside::prelude::*;
//! let world = oneside::init()?;
//! let hits = world.alloc::<u64>(64)?;
//! let target = (world.rank() + 1) % world.size();
//! std::thread::scope(|s| {
//!     for t in 0..2 {
//!         let (world, hits) = (&world, &hits);
//!         s.spawn(move || -> oneside::Result<()> {
//!             let ctx = world.ctx_create()?;       // this thread's own stream
//!             for i in 0..1000 {
//!                 ctx.atomic_inc(hits, target, (i * 2 + t) % 64)?;
//!             }
//!             ctx.quiet()                          // this context's operations only
//!         });
//!     }
//! });
//! world.barrier()?;
//! # Ok::<(), oneside::Error>(())
//! ```
//!
//! What a context orders and completes:
//!
//! * [`fence`](Rma::fence) and [`quiet`](Rma::quiet) on a context order and
//!   complete that context's puts, non-blocking gets, signals and
//!   non-fetching atomics. Over TCP a context has its own connection to
//!   each peer, so its `quiet` waits for its own requests and never for
//!   another context's; over verbs a context has a lane of queue pairs of
//!   its own while lanes last (`ONESIDE_VERBS_CONTEXTS`, default 4), and
//!   then shares the default context's, whose requests its `quiet` then
//!   also waits for; on shared memory operations complete as they return,
//!   so contexts cost nothing.
//! * `quiet` on the world (the default context) completes the default
//!   context's operations, from every thread; it promises nothing about
//!   other contexts'. A [`barrier`](World::barrier) quiets the default
//!   context only: quiet your contexts before it.
//! * A context's small puts and non-fetching atomics may wait in its batch
//!   (over TCP) until its next quiet, fence-free get, fetching atomic or
//!   signal; dropping a context quiets it.
//! * Collectives, team creation and [`World::alloc`]/[`World::free`] run on
//!   one thread of a rank at a time (OpenSHMEM's rule); a second thread
//!   entering one while another runs gets [`Error::ConcurrentCollective`].
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

mod alloc;
mod atomic;
mod backoff;
mod bootstrap;
mod coll;
mod crash;
mod ctx;
mod debug;
mod dynlib;
mod error;
mod futex;
mod globals;
mod heap;
mod hooks;
mod links;
mod lock;
mod nbi;
pub mod profile;
pub mod protocol;
#[doc(hidden)]
pub mod race;
mod raw;
mod reporter;
mod rma;
mod segment;
mod service;
mod signal;
#[doc(hidden)]
pub mod site;
mod sym;
mod sync;
#[doc(hidden)]
pub mod syscall;
mod team;
mod transport;
mod wait;
pub mod watch;
mod words;
mod world;

#[cfg(test)]
mod fuzz;

pub use alloc::HeapInfo;
pub use atomic::{AtomicElem, AtomicInt, Atomics};
pub use coll::ops::{And, Integer, Max, Min, Number, Or, Prod, ReduceOp, Sum, Xor};
#[doc(hidden)]
pub use crash::keep_note as keep_crash_note;
pub use ctx::{AnyEndpoint, Ctx, Endpoint};
pub use error::{Error, LocatedError, Result};
pub use lock::{Lock, LockGuard};
pub use nbi::Nbi;
pub use profile::level::{profiling_level, set_profiling_level};
pub use raw::DirectMap;
pub use rma::Rma;
pub use signal::Signals;
pub use sym::{Pod, Sym};
pub use team::{Team, MAX_TEAMS};
pub use transport::amo::SignalOp;
pub use transport::{built_in as transports_built_in, probe_libraries, TransportChoice};
pub use wait::{Cmp, Until};
#[doc(hidden)]
pub use words::speak_of_pes;

/// A `World` and its teams can be shared between threads and moved to
/// another one; checked at compile time.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<crate::World>();
    shared::<crate::Team>();
};

pub use world::{init, init_with, Options, World};

/// The one-sided traits, for `use oneside::prelude::*;`: the operations
/// of [`Rma`], [`Atomics`] and [`Signals`] on a [`World`] or a [`Ctx`].
pub mod prelude {
    pub use crate::{Atomics, Endpoint, Rma, Signals};
}

/// Re-exported so applications can `#[derive(Pod, Zeroable)]` their element types.
pub use bytemuck;

/// The Rust code blocks of README and of the user guide (`docs/src/`),
/// compiled and run as doc tests (`cargo test --doc -p oneside`), each as a
/// one-rank job; `tests/guide.rs` checks that every chapter with Rust code
/// is listed here.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../README.md")]
    struct Readme;
    #[doc = include_str!("../docs/src/getting-started.md")]
    struct GettingStarted;
    #[doc = include_str!("../docs/src/rust.md")]
    struct Rust;
}
