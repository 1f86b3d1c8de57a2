//! Committing and giving back the heap's memory: `fallocate` on the
//! segment's file makes a range real (or fails with a reason: no page is
//! ever touched that the host has not promised), a punched hole gives it
//! back, and the header's committed word tells peers' engines how far the
//! heap reaches.
//!
//! A commit asks `room` first, since a tmpfs file that outgrows the
//! host's memory does not fail cleanly: it meets the OOM killer.
//! `ONESIDE_HEAP_FAULT=commit:<rank>` makes that rank's first commit
//! after `init` fail as if its host had no memory left (for the tests).

use super::room::{self, Limit, Room};
use super::{Segment, COMMITTED_WORD, HEADER_BYTES};
use crate::error::Result;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Why a commit failed: the limit that refused it and the room it left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortfall {
    pub limit: Limit,
    pub available: u64,
    /// Made by `ONESIDE_HEAP_FAULT`, not by the host.
    pub simulated: bool,
}

/// The environment variable of the simulated commit failure.
pub const HEAP_FAULT: &str = "ONESIDE_HEAP_FAULT";

static FAULT_SPENT: AtomicBool = AtomicBool::new(false);

fn simulated_fault(rank: usize) -> bool {
    let wanted = std::env::var(HEAP_FAULT).ok();
    let hit = wanted.as_deref().and_then(|v| v.strip_prefix("commit:")) == Some(rank.to_string().as_str());
    hit && !FAULT_SPENT.swap(true, Ordering::Relaxed)
}

impl Segment {
    /// Commits the header page of a new segment, counts heap offsets
    /// `[0, initial)` (the runtime's areas) as committed, and leaves the
    /// rest of the reservation out of core dumps. The areas are not
    /// allocated here: a job of 1024 ranks has a 4 MiB team area per rank
    /// of which a few pages are ever written, so they fault in as they are
    /// touched (allocating them made a 1024-rank start twice as slow).
    pub(super) fn commit_at_start(&self, rank: usize, initial: usize) -> Result<()> {
        let refused = |what: &'static str, source: std::io::Error| super::create_err(rank, what, &self.shown(), source);
        // SAFETY: fallocate on our own descriptor, within the file's length.
        crate::syscall::cvt(unsafe { libc::fallocate(self.fd(), 0, 0, HEADER_BYTES as libc::off_t) })
            .map_err(|source| refused("commit", source))?;
        self.publish(initial);
        let rest = self.reserve - initial;
        if rest > 0 {
            // SAFETY: a page-aligned range inside our mapping; DONTDUMP only
            // changes what a core dump holds.
            unsafe { libc::madvise(self.base.add(HEADER_BYTES + initial).cast(), rest, libc::MADV_DONTDUMP) };
        }
        Ok(())
    }

    /// Gives heap offsets `[start, start + len)` memory (page aligned), or
    /// says which limit refuses it. Nothing is touched: the pages read as
    /// zeros.
    pub fn commit(&self, rank: usize, start: usize, len: usize) -> std::result::Result<(), Shortfall> {
        if simulated_fault(rank) {
            return Err(Shortfall {
                limit: Limit::Memory,
                available: 0,
                simulated: true,
            });
        }
        check_room(self.in_dev_shm, len as u64)?;
        let at = (HEADER_BYTES + start) as libc::off_t;
        // SAFETY: fallocate on our own descriptor, within the file's length.
        let rc = unsafe { libc::fallocate(self.fd(), 0, at, len as libc::off_t) };
        if rc == 0 {
            return Ok(());
        }
        // What was allocated before the failure goes back.
        self.release(start, len);
        let room = room::left(self.in_dev_shm);
        Err(Shortfall {
            limit: if self.in_dev_shm { Limit::ShmFs } else { room.limit },
            available: room.bytes,
            simulated: false,
        })
    }

    /// Gives the memory of heap offsets `[start, start + len)` (page
    /// aligned) back to the host; they read as zeros afterwards.
    pub fn release(&self, start: usize, len: usize) {
        let at = (HEADER_BYTES + start) as libc::off_t;
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: punching a hole in our own file, within its length; the
        // range holds no live object (the caller's invariant).
        unsafe { libc::fallocate(self.fd(), mode, at, len as libc::off_t) };
    }

    /// Sets the committed extent peers' engines check against, and keeps
    /// the committed part in core dumps.
    pub fn publish(&self, extent: usize) {
        let old = self.committed();
        if extent > old {
            // SAFETY: a page-aligned range inside our mapping.
            unsafe { libc::madvise(self.heap_base().add(old).cast(), extent - old, libc::MADV_DODUMP) };
        }
        // SAFETY: the header word is in our mapping, aligned, atomic only.
        let word = unsafe { AtomicU64::from_ptr(self.base.add(COMMITTED_WORD).cast()) };
        word.store(extent as u64, Ordering::Release);
    }

    fn fd(&self) -> i32 {
        self.file.as_ref().map_or(-1, |f| f.as_raw_fd())
    }

    fn shown(&self) -> String {
        self.owned_path.clone().unwrap_or_else(|| "<memfd>".into())
    }
}

/// Whether the host has room for `bytes` more, with the margin on top.
fn check_room(in_dev_shm: bool, bytes: u64) -> std::result::Result<(), Shortfall> {
    let Room { bytes: left, limit } = room::left(in_dev_shm);
    match bytes.saturating_add(room::margin()) <= left {
        true => Ok(()),
        false => Err(Shortfall {
            limit,
            available: left,
            simulated: false,
        }),
    }
}
