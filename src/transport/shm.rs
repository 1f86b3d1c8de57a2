//! The shared-memory path to a peer on the same host.
//!
//! A peer is "on the same host" when its segment opens here with the token it
//! announced: a host name alone could lie (two machines with one name, one
//! machine under two names, or hosts that share a kernel but not `/dev/shm`).
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
    let Some(shm) = &card.shm else {
        return Err(unreachable(
            "it published no shared-memory segment (alone on its host, or TCP forced)".into(),
        ));
    };
    match Segment::open_peer(shm) {
        Ok(segment) => Ok(Path::Shm(segment)),
        // Host names can alias one machine ("localhost", its real name), so
        // the segment decides; a different name only explains a failure.
        Err(detail) if card.host != own.host => Err(unreachable(format!(
            "it runs on another host than this rank ('{}'), so shared memory cannot reach it ({detail})",
            own.host
        ))),
        Err(detail) => Err(Error::PeerSegment {
            rank,
            peer,
            path: shm.path.clone(),
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
    // SAFETY (all arms): forwarded from the caller's contract; the word arms
    // check the destination's alignment and read the source unaligned.
    unsafe {
        match bytes {
            8 if dst.cast::<u64>().is_aligned() => dst.cast::<u64>().write_volatile(src.cast::<u64>().read_unaligned()),
            4 if dst.cast::<u32>().is_aligned() => dst.cast::<u32>().write_volatile(src.cast::<u32>().read_unaligned()),
            _ => std::ptr::copy_nonoverlapping(src, dst, bytes),
        }
    }
}
