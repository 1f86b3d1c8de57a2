//! The part of libfabric's ABI this transport uses, declared by hand from
//! `rdma/fabric.h`, `fi_domain.h`, `fi_endpoint.h`, `fi_rma.h`,
//! `fi_atomic.h` and `fi_eq.h` (API 1.17), so that building oneside needs
//! no libfabric headers. Almost every libfabric call is an inline function
//! of those headers that calls through an object's ops table; those tables
//! are laid out here up to the last entry used. Sizes and offsets are
//! checked at compile time against the C layout on 64-bit Linux.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

pub type fi_addr_t = u64;

/// `struct fi_info`.
#[repr(C)]
pub struct fi_info {
    pub next: *mut fi_info,
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addrlen: usize,
    pub dest_addrlen: usize,
    pub src_addr: *mut c_void,
    pub dest_addr: *mut c_void,
    pub handle: *mut fid,
    pub tx_attr: *mut fi_tx_attr,
    pub rx_attr: *mut c_void,
    pub ep_attr: *mut fi_ep_attr,
    pub domain_attr: *mut fi_domain_attr,
    pub fabric_attr: *mut fi_fabric_attr,
    pub nic: *mut c_void,
}

/// `struct fi_tx_attr`.
#[repr(C)]
pub struct fi_tx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: usize,
    pub size: usize,
    pub iov_limit: usize,
    pub rma_iov_limit: usize,
    pub tclass: u32,
}

/// The head of `struct fi_ep_attr`, up to `max_msg_size`.
#[repr(C)]
pub struct fi_ep_attr {
    pub type_: c_int,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: usize,
}

/// The head of `struct fi_domain_attr`, up to `mr_key_size`.
#[repr(C)]
pub struct fi_domain_attr {
    pub domain: *mut c_void,
    pub name: *mut c_char,
    pub threading: c_int,
    pub control_progress: c_int,
    pub data_progress: c_int,
    pub resource_mgmt: c_int,
    pub av_type: c_int,
    pub mr_mode: c_int,
    pub mr_key_size: usize,
}

/// The head of `struct fi_fabric_attr`.
#[repr(C)]
pub struct fi_fabric_attr {
    pub fabric: *mut c_void,
    pub name: *mut c_char,
    pub prov_name: *mut c_char,
    pub prov_version: u32,
    pub api_version: u32,
}

/// `struct fid`: the head of every libfabric object.
#[repr(C)]
pub struct fid {
    pub fclass: usize,
    pub context: *mut c_void,
    pub ops: *mut fi_ops,
}

/// The head of `struct fi_ops`: `close`, `bind`, `control`.
#[repr(C)]
pub struct fi_ops {
    pub size: usize,
    pub close: unsafe extern "C" fn(fid: *mut fid) -> c_int,
    pub bind: unsafe extern "C" fn(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int,
    pub control: unsafe extern "C" fn(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int,
}

#[repr(C)]
pub struct fid_fabric {
    pub fid: fid,
    pub ops: *mut fi_ops_fabric,
}

#[repr(C)]
pub struct fi_ops_fabric {
    pub size: usize,
    pub domain: unsafe extern "C" fn(
        fabric: *mut fid_fabric,
        info: *mut fi_info,
        domain: *mut *mut fid_domain,
        context: *mut c_void,
    ) -> c_int,
    pub passive_ep: *const c_void,
    pub eq_open: *const c_void,
    pub wait_open: *const c_void,
    /// Present when `size` covers it (libfabric's `FI_CHECK_OP`).
    pub trywait: unsafe extern "C" fn(fabric: *mut fid_fabric, fids: *mut *mut fid, count: c_int) -> c_int,
}

#[repr(C)]
pub struct fid_domain {
    pub fid: fid,
    pub ops: *mut fi_ops_domain,
    pub mr: *mut fi_ops_mr,
}

#[repr(C)]
pub struct fi_ops_domain {
    pub size: usize,
    pub av_open: unsafe extern "C" fn(
        domain: *mut fid_domain,
        attr: *mut fi_av_attr,
        av: *mut *mut fid_av,
        context: *mut c_void,
    ) -> c_int,
    pub cq_open: unsafe extern "C" fn(
        domain: *mut fid_domain,
        attr: *mut fi_cq_attr,
        cq: *mut *mut fid_cq,
        context: *mut c_void,
    ) -> c_int,
    pub endpoint: unsafe extern "C" fn(
        domain: *mut fid_domain,
        info: *mut fi_info,
        ep: *mut *mut fid_ep,
        context: *mut c_void,
    ) -> c_int,
    _scalable_ep: *const c_void,
    pub cntr_open: unsafe extern "C" fn(
        domain: *mut fid_domain,
        attr: *mut fi_cntr_attr,
        cntr: *mut *mut fid_cntr,
        context: *mut c_void,
    ) -> c_int,
}

#[repr(C)]
pub struct fid_cntr {
    pub fid: fid,
    pub ops: *mut fi_ops_cntr,
}

/// The head of `struct fi_ops_cntr`: `read`.
#[repr(C)]
pub struct fi_ops_cntr {
    pub size: usize,
    pub read: unsafe extern "C" fn(cntr: *mut fid_cntr) -> u64,
}

#[repr(C)]
pub struct fi_cntr_attr {
    pub events: c_int,
    pub wait_obj: c_int,
    pub wait_set: *mut c_void,
    pub flags: u64,
}

#[repr(C)]
pub struct fi_ops_mr {
    pub size: usize,
    #[allow(clippy::type_complexity)]
    pub reg: unsafe extern "C" fn(
        fid: *mut fid,
        buf: *const c_void,
        len: usize,
        access: u64,
        offset: u64,
        requested_key: u64,
        flags: u64,
        mr: *mut *mut fid_mr,
        context: *mut c_void,
    ) -> c_int,
}

#[repr(C)]
pub struct fid_mr {
    pub fid: fid,
    pub mem_desc: *mut c_void,
    pub key: u64,
}

#[repr(C)]
pub struct fid_ep {
    pub fid: fid,
    pub ops: *mut c_void,
    pub cm: *mut fi_ops_cm,
    pub msg: *mut c_void,
    pub rma: *mut fi_ops_rma,
    pub tagged: *mut c_void,
    pub atomic: *mut fi_ops_atomic,
    pub collective: *mut c_void,
}

#[repr(C)]
pub struct fi_ops_cm {
    pub size: usize,
    _setname: *const c_void,
    pub getname: unsafe extern "C" fn(fid: *mut fid, addr: *mut c_void, addrlen: *mut usize) -> c_int,
}

#[repr(C)]
pub struct fi_ops_rma {
    pub size: usize,
    _read: *const c_void,
    _readv: *const c_void,
    pub readmsg: RmaMsg,
    _write: *const c_void,
    _writev: *const c_void,
    pub writemsg: RmaMsg,
    _inject: *const c_void,
}

/// `fi_readmsg` and `fi_writemsg`: one operation with its own flags.
pub type RmaMsg = unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize;

/// `struct fi_rma_iov`: a range of the target's registered memory.
#[repr(C)]
pub struct fi_rma_iov {
    pub addr: u64,
    pub len: usize,
    pub key: u64,
}

/// `struct fi_msg_rma`.
#[repr(C)]
pub struct fi_msg_rma {
    pub msg_iov: *const libc::iovec,
    pub desc: *mut *mut c_void,
    pub iov_count: usize,
    pub addr: fi_addr_t,
    pub rma_iov: *const fi_rma_iov,
    pub rma_iov_count: usize,
    pub context: *mut c_void,
    pub data: u64,
}

/// `struct fi_ioc`: `count` elements of an atomic's datatype at `addr`.
#[repr(C)]
pub struct fi_ioc {
    pub addr: *mut c_void,
    pub count: usize,
}

/// `struct fi_rma_ioc`: the target's side of an atomic.
#[repr(C)]
pub struct fi_rma_ioc {
    pub addr: u64,
    pub count: usize,
    pub key: u64,
}

/// `struct fi_msg_atomic`.
#[repr(C)]
pub struct fi_msg_atomic {
    pub msg_iov: *const fi_ioc,
    pub desc: *mut *mut c_void,
    pub iov_count: usize,
    pub addr: fi_addr_t,
    pub rma_iov: *const fi_rma_ioc,
    pub rma_iov_count: usize,
    pub datatype: c_int,
    pub op: c_int,
    pub context: *mut c_void,
    pub data: u64,
}

/// `fi_fetch_atomicmsg`.
pub type AtomicReadWriteMsg = unsafe extern "C" fn(
    ep: *mut fid_ep,
    msg: *const fi_msg_atomic,
    resultv: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    flags: u64,
) -> isize;
/// `fi_compare_atomicmsg`.
pub type AtomicCompWriteMsg = unsafe extern "C" fn(
    ep: *mut fid_ep,
    msg: *const fi_msg_atomic,
    comparev: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: usize,
    resultv: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    flags: u64,
) -> isize;

pub type AtomicWrite = unsafe extern "C" fn(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: c_int,
    op: c_int,
    context: *mut c_void,
) -> isize;
pub type AtomicValid = unsafe extern "C" fn(ep: *mut fid_ep, datatype: c_int, op: c_int, count: *mut usize) -> c_int;

#[repr(C)]
pub struct fi_ops_atomic {
    pub size: usize,
    pub write: AtomicWrite,
    _writev: *const c_void,
    _writemsg: *const c_void,
    _inject: *const c_void,
    _readwrite: *const c_void,
    _readwritev: *const c_void,
    pub readwritemsg: AtomicReadWriteMsg,
    _compwrite: *const c_void,
    _compwritev: *const c_void,
    pub compwritemsg: AtomicCompWriteMsg,
    pub writevalid: AtomicValid,
    pub readwritevalid: AtomicValid,
    pub compwritevalid: AtomicValid,
}

#[repr(C)]
pub struct fid_av {
    pub fid: fid,
    pub ops: *mut fi_ops_av,
}

#[repr(C)]
pub struct fi_ops_av {
    pub size: usize,
    pub insert: unsafe extern "C" fn(
        av: *mut fid_av,
        addr: *const c_void,
        count: usize,
        fi_addr: *mut fi_addr_t,
        flags: u64,
        context: *mut c_void,
    ) -> c_int,
}

#[repr(C)]
pub struct fid_cq {
    pub fid: fid,
    pub ops: *mut fi_ops_cq,
}

#[repr(C)]
pub struct fi_ops_cq {
    pub size: usize,
    pub read: unsafe extern "C" fn(cq: *mut fid_cq, buf: *mut c_void, count: usize) -> isize,
    _readfrom: *const c_void,
    pub readerr: unsafe extern "C" fn(cq: *mut fid_cq, buf: *mut fi_cq_err_entry, flags: u64) -> isize,
    _sread: *const c_void,
    _sreadfrom: *const c_void,
    _signal: *const c_void,
    pub strerror: unsafe extern "C" fn(
        cq: *mut fid_cq,
        prov_errno: c_int,
        err_data: *const c_void,
        buf: *mut c_char,
        len: usize,
    ) -> *const c_char,
}

#[repr(C)]
pub struct fi_cq_attr {
    pub size: usize,
    pub flags: u64,
    pub format: c_int,
    pub wait_obj: c_int,
    pub signaling_vector: c_int,
    pub wait_cond: c_int,
    pub wait_set: *mut c_void,
}

#[repr(C)]
pub struct fi_av_attr {
    pub type_: c_int,
    pub rx_ctx_bits: c_int,
    pub count: usize,
    pub ep_per_node: usize,
    pub name: *const c_char,
    pub map_addr: *mut c_void,
    pub flags: u64,
}

#[repr(C)]
pub struct fi_cq_err_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: usize,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
    pub olen: usize,
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: *mut c_void,
    pub err_data_size: usize,
}

/// `struct fi_cq_entry` (`FI_CQ_FORMAT_CONTEXT`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_entry {
    pub op_context: *mut c_void,
}

pub const FI_VERSION_1_17: u32 = (1 << 16) | 17;

pub const FI_RMA: u64 = 1 << 2;
pub const FI_ATOMIC: u64 = 1 << 4;
pub const FI_READ: u64 = 1 << 8;
pub const FI_WRITE: u64 = 1 << 9;
pub const FI_RECV: u64 = 1 << 10;
pub const FI_TRANSMIT: u64 = 1 << 11;
pub const FI_REMOTE_READ: u64 = 1 << 12;
pub const FI_REMOTE_WRITE: u64 = 1 << 13;
pub const FI_COMPLETION: u64 = 1 << 24;
pub const FI_DELIVERY_COMPLETE: u64 = 1 << 28;
pub const FI_RMA_EVENT: u64 = 1 << 56;

pub const FI_EP_RDM: c_int = 3;
pub const FI_THREAD_DOMAIN: c_int = 3;
pub const FI_PROGRESS_MANUAL: c_int = 2;
pub const FI_AV_TABLE: c_int = 2;

pub const FI_MR_VIRT_ADDR: c_int = 16;
pub const FI_MR_ALLOCATED: c_int = 32;
pub const FI_MR_PROV_KEY: c_int = 64;
pub const FI_MR_ENDPOINT: c_int = 512;

pub const FI_CQ_FORMAT_CONTEXT: c_int = 1;
pub const FI_CNTR_EVENTS_COMP: c_int = 0;
pub const FI_WAIT_NONE: c_int = 0;
pub const FI_WAIT_FD: c_int = 3;
pub const FI_GETWAIT: c_int = 5;
pub const FI_ENABLE: c_int = 6;

pub const FI_EAGAIN: isize = 11;
pub const FI_EAVAIL: isize = 259;

pub const FI_UINT32: c_int = 5;
pub const FI_UINT64: c_int = 7;
pub const FI_SUM: c_int = 2;
pub const FI_BOR: c_int = 6;
pub const FI_BAND: c_int = 7;
pub const FI_BXOR: c_int = 9;
pub const FI_ATOMIC_READ: c_int = 10;
pub const FI_ATOMIC_WRITE: c_int = 11;
pub const FI_CSWAP: c_int = 12;

// The C sizes and offsets (from the 1.17 headers) on 64-bit Linux.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<fi_info>() == 120);
    assert!(offset_of!(fi_info, tx_attr) == 72);
    assert!(offset_of!(fi_info, fabric_attr) == 104);
    assert!(size_of::<fi_tx_attr>() == 80);
    assert!(offset_of!(fi_tx_attr, op_flags) == 16);
    assert!(offset_of!(fi_tx_attr, inject_size) == 40);
    assert!(offset_of!(fi_ep_attr, max_msg_size) == 16);
    assert!(offset_of!(fi_domain_attr, threading) == 16);
    assert!(offset_of!(fi_domain_attr, data_progress) == 24);
    assert!(offset_of!(fi_domain_attr, av_type) == 32);
    assert!(offset_of!(fi_domain_attr, mr_mode) == 36);
    assert!(offset_of!(fi_domain_attr, mr_key_size) == 40);
    assert!(offset_of!(fi_fabric_attr, prov_name) == 16);
    assert!(offset_of!(fi_fabric_attr, api_version) == 28);
    assert!(size_of::<fid>() == 24);
    assert!(offset_of!(fi_ops, control) == 24);
    assert!(offset_of!(fid_fabric, ops) == 24);
    assert!(offset_of!(fi_ops_fabric, domain) == 8);
    assert!(offset_of!(fi_ops_fabric, trywait) == 40);
    assert!(offset_of!(fid_domain, mr) == 32);
    assert!(offset_of!(fi_ops_domain, endpoint) == 24);
    assert!(offset_of!(fi_ops_domain, cntr_open) == 40);
    assert!(offset_of!(fid_cntr, ops) == 24);
    assert!(offset_of!(fi_ops_cntr, read) == 8);
    assert!(size_of::<fi_cntr_attr>() == 24);
    assert!(offset_of!(fi_ops_mr, reg) == 8);
    assert!(offset_of!(fid_mr, key) == 32);
    assert!(size_of::<fid_ep>() == 80);
    assert!(offset_of!(fid_ep, rma) == 48);
    assert!(offset_of!(fid_ep, atomic) == 64);
    assert!(offset_of!(fi_ops_cm, getname) == 16);
    assert!(offset_of!(fi_ops_rma, _write) == 32);
    assert!(offset_of!(fi_ops_rma, readmsg) == 24);
    assert!(offset_of!(fi_ops_rma, writemsg) == 48);
    assert!(offset_of!(fi_ops_rma, _inject) == 56);
    assert!(size_of::<fi_msg_rma>() == 64);
    assert!(size_of::<fi_rma_iov>() == 24);
    assert!(size_of::<fi_msg_atomic>() == 72);
    assert!(offset_of!(fi_msg_atomic, context) == 56);
    assert!(offset_of!(fi_ops_atomic, readwritemsg) == 56);
    assert!(offset_of!(fi_ops_atomic, compwritemsg) == 80);
    assert!(offset_of!(fi_ops_atomic, _inject) == 32);
    assert!(offset_of!(fi_ops_atomic, _readwrite) == 40);
    assert!(offset_of!(fi_ops_atomic, _compwrite) == 64);
    assert!(offset_of!(fi_ops_atomic, writevalid) == 88);
    assert!(offset_of!(fi_ops_atomic, compwritevalid) == 104);
    assert!(offset_of!(fid_av, ops) == 24);
    assert!(offset_of!(fi_ops_cq, readerr) == 24);
    assert!(offset_of!(fi_ops_cq, strerror) == 56);
    assert!(size_of::<fi_cq_attr>() == 40);
    assert!(offset_of!(fi_cq_attr, wait_set) == 32);
    assert!(size_of::<fi_av_attr>() == 48);
    assert!(size_of::<fi_cq_err_entry>() == 80);
    assert!(offset_of!(fi_cq_err_entry, err) == 56);
    assert!(offset_of!(fi_cq_err_entry, err_data_size) == 72);
};
