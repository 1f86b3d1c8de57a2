//! The completion queue and RC queue pairs. A queue pair's connection is a
//! typestate: [`QueuePair<Init>`] (created, in INIT, its number published in
//! the card) becomes [`QueuePair<Ready>`] (RTR then RTS) once the peer's card
//! is known; only a ready pair can post work.

use super::device::{Context, ProtectionDomain};
use super::library::Library;
use super::sys as ffi;
use crate::syscall::cvt_null;
use crate::transport::fault::Fault;
use std::marker::PhantomData;

/// Send queue depth of every queue pair.
pub const SQ_DEPTH: u32 = 256;
/// Smallest completion queue depth asked for (one CQ serves all queue pairs).
pub const CQ_DEPTH: i32 = 4096;

/// A completion queue (`ibv_cq`).
pub struct CompletionQueue {
    raw: *mut ffi::ibv_cq,
    lib: &'static Library,
}

impl CompletionQueue {
    /// A CQ with room for `depth` completions.
    pub fn new(context: &Context, depth: i32) -> Result<CompletionQueue, Fault> {
        // SAFETY: the context is open; no channel, no vector: we poll.
        let raw = cvt_null(unsafe {
            (context.lib.create_cq)(context.raw(), depth, std::ptr::null_mut(), std::ptr::null_mut(), 0)
        })
        .map_err(|e| format!("cannot create a completion queue: {e}"))?;
        Ok(CompletionQueue { raw, lib: context.lib })
    }

    /// Polls up to `out.len()` completions; returns how many arrived.
    pub fn poll(&self, out: &mut [ffi::ibv_wc]) -> Result<usize, Fault> {
        // SAFETY: ibv_poll_cq is inline in verbs.h: it calls the provider's
        // poll_cq through the context's ops table, which we do here. The CQ
        // is live and `out` has room for `out.len()` entries.
        let n = unsafe {
            let context = (*self.raw).context;
            let poll = (*context).ops.poll_cq.expect("every provider implements poll_cq");
            poll(self.raw, out.len() as i32, out.as_mut_ptr())
        };
        if n < 0 {
            return Err(format!("polling the completion queue failed ({n})").into());
        }
        Ok(n as usize)
    }
}

impl Drop for CompletionQueue {
    fn drop(&mut self) {
        // SAFETY: created by ibv_create_cq; every QP using it was dropped first.
        unsafe { (self.lib.destroy_cq)(self.raw) };
    }
}

/// Typestate: created and in INIT.
pub struct Init;
/// Typestate: connected (RTS), able to post work.
pub struct Ready;

/// What a queue pair needs to know about the remote end.
pub struct RemoteEnd {
    pub qpn: u32,
    pub psn: u32,
    pub lid: u16,
    pub gid: [u8; 16],
    pub mtu: u32,
}

/// The local port parameters every queue pair uses.
#[derive(Clone, Copy)]
pub struct LocalPort {
    pub port: u8,
    pub gid_index: u8,
    /// Address with the GID (RoCE, or IB across subnets) rather than the LID.
    pub use_gid: bool,
    pub mtu: u32,
    pub max_rd_atomic: u8,
}

/// An RC queue pair (`ibv_qp`) in connection state `S`.
pub struct QueuePair<S> {
    raw: *mut ffi::ibv_qp,
    lib: &'static Library,
    pub psn: u32,
    pub max_inline: u32,
    _state: PhantomData<S>,
}

impl QueuePair<Init> {
    /// Creates an RC queue pair on `cq`, starting its send queue at `psn`, and moves it to INIT.
    pub fn create(
        pd: &ProtectionDomain,
        cq: &CompletionQueue,
        local: &LocalPort,
        psn: u32,
    ) -> Result<QueuePair<Init>, Fault> {
        let mut last_error = String::new();
        // Ask for inline room; providers that offer less refuse, so step down.
        for max_inline in [256, 128, 64, 0] {
            let mut init = ffi::ibv_qp_init_attr {
                send_cq: cq.raw,
                recv_cq: cq.raw,
                qp_type: ffi::IBV_QPT_RC,
                cap: ffi::ibv_qp_cap {
                    max_send_wr: SQ_DEPTH,
                    max_recv_wr: 1,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: max_inline,
                },
                qp_context: std::ptr::null_mut(),
                srq: std::ptr::null_mut(),
                sq_sig_all: 0,
            };
            // SAFETY: the PD and CQ are live; `init` is fully initialized.
            let raw = match cvt_null(unsafe { (pd.lib.create_qp)(pd.raw(), &mut init) }) {
                Ok(raw) => raw,
                Err(e) => {
                    last_error = e.to_string();
                    continue;
                }
            };
            let qp = QueuePair {
                raw,
                lib: pd.lib,
                psn,
                max_inline: init.cap.max_inline_data,
                _state: PhantomData,
            };
            let mut attr = ffi::ibv_qp_attr {
                qp_state: ffi::IBV_QPS_INIT,
                pkey_index: 0,
                port_num: local.port,
                qp_access_flags: ffi::IBV_ACCESS_REMOTE_WRITE
                    | ffi::IBV_ACCESS_REMOTE_READ
                    | ffi::IBV_ACCESS_REMOTE_ATOMIC,
                ..Default::default()
            };
            let mask = ffi::IBV_QP_STATE | ffi::IBV_QP_PKEY_INDEX | ffi::IBV_QP_PORT | ffi::IBV_QP_ACCESS_FLAGS;
            qp.modify(&mut attr, mask, "INIT")?;
            return Ok(qp);
        }
        Err(format!("cannot create a queue pair: {last_error}").into())
    }

    /// Connects to `remote`: INIT → RTR → RTS.
    pub fn connect(self, local: &LocalPort, remote: &RemoteEnd) -> Result<QueuePair<Ready>, Fault> {
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_RTR,
            path_mtu: local.mtu.min(remote.mtu),
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn,
            max_dest_rd_atomic: local.max_rd_atomic,
            min_rnr_timer: 12,
            ah_attr: ffi::ibv_ah_attr {
                dlid: remote.lid,
                sl: 0,
                src_path_bits: 0,
                is_global: u8::from(local.use_gid),
                port_num: local.port,
                grh: ffi::ibv_global_route {
                    dgid: ffi::ibv_gid { raw: remote.gid },
                    sgid_index: local.gid_index,
                    hop_limit: 64,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        use ffi as m;
        let rtr = m::IBV_QP_STATE
            | m::IBV_QP_AV
            | m::IBV_QP_PATH_MTU
            | m::IBV_QP_DEST_QPN
            | m::IBV_QP_RQ_PSN
            | m::IBV_QP_MAX_DEST_RD_ATOMIC
            | m::IBV_QP_MIN_RNR_TIMER;
        self.modify(&mut attr, rtr, "RTR")?;
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_RTS,
            // A dead peer fails the next operation on it after about
            // (retry_cnt + 1) x 4.096 us x 2^timeout = 7 x 268 ms = 1.9 s,
            // and a peer that stalls for less than 268 ms costs a retry,
            // not the job. The retry count is not 7: Soft-RoCE (rxe_comp.c)
            // takes 7 as "retry forever", as the spec does only for
            // rnr_retry, and a get on a dead peer then never returned.
            timeout: 16,
            retry_cnt: 6,
            rnr_retry: 7,
            sq_psn: self.psn,
            max_rd_atomic: local.max_rd_atomic,
            ..Default::default()
        };
        let rts = m::IBV_QP_STATE
            | m::IBV_QP_TIMEOUT
            | m::IBV_QP_RETRY_CNT
            | m::IBV_QP_RNR_RETRY
            | m::IBV_QP_SQ_PSN
            | m::IBV_QP_MAX_QP_RD_ATOMIC;
        self.modify(&mut attr, rts, "RTS")?;
        let ready = QueuePair {
            raw: self.raw,
            lib: self.lib,
            psn: self.psn,
            max_inline: self.max_inline,
            _state: PhantomData,
        };
        std::mem::forget(self);
        Ok(ready)
    }
}

impl<S> QueuePair<S> {
    pub fn qpn(&self) -> u32 {
        // SAFETY: `raw` is a live QP.
        unsafe { (*self.raw).qp_num }
    }

    fn modify(&self, attr: &mut ffi::ibv_qp_attr, mask: i32, state: &str) -> Result<(), Fault> {
        // SAFETY: the QP is live and `attr` is initialized for every bit in `mask`.
        let rc = unsafe { (self.lib.modify_qp)(self.raw, attr, mask) };
        if rc != 0 {
            return Err(format!(
                "cannot move queue pair {} to {state}: {}",
                self.qpn(),
                std::io::Error::from_raw_os_error(rc)
            )
            .into());
        }
        Ok(())
    }
}

impl QueuePair<Ready> {
    /// Posts one work request.
    ///
    /// # Safety
    /// Every scatter/gather entry of `wr` must name registered memory that
    /// stays valid until the request completes (inline data is copied now).
    pub unsafe fn post(&self, wr: &mut ffi::ibv_send_wr) -> Result<(), std::io::Error> {
        let mut bad: *mut ffi::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: ibv_post_send is inline in verbs.h: it calls the provider's
        // post_send through the context's ops table, which we do here. The QP
        // is live and ready; the caller vouches for the buffers.
        let rc = unsafe {
            let context = (*self.raw).context;
            let post = (*context).ops.post_send.expect("every provider implements post_send");
            post(self.raw, wr, &mut bad)
        };
        match rc {
            0 => Ok(()),
            errno => Err(std::io::Error::from_raw_os_error(errno)),
        }
    }
}

impl<S> Drop for QueuePair<S> {
    fn drop(&mut self) {
        // SAFETY: created by ibv_create_qp and destroyed once (`connect`
        // forgets the INIT handle it replaces).
        unsafe { (self.lib.destroy_qp)(self.raw) };
    }
}
