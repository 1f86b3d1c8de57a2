//! Bringing the verbs transport up: open the device, check the port and its
//! atomics, pick the GID, register what is committed of this rank's
//! segment (`memory`); for each lane a CQ,
//! a staging buffer and one queue pair per rank in INIT, this rank's own
//! included ([`prepare`]); then, with the cards, move them to RTS
//! ([`Prepared::connect`]). A card lists its queue pair numbers lane after
//! lane; the job uses as many lanes as every card has. This rank's own pair is connected to itself (its
//! number in this rank's card), a loopback through the NIC that atomics on
//! this rank's own words take.

use super::device::{Context, MemoryRegion, ProtectionDomain};
use super::memory::{fault_rkey, Device};
use super::queue::{CompletionQueue, Init, LocalPort, QueuePair, RemoteEnd, CQ_DEPTH, SQ_DEPTH};
use super::sys as ffi;
use super::{Peer, Verbs, CTX_RING_BYTES, RING_BYTES};
use crate::segment::RawSegment;
use crate::transport::fault::Fault;
use crate::transport::VerbsCard;
use std::collections::VecDeque;

/// `ONESIDE_VERBS_DEVICE`, `_PORT`, `_GID_INDEX` (set by rlaunch's
/// `--device`, `--port`, `--gid-index`), and `ONESIDE_VERBS_CONTEXTS`, the
/// lanes for communication contexts beyond the default one.
pub struct Settings {
    pub device: Option<String>,
    pub port: u8,
    pub gid_index: Option<u8>,
    pub contexts: u8,
}

/// Context lanes when `ONESIDE_VERBS_CONTEXTS` is not set.
const DEFAULT_CONTEXT_LANES: u8 = 4;

/// What the connection's faults say was being done.
const OP_CONNECT: &str = "connect the queue pair";

impl Settings {
    pub fn from_env() -> Result<Settings, Fault> {
        let number = |var: &str| -> Result<Option<u8>, Fault> {
            match std::env::var(var) {
                Err(_) => Ok(None),
                Ok(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{var}={v:?} is not a number from 0 to 255").into()),
            }
        };
        Ok(Settings {
            device: std::env::var("ONESIDE_VERBS_DEVICE").ok().filter(|d| !d.is_empty()),
            port: number("ONESIDE_VERBS_PORT")?.unwrap_or(1),
            gid_index: number("ONESIDE_VERBS_GID_INDEX")?,
            contexts: number("ONESIDE_VERBS_CONTEXTS")?.unwrap_or(DEFAULT_CONTEXT_LANES),
        })
    }
}

/// One lane's queue pairs, created, not yet connected. Drops in the same
/// order as `Verbs`.
struct PreparedLane {
    pending: Vec<Option<QueuePair<Init>>>,
    cq: CompletionQueue,
    staging_mr: MemoryRegion,
    staging: Box<[u8]>,
    ring_bytes: usize,
}

/// Every lane prepared, then the shared device (dropped after them).
pub struct Prepared {
    lanes: Vec<PreparedLane>,
    device: std::sync::Arc<Device>,
    cq_depth: i32,
    local: LocalPort,
    lid: u16,
    gid: [u8; 16],
    psn: u32,
    segment_addr: u64,
}

/// Opens the device and prepares one queue pair for each of the job's `size` ranks, this one's included.
pub fn prepare(size: usize, segment: RawSegment, settings: &Settings) -> Result<Prepared, Fault> {
    let context = Context::open(super::library::load()?, settings.device.as_deref())?;
    let port = context.port(settings.port)?;
    if port.state != ffi::IBV_PORT_ACTIVE {
        return Err(format!(
            "port {} of {} is not active (state {}): check the link (`ibv_devinfo`, `rdma link`)",
            settings.port, context.name, port.state
        )
        .into());
    }
    let ethernet = port.link_layer == ffi::IBV_LINK_LAYER_ETHERNET;
    let gid_index = match settings.gid_index {
        Some(index) => index,
        None => pick_gid(&context, settings.port, port.gid_tbl_len)?,
    };
    let gid = context.gid(settings.port, gid_index)?;
    let use_gid = ethernet || port.lid == 0;
    if use_gid && gid == [0; 16] {
        return Err(format!(
            "GID {gid_index} of {} port {} is empty; pick another with --gid-index",
            context.name, settings.port
        )
        .into());
    }
    let device = context.attributes()?;
    if device.atomic_cap == ffi::IBV_ATOMIC_NONE {
        return Err(format!(
            "{} has no RDMA atomics (atomic_cap NONE), which a verbs job needs for every atomic",
            context.name
        )
        .into());
    }
    let local = LocalPort {
        port: settings.port,
        gid_index,
        use_gid,
        mtu: port.active_mtu,
        // One depth for both ends (READs and ATOMICs in flight as requester,
        // and served as responder), within what the device allows for both.
        max_rd_atomic: device.max_qp_rd_atom.min(device.max_qp_init_rd_atom).clamp(1, 16) as u8,
    };

    let pd = ProtectionDomain::new(&context)?;
    let segment_base = segment.heap_base().wrapping_sub(crate::segment::HEADER_BYTES);
    // Only what is committed: part 0 and the global data (`memory`).
    let shared = Device::register(context, pd, segment)?;
    let (context, pd) = (&shared.context, shared.pd());
    // Room for every WR of every queue pair of a lane in flight, as far as
    // the device allows; `Verbs::credits` keeps the WRs in flight within it.
    let cq_depth = (size as i64 * i64::from(SQ_DEPTH))
        .max(i64::from(CQ_DEPTH))
        .min(i64::from(device.max_cqe.max(1))) as i32;
    // One starting PSN for all of this rank's queue pairs: the card carries one.
    let psn = u32::from_le_bytes(crate::protocol::auth::random_bytes()) & 0x00ff_ffff;
    let mut lanes = Vec::with_capacity(1 + usize::from(settings.contexts));
    for lane in 0..=usize::from(settings.contexts) {
        let ring_bytes = if lane == 0 { RING_BYTES } else { CTX_RING_BYTES };
        let mut staging = vec![0u8; ring_bytes * size].into_boxed_slice();
        // SAFETY: `staging` is a heap buffer owned by the lane, dropped after the MR.
        let staging_mr = unsafe { MemoryRegion::register(pd, staging.as_mut_ptr(), staging.len()) }?;
        let cq = CompletionQueue::new(context, cq_depth)?;
        let mut pending = Vec::with_capacity(size);
        for _ in 0..size {
            pending.push(Some(QueuePair::create(pd, &cq, &local, psn)?));
        }
        lanes.push(PreparedLane {
            pending,
            cq,
            staging_mr,
            staging,
            ring_bytes,
        });
    }
    Ok(Prepared {
        lanes,
        device: std::sync::Arc::new(shared),
        cq_depth,
        local,
        lid: port.lid,
        gid,
        psn,
        segment_addr: segment_base as u64,
    })
}

/// The RoCE v2 IPv4-mapped GID if there is one, else the first non-empty GID.
fn pick_gid(context: &Context, port: u8, table_len: i32) -> Result<u8, Fault> {
    let types = format!("/sys/class/infiniband/{}/ports/{port}/gid_attrs/types", context.name);
    let mut first = None;
    let mut seen = Vec::new();
    // GID indices are a u8 in the verbs API: look at most at the first 256.
    for index in (0..table_len.clamp(0, 256) as usize).map(|i| i as u8) {
        let gid = match context.gid(port, index) {
            Ok(gid) => gid,
            Err(e) => {
                seen.push(e.to_string());
                continue;
            }
        };
        if gid == [0; 16] {
            continue;
        }
        first.get_or_insert(index);
        let kind = std::fs::read_to_string(format!("{types}/{index}")).unwrap_or_default();
        let ipv4_mapped = gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff];
        if kind.trim() == "RoCE v2" && ipv4_mapped {
            return Ok(index);
        }
    }
    first.ok_or_else(|| {
        format!(
            "{} port {port} has no usable GID among {table_len} entries ({})",
            context.name,
            seen.join("; ")
        )
        .into()
    })
}

impl Prepared {
    /// What peers need to connect to this rank: its queue pair numbers, lane
    /// after lane.
    pub fn card(&self) -> VerbsCard {
        let (rkey, first, data_rkey) = self.device.card_parts();
        VerbsCard {
            port: self.local.port,
            lid: self.lid,
            gid: self.gid,
            gid_index: self.local.gid_index,
            mtu: self.local.mtu,
            psn: self.psn,
            qpns: self
                .lanes
                .iter()
                .flat_map(|lane| lane.pending.iter().map(|qp| qp.as_ref().map_or(0, |qp| qp.qpn())))
                .collect(),
            addr: self.segment_addr,
            rkey,
            first,
            data_rkey,
        }
    }

    /// Connects, in each lane that every card has, the queue pair of every
    /// rank that has a card (this rank's own card connects its loopback
    /// pair to itself); `by_rdma[p]` says whether rank `p`'s data goes by
    /// RDMA rather than by CPU. Lane 0 comes first.
    pub fn connect(self, rank: usize, cards: &[Option<VerbsCard>], by_rdma: &[bool]) -> Result<Vec<Verbs>, Fault> {
        let size = cards.len().max(1);
        let lanes_in_every_card = cards
            .iter()
            .flatten()
            .map(|card| card.qpns.len() / size)
            .min()
            .unwrap_or(0)
            .min(self.lanes.len());
        if lanes_in_every_card == 0 {
            let peer = cards
                .iter()
                .position(|c| c.as_ref().is_some_and(|c| c.qpns.len() < size));
            return Err(Fault::with(
                peer.unwrap_or(rank),
                OP_CONNECT,
                "its card has no queue pair for this rank",
            ));
        }
        self.device
            .learn(cards, fault_rkey)
            .map_err(|(peer, why)| Fault::with(peer, OP_CONNECT, why))?;
        let credits = (u64::from(SQ_DEPTH) - 1).min(self.cq_depth as u64 / size as u64).max(1);
        let mut connected = Vec::with_capacity(lanes_in_every_card);
        for (index, lane) in self.lanes.into_iter().take(lanes_in_every_card).enumerate() {
            connected.push(connect_lane(
                lane,
                index,
                &self.device,
                &self.local,
                (rank, cards, by_rdma),
                credits,
            )?);
        }
        Ok(connected)
    }
}

/// Connects lane `index`: its queue pair to each rank with a card.
fn connect_lane(
    mut lane: PreparedLane,
    index: usize,
    device: &std::sync::Arc<Device>,
    local: &LocalPort,
    (rank, cards, by_rdma): (usize, &[Option<VerbsCard>], &[bool]),
    credits: u64,
) -> Result<Verbs, Fault> {
    let size = cards.len();
    let mut peers = Vec::with_capacity(size);
    for (peer, card) in cards.iter().enumerate() {
        let (Some(qp), Some(card)) = (lane.pending[peer].take(), card) else {
            peers.push(None);
            continue;
        };
        let remote = RemoteEnd {
            qpn: card.qpns[index * size + rank],
            psn: card.psn,
            lid: card.lid,
            gid: card.gid,
            mtu: card.mtu,
        };
        let qp = qp
            .connect(local, &remote)
            .map_err(|fault| Fault::with(peer, OP_CONNECT, fault.to_string()))?;
        peers.push(Some(Peer {
            qp,
            remote_base: card.addr,
            rkey: fault_rkey(peer, card.rkey),
            hint: Default::default(),
            ring_base: peer * lane.ring_bytes,
            ring_head: 0,
            ring_tail: 0,
            posted: 0,
            completed: 0,
            since_signal: 0,
            signal_next: false,
            fence_next: false,
            cpu_data: !by_rdma.get(peer).copied().unwrap_or(false),
            last_read_or_atomic: 0,
            signalled: VecDeque::new(),
            landings: VecDeque::new(),
        }));
    }
    let inline_max = peers
        .iter()
        .flatten()
        .map(|p| p.qp.max_inline as usize)
        .min()
        .unwrap_or(0);
    Ok(Verbs {
        peers,
        cq: lane.cq,
        staging_mr: lane.staging_mr,
        device: std::sync::Arc::clone(device),
        staging: lane.staging,
        ring_bytes: lane.ring_bytes,
        chunk_bytes: lane.ring_bytes / 4,
        first_end: device.parts.get().map_or(0, |parts| parts.first_end()),
        inline_max,
        credits,
        completions: Box::new([ffi::ibv_wc::default(); 32]),
    })
}
