//! Channels: the default context's links, or a communication context's own
//! (its TCP connection to each TCP peer and its NIC lane). What a context
//! owns is made and given back here; the `Ctx` API is in `ctx.rs`.

use super::Links;
use crate::error::{Error, Result};
use crate::transport::tcp::{Dial, TcpPeer};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

/// The links an operation travels on: the default context's, or a
/// context's own. Shared memory needs no links.
#[derive(Clone, Copy)]
pub enum Channel<'a> {
    Default,
    Ctx(&'a CtxLinks),
}

impl Channel<'_> {
    /// The race checker's name for the channel (`race::origin`): 0 for the
    /// default context, a created one's address otherwise.
    #[inline(always)]
    pub(crate) fn race_id(self) -> usize {
        match self {
            Channel::Default => 0,
            Channel::Ctx(links) => links as *const CtxLinks as usize,
        }
    }

    /// The atomicity domain of the channel's atomics: the slot of the
    /// team its context was made on (0: the world team's, as the default
    /// context's). Atomics on contexts of two teams are not atomic with
    /// each other, so the race checker keeps them apart.
    #[inline(always)]
    pub(crate) fn domain(self) -> usize {
        match self {
            Channel::Default => 0,
            Channel::Ctx(links) => links.domain,
        }
    }

    /// The NIC lane the channel's operations take (0: the default's).
    #[inline(always)]
    pub(crate) fn lane(self) -> usize {
        match self {
            Channel::Default => 0,
            Channel::Ctx(links) => links.lane,
        }
    }
}

/// Where a context's TCP links connect: each TCP peer's progress engine,
/// and the job secret that admits them (kept when there are TCP peers);
/// and the contexts alive, whose batches a local wait pushes out.
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

/// A context's TCP links, one per TCP peer, indexed by rank, and its lane.
pub struct CtxLinks {
    links: Vec<Option<Arc<Mutex<TcpPeer>>>>,
    /// The NIC lane (0: the default context's, shared).
    pub(crate) lane: usize,
    /// The slot of the team the context was made on (`Channel::domain`).
    pub(crate) domain: usize,
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

impl Links {
    /// A new context's links: a connection to each TCP peer and a NIC lane
    /// of its own while lanes last. A peer that refuses the connection is an
    /// error of this call only (`Error::TcpConnect`); it breaks nothing else.
    pub(crate) fn open_ctx(&self, domain: usize) -> Result<Arc<CtxLinks>> {
        let mut links: Vec<Option<Arc<Mutex<TcpPeer>>>> = (0..self.size).map(|_| None).collect();
        if let Some(connect) = &self.ctx_connect {
            for &peer in &self.tcp_peers {
                let addr = connect.addrs[peer].ok_or_else(|| Error::Unreachable {
                    rank: self.rank,
                    peer,
                    host: String::new(),
                    detail: "no progress engine address for a context's connection".into(),
                })?;
                links[peer] = Some(crate::transport::dial_tcp(self.rank, peer, addr, &connect.dial)?);
            }
        }
        let lane = self.rdma.as_ref().map_or(0, |rdma| rdma.take_lane());
        let links = Arc::new(CtxLinks { links, lane, domain });
        if let Some(connect) = &self.ctx_connect {
            crate::sync::lock(&connect.live).push(Arc::downgrade(&links));
        }
        Ok(links)
    }

    /// Gives a closed context's NIC lane back (its TCP links close when the
    /// last reference goes).
    pub(crate) fn close_ctx(&self, links: &CtxLinks) {
        if let Some(rdma) = &self.rdma {
            rdma.give_back(links.lane);
        }
    }
}
