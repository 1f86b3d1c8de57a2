//! Bringing the ofi transport up: choose a provider that offers an RDM
//! endpoint with RMA and atomics ([`prepare`]: `fi_getinfo` with hints,
//! then fabric, domain, address vector, CQ, endpoint, and this rank's
//! segment registered, whole or in parts, `memory`), publish the
//! endpoint's name and the registration's keys in the card, and with
//! every card insert the job's addresses into the AV in rank order
//! ([`Prepared::connect`]).

use super::arrivals::{arrivals_counter, cq_wait_none, has_trywait, wait_fd_of, CQ_WAIT_VAR};
use super::atomics::Support;
use super::fabric::{self, no_context, open, Info, Object};
use super::library::{self, Library};
use super::memory::{key_of, registers_in_parts, same_parts, Registrar};
use super::sys::*;
use super::Ofi;
use crate::segment::{RawSegment, HEADER_BYTES};
use crate::transport::fault::Fault;
use crate::transport::parts::{first_part, Parts};
use crate::transport::OfiCard;
use std::ffi::c_int;

/// `ONESIDE_OFI_PROVIDER` (set by rlaunch's `--ofi-provider`), else the
/// `FI_PROVIDER` libfabric itself honours, else the first provider that fits.
pub const PROVIDER_VAR: &str = "ONESIDE_OFI_PROVIDER";

/// Entries of the CQ (some providers take 0 literally); no more
/// operations than this are ever in flight (`Ofi::post` waits for room).
pub(super) const CQ_DEPTH: usize = 1024;

/// The memory-registration modes this transport can follow.
const MR_MODES: i32 = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;

/// Everything opened, the addresses not yet known. Drops as `Ofi` does.
pub struct Prepared {
    pub(super) ep: Object<fid_ep>,
    /// Part 0 (or the whole segment), and the global data's part.
    pub(super) data_mr: Option<Object<fid_mr>>,
    pub(super) mr: Object<fid_mr>,
    /// A counter of peers' operations on this endpoint, for a provider
    /// with manual progress and no wait descriptor, if it offers one.
    pub(super) arrivals: Option<Object<fid_cntr>>,
    pub(super) cq: Object<fid_cq>,
    pub(super) av: Object<fid_av>,
    pub(super) domain: Object<fid_domain>,
    pub(super) fabric: Object<fid_fabric>,
    pub(super) info: Info,
    pub(super) lib: &'static Library,
    card: OfiCard,
    /// The first byte of this rank's segment (its header).
    pub(super) own_segment: *mut u8,
    pub(super) manual_progress: bool,
    /// The CQ's wait file descriptor, if it has one.
    pub(super) wait_fd: Option<c_int>,
    /// The CQ went without one by choice (`ONESIDE_OFI_CQ_WAIT=none`,
    /// manual progress): the rank's long waits keep polling instead.
    pub(super) waits_poll: bool,
    /// Whether each rank on this host has a core (`prepare`'s `own_core`):
    /// the transport's waits may spin.
    pub(super) own_core: bool,
    pub(super) atomics: Support,
    pub(super) mr_mode: i32,
    /// The heap's reservation ends here, and the segment (heap offsets).
    alloc_len: usize,
    heap_len: usize,
}

// SAFETY: libfabric objects may be used from any thread under
// FI_THREAD_DOMAIN as long as calls are serialized, which the owner's
// mutex does; nothing here is tied to the creating thread.
unsafe impl Send for Prepared {}

/// What [`Prepared::connect`]'s faults say was being done.
const OP_CONNECT: &str = "connect the ofi endpoint";

impl Prepared {
    pub fn card(&self) -> OfiCard {
        self.card.clone()
    }

    /// Whether the provider needs a thread to progress while the rank computes.
    pub fn manual_progress(&self) -> bool {
        self.manual_progress
    }

    /// Whether each rank on this host has a core, as `prepare` was told.
    pub fn own_core(&self) -> bool {
        self.own_core
    }

    /// Whether this rank's long waits must keep polling, having no wait
    /// descriptor to hand its peers' operations to the progress thread
    /// (`ONESIDE_OFI_CQ_WAIT=none`).
    pub fn waits_poll(&self) -> bool {
        self.waits_poll
    }

    /// Inserts every rank's address in rank order; checks one provider
    /// serves the whole job.
    pub fn connect(self, cards: &[Option<OfiCard>]) -> Result<Ofi, Fault> {
        let mut remote = Vec::with_capacity(cards.len());
        let mut addrs = vec![0 as fi_addr_t; cards.len()];
        for (peer, card) in cards.iter().enumerate() {
            let Some(card) = card else {
                return Err(Fault::with(peer, OP_CONNECT, "it has no ofi endpoint"));
            };
            if card.provider != self.card.provider {
                return Err(Fault::with(
                    peer,
                    OP_CONNECT,
                    format!(
                        "it uses provider {}, this rank {}: set the same ONESIDE_OFI_PROVIDER everywhere",
                        card.provider, self.card.provider
                    ),
                ));
            }
            same_parts(&self.card, card).map_err(|why| Fault::with(peer, OP_CONNECT, why))?;
            remote.push((card.addr, card.key));
            // One address at a time: some formats (shm's strings) vary in length.
            // SAFETY: one address of this provider's format (from its
            // fi_getname), and room for its one result.
            let inserted = unsafe {
                ((*(*self.av.raw).ops).insert)(
                    self.av.raw,
                    card.name.as_ptr().cast(),
                    1,
                    &mut addrs[peer],
                    0,
                    no_context(),
                )
            };
            if inserted != 1 {
                let why = self.lib.error_text(inserted as isize);
                return Err(Fault::with(
                    peer,
                    OP_CONNECT,
                    format!("fi_av_insert did not take its address ({inserted}: {why})"),
                ));
            }
        }
        let first_keys = cards.iter().flatten().map(|c| c.key).collect();
        let data = self.card.data_key.map(|_| {
            let keys = cards.iter().flatten().map(|c| c.data_key.unwrap_or(0)).collect();
            (HEADER_BYTES + self.alloc_len, HEADER_BYTES + self.heap_len, keys)
        });
        let first_end = HEADER_BYTES + self.card.first as usize;
        let parts = Parts::new(first_end, first_keys, data, HEADER_BYTES + self.alloc_len);
        Ok(Ofi::new(self, addrs, remote, parts))
    }
}

/// Providers whose RMA and atomics are done by hardware: the only ones
/// `auto` takes (for anything else between hosts, TCP is as good).
pub const HARDWARE: [&str; 5] = ["cxi", "efa", "opx", "psm2", "psm3"];

/// Whether this host has a device some [`HARDWARE`] provider could drive:
/// an RDMA device (efa, psm3; opx and psm2 through hfi1), a Slingshot NIC
/// (cxi) or an Omni-Path one. A few directory reads, where asking
/// libfabric costs each rank ~50 ms on a virtual machine (its start-up
/// reads all of `/proc/kallsyms`, twice): `auto` asks only where one of
/// its providers could answer.
fn fabric_device_present() -> bool {
    let any_in = |dir: &str, prefix: &str| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
        })
    };
    any_in("/sys/class/infiniband", "")
        || any_in("/dev", "cxi")
        || any_in("/dev", "hfi1_")
        || any_in("/sys/class/cxi", "")
}

/// Opens the provider and prepares this rank's endpoint for a job of `size`
/// ranks; with `hardware_only`, only a provider of [`HARDWARE`].
/// `own_core`: whether each rank on this host has a core, the condition
/// for honouring `ONESIDE_OFI_CQ_WAIT=none` (see `arrivals`).
pub fn prepare(size: usize, segment: RawSegment, hardware_only: bool, own_core: bool) -> Result<Prepared, Fault> {
    let no_cq_wait = cq_wait_none(std::env::var(CQ_WAIT_VAR).ok().as_deref())? && own_core;
    let wanted = std::env::var(PROVIDER_VAR)
        .ok()
        .filter(|p| !p.is_empty() && p != "auto");
    let user_chose = wanted.is_some() || std::env::var_os("FI_PROVIDER").is_some_and(|p| !p.is_empty());
    if hardware_only && !user_chose && !fabric_device_present() {
        return Err("no fabric device here (/sys/class/infiniband, /dev/cxi*, /dev/hfi1_*)".into());
    }
    let lib = library::load()?;
    let info = get_info(lib, wanted.as_deref(), 0).map_err(|e| match &wanted {
        Some(p) => format!("provider {p:?} offers no RDM endpoint with RMA and atomics here ({e})"),
        None => format!("no libfabric provider offers an RDM endpoint with RMA and atomics here ({e})"),
    })?;
    let provider = info.provider();
    if hardware_only && !HARDWARE.contains(&provider.split(';').next().unwrap_or("")) {
        return Err(format!("{provider} does its RMA in software").into());
    }
    // SAFETY: fi_getinfo filled every attribute struct of its entries.
    let manual_progress = unsafe { (*info.first().domain_attr).data_progress == FI_PROGRESS_MANUAL };
    // The same provider with remote events, if it has them: a counter of
    // peers' operations tells the progress thread they are arriving.
    let info = match manual_progress {
        true => get_info(lib, Some(&provider), FI_RMA_EVENT).unwrap_or(info),
        false => info,
    };
    if provider == "shm" {
        remove_stale_shm_regions();
    }
    let remote_events = info.first().caps & FI_RMA_EVENT != 0;
    let first = info.first();
    // SAFETY: fi_getinfo filled every attribute struct of its entries.
    let mr_mode = unsafe { (*first.domain_attr).mr_mode };
    let virt_addr = mr_mode & FI_MR_VIRT_ADDR != 0;

    // SAFETY: here and at every `open` below, the call is the inline
    // libfabric function of the same name, made through the parent's ops
    // table with the arguments its header declares; on success it returns a
    // new object.
    let fabric = unsafe {
        open("fi_fabric", lib, |out| {
            (lib.fabric)(first.fabric_attr, out, no_context())
        })
    }?;
    // SAFETY: as for `fi_fabric` above.
    let domain = unsafe {
        open("fi_domain", lib, |out| {
            ((*(*fabric.raw).ops).domain)(fabric.raw, info.raw, out, no_context())
        })
    }?;
    let mut av_attr = fi_av_attr {
        type_: FI_AV_TABLE,
        rx_ctx_bits: 0,
        count: size,
        ep_per_node: 0,
        name: std::ptr::null(),
        map_addr: std::ptr::null_mut(),
        flags: 0,
    };
    // SAFETY: as for `fi_fabric` above.
    let av = unsafe {
        open("fi_av_open", lib, |out| {
            ((*(*domain.raw).ops).av_open)(domain.raw, &mut av_attr, out, no_context())
        })
    }?;
    let open_cq = |wait_obj: c_int| {
        let mut cq_attr = fi_cq_attr {
            size: CQ_DEPTH,
            flags: 0,
            format: FI_CQ_FORMAT_CONTEXT,
            wait_obj,
            signaling_vector: 0,
            wait_cond: 0,
            wait_set: std::ptr::null_mut(),
        };
        // SAFETY: as for `fi_fabric` above.
        unsafe {
            open("fi_cq_open", lib, |out| {
                ((*(*domain.raw).ops).cq_open)(domain.raw, &mut cq_attr, out, no_context())
            })
        }
    };
    // A provider with manual progress gets a CQ with a file descriptor for
    // its progress thread to sleep on, if it offers one and `fi_trywait`.
    let cq = match manual_progress && has_trywait(&fabric) && !no_cq_wait {
        true => open_cq(FI_WAIT_FD).or_else(|_| open_cq(FI_WAIT_NONE)),
        false => open_cq(FI_WAIT_NONE),
    }?;
    let wait_fd = wait_fd_of(&cq);
    // SAFETY: as for `fi_fabric` above.
    let ep = unsafe {
        open("fi_endpoint", lib, |out| {
            ((*(*domain.raw).ops).endpoint)(domain.raw, info.raw, out, no_context())
        })
    }?;
    ep.bind(av.fid(), 0, "fi_ep_bind (address vector)", lib)?;
    ep.bind(cq.fid(), FI_TRANSMIT | FI_RECV, "fi_ep_bind (CQ)", lib)?;
    // Without a wait descriptor, peers' operations show on a counter.
    let arrivals = match manual_progress && remote_events && wait_fd.is_none() {
        true => arrivals_counter(lib, &domain, &ep),
        false => None,
    };
    ep.enable("fi_enable", lib)?;

    let base = segment.heap_base().wrapping_sub(HEADER_BYTES);
    let grows = registers_in_parts(&provider)?;
    // In parts, what is committed (part 0) and the global data apart;
    // else the whole segment (`memory`).
    let first = match grows {
        true => first_part(segment),
        false => segment.heap_len(),
    };
    let registrar = Registrar {
        lib,
        domain: &domain,
        ep: &ep,
        mr_mode,
    };
    // SAFETY: the segment stays mapped while the World (which owns both
    // the segment and this transport, dropping its links first) lives.
    let mr = unsafe { registrar.register(base, HEADER_BYTES + first, 0) }?;
    let data = base.wrapping_add(HEADER_BYTES + segment.alloc_len());
    let data_mr = match (grows, segment.data_len()) {
        (false, _) | (_, 0) => None,
        (true, len) => {
            // SAFETY: as above, for the global data at the segment's end.
            Some(unsafe { registrar.register(data, len, 1) }?)
        }
    };
    let mut name = vec![0u8; 256];
    let mut name_len = name.len();
    // SAFETY: fi_getname through the endpoint's cm ops; `name` has room for `name_len` bytes.
    let rc = unsafe { ((*(*ep.raw).cm).getname)(ep.fid(), name.as_mut_ptr().cast(), &mut name_len) };
    fabric::check(rc, "fi_getname", lib)?;
    name.truncate(name_len);
    let atomics = Support::probe(&ep)?;
    let card = OfiCard {
        provider: info.provider(),
        name,
        addr: if virt_addr { base as u64 } else { 0 },
        key: key_of(&mr),
        first: first as u64,
        data_key: data_mr.as_ref().map(key_of),
        grows,
    };
    Ok(Prepared {
        ep,
        data_mr,
        mr,
        cq,
        av,
        domain,
        fabric,
        info,
        lib,
        card,
        own_segment: base,
        manual_progress,
        wait_fd,
        waits_poll: manual_progress && no_cq_wait,
        own_core,
        arrivals,
        atomics,
        mr_mode,
        alloc_len: segment.alloc_len(),
        heap_len: segment.heap_len(),
    })
}

/// Removes `/dev/shm/<pid>:*`, the regions libfabric's shm provider names
/// after this process's id, before it makes its own. Such a file can only
/// be stale: a process of an earlier job, with the same pid (pid_max is
/// 32768 here), was killed before shm unlinked it, and nothing removed it
/// since (rlaunch does for the ranks it starts). shm then failed
/// `fi_enable` with `EBUSY` ("Device or resource busy"), seen when the ofi
/// suite ran after jobs whose ranks were ended by SIGTERM.
fn remove_stale_shm_regions() {
    crate::protocol::shm_files::remove_ofi_shm_regions(std::process::id());
}

/// Asks `fi_getinfo` for an RDM endpoint with RMA and atomics, `extra_caps`
/// too, from `provider` if named.
fn get_info(lib: &'static Library, provider: Option<&str>, extra_caps: u64) -> Result<Info, Fault> {
    let hints = Info::hints(lib)?;
    // SAFETY: fi_allocinfo allocated every attribute struct; strings we put
    // in are malloc'ed (strdup), as fi_freeinfo frees them.
    unsafe {
        let h = &mut *hints.raw;
        h.caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | extra_caps;
        h.mode = 0;
        (*h.ep_attr).type_ = FI_EP_RDM;
        (*h.domain_attr).mr_mode = MR_MODES;
        (*h.domain_attr).threading = FI_THREAD_DOMAIN;
        (*h.domain_attr).av_type = FI_AV_TABLE;
        (*h.tx_attr).op_flags = FI_DELIVERY_COMPLETE;
        if let Some(name) = provider {
            let name = std::ffi::CString::new(name).map_err(|_| format!("{PROVIDER_VAR} holds a NUL"))?;
            (*h.fabric_attr).prov_name = libc::strdup(name.as_ptr());
        }
    }
    Info::get(lib, &hints)
}

/// The name of the provider `prepare` would pick, and its domain, for `rlaunch --check`.
pub fn providers() -> Result<Vec<String>, Fault> {
    let lib = library::load()?;
    let hints = Info::hints(lib)?;
    // SAFETY: as in `prepare`.
    unsafe {
        let h = &mut *hints.raw;
        h.caps = FI_RMA | FI_ATOMIC;
        (*h.ep_attr).type_ = FI_EP_RDM;
        (*h.domain_attr).mr_mode = MR_MODES;
    }
    let Ok(info) = Info::get(lib, &hints) else {
        return Ok(Vec::new());
    };
    let mut names = Vec::new();
    let mut entry = info.raw;
    while !entry.is_null() {
        // SAFETY: walking the list fi_getinfo returned, which `info` keeps alive.
        let name = unsafe { fabric::c_text((*(*entry).fabric_attr).prov_name) };
        if !names.contains(&name) {
            names.push(name);
        }
        // SAFETY: as above.
        entry = unsafe { (*entry).next };
    }
    Ok(names)
}
