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
//!   the protection domain and the registered segment (`memory::Device`).
//!
//! * This rank's segment is registered in parts, for remote reads, writes
//!   and atomics (`transport::parts`): what is committed at start (the
//!   header and the heap's first part; the global data apart), and each
//!   range the heap grows by ([`Memory`]). The segment's address and part
//!   0's rkey travel in the card, the data's rkey too, and a grown part's
//!   rkeys in the growth's exchange. An operation finds its part's rkey
//!   with one compare in part 0, and is split where it crosses a part's end.
//!   A per-peer staging ring (also registered) holds put sources too
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
mod memory;
mod queue;
mod setup;
mod sys;
mod work;

pub use memory::Memory;
pub use setup::{prepare, Prepared, Settings};

use super::fault::Fault;
use super::parts::Hint;
use crate::segment::HEADER_BYTES;
use queue::{CompletionQueue, QueuePair, Ready};
use std::collections::VecDeque;
use sys as ffi;
use work::{Op, Remote, Source, Wr};

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
    /// The address of the peer's segment, and its part 0's rkey.
    remote_base: u64,
    rkey: u32,
    /// The part beyond part 0 last found for this peer, with its rkey.
    hint: Hint<u32>,
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

/// One lane of the connected transport. Fields drop in order: queue pairs,
/// CQ, the staging MR, the shared device (freed with the last lane), and
/// last the staging memory the MR covered.
pub struct Verbs {
    peers: Vec<Option<Peer>>,
    cq: CompletionQueue,
    staging_mr: device::MemoryRegion,
    device: std::sync::Arc<memory::Device>,
    staging: Box<[u8]>,
    /// Each peer's staging ring, and the largest WRITE or READ.
    ring_bytes: usize,
    chunk_bytes: usize,
    /// Segment bytes below this are in part 0, whose rkeys the peers hold.
    first_end: usize,
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
        if src.is_empty() {
            return Ok(()); // it moves nothing, and may lie past the last part
        }
        let (mut offset, mut src) = (offset, src);
        loop {
            let (remote, room) = self.remote(peer, offset, "put")?;
            let (here, rest) = src.split_at(src.len().min(room));
            self.put_in_part(peer, remote, here)?;
            if rest.is_empty() {
                return Ok(());
            }
            (offset, src) = (offset + here.len(), rest);
        }
    }

    /// A put whose bytes all lie in the part `remote` is in.
    fn put_in_part(&mut self, peer: usize, remote: Remote, src: &[u8]) -> Result<(), Fault> {
        if src.len() <= self.inline_max {
            return self.post(peer, Wr::new(Op::Put, remote, Source::Inline(src)));
        }
        for (i, chunk) in src.chunks(self.chunk_bytes).enumerate() {
            let at = self.reserve(peer, chunk.len())?;
            self.staging[at..at + chunk.len()].copy_from_slice(chunk);
            let remote = remote.plus(i * self.chunk_bytes);
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
        if dst.is_empty() {
            return Ok(()); // as for put
        }
        let (mut offset, mut dst) = (offset, dst);
        loop {
            let (remote, room) = self.remote(peer, offset, "get")?;
            let (here, rest) = dst.split_at_mut(dst.len().min(room));
            let done = here.len();
            self.get_in_part(peer, remote, here)?;
            if rest.is_empty() {
                return Ok(());
            }
            (offset, dst) = (offset + done, rest);
        }
    }

    /// A get whose bytes all lie in the part `remote` is in.
    fn get_in_part(&mut self, peer: usize, remote: Remote, dst: &mut [u8]) -> Result<(), Fault> {
        for (i, chunk) in dst.chunks_mut(self.chunk_bytes).enumerate() {
            let at = self.reserve(peer, chunk.len())?;
            let remote = remote.plus(i * self.chunk_bytes);
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
        let mut done = 0;
        while done < len {
            let (remote, room) = self.remote(peer, offset + done, "get_nbi")?;
            let n = (len - done).min(self.chunk_bytes).min(room);
            let at = self.reserve(peer, n)?;
            let source = Source::Staged { at, len: n };
            self.post(peer, Wr::new(Op::GetNbi, remote, source))?;
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
        let (remote, _) = self.remote(peer, offset, Op::Flag.name())?;
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
                let remote = Remote {
                    addr: p.remote_base,
                    rkey: p.rkey,
                };
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
    fn write_word(&mut self, peer: usize, op: Op, remote: Remote, value: u64) -> Result<(), Fault> {
        let bytes = value.to_ne_bytes();
        if self.inline_max >= bytes.len() {
            return self.post(peer, Wr::new(op, remote, Source::Inline(&bytes)));
        }
        let at = self.reserve(peer, bytes.len())?;
        self.staging[at..at + 8].copy_from_slice(&bytes);
        self.post(peer, Wr::new(op, remote, Source::Staged { at, len: 8 }))
    }

    /// Where heap `offset` of `peer` is for the NIC, and how many bytes
    /// from there lie in the same part: part 0 in one compare, then the
    /// part last found for this peer in one more (`transport::parts`).
    #[inline]
    fn remote(&mut self, peer: usize, offset: usize, op: &'static str) -> Result<(Remote, usize), Fault> {
        let at = HEADER_BYTES + offset;
        let p = self.peer(peer);
        let (rkey, end) = match at < self.first_end {
            true => (p.rkey, self.first_end),
            false => match p.hint.get(at) {
                Some((rkey, span)) => (rkey, span.end),
                None => return self.remote_beyond_first(peer, at, op),
            },
        };
        let remote = Remote {
            addr: p.remote_base + at as u64,
            rkey,
        };
        Ok((remote, end - at))
    }

    #[cold]
    #[inline(never)]
    fn remote_beyond_first(&mut self, peer: usize, at: usize, op: &'static str) -> Result<(Remote, usize), Fault> {
        let parts = self.device.parts.get().expect("a connected lane's parts are known");
        match parts.lookup(at, peer) {
            Ok((span, rkey)) => {
                let p = self.peer_mut(peer);
                p.hint.set(span, rkey);
                let addr = p.remote_base + at as u64;
                Ok((Remote { addr, rkey }, span.end - at))
            }
            Err(why) => Err(self.failed(peer, op, why)),
        }
    }

    /// The lanes' shared registration, for the heap's growth.
    pub fn memory(&self) -> Memory {
        Memory(std::sync::Arc::clone(&self.device))
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
