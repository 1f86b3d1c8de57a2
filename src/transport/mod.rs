//! How this rank reaches each peer: a closed set of paths, chosen per peer at
//! `init` and dispatched with `match`.
//!
//! There are five: the rank itself, a same-host peer through shared memory
//! ([`shm`]), any peer over TCP ([`tcp`]), any peer by RDMA ([`verbs`]),
//! and any peer through a libfabric provider ([`ofi`]). `auto` picks shared
//! memory where the peer's segment opens here, and between hosts verbs if
//! every rank published a verbs card, else ofi if every rank found a
//! hardware provider (cxi, efa, opx, psm2, psm3), TCP otherwise; a forced
//! choice applies to every peer but the rank itself.
//!
//! Whether the job uses verbs ([`job_nic`]) is decided from the
//! all-gathered cards alone, so every rank decides the same. A verbs job
//! sends every atomic through the NIC, so each rank then connects a queue
//! pair to every rank, same-host peers and itself included.

pub mod amo;
pub mod cards;
mod choice;
pub mod fault;
pub mod ofi;
pub mod parts;
pub mod rdma;
pub mod shm;
pub mod tcp;
pub mod verbs;

use crate::error::{Error, Result};
use crate::segment::ShmCard;
use cards::{CardTable, CardView};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use tcp::{Dial, TcpPeer};

pub use choice::{built_in, probe_libraries, TransportChoice};

/// What every rank publishes about itself in the bootstrap all-gather.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Card {
    pub host: String,
    pub heap_bytes: u64,
    pub shm: Option<ShmCard>,
    /// `ip:port` of the rank's TCP progress engine, if it runs one.
    pub tcp: Option<String>,
    /// The rank's RDMA endpoint, if it has an active verbs device.
    pub verbs: Option<VerbsCard>,
    /// The rank's libfabric endpoint, if the job may use ofi.
    pub ofi: Option<OfiCard>,
}

/// What a peer needs to reach this rank through libfabric.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OfiCard {
    /// The provider, e.g. "tcp;ofi_rxm": every rank must use the same.
    pub provider: String,
    /// The endpoint's address (`fi_getname`).
    pub name: Vec<u8>,
    /// The segment's base for RMA (0 unless `FI_MR_VIRT_ADDR`, when each
    /// part's addresses are offsets from the part's start).
    pub addr: u64,
    /// The key of part 0: the header and the heap's first `first` bytes
    /// (`transport::parts`); registered whole, the whole segment.
    pub key: u64,
    pub first: u64,
    /// The key of the global data's part, if it is registered apart.
    pub data_key: Option<u64>,
    /// Whether the heap's growth is registered as it comes (the
    /// provider pins what it registers), or the segment was registered
    /// whole: the same on every rank.
    pub grows: bool,
}

/// What a peer needs to reach this rank over RDMA.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerbsCard {
    pub port: u8,
    pub lid: u16,
    pub gid: [u8; 16],
    pub gid_index: u8,
    pub mtu: u32,
    pub psn: u32,
    /// This rank's queue pair number for each peer, indexed by peer rank.
    pub qpns: Vec<u32>,
    /// Virtual address of this rank's segment; the rkey of its part 0, the
    /// header and the heap's first `first` bytes (`transport::parts`).
    pub addr: u64,
    pub rkey: u32,
    pub first: u64,
    /// The rkey of the global data's part, if the program has some.
    pub data_rkey: Option<u32>,
}

/// The route to one peer.
pub enum Path {
    /// This rank: its own segment.
    Local,
    /// A peer on this host, its segment mapped into this process (now,
    /// or on first access).
    Shm(shm::PeerSegment),
    /// A peer reached over TCP, served by its progress engine (connected
    /// now, or on first use).
    Tcp(tcp::path::TcpPath),
    /// A peer reached by RDMA through the world's verbs transport.
    Verbs,
    /// A peer reached through the world's libfabric endpoint.
    Ofi,
}

impl Path {
    /// Short name for messages and benchmarks.
    pub fn name(&self) -> &'static str {
        match self {
            Path::Local => "self",
            Path::Shm(_) => "shm",
            Path::Tcp(_) => "tcp",
            Path::Verbs => "verbs",
            Path::Ofi => "ofi",
        }
    }
}

/// Which NIC transport the job uses, if any: the same on every rank, as
/// it reads only the all-gathered cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobNic {
    None,
    /// Forced, or `auto` with a verbs card from every rank (a rank
    /// publishes one only when the job spans hosts).
    Verbs,
    /// Forced, or `auto` with an ofi card (only a hardware provider
    /// publishes one under `auto`) from every rank and no verbs.
    Ofi,
}

/// Decides [`JobNic`] in one pass over the cards (a verbs card carries a
/// queue-pair number per rank, so each pass over a verbs job's table is
/// O(N²)): decide it once and hand it on.
pub fn job_nic(choice: TransportChoice, cards: &CardTable) -> JobNic {
    match choice {
        TransportChoice::Verbs => JobNic::Verbs,
        TransportChoice::Ofi => JobNic::Ofi,
        TransportChoice::Shm | TransportChoice::Tcp => JobNic::None,
        TransportChoice::Auto => {
            let (mut all_verbs, mut all_ofi) = (true, true);
            for p in 0..cards.len() {
                match cards.view(p) {
                    Ok(card) => {
                        all_verbs &= card.verbs.is_some();
                        all_ofi &= card.ofi.is_some();
                    }
                    Err(_) => (all_verbs, all_ofi) = (false, false),
                }
                if !all_verbs && !all_ofi {
                    break;
                }
            }
            match (all_verbs, all_ofi) {
                (true, _) => JobNic::Verbs,
                (false, true) => JobNic::Ofi,
                (false, false) => JobNic::None,
            }
        }
    }
}

/// `peer`'s card from the table, or why it cannot be read.
pub fn read_card(rank: usize, cards: &CardTable, peer: usize) -> Result<CardView<'_>> {
    cards.view(peer).map_err(|e| Error::BootstrapProtocol {
        rank,
        peer: format!("rank {peer}"),
        detail: format!("undecodable transport card: {e}"),
    })
}

/// The paths to every rank, and every rank's node.
pub struct Wired {
    pub paths: Vec<Path>,
    /// Each rank's node: ranks on one host that publish shared-memory
    /// segments map each other's heaps, and their node is the first of
    /// them; every other rank is a node of its own. Read from the cards
    /// alone, so every rank computes the same.
    pub nodes: Vec<usize>,
}

/// Builds the path to every rank from the all-gathered cards, reading
/// each in place, once ([`cards`]).
pub fn connect_all(
    rank: usize,
    (choice, nic): (TransportChoice, JobNic),
    cards: &CardTable,
    dial: &Dial,
    lazy_shm: bool,
) -> Result<Wired> {
    let own = read_card(rank, cards, rank)?;
    let lazy_tcp = cards.len() > tcp::path::eager_peers() + 1;
    let mut probes = shm::Probes::default();
    // The first rank of each host name among those with a segment.
    let mut first_of_host = cards::ByHost::default();
    let mut paths = Vec::with_capacity(cards.len());
    let mut nodes = Vec::with_capacity(cards.len());
    for peer in 0..cards.len() {
        let card = read_card(rank, cards, peer)?;
        if card.heap_bytes != own.heap_bytes {
            return Err(Error::HeapMismatch {
                rank,
                peer,
                ours: own.heap_bytes as usize,
                theirs: card.heap_bytes as usize,
            });
        }
        nodes.push(match card.shm {
            Some(_) => first_of_host.get_or_insert(card.host, peer),
            None => peer,
        });
        let unreachable = |detail: &str| Error::Unreachable {
            rank,
            peer,
            host: card.host_name(),
            detail: detail.into(),
        };
        let path = match choice {
            _ if peer == rank => Path::Local,
            TransportChoice::Shm => shm::connect(rank, peer, (&own, &card), lazy_shm, &mut probes)?,
            TransportChoice::Tcp => connect_tcp(rank, peer, &card, dial, lazy_tcp)?,
            TransportChoice::Verbs if own.verbs.is_some() && card.verbs.is_some() => Path::Verbs,
            TransportChoice::Verbs => {
                return Err(unreachable(
                    "--transport verbs was forced, but it has no active RDMA device",
                ))
            }
            TransportChoice::Ofi if own.ofi.is_some() && card.ofi.is_some() => Path::Ofi,
            TransportChoice::Ofi => {
                return Err(unreachable(
                    "--transport ofi was forced, but it opened no libfabric endpoint",
                ))
            }
            TransportChoice::Auto => match shm::connect(rank, peer, (&own, &card), lazy_shm, &mut probes) {
                Ok(path) => path,
                Err(_) if nic == JobNic::Verbs => Path::Verbs,
                Err(_) if nic == JobNic::Ofi => Path::Ofi,
                Err(_) if card.tcp.is_some() => connect_tcp(rank, peer, &card, dial, lazy_tcp)?,
                Err(e) => return Err(e),
            },
        };
        paths.push(path);
    }
    Ok(Wired { paths, nodes })
}

/// `card`'s TCP address, if it published one that parses.
pub fn tcp_addr(card: &CardView) -> Option<std::net::SocketAddr> {
    std::str::from_utf8(card.tcp?).ok()?.parse().ok()
}

fn connect_tcp(rank: usize, peer: usize, card: &CardView, dial: &Dial, lazy: bool) -> Result<Path> {
    let Some(addr) = card.tcp else {
        return Err(Error::Unreachable {
            rank,
            peer,
            host: card.host_name(),
            detail: "it runs no TCP transport".into(),
        });
    };
    let socket = tcp_addr(card).ok_or_else(|| Error::TcpConnect {
        rank,
        peer,
        addr: String::from_utf8_lossy(addr).into_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not an ip:port address"),
    })?;
    Ok(Path::Tcp(match lazy {
        true => tcp::path::TcpPath::lazy(),
        false => tcp::path::TcpPath::connected(dial_tcp(rank, peer, socket, dial)?),
    }))
}

/// Opens a link to `peer`'s progress engine at `addr` and registers it
/// with the rank's flusher.
pub(crate) fn dial_tcp(
    rank: usize,
    peer: usize,
    addr: std::net::SocketAddr,
    dial: &Dial,
) -> Result<Arc<Mutex<TcpPeer>>> {
    let link = TcpPeer::connect(rank, peer, addr, dial).map_err(|fault| Error::TcpConnect {
        rank,
        peer,
        addr: addr.to_string(),
        source: fault.into_io(),
    })?;
    let link = Arc::new(Mutex::new(link));
    if let Some(nudge) = &dial.nudge {
        nudge.register(&link);
    }
    Ok(link)
}
