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

use crate::error::Result;
use crate::links::{Channel, CtxLinks};
use crate::world::World;
use std::sync::Arc;

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
    fn channel(&self) -> Channel<'_>;
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
    fn channel(&self) -> Channel<'_> {
        Channel::Default
    }
}

impl Endpoint for Ctx<'_> {
    #[inline(always)]
    fn world(&self) -> &World {
        self.world
    }
    #[inline(always)]
    fn channel(&self) -> Channel<'_> {
        Channel::Ctx(&self.links)
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
    fn channel(&self) -> Channel<'_> {
        match self {
            AnyEndpoint::Default(_) => Channel::Default,
            AnyEndpoint::Ctx(ctx) => Channel::Ctx(&ctx.links),
        }
    }
}

impl World {
    /// Creates a communication context: a stream of one-sided operations
    /// whose `quiet` and `fence` cover its own operations (see the module
    /// docs for what each path gives it). Not collective; any thread may
    /// create one. Over TCP it opens a connection to each TCP peer, so a
    /// peer that cannot accept one more is an `Err`.
    #[track_caller]
    pub fn ctx_create(&self) -> Result<Ctx<'_>> {
        crate::error::located(|| self.open_ctx(0))
    }

    /// Creates a context on `team` (OpenSHMEM's `shmem_team_create_ctx`):
    /// as [`ctx_create`](World::ctx_create), but its atomics share the
    /// team's atomicity domain. Atomics on contexts of two different teams
    /// are not atomic with each other, and the race checker reports them
    /// when they meet on one word. Its operations still take world ranks
    /// ([`Team::world_rank`](crate::Team::world_rank) translates).
    #[track_caller]
    pub fn team_ctx_create(&self, team: &crate::Team) -> Result<Ctx<'_>> {
        crate::error::located(|| self.open_ctx(team.slot))
    }

    fn open_ctx(&self, domain: usize) -> Result<Ctx<'_>> {
        Ok(Ctx {
            world: self,
            links: self.links.open_ctx(domain)?,
        })
    }
}

impl Ctx<'_> {
    /// Completes this context's operations, then closes it.
    #[track_caller]
    pub fn destroy(self) -> Result<()> {
        crate::error::located(|| {
            self.world.links.quiet_on(self.channel())?;
            if crate::race::on() {
                crate::race::release(true, self.channel().race_id());
            }
            Ok(())
        })
    }
}

impl Drop for Ctx<'_> {
    /// Completes the context's operations, as `destroy` does, so a dropped
    /// context never leaves a put half-delivered; an error here (a lost
    /// peer) is reported by the world's next operation.
    fn drop(&mut self) {
        let _ = self.world.links.quiet_on(self.channel());
        self.world.links.close_ctx(&self.links);
    }
}
