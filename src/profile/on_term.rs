//! A profiled or traced rank that is ended with SIGTERM still writes its
//! files. When one rank fails, rlaunch (as mpirun and srun do) sends the
//! others SIGTERM, and SIGKILL after a grace; without this, the ranks
//! that lived left no profile, just when the profile would say where
//! they were.
//!
//! The handler only writes a byte to a pipe (what a signal handler may
//! do); a thread waiting on the pipe writes the files, then puts back the
//! action SIGTERM had before and raises it again: by default the rank
//! still ends as killed by SIGTERM, and a handler installed before (the
//! program's, or libfabric's shm provider's, which removes its shared
//! memory and then chains on) runs as it would have, after the files are
//! written. Found by the fault campaign: over libfabric's shm provider,
//! whose handler was there first, ranks that lived wrote no profile. A
//! SIGTERM the program ignores stays ignored, and nothing is written on it.

use crate::syscall::cvt;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// The pipe's writing end, for the handler (-1: none).
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// SIGTERM's action before ours, put back once the files are written.
struct Before(libc::sigaction);
// SAFETY: a sigaction is plain data (a handler address, flags, a mask);
// it is written once before the writer thread reads it.
unsafe impl Send for Before {}
// SAFETY: as above; nothing mutates it after it is set.
unsafe impl Sync for Before {}
static BEFORE: std::sync::OnceLock<Before> = std::sync::OnceLock::new();

extern "C" fn on_sigterm(_signal: c_int) {
    let fd = WAKE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; one byte from a static.
        unsafe { libc::write(fd, b"t".as_ptr().cast(), 1) };
    }
}

/// Installs the handler and starts the thread that writes rank `rank`'s
/// files on SIGTERM (the module docs); says why not, if it cannot.
pub(super) fn write_on_sigterm(rank: usize) -> Result<(), String> {
    // SAFETY: a zeroed sigaction is valid output for sigaction(2)'s query.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: querying the current action (no new action given).
    cvt(unsafe { libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old) }).map_err(|e| e.to_string())?;
    if old.sa_sigaction == libc::SIG_IGN || BEFORE.set(Before(old)).is_err() {
        return Ok(());
    }
    let mut fds = [-1; 2];
    // SAFETY: pipe2 fills two descriptors into `fds`.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }).map_err(|e| e.to_string())?;
    let [read_end, write_end] = fds;
    crate::service::spawn(format!("oneside-term-{rank}"), rank, "profile writer", move || {
        let mut byte = 0u8;
        // SAFETY: reading one byte into a local from the pipe this thread owns.
        if unsafe { libc::read(read_end, std::ptr::from_mut(&mut byte).cast(), 1) } != 1 {
            return;
        }
        if let Err(e) = super::finish() {
            eprintln!("oneside: rank {rank} could not write its profile: {e}");
        }
        // SAFETY: back to the action SIGTERM had before ours (BEFORE was
        // set before this thread started), then the signal again: the
        // process ends as killed by SIGTERM, or the handler that was
        // there first runs, as either would have.
        unsafe {
            if let Some(Before(before)) = BEFORE.get() {
                libc::sigaction(libc::SIGTERM, before, std::ptr::null_mut());
            }
            libc::raise(libc::SIGTERM);
        }
    })
    .map_err(|e| e.to_string())?;
    WAKE.store(write_end, Ordering::Relaxed);
    // SAFETY: a zeroed sigaction with a handler and SA_RESTART is valid.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_sigterm as extern "C" fn(c_int) as usize;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: installing a handler that only calls write(2).
    cvt(unsafe { libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut()) }).map_err(|e| e.to_string())?;
    Ok(())
}
