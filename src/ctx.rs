//! Communication contexts (OpenSHMEM's `shmem_ctx_t`): independent streams
//! of one-sided operations, each with its own ordering and completion.
//!
//! The one-sided operations ([`Rma`](crate::Rma),
//! [`Atomics`](crate::Atomics), [`Signals`](crate::Signals)) are written
//! once, on an [`Endpoint`]: the [`World`] itself (the default context) or a
//! [`Ctx`]. What a context owns depends on the path to a peer:
//!
//! * shared memory and the rank itself: nothing. Operations are loads,
//!   stores and CPU atomics, complete when they return; a context is free.
//! * TCP: its own connection to each TCP peer's progress engine, with its
//!   own batch and acknowledgements. `quiet` on a context waits for that
//!   context's requests only; another thread's context is never locked.
//! * verbs: a lane of its own (a queue pair to every rank, a completion
//!   queue and staging) while lanes last (`ONESIDE_VERBS_CONTEXTS`, default
//!   4), so its `quiet` waits for its own work requests only. When every
//!   lane is taken, a new context shares the default context's lane, as
//!   OpenSHMEM allows: it stays correct, and its `quiet` then also waits
//!   for the default context's requests.
//!
//! A `Ctx` is `Send` and `Sync`. Each of its links has a lock, which is
//! never contended when one thread uses the context (OpenSHMEM's
//! `SHMEM_CTX_PRIVATE`, and what scales: one context per thread); threads
//! that share one context are serialized per link by it
//! (`SHMEM_CTX_SERIALIZED`).

use crate::error::{Error, Result};
use crate::transport::primitives::Stream;
use crate::transport::tcp::{Dial, TcpPeer};
use crate::world::World;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

/// Where a context's TCP links connect: each TCP peer's progress engine,
/// and the job secret that admits them (kept by the world when it has TCP
/// peers); and the contexts alive, whose batches a local wait pushes out.
pub(crate) struct CtxConnect {
    pub addrs: Vec<Option<SocketAddr>>,
    pub dial: Dial,
    pub live: Mutex<Vec<Weak<CtxLinks>>>,
}

impl CtxConnect {
    /// The contexts still alive (whose batches a local wait pushes out);
    /// forgets the ones that are gone.
    pub(crate) fn live(&self) -> Vec<Arc<CtxLinks>> {
        let mut live = crate::sync::lock(&self.live);
        live.retain(|links| links.strong_count() > 0);
        live.iter().filter_map(Weak::upgrade).collect()
    }
}

/// A context's TCP links, one per TCP peer (the world's `tcp_peers`),
/// indexed by rank.
pub struct CtxLinks {
    links: Vec<Option<Arc<Mutex<TcpPeer>>>>,
    /// The verbs lane (0: the default context's, shared).
    pub(crate) lane: usize,
}

impl CtxLinks {
    /// The link to TCP peer `rank`.
    #[inline]
    pub(crate) fn link(&self, rank: usize) -> &Mutex<TcpPeer> {
        self.links[rank]
            .as_ref()
            .expect("a context has a link to every TCP peer")
    }
}

/// An independent stream of one-sided operations on a [`World`]; see the
/// module docs. Created by [`World::ctx_create`]; quiets when dropped.
pub struct Ctx<'w> {
    world: &'w World,
    links: Arc<CtxLinks>,
}

/// What the one-sided operations run on: the world's default context or a
/// [`Ctx`]. Sealed: only this crate implements it.
pub trait Endpoint: sealed::Sealed {
    /// The world the operations act on.
    fn world(&self) -> &World;
    #[doc(hidden)]
    fn stream(&self) -> Stream<'_>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::World {}
    impl Sealed for super::Ctx<'_> {}
}

impl Endpoint for World {
    #[inline(always)]
    fn world(&self) -> &World {
        self
    }
    #[inline(always)]
    fn stream(&self) -> Stream<'_> {
        Stream::Default
    }
}

impl Endpoint for Ctx<'_> {
    #[inline(always)]
    fn world(&self) -> &World {
        self.world
    }
    #[inline(always)]
    fn stream(&self) -> Stream<'_> {
        Stream::Ctx(&self.links)
    }
}

/// The default context or a [`Ctx`], chosen at run time: what a C
/// `shmem_ctx_t` names. Its operations are the chosen endpoint's.
#[derive(Clone, Copy)]
pub enum AnyEndpoint<'a> {
    /// The world's default context.
    Default(&'a World),
    /// A created context.
    Ctx(&'a Ctx<'a>),
}

impl sealed::Sealed for AnyEndpoint<'_> {}

impl Endpoint for AnyEndpoint<'_> {
    #[inline(always)]
    fn world(&self) -> &World {
        match self {
            AnyEndpoint::Default(world) => world,
            AnyEndpoint::Ctx(ctx) => ctx.world,
        }
    }
    #[inline(always)]
    fn stream(&self) -> Stream<'_> {
        match self {
            AnyEndpoint::Default(_) => Stream::Default,
            AnyEndpoint::Ctx(ctx) => Stream::Ctx(&ctx.links),
        }
    }
}

impl World {
    /// Creates a communication context: a stream of one-sided operations
    /// whose `quiet` and `fence` cover its own operations (see the module
    /// docs for what each path gives it). Not collective; any thread may
    /// create one. Over TCP it opens a connection to each TCP peer, so a
    /// peer that cannot accept one more is an `Err`.
    pub fn ctx_create(&self) -> Result<Ctx<'_>> {
        let mut links: Vec<Option<Arc<Mutex<TcpPeer>>>> = (0..self.size).map(|_| None).collect();
        if let Some(connect) = &self.ctx_connect {
            for &peer in &self.tcp_peers {
                let addr = connect.addrs[peer].ok_or_else(|| Error::Unreachable {
                    rank: self.rank,
                    peer,
                    host: String::new(),
                    detail: "no progress engine address for a context's connection".into(),
                })?;
                let link = TcpPeer::connect(self.rank, peer, addr, &connect.dial)
                    .map_err(|source| self.lost(peer, "ctx_create", source))?;
                let link = Arc::new(Mutex::new(link));
                if let Some(nudge) = &connect.dial.nudge {
                    nudge.register(&link);
                }
                links[peer] = Some(link);
            }
        }
        let lane = self.rdma.as_ref().map_or(0, |rdma| rdma.take_lane());
        let links = Arc::new(CtxLinks { links, lane });
        if let Some(connect) = &self.ctx_connect {
            crate::sync::lock(&connect.live).push(Arc::downgrade(&links));
        }
        Ok(Ctx { world: self, links })
    }
}

impl Ctx<'_> {
    /// Completes this context's operations, then closes it.
    pub fn destroy(self) -> Result<()> {
        self.world.quiet_on(self.stream())
    }
}

impl Drop for Ctx<'_> {
    /// Completes the context's operations, as `destroy` does, so a dropped
    /// context never leaves a put half-delivered; an error here (a lost
    /// peer) is reported by the world's next operation.
    fn drop(&mut self) {
        let _ = self.world.quiet_on(self.stream());
        if let Some(rdma) = &self.world.rdma {
            rdma.give_back(self.links.lane);
        }
    }
}
