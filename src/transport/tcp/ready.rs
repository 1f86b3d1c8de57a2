//! The engine's set of open connections: an edge-triggered epoll set that
//! says which connections have become readable or writable. Whichever
//! thread holds the engine's connection table takes events from it and
//! serves those connections, so an event taken is an event served.
//!
//! The set's own descriptor sits in the progress thread's mio loop, so
//! the progress thread wakes when any connection has news; a thread that
//! waits and drives the engine instead removes it from that loop for the
//! length of its wait (`engine::Driving`) and polls the set itself.

use crate::syscall::cvt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Events taken from the set in one call.
pub(super) const BATCH: usize = 16;

pub(super) struct ReadySet {
    epoll: OwnedFd,
}

impl ReadySet {
    pub(super) fn new() -> io::Result<ReadySet> {
        // SAFETY: plain system call; the result is checked before use.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(ReadySet {
            // SAFETY: `fd` is a fresh descriptor that nothing else owns.
            epoll: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Watches connection `index`'s socket `fd` for input, room for
    /// output and hang-ups, edge-triggered.
    pub(super) fn add(&self, fd: RawFd, index: usize) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: index as u64,
        };
        // SAFETY: `event` is a valid epoll_event for the call's duration.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) }).map(drop)
    }

    pub(super) fn remove(&self, fd: RawFd) {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL; a descriptor
        // that is not in the set is a harmless error.
        unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }

    /// Takes up to [`BATCH`] connections with news, without blocking, and
    /// returns their indices.
    pub(super) fn take<'a>(&self, into: &'a mut [usize; BATCH]) -> &'a [usize] {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; BATCH];
        // SAFETY: `events` has room for the BATCH entries the call may fill.
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), BATCH as i32, 0) };
        let n = n.max(0) as usize;
        for (slot, event) in into.iter_mut().zip(&events[..n]) {
            *slot = event.u64 as usize;
        }
        &into[..n]
    }
}

impl AsRawFd for ReadySet {
    fn as_raw_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }
}
