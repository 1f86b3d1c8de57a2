//! The shared-memory path to a peer on the same host.
//!
//! A peer is "on the same host" when its card names our host and its segment
//! opens here with the token it announced: a host name alone could lie (two
//! machines with one name, or hosts that share a kernel but not `/dev/shm`).
//!
//! Data moves with plain copies into and out of the peer's mapping; ordering
//! comes from the Release stores and Acquire loads on the barrier flags.

use super::{Card, Path};
use crate::error::{Error, Result};
use crate::segment::Segment;

/// Maps `peer`'s segment, or explains why it cannot be reached.
pub fn connect(rank: usize, peer: usize, own: &Card, card: &Card) -> Result<Path> {
    let unreachable = |detail: String| Error::Unreachable {
        rank,
        peer,
        host: card.host.clone(),
        detail,
    };
    if card.host != own.host {
        return Err(unreachable(format!(
            "it runs on another host than this rank ('{}'), and this build has no network transport yet",
            own.host
        )));
    }
    let Some(shm) = &card.shm else {
        return Err(unreachable("it published no shared-memory segment".into()));
    };
    Segment::open_peer(shm).map(Path::Shm).map_err(|detail| Error::PeerSegment {
        rank,
        peer,
        path: shm.path.clone(),
        detail,
    })
}

/// Copies `bytes` bytes from `src` to `dst`.
///
/// # Safety
/// `src` must be valid for `bytes` reads and `dst` for `bytes` writes, and
/// the two ranges must not overlap. Either range may lie in memory another
/// process writes concurrently; no Rust reference to it may exist.
#[inline]
pub unsafe fn copy(src: *const u8, dst: *mut u8, bytes: usize) {
    // SAFETY: forwarded from the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) }
}
