//! libibverbs, opened at run time: the table of the entry points this
//! transport calls, resolved once with `dlopen`/`dlsym` (as NCCL's
//! `ibvwrap` does; see `crate::dynlib`), so no build of oneside links
//! against it and a machine without it simply has no verbs transport.
//! `ibv_post_send` and `ibv_poll_cq` are inline in verbs.h and go through
//! the context's ops table instead (see `queue`).

use super::sys::*;
use crate::dynlib::{Dynlib, Loaded};
use crate::transport::fault::Fault;
use std::ffi::{c_char, c_int, c_uint, c_void};

/// The shared object opened, by its ABI name.
pub const SONAME: &str = "libibverbs.so.1";
/// Names another file to open instead (a path, or a name the loader finds).
pub const LIBRARY_VAR: &str = "ONESIDE_VERBS_LIBRARY";

/// The entry points, each resolved to the symbol's default version.
pub struct Library {
    pub get_device_list: unsafe extern "C" fn(num_devices: *mut c_int) -> *mut *mut ibv_device,
    pub free_device_list: unsafe extern "C" fn(list: *mut *mut ibv_device),
    pub get_device_name: unsafe extern "C" fn(device: *mut ibv_device) -> *const c_char,
    pub open_device: unsafe extern "C" fn(device: *mut ibv_device) -> *mut ibv_context,
    pub close_device: unsafe extern "C" fn(context: *mut ibv_context) -> c_int,
    pub query_device: unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_device_attr) -> c_int,
    /// The exported `ibv_query_port`, which fills verbs.h's
    /// `_compat_ibv_port_attr`, a prefix of `ibv_port_attr`.
    pub query_port: unsafe extern "C" fn(context: *mut ibv_context, port: u8, attr: *mut ibv_port_attr) -> c_int,
    pub query_gid: unsafe extern "C" fn(context: *mut ibv_context, port: u8, index: c_int, gid: *mut ibv_gid) -> c_int,
    pub alloc_pd: unsafe extern "C" fn(context: *mut ibv_context) -> *mut ibv_pd,
    pub dealloc_pd: unsafe extern "C" fn(pd: *mut ibv_pd) -> c_int,
    pub reg_mr: unsafe extern "C" fn(pd: *mut ibv_pd, addr: *mut c_void, length: usize, access: c_int) -> *mut ibv_mr,
    pub dereg_mr: unsafe extern "C" fn(mr: *mut ibv_mr) -> c_int,
    pub create_cq: unsafe extern "C" fn(
        context: *mut ibv_context,
        cqe: c_int,
        cq_context: *mut c_void,
        channel: *mut c_void,
        comp_vector: c_int,
    ) -> *mut ibv_cq,
    pub destroy_cq: unsafe extern "C" fn(cq: *mut ibv_cq) -> c_int,
    pub create_qp: unsafe extern "C" fn(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp,
    pub destroy_qp: unsafe extern "C" fn(qp: *mut ibv_qp) -> c_int,
    pub modify_qp: unsafe extern "C" fn(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int,
    pub wc_status_str: unsafe extern "C" fn(status: c_uint) -> *const c_char,
}

/// libibverbs, opened and resolved on first use; the same answer after.
pub fn load() -> Result<&'static Library, Fault> {
    static LOADED: Loaded<Library> = Loaded::new();
    LOADED
        .get(open)
        .map_err(|detail| Fault::setup("open the library", detail))
}

fn open() -> Result<Library, Fault> {
    let file = std::env::var(LIBRARY_VAR).unwrap_or_else(|_| SONAME.to_string());
    let lib = Dynlib::open(&file).map_err(|why| {
        format!("not found ({why}); install rdma-core's libibverbs (Debian: libibverbs1 ibverbs-providers)")
    })?;
    macro_rules! resolve {
        ($($field:ident = $symbol:literal),* $(,)?) => {
            Library { $(
                // SAFETY: the field's type restates the C signature of
                // libibverbs' exported function of that name (verbs.h).
                $field: unsafe { lib.function($symbol) }
                    .map_err(|why| format!("{why} (older than rdma-core's IBVERBS_1.1?)"))?,
            )* }
        };
    }
    Ok(resolve! {
        get_device_list = c"ibv_get_device_list",
        free_device_list = c"ibv_free_device_list",
        get_device_name = c"ibv_get_device_name",
        open_device = c"ibv_open_device",
        close_device = c"ibv_close_device",
        query_device = c"ibv_query_device",
        query_port = c"ibv_query_port",
        query_gid = c"ibv_query_gid",
        alloc_pd = c"ibv_alloc_pd",
        dealloc_pd = c"ibv_dealloc_pd",
        reg_mr = c"ibv_reg_mr",
        dereg_mr = c"ibv_dereg_mr",
        create_cq = c"ibv_create_cq",
        destroy_cq = c"ibv_destroy_cq",
        create_qp = c"ibv_create_qp",
        destroy_qp = c"ibv_destroy_qp",
        modify_qp = c"ibv_modify_qp",
        wc_status_str = c"ibv_wc_status_str",
    })
}
