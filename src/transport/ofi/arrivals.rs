//! How a manual-progress provider tells the progress thread that peers'
//! operations have arrived while its rank naps: a file descriptor the CQ
//! signals (`FI_WAIT_FD`, slept on after `fi_trywait`), or, for providers
//! without one (shm, udp;ofi_rxd), a counter of remote operations
//! (`FI_RMA_EVENT`) read alongside the CQ. `prepare` opens whichever the
//! provider offers; `progress` uses it.

use super::fabric::{no_context, open, Object};
use super::library::Library;
use super::sys::*;
use std::ffi::c_int;

/// A counter of peers' writes, reads and atomics on this endpoint
/// (`FI_REMOTE_WRITE | FI_REMOTE_READ`), or `None` if the provider will not
/// open or bind one: the progress thread then cannot tell when they arrive.
pub(super) fn arrivals_counter(
    lib: &Library,
    domain: &Object<fid_domain>,
    ep: &Object<fid_ep>,
) -> Option<Object<fid_cntr>> {
    let mut attr = fi_cntr_attr {
        events: FI_CNTR_EVENTS_COMP,
        wait_obj: FI_WAIT_NONE,
        wait_set: std::ptr::null_mut(),
        flags: 0,
    };
    // SAFETY: fi_cntr_open through the live domain's ops, as its header
    // declares; on success it returns a new counter.
    let counter = unsafe {
        open("fi_cntr_open", lib, |out| {
            ((*(*domain.raw).ops).cntr_open)(domain.raw, &mut attr, out, no_context())
        })
    }
    .ok()?;
    ep.bind(
        counter.fid(),
        FI_REMOTE_WRITE | FI_REMOTE_READ,
        "fi_ep_bind (counter)",
        lib,
    )
    .ok()?;
    Some(counter)
}

/// Whether the fabric's ops table reaches `trywait` (libfabric's `FI_CHECK_OP`).
pub(super) fn has_trywait(fabric: &Object<fid_fabric>) -> bool {
    // SAFETY: a live fabric whose ops table was filled by libfabric; only
    // its `size` field is read.
    let size = unsafe { (*(*fabric.raw).ops).size };
    size > std::mem::offset_of!(fi_ops_fabric, trywait)
}

/// The file descriptor a CQ opened with `FI_WAIT_FD` signals (`FI_GETWAIT`).
pub(super) fn wait_fd_of(cq: &Object<fid_cq>) -> Option<c_int> {
    let mut fd: c_int = -1;
    // SAFETY: fi_control(FI_GETWAIT) through the live CQ's fid ops writes an
    // int for a CQ with a file-descriptor wait object, and fails otherwise.
    let rc = unsafe { ((*(*cq.fid()).ops).control)(cq.fid(), FI_GETWAIT, std::ptr::from_mut(&mut fd).cast()) };
    (rc == 0 && fd >= 0).then_some(fd)
}
