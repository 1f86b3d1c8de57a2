//! The connection to a PMI wire server: the inherited socket `PMI_FD`
//! (Slurm, Hydra, Flux) or a TCP connection to `PMI_PORT` (Hydra's
//! `-pmi-port`), with the buffered reads both PMI-1 lines and PMI-2 frames
//! need. The server only ever answers a request, so nothing is read ahead
//! of the reply asked for: a connection shared with the process's own MPI
//! library (see `wire.rs`) is left exactly as that library expects it.

use crate::syscall::cvt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
#[cfg(test)]
use std::os::fd::AsRawFd;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The longest reply line a PMI-1 server sends that we accept (a value of
/// up to 1024 characters and its command).
pub(super) const MAX_LINE: usize = 4096;

/// Where the server is.
pub(crate) enum PmiSocket {
    /// An inherited socket.
    Fd(UnixStream),
    /// `host:port`, connected.
    Port(TcpStream),
}

/// A link and the bytes read from it but not yet consumed.
pub(super) struct Conn {
    link: PmiSocket,
    inbox: Vec<u8>,
}

impl Conn {
    pub(super) fn new(link: PmiSocket, timeout: Duration) -> io::Result<Conn> {
        match &link {
            PmiSocket::Fd(s) => {
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
            }
            PmiSocket::Port(s) => {
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                s.set_nodelay(true)?;
            }
        }
        Ok(Conn {
            link,
            inbox: Vec::new(),
        })
    }

    /// Writes all of `bytes` (in one write when the kernel takes it: Slurm's
    /// agent blocks on partial messages).
    pub(super) fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.link {
            PmiSocket::Fd(s) => s.write_all(bytes),
            PmiSocket::Port(s) => s.write_all(bytes),
        }
    }

    /// One reply line, without its `\n`.
    pub(super) fn read_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(end) = self.inbox.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.inbox.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            if self.inbox.len() > MAX_LINE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a reply line is longer than {MAX_LINE} bytes"),
                ));
            }
            self.fill()?;
        }
    }

    /// Reads more of the reply into the inbox; end of stream is an error.
    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 1024];
        loop {
            let n = match &mut self.link {
                PmiSocket::Fd(s) => s.read(&mut chunk),
                PmiSocket::Port(s) => s.read(&mut chunk),
            };
            match n {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    self.inbox.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Hands the inherited socket to the process's MPI, which came after
    /// us and talks on it too: from now on we talk on a duplicate, and the
    /// original is never closed by us. A `PMI_PORT` connection is ours alone.
    pub(super) fn share(&mut self) -> io::Result<()> {
        let PmiSocket::Fd(own) = &self.link else {
            return Ok(());
        };
        let copy = own.try_clone()?;
        let PmiSocket::Fd(original) = std::mem::replace(&mut self.link, PmiSocket::Fd(copy)) else {
            unreachable!("the link was an inherited socket just above")
        };
        // MPI's now: left open.
        let _ = std::os::fd::IntoRawFd::into_raw_fd(original);
        Ok(())
    }

    /// The socket, for tests.
    #[cfg(test)]
    pub(super) fn raw_fd(&self) -> RawFd {
        match &self.link {
            PmiSocket::Fd(s) => s.as_raw_fd(),
            PmiSocket::Port(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.inbox.is_empty() {
            self.fill()?;
        }
        let n = buf.len().min(self.inbox.len());
        buf[..n].copy_from_slice(&self.inbox[..n]);
        self.inbox.drain(..n);
        Ok(n)
    }
}

/// Takes the inherited socket `fd`. When the process's MPI library uses it
/// too (`shared`), a duplicate is taken instead, so closing ours leaves
/// theirs open. Either way ours is closed at exec, so programs the rank
/// starts never inherit the PMI connection.
///
/// # Safety
/// When not `shared`, `fd` must be owned by nobody else: the link takes it.
pub(super) unsafe fn inherited(fd: RawFd, shared: bool) -> Result<PmiSocket, String> {
    check_socket(fd)?;
    let own = match shared {
        // SAFETY: dup of an open fd; the copy is ours alone.
        true => cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) })
            .map_err(|e| format!("cannot duplicate it: {e}"))?,
        false => fd,
    };
    // SAFETY: plain fcntl on an fd we own.
    cvt(unsafe { libc::fcntl(own, libc::F_SETFD, libc::FD_CLOEXEC) })
        .map_err(|e| format!("cannot set FD_CLOEXEC: {e}"))?;
    // SAFETY: `own` is an open socket nobody else owns (a fresh duplicate,
    // or the caller's guarantee).
    Ok(PmiSocket::Fd(unsafe { UnixStream::from_raw_fd(own) }))
}

fn check_socket(fd: RawFd) -> Result<(), String> {
    if fd < 0 {
        return Err("not a file descriptor".into());
    }
    // SAFETY: `stat` is plain old data, so all-zero is a valid value, and
    // fstat only writes into it; a closed fd just makes it fail.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable stat; a closed fd only makes it fail.
    cvt(unsafe { libc::fstat(fd, &mut st) }).map_err(|e| format!("not an open file descriptor ({e})"))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err("not a socket".into());
    }
    Ok(())
}
