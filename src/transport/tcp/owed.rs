//! Flow control on a TCP link: what the origin may leave in flight, and
//! how it sends without ever blocking while it holds what its peer needs.
//!
//! A peer's engine serves one connection's requests in order and sends
//! each answer before it reads the next request. An origin that kept
//! sending non-blocking gets without reading their answers would fill
//! both directions at once: its own receive buffer with answers, so the
//! engine stops reading, then the engine's receive buffer with requests,
//! so the origin's `send` blocks, and neither side moves again (a flood of
//! 10^6 one-word `get_nbi` died after 10 s: the link's user timeout took a
//! healthy peer, whose window stayed shut, for a dead one).
//!
//! Two rules keep every pattern moving:
//!
//! * **A window of owed answers** ([`Owed`]): a link leaves at most
//!   [`OWED_GETS`] gets and [`OWED_BYTES`] bytes of answers unread, well
//!   inside the receive buffer the kernel gives any socket, so the peer's
//!   engine always has room to answer and keeps reading requests. A get
//!   that would pass the window first reads the oldest answers; one larger
//!   than the whole window is done at once, as a blocking get.
//! * **Sending reads** ([`send_all`]): a send that finds the socket full
//!   reads the answers already there and serves this rank's own engine
//!   while it waits for room, instead of blocking in `send` (so two ranks
//!   flooding each other still serve each other).

use super::answer::read_answer;
use super::engine::Driver;
use super::input::recv_into;
use crate::backoff::Backoff;
use crate::syscall::cvt;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// The most non-blocking gets a link leaves unanswered.
pub(super) const OWED_GETS: usize = 1024;
/// The most answer bytes a link leaves unread. With [`OWED_GETS`]
/// requests of 24 bytes, both stay inside the smallest default buffers
/// (`tcp_rmem`'s 128 KiB, of which half is window).
pub(super) const OWED_BYTES: usize = 32 * 1024;

/// The destinations of the non-blocking gets whose answers are owed, in
/// the order the answers come. Answers are read in bulk into a staging
/// buffer and copied out, so a window of one-word gets costs a few
/// `recv`s, not one each.
pub(super) struct Owed {
    gets: VecDeque<(*mut u8, usize)>,
    /// Bytes of the oldest answer already read.
    front_done: usize,
    /// Answer bytes still to read.
    bytes: usize,
    stage: Box<[u8]>,
}

impl Owed {
    pub(super) fn new() -> Owed {
        Owed {
            gets: VecDeque::new(),
            front_done: 0,
            bytes: 0,
            stage: vec![0; OWED_BYTES].into_boxed_slice(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.gets.is_empty()
    }

    /// Whether a get of `len` more bytes fits in the window.
    pub(super) fn fits(&self, len: usize) -> bool {
        self.gets.len() < OWED_GETS && self.bytes + len <= OWED_BYTES
    }

    /// Notes a get whose answer, `len` bytes (at most [`OWED_BYTES`]), is
    /// to land at `dst`.
    pub(super) fn push(&mut self, dst: *mut u8, len: usize) {
        debug_assert!(len <= OWED_BYTES, "a get larger than the window is done at once");
        self.gets.push_back((dst, len));
        self.bytes += len;
    }

    /// Forgets every destination (the link broke: nothing is ever written
    /// into them).
    pub(super) fn clear(&mut self) {
        self.gets.clear();
        self.front_done = 0;
        self.bytes = 0;
    }

    /// Reads the oldest answers until at most half the window is in use,
    /// driving `driver` meanwhile: room for the next gets.
    pub(super) fn make_room(&mut self, stream: &TcpStream, peer: usize, driver: Option<&Driver>) -> io::Result<()> {
        let (mut count, mut bytes) = (self.gets.len(), self.bytes);
        let mut read = 0;
        let mut first = true;
        for &(_, len) in &self.gets {
            if count <= OWED_GETS / 2 && bytes <= OWED_BYTES / 2 {
                break;
            }
            let rest = if first { len - self.front_done } else { len };
            first = false;
            (count, bytes, read) = (count - 1, bytes - rest, read + rest);
        }
        self.read_exactly(read, stream, peer, driver)
    }

    /// Reads every owed answer.
    pub(super) fn read_all(&mut self, stream: &TcpStream, peer: usize, driver: Option<&Driver>) -> io::Result<()> {
        self.read_exactly(self.bytes, stream, peer, driver)?;
        // Zero-length gets owe nothing but their place.
        self.clear();
        Ok(())
    }

    /// Reads the next `len` owed bytes (at most the window), waiting for them.
    fn read_exactly(&mut self, len: usize, stream: &TcpStream, peer: usize, driver: Option<&Driver>) -> io::Result<()> {
        // SAFETY: the staging buffer is private and holds OWED_BYTES >= len.
        unsafe { read_answer(stream, peer, self.stage.as_mut_ptr(), len, driver) }?;
        self.scatter(len);
        Ok(())
    }

    /// Reads, without blocking, the owed answers that have arrived.
    fn read_arrived(&mut self, stream: &TcpStream) -> io::Result<()> {
        while self.bytes > 0 {
            // SAFETY: the staging buffer is private and holds OWED_BYTES >= bytes.
            match unsafe { recv_into(stream, self.stage.as_mut_ptr(), self.bytes, libc::MSG_DONTWAIT) } {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.scatter(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Copies the first `n` staged bytes to the oldest gets' destinations.
    fn scatter(&mut self, n: usize) {
        let mut from = 0;
        while from < n {
            let Some(&(dst, len)) = self.gets.front() else {
                break;
            };
            let take = (len - self.front_done).min(n - from);
            // SAFETY: `dst` is a non-blocking get's destination, valid for
            // `len` bytes of writes until its answer is read (`get_nbi`);
            // `from + take <= n`, all staged.
            unsafe { std::ptr::copy_nonoverlapping(self.stage.as_ptr().add(from), dst.add(self.front_done), take) };
            from += take;
            self.bytes -= take;
            self.front_done += take;
            if self.front_done == len {
                self.gets.pop_front();
                self.front_done = 0;
            }
        }
    }
}

/// Sends all of `slices` on the link to rank `peer`. While the socket is
/// full it reads the answers owed that have arrived and serves this
/// rank's engine, so the peer is never left unable to answer while this
/// rank waits for it to read.
pub(super) fn send_all(
    stream: &TcpStream,
    peer: usize,
    mut slices: &mut [IoSlice<'_>],
    owed: &mut Owed,
    driver: Option<&Driver>,
) -> io::Result<()> {
    let mut backoff = Backoff::new(driver.is_some_and(Driver::spin));
    let mut blocked = None;
    while !slices.is_empty() {
        match send_vectored(stream, slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                blocked.get_or_insert_with(|| crate::watch::blocked(crate::watch::Waiting::Answer { rank: peer }));
                owed.read_arrived(stream)?;
                if let Some(driver) = driver {
                    driver.drive();
                }
                backoff.pause_or_sleep(|| room_or_news(stream, !owed.is_empty(), driver));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sleeps until `stream` has room (or answers, when `answers`), or the
/// engine has news, at most a millisecond.
fn room_or_news(stream: &TcpStream, answers: bool, driver: Option<&Driver>) {
    let events = libc::POLLOUT | if answers { libc::POLLIN } else { 0 };
    let mut fds = [
        libc::pollfd {
            fd: stream.as_raw_fd(),
            events,
            revents: 0,
        },
        libc::pollfd {
            fd: driver.map_or(-1, Driver::news_fd),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: `fds` holds two valid pollfd entries for the call's
    // duration (poll skips a negative descriptor); an error or a timeout
    // just ends the sleep.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1) };
}

/// sendmsg(2) of `slices` without blocking and without SIGPIPE.
fn send_vectored(stream: &TcpStream, slices: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: a zeroed msghdr is valid (no name, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is ABI-compatible with iovec (std guarantees it on Unix).
    msg.msg_iov = slices.as_ptr().cast_mut().cast();
    msg.msg_iovlen = slices.len().min(libc::UIO_MAXIOV as usize) as _;
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: `msg` points at `slices`, valid for reads for the call.
    cvt(unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, flags) }).map(|n| n as usize)
}
