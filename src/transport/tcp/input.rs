//! A served connection's input: one `recv` takes in as many requests as
//! the socket holds (a batch of 64 puts is one read, not 128), and the
//! request machine (`serve`) takes its headers and payloads from there. A
//! payload of [`DIRECT_BYTES`] or more that finds nothing buffered is
//! received straight into the heap instead, so large puts are not copied
//! twice.
//!
//! A read that came back short emptied the socket, and the engine's epoll
//! set is edge-triggered: anything that arrives later is a new event. So
//! within one serving of an event ([`Input::new_event`] starts one), once
//! the bytes of a short read are used up, the next read reports
//! `WouldBlock` without asking the kernel again, saving the `recv` that
//! would only have said so. The next event always asks: it may be the one
//! that reports what arrived after the short read.

use crate::syscall::cvt;
use std::io;
use std::os::fd::AsRawFd;

/// What one read may take in. A batch (up to 64 KiB) arrives in a few reads.
const CAPACITY: usize = 16 * 1024;
/// A payload at least this long, with nothing buffered, skips the buffer.
pub(super) const DIRECT_BYTES: usize = 4096;

pub(super) struct Input {
    bytes: Box<[u8]>,
    /// The buffered bytes not yet taken are `bytes[start..end]`.
    start: usize,
    end: usize,
    /// The last `recv` came back short: the socket had nothing more.
    drained: bool,
}

impl Input {
    pub(super) fn new() -> Input {
        Input {
            bytes: vec![0; CAPACITY].into_boxed_slice(),
            start: 0,
            end: 0,
            drained: false,
        }
    }

    /// Starts serving a new event: the next read with nothing buffered
    /// asks the socket, whatever the last one found.
    pub(super) fn new_event(&mut self) {
        self.drained = false;
    }

    /// Moves up to `len` bytes into `dst`: buffered ones first; with none
    /// buffered, a long read goes straight from the socket into `dst` and a
    /// short one refills the buffer. `Ok(0)` means the peer closed the
    /// connection; `WouldBlock` that nothing is there yet.
    ///
    /// # Safety
    /// `dst` must be valid for `len` bytes of writes. No Rust reference to
    /// it is formed: it may be shared memory that others read meanwhile.
    pub(super) unsafe fn read(&mut self, socket: &impl AsRawFd, dst: *mut u8, len: usize) -> io::Result<usize> {
        if self.start == self.end {
            if std::mem::take(&mut self.drained) {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            if len >= DIRECT_BYTES {
                // SAFETY: our caller's destination, valid for `len` bytes.
                let got = unsafe { recv_into(socket, dst, len, 0) }?;
                self.drained = got < len;
                return Ok(got);
            }
            // SAFETY: the whole buffer is ours and free.
            let got = unsafe { recv_into(socket, self.bytes.as_mut_ptr(), CAPACITY, 0) }?;
            (self.start, self.end, self.drained) = (0, got, got < CAPACITY);
        }
        let n = len.min(self.end - self.start);
        // SAFETY: `n` bytes are buffered from `start`; `dst` is valid for
        // `len >= n` bytes and cannot overlap this private buffer.
        unsafe { std::ptr::copy_nonoverlapping(self.bytes.as_ptr().add(self.start), dst, n) };
        self.start += n;
        Ok(n)
    }
}

/// recv(2) into raw memory: no Rust reference to the (shared) destination
/// is formed.
///
/// # Safety
/// `dst` must be valid for `len` bytes of writes.
pub(super) unsafe fn recv_into(socket: &impl AsRawFd, dst: *mut u8, len: usize, flags: i32) -> io::Result<usize> {
    // SAFETY: our caller passes a destination valid for `len` bytes of writes.
    cvt(unsafe { libc::recv(socket.as_raw_fd(), dst.cast(), len, flags) }).map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    fn read(input: &mut Input, socket: &UnixStream, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        // SAFETY: `out` is valid for `len` bytes.
        let n = unsafe { input.read(socket, out.as_mut_ptr(), len) }.unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn short_reads_come_from_one_refill_in_order() {
        let (mut tx, rx) = UnixStream::pair().unwrap();
        tx.write_all(b"headerpayloadtail").unwrap();
        let mut input = Input::new();
        assert_eq!(read(&mut input, &rx, 6), b"header");
        assert_eq!(read(&mut input, &rx, 7), b"payload");
        assert_eq!(
            read(&mut input, &rx, 10),
            b"tail",
            "a read never goes past what is buffered"
        );
        tx.write_all(b"more").unwrap();
        // SAFETY: a valid one-byte destination.
        let after_short = unsafe { input.read(&rx, [0u8; 1].as_mut_ptr(), 1) };
        assert_eq!(
            after_short.unwrap_err().kind(),
            io::ErrorKind::WouldBlock,
            "a short read emptied the socket: what comes later is a new event"
        );
        input.new_event();
        assert_eq!(
            read(&mut input, &rx, 4),
            b"more",
            "the next event's read asks the socket"
        );
    }

    #[test]
    fn a_long_read_with_nothing_buffered_skips_the_buffer() {
        let (mut tx, rx) = UnixStream::pair().unwrap();
        let payload: Vec<u8> = (0..DIRECT_BYTES).map(|i| i as u8).collect();
        tx.write_all(&payload).unwrap();
        let mut input = Input::new();
        assert_eq!(read(&mut input, &rx, DIRECT_BYTES), payload);
        assert_eq!(input.start, input.end, "nothing was buffered");
    }

    #[test]
    fn a_closed_peer_reads_as_zero() {
        let (tx, rx) = UnixStream::pair().unwrap();
        drop(tx);
        assert!(read(&mut Input::new(), &rx, 8).is_empty());
    }
}
