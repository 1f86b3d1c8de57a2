//! Owning wrappers for the device-level verbs resources: the device context,
//! the protection domain and memory regions. Each frees its resource in
//! `Drop`; users keep them in struct fields declared so that they drop in
//! reverse order of creation (QPs, CQ, MRs, PD, context).

use super::library::Library;
use super::sys as ffi;
use crate::syscall::cvt_null;
use crate::transport::fault::Fault;
use std::ffi::CStr;

/// An open RDMA device (`ibv_context`).
pub struct Context {
    raw: *mut ffi::ibv_context,
    pub name: String,
    pub lib: &'static Library,
}

impl Context {
    /// Opens the device named `wanted`, or the first one, through `lib`.
    pub fn open(lib: &'static Library, wanted: Option<&str>) -> Result<Context, Fault> {
        let mut count = 0;
        // SAFETY: ibv_get_device_list returns a NULL-terminated array we free below.
        let list = unsafe { (lib.get_device_list)(&mut count) };
        if list.is_null() || count == 0 {
            if !list.is_null() {
                // SAFETY: `list` came from ibv_get_device_list.
                unsafe { (lib.free_device_list)(list) };
            }
            return Err(
                "no RDMA device found (is a driver loaded, e.g. `rdma link add rxe0 type rxe netdev eth0`?)".into(),
            );
        }
        let mut names = Vec::new();
        let mut chosen = None;
        for i in 0..count as usize {
            // SAFETY: the list holds `count` valid device pointers.
            let device = unsafe { *list.add(i) };
            // SAFETY: ibv_get_device_name returns a NUL-terminated string owned by the device.
            let name = unsafe { CStr::from_ptr((lib.get_device_name)(device)) }
                .to_string_lossy()
                .into_owned();
            if chosen.is_none() && wanted.is_none_or(|w| w == name) {
                chosen = Some((device, name.clone()));
            }
            names.push(name);
        }
        let result: Result<Context, String> = match chosen {
            None => Err(format!(
                "no RDMA device named '{}' (found: {})",
                wanted.unwrap_or(""),
                names.join(", ")
            )),
            Some((device, name)) => {
                // SAFETY: `device` is valid until the list is freed; the context outlives that.
                match cvt_null(unsafe { (lib.open_device)(device) }) {
                    Ok(raw) => Ok(Context { raw, name, lib }),
                    Err(e) => Err(format!("cannot open RDMA device {name}: {e}")),
                }
            }
        };
        // SAFETY: `list` came from ibv_get_device_list and is freed once.
        unsafe { (lib.free_device_list)(list) };
        Ok(result?)
    }

    pub fn raw(&self) -> *mut ffi::ibv_context {
        self.raw
    }

    /// The attributes of `port`.
    pub fn port(&self, port: u8) -> Result<ffi::ibv_port_attr, Fault> {
        let mut attr = ffi::ibv_port_attr::default();
        // SAFETY: `ibv_query_port` (the exported compat symbol, as verbs.h's
        // inline wrapper calls it) fills a prefix of ibv_port_attr, which we
        // zeroed; the context is open.
        let rc = unsafe { (self.lib.query_port)(self.raw, port, &mut attr) };
        if rc != 0 {
            return Err(format!(
                "cannot query port {port} of {}: {}",
                self.name,
                std::io::Error::from_raw_os_error(rc)
            )
            .into());
        }
        Ok(attr)
    }

    /// GID `index` of `port`.
    pub fn gid(&self, port: u8, index: u8) -> Result<[u8; 16], Fault> {
        let mut gid = ffi::ibv_gid::default();
        // SAFETY: the context is open and `gid` is a valid out-parameter.
        let rc = unsafe { (self.lib.query_gid)(self.raw, port, index as i32, &mut gid) };
        if rc != 0 {
            return Err(format!("cannot read GID {index} of {} port {port}", self.name).into());
        }
        Ok(gid.raw)
    }

    /// The device's attributes.
    pub fn attributes(&self) -> Result<ffi::ibv_device_attr, Fault> {
        let mut attr = ffi::ibv_device_attr::default();
        // SAFETY: the context is open and `attr` is a valid out-parameter.
        let rc = unsafe { (self.lib.query_device)(self.raw, &mut attr) };
        if rc != 0 {
            return Err(format!(
                "cannot query device {}: {}",
                self.name,
                std::io::Error::from_raw_os_error(rc)
            )
            .into());
        }
        Ok(attr)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: opened by ibv_open_device; every resource of it was dropped first.
        unsafe { (self.lib.close_device)(self.raw) };
    }
}

/// A protection domain (`ibv_pd`).
pub struct ProtectionDomain {
    raw: *mut ffi::ibv_pd,
    pub lib: &'static Library,
}

impl ProtectionDomain {
    pub fn new(context: &Context) -> Result<ProtectionDomain, Fault> {
        // SAFETY: the context is open.
        let raw = cvt_null(unsafe { (context.lib.alloc_pd)(context.raw()) })
            .map_err(|e| format!("cannot allocate a protection domain: {e}"))?;
        Ok(ProtectionDomain { raw, lib: context.lib })
    }

    pub fn raw(&self) -> *mut ffi::ibv_pd {
        self.raw
    }
}

impl Drop for ProtectionDomain {
    fn drop(&mut self) {
        // SAFETY: allocated by ibv_alloc_pd; its QPs and MRs were dropped first.
        unsafe { (self.lib.dealloc_pd)(self.raw) };
    }
}

/// A registered memory region (`ibv_mr`).
pub struct MemoryRegion {
    raw: *mut ffi::ibv_mr,
    lib: &'static Library,
}

impl MemoryRegion {
    /// Registers `len` bytes at `addr` for local writes and remote reads,
    /// writes and atomics.
    ///
    /// # Safety
    /// `addr..addr+len` must stay mapped for the life of the region.
    pub unsafe fn register(pd: &ProtectionDomain, addr: *mut u8, len: usize) -> Result<MemoryRegion, Fault> {
        let access = ffi::IBV_ACCESS_LOCAL_WRITE
            | ffi::IBV_ACCESS_REMOTE_WRITE
            | ffi::IBV_ACCESS_REMOTE_READ
            | ffi::IBV_ACCESS_REMOTE_ATOMIC;
        // SAFETY: the caller keeps the range mapped; the PD is valid.
        let raw = cvt_null(unsafe { (pd.lib.reg_mr)(pd.raw(), addr.cast(), len, access as i32) })
            .map_err(|err| format!("cannot register {len} bytes of memory: {err}{}", memlock_hint(len)))?;
        Ok(MemoryRegion { raw, lib: pd.lib })
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: `raw` is a live MR.
        unsafe { (*self.raw).lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: `raw` is a live MR.
        unsafe { (*self.raw).rkey }
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: registered by ibv_reg_mr; no work request uses it any more.
        unsafe { (self.lib.dereg_mr)(self.raw) };
    }
}

/// Says what `ulimit -l` must be if the memlock limit is the likely cause.
pub fn memlock_hint(needed: usize) -> String {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return String::new();
    }
    format!(
        " (the locked-memory limit is {} KiB; RDMA needs at least {} KiB per rank: run `ulimit -l unlimited` or raise memlock in /etc/security/limits.conf)",
        limit.rlim_cur / 1024,
        needed.div_ceil(1024)
    )
}
