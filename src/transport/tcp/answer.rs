//! Reading a peer's answer (a get's bytes, a fetching atomic's old value,
//! a quiet's acknowledgement) while this rank's own engine keeps serving.
//!
//! A rank waiting for an answer polls its socket and, between polls,
//! drives its own progress engine, as it does in every other local wait
//! (see `engine`): two ranks that quiet each other at once (every barrier
//! after puts) then answer each other without waking either progress
//! thread. A rank that may not spin sleeps in `poll(2)` on its socket and
//! the engine's connection set after 32 yields, so threads waiting for
//! answers leave the cores to the threads that have work (2 threads of
//! fetch-adds on private contexts: 64-76K -> 75-79K msg/s). Once the wait
//! turns into naps (see `backoff`) it gives the engine back and blocks in
//! `recv` instead, so a rank idle in a long get does not poll for ever.

use super::engine::Driver;
use super::input::recv_into;
use crate::backoff::Backoff;
use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// Reads exactly `len` bytes from `stream` (the link to rank `peer`) into
/// `dst`, driving `driver` while none are there (blocking in `recv`
/// without one). A wait that lasts is shown to the watchdog as a wait for
/// `peer`'s answer, so rlaunch can name a peer that went silent. No Rust
/// reference to the destination is formed: it may be a non-blocking get's
/// buffer or shared memory.
///
/// # Safety
/// `dst` must be valid for `len` bytes of writes, and nothing else may
/// access those bytes during the call.
pub(super) unsafe fn read_answer(
    stream: &TcpStream,
    peer: usize,
    dst: *mut u8,
    len: usize,
    driver: Option<&Driver>,
) -> io::Result<()> {
    let mut flags = match driver {
        Some(_) => libc::MSG_DONTWAIT,
        None => 0,
    };
    let mut backoff =
        Backoff::new(driver.is_some_and(Driver::spin)).keep_polling(driver.is_some_and(Driver::keeps_polling));
    let mut driving = None;
    let mut blocked = None;
    let mut done = 0;
    while done < len {
        // SAFETY: `dst + done .. dst + len` is inside our caller's destination.
        match recv_into(stream, unsafe { dst.add(done) }, len - done, flags) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let Some(driver) = driver else {
                    return Err(e);
                };
                blocked.get_or_insert_with(|| crate::watch::blocked(crate::watch::Waiting::Answer { rank: peer }));
                if backoff.napping() {
                    // Shown to the watchdog before the blocking reads.
                    crate::watch::idle();
                    driving = None;
                    flags = 0;
                    continue;
                }
                driving.get_or_insert_with(|| driver.start_driving());
                driver.drive();
                backoff.pause_or_sleep(|| driver.sleep_until_news(Some(stream.as_raw_fd())));
            }
            Err(e) => return Err(e),
        }
    }
    drop(driving);
    drop(blocked);
    Ok(())
}
