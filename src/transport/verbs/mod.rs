//! The verbs transport: one RC queue pair per rank (a loopback pair for this
//! rank itself), RDMA WRITE for put, RDMA READ for get, RDMA atomics for
//! every atomic of the job, completions by polling a CQ. This directory is
//! the only place that touches libibverbs, which it opens at run time
//! ([`library`]), its ABI declared by hand in `sys`.
//!
//! * Lanes: a [`Verbs`] is one lane, a complete set of queue pairs (one per
//!   rank) with its own CQ, staging and completion counts. Lane 0 is the
//!   world's default context; each further lane (`ONESIDE_VERBS_CONTEXTS`,
//!   default 4) is handed to one communication context at a time, so that
//!   context's `quiet` waits for its own work requests only and its thread
//!   never shares a lock with another context's. Lanes share the device,
//!   the protection domain and the registered segment ([`Device`]).
//!
//! * This rank's whole segment (header + heap) is registered once, for
//!   remote reads, writes and atomics; its address and rkey travel in the
//!   card. A per-peer staging ring (also registered) holds put sources too
//!   big to inline, get destinations and the 8-byte results of atomics, so
//!   `put` returns as soon as the caller's buffer may be reused.
//! * Atomics ([`atomic`]): FETCH_AND_ADD and CMP_AND_SWP natively on 64-bit
//!   words; every other operation, and every 32-bit one, is a compare-and-swap
//!   loop on the aligned 64-bit word that changes only its own half. A
//!   non-fetching add is posted and completes at quiet; the rest wait.
//!   Queue pairs exist to same-host peers and to this rank too, because a
//!   NIC's atomics are atomic only with the same NIC's atomics.
//! * Signals (put-with-signal): an add is a non-waited FETCH_AND_ADD, a set
//!   an aligned 8-byte RDMA WRITE, both on the queue pair that carried the
//!   data, so RC ordering puts them after it with no extra round trip.
//! * Non-blocking gets: RDMA READs into staging, copied to their destinations
//!   as their completions arrive, and all of them by the end of `quiet`. Any
//!   failure forgets every pending destination: nothing is written after it.
//! * `fence` marks every queue pair: its next WR carries IBV_SEND_FENCE if an
//!   RDMA READ or ATOMIC is still outstanding there (WRITEs keep order on RC).
//!   A rank whose data moves by CPU (itself, a shared-memory peer) gets no WR
//!   for its next put, so `fence` waits for its outstanding ATOMICs instead.
//! * Selective signalling: a WR is signalled every [`SIGNAL_EVERY`] posts,
//!   always when it uses the staging ring, and when it is the first after a
//!   `quiet` (so put + quiet is one WR); a signalled completion
//!   retires every earlier WR of its queue pair. Each queue pair has a credit
//!   count so the send queue never overflows.
//! * `quiet` posts a zero-length signalled WRITE where unsignalled work is
//!   outstanding, then drains the CQ. A bad completion becomes an error
//!   naming the peer, the operation and the status.

mod atomic;
mod device;
pub mod library;
mod queue;
mod setup;
mod sys;
mod work;

pub use setup::{prepare, Prepared, Settings};

use super::fault::Fault;
use crate::segment::HEADER_BYTES;
use queue::{CompletionQueue, QueuePair, Ready};
use std::collections::VecDeque;
use sys as ffi;
use work::{Op, Source, Wr};

/// Staging ring per peer of lane 0: room for four largest WRs in flight
/// (the largest single WRITE or READ is a quarter of the ring).
const RING_BYTES: usize = 4 << 20;
/// Staging ring per peer of a context's lane.
const CTX_RING_BYTES: usize = 256 << 10;
/// Unsignalled posts allowed between signalled ones.
const SIGNAL_EVERY: u64 = 16;

/// A non-blocking get in flight: where its READ lands in staging, and where
/// the bytes go once its completion (sequence number `seq`) has arrived.
struct Landing {
    seq: u64,
    at: usize,
    dst: *mut u8,
    len: usize,
}

/// One connected rank (a peer, or this rank through its loopback pair).
struct Peer {
    qp: QueuePair<Ready>,
    remote_base: u64,
    rkey: u32,
    /// Offset of this peer's ring in the staging buffer.
    ring_base: usize,
    /// Ring bytes handed out / retired, as ever-growing counters.
    ring_head: u64,
    ring_tail: u64,
    posted: u64,
    completed: u64,
    since_signal: u64,
    /// Set by `quiet`: the next WR is signalled, so a put + quiet pattern
    /// costs one WR and one round trip, not an extra zero-length WRITE.
    signal_next: bool,
    /// Set by `fence`: the next WR waits for earlier READs and ATOMICs.
    fence_next: bool,
    /// This rank's data moves by CPU (self, shared memory); only its
    /// atomics and signals use this queue pair.
    cpu_data: bool,
    /// Sequence number of the last RDMA READ or ATOMIC posted (0: none).
    last_read_or_atomic: u64,
    /// Signalled WRs in flight: (sequence number, ring head after it).
    signalled: VecDeque<(u64, u64)>,
    /// Non-blocking gets not yet copied out, in posting order.
    landings: VecDeque<Landing>,
}

/// What every lane shares. Fields drop in order: the segment's MR, the PD,
/// the device context.
pub(super) struct Device {
    _segment_mr: device::MemoryRegion,
    _pd: device::ProtectionDomain,
    context: device::Context,
}

// SAFETY: the device objects are owned here and freed in `Drop` once the
// last lane is gone; libibverbs allows them to be used from any thread, and
// after set-up nothing but the device name is read from them.
unsafe impl Send for Device {}
// SAFETY: as above; shared use is reading the name only.
unsafe impl Sync for Device {}

/// One lane of the connected transport. Fields drop in order: queue pairs,
/// CQ, the staging MR, the shared device (freed with the last lane), and
/// last the staging memory the MR covered.
pub struct Verbs {
    peers: Vec<Option<Peer>>,
    cq: CompletionQueue,
    staging_mr: device::MemoryRegion,
    device: std::sync::Arc<Device>,
    staging: Box<[u8]>,
    /// Each peer's staging ring, and the largest WRITE or READ.
    ring_bytes: usize,
    chunk_bytes: usize,
    inline_max: usize,
    /// WRs one queue pair may have in flight: within its send queue, and
    /// such that all of them together fit in the CQ.
    credits: u64,
    /// Reused by every poll: the spin loops must not refill it each time.
    completions: Box<[ffi::ibv_wc; 32]>,
}

// SAFETY: every verbs object here is owned by this value and freed in its
// `Drop`; libibverbs allows its objects to be used from any thread (its
// calls are thread-safe, and these are only ever called with `&mut self`,
// under the world's lock). The landing destinations follow `get_nbi`'s
// contract, as the TCP link's do.
unsafe impl Send for Verbs {}

impl Verbs {
    /// The device this transport runs on.
    pub fn device_name(&self) -> &str {
        &self.device.context.name
    }

    pub fn put(&mut self, peer: usize, offset: usize, src: &[u8]) -> Result<(), Fault> {
        let remote = self.heap_addr(peer, offset);
        if src.len() <= self.inline_max {
            return self.post(peer, Wr::new(Op::Put, remote, Source::Inline(src)));
        }
        for (i, chunk) in src.chunks(self.chunk_bytes).enumerate() {
            let at = self.reserve(peer, chunk.len())?;
            self.staging[at..at + chunk.len()].copy_from_slice(chunk);
            let remote = remote + (i * self.chunk_bytes) as u64;
            let source = Source::Staged { at, len: chunk.len() };
            self.post(peer, Wr::new(Op::Put, remote, source))?;
        }
        Ok(())
    }

    /// A put whose source stays unchanged until quiet: as `put`, which
    /// stages what it does not inline and so never waits for the write.
    ///
    /// # Safety
    /// `src` must be valid for `len` bytes of reads.
    pub unsafe fn put_nbi(&mut self, peer: usize, offset: usize, src: *const u8, len: usize) -> Result<(), Fault> {
        // SAFETY: this function's contract.
        self.put(peer, offset, unsafe { std::slice::from_raw_parts(src, len) })
    }

    pub fn get(&mut self, peer: usize, offset: usize, dst: &mut [u8]) -> Result<(), Fault> {
        let remote = self.heap_addr(peer, offset);
        for (i, chunk) in dst.chunks_mut(self.chunk_bytes).enumerate() {
            let at = self.reserve(peer, chunk.len())?;
            let remote = remote + (i * self.chunk_bytes) as u64;
            let source = Source::Staged { at, len: chunk.len() };
            self.post(peer, Wr::new(Op::Get, remote, source))?;
            let seq = self.peer(peer).posted;
            self.wait_for(peer, seq)?;
            chunk.copy_from_slice(&self.staging[at..at + chunk.len()]);
        }
        Ok(())
    }

    /// Starts reading `len` bytes at heap `offset` of `peer` into `dst`
    /// without waiting: RDMA READs into staging, copied to `dst` when they
    /// complete (at the latest in the next `quiet`).
    ///
    /// # Safety
    /// `dst` must stay valid for `len` bytes of writes, and untouched, until
    /// the next `quiet` returns, or until any call of this transport fails
    /// (a failure forgets every pending destination).
    pub unsafe fn get_nbi(&mut self, peer: usize, offset: usize, dst: *mut u8, len: usize) -> Result<(), Fault> {
        let remote = self.heap_addr(peer, offset);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(self.chunk_bytes);
            let at = self.reserve(peer, n)?;
            let source = Source::Staged { at, len: n };
            self.post(peer, Wr::new(Op::GetNbi, remote + done as u64, source))?;
            let p = self.peer_mut(peer);
            p.landings.push_back(Landing {
                seq: p.posted,
                at,
                dst: dst.wrapping_add(done),
                len: n,
            });
            done += n;
        }
        Ok(())
    }

    /// Writes `value` into the collective step flag at heap `offset` of
    /// `peer` (a single-writer word), after the data already posted to it.
    pub fn flag(&mut self, peer: usize, offset: usize, value: u64) -> Result<(), Fault> {
        let remote = self.heap_addr(peer, offset);
        self.write_word(peer, Op::Flag, remote, value)
    }

    /// Orders everything later to a rank after the RDMA READs and ATOMICs
    /// already posted to it: the next WR of its queue pair carries
    /// IBV_SEND_FENCE where one is still outstanding (`post` decides), or,
    /// for a rank whose puts are CPU stores that no fence on a queue pair
    /// can order, this waits until its outstanding ATOMICs have completed.
    pub fn fence(&mut self) -> Result<(), Fault> {
        for peer in 0..self.peers.len() {
            let Some(p) = self.peers[peer].as_mut() else { continue };
            match p.cpu_data {
                true => {
                    let last = p.last_read_or_atomic;
                    self.wait_for(peer, last)?;
                }
                false => p.fence_next = true,
            }
        }
        Ok(())
    }

    /// Waits until every posted WR of every queue pair has completed, and
    /// every non-blocking get has been copied to its destination.
    /// Polls the completion queue once, so a waiting rank learns of a failed
    /// work request (whose peer may never answer) instead of waiting forever.
    pub fn poll(&mut self) -> Result<(), Fault> {
        self.progress()
    }

    pub fn quiet(&mut self) -> Result<(), Fault> {
        for peer in 0..self.peers.len() {
            let Some(p) = &self.peers[peer] else { continue };
            if p.since_signal > 0 {
                let remote = p.remote_base;
                self.post(peer, Wr::new(Op::Quiet, remote, Source::Nothing))?;
            }
        }
        while self.peers.iter().flatten().any(|p| p.completed < p.posted) {
            self.progress()?;
        }
        for p in self.peers.iter_mut().flatten() {
            p.signal_next = true;
        }
        Ok(())
    }

    /// Writes one aligned 8-byte word at `remote` of `peer` (inline if the
    /// queue pairs allow it).
    fn write_word(&mut self, peer: usize, op: Op, remote: u64, value: u64) -> Result<(), Fault> {
        let bytes = value.to_ne_bytes();
        if self.inline_max >= bytes.len() {
            return self.post(peer, Wr::new(op, remote, Source::Inline(&bytes)));
        }
        let at = self.reserve(peer, bytes.len())?;
        self.staging[at..at + 8].copy_from_slice(&bytes);
        self.post(peer, Wr::new(op, remote, Source::Staged { at, len: 8 }))
    }

    fn heap_addr(&self, peer: usize, offset: usize) -> u64 {
        self.peer(peer).remote_base + (HEADER_BYTES + offset) as u64
    }

    fn peer(&self, peer: usize) -> &Peer {
        self.peers[peer]
            .as_ref()
            .expect("a verbs path or NIC atomics exist only for connected ranks")
    }

    fn peer_mut(&mut self, peer: usize) -> &mut Peer {
        self.peers[peer]
            .as_mut()
            .expect("a verbs path or NIC atomics exist only for connected ranks")
    }
}
