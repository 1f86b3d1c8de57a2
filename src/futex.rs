//! Sleeping on a word of shared memory until a peer on this host changes
//! it: Linux futexes on the low half of a 64-bit team-area flag.
//!
//! A host whose ranks outnumber its cores many times over (more than 4 a
//! core, `backoff::block_waits`) cannot afford waits that poll: a
//! thousand ranks napping on two cores spend the cores on wake-ups, and
//! the rank being waited for gets no turn. There, a wait for a collective
//! flag sleeps in [`wait`], and whoever stores the flag calls [`wake`].
//! The futexes are shared (not `FUTEX_PRIVATE_FLAG`): waiter and waker are
//! different processes mapping the same file.
//!
//! A wake can be missed only if the flag's low half did not change (a
//! store that changed only the high half, or a waker that thought it had a
//! core of its own), so every wait has a timeout and rechecks.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The address of `word`'s low 32 bits, the futex word.
fn low_half(word: *const AtomicU64) -> *const u32 {
    // On little-endian the low half starts the word; on big-endian it is
    // the second 4 bytes, still inside the 8-byte word.
    let index = if cfg!(target_endian = "little") { 0 } else { 1 };
    word.cast::<u32>().wrapping_add(index)
}

/// Sleeps until `word` may no longer hold `seen`, a wake, a signal or
/// `timeout`; returns at once if its low half already differs.
pub fn wait(word: &AtomicU64, seen: u64, timeout: Duration) {
    let time = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the futex word lies inside `word`, a live, aligned atomic;
    // FUTEX_WAIT only reads it and reads `time`, which outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            low_half(word),
            libc::FUTEX_WAIT,
            seen as u32,
            &time as *const libc::timespec,
        );
    }
}

/// Wakes every process sleeping on the word at `word`.
///
/// # Safety
/// `word` must point to a live, 8-byte aligned word (here: a flag in a
/// mapped team area). The kernel only hashes the address; it reads nothing.
pub unsafe fn wake(word: *const AtomicU64) {
    // SAFETY: forwarded from the caller; FUTEX_WAKE writes no memory.
    unsafe {
        libc::syscall(libc::SYS_futex, low_half(word), libc::FUTEX_WAKE, i32::MAX);
    }
}
