//! The face of the verbs transport to the rest of the crate: [`prepare`]
//! opens libibverbs (at run time) and the device, [`Pending::connect`]
//! connects the queue pairs, and [`RdmaLink`] serves the primitives.

use super::amo::Amo;
use super::amo::SignalOp;
use super::fault::Fault;
use super::{OfiCard, VerbsCard};
use crate::error::{Error, Result};
use crate::segment::RawSegment;

/// The connected NIC transport, one of a closed set: verbs (its lanes:
/// lane 0 is the default context's, each other one serves one
/// communication context at a time; and the lanes no context holds), or
/// ofi (one endpoint every context shares, and the progress thread of a
/// provider that needs one).
pub enum RdmaLink {
    Verbs {
        lanes: Vec<std::sync::Mutex<super::verbs::Verbs>>,
        free: std::sync::Mutex<Vec<usize>>,
        /// The registration the lanes share, for the heap's growth.
        memory: super::verbs::Memory,
    },
    Ofi {
        link: std::sync::Arc<std::sync::Mutex<super::ofi::Ofi>>,
        _progress: Option<super::ofi::progress::Progress>,
        /// The rank's long waits keep polling (`Prepared::waits_poll`).
        waits_poll: bool,
        /// The heap's growth is registered as it comes (`OfiCard::grows`).
        grows: bool,
    },
}

/// The verbs device open and the queue pairs created, waiting for the cards.
pub struct Pending(super::verbs::Prepared);

/// Opens libibverbs and the RDMA device if one is wanted. With `required`
/// (`--transport verbs`) a missing library or device, or a down port, is an
/// error; otherwise `None`.
pub fn prepare(rank: usize, size: usize, segment: RawSegment, required: bool) -> Result<Option<Pending>> {
    let setup = super::verbs::Settings::from_env().and_then(|s| super::verbs::prepare(size, segment, &s));
    match setup {
        Ok(prepared) => Ok(Some(Pending(prepared))),
        Err(fault) if required => Err(Error::RdmaSetup {
            rank,
            detail: fault.to_string(),
        }),
        Err(_) => Ok(None),
    }
}

/// Opens libfabric and an endpoint if one is wanted. With `required`
/// (`--transport ofi`) any failure is an error; otherwise (`auto`) only a
/// provider with RMA and atomics in hardware is taken, and `None` otherwise.
pub fn prepare_ofi(
    rank: usize,
    (size, local_size): (usize, usize),
    segment: RawSegment,
    required: bool,
) -> Result<Option<super::ofi::Prepared>> {
    let own_core = crate::backoff::may_spin(local_size, 1);
    match super::ofi::prepare(size, segment, !required, own_core) {
        Ok(prepared) => Ok(Some(prepared)),
        Err(fault) if required => Err(Error::OfiSetup {
            rank,
            detail: fault.to_string(),
        }),
        Err(_) => Ok(None),
    }
}

/// Connects the ofi endpoint to every rank (all have a card in an ofi job).
/// `local_size` ranks share this host: waits spin only if each of them has
/// a core. A rank has one busy thread at a time: its progress thread
/// sleeps while the rank polls, and spins, for a while after an arrival,
/// only while its rank naps. (Waits counted two threads a rank until
/// 2026-11-27; counting one made capi_lat's 8-byte figures 5% faster over
/// tcp;ofi_rxm and 10-15% over shm, 2 ranks on 2 cores.)
pub fn connect_ofi(
    prepared: super::ofi::Prepared,
    rank: usize,
    local_size: usize,
    cards: &[Option<OfiCard>],
) -> Result<RdmaLink> {
    let manual = prepared.manual_progress();
    let waits_poll = prepared.waits_poll();
    let own_core = prepared.own_core();
    let grows = prepared.card().grows;
    let mut link = prepared.connect(cards).map_err(|fault| fault.into_error(rank))?;
    link.wire_up(rank).map_err(|fault| fault.into_error(rank))?;
    link.check_direct_writes(rank).map_err(|fault| fault.into_error(rank))?;
    let link = std::sync::Arc::new(std::sync::Mutex::new(link));
    let progress = match manual {
        true => Some(
            super::ofi::progress::Progress::start(
                rank,
                link.clone(),
                crate::backoff::may_spin(local_size, 2),
                own_core,
            )
            .map_err(|fault| Error::ThreadStart {
                rank,
                thread: "libfabric progress",
                source: fault.into_io(),
            })?,
        ),
        false => None,
    };
    Ok(RdmaLink::Ofi {
        link,
        _progress: progress,
        waits_poll,
        grows,
    })
}

impl Pending {
    pub fn card(&self) -> VerbsCard {
        self.0.card()
    }

    /// Connects a queue pair to every rank that has a card here (in a verbs
    /// job: every rank, this one included, whatever its data path);
    /// `by_rdma[p]` says whether rank `p`'s data goes by RDMA.
    pub fn connect(self, rank: usize, cards: &[Option<VerbsCard>], by_rdma: &[bool]) -> Result<RdmaLink> {
        self.0
            .connect(rank, cards, by_rdma)
            .map(|lanes| RdmaLink::Verbs {
                free: std::sync::Mutex::new((1..lanes.len()).rev().collect()),
                memory: lanes[0].memory(),
                lanes: lanes.into_iter().map(std::sync::Mutex::new).collect(),
            })
            .map_err(|fault| fault.into_error(rank))
    }
}

/// Runs `$body` with `$t` bound to the locked backend of `$lane`: the same
/// method exists on both, so each primitive is one line per backend.
macro_rules! on_lane {
    ($link:expr, $lane:expr, |$t:ident| $body:expr) => {
        #[allow(unused_mut)]
        match $link {
            RdmaLink::Verbs { lanes, .. } => {
                let mut $t = crate::sync::lock(&lanes[$lane]);
                $body
            }
            RdmaLink::Ofi { link, .. } => {
                let mut $t = crate::sync::lock(link);
                $body
            }
        }
    };
}

impl RdmaLink {
    pub fn put(&self, lane: usize, peer: usize, offset: usize, src: &[u8]) -> std::result::Result<(), Fault> {
        on_lane!(self, lane, |t| t.put(peer, offset, src))
    }
    pub fn get(&self, lane: usize, peer: usize, offset: usize, dst: &mut [u8]) -> std::result::Result<(), Fault> {
        on_lane!(self, lane, |t| t.get(peer, offset, dst))
    }
    pub fn flag(&self, lane: usize, peer: usize, offset: usize, value: u64) -> std::result::Result<(), Fault> {
        on_lane!(self, lane, |t| t.flag(peer, offset, value))
    }
    pub fn quiet(&self, lane: usize) -> std::result::Result<(), Fault> {
        on_lane!(self, lane, |t| t.quiet())
    }
    pub fn poll(&self, lane: usize) -> std::result::Result<(), Fault> {
        on_lane!(self, lane, |t| t.poll())
    }
    /// Whether this rank's long waits must keep polling to serve its
    /// peers (ofi without a CQ wait descriptor, by choice).
    pub fn waits_poll(&self) -> bool {
        matches!(self, RdmaLink::Ofi { waits_poll: true, .. })
    }
    pub fn device_name(&self) -> String {
        on_lane!(self, 0, |t| t.device_name().to_string())
    }
    /// A lane of its own for a new context, or lane 0 (shared with the
    /// default context) when every other lane is taken; ofi has one.
    pub fn take_lane(&self) -> usize {
        match self {
            RdmaLink::Verbs { free, .. } => crate::sync::lock(free).pop().unwrap_or(0),
            RdmaLink::Ofi { .. } => 0,
        }
    }
    /// Gives back a context's lane, once its work has completed.
    pub fn give_back(&self, lane: usize) {
        if let (RdmaLink::Verbs { free, .. }, true) = (self, lane != 0) {
            crate::sync::lock(free).push(lane);
        }
    }
    pub fn amo(&self, lane: usize, peer: usize, offset: usize, amo: Amo) -> std::result::Result<u64, Fault> {
        on_lane!(self, lane, |t| t.amo(peer, offset, amo))
    }
    pub fn signal_word(
        &self,
        lane: usize,
        peer: usize,
        offset: usize,
        op: SignalOp,
        value: u64,
    ) -> std::result::Result<(), Fault> {
        on_lane!(self, lane, |t| t.signal_word(peer, offset, op, value))
    }
    /// # Safety
    /// `dst` must stay valid for `len` bytes of writes, untouched, until the
    /// next `quiet` returns (or fails, which forgets the destination).
    pub unsafe fn get_nbi(
        &self,
        lane: usize,
        peer: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> std::result::Result<(), Fault> {
        // SAFETY: forwarded from this function's contract.
        on_lane!(self, lane, |t| unsafe { t.get_nbi(peer, offset, dst, len) })
    }
    /// # Safety
    /// `src` must stay valid for `len` bytes of reads, unchanged, until
    /// the next `quiet` returns (or fails).
    pub unsafe fn put_nbi(
        &self,
        lane: usize,
        peer: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> std::result::Result<(), Fault> {
        // SAFETY: forwarded from this function's contract.
        on_lane!(self, lane, |t| unsafe { t.put_nbi(peer, offset, src, len) })
    }
    pub fn fence(&self, lane: usize) -> std::result::Result<(), Fault> {
        on_lane!(self, lane, |t| t.fence())
    }
}

/// The heap's growth: a grown range registered, its keys exchanged by
/// the caller (`Links::grown`), then published or abandoned. The keys of a
/// range travel as bytes: an rkey (4) for verbs, a key (8) for ofi.
impl RdmaLink {
    /// Whether a grown heap range must be registered (verbs; ofi with a
    /// provider that pins what it registers): the same on every rank.
    pub fn registers_memory(&self) -> bool {
        match self {
            RdmaLink::Verbs { .. } => true,
            RdmaLink::Ofi { grows, .. } => *grows,
        }
    }

    /// Registers heap offsets `[start, start + len)`, committed on this
    /// rank; returns the part's number and this rank's key, or why not.
    pub fn register_part(&self, start: usize, len: usize) -> std::result::Result<(usize, Vec<u8>), String> {
        match self {
            RdmaLink::Verbs { memory, .. } => memory.register(start, len),
            RdmaLink::Ofi { link, .. } => crate::sync::lock(link).register_part(start, len),
        }
    }

    /// Every rank registered part `index`: learns their keys (index =
    /// rank), after which the part may be used. A key that cannot be read
    /// names its rank.
    pub fn publish_part(&self, index: usize, keys: &[Vec<u8>]) -> std::result::Result<(), (usize, String)> {
        match self {
            RdmaLink::Verbs { memory, .. } => memory.publish(index, keys),
            RdmaLink::Ofi { link, .. } => crate::sync::lock(link).publish_part(index, keys),
        }
    }

    /// Some rank could not register part `index`: this rank deregisters its own.
    pub fn abandon_part(&self, index: usize) {
        match self {
            RdmaLink::Verbs { memory, .. } => memory.abandon(index),
            RdmaLink::Ofi { link, .. } => crate::sync::lock(link).abandon_part(index),
        }
    }
}
