//! A PMIx client on the launcher's own `libpmix.so.2`, opened at run time
//! (`ONESIDE_PMIX_LIBRARY` names another): Open MPI's `mpirun`/`prterun`,
//! `srun --mpi=pmix`, and PMIx under Flux, PALS and OpenPBS. No build of
//! oneside links against libpmix, as none links against libibverbs.
//!
//! The entry points are resolved once behind safe methods. `PMIx_Init` is
//! reference counted by the library: when the program's MPI has already
//! initialized PMIx (or does so later), both share one connection to the
//! server, and each `PMIx_Finalize` only drops its own reference. Rank and
//! size come from the job's attributes, local peers from `pmix.lpeers`;
//! cards travel as `PMIx_Put` / `PMIx_Commit` / `PMIx_Fence` (collecting the
//! data) / `PMIx_Get`.
//!
//! The structures below are those of PMIx 4 (`pmix_common.h`), whose ABI
//! the PMIx standard keeps stable across the `.so.2` versions.

use crate::dynlib::{Dynlib, Loaded};
use crate::error::{Error, Result};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::time::Duration;

/// The variable naming another PMIx library than `libpmix.so.2`.
pub(crate) const LIBRARY_VAR: &str = "ONESIDE_PMIX_LIBRARY";
const DEFAULT_LIBRARY: &str = "libpmix.so.2";

const NSLEN: usize = 256;
const KEYLEN: usize = 512;
const RANK_WILDCARD: u32 = u32::MAX - 1;
const PMIX_BOOL: u16 = 1;
const PMIX_STRING: u16 = 3;
const PMIX_GLOBAL: u8 = 3;
const PMIX_ERR_NOT_FOUND: c_int = -46;

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; NSLEN],
    rank: u32,
}

/// `pmix_value_t`: a type tag and a 24-byte union.
#[repr(C)]
struct Value {
    kind: u16,
    data: [u64; 3],
}

/// `pmix_info_t`.
#[repr(C)]
struct Info {
    key: [c_char; KEYLEN],
    flags: u32,
    value: Value,
}

const _: () = assert!(std::mem::size_of::<Proc>() == 260);
const _: () = assert!(std::mem::size_of::<Value>() == 32);
const _: () = assert!(std::mem::size_of::<Info>() == 552);

type Status = c_int;

/// The entry points oneside uses.
struct Api {
    init: unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> Status,
    finalize: unsafe extern "C" fn(*const Info, usize) -> Status,
    abort: unsafe extern "C" fn(c_int, *const c_char, *mut Proc, usize) -> Status,
    put: unsafe extern "C" fn(u8, *const c_char, *mut Value) -> Status,
    commit: unsafe extern "C" fn() -> Status,
    fence: unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> Status,
    get: unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> Status,
    value_destruct: unsafe extern "C" fn(*mut Value),
    error_string: unsafe extern "C" fn(Status) -> *const c_char,
    file: String,
}

static API: Loaded<Api> = Loaded::new();

fn api() -> std::result::Result<&'static Api, String> {
    API.get(|| -> std::result::Result<Api, String> {
        let file = std::env::var(LIBRARY_VAR).unwrap_or_else(|_| DEFAULT_LIBRARY.into());
        let lib = Dynlib::open(&file)?;
        // SAFETY: each type is the C signature of the named PMIx 4 function.
        unsafe {
            Ok(Api {
                init: lib.function(c"PMIx_Init")?,
                finalize: lib.function(c"PMIx_Finalize")?,
                abort: lib.function(c"PMIx_Abort")?,
                put: lib.function(c"PMIx_Put")?,
                commit: lib.function(c"PMIx_Commit")?,
                fence: lib.function(c"PMIx_Fence")?,
                get: lib.function(c"PMIx_Get")?,
                value_destruct: lib.function(c"PMIx_Value_destruct")?,
                error_string: lib.function(c"PMIx_Error_string")?,
                file,
            })
        }
    })
    .map_err(str::to_owned)
}

/// An initialized PMIx client.
pub(crate) struct Pmix {
    api: &'static Api,
    me: Proc,
    size: usize,
    jobid: String,
    timeout: Duration,
}

impl Pmix {
    /// Initializes PMIx (sharing the process's existing initialization).
    pub(crate) fn init(timeout: Duration) -> Result<Pmix> {
        let api = api().map_err(|detail| Error::Pmi {
            rank: None,
            server: "the PMIx server".into(),
            step: "open libpmix",
            detail: format!("{detail} (install libpmix2, or set {LIBRARY_VAR} to the launcher's libpmix)"),
        })?;
        let mut me = Proc {
            nspace: [0; NSLEN],
            rank: 0,
        };
        // SAFETY: `me` is a pmix_proc_t for the library to fill; no infos.
        let rc = unsafe { (api.init)(&mut me, std::ptr::null_mut(), 0) };
        let mut pmix = Pmix {
            api,
            me,
            size: 0,
            jobid: String::new(),
            timeout,
        };
        pmix.check("PMIx_Init", rc)?;
        // SAFETY: the library wrote a NUL-terminated namespace.
        pmix.jobid = unsafe { CStr::from_ptr(me.nspace.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let job = pmix.wildcard();
        pmix.size = match pmix.fetch(&job, c"pmix.job.size", "PMIx_Get(pmix.job.size)")? {
            Some(Fetched::Number(n)) => n as usize,
            other => {
                let got = other.map_or_else(|| "nothing".into(), |f| f.describe());
                return Err(pmix.fail("PMIx_Get(pmix.job.size)", format!("got {got}, not a size")));
            }
        };
        Ok(pmix)
    }

    pub(crate) fn rank(&self) -> usize {
        self.me.rank as usize
    }
    pub(crate) fn size(&self) -> usize {
        self.size
    }
    pub(crate) fn jobid(&self) -> &str {
        &self.jobid
    }
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
    pub(crate) fn server(&self) -> String {
        format!("the PMIx server (through {}, namespace {})", self.api.file, self.jobid)
    }

    /// This node's ranks, from `pmix.lpeers` (`Ok(None)` if the server has none).
    pub(crate) fn local_ranks(&self) -> Result<Option<Vec<usize>>> {
        let job = self.wildcard();
        match self.fetch(&job, c"pmix.lpeers", "PMIx_Get(pmix.lpeers)")? {
            Some(Fetched::Text(list)) => {
                let ranks: Option<Vec<usize>> = list.split(',').map(|r| r.trim().parse().ok()).collect();
                Ok(ranks.filter(|r| r.contains(&self.rank()) && r.iter().all(|&p| p < self.size)))
            }
            _ => Ok(None),
        }
    }

    /// Puts `key=value` for every rank to read after the next fence.
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<()> {
        let (k, v) = (self.c_text("PMIx_Put", key)?, self.c_text("PMIx_Put", value)?);
        let mut val = Value {
            kind: PMIX_STRING,
            data: [v.as_ptr() as u64, 0, 0],
        };
        // SAFETY: a string value the library copies before returning.
        let rc = unsafe { (self.api.put)(PMIX_GLOBAL, k.as_ptr(), &mut val) };
        self.check("PMIx_Put", rc)
    }

    /// Commits this rank's puts and waits for every rank, collecting the data.
    pub(crate) fn fence(&mut self) -> Result<()> {
        // SAFETY: no arguments.
        let rc = unsafe { (self.api.commit)() };
        self.check("PMIx_Commit", rc)?;
        let mut collect = Info {
            key: [0; KEYLEN],
            flags: 0,
            value: Value {
                kind: PMIX_BOOL,
                data: [1, 0, 0],
            },
        };
        for (i, b) in b"pmix.collect".iter().enumerate() {
            collect.key[i] = *b as c_char;
        }
        // SAFETY: no procs (all of our namespace) and one valid info.
        let rc = unsafe { (self.api.fence)(std::ptr::null(), 0, &collect, 1) };
        self.check("PMIx_Fence", rc)
    }

    /// Waits for every rank, collecting no data.
    pub(crate) fn barrier(&mut self) -> Result<()> {
        // SAFETY: no procs (all of our namespace), no infos.
        let rc = unsafe { (self.api.fence)(std::ptr::null(), 0, std::ptr::null(), 0) };
        self.check("PMIx_Fence", rc)
    }

    /// `key` as `rank` put it; `Ok(None)` when it did not.
    pub(crate) fn get(&mut self, rank: usize, key: &str) -> Result<Option<String>> {
        let proc_ = Proc {
            rank: rank as u32,
            ..self.me
        };
        let k = self.c_text("PMIx_Get", key)?;
        match self.fetch(&proc_, &k, "PMIx_Get")? {
            Some(Fetched::Text(t)) => Ok(Some(t)),
            None => Ok(None),
            Some(other) => Err(self.fail(
                "PMIx_Get",
                format!("{key} of rank {rank} is {}, not a string", other.describe()),
            )),
        }
    }

    /// Drops this rank's reference to PMIx.
    pub(crate) fn finalize(self) -> Result<()> {
        // SAFETY: no infos.
        let rc = unsafe { (self.api.finalize)(std::ptr::null(), 0) };
        self.check("PMIx_Finalize", rc)
    }

    /// Asks the launcher to end the whole job.
    pub(crate) fn abort(self, msg: &str) -> Result<()> {
        let text = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: a C string; no procs means the whole namespace.
        let rc = unsafe { (self.api.abort)(1, text.as_ptr(), std::ptr::null_mut(), 0) };
        self.check("PMIx_Abort", rc)
    }

    fn wildcard(&self) -> Proc {
        Proc {
            rank: RANK_WILDCARD,
            ..self.me
        }
    }

    /// One value from the server: `Ok(None)` when not found.
    fn fetch(&self, proc_: &Proc, key: &CStr, step: &'static str) -> Result<Option<Fetched>> {
        let mut out: *mut Value = std::ptr::null_mut();
        // SAFETY: a valid proc and key; the library allocates `out`.
        let rc = unsafe { (self.api.get)(proc_, key.as_ptr(), std::ptr::null(), 0, &mut out) };
        if rc == PMIX_ERR_NOT_FOUND {
            return Ok(None);
        }
        self.check(step, rc)?;
        if out.is_null() {
            return Ok(None);
        }
        // SAFETY: `out` is a pmix_value_t the library allocated and filled.
        let value = unsafe { &*out };
        let fetched = Fetched::from(value);
        // SAFETY: releases what the library allocated (PMIX_VALUE_RELEASE).
        unsafe {
            (self.api.value_destruct)(out);
            libc::free(out as *mut c_void);
        }
        Ok(Some(fetched))
    }

    fn c_text(&self, step: &'static str, text: &str) -> Result<CString> {
        CString::new(text).map_err(|_| self.fail(step, format!("{text:?} holds a NUL byte")))
    }

    fn check(&self, step: &'static str, rc: Status) -> Result<()> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: PMIx_Error_string returns a static C string.
        let name = unsafe { CStr::from_ptr((self.api.error_string)(rc)) }.to_string_lossy();
        Err(self.fail(step, format!("it returned {rc} ({name})")))
    }

    fn fail(&self, step: &'static str, detail: String) -> Error {
        Error::Pmi {
            rank: (!self.jobid.is_empty()).then_some(self.rank()),
            server: self.server(),
            step,
            detail,
        }
    }
}

/// A value the server returned, as far as oneside reads values.
enum Fetched {
    Number(u64),
    Text(String),
    Other(u16),
}

impl Fetched {
    fn describe(&self) -> String {
        match self {
            Fetched::Number(n) => format!("the number {n}"),
            Fetched::Text(t) => format!("the string {t:?}"),
            Fetched::Other(kind) => format!("a value of PMIx data type {kind}"),
        }
    }

    fn from(v: &Value) -> Fetched {
        let word = v.data[0];
        match v.kind {
            PMIX_STRING if word != 0 => {
                // SAFETY: a string value holds a NUL-terminated C string pointer.
                Fetched::Text(
                    unsafe { CStr::from_ptr(word as *const c_char) }
                        .to_string_lossy()
                        .into_owned(),
                )
            }
            // size_t, int, int32, int64, uint, uint32, uint64, uint16, proc rank
            4 | 10 | 15 => Fetched::Number(word),
            6 | 9 | 11 | 14 | 40 => Fetched::Number(word & 0xffff_ffff),
            13 => Fetched::Number(word & 0xffff),
            other => Fetched::Other(other),
        }
    }
}
