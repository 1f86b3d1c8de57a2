//! Listening sockets that thousands of peers dial at once: the bootstrap
//! service every rank registers with, and each rank's TCP engine, which
//! every rank of a job may reach in the same instant (an all-to-one atomic
//! or a gather to rank 0).
//!
//! `listen(2)`'s usual backlog of 128 is far too short for that. When the
//! queue overflows, Linux answers with SYN cookies: the dialling side thinks
//! it is connected, the listener drops its ACK, and the dialler then waits
//! for a handshake that never comes until its read times out (768 ranks
//! dialling rank 0 across 4 hosts did so). So every listener here asks for
//! the largest queue the kernel allows (it caps the request at
//! `net.core.somaxconn`, 4096 by default), and drains it in one loop.

use crate::syscall::cvt;
use mio::net::{TcpListener, TcpStream};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// The accept queue asked for; the kernel lowers it to `net.core.somaxconn`.
const BACKLOG: libc::c_int = 65535;

/// Binds a non-blocking listener on `addr` with the widest accept queue
/// the kernel allows.
pub fn bind_wide(addr: SocketAddr) -> io::Result<TcpListener> {
    let listener = TcpListener::bind(addr)?;
    // SAFETY: `listener` owns a bound, listening socket for the call's
    // duration; calling listen again on it only changes its backlog.
    cvt(unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) })?;
    Ok(listener)
}

/// Accepts every queued connection and hands each to `take`. A connection
/// reset while queued, or an interrupted call, must not end the loop: the
/// listeners are edge-triggered, so connections left in the queue would
/// never be accepted. Any other error (the queue is empty, or the process
/// is out of descriptors) ends it.
pub fn accept_queued(listener: &TcpListener, mut take: impl FnMut(TcpStream)) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => take(stream),
            Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpStream as StdStream};
    use std::time::Duration;

    /// 300 connections queue without one accept: more than the default
    /// backlog of 128 would hold (the kernel would drop the later SYNs, and
    /// those connects would time out), and every one is accepted afterwards.
    #[test]
    fn a_wide_queue_holds_hundreds_of_dialers() {
        let listener = bind_wide(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let dial = |_| StdStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
        let dialed: Vec<StdStream> = (0..300).map(dial).collect();
        let mut accepted = 0;
        accept_queued(&listener, |_| accepted += 1);
        assert_eq!(accepted, dialed.len());
    }
}
