//! oneside's own threads (the TCP progress engine and flusher, the
//! libfabric progress thread, the watchdog) start here, so that a panic in
//! one ends the whole rank with a message naming it, instead of ending
//! only that thread. A rank whose progress thread is gone serves nobody:
//! its peers would wait on it until their stall limits, and a rank
//! waiting on its own engine would wait for ever. A rank that exits
//! without finalizing ends the job at once (rlaunch, and the other
//! launchers, see the exit), so the job ends with this message and
//! [`EXIT_CODE`].
//!
//! The process leaves with `_exit`: `exit` would run the C API's implicit
//! finalize, which waits for work this thread was to do.
//!
//! `ONESIDE_TEST_PANIC=<thread>` (the thread's role, such as `ofi
//! progress`) makes that thread panic on its first step, for the tests of
//! this path.

use std::panic::AssertUnwindSafe;
use std::thread::JoinHandle;

/// The exit code of a rank whose service thread panicked (`EX_SOFTWARE`:
/// an internal error).
pub const EXIT_CODE: i32 = 70;

/// Starts thread `name` of rank `rank`, whose `role` ("libfabric
/// progress") names it in the message if `body` panics.
pub fn spawn(
    name: String,
    rank: usize,
    role: &'static str,
    body: impl FnOnce() + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        let Err(payload) = std::panic::catch_unwind(AssertUnwindSafe(body)) else {
            return;
        };
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        eprintln!(
            "oneside: rank {rank}: the {role} thread failed ({what}); without it this rank serves no peer, \
             so it ends now with exit code {EXIT_CODE}, and the job with it. This is a bug in oneside: \
             please report this message and the panic's location above it"
        );
        // SAFETY: _exit ends the process at once; nothing after it runs.
        unsafe { libc::_exit(EXIT_CODE) }
    })
}

/// Panics if `ONESIDE_TEST_PANIC` names `role` (the module docs).
pub fn panic_if_asked(role: &str) {
    if std::env::var(crate::protocol::env::TEST_PANIC).is_ok_and(|asked| asked == role) {
        panic!("ONESIDE_TEST_PANIC={role}");
    }
}
