//! Work requests and completions: the staging ring, posting one WR with its
//! credits, selective signalling and fences, and polling the CQ, which
//! retires WRs and ring space and copies finished non-blocking gets out.
//!
//! The ordering rule behind the fences (InfiniBand Architecture vol. 1,
//! §9.5 and §10.8.3): on an RC queue pair the responder executes requests in
//! order, except that an RDMA READ or ATOMIC request may be overtaken by a
//! later RDMA WRITE or SEND (writes are posted into memory, read responses
//! are not); READ and ATOMIC requests keep their order among themselves and
//! after earlier WRITEs. IBV_SEND_FENCE (ibv_post_send(3)) makes a WR wait
//! until every earlier READ and ATOMIC of its queue pair has completed, so
//! it is needed only on a WR posted while one of those is outstanding.

use super::sys as ffi;
use super::{Fault, Verbs, SIGNAL_EVERY};
use ffi as opcode;

/// What a WR is for; its code travels in the `wr_id` and names it in errors.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put = 1,
    Get = 2,
    Flag = 3,
    Quiet = 4,
    GetNbi = 5,
    FetchAdd = 6,
    CompareSwap = 7,
    SignalSet = 8,
    SignalAdd = 9,
}

impl Op {
    const ALL: [Op; 9] = [
        Op::Put,
        Op::Get,
        Op::Flag,
        Op::Quiet,
        Op::GetNbi,
        Op::FetchAdd,
        Op::CompareSwap,
        Op::SignalSet,
        Op::SignalAdd,
    ];

    /// The name of the operation coded `code`, for error messages.
    fn name_of(code: u64) -> &'static str {
        Op::ALL
            .iter()
            .find(|op| **op as u64 == code)
            .map_or("work request", |op| op.name())
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put (RDMA WRITE)",
            Op::Get => "get (RDMA READ)",
            Op::Flag => "collective step flag (RDMA WRITE)",
            Op::Quiet => "quiet (RDMA WRITE)",
            Op::GetNbi => "get_nbi (RDMA READ)",
            Op::FetchAdd => "atomic (RDMA ATOMIC FETCH_ADD)",
            Op::CompareSwap => "atomic (RDMA ATOMIC CMP_SWAP)",
            Op::SignalSet => "signal (RDMA WRITE)",
            Op::SignalAdd => "signal (RDMA ATOMIC FETCH_ADD)",
        }
    }

    fn opcode(self) -> std::ffi::c_uint {
        match self {
            Op::Put | Op::Flag | Op::Quiet | Op::SignalSet => opcode::IBV_WR_RDMA_WRITE,
            Op::Get | Op::GetNbi => opcode::IBV_WR_RDMA_READ,
            Op::FetchAdd | Op::SignalAdd => opcode::IBV_WR_ATOMIC_FETCH_AND_ADD,
            Op::CompareSwap => opcode::IBV_WR_ATOMIC_CMP_AND_SWP,
        }
    }

    /// A READ or an ATOMIC: a later WRITE may overtake it unless fenced.
    fn overtakable(self) -> bool {
        self.opcode() != opcode::IBV_WR_RDMA_WRITE
    }
}

/// Where a WR's local bytes come from (or, for READs and ATOMICs, go).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Inline(&'a [u8]),
    Staged { at: usize, len: usize },
    Nothing,
}

/// Where a WR goes in the peer's memory: the address, and the rkey of
/// the part that holds it (`Verbs::remote`).
#[derive(Clone, Copy)]
pub struct Remote {
    pub addr: u64,
    pub rkey: u32,
}

impl Remote {
    /// `bytes` further on, in the same part.
    pub fn plus(self, bytes: usize) -> Remote {
        Remote {
            addr: self.addr + bytes as u64,
            ..self
        }
    }
}

/// One work request to post.
pub struct Wr<'a> {
    pub op: Op,
    pub remote: Remote,
    pub source: Source<'a>,
    /// ATOMIC operands: the add or compare value, and the swap value.
    pub compare_add: u64,
    pub swap: u64,
}

impl<'a> Wr<'a> {
    pub fn new(op: Op, remote: Remote, source: Source<'a>) -> Wr<'a> {
        Wr {
            op,
            remote,
            source,
            compare_add: 0,
            swap: 0,
        }
    }
}

impl Verbs {
    /// Hands out `len` contiguous bytes of `peer`'s staging ring, 8-byte
    /// aligned (as ATOMIC results need).
    pub(super) fn reserve(&mut self, peer: usize, len: usize) -> Result<usize, Fault> {
        let len = len.next_multiple_of(8);
        let ring = self.ring_bytes;
        loop {
            let p = self.peer(peer);
            let offset = (p.ring_head % ring as u64) as usize;
            let skip = if offset + len > ring { ring - offset } else { 0 };
            if p.ring_head + (skip + len) as u64 - p.ring_tail <= ring as u64 {
                let p = self.peer_mut(peer);
                p.ring_head += (skip + len) as u64;
                let start = if skip > 0 { 0 } else { offset };
                return Ok(p.ring_base + start);
            }
            self.progress()?;
        }
    }

    /// Posts one WR to `peer`, waiting for a send-queue credit first. Staged
    /// and zero-length WRs are always signalled (their completion retires
    /// ring space or ends a quiet).
    pub(super) fn post(&mut self, peer: usize, wr: Wr) -> Result<(), Fault> {
        while self.peer(peer).posted - self.peer(peer).completed >= self.credits {
            self.progress()?;
        }
        let staging_base = self.staging.as_mut_ptr();
        let lkey = self.staging_mr.lkey();
        let p = self.peer_mut(peer);
        let seq = p.posted + 1;
        let forced = !matches!(wr.source, Source::Inline(_));
        let signalled = forced || p.signal_next || p.since_signal + 1 >= SIGNAL_EVERY;
        // A WRITE signal must not overtake earlier READs or ATOMICs (it then
        // orders after everything earlier, as a shared-memory signal does).
        let wants_fence = p.fence_next || wr.op == Op::SignalSet;
        let fenced = wants_fence && p.completed < p.last_read_or_atomic;
        p.signal_next = false;
        p.fence_next = false;
        let mut flags = 0;
        if signalled {
            flags |= ffi::IBV_SEND_SIGNALED;
        }
        if fenced {
            flags |= ffi::IBV_SEND_FENCE;
        }
        let mut sge = match wr.source {
            Source::Inline(bytes) => {
                flags |= ffi::IBV_SEND_INLINE;
                ffi::ibv_sge {
                    addr: bytes.as_ptr() as u64,
                    length: bytes.len() as u32,
                    lkey: 0,
                }
            }
            Source::Staged { at, len } => ffi::ibv_sge {
                addr: staging_base.wrapping_add(at) as u64,
                length: len as u32,
                lkey,
            },
            Source::Nothing => ffi::ibv_sge::default(),
        };
        let mut request = ffi::ibv_send_wr {
            wr_id: ((peer as u64) << 44) | ((wr.op as u64) << 40) | seq,
            sg_list: &mut sge,
            num_sge: i32::from(!matches!(wr.source, Source::Nothing)),
            opcode: wr.op.opcode(),
            send_flags: flags,
            ..Default::default()
        };
        if wr.op.opcode() == opcode::IBV_WR_RDMA_WRITE || wr.op.opcode() == opcode::IBV_WR_RDMA_READ {
            request.wr.rdma = ffi::ibv_rdma {
                remote_addr: wr.remote.addr,
                rkey: wr.remote.rkey,
            };
        } else {
            request.wr.atomic = ffi::ibv_atomic {
                remote_addr: wr.remote.addr,
                compare_add: wr.compare_add,
                swap: wr.swap,
                rkey: wr.remote.rkey,
            };
        }
        // SAFETY: inline bytes are copied by the post itself; staged bytes
        // (`at + len` inside the staging buffer, from `reserve`) lie in the
        // registered staging buffer and stay reserved until this signalled
        // WR completes; a zero-length WR names no memory.
        let posted = unsafe { p.qp.post(&mut request) };
        if let Err(e) = posted {
            let detail = format!("ibv_post_send: {e}");
            return Err(self.failed(peer, wr.op.name(), detail));
        }
        let p = self.peer_mut(peer);
        p.posted = seq;
        if wr.op.overtakable() {
            p.last_read_or_atomic = seq;
        }
        if signalled {
            p.since_signal = 0;
            let head = p.ring_head;
            p.signalled.push_back((seq, head));
        } else {
            p.since_signal += 1;
        }
        Ok(())
    }

    /// Polls until `peer`'s WR number `seq` (and so every earlier one) has completed.
    pub(super) fn wait_for(&mut self, peer: usize, seq: u64) -> Result<(), Fault> {
        while self.peer(peer).completed < seq {
            self.progress()?;
        }
        Ok(())
    }

    /// Polls the CQ once; retires completed WRs and their ring space, after
    /// copying every non-blocking get they finished to its destination.
    pub(super) fn progress(&mut self) -> Result<(), Fault> {
        let n = match self.cq.poll(&mut self.completions[..]) {
            Ok(n) => n,
            Err(fault) => return Err(self.failed(0, "poll the CQ", fault.to_string())),
        };
        for index in 0..n {
            let wc = self.completions[index];
            let id = wc.wr_id;
            let (peer, op, seq) = ((id >> 44) as usize, (id >> 40) & 0xf, id & ((1 << 40) - 1));
            if let Some((status, vendor)) = wc.error() {
                // SAFETY: ibv_wc_status_str returns a static string for any status.
                let text = unsafe { std::ffi::CStr::from_ptr((self.device.context.lib.wc_status_str)(status)) };
                let flushed = status == ffi::IBV_WC_WR_FLUSH_ERR;
                let consequence = match flushed {
                    true => format!("; the connection broke after an earlier error, here or at rank {peer}"),
                    false => String::new(),
                };
                let detail = format!(
                    "work completion {} (status {status}, vendor error {vendor:#x}){consequence}",
                    text.to_string_lossy()
                );
                let mut failure = self.failed(peer, Op::name_of(op), detail);
                failure.consequence = flushed;
                return Err(failure);
            }
            let staging = &self.staging;
            let Some(p) = self.peers.get_mut(peer).and_then(Option::as_mut) else {
                continue;
            };
            p.completed = p.completed.max(seq);
            while let Some(landing) = p.landings.front() {
                if landing.seq > p.completed {
                    break;
                }
                let bytes = &staging[landing.at..landing.at + landing.len];
                // SAFETY: `get_nbi`'s caller keeps `dst` valid and untouched
                // for `len` bytes until the next quiet returns or a failure
                // (which empties `landings`); the staging bytes are still
                // reserved (retired just below) and private to this process.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), landing.dst, landing.len) };
                p.landings.pop_front();
            }
            while let Some(&(s, head)) = p.signalled.front() {
                if s > seq {
                    break;
                }
                p.ring_tail = head;
                p.signalled.pop_front();
            }
        }
        if n == 0 {
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// Builds the failure of `op` with `peer`, and forgets every pending
    /// non-blocking get: after a failure nothing is written into the
    /// destinations, whose owners may reuse them once they see the error.
    pub(super) fn failed(&mut self, peer: usize, op: &'static str, detail: String) -> Fault {
        for p in self.peers.iter_mut().flatten() {
            p.landings.clear();
        }
        Fault::with(peer, op, detail)
    }
}
