//! Owning wrappers for libfabric objects. Every object begins with a
//! `struct fid` whose ops table has `close`; [`Object`] closes it in
//! `Drop`. [`Info`] owns an `fi_info` list and frees it. Users keep objects
//! in struct fields declared so that they drop in reverse order of creation
//! (endpoint, memory region, counter, CQ, AV, domain, fabric).
//!
//! libfabric's ops tables are filled in full by every provider (entries it
//! does not support point at `fi_no_*` stubs that return `-FI_ENOSYS`), so
//! calling through them never meets a null pointer.

use super::library::Library;
use super::sys::*;
use crate::transport::fault::Fault;
use std::ffi::{c_int, c_void, CStr};

/// An `fi_info` list from `fi_getinfo` or `fi_dupinfo`, freed in `Drop`.
pub struct Info {
    pub raw: *mut fi_info,
    lib: &'static Library,
}

impl Info {
    /// Empty hints with every attribute struct allocated (`fi_allocinfo`).
    pub fn hints(lib: &'static Library) -> Result<Info, Fault> {
        // SAFETY: fi_dupinfo(NULL) allocates a zeroed fi_info with its
        // attribute structs, which fi_freeinfo frees.
        let raw = unsafe { (lib.dupinfo)(std::ptr::null()) };
        match raw.is_null() {
            true => Err("fi_allocinfo: out of memory".into()),
            false => Ok(Info { raw, lib }),
        }
    }

    /// The providers that match `hints` (`fi_getinfo`), best first.
    pub fn get(lib: &'static Library, hints: &Info) -> Result<Info, Fault> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: `hints` is a valid fi_info; `raw` receives a list we own.
        let rc = unsafe {
            (lib.getinfo)(
                FI_VERSION_1_17,
                std::ptr::null(),
                std::ptr::null(),
                0,
                hints.raw,
                &mut raw,
            )
        };
        if rc != 0 || raw.is_null() {
            return Err(format!("fi_getinfo: {}", lib.error_text(rc as isize)).into());
        }
        Ok(Info { raw, lib })
    }

    /// The first entry of the list.
    pub fn first(&self) -> &fi_info {
        // SAFETY: a non-empty list from fi_getinfo or fi_dupinfo.
        unsafe { &*self.raw }
    }

    /// The provider name of the first entry ("tcp;ofi_rxm").
    pub fn provider(&self) -> String {
        // SAFETY: fi_getinfo fills fabric_attr and its prov_name.
        unsafe { c_text((*self.first().fabric_attr).prov_name) }
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: allocated by libfabric, freed once.
        unsafe { (self.lib.freeinfo)(self.raw) };
    }
}

/// A C string owned by libfabric, as text ("" for null).
///
/// # Safety
/// `text` must be null or a NUL-terminated string that lives for the call.
pub unsafe fn c_text(text: *const std::ffi::c_char) -> String {
    match text.is_null() {
        true => String::new(),
        // SAFETY: forwarded from this function's contract.
        false => unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned(),
    }
}

/// A libfabric object `T` (whose first field is a `struct fid`), closed in `Drop`.
pub struct Object<T> {
    pub raw: *mut T,
}

impl<T> Object<T> {
    /// Takes ownership of `raw`.
    ///
    /// # Safety
    /// `raw` must be a live libfabric object that begins with a `struct fid`,
    /// owned by nobody else.
    pub unsafe fn own(raw: *mut T) -> Object<T> {
        Object { raw }
    }

    pub fn fid(&self) -> *mut fid {
        self.raw.cast()
    }

    /// `fi_bind`-style call: binds `other` to this object with `flags`.
    pub fn bind(&self, other: *mut fid, flags: u64, what: &str, lib: &Library) -> Result<(), Fault> {
        // SAFETY: a live object, its fid ops table filled by the provider.
        let rc = unsafe { ((*(*self.fid()).ops).bind)(self.fid(), other, flags) };
        check(rc, what, lib)
    }

    /// `fi_enable` / `fi_mr_enable`.
    pub fn enable(&self, what: &str, lib: &Library) -> Result<(), Fault> {
        // SAFETY: as in `bind`; FI_ENABLE takes no argument.
        let rc = unsafe { ((*(*self.fid()).ops).control)(self.fid(), FI_ENABLE, std::ptr::null_mut()) };
        check(rc, what, lib)
    }
}

impl<T> Drop for Object<T> {
    fn drop(&mut self) {
        // SAFETY: a live object we own; everything bound to it, or opened
        // from it, was dropped first (field order of the owners).
        unsafe { ((*(*self.fid()).ops).close)(self.fid()) };
    }
}

/// `Ok` for 0, or what failed in libfabric's words.
pub fn check(rc: c_int, what: &str, lib: &Library) -> Result<(), Fault> {
    match rc {
        0 => Ok(()),
        rc => Err(format!("{what}: {}", lib.error_text(rc as isize)).into()),
    }
}

/// Opens an object through one of libfabric's `*_open` style calls: `open`
/// receives the out-pointer and returns the status.
///
/// # Safety
/// `open` must store a new libfabric object of type `T` (beginning with a
/// `struct fid`) on success, owned by the caller.
pub unsafe fn open<T>(what: &str, lib: &Library, open: impl FnOnce(*mut *mut T) -> c_int) -> Result<Object<T>, Fault> {
    let mut raw: *mut T = std::ptr::null_mut();
    check(open(&mut raw), what, lib)?;
    if raw.is_null() {
        return Err(format!("{what}: the provider returned no object").into());
    }
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { Object::own(raw) })
}

/// A null context pointer, for calls that take one.
pub fn no_context() -> *mut c_void {
    std::ptr::null_mut()
}
