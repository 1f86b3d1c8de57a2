//! The part of libibverbs' ABI this transport uses, declared by hand from
//! rdma-core's `infiniband/verbs.h` (stable since `IBVERBS_1.1`), so that
//! building oneside needs no rdma-core headers. Only the structs the
//! transport reads or fills are laid out in full; the others are opaque.
//! The sizes below are those of the C structs on x86-64 and aarch64 Linux,
//! checked at compile time.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// Opaque: only ever behind a pointer.
#[repr(C)]
pub struct ibv_device {
    _private: [u8; 0],
}
/// Opaque: only ever behind a pointer.
#[repr(C)]
pub struct ibv_pd {
    _private: [u8; 0],
}

/// `struct ibv_context`: the device pointer, then the ops table, whose
/// `poll_cq` and `post_send` entries the inline `ibv_poll_cq` and
/// `ibv_post_send` of verbs.h call. The fields after the table are unused.
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
}

pub type PollCq = unsafe extern "C" fn(cq: *mut ibv_cq, num_entries: c_int, wc: *mut ibv_wc) -> c_int;
pub type PostSend = unsafe extern "C" fn(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int;

/// The head of `struct ibv_context_ops`, up to `post_send` (entry 25).
#[repr(C)]
pub struct ibv_context_ops {
    /// `_compat_query_device` … `_compat_create_cq` (entries 0–10).
    _before_poll_cq: [*const c_void; 11],
    pub poll_cq: Option<PollCq>,
    /// `req_notify_cq` … `_compat_destroy_qp` (entries 12–24).
    _before_post_send: [*const c_void; 13],
    pub post_send: Option<PostSend>,
}

/// The head of `struct ibv_cq`.
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
}

/// The head of `struct ibv_qp`, up to `qp_num`.
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub handle: u32,
    pub qp_num: u32,
}

/// The head of `struct ibv_mr`, up to `rkey`.
#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `union ibv_gid`, as its raw bytes (8-byte aligned, as the union's
/// `global` member makes it).
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
pub struct ibv_gid {
    pub raw: [u8; 16],
}

/// `struct ibv_port_attr` (the exported `ibv_query_port` fills the prefix
/// verbs.h calls `_compat_ibv_port_attr`; the caller zeroes the rest).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_port_attr {
    pub state: c_uint,
    pub max_mtu: c_uint,
    pub active_mtu: c_uint,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
    pub active_speed_ex: u32,
}

/// `struct ibv_device_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    pub atomic_cap: c_uint,
    /// `max_ee` … `max_srq_sge`: 14 ints.
    _more_limits: [c_int; 14],
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

impl Default for ibv_device_attr {
    fn default() -> Self {
        // SAFETY: a plain C struct of integers: all zeroes is a valid value.
        unsafe { std::mem::zeroed() }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub cap: ibv_qp_cap,
    pub qp_type: c_uint,
    pub sq_sig_all: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_attr {
    pub qp_state: c_uint,
    pub cur_qp_state: c_uint,
    pub path_mtu: c_uint,
    pub path_mig_state: c_uint,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `wr.rdma` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_rdma {
    pub remote_addr: u64,
    pub rkey: u32,
}

/// `wr.atomic` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_atomic {
    pub remote_addr: u64,
    pub compare_add: u64,
    pub swap: u64,
    pub rkey: u32,
}

/// The `wr` union of `struct ibv_send_wr` (its `ud` member is unused).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_wr {
    pub rdma: ibv_rdma,
    pub atomic: ibv_atomic,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: c_uint,
    pub send_flags: c_uint,
    pub imm_data: u32,
    pub wr: ibv_send_wr_wr,
    pub qp_type: u32,
    /// The `bind_mw` / `tso` union, unused.
    pub _tail: [u64; 6],
}

impl Default for ibv_send_wr {
    fn default() -> Self {
        // SAFETY: integers and null pointers: all zeroes is a valid value.
        unsafe { std::mem::zeroed() }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: c_uint,
    pub opcode: c_uint,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

impl ibv_wc {
    /// The status and vendor error of a failed completion.
    pub fn error(&self) -> Option<(c_uint, u32)> {
        (self.status != IBV_WC_SUCCESS).then_some((self.status, self.vendor_err))
    }
}

pub const IBV_WC_SUCCESS: c_uint = 0;
pub const IBV_WC_WR_FLUSH_ERR: c_uint = 5;

pub const IBV_WR_RDMA_WRITE: c_uint = 0;
pub const IBV_WR_RDMA_READ: c_uint = 4;
pub const IBV_WR_ATOMIC_CMP_AND_SWP: c_uint = 5;
pub const IBV_WR_ATOMIC_FETCH_AND_ADD: c_uint = 6;

pub const IBV_SEND_FENCE: c_uint = 1;
pub const IBV_SEND_SIGNALED: c_uint = 2;
pub const IBV_SEND_INLINE: c_uint = 8;

pub const IBV_ACCESS_LOCAL_WRITE: c_uint = 1;
pub const IBV_ACCESS_REMOTE_WRITE: c_uint = 2;
pub const IBV_ACCESS_REMOTE_READ: c_uint = 4;
pub const IBV_ACCESS_REMOTE_ATOMIC: c_uint = 8;

pub const IBV_QPT_RC: c_uint = 2;
pub const IBV_QPS_INIT: c_uint = 1;
pub const IBV_QPS_RTR: c_uint = 2;
pub const IBV_QPS_RTS: c_uint = 3;

pub const IBV_QP_STATE: c_int = 1 << 0;
pub const IBV_QP_ACCESS_FLAGS: c_int = 1 << 3;
pub const IBV_QP_PKEY_INDEX: c_int = 1 << 4;
pub const IBV_QP_PORT: c_int = 1 << 5;
pub const IBV_QP_AV: c_int = 1 << 7;
pub const IBV_QP_PATH_MTU: c_int = 1 << 8;
pub const IBV_QP_TIMEOUT: c_int = 1 << 9;
pub const IBV_QP_RETRY_CNT: c_int = 1 << 10;
pub const IBV_QP_RNR_RETRY: c_int = 1 << 11;
pub const IBV_QP_RQ_PSN: c_int = 1 << 12;
pub const IBV_QP_MAX_QP_RD_ATOMIC: c_int = 1 << 13;
pub const IBV_QP_MIN_RNR_TIMER: c_int = 1 << 15;
pub const IBV_QP_SQ_PSN: c_int = 1 << 16;
pub const IBV_QP_MAX_DEST_RD_ATOMIC: c_int = 1 << 17;
pub const IBV_QP_DEST_QPN: c_int = 1 << 20;

pub const IBV_PORT_ACTIVE: c_uint = 4;
pub const IBV_LINK_LAYER_ETHERNET: u8 = 2;
pub const IBV_ATOMIC_NONE: c_uint = 0;

// The C sizes (and the offsets the transport depends on) on 64-bit Linux.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<ibv_port_attr>() == 56);
    assert!(size_of::<ibv_device_attr>() == 232);
    assert!(offset_of!(ibv_device_attr, max_cqe) == 132);
    assert!(offset_of!(ibv_device_attr, max_qp_rd_atom) == 144);
    assert!(offset_of!(ibv_device_attr, atomic_cap) == 164);
    assert!(offset_of!(ibv_device_attr, max_pkeys) == 224);
    assert!(offset_of!(ibv_port_attr, lid) == 34);
    assert!(offset_of!(ibv_port_attr, link_layer) == 46);
    assert!(size_of::<ibv_qp_init_attr>() == 64);
    assert!(size_of::<ibv_ah_attr>() == 32);
    assert!(size_of::<ibv_qp_attr>() == 144);
    assert!(offset_of!(ibv_qp_attr, ah_attr) == 56);
    assert!(offset_of!(ibv_qp_attr, pkey_index) == 120);
    assert!(offset_of!(ibv_qp_attr, rate_limit) == 136);
    assert!(size_of::<ibv_send_wr>() == 128);
    assert!(offset_of!(ibv_send_wr, wr) == 40);
    assert!(offset_of!(ibv_send_wr, qp_type) == 72);
    assert!(size_of::<ibv_wc>() == 48);
    assert!(offset_of!(ibv_context_ops, poll_cq) == 11 * 8);
    assert!(offset_of!(ibv_context_ops, post_send) == 25 * 8);
    assert!(offset_of!(ibv_qp, qp_num) == 52);
    assert!(offset_of!(ibv_mr, lkey) == 36);
};
