//! How this rank reaches each peer: a closed set of paths, chosen per peer at
//! `init` and dispatched with `match`.
//!
//! Today there are two: the rank itself, and a same-host peer through shared
//! memory ([`shm`]). Remote paths (TCP, verbs) join this enum as variants;
//! nothing above this module needs to know which path a peer uses.

pub mod shm;

use crate::error::{Error, Result};
use crate::protocol::env::TRANSPORT;
use crate::segment::{Segment, ShmCard};
use serde::{Deserialize, Serialize};

/// What every rank publishes about itself in the bootstrap all-gather.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Card {
    pub host: String,
    pub heap_bytes: u64,
    pub shm: Option<ShmCard>,
}

/// The route to one peer.
pub enum Path {
    /// This rank: its own segment.
    Local,
    /// A peer on this host, its segment mapped into this process.
    Shm(Segment),
}

impl Path {
    /// Short name for messages and benchmarks.
    pub fn name(&self) -> &'static str {
        match self {
            Path::Local => "self",
            Path::Shm(_) => "shm",
        }
    }
}

/// Which transport the user asked for with `ONESIDE_TRANSPORT` / `rlaunch --transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Auto,
    Shm,
}

impl Choice {
    pub fn from_env(rank: usize) -> Result<Choice> {
        let requested = std::env::var(TRANSPORT).unwrap_or_else(|_| "auto".into());
        match requested.as_str() {
            "auto" | "" => Ok(Choice::Auto),
            "shm" => Ok(Choice::Shm),
            "tcp" | "verbs" => Err(Error::TransportUnavailable {
                rank,
                requested,
                detail: "this build of oneside has only the shared-memory transport; use --transport shm or auto"
                    .into(),
            }),
            _ => Err(Error::TransportUnavailable {
                rank,
                requested,
                detail: "expected one of auto, shm, tcp, verbs".into(),
            }),
        }
    }
}

/// Builds the path to every rank from the all-gathered cards.
pub fn connect_all(rank: usize, _choice: Choice, cards: &[Card]) -> Result<Vec<Path>> {
    let own = &cards[rank];
    let mut paths = Vec::with_capacity(cards.len());
    for (peer, card) in cards.iter().enumerate() {
        if card.heap_bytes != own.heap_bytes {
            return Err(Error::HeapMismatch {
                rank,
                peer,
                ours: own.heap_bytes as usize,
                theirs: card.heap_bytes as usize,
            });
        }
        let path = if peer == rank {
            Path::Local
        } else {
            shm::connect(rank, peer, own, card)?
        };
        paths.push(path);
    }
    Ok(paths)
}
