//! The note a failed `shmem_malloc`, `shmem_calloc` or `shmem_align`
//! leaves. The specification has them return NULL, and many programs
//! never check (ISx asks for 1 GiB and writes through the NULL): the PE
//! then dies of SIGSEGV with nothing said about the heap.
//!
//! So the failed call keeps one line (what was asked, the heap's size,
//! and how to raise it). Under `rlaunch --debug` (`ONESIDE_DEBUG=1`) it
//! is printed at once. Otherwise it is printed only if the process then
//! dies of SIGSEGV or SIGBUS: the first failure installs a handler for
//! those two (unless the program has its own) that writes the kept line
//! to stderr and raises the signal again under its default action, so
//! the process dies of the same signal as before.
//! A program that checks for NULL and goes on prints nothing.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The kept line: written before `LEN` is published, read by the handler.
static mut NOTE: [u8; 512] = [0; 512];
static LEN: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The line for a failed `api` of `requested` bytes on PE `pe`.
pub fn text(api: &str, pe: usize, requested: usize, largest_free: usize, heap_size: usize) -> String {
    format!(
        "oneside: {api}: PE {pe}: returned NULL: asked for {requested} bytes, the largest free block is \
         {largest_free} bytes of a {heap_size}-byte symmetric heap; a program that uses the NULL dies of \
         SIGSEGV. Check the result, or raise the heap with SHMEM_SYMMETRIC_SIZE (e.g. =2G)\n"
    )
}

/// Keeps `line` for a crash, or prints it now when `checking`.
pub fn keep(line: &str, checking: bool) {
    if checking {
        eprint!("{line}");
        return;
    }
    let bytes = line.as_bytes();
    let n = bytes.len().min(512);
    LEN.store(0, Ordering::SeqCst);
    // SAFETY: only this function writes NOTE, and the handler reads at most
    // LEN bytes, which is 0 while the copy runs (one failing allocation at a
    // time: they are collectives, called by one thread).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), std::ptr::addr_of_mut!(NOTE).cast::<u8>(), n) };
    LEN.store(n, Ordering::SeqCst);
    if !INSTALLED.swap(true, Ordering::SeqCst) {
        for signal in [libc::SIGSEGV, libc::SIGBUS] {
            install(signal);
        }
    }
}

/// Installs the handler for `signal` unless the program has one.
fn install(signal: c_int) {
    // SAFETY: a zeroed sigaction is valid output for the query.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: querying the current action.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) } != 0 || old.sa_sigaction != libc::SIG_DFL {
        return;
    }
    // SAFETY: a zeroed sigaction with a handler and SA_RESETHAND (the
    // default action comes back as the handler runs) is valid.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_crash as extern "C" fn(c_int) as usize;
    action.sa_flags = libc::SA_RESETHAND | libc::SA_NODEFER;
    // SAFETY: the handler only calls write(2).
    unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
}

extern "C" fn on_crash(signal: c_int) {
    let n = LEN.load(Ordering::SeqCst);
    // SAFETY: write(2) and raise(3) are async-signal-safe; NOTE's first `n`
    // bytes were written before `n` was published. The action is the
    // default again (SA_RESETHAND) and the signal not blocked
    // (SA_NODEFER), so raising it ends the process as it would have.
    unsafe {
        libc::write(2, std::ptr::addr_of!(NOTE).cast(), n);
        libc::raise(signal);
    }
}
