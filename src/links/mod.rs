//! `Links`: everything a rank reaches its peers with, as the `World`'s one
//! transport field: the path to each rank, the TCP progress engine and
//! flusher, the NIC transport (verbs or ofi) and where contexts connect.
//! The dispatch by path ([`primitives`]) is `impl Links`.
//!
//! The layering (ARCHITECTURE.md, "Layers"): the API families (`rma`,
//! `atomic`, `signal`, `wait`, `coll`, ...) call `Links` through the
//! `World`; `Links` calls the transport engines under `transport/`, which
//! know nothing of `Links`, the `World`, contexts, teams or the profile.
//! This module knows nothing of the `World` either. Its fields are private:
//! callers above ask it questions (`map_base`, `flag_wait`, `engine_driver`,
//! `quiet_is_a_fence`, ...) that it answers with exhaustive matches on the
//! path, so a new path is a compile error here, not a silent default there.

pub(crate) mod channel;
pub(crate) mod growth;
pub(crate) mod primitives;
pub(crate) mod wire;

use crate::error::{Error, Result};
use crate::transport::cards::CardTable;
use crate::transport::fault::{Fault, CONSEQUENCE_GRACE};
use crate::transport::rdma::RdmaLink;
use crate::transport::tcp::engine::{Driver, ProgressEngine};
use crate::transport::tcp::flusher::Flusher;
use crate::transport::Path;
pub(crate) use channel::{Channel, CtxConnect, CtxLinks};
use std::sync::atomic::{AtomicBool, Ordering};

/// A rank's links to every rank of the job, this one included.
///
/// Fields drop in declaration order, and the whole drops before the
/// `World`'s segment: the engine (which writes into the segment) stops
/// first, then the flusher, the NIC transport and the paths.
pub(crate) struct Links {
    rank: usize,
    size: usize,
    /// This rank's TCP progress engine, when it has TCP peers or was asked for one.
    engine: Option<ProgressEngine>,
    /// Pushes out TCP batches that their origin left (`tcp::flusher`);
    /// held for its teardown.
    _flusher: Option<Flusher>,
    /// The NIC transport, when the job uses verbs or ofi: connected to
    /// every rank, this one included. Every atomic then goes through it
    /// (the memory model in the crate docs).
    rdma: Option<RdmaLink>,
    paths: Vec<Path>,
    /// Every rank's card as the launcher gathered it, read in place; a
    /// same-host peer mapped on first access finds its card here.
    cards: CardTable,
    /// Ranks reached over TCP, so shared-memory-only quiets skip the scan.
    tcp_peers: Vec<usize>,
    /// Where contexts connect their own TCP links (when there are TCP peers).
    ctx_connect: Option<CtxConnect>,
    /// This rank's own heap, for the `Local` path.
    own_heap: HeapBase,
    /// Collective waits for same-host flags block on futexes, and flag
    /// stores wake them (`backoff::block_waits`): the host's ranks
    /// outnumber its cores several times over. One field for both sides,
    /// so waiter and waker always agree.
    block_waits: bool,
    /// Set once a peer's link broke: no farewell barrier could complete.
    broken: AtomicBool,
}

/// An allgather of a few bytes per rank, which the World offers a
/// transport that registers a grown heap range (`Links::grown`).
pub(crate) type Exchange<'a> = dyn FnMut(&[u8]) -> Result<Vec<Vec<u8>>> + 'a;

/// How a wait for a flag in this rank's heap waits, by the path of the
/// rank that stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlagWait {
    /// Served by this rank's TCP engine: sleeps until the engine has news.
    Tcp,
    /// A same-host flag in a job whose ranks outnumber the cores: a futex.
    Futex,
    /// Polls with the back-off.
    Poll,
}

/// The base of this rank's heap.
#[derive(Clone, Copy)]
struct HeapBase(*mut u8);

// SAFETY: the pointer is the base of this rank's own mapped heap, which
// outlives the `Links` (the `World` drops its links first); it is only
// offset and handed to operations that check their ranges.
unsafe impl Send for HeapBase {}
// SAFETY: as for `Send`: `Links` never writes through it itself.
unsafe impl Sync for HeapBase {}

/// The parts `Links` is made of, wired by `init`.
pub(crate) struct Parts {
    pub rank: usize,
    pub size: usize,
    pub paths: Vec<Path>,
    pub cards: CardTable,
    pub own_heap: *mut u8,
    pub block_waits: bool,
    pub engine: Option<ProgressEngine>,
    pub flusher: Option<Flusher>,
    pub rdma: Option<RdmaLink>,
    pub ctx_connect: Option<CtxConnect>,
}

impl Links {
    pub(crate) fn new(parts: Parts) -> Links {
        let tcp_peers = (0..parts.paths.len())
            .filter(|&p| matches!(parts.paths[p], Path::Tcp(_)))
            .collect();
        Links {
            rank: parts.rank,
            size: parts.size,
            engine: parts.engine,
            _flusher: parts.flusher,
            rdma: parts.rdma,
            paths: parts.paths,
            cards: parts.cards,
            tcp_peers,
            ctx_connect: parts.ctx_connect,
            own_heap: HeapBase(parts.own_heap),
            block_waits: parts.block_waits,
            broken: AtomicBool::new(false),
        }
    }

    /// Whether a quiet is a fence and nothing more, on every channel: no
    /// peer is reached over TCP or a NIC, so each operation is complete
    /// when its call returns.
    pub(crate) fn quiet_is_a_fence(&self) -> bool {
        self.rdma.is_none() && self.tcp_peers.is_empty()
    }

    /// The address of this rank's TCP progress engine, if it runs one.
    pub(crate) fn tcp_engine_addr(&self) -> Option<std::net::SocketAddr> {
        self.engine.as_ref().map(ProgressEngine::addr)
    }

    /// The NIC this rank's RDMA transport uses, if the job has one.
    pub(crate) fn rdma_device(&self) -> Option<String> {
        self.rdma.as_ref().map(RdmaLink::device_name)
    }

    /// Every atomic goes through the NIC: the job uses verbs or ofi.
    #[inline(always)]
    pub(crate) fn nic_atomics(&self) -> bool {
        self.rdma.is_some()
    }

    /// Whether a peer's link broke (no farewell barrier could complete).
    pub(crate) fn broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// Marks the links broken: this rank will leave without a farewell.
    pub(crate) fn mark_broken(&self) {
        self.broken.store(true, Ordering::Relaxed);
    }

    /// The base of `target`'s heap where this process reaches it by loads
    /// and stores: its own, or a same-host peer's, mapped now if it is not
    /// yet. `None` for a peer behind TCP or a NIC, or one that cannot be mapped.
    pub(crate) fn map_base(&self, target: usize) -> Option<*mut u8> {
        match self.paths.get(target)? {
            Path::Local => Some(self.own_heap.0),
            Path::Shm(segment) => segment.heap_base(&self.cards, self.rank, target).ok(),
            Path::Tcp(_) | Path::Verbs | Path::Ofi => None,
        }
    }

    /// Like [`map_base`](Self::map_base), without mapping: a same-host peer
    /// not mapped yet has no base (the ordinary call maps it).
    pub(crate) fn mapped_base(&self, target: usize) -> Option<*mut u8> {
        match self.paths.get(target)? {
            Path::Local => Some(self.own_heap.0),
            Path::Shm(segment) => segment.mapped_base(),
            Path::Tcp(_) | Path::Verbs | Path::Ofi => None,
        }
    }

    /// How a wait for a flag that `from` stores into this rank's heap waits.
    pub(crate) fn flag_wait(&self, from: usize) -> FlagWait {
        match &self.paths[from] {
            Path::Tcp(_) => FlagWait::Tcp,
            Path::Local | Path::Shm(_) if self.block_waits => FlagWait::Futex,
            Path::Local | Path::Shm(_) | Path::Verbs | Path::Ofi => FlagWait::Poll,
        }
    }

    /// The driver of this rank's TCP progress engine, if it runs one: a
    /// rank that waits serves its peers' requests through it.
    pub(crate) fn engine_driver(&self) -> Option<&Driver> {
        self.engine.as_ref().map(ProgressEngine::driver)
    }

    /// The short name of the path to `target` ("self", "shm", "tcp", ...).
    pub(crate) fn path_name(&self, target: usize) -> &'static str {
        self.paths[target].name()
    }

    pub(crate) fn rdma_link(&self) -> &RdmaLink {
        self.rdma
            .as_ref()
            .expect("a verbs path or NIC atomics exist only with a connected RDMA transport")
    }

    /// The error for an engine's failed operation, whatever the engine;
    /// marks the links broken. A failure that is only the consequence of
    /// another rank's waits a little, so that the launcher hears of the
    /// cause first.
    #[cold]
    pub(crate) fn failed(&self, fault: Fault) -> Error {
        self.mark_broken();
        if fault.consequence && self.size > 1 {
            std::thread::sleep(CONSEQUENCE_GRACE);
        }
        fault.into_error(self.rank)
    }
}
