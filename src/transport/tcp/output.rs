//! A served connection's output: small answers (a short get's bytes, a
//! quiet's token, an atomic's old value) are gathered and leave in one
//! `send` when the engine has read all that the socket holds, instead of
//! one `send` each (a flood of one-word gets cost a system call per word
//! at the target). Order is kept: an answer too large to gather is sent
//! straight from the heap only once the gathered ones have left.

use crate::syscall::cvt;
use std::io;
use std::os::fd::AsRawFd;

/// Answers up to this size are gathered.
pub(super) const GATHER_BYTES: usize = 1024;
/// The most gathered bytes a connection holds; past it the engine stops
/// serving that connection until they leave.
const LIMIT: usize = 64 * 1024;

pub(super) struct Output {
    bytes: Vec<u8>,
    /// Bytes of `bytes` already sent.
    sent: usize,
}

impl Output {
    pub(super) fn new() -> Output {
        Output {
            bytes: Vec::new(),
            sent: 0,
        }
    }

    /// Whether `len` more bytes may be gathered.
    pub(super) fn has_room(&self, len: usize) -> bool {
        len <= GATHER_BYTES && self.bytes.len() + len <= LIMIT
    }

    /// Gathers `len` bytes from `src`.
    ///
    /// # Safety
    /// `src` must be valid for `len` bytes of reads. No Rust reference to
    /// it is formed: it may be shared memory that others write meanwhile.
    pub(super) unsafe fn gather(&mut self, src: *const u8, len: usize) {
        self.bytes.reserve(len);
        let end = self.bytes.len();
        // SAFETY: room for `len` more bytes was reserved; `src` is valid for
        // `len` bytes of reads and cannot overlap this private buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(src, self.bytes.as_mut_ptr().add(end), len);
            self.bytes.set_len(end + len);
        }
    }

    /// Sends what is gathered, as far as the socket allows: `Ok(true)`
    /// once nothing is left.
    pub(super) fn flush(&mut self, socket: &impl AsRawFd) -> io::Result<bool> {
        while self.sent < self.bytes.len() {
            let left = &self.bytes[self.sent..];
            // SAFETY: `left` is valid for its length for the call.
            let sent = unsafe { libc::send(socket.as_raw_fd(), left.as_ptr().cast(), left.len(), libc::MSG_NOSIGNAL) };
            match cvt(sent) {
                Ok(n) => self.sent += n as usize,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        self.bytes.clear();
        self.sent = 0;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;

    #[test]
    fn gathered_answers_leave_in_order_in_one_flush() {
        let (tx, mut rx) = UnixStream::pair().unwrap();
        let mut out = Output::new();
        for word in [b"one ", b"two ", b"six "] {
            assert!(out.has_room(word.len()));
            // SAFETY: a valid 4-byte source.
            unsafe { out.gather(word.as_ptr(), word.len()) };
        }
        assert!(!out.has_room(GATHER_BYTES + 1), "a large answer is never gathered");
        assert!(out.flush(&tx).unwrap());
        let mut got = [0u8; 12];
        rx.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"one two six ");
    }
}
