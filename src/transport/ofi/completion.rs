//! Which completion level each operation asks for, and the start-up check
//! that lets writes over libfabric's shm provider do without the
//! delivery flag.
//!
//! quiet means delivered and visible (ARCHITECTURE). How each operation
//! keeps that:
//!
//! * Reads and fetching atomics ask for a plain completion: their result
//!   is in the caller's buffer when they complete, which is delivery by
//!   definition. Asking for `FI_DELIVERY_COMPLETE` on them only made shm
//!   take its staged path, where the target has to act, instead of
//!   reading the peer's memory itself (`smr_generic_rma` in 1.17).
//! * Writes and non-fetching atomics ask for `FI_DELIVERY_COMPLETE`,
//!   except writes over shm to a peer the check below proved is written
//!   directly: shm then copies the data into the peer's memory with
//!   `process_vm_writev` inside `fi_write` itself (cross-memory attach),
//!   so the write has landed before it completes. Without the flag and
//!   without CMA, shm would complete a small write once it is queued for
//!   the target, which is not delivery; so the flag stays wherever the
//!   check fails (`FI_SHM_DISABLE_CMA=1`, a ptrace policy that forbids
//!   CMA between the ranks, another provider).
//!
//! The check, for each peer: write a token without the flag into the
//! peer's header slot for this rank, then read it back without the flag,
//! and look at the destination the moment `fi_read` returns, before this
//! rank reads its CQ. Only a read served inside `fi_read` (CMA) can have
//! filled it by then, and it holds the token only if the write landed
//! inside `fi_write` too. Anything else (empty, another rank's token in a
//! shared slot) keeps the flag for that peer: the check can only err on
//! the safe side.

use super::sys::*;
use super::Ofi;
use crate::segment::{CHECK_SLOTS, CHECK_WORDS};
use crate::transport::fault::Fault;

/// The flags of a read or fetching atomic (the module docs).
pub const READ_FLAGS: u64 = FI_COMPLETION;

/// The token rank `me` writes in the check: never 0 (a fresh header),
/// different for each rank sharing a slot.
fn token(me: usize) -> u64 {
    u64::from_le_bytes(*b"1sideCMA") ^ me as u64
}

impl Ofi {
    /// The flags of a write to `peer` (the module docs).
    pub(super) fn write_flags(&self, peer: usize) -> u64 {
        match self.direct.get(peer) {
            Some(true) => FI_COMPLETION,
            _ => FI_COMPLETION | FI_DELIVERY_COMPLETE,
        }
    }

    /// Over shm, finds the peers this rank writes directly (the module
    /// docs); every other provider keeps the delivery flag on writes.
    pub fn check_direct_writes(&mut self, me: usize) -> Result<(), Fault> {
        if self.info.provider() != "shm" {
            return Ok(());
        }
        let size = self.addrs.len();
        let slot = CHECK_WORDS + 8 * (me % CHECK_SLOTS);
        let token = token(me);
        let mut direct = vec![false; size];
        for (peer, direct) in direct.iter_mut().enumerate() {
            let mut seen = 0u64;
            // SAFETY: `token` outlives the wait below, which completes the write.
            unsafe {
                self.post_write(
                    peer,
                    "connect",
                    std::ptr::from_ref(&token).cast(),
                    8,
                    slot,
                    FI_COMPLETION,
                )
            }?;
            let into = std::ptr::from_mut(&mut seen).cast::<u8>();
            // SAFETY: `seen` outlives the wait below, which completes the read.
            unsafe { self.post_read(peer, "connect", into, 8, slot, READ_FLAGS) }?;
            // SAFETY: `seen` is a live local; volatile, since libfabric may
            // have written it behind the compiler's back.
            *direct = unsafe { std::ptr::read_volatile(&seen) } == token;
            self.wait_all(peer, "connect")?;
        }
        self.direct = direct;
        Ok(())
    }

    /// Whether every write of this rank is direct (the check passed for
    /// every peer), for `device_name`.
    pub(super) fn writes_direct(&self) -> bool {
        !self.direct.is_empty() && self.direct.iter().all(|&d| d)
    }
}
