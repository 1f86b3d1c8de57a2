//! A rank that dies of a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, an
//! abort) says where and why before it dies, as Open MPI does: one line
//! with the signal, its cause and the program's frame, then the frames
//! with file:line (the hang reports' symbolization), and the same place
//! for rlaunch's own line (`Msg::Crashed`). A note kept by a failed
//! `shmem_malloc` (see [`keep_note`]) is printed first.
//!
//! The handler is installed at init, on an alternate signal stack large
//! enough to symbolize. Symbolizing is not async-signal-safe, so only a
//! fault outside the allocator is sure to be described; an alarm bounds
//! the attempt, and whatever happens the process then dies of the same
//! signal, under the action it had before (so a Rust program's stack
//! overflow message still comes from std). A C program's own handlers are
//! left alone: the handler goes only where the action is the default.
//! `ONESIDE_CRASH_REPORT=0` turns it off.

mod report;

use crate::words::noun;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The faults described, as (signal, name).
const FAULTS: [(c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGABRT, "SIGABRT"),
];

/// The alternate signal stack the installing thread gets, when its own is
/// smaller (std gives threads 8 KiB, too little to symbolize).
const ALT_STACK: usize = 1 << 20;

/// Symbolizing needs this much signal stack; on a smaller alternate stack
/// (a thread the program made) only the first line is printed.
const STACK_TO_SYMBOLIZE: usize = 256 << 10;

/// How long the description may take before the process just dies.
const ALARM_SECONDS: u32 = 5;

/// How many of the program's frames are printed.
const MAX_FRAMES: usize = 16;

static NOTE: NoteCell = NoteCell(std::cell::UnsafeCell::new([0; 512]));
static NOTE_LEN: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
static IN_CRASH: AtomicBool = AtomicBool::new(false);
static RANK: AtomicUsize = AtomicUsize::new(0);
/// The signal being described, for the alarm.
static SIGNAL: AtomicUsize = AtomicUsize::new(0);

struct NoteCell(std::cell::UnsafeCell<[u8; 512]>);
// SAFETY: written only by `keep_note` while NOTE_LEN is 0, read only by the
// handler up to NOTE_LEN (see there).
unsafe impl Sync for NoteCell {}

/// The actions the handler replaced, per signal number (read in the
/// handler, written once before it is installed).
static OLD: std::sync::OnceLock<Vec<(c_int, libc::sigaction)>> = std::sync::OnceLock::new();

/// Keeps `line` to be printed first if this process later dies of a
/// fault (a failed `shmem_malloc` whose NULL the program then uses).
#[doc(hidden)]
pub fn keep_note(line: &str) {
    let bytes = line.as_bytes();
    let n = bytes.len().min(512);
    NOTE_LEN.store(0, Ordering::SeqCst);
    // SAFETY: the handler reads at most NOTE_LEN bytes, 0 while the copy
    // runs; failing allocations are collectives, made by one thread.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), NOTE.0.get().cast::<u8>(), n) };
    NOTE_LEN.store(n, Ordering::SeqCst);
}

/// Installs the handler for this process (once); `rank` is this rank.
pub(crate) fn install(rank: usize) {
    if std::env::var_os("ONESIDE_CRASH_REPORT").is_some_and(|v| v == "0") || INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    RANK.store(rank, Ordering::Relaxed);
    give_this_thread_an_alt_stack();
    // A Rust program's SIGSEGV and SIGBUS actions are std's stack
    // overflow handler, which is chained; a C program's own are kept.
    let rust = !crate::words::speaks_of_pes();
    let mut old = Vec::new();
    for (signal, _) in FAULTS {
        // SAFETY: a zeroed sigaction is valid output for the query.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying the current action.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } != 0 {
            continue;
        }
        let std_handler = rust && matches!(signal, libc::SIGSEGV | libc::SIGBUS);
        if current.sa_sigaction == libc::SIG_DFL || std_handler {
            old.push((signal, current));
        }
    }
    let old = OLD.get_or_init(|| old);
    for (signal, _) in old {
        // SAFETY: a zeroed sigaction with a handler is valid; the handler
        // runs on the alternate stack when the thread has one.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_fault as extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: installing a handler for a fault signal.
        unsafe { libc::sigaction(*signal, &action, std::ptr::null_mut()) };
    }
}

/// Gives the calling thread an alternate signal stack of [`ALT_STACK`]
/// unless it has one that large; the memory stays for the process.
fn give_this_thread_an_alt_stack() {
    // SAFETY: a zeroed stack_t is valid output for the query.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: querying this thread's alternate stack.
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut current) } != 0
        || (current.ss_flags & libc::SS_DISABLE == 0 && current.ss_size >= ALT_STACK)
    {
        return;
    }
    // SAFETY: anonymous private memory, never unmapped.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return;
    }
    let new = libc::stack_t {
        ss_sp: stack,
        ss_flags: 0,
        ss_size: ALT_STACK,
    };
    // SAFETY: the stack is mapped and stays so.
    unsafe { libc::sigaltstack(&new, std::ptr::null_mut()) };
}

extern "C" fn on_fault(signal: c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if !IN_CRASH.swap(true, Ordering::SeqCst) {
        let n = NOTE_LEN.load(Ordering::SeqCst);
        // SAFETY: write(2) is async-signal-safe; NOTE's first `n` bytes
        // were written before `n` was published.
        unsafe { libc::write(2, NOTE.0.get().cast(), n) };
        SIGNAL.store(signal as usize, Ordering::SeqCst);
        // SAFETY: a handler for the alarm, which ends the process if the
        // description hangs (a lock held by the faulting code).
        unsafe {
            libc::signal(libc::SIGALRM, on_alarm as extern "C" fn(c_int) as libc::sighandler_t);
            libc::alarm(ALARM_SECONDS);
        }
        if room_to_symbolize() {
            // SAFETY: the kernel passes a valid siginfo and ucontext to an
            // SA_SIGINFO handler.
            let (info, (pc, sp)) = unsafe { (&*info, registers(context)) };
            let cause = cause(signal, info, sp);
            report::describe(RANK.load(Ordering::Relaxed), noun(), signal, &cause, pc);
        }
        // SAFETY: cancelling the alarm.
        unsafe { libc::alarm(0) };
    }
    die_as_before(signal);
}

/// Puts back the action the signal had and raises it: the process ends as
/// it would have without this handler (std's handler, for a Rust stack
/// overflow, still reports it).
fn die_as_before(signal: c_int) {
    let old = OLD.get().and_then(|old| old.iter().find(|(s, _)| *s == signal));
    // SAFETY: restoring a saved action (or the default), then raising the
    // signal, blocked while this handler runs: it is delivered on return.
    unsafe {
        match old {
            Some((_, action)) => libc::sigaction(signal, action, std::ptr::null_mut()),
            None => {
                libc::signal(signal, libc::SIG_DFL);
                0
            }
        };
        libc::raise(signal);
    }
}

extern "C" fn on_alarm(_: c_int) {
    const SAID: &[u8] = b"oneside: the crash report did not finish in time\n";
    // SAFETY: write(2) is async-signal-safe.
    unsafe { libc::write(2, SAID.as_ptr().cast(), SAID.len()) };
    let signal = SIGNAL.load(Ordering::SeqCst) as c_int;
    // SAFETY: the default action, then the fault's own signal: the process
    // dies of it (it is not blocked in this handler).
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}

/// Whether the handler runs on a stack large enough to symbolize: the
/// thread's own stack, or an alternate one of [`STACK_TO_SYMBOLIZE`].
fn room_to_symbolize() -> bool {
    // SAFETY: a zeroed stack_t is valid output for the query.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: querying this thread's alternate stack.
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut current) } != 0 {
        return false;
    }
    current.ss_flags & libc::SS_ONSTACK == 0 || current.ss_size >= STACK_TO_SYMBOLIZE
}

/// The program counter and stack pointer when the signal came.
///
/// # Safety
/// `context` is the ucontext an SA_SIGINFO handler was given.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn registers(context: *mut libc::c_void) -> (usize, usize) {
    // SAFETY: see the function's contract.
    let gregs = unsafe { &(*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    (
        gregs[libc::REG_RIP as usize] as usize,
        gregs[libc::REG_RSP as usize] as usize,
    )
}

/// Not read on other machines.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
unsafe fn registers(_: *mut libc::c_void) -> (usize, usize) {
    (0, 0)
}

/// How close below the stack pointer a fault must be to be called a
/// stack overflow.
const NEAR_THE_STACK: usize = 64 << 10;

/// The signal's name and cause in words: `SIGSEGV (address 0x0 is not
/// mapped)`; `sp`, the stack pointer at the fault (0 when unknown).
pub(crate) fn cause(signal: c_int, info: &libc::siginfo_t, sp: usize) -> String {
    let name = FAULTS.iter().find(|(s, _)| *s == signal).map_or("signal", |(_, n)| n);
    // SAFETY: si_addr is the faulting address for these two signals.
    let addr = unsafe { info.si_addr() } as usize;
    let why = match (signal, info.si_code) {
        (_, code) if code <= 0 => "sent by a process, not a fault".to_string(),
        (libc::SIGSEGV, _) if sp != 0 && addr <= sp + 256 && sp - addr.min(sp) < NEAR_THE_STACK => {
            format!("stack overflow at address {addr:#x}: deep or endless recursion, or large local arrays; `ulimit -s` sets the main thread's stack")
        }
        (libc::SIGSEGV, 1) => format!("address {addr:#x} is not mapped"),
        (libc::SIGSEGV, 2) => format!("address {addr:#x} may not be accessed that way"),
        (libc::SIGBUS, 2) => format!("address {addr:#x} is past the end of a mapped file"),
        (libc::SIGBUS, _) => format!("bad access at {addr:#x}"),
        (libc::SIGFPE, 1) => "integer division by zero".to_string(),
        (libc::SIGFPE, 2) => "integer overflow".to_string(),
        (libc::SIGFPE, _) => "floating-point exception".to_string(),
        (libc::SIGILL, _) => format!("illegal instruction at {addr:#x}"),
        _ => String::new(),
    };
    match (signal, why.is_empty()) {
        (libc::SIGABRT, _) => "SIGABRT (the program called abort)".to_string(),
        (_, true) => name.to_string(),
        (_, false) => format!("{name} ({why})"),
    }
}
