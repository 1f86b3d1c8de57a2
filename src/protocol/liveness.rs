//! How a silent peer is told from a slow one. Every TCP connection between
//! ranks, and between a rank (or a remote proxy) and rlaunch, sends
//! keepalive probes when idle and gives up on data nobody acknowledges, so
//! a connection whose other end went silent (a cut link, a host that froze
//! or lost power) fails within [`SILENCE`], rather than after TCP's
//! default of some 15 minutes, and whoever waits on it hears of it.
//!
//! Only the other host's silence is meant to count: a process that is
//! stopped, in a debugger or computing still has its kernel answer
//! keepalive probes. One case is not the host's: since Linux 5.5 the user
//! timeout also ends a connection whose receiver keeps its window shut for
//! that long, though it answers every probe. So no engine may leave a
//! window shut while its process lives: the TCP links bound what they
//! leave in flight and read while they wait to send
//! (`transport::tcp::owed`), and the engine reads each connection as far
//! as it goes. A rank that is stopped outright is rlaunch's to report
//! (within a few seconds, before this timeout).

use crate::syscall::cvt;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// How long a peer's host may stay silent before its connection fails.
pub const SILENCE: Duration = Duration::from_secs(10);

/// Why `host` ("its host", "the host of rank 2") is taken for silent,
/// said the same way by rlaunch and by a rank that notices first.
pub fn silent_host(host: &str) -> String {
    format!(
        "nothing heard from {host} for {} s (a cut or failed link, or a host that is down or frozen)",
        SILENCE.as_secs()
    )
}

/// Idle seconds before the first probe, seconds between probes, and how
/// many unanswered probes end the connection: 2 + 8 x 1 = 10 s.
const IDLE: libc::c_int = 2;
const INTERVAL: libc::c_int = 1;
const PROBES: libc::c_int = 8;

/// Makes `socket` fail once its peer's host has been silent for
/// [`SILENCE`]: keepalive probes while idle, and a user timeout on
/// unacknowledged data.
pub fn watch(socket: &impl AsRawFd) -> io::Result<()> {
    let fd = socket.as_raw_fd();
    let user_timeout = SILENCE.as_millis() as libc::c_int;
    let options = [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, IDLE),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, INTERVAL),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, PROBES),
        (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, user_timeout),
    ];
    for (level, name, value) in options {
        // SAFETY: setsockopt reads one c_int from a local for the call.
        cvt(unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                std::ptr::from_ref(&value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(fd: i32, level: libc::c_int, name: libc::c_int) -> libc::c_int {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into a local.
        let got = unsafe { libc::getsockopt(fd, level, name, std::ptr::from_mut(&mut value).cast(), &mut len) };
        assert_eq!(got, 0);
        value
    }

    #[test]
    fn a_watched_socket_gives_up_after_the_silence() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        watch(&stream).unwrap();
        let fd = stream.as_raw_fd();
        assert_eq!(option(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 1);
        assert_eq!(option(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT), 10_000);
        let probing = option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE)
            + option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL) * option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT);
        assert_eq!(probing as u64, SILENCE.as_secs());
    }
}
