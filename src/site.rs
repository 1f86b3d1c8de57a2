//! Where the program made a call: a Rust caller's location (the outermost
//! public call's, kept per thread), or the C caller found in a backtrace (its
//! file and line when the program has debug information, its function
//! otherwise), and the one way a site is written in a message (`phrase`).
//!
//! A leaf: it names nothing else of the crate, so errors, hang reports, the
//! checking mode and the C API may all use it.

use std::backtrace::Backtrace;
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::panic::Location;
use std::sync::{Mutex, OnceLock};

thread_local! {
    /// The place of the outermost public call running on this thread that
    /// has places of its own to record (a wait's, a collective's).
    static CALLER: std::cell::Cell<Option<&'static Location<'static>>> = const { std::cell::Cell::new(None) };
}

/// The outermost public call's place, kept while it runs; dropping it (also
/// by a panic) puts back what was there before.
pub(crate) struct Outermost(Option<&'static Location<'static>>);

impl Outermost {
    /// Keeps `at` as this thread's call site, unless an outer call's is kept already.
    #[inline(always)]
    pub(crate) fn enter(at: &'static Location<'static>) -> Outermost {
        Outermost(CALLER.with(|c| c.replace(Some(c.get().unwrap_or(at)))))
    }
}

impl Drop for Outermost {
    fn drop(&mut self) {
        let _ = CALLER.try_with(|c| c.set(self.0));
    }
}

/// Where the program made the call now running: the outermost public
/// call's place, or this function's caller's (`#[track_caller]`).
#[track_caller]
#[inline(always)]
pub(crate) fn call_site() -> &'static Location<'static> {
    match CALLER.with(|c| c.get()) {
        Some(at) => at,
        None => Location::caller(),
    }
}

/// The outermost public call's place, or `at` when no outer call kept one.
#[inline(always)]
pub(crate) fn outermost_or(at: &'static Location<'static>) -> &'static Location<'static> {
    CALLER.with(|c| c.get()).unwrap_or(at)
}

/// The source of a call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Site {
    /// `#[track_caller]`'s location of the Rust caller.
    Rust(&'static Location<'static>),
    /// An entry point of the C API: the caller is found in a backtrace.
    C,
    /// Not known (a wait the library started for itself, or a drop).
    Unknown,
}

impl Site {
    /// The location in words, or empty when not known; `trace` is the
    /// blocked thread's backtrace, for C calls.
    pub fn describe(&self, trace: Option<&Backtrace>) -> String {
        match self {
            Site::Rust(at) => format!("{}:{}:{}", at.file(), at.line(), at.column()),
            Site::C => trace.map(|t| c_caller(&t.to_string())).unwrap_or_default(),
            Site::Unknown => String::new(),
        }
    }
}

/// Where this thread's C program called the C API: `file:line:col`, or
/// `in <function> (…build with -g…)` without line tables, or empty when
/// no C API function is on the stack. The caller's return address is found
/// by unwinding a few frames (`c_caller_pc`, about a microsecond); only
/// the first call from each address symbolizes a backtrace, which takes
/// milliseconds, and its words are kept for the next.
pub fn c_call_site() -> String {
    if let Some(foreign) = foreign_caller() {
        return foreign;
    }
    let pc = c_caller_pc();
    if pc == 0 {
        return c_caller(&Backtrace::force_capture().to_string());
    }
    static WORDS: Mutex<Option<HashMap<usize, String>>> = Mutex::new(None);
    let lock = |m: &'static Mutex<_>| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(words) = lock(&WORDS).get_or_insert_with(HashMap::new).get(&pc) {
        return words.clone();
    }
    let words = c_caller(&Backtrace::force_capture().to_string());
    lock(&WORDS).get_or_insert_with(HashMap::new).insert(pc, words.clone());
    words
}

/// A loaded object (the executable or a library): its load bias, the
/// extent of its loaded segments, and its file ("" for the executable).
#[derive(Clone, Debug)]
pub(crate) struct LoadedObject {
    pub bias: usize,
    pub lo: usize,
    pub hi: usize,
    pub path: String,
}

/// The loaded objects, in the dynamic linker's order.
pub(crate) fn loaded_objects() -> Vec<LoadedObject> {
    /// # Safety
    /// Called by `dl_iterate_phdr` only, with its entry and `data` below.
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: the dynamic linker passes a valid entry; `data` is the
        // vector below, borrowed for the call.
        let (info, out) = unsafe { (&*info, &mut *data.cast::<Vec<LoadedObject>>()) };
        let (mut lo, mut hi) = (usize::MAX, 0);
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: `dlpi_phdr` holds `dlpi_phnum` headers.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD {
                lo = lo.min(info.dlpi_addr as usize + ph.p_vaddr as usize);
                hi = hi.max(info.dlpi_addr as usize + (ph.p_vaddr + ph.p_memsz) as usize);
            }
        }
        let path = match info.dlpi_name.is_null() {
            true => String::new(),
            // SAFETY: a NUL-terminated name owned by the linker.
            false => unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned(),
        };
        out.push(LoadedObject {
            bias: info.dlpi_addr as usize,
            lo,
            hi,
            path,
        });
        0
    }
    let mut out: Vec<LoadedObject> = Vec::new();
    // SAFETY: `each` only reads the entries and pushes to `out`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut Vec<LoadedObject>).cast()) };
    out
}

/// The extent of the loaded object holding this library's code.
fn own_object() -> Option<(usize, usize)> {
    static EXTENT: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    *EXTENT.get_or_init(|| {
        let here = c_caller_pc as fn() -> usize as usize;
        loaded_objects()
            .into_iter()
            .find(|o| o.lo <= here && here < o.hi)
            .map(|o| (o.lo, o.hi))
    })
}

/// The return address of this thread's C caller: the one its entry into
/// the C API noted (`set_noted_caller`, under a checking mode), else the
/// first frame outside the object holding this library, unwound without
/// symbols (`_Unwind_Backtrace`); 0 when the program and this library are
/// one object (a static link) or nothing is found.
#[inline(never)]
pub(crate) fn c_caller_pc() -> usize {
    if let Some(pc) = NOTED.get().map(|noted| noted()).filter(|&pc| pc != 0) {
        return pc;
    }
    struct Walk {
        lo: usize,
        hi: usize,
        found: usize,
        frames: usize,
    }
    extern "C" {
        fn _Unwind_Backtrace(trace: extern "C" fn(*mut c_void, *mut c_void) -> c_int, arg: *mut c_void) -> c_int;
        fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
    }
    extern "C" fn step(ctx: *mut c_void, arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the `Walk` below; `ctx` the unwinder's.
        let (walk, ip) = unsafe { (&mut *arg.cast::<Walk>(), _Unwind_GetIP(ctx)) };
        walk.frames += 1;
        if ip != 0 && (ip < walk.lo || ip >= walk.hi) {
            walk.found = ip;
            return 4; // _URC_NORMAL_STOP
        }
        match walk.frames > 32 {
            true => 4,
            false => 0,
        }
    }
    let Some((lo, hi)) = own_object() else {
        return 0;
    };
    let mut walk = Walk {
        lo,
        hi,
        found: 0,
        frames: 0,
    };
    // SAFETY: `step` only reads the unwinder's context and writes `walk`.
    unsafe { _Unwind_Backtrace(step, (&mut walk as *mut Walk).cast()) };
    walk.found
}

/// A language binding's own way to name its program's line, set once by
/// the C API: the Python line that called through shmem4py says more than
/// the binding's generated C (`shmem4py.api.c:66826:5`, in a build
/// directory long gone).
/// The C API's noted caller of the current call (0 when none was noted):
/// the return address its exported entry saw, with no unwinding.
static NOTED: std::sync::OnceLock<fn() -> usize> = std::sync::OnceLock::new();

/// Set once by the C API: how to read the current call's noted caller.
#[doc(hidden)]
pub fn set_noted_caller(noted: fn() -> usize) {
    let _ = NOTED.set(noted);
}

static FOREIGN: std::sync::OnceLock<fn() -> Option<String>> = std::sync::OnceLock::new();

/// Lets the C API name callers in a binding's language: `caller` gives
/// `file:line in function (Python)`, or `None` outside one.
#[doc(hidden)]
pub fn set_foreign_caller(caller: fn() -> Option<String>) {
    let _ = FOREIGN.set(caller);
}

/// The binding's name for this thread's caller, if a binding has one.
pub(crate) fn foreign_caller() -> Option<String> {
    FOREIGN.get().and_then(|caller| caller())
}

/// A place in a message: ` at file:line`, ` in main (build with -g …)`
/// for a caller without line tables, or nothing when it is unknown.
#[doc(hidden)]
pub fn phrase(at: &str) -> String {
    match at {
        "" => String::new(),
        at if at.starts_with("in ") => format!(" {at}"),
        at => format!(" at {at}"),
    }
}

/// The frame that called the C API, from a backtrace's text: the first
/// frame after the library's outermost one, as `file:line` when resolved,
/// or `in <function>` with a hint.
fn c_caller(text: &str) -> String {
    let frames = frames(text);
    // The library's frames: its entries, by name (`pshmem_put`, shmem.h's
    // `oneside_direct_put`, the body `oneside_shmem::rma::body_shmem_put`
    // that the exported names run), and any frame in its Rust. An entry
    // whose code is shared with another's (`shmem_my_pe` folded into
    // `_my_pe`'s body) is named by the other's frames, in Rust.
    let api = |name: &str| {
        let last = name.rsplit("::").next().unwrap_or(name);
        ["shmem_", "pshmem_", "oneside_direct_", "body_"]
            .iter()
            .any(|p| last.starts_with(p))
    };
    let in_rust = |at: &Option<String>| {
        at.as_deref()
            .and_then(|at| at.rsplitn(3, ':').nth(2))
            .is_some_and(|file| file.ends_with(".rs"))
    };
    let last_ours = frames.iter().rposition(|(name, at)| api(name) || in_rust(at));
    let caller = last_ours.and_then(|i| frames.get(i + 1));
    match caller {
        Some((_, Some(at))) => at.clone(),
        Some((name, None)) => format!("in {name} (build with -g for its file:line)"),
        None => String::new(),
    }
}

/// `(function, Some(file:line:col))` per frame of std's backtrace text:
/// `  N: name` lines (and unnumbered names for inlined functions), each
/// followed by `at file:line:col` when resolved.
pub(crate) fn frames(text: &str) -> Vec<(String, Option<String>)> {
    let mut frames: Vec<(String, Option<String>)> = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(at) = line.strip_prefix("at ") {
            if let Some(last) = frames.last_mut() {
                last.1.get_or_insert_with(|| at.to_string());
            }
        } else if let Some((number, name)) = line
            .split_once(": ")
            .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
        {
            let _ = number;
            frames.push((name.to_string(), None));
        } else if !line.is_empty() {
            // A function inlined into the frame above: shmem.h's inline
            // wrappers, and the C caller they were inlined into.
            frames.push((line.to_string(), None));
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "   0: std::backtrace::Backtrace::force_capture
             at /rustc/x/library/std/src/backtrace.rs:312:9
   1: oneside::watch::idle
   2: pshmem_barrier_all
             at ./capi/src/setup.rs:272:9
   3: main
             at /tmp/hang.c:17:5
   4: __libc_start_main
";

    #[test]
    fn the_c_caller_is_the_frame_after_the_api_entry() {
        assert_eq!(c_caller(TRACE), "/tmp/hang.c:17:5");
    }

    #[test]
    fn an_inline_wrapper_of_shmem_h_is_skipped() {
        let inlined = "   2: pshmem_long_put\n             at ./capi/src/rma.rs:10:1\n   3: oneside_direct_long_put\n             at ./capi/include/shmem.h:2280:1\n      main\n             at ./misuse.c:30:9\n";
        assert_eq!(c_caller(inlined), "./misuse.c:30:9");
    }

    #[test]
    fn an_entry_folded_into_another_is_passed_over() {
        let folded = "   8: shmem_my_pe\n             at ./capi/src/export.rs:40:17\n      p_my_pe\n             at ./capi/src/setup.rs:421:9\n      _my_pe\n             at ./capi/src/export.rs:40:17\n   9: main\n             at ./messages.c:13:16\n";
        assert_eq!(c_caller(folded), "./messages.c:13:16");
    }

    #[test]
    fn an_entry_body_without_line_tables_is_the_library_s() {
        let stripped = "   1: oneside::watch::idle\n   2: oneside_shmem::setup::body_shmem_barrier_all\n   3: main\n             at /tmp/hang.c:17:5\n";
        assert_eq!(c_caller(stripped), "/tmp/hang.c:17:5");
    }

    #[test]
    fn without_line_tables_the_c_caller_is_named() {
        let stripped = TRACE.replace("             at /tmp/hang.c:17:5\n", "");
        assert_eq!(c_caller(&stripped), "in main (build with -g for its file:line)");
    }

    #[test]
    fn a_trace_without_the_api_names_nothing() {
        assert_eq!(c_caller("   0: main\n"), "");
    }
}
