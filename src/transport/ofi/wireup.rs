//! Connections in rank order, for providers that connect on first use.
//!
//! rxm (`tcp;ofi_rxm`, `verbs;ofi_rxm`) opens a connection to a peer the
//! first time a rank sends to it. When two ranks dial each other at the
//! same moment, libfabric 1.17's collision handling can close the side the
//! peer kept (ofiwg/libfabric#7396): the peer's connection request then
//! sits unaccepted, every post answers `-FI_EAGAIN`, and the job stalls.
//! Across two hosts with two ranks each that happened in most runs.
//!
//! So at start, before any other operation, rank `i` dials every rank
//! `j > i` (an 8-byte read of its segment header) and, once connected,
//! adds 1 to `j`'s wire-up word. Rank `j` waits until that word reaches
//! `j`: every lower rank has connected to it. No rank ever dials a lower
//! one, so no two ranks dial each other. Every wait drives progress, and a
//! rank that is done serves the others through its progress thread.
//!
//! This makes `n - 1` connections per rank, so it runs for jobs up to
//! [`MAX_RANKS`]; larger jobs connect on demand, as rxm does alone.

use super::Ofi;
use crate::segment::WIREUP_WORD;
use crate::transport::fault::Fault;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Providers are wired in rank order up to this many ranks.
pub const MAX_RANKS: usize = 256;

/// Whether `provider` forms its connections on first use.
pub fn connects_on_demand(provider: &str) -> bool {
    provider.ends_with(";ofi_rxm")
}

impl Ofi {
    /// Connects this rank (`me`) to every other in rank order (the module
    /// docs); does nothing for a provider without connections or a job
    /// larger than [`MAX_RANKS`].
    pub fn wire_up(&mut self, me: usize) -> Result<(), Fault> {
        let size = self.addrs.len();
        if !connects_on_demand(&self.info.provider()) || size > MAX_RANKS {
            return Ok(());
        }
        self.stall_limit = super::CONNECT_LIMIT;
        let wired = self
            .dial_higher_ranks(me, size)
            .and_then(|()| self.wait_for_lower_ranks(me));
        self.stall_limit = super::STALL_LIMIT;
        wired
    }

    /// Reads from every rank above `me`, then adds 1 to its wire-up word.
    fn dial_higher_ranks(&mut self, me: usize, size: usize) -> Result<(), Fault> {
        let mut scratch = vec![0u64; size];
        for (peer, slot) in scratch.iter_mut().enumerate().skip(me + 1) {
            let into = std::ptr::from_mut(slot).cast::<u8>();
            // SAFETY: `scratch` outlives the wait below, which completes the read.
            unsafe { self.read_segment(peer, WIREUP_WORD, into, 8) }?;
        }
        self.wait_all(me + 1, "connect")?;
        for peer in me + 1..size {
            self.add_segment_word(peer, WIREUP_WORD, 1)?;
        }
        self.wait_all(me + 1, "connect")
    }

    /// Drives progress until every lower rank has announced itself.
    fn wait_for_lower_ranks(&mut self, me: usize) -> Result<(), Fault> {
        // SAFETY: the wire-up word lies in this rank's registered segment
        // header, 8-byte aligned; peers change it only by atomics.
        let word = unsafe { &*self.own_segment.add(WIREUP_WORD).cast::<AtomicU64>() };
        let started = Instant::now();
        let mut backoff = crate::backoff::Backoff::new(self.spin);
        // Shown to the watchdog once it lasts, naming the first rank that
        // had not arrived; kept for the whole wait, as the local waits do.
        let mut blocked = None;
        loop {
            let arrived = word.load(Ordering::Acquire) as usize;
            if arrived >= me {
                return Ok(());
            }
            blocked.get_or_insert_with(|| crate::watch::blocked(crate::watch::Waiting::Answer { rank: arrived }));
            self.progress(arrived, "connect")?;
            if started.elapsed() > self.stall_limit {
                return Err(Fault::with(
                    arrived,
                    "connect",
                    format!(
                        "only {arrived} of the {me} lower ranks connected within {} s",
                        self.stall_limit.as_secs()
                    ),
                ));
            }
            backoff.pause();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rxm_providers_are_wired_in_rank_order() {
        assert!(connects_on_demand("tcp;ofi_rxm"));
        assert!(connects_on_demand("verbs;ofi_rxm"));
        assert!(!connects_on_demand("udp;ofi_rxd"));
        assert!(!connects_on_demand("shm"));
        assert!(!connects_on_demand("sockets"));
    }
}
