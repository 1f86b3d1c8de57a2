//! Messages with descriptors over a Unix socket (`SCM_RIGHTS`): the
//! spawner's replies carry the pipes of the process it started.

use oneside::syscall::cvt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// At most this many descriptors travel with one message.
const MAX_FDS: usize = 4;

/// Sends `bytes` as one message, with `fds` attached.
pub fn send_with_fds(socket: &impl AsRawFd, bytes: &[u8], fds: &[RawFd]) -> io::Result<()> {
    assert!(fds.len() <= MAX_FDS, "at most {MAX_FDS} descriptors a message");
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut control = [0u64; 8]; // CMSG_SPACE(4 * 4) rounded up, aligned for cmsghdr
                                 // SAFETY: a zeroed msghdr is valid; it points at `iov` and `control`,
                                 // which outlive the sendmsg call, and the cmsg macros stay within
                                 // `control` (sized for MAX_FDS descriptors).
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            let data_len = std::mem::size_of_val(fds) as u32;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(data_len) as usize;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(data_len) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast::<RawFd>(), fds.len());
        }
        loop {
            match cvt(libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Receives one message into `buf`: its length (0 at end of stream) and
/// the descriptors that came with it, now ours (close-on-exec).
pub fn recv_with_fds(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    // SAFETY: as in `send_with_fds`; recvmsg writes at most `buf.len()`
    // bytes and `msg_controllen` bytes of control data, and every
    // descriptor it delivers is new and ours to own.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        let len = loop {
            match cvt(libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC)) {
                Ok(n) => break n as usize,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if msg.msg_flags & libc::MSG_TRUNC != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a message longer than its buffer",
            ));
        }
        Ok((len, fds))
    }
}

#[cfg(test)]
mod tests {
    use super::{recv_with_fds, send_with_fds};
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixDatagram;

    #[test]
    fn descriptors_travel_with_their_message() {
        let (a, b) = UnixDatagram::pair().unwrap();
        let (mut reader, writer) = std::io::pipe().unwrap();
        send_with_fds(&a, b"pipes", &[reader.as_raw_fd(), writer.as_raw_fd()]).unwrap();
        let mut buf = [0u8; 16];
        let (len, fds) = recv_with_fds(&b, &mut buf).unwrap();
        assert_eq!(&buf[..len], b"pipes");
        assert_eq!(fds.len(), 2);
        let mut far_writer = std::fs::File::from(fds.into_iter().nth(1).unwrap());
        far_writer.write_all(b"through").unwrap();
        drop((far_writer, writer));
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        assert_eq!(text, "through");
        send_with_fds(&a, b"none", &[]).unwrap();
        assert_eq!(recv_with_fds(&b, &mut buf).unwrap().1.len(), 0);
    }
}
