//! Reading a peer's answer (a get's bytes, a fetching atomic's old value,
//! a quiet's acknowledgement) while this rank's own engine keeps serving.
//!
//! A rank waiting for an answer polls its socket and, between polls,
//! drives its own progress engine, as it does in every other local wait
//! (see `engine`): two ranks that quiet each other at once (every barrier
//! after puts) then answer each other without waking either progress
//! thread. Once the wait turns into naps (see `backoff`) it gives the
//! engine back and blocks in `recv` instead, so a rank idle in a long get
//! does not poll for ever.

use super::engine::Driver;
use crate::backoff::Backoff;
use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// Reads exactly `len` bytes from `stream` into `dst`, driving `driver`
/// while none are there. No Rust reference to the destination is formed:
/// it may be a non-blocking get's buffer or shared memory.
///
/// # Safety
/// `dst` must be valid for `len` bytes of writes, and nothing else may
/// access those bytes during the call.
pub(super) unsafe fn read_answer(
    stream: &TcpStream,
    dst: *mut u8,
    len: usize,
    driver: Option<&Driver>,
) -> io::Result<()> {
    let Some(driver) = driver else {
        // SAFETY: passed on from our caller.
        return unsafe { read_blocking(stream, dst, len) };
    };
    let mut done = 0;
    let mut backoff = Backoff::new(driver.spin());
    let mut driving = None;
    while done < len {
        // SAFETY: `dst + done .. dst + len` is inside our caller's destination.
        match unsafe { recv(stream, dst.add(done), len - done, libc::MSG_DONTWAIT) } {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if backoff.napping() {
                    drop(driving);
                    // SAFETY: as above.
                    return unsafe { read_blocking(stream, dst.add(done), len - done) };
                }
                driving.get_or_insert_with(|| driver.start_driving());
                driver.drive();
                backoff.pause();
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `read_exact` into raw memory, blocking in `recv`.
///
/// # Safety
/// As [`read_answer`].
unsafe fn read_blocking(stream: &TcpStream, dst: *mut u8, len: usize) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        // SAFETY: `dst + done .. dst + len` is inside our caller's destination.
        match unsafe { recv(stream, dst.add(done), len - done, 0) } {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One `recv(2)` into raw memory.
///
/// # Safety
/// `dst` must be valid for `len` bytes of writes.
unsafe fn recv(stream: &TcpStream, dst: *mut u8, len: usize, flags: i32) -> io::Result<usize> {
    // SAFETY: the caller passes a destination valid for `len` bytes.
    let n = unsafe { libc::recv(stream.as_raw_fd(), dst.cast(), len, flags) };
    match n {
        n if n < 0 => Err(io::Error::last_os_error()),
        n => Ok(n as usize),
    }
}
