//! The process-wide state behind the C API: the `World` that `shmem_init`
//! creates, the predefined team handles, and the one way a call fails.
//!
//! The C API has no handle to pass around, so the world lives in a static.
//! It is written by `shmem_init` and `shmem_finalize` only, which the
//! OpenSHMEM rules make single-threaded (no other call may run during
//! them). Every other call only reads it, through a shared reference, from
//! any number of threads (`SHMEM_THREAD_MULTIPLE`): the `World` is `Sync`.

use oneside::{Error, Team, World};
use std::cell::UnsafeCell;

/// What `shmem_init` set up.
pub struct State {
    pub world: World,
    /// `SHMEM_TEAM_SHARED`: the ranks on this rank's node.
    pub shared: Team,
    /// The direct-path table `shmem.h` reads (`direct`).
    pub direct: crate::direct::Published,
    /// The thread level granted by `shmem_init_thread`.
    pub thread_level: i32,
}

struct Global(UnsafeCell<Option<State>>);

// SAFETY: see the module docs: written only by shmem_init/shmem_finalize,
// which the OpenSHMEM rules let no other call overlap, and otherwise only
// read, as shared references to Sync data.
unsafe impl Sync for Global {}

static STATE: Global = Global(UnsafeCell::new(None));

/// The state, or the end of the job if `shmem_init` has not run.
#[inline(always)]
pub fn state(api: &'static str) -> &'static State {
    // SAFETY: see the module docs.
    match unsafe { &*STATE.0.get() } {
        Some(state) => state,
        None => not_initialized(api),
    }
}

/// The world, or the end of the job if `shmem_init` has not run.
#[inline(always)]
pub fn world(api: &'static str) -> &'static World {
    oneside::watch::c_entered(api);
    &state(api).world
}

/// Whether `shmem_init` has run and `shmem_finalize` has not.
pub fn initialized() -> bool {
    // SAFETY: see the module docs.
    unsafe { (*STATE.0.get()).is_some() }
}

/// How many `shmem_init` calls the `shmem_finalize` calls have not yet
/// matched; `usize::MAX` once the library has been finalized.
static INITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What a `shmem_init` call is.
pub enum Entry {
    /// The first: set the library up.
    First,
    /// A later one, while initialized: only counted.
    Again,
    /// One after the last `shmem_finalize`: an error.
    AfterFinalize,
}

/// Counts a `shmem_init` call (which no other call overlaps).
pub fn enter() -> Entry {
    use std::sync::atomic::Ordering::Relaxed;
    match INITS.load(Relaxed) {
        usize::MAX => Entry::AfterFinalize,
        0 => {
            INITS.store(1, Relaxed);
            Entry::First
        }
        n => {
            INITS.store(n + 1, Relaxed);
            Entry::Again
        }
    }
}

/// Counts a `shmem_finalize` call; true when it is the last one, which
/// finalizes the library. A call with nothing to match does nothing.
pub fn leave() -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    match INITS.load(Relaxed) {
        0 | usize::MAX => false,
        1 => {
            INITS.store(usize::MAX, Relaxed);
            true
        }
        n => {
            INITS.store(n - 1, Relaxed);
            false
        }
    }
}

/// Installs the state (`shmem_init`).
pub fn install(state: State) {
    // SAFETY: see the module docs; called once, before any other call.
    unsafe { *STATE.0.get() = Some(state) };
}

/// Takes the state out (`shmem_finalize`).
pub fn take() -> Option<State> {
    // SAFETY: see the module docs; no other call runs during finalize.
    unsafe { (*STATE.0.get()).take() }
}

/// The value of a call that succeeded; otherwise one line on stderr and the
/// end of the job (OpenSHMEM calls have no error return).
#[inline(always)]
pub fn ok<T>(api: &'static str, result: Result<T, Error>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => fail_with(api, &e),
    }
}

#[cold]
#[inline(never)]
fn fail_with(api: &'static str, e: &Error) -> ! {
    fail(api, e)
}

/// Reports `what` and ends the job with status 1: rlaunch sees a rank fail
/// and stops the others. The line has one shape for every C error:
/// `oneside: <call> at <file>:<line>: PE <n>: <what went wrong>; <what to do>`,
/// the location being where the program called `api` (`in <function>`
/// with a hint when it has no line tables; under shmem4py, the Python
/// program's own line).
#[cold]
pub fn fail(api: &'static str, what: &dyn std::fmt::Display) -> ! {
    oneside::speak_of_pes();
    let what = what.to_string();
    let numbered = what
        .strip_prefix("PE ")
        .and_then(|w| w.split_once(": "))
        .filter(|(n, _)| n.bytes().all(|b| b.is_ascii_digit()));
    let (pe, what) = match numbered {
        Some((n, rest)) => (format!("PE {n}: "), rest),
        None => (
            my_pe().map(|pe| format!("PE {pe}: ")).unwrap_or_default(),
            what.as_str(),
        ),
    };
    // An error from the library may name the C call too, with its place
    // (`--debug`'s findings do): both are said once, at the front.
    let what = what
        .strip_prefix(api)
        .and_then(|w| match w.strip_prefix(": ") {
            Some(rest) => Some(rest),
            None if w.starts_with(" at ") || w.starts_with(" in ") => w.split_once(": ").map(|(_, rest)| rest),
            None => None,
        })
        .unwrap_or(what);
    // A Python program's own line (through shmem4py) says more than the
    // binding's generated C.
    let at = match crate::python::caller() {
        Some(python) => format!(" at {python} (Python)"),
        None => oneside::site::phrase(&oneside::site::c_call_site()),
    };
    say(&format!("oneside: {api}{at}: {pe}{what}"));
    exit_job(1)
}

/// Writes `line` and a newline to stderr in one write: PEs under another
/// launcher share one stderr, and `eprintln!` writes a formatted line in
/// pieces, which interleaved two PEs' lines ("oneside: oneside: ...").
pub fn say(line: &str) {
    use std::io::Write;
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line.trim_end_matches('\n'));
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// This PE's number, when `shmem_init` has run.
fn my_pe() -> Option<usize> {
    // SAFETY: see the module docs; only read, on the way out.
    unsafe { (*STATE.0.get()).as_ref().map(|state| state.world.rank()) }
}

#[cold]
fn not_initialized(api: &'static str) -> ! {
    fail(
        api,
        &"called before shmem_init (or after shmem_finalize); call shmem_init first, and make no OpenSHMEM call after shmem_finalize",
    )
}

static EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the process is ending through `fail` or `shmem_global_exit`,
/// when the exit handler must not wait for peers in a farewell barrier.
pub fn exiting() -> bool {
    EXITING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Ends this rank with `status`, without a farewell: rlaunch sees the
/// rank leave and stops the rest of the job (`shmem_global_exit`).
pub fn exit_job(status: libc::c_int) -> ! {
    EXITING.store(true, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: exit flushes C stdio and ends the process.
    unsafe { libc::exit(status) }
}

/// `shmem_global_exit`: the launcher stops every rank and exits with
/// `status`; without a launcher, this process just exits.
pub fn global_exit(status: libc::c_int) -> ! {
    EXITING.store(true, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: see the module docs; the process ends in this call, so no
    // other reference to the state is used again.
    match unsafe { (*STATE.0.get()).as_mut() } {
        Some(state) => state.world.global_exit(status),
        None => exit_job(status),
    }
}
