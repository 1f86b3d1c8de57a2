//! Whether any per-call hook is on in this process: profiling (`profile`)
//! or the race checker (`race`). The cheap calls' inlined paths (puts,
//! gets, atomics, signals: `profile::leaf!`) pay one relaxed load of this
//! and a branch, however many hooks there are; each hook's own test runs
//! only behind it, out of the path taken when everything is off.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Profiling or tracing is counting calls now.
pub(crate) const PROFILE: u8 = 1;
/// The race checker is on.
pub(crate) const RACES: u8 = 2;

static ON: AtomicU8 = AtomicU8::new(0);

/// Turns `hook` on or off.
pub(crate) fn set(hook: u8, on: bool) {
    match on {
        true => ON.fetch_or(hook, Relaxed),
        false => ON.fetch_and(!hook, Relaxed),
    };
}

/// Whether any hook is on: the one test the cheap calls pay.
#[inline(always)]
pub(crate) fn any() -> bool {
    ON.load(Relaxed) != 0
}
