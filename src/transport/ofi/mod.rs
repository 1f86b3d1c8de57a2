//! The ofi transport: one libfabric RDM endpoint per rank, reaching every
//! rank (itself included) as address `r` of an `FI_AV_TABLE` address
//! vector. This directory is the only place that touches libfabric, which
//! it opens at run time ([`library`]), its ABI declared by hand in `sys`.
//!
//! * RMA: a put up to [`BOUNCE_PUT`] (32 KiB) is copied into a bounce buffer
//!   and written from there with `fi_writemsg` (the source is reusable at
//!   once; the space comes back when everything has completed, at the
//!   latest when the buffer is full). A larger one is an `fi_write` from the
//!   source, waited for. Never `fi_inject_write`: rxm completes an injected
//!   write when it leaves, and quiet must mean delivered. Get is
//!   `fi_read` into the destination, waited for; a non-blocking get is an
//!   `fi_read` completed at quiet. Transfers larger than the provider's
//!   message size are split, and so are those that cross the end of a
//!   part of the segment registered by itself ([`memory`]: a provider
//!   that pins memory gets the segment in parts, which follow the heap's
//!   growth; a software one gets it whole).
//! * Completions: every operation reports one CQ entry (success) or one
//!   error entry, counted as they are read; a completed write is visible
//!   at the target ([`completion`]: `FI_DELIVERY_COMPLETE`, or shm's
//!   direct writes, proved at start). `quiet` waits until the count
//!   reaches the number posted. Not a counter: some providers count a
//!   fetching atomic as a read and as a write, and a counter that runs
//!   ahead lets `quiet` return, and the bounce buffer be reused, too soon.
//! * Atomics ([`atomics`]): the provider's own where `fi_*atomicvalid`
//!   says so, a compare-and-swap loop otherwise. When the job uses ofi,
//!   every atomic goes through here, as with verbs.
//! * Ordering: `fence`, signals and collective flags first complete what
//!   was posted (no provider ordering is assumed), then post.
//! * Progress: every wait reads the CQ, which drives providers with manual
//!   progress; for those, a thread ([`progress`]) also polls while the rank
//!   computes, so its peers' operations on it (rxm's software atomics, rxd,
//!   shm) are served.
//! * Posting retries on `-FI_EAGAIN` (connections forming, queues full),
//!   driving progress in between. A peer that stops answering is an error
//!   naming it after [`STALL_LIMIT`] without a completion ([`CONNECT_LIMIT`]
//!   while the job wires up, since forming a connection is slower).

mod arrivals;
mod atomics;
mod completion;
mod fabric;
pub mod library;
mod memory;
pub mod progress;
mod rma;
mod setup;
mod sys;
mod wireup;

pub use setup::{prepare, providers, Prepared};

use super::fault::Fault;
use fabric::{Info, Object};
use library::Library;
use std::ffi::c_void;
use std::time::{Duration, Instant};
use sys::*;

/// Puts up to this size go through the bounce buffer; larger ones are
/// written from the caller's buffer and waited for, as Sandia OpenSHMEM
/// does above 2 KiB. Copying costs more than waiting from here on: the
/// copy's cache lines were last read by the target's core (shm's target
/// pulls the data with `process_vm_readv`), and this machine's cross-core
/// misses made a 64 KiB copy take about 45 us. Alternating rounds of
/// shmem_bw_put_perf, bounce/unbounced: shm 16 KiB 0.6-1.0x, 32 KiB 0.6x,
/// 64 KiB 0.35-0.5x; tcp;ofi_rxm 16 KiB 1.4-1.5x, 32 KiB 1.4x,
/// 64 KiB 0.64-1.0x.
pub const BOUNCE_PUT: usize = 32 << 10;
/// The bounce buffer's size.
const BOUNCE_BYTES: usize = 1 << 20;

/// How long a wait may see no completion before it names the peer.
pub const STALL_LIMIT: Duration = Duration::from_secs(8);
/// How long a post the provider refuses (`-FI_EAGAIN`) retries before the
/// wait is shown to the watchdog (as a local wait's naps are).
const SHOW_AFTER: Duration = Duration::from_millis(20);
/// The same while the job wires up ([`wireup`]): rxm dials through the
/// provider's connection manager, and under an emulated guest (rxe in QEMU
/// TCG, in CI) a first connection took more than 8 s when the host was busy.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(45);

/// The connected transport. Fields drop in order: endpoint, memory
/// regions (grown parts, the data's, part 0's), counter, CQ, AV, domain,
/// fabric, info.
pub struct Ofi {
    ep: Object<fid_ep>,
    /// This rank's registrations of the heap's grown parts, by part number.
    grown_mrs: Vec<(usize, Object<fid_mr>)>,
    _data_mr: Option<Object<fid_mr>>,
    _mr: Object<fid_mr>,
    /// Counts peers' operations on this endpoint (see `Prepared::arrivals`).
    arrivals: Option<Object<fid_cntr>>,
    /// The count at the progress thread's last look.
    arrivals_seen: u64,
    cq: Object<fid_cq>,
    _av: Object<fid_av>,
    _domain: Object<fid_domain>,
    fabric: Object<fid_fabric>,
    info: Info,
    lib: &'static Library,
    /// Each rank's AV address, segment base (0 without `FI_MR_VIRT_ADDR`)
    /// and part 0's key.
    addrs: Vec<fi_addr_t>,
    remote: Vec<(u64, u64)>,
    /// Segment bytes below this are in part 0 (`memory`).
    first_end: usize,
    /// Every rank's key of every part of the segment, and the part beyond
    /// part 0 last found for each rank.
    parts: crate::transport::parts::Parts<u64>,
    hints: Vec<crate::transport::parts::Hint<u64>>,
    /// Remote addresses are virtual (else offsets in their part).
    virt_addr: bool,
    mr_mode: i32,
    atomics: atomics::Support,
    quirks: atomics::Quirks,
    /// Operations posted, and their completions read from the CQ.
    posted: u64,
    completed: u64,
    /// At most this many operations in flight: the CQ's depth, or the
    /// provider's transmit queue if smaller. More would overrun the CQ,
    /// and udp;ofi_rxd then loses completions.
    depth: u64,
    /// The peers written to or read from since the last quiet, for messages.
    pending_peers: Vec<usize>,
    msg_max: usize,
    /// Sources of puts and non-fetching atomics in flight, and the bytes
    /// of it in use (all free again once every operation has completed).
    bounce: Box<[u8]>,
    bounce_used: usize,
    /// Whether waits may spin (a core for each local rank; its progress
    /// thread is busy only while it naps).
    spin: bool,
    /// Whether long waits keep polling (no CQ wait descriptor, by choice:
    /// `Prepared::waits_poll`).
    waits_poll: bool,
    /// The first byte of this rank's segment (its header).
    own_segment: *mut u8,
    /// The CQ's wait file descriptor, if the provider gave one.
    wait_fd: Option<std::ffi::c_int>,
    /// Reads of the CQ by the rank's own calls (not the progress thread's).
    own_polls: u64,
    /// The peers this rank writes without the delivery flag ([`completion`]).
    direct: Vec<bool>,
    /// How long a post or wait may make no progress before it fails:
    /// [`STALL_LIMIT`], or [`CONNECT_LIMIT`] during wire-up.
    stall_limit: Duration,
}

// SAFETY: the libfabric objects are owned here and used only under the
// owner's mutex (FI_THREAD_DOMAIN asks for serialized calls, not one thread).
unsafe impl Send for Ofi {}

/// How long closing waits for operations still in flight.
const CLOSE_DRAIN: Duration = Duration::from_secs(2);

impl Drop for Ofi {
    /// Before the endpoint closes, reads the completions of what is still
    /// in flight, for at most [`CLOSE_DRAIN`]. `finalize` has quieted
    /// everything already; this is for a rank that leaves without it. A
    /// rank that closed its endpoint before the provider had sent its last
    /// put (the final barrier's signal, before finalize quieted it) left its
    /// peer waiting for ever (libfabric's sockets provider, about 1 exit in 40).
    fn drop(&mut self) {
        let started = Instant::now();
        while self.posted > self.completed && started.elapsed() < CLOSE_DRAIN {
            if self.read_cq() == -FI_EAVAIL {
                break;
            }
            std::thread::yield_now();
        }
    }
}

impl Ofi {
    fn new(
        prepared: Prepared,
        addrs: Vec<fi_addr_t>,
        remote: Vec<(u64, u64)>,
        parts: crate::transport::parts::Parts<u64>,
    ) -> Ofi {
        let first = prepared.info.first();
        // SAFETY: fi_getinfo filled the attribute structs of its entries.
        let msg_max = unsafe { (*first.ep_attr).max_msg_size };
        // SAFETY: as above, for tx_attr.
        let tx_size = unsafe { (*first.tx_attr).size };
        let depth = setup::CQ_DEPTH.min(tx_size.max(1)) as u64;
        let quirks = atomics::Quirks::of(&prepared.info.provider());
        let addrs_len = addrs.len();
        Ofi {
            ep: prepared.ep,
            grown_mrs: Vec::new(),
            _data_mr: prepared.data_mr,
            _mr: prepared.mr,
            arrivals: prepared.arrivals,
            arrivals_seen: 0,
            cq: prepared.cq,
            _av: prepared.av,
            _domain: prepared.domain,
            fabric: prepared.fabric,
            info: prepared.info,
            lib: prepared.lib,
            addrs,
            remote,
            first_end: parts.first_end(),
            parts,
            hints: vec![Default::default(); addrs_len],
            virt_addr: prepared.mr_mode & FI_MR_VIRT_ADDR != 0,
            mr_mode: prepared.mr_mode,
            atomics: prepared.atomics,
            quirks,
            posted: 0,
            completed: 0,
            depth,
            pending_peers: Vec::new(),
            msg_max: msg_max.max(1),
            bounce: vec![0; BOUNCE_BYTES].into_boxed_slice(),
            bounce_used: 0,
            spin: prepared.own_core,
            waits_poll: prepared.waits_poll,
            own_segment: prepared.own_segment,
            wait_fd: prepared.wait_fd,
            own_polls: 0,
            direct: Vec::new(),
            stall_limit: STALL_LIMIT,
        }
    }

    /// "ofi tcp;ofi_rxm", for messages and benchmarks.
    pub fn device_name(&self) -> String {
        match self.writes_direct() {
            true => format!("ofi {}, direct writes", self.info.provider()),
            false => format!("ofi {}", self.info.provider()),
        }
    }

    /// Posts with `post` until the provider takes it, driving progress
    /// while it answers `-FI_EAGAIN`; counts it as posted.
    fn post(&mut self, peer: usize, op: &'static str, mut post: impl FnMut(&Self) -> isize) -> Result<(), Fault> {
        if self.posted - self.completed >= self.depth {
            self.wait_for(self.depth - 1, peer, op)?;
        }
        let started = Instant::now();
        let mut blocked = None;
        loop {
            match post(self) {
                0 => break,
                rc if rc == -FI_EAGAIN => {
                    self.progress(peer, op)?;
                    // A refusal that lasts is shown to the watchdog, naming
                    // the peer whose queue is full (it may have gone silent).
                    blocked.get_or_insert_with(|| crate::watch::blocked(crate::watch::Waiting::Answer { rank: peer }));
                    let waited = started.elapsed();
                    if waited > SHOW_AFTER {
                        crate::watch::idle();
                    }
                    if waited > self.stall_limit {
                        let secs = self.stall_limit.as_secs();
                        return Err(Fault::with(
                            peer,
                            op,
                            format!("the provider took no operation for {secs} s (-FI_EAGAIN)"),
                        ));
                    }
                }
                rc => {
                    return Err(Fault::with(
                        peer,
                        op,
                        format!("posting failed: {}", self.lib.error_text(rc)),
                    ))
                }
            }
        }
        self.posted += 1;
        if !self.pending_peers.contains(&peer) {
            self.pending_peers.push(peer);
        }
        Ok(())
    }

    /// Reads the CQ once: drives a manual-progress provider, and turns an
    /// error completion into a failure naming `peer` (the operation's).
    pub fn progress(&mut self, peer: usize, op: &'static str) -> Result<(), Fault> {
        self.own_polls += 1;
        match self.read_cq() {
            n if n == -FI_EAVAIL => Err(self.read_error(peer, op)),
            _ => Ok(()),
        }
    }

    /// One `fi_cq_read`: counts the completions read; returns its result.
    fn read_cq(&mut self) -> isize {
        let mut entries = [fi_cq_entry {
            op_context: std::ptr::null_mut(),
        }; 16];
        // SAFETY: fi_cq_read through the live CQ's ops, into room for 16 entries.
        let n = unsafe { ((*(*self.cq.raw).ops).read)(self.cq.raw, entries.as_mut_ptr().cast(), entries.len()) };
        if n > 0 {
            self.completed += n as u64;
        }
        n
    }

    /// The error entry at the head of the CQ, as a failure.
    fn read_error(&mut self, peer: usize, op: &'static str) -> Fault {
        // SAFETY: zeroed fi_cq_err_entry (err_data null, size 0) is valid input.
        let mut error: fi_cq_err_entry = unsafe { std::mem::zeroed() };
        // SAFETY: fi_cq_readerr through the live CQ's ops into `error`.
        let rc = unsafe { ((*(*self.cq.raw).ops).readerr)(self.cq.raw, &mut error, 0) };
        if rc < 0 {
            return Fault::with(peer, op, format!("an operation failed, and fi_cq_readerr too ({rc})"));
        }
        let mut buffer = [0 as std::ffi::c_char; 128];
        // SAFETY: fi_cq_strerror through the CQ's ops, into `buffer`.
        let provider_text = unsafe {
            fabric::c_text(((*(*self.cq.raw).ops).strerror)(
                self.cq.raw,
                error.prov_errno,
                error.err_data,
                buffer.as_mut_ptr(),
                buffer.len(),
            ))
        };
        let peers = self.pending_text(peer);
        Fault::with(
            peer,
            op,
            format!(
                "{} (provider {}: {provider_text}; {peers})",
                self.lib.error_text(error.err as isize),
                self.info.provider()
            ),
        )
    }

    fn pending_text(&self, peer: usize) -> String {
        let mut peers = self.pending_peers.clone();
        if !peers.contains(&peer) {
            peers.push(peer);
        }
        let list: Vec<String> = peers.iter().map(|p| format!("rank {p}")).collect();
        format!("operations in flight to {}", list.join(", "))
    }

    /// Waits until every posted operation has completed; progress is driven
    /// all along, and a stall of the stall limit names the peers.
    pub fn quiet(&mut self) -> Result<(), Fault> {
        let peer = self.pending_peers.first().copied().unwrap_or(0);
        self.wait_all(peer, "quiet")?;
        self.pending_peers.clear();
        Ok(())
    }

    fn wait_all(&mut self, peer: usize, op: &'static str) -> Result<(), Fault> {
        self.wait_for(0, peer, op)?;
        self.bounce_used = 0;
        Ok(())
    }

    /// Drives progress until at most `in_flight` operations are
    /// outstanding; a stall of the stall limit names the peers.
    fn wait_for(&mut self, in_flight: u64, peer: usize, op: &'static str) -> Result<(), Fault> {
        let mut last = self.completed;
        let mut since = Instant::now();
        let mut backoff = crate::backoff::Backoff::new(self.spin).keep_polling(self.waits_poll);
        let mut blocked = None;
        while self.posted - self.completed > in_flight {
            // A wait that lasts is shown to the watchdog, naming the peer,
            // so rlaunch can tell a silent peer from a slow one.
            blocked.get_or_insert_with(|| crate::watch::blocked(crate::watch::Waiting::Answer { rank: peer }));
            self.progress(peer, op)?;
            let now = self.completed;
            if now != last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() > self.stall_limit {
                let peers = self.pending_text(peer);
                return Err(Fault::with(
                    peer,
                    op,
                    format!(
                        "no completion for {} s ({peers}): the peer is gone or hung",
                        self.stall_limit.as_secs()
                    ),
                ));
            }
            backoff.pause();
        }
        Ok(())
    }

    /// Copies `bytes` into the bounce buffer (after waiting for everything
    /// in flight if it is full); returns where they are.
    fn stage(&mut self, peer: usize, op: &'static str, bytes: &[u8]) -> Result<*const c_void, Fault> {
        if self.bounce_used + bytes.len() > self.bounce.len() {
            self.wait_all(peer, op)?;
        }
        let at = self.bounce_used;
        self.bounce[at..at + bytes.len()].copy_from_slice(bytes);
        self.bounce_used = (at + bytes.len()).next_multiple_of(8);
        Ok(self.bounce[at..].as_ptr().cast())
    }

    /// Reads the CQ once (a local wait's step).
    pub fn poll(&mut self) -> Result<(), Fault> {
        let peer = self.pending_peers.first().copied().unwrap_or(0);
        self.progress(peer, "progress")
    }

    /// Orders later operations after earlier ones: completes them.
    pub fn fence(&mut self) -> Result<(), Fault> {
        self.quiet()
    }
}
