//! The shared-memory path to a peer on the same host.
//!
//! A peer is "on the same host" when its segment opens here with the token it
//! announced: a host name alone could lie (two machines with one name, one
//! machine under two names, or hosts that share a kernel but not `/dev/shm`).
//! The first peer of each host name is opened to decide; the rest of that
//! host's peers follow its verdict.
//!
//! Up to [`eager_peers`] same-host peers are mapped at wire-up, and their
//! files unlinked after it. Beyond that, as Open MPI's add_procs cutoff does
//! for connections, a peer is mapped on first access ([`PeerSegment`]), so a
//! node of N ranks makes the mappings its ranks use, not N² of them; the
//! files then stay until finalize (or the launcher's sweep).
//!
//! Data moves with plain copies into and out of the peer's mapping; ordering
//! comes from the Release stores and Acquire loads on the barrier flags.

use super::cards::{ByHost, CardTable, CardView};
use super::Path;
use crate::error::{Error, Result};
use crate::segment::Segment;
use std::sync::OnceLock;

/// How many same-host peers are mapped at wire-up (`ONESIDE_SHM_EAGER_PEERS`,
/// default 64); with more, peers are mapped on first access.
pub fn eager_peers() -> usize {
    crate::protocol::env::count_or("ONESIDE_SHM_EAGER_PEERS", 64)
}

/// A same-host peer's segment: mapped at wire-up, or on first access,
/// when its card is read from the job's [`CardTable`]. Small (a peer of a
/// 2048-rank host is one of 2048 in every rank), and one load from the
/// heap base once mapped, as a mapped [`Segment`] in place would be.
pub struct PeerSegment {
    mapped: OnceLock<Mapped>,
}

/// A mapped peer: its heap base, and the mapping that keeps it valid.
struct Mapped {
    heap: *mut u8,
    _segment: Box<Segment>,
}

// SAFETY: `heap` points into `_segment`'s mapping, which lives as long as
// this value and is shared memory every thread may address (as `Segment`,
// which is Send and Sync); nothing here is tied to a thread.
unsafe impl Send for Mapped {}
// SAFETY: as above; `Mapped` is never written after it is set.
unsafe impl Sync for Mapped {}

impl Mapped {
    fn new(segment: Segment) -> Mapped {
        Mapped {
            heap: segment.heap_base(),
            _segment: Box::new(segment),
        }
    }
}

impl PeerSegment {
    /// The peer's heap base in this process, mapping it first (from its
    /// card in `cards`) if need be.
    #[inline]
    pub fn heap_base(&self, cards: &CardTable, rank: usize, peer: usize) -> Result<*mut u8> {
        match self.mapped.get() {
            Some(mapped) => Ok(mapped.heap),
            None => self.map(cards, rank, peer),
        }
    }

    /// The heap base if the peer is mapped already.
    pub fn mapped_base(&self) -> Option<*mut u8> {
        self.mapped.get().map(|mapped| mapped.heap)
    }

    #[cold]
    fn map(&self, cards: &CardTable, rank: usize, peer: usize) -> Result<*mut u8> {
        // connect() read this card already, so it decodes and has a segment.
        let card = cards.view(peer).ok().and_then(|view| view.shm.map(|shm| shm.to_card()));
        let Some(card) = card else {
            return Err(Error::BootstrapProtocol {
                rank,
                peer: format!("rank {peer}"),
                detail: "its card in the table no longer reads as a shared-memory card".into(),
            });
        };
        let segment = Segment::open_peer(&card).map_err(|detail| Error::PeerSegment {
            rank,
            peer,
            path: card.path.clone(),
            detail: format!("{detail} (mapping it on first use: did rank {peer} exit?)"),
        })?;
        // Two threads may race here; the loser's mapping is dropped unused.
        let _ = self.mapped.set(Mapped::new(segment));
        Ok(self.mapped.get().expect("set above").heap)
    }
}

/// What the first peer of each host name showed: whether its segment opens
/// here.
pub type Probes<'a> = ByHost<'a, bool>;

/// The path to `peer` by shared memory, or why it cannot be reached.
/// `lazy`: map later, on first access, once its host is known to share memory.
pub fn connect<'a>(
    rank: usize,
    peer: usize,
    (own, card): (&CardView, &CardView<'a>),
    lazy: bool,
    probes: &mut Probes<'a>,
) -> Result<Path> {
    let unreachable = |detail: String| Error::Unreachable {
        rank,
        peer,
        host: card.host_name(),
        detail,
    };
    let Some(shm) = &card.shm else {
        return Err(unreachable(
            "it published no shared-memory segment (alone on its host, or TCP forced)".into(),
        ));
    };
    let segment = |mapped: OnceLock<Mapped>| Path::Shm(PeerSegment { mapped });
    match probes.get(card.host) {
        Some(true) if lazy => return Ok(segment(OnceLock::new())),
        Some(false) => {
            return Err(unreachable(format!(
                "another rank of host '{}' showed that its shared memory is not this rank's",
                card.host_name()
            )))
        }
        _ => {}
    }
    let shm = shm.to_card();
    match Segment::open_peer(&shm) {
        Ok(mapped) => {
            probes.set(card.host, true);
            Ok(segment(OnceLock::from(Mapped::new(mapped))))
        }
        // Host names can alias one machine ("localhost", its real name), so
        // the segment decides; a different name only explains a failure.
        Err(detail) if card.host != own.host => {
            probes.set(card.host, false);
            Err(unreachable(format!(
                "it runs on another host than this rank ('{}'), so shared memory cannot reach it ({detail})",
                own.host_name()
            )))
        }
        Err(detail) => Err(Error::PeerSegment {
            rank,
            peer,
            path: shm.path,
            detail,
        }),
    }
}

/// Copies `bytes` bytes from `src` to `dst`.
///
/// # Safety
/// `src` must be valid for `bytes` reads and `dst` for `bytes` writes, and
/// the two ranges must not overlap. Either range may lie in memory another
/// process writes concurrently; no Rust reference to it may exist.
///
/// Word-sized copies to aligned destinations are single stores, so a peer
/// polling that word (`wait_until`) never sees it half-written.
#[inline]
pub unsafe fn copy(src: *const u8, dst: *mut u8, bytes: usize) {
    // SAFETY: forwarded from the caller's contract, in every arm; the word
    // arms check the destination's alignment and read the source unaligned.
    unsafe {
        match bytes {
            8 if dst.cast::<u64>().is_aligned() => dst.cast::<u64>().write_volatile(src.cast::<u64>().read_unaligned()),
            4 if dst.cast::<u32>().is_aligned() => dst.cast::<u32>().write_volatile(src.cast::<u32>().read_unaligned()),
            _ => std::ptr::copy_nonoverlapping(src, dst, bytes),
        }
    }
}
