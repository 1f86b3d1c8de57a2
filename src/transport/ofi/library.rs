//! libfabric, opened at run time (`crate::dynlib`): the few functions
//! it exports that this transport calls. Everything else (domains,
//! endpoints, RMA, atomics, queues) is an inline function of libfabric's
//! headers that calls through an object's ops table, which `fabric`
//! does with the layouts of `sys`.

use super::sys::{fi_fabric_attr, fi_info, fid_fabric, FI_VERSION_1_17};
use crate::dynlib::{Dynlib, Loaded};
use crate::transport::fault::Fault;
use std::ffi::{c_char, c_int, c_void, CStr};

/// The shared object opened, by its ABI name.
pub const SONAME: &str = "libfabric.so.1";
/// Names another file to open instead (a path, or a name the loader finds).
pub const LIBRARY_VAR: &str = "ONESIDE_OFI_LIBRARY";

/// The exported entry points.
pub struct Library {
    pub getinfo: unsafe extern "C" fn(
        version: u32,
        node: *const c_char,
        service: *const c_char,
        flags: u64,
        hints: *const fi_info,
        info: *mut *mut fi_info,
    ) -> c_int,
    pub freeinfo: unsafe extern "C" fn(info: *mut fi_info),
    pub dupinfo: unsafe extern "C" fn(info: *const fi_info) -> *mut fi_info,
    pub fabric:
        unsafe extern "C" fn(attr: *mut fi_fabric_attr, fabric: *mut *mut fid_fabric, context: *mut c_void) -> c_int,
    pub strerror: unsafe extern "C" fn(errnum: c_int) -> *const c_char,
    pub version: unsafe extern "C" fn() -> u32,
}

impl Library {
    /// libfabric's words for a (positive) error number.
    pub fn error_text(&self, errnum: isize) -> String {
        let errnum = errnum.unsigned_abs() as c_int;
        // SAFETY: fi_strerror returns a static NUL-terminated string.
        unsafe { CStr::from_ptr((self.strerror)(errnum)) }
            .to_string_lossy()
            .into_owned()
    }
}

/// libfabric, opened and resolved on first use; the same answer after.
pub fn load() -> Result<&'static Library, Fault> {
    static LOADED: Loaded<Library> = Loaded::new();
    LOADED
        .get(open)
        .map_err(|detail| Fault::setup("open the library", detail))
}

fn open() -> Result<Library, Fault> {
    let file = std::env::var(LIBRARY_VAR).unwrap_or_else(|_| SONAME.to_string());
    let lib =
        Dynlib::open(&file).map_err(|why| format!("not found ({why}); install libfabric (Debian: libfabric1)"))?;
    macro_rules! resolve {
        ($($field:ident = $symbol:literal),* $(,)?) => {
            Library { $(
                // SAFETY: the field's type restates the C signature of
                // libfabric's exported function of that name (fabric.h).
                $field: unsafe { lib.function($symbol) }?,
            )* }
        };
    }
    let library = resolve! {
        getinfo = c"fi_getinfo",
        freeinfo = c"fi_freeinfo",
        dupinfo = c"fi_dupinfo",
        fabric = c"fi_fabric",
        strerror = c"fi_strerror",
        version = c"fi_version",
    };
    // SAFETY: fi_version takes no arguments and returns a number.
    let version = unsafe { (library.version)() };
    if version < FI_VERSION_1_17 {
        return Err(format!(
            "{file} is libfabric {}.{}; oneside needs 1.17 or later",
            version >> 16,
            version & 0xffff
        )
        .into());
    }
    Ok(library)
}

/// "1.17" for the library's version, for `rlaunch --check`.
pub fn version_text(lib: &Library) -> String {
    // SAFETY: as in `open`.
    let version = unsafe { (lib.version)() };
    format!("{}.{}", version >> 16, version & 0xffff)
}
