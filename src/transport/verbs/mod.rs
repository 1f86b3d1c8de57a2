//! The verbs transport: one RC queue pair per peer, RDMA WRITE for put,
//! RDMA READ for get, completions by polling one shared CQ. This directory
//! is the only place that touches `ibverbs-sys`.
//!
//! * This rank's whole segment (barrier flags + heap) is registered once; its
//!   address and rkey travel in the card. A per-peer staging ring (also
//!   registered) holds put sources too big to inline and get destinations,
//!   so `put` returns as soon as the caller's buffer may be reused.
//! * Selective signalling: a WR is signalled every [`SIGNAL_EVERY`] posts,
//!   always when it uses the staging ring, and when it is the first after a
//!   `quiet` (so put + quiet is one WR); a signalled completion
//!   retires every earlier WR of its queue pair. Each queue pair has a credit
//!   count so the send queue never overflows.
//! * `quiet` posts a zero-length signalled WRITE where unsignalled work is
//!   outstanding, then drains the CQ. A bad completion becomes an error
//!   naming the peer, the operation and the status.

mod device;
mod queue;
mod setup;

pub use setup::{prepare, Prepared, Settings};

use crate::segment::HEADER_BYTES;
use ibverbs_sys as ffi;
use queue::{CompletionQueue, QueuePair, Ready, SQ_DEPTH};
use std::collections::VecDeque;

/// Staging ring per peer: room for four largest WRs in flight.
const RING_BYTES: usize = 4 << 20;
/// Largest single WRITE or READ.
const CHUNK_BYTES: usize = 1 << 20;
/// Unsignalled posts allowed between signalled ones.
const SIGNAL_EVERY: u64 = 16;

use super::rdma::Failure;

#[derive(Clone, Copy)]
enum Op {
    Put = 1,
    Get = 2,
    Barrier = 3,
    Quiet = 4,
}

impl Op {
    fn name(code: u64) -> &'static str {
        match code {
            1 => "put (RDMA WRITE)",
            2 => "get (RDMA READ)",
            3 => "barrier (RDMA WRITE)",
            _ => "quiet (RDMA WRITE)",
        }
    }
}

/// One connected peer.
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
    /// Signalled WRs in flight: (sequence number, ring head after it).
    signalled: VecDeque<(u64, u64)>,
}

/// Where a WR's local bytes come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    Inline(&'a [u8]),
    Staged { at: usize, len: usize },
    Nothing,
}

/// The connected transport. Fields drop in order: queue pairs, CQ, MRs,
/// PD, context, and last the staging memory the MR covered.
pub struct Verbs {
    peers: Vec<Option<Peer>>,
    cq: CompletionQueue,
    staging_mr: device::MemoryRegion,
    _segment_mr: device::MemoryRegion,
    _pd: device::ProtectionDomain,
    context: device::Context,
    staging: Box<[u8]>,
    inline_max: usize,
    /// Reused by every poll: the spin loops must not refill it each time.
    completions: Box<[ffi::ibv_wc; 32]>,
}

impl Verbs {
    /// The device this transport runs on.
    pub fn device_name(&self) -> &str {
        &self.context.name
    }

    pub fn put(&mut self, peer: usize, offset: usize, src: &[u8]) -> Result<(), Failure> {
        let remote = self.heap_addr(peer, offset);
        if src.len() <= self.inline_max {
            return self.post(
                peer,
                Op::Put,
                ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
                remote,
                Source::Inline(src),
                false,
            );
        }
        for (i, chunk) in src.chunks(CHUNK_BYTES).enumerate() {
            let at = self.reserve(peer, chunk.len())?;
            self.staging[at..at + chunk.len()].copy_from_slice(chunk);
            let remote = remote + (i * CHUNK_BYTES) as u64;
            let source = Source::Staged { at, len: chunk.len() };
            self.post(
                peer,
                Op::Put,
                ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
                remote,
                source,
                true,
            )?;
        }
        Ok(())
    }

    pub fn get(&mut self, peer: usize, offset: usize, dst: &mut [u8]) -> Result<(), Failure> {
        let remote = self.heap_addr(peer, offset);
        for (i, chunk) in dst.chunks_mut(CHUNK_BYTES).enumerate() {
            let at = self.reserve(peer, chunk.len())?;
            let remote = remote + (i * CHUNK_BYTES) as u64;
            let source = Source::Staged { at, len: chunk.len() };
            self.post(
                peer,
                Op::Get,
                ffi::ibv_wr_opcode::IBV_WR_RDMA_READ,
                remote,
                source,
                true,
            )?;
            let seq = self.peer(peer).posted;
            while self.peer(peer).completed < seq {
                self.progress()?;
            }
            chunk.copy_from_slice(&self.staging[at..at + chunk.len()]);
        }
        Ok(())
    }

    /// Writes `epoch` into `peer`'s barrier flag for `round`.
    pub fn signal(&mut self, peer: usize, round: usize, epoch: u64) -> Result<(), Failure> {
        let remote = self.peer(peer).remote_base + (64 * (1 + round)) as u64;
        let bytes = epoch.to_le_bytes();
        if self.inline_max >= bytes.len() {
            return self.post(
                peer,
                Op::Barrier,
                ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
                remote,
                Source::Inline(&bytes),
                false,
            );
        }
        let at = self.reserve(peer, bytes.len())?;
        self.staging[at..at + 8].copy_from_slice(&bytes);
        let source = Source::Staged { at, len: 8 };
        self.post(
            peer,
            Op::Barrier,
            ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
            remote,
            source,
            true,
        )
    }

    /// Waits until every posted WR of every queue pair has completed.
    pub fn quiet(&mut self) -> Result<(), Failure> {
        for peer in 0..self.peers.len() {
            let Some(p) = &self.peers[peer] else { continue };
            if p.since_signal > 0 {
                let remote = p.remote_base;
                self.post(
                    peer,
                    Op::Quiet,
                    ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
                    remote,
                    Source::Nothing,
                    true,
                )?;
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

    fn heap_addr(&self, peer: usize, offset: usize) -> u64 {
        self.peer(peer).remote_base + (HEADER_BYTES + offset) as u64
    }

    fn peer(&self, peer: usize) -> &Peer {
        self.peers[peer]
            .as_ref()
            .expect("a verbs path exists only for connected peers")
    }

    /// Hands out `len` contiguous bytes of `peer`'s staging ring.
    fn reserve(&mut self, peer: usize, len: usize) -> Result<usize, Failure> {
        loop {
            let p = self.peer(peer);
            let offset = (p.ring_head % RING_BYTES as u64) as usize;
            let skip = if offset + len > RING_BYTES {
                RING_BYTES - offset
            } else {
                0
            };
            if p.ring_head + (skip + len) as u64 - p.ring_tail <= RING_BYTES as u64 {
                let p = self.peers[peer].as_mut().expect("connected");
                p.ring_head += (skip + len) as u64;
                let start = if skip > 0 { 0 } else { offset };
                return Ok(p.ring_base + start);
            }
            self.progress()?;
        }
    }

    /// Posts one WR to `peer`, waiting for a send-queue credit first.
    fn post(
        &mut self,
        peer: usize,
        op: Op,
        opcode: ffi::ibv_wr_opcode::Type,
        remote: u64,
        source: Source,
        force_signal: bool,
    ) -> Result<(), Failure> {
        while self.peer(peer).posted - self.peer(peer).completed >= u64::from(SQ_DEPTH) - 1 {
            self.progress()?;
        }
        let staging_base = self.staging.as_mut_ptr();
        let lkey = self.staging_mr.lkey();
        let p = self.peers[peer].as_mut().expect("connected");
        let seq = p.posted + 1;
        let signalled = force_signal || p.signal_next || p.since_signal + 1 >= SIGNAL_EVERY;
        p.signal_next = false;
        let mut flags = 0;
        if signalled {
            flags |= ffi::ibv_send_flags::IBV_SEND_SIGNALED.0;
        }
        let mut sge = match source {
            Source::Inline(bytes) => {
                flags |= ffi::ibv_send_flags::IBV_SEND_INLINE.0;
                ffi::ibv_sge {
                    addr: bytes.as_ptr() as u64,
                    length: bytes.len() as u32,
                    lkey: 0,
                }
            }
            // SAFETY: `at + len` lies inside the staging buffer (`reserve`).
            Source::Staged { at, len } => ffi::ibv_sge {
                addr: unsafe { staging_base.add(at) } as u64,
                length: len as u32,
                lkey,
            },
            Source::Nothing => ffi::ibv_sge::default(),
        };
        let mut wr = ffi::ibv_send_wr {
            wr_id: ((peer as u64) << 44) | ((op as u64) << 40) | seq,
            sg_list: &mut sge,
            num_sge: i32::from(!matches!(source, Source::Nothing)),
            opcode,
            send_flags: flags,
            ..Default::default()
        };
        wr.wr.rdma = ffi::ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
            remote_addr: remote,
            rkey: p.rkey,
        };
        // SAFETY: inline bytes are copied by the post itself; staged bytes
        // lie in the registered staging buffer and stay reserved until this
        // (signalled) WR completes; a zero-length WR names no memory.
        unsafe { p.qp.post(&mut wr) }.map_err(|e| Failure {
            peer,
            op: Op::name(op as u64),
            detail: format!("ibv_post_send: {e}"),
        })?;
        p.posted = seq;
        if signalled {
            p.since_signal = 0;
            p.signalled.push_back((seq, p.ring_head));
        } else {
            p.since_signal += 1;
        }
        Ok(())
    }

    /// Polls the CQ once; retires completed WRs and their ring space.
    fn progress(&mut self) -> Result<(), Failure> {
        let n = self.cq.poll(&mut self.completions[..]).map_err(|detail| Failure {
            peer: 0,
            op: "poll the CQ",
            detail,
        })?;
        for index in 0..n {
            let wc = self.completions[index];
            let id = wc.wr_id();
            let (peer, op, seq) = ((id >> 44) as usize, (id >> 40) & 0xf, id & ((1 << 40) - 1));
            if let Some((status, vendor)) = wc.error() {
                // SAFETY: ibv_wc_status_str returns a static string for any status.
                let text = unsafe { std::ffi::CStr::from_ptr(ffi::ibv_wc_status_str(status)) };
                let detail = format!(
                    "work completion {} (status {status}, vendor error {vendor:#x})",
                    text.to_string_lossy()
                );
                return Err(Failure {
                    peer,
                    op: Op::name(op),
                    detail,
                });
            }
            let Some(p) = self.peers.get_mut(peer).and_then(Option::as_mut) else {
                continue;
            };
            p.completed = p.completed.max(seq);
            while p.signalled.front().is_some_and(|&(s, _)| s <= seq) {
                let (_, head) = p.signalled.pop_front().expect("checked non-empty");
                p.ring_tail = head;
            }
        }
        if n == 0 {
            std::hint::spin_loop();
        }
        Ok(())
    }
}
