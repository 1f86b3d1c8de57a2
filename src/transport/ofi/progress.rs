//! The progress thread of a provider with manual data progress (rxm's
//! software atomics, rxd, shm): while the rank computes without calling
//! oneside, its peers' operations on it still need someone to drive the
//! provider. The thread reads the CQ under the transport's lock every
//! [`PERIOD`] and sleeps in between, so an idle rank costs little; the
//! rank's own waits drive progress themselves. It stops when dropped.

use super::Ofi;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sleep between two polls.
pub const PERIOD: Duration = Duration::from_micros(500);

/// The running thread; stops and joins in `Drop`.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts polling `ofi` (rank `rank`, for the thread's name).
    pub fn start(rank: usize, ofi: Arc<Mutex<Ofi>>) -> std::io::Result<Progress> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("oneside-ofi-{rank}"))
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    if let Ok(mut ofi) = ofi.try_lock() {
                        // An error entry stays in the CQ for the rank's own
                        // wait, whose operation it belongs to.
                        ofi.drive();
                    }
                    std::thread::sleep(PERIOD);
                }
            })?;
        Ok(Progress {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
