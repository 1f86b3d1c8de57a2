//! How a manual-progress provider tells the progress thread that peers'
//! operations have arrived while its rank naps: a file descriptor the CQ
//! signals (`FI_WAIT_FD`, slept on after `fi_trywait`), or, for providers
//! without one (shm, udp;ofi_rxd), a counter of remote operations
//! (`FI_RMA_EVENT`) read alongside the CQ. `prepare` opens whichever the
//! provider offers; `progress` uses it.
//!
//! The descriptor has a price over `tcp;ofi_rxm`: rxm then gives tcp's
//! own CQ a wait object too, and tcp signals it through a pipe for every
//! completion and drains it on the next read (a `write`, an `epoll_wait`
//! and a `read` more per operation at the origin, an `epoll_wait` per
//! look at the target). [`CQ_WAIT_VAR`]`=none` forgoes it where every
//! local rank has a core: the rank's own long waits then keep polling and
//! serve its peers, as the raw floor's target does, and the thread, with
//! nothing to sleep on, reads the CQ every period.

use super::fabric::{no_context, open, Object};
use super::library::Library;
use super::sys::*;
use std::ffi::c_int;

/// Chooses the CQ's wait object: `fd` (the default) or `none`.
pub const CQ_WAIT_VAR: &str = "ONESIDE_OFI_CQ_WAIT";

/// Whether the CQ should go without a wait descriptor, from
/// [`CQ_WAIT_VAR`]'s value (unset or empty: no); an unknown value is an
/// error naming the two there are.
pub(super) fn cq_wait_none(value: Option<&str>) -> Result<bool, String> {
    match value.map(str::trim) {
        None | Some("" | "fd") => Ok(false),
        Some("none") => Ok(true),
        Some(other) => Err(format!(
            "{CQ_WAIT_VAR}={other:?} is not a wait object this transport knows: \
             say fd (the default: a rank that computes is served within a thread wake-up) \
             or none (waits poll instead, where every rank has a core)"
        )),
    }
}

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

#[cfg(test)]
mod tests {
    use super::cq_wait_none;

    #[test]
    fn the_cq_wait_setting_takes_fd_or_none_and_names_both_otherwise() {
        assert_eq!(cq_wait_none(None), Ok(false));
        assert_eq!(cq_wait_none(Some("")), Ok(false));
        assert_eq!(cq_wait_none(Some("fd")), Ok(false));
        assert_eq!(cq_wait_none(Some(" none ")), Ok(true));
        let refused = cq_wait_none(Some("yield")).unwrap_err();
        assert!(refused.contains("ONESIDE_OFI_CQ_WAIT=\"yield\""), "{refused}");
        assert!(refused.contains("fd") && refused.contains("none"), "{refused}");
    }
}
