//! One event loop for every process started on this host (by rlaunch, or by
//! a proxy on another host): it reads their stdout and stderr into lines and
//! reaps them through pidfds, handing both to one sink.
//!
//! A thread per pipe and per child cost three threads a rank, and forking
//! from a parent with thousands of thread stacks made spawning quadratic.
//! Here the watcher is one thread whatever the rank count.
//!
//! Invariant: a child's `Exited` comes after every line it wrote before it
//! ended (its pipes are drained when its pidfd fires); lines written later
//! by a grandchild that holds the pipe still arrive, after the exit.

use super::output::Stream;
use super::report::Ending;
use crate::spawner::Spawned;
use crossbeam::channel::{self, Receiver, Sender};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use oneside::syscall::cvt;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the watcher reports.
pub enum ChildEvent<'a> {
    /// One line, newline included (added to a last line that lacks one).
    Line { rank: u32, stream: Stream, line: &'a [u8] },
    /// The child ended; its output so far has been reported.
    Exited { rank: u32, pid: i32, ending: Ending },
}

/// The handle that adds children to the loop and waits for it to finish.
pub struct Watcher {
    add: Sender<Request>,
    waker: Arc<Waker>,
    thread: JoinHandle<()>,
}

enum Request {
    Watch {
        rank: u32,
        child: Spawned,
        pidfd: OwnedFd,
    },
    /// No more children will come: end when the last one has ended.
    Close,
}

const WAKER: Token = Token(usize::MAX);

impl Watcher {
    /// Starts the loop; `sink` runs on its thread for every event.
    pub fn start(sink: impl FnMut(ChildEvent) + Send + 'static) -> io::Result<Watcher> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let (add, requests) = channel::unbounded();
        let thread = std::thread::Builder::new()
            .name("child-watcher".into())
            .spawn(move || Watch::new(poll, requests).run(sink))?;
        Ok(Watcher { add, waker, thread })
    }

    /// Hands `child`, a child of this process, and its pipes to the loop.
    pub fn watch(&self, rank: u32, child: Spawned) -> io::Result<()> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor or -1; it touches no memory of ours.
        let fd = cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, child.pid as libc::pid_t, 0) })?;
        // SAFETY: `fd` is a descriptor pidfd_open just returned, owned by nobody else.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        let _ = self.add.send(Request::Watch { rank, child, pidfd });
        self.waker.wake()
    }

    /// Waits until every watched child has ended and its pipes have closed.
    pub fn finish(self) {
        let _ = self.add.send(Request::Close);
        let _ = self.waker.wake();
        let _ = self.thread.join();
    }
}

/// One child's pipes and pidfd, while any is open.
struct Watched {
    rank: u32,
    pid: i32,
    pipes: [Option<Pipe>; 2],
    pidfd: Option<OwnedFd>,
}

struct Pipe {
    stream: Stream,
    reader: Box<dyn ReadFd>,
    pending: Vec<u8>,
}

trait ReadFd: Read + AsRawFd + Send {}
impl<T: Read + AsRawFd + Send> ReadFd for T {}

struct Watch {
    poll: Poll,
    requests: Receiver<Request>,
    children: Vec<Option<Watched>>,
    live: usize,
    closing: bool,
}

/// Tokens: child index × 3 + (0 stdout, 1 stderr, 2 pidfd).
const PIDFD: usize = 2;

impl Watch {
    fn new(poll: Poll, requests: Receiver<Request>) -> Watch {
        Watch {
            poll,
            requests,
            children: Vec::new(),
            live: 0,
            closing: false,
        }
    }

    fn run(mut self, mut sink: impl FnMut(ChildEvent)) {
        let mut events = Events::with_capacity(256);
        while !(self.closing && self.live == 0) {
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                eprintln!("rlaunch: the output loop failed ({e}); rank output is lost from here on");
                return;
            }
            for event in events.iter() {
                match event.token() {
                    WAKER => self.take_requests(),
                    Token(t) => self.serve(t / 3, t % 3, &mut sink),
                }
            }
        }
    }

    fn take_requests(&mut self) {
        while let Ok(request) = self.requests.try_recv() {
            match request {
                Request::Watch { rank, child, pidfd } => self.add(rank, child, pidfd),
                Request::Close => self.closing = true,
            }
        }
    }

    fn add(&mut self, rank: u32, child: Spawned, pidfd: OwnedFd) {
        let index = self.children.len();
        let stdout = child.stdout.map(|p| Box::new(p) as Box<dyn ReadFd>);
        let stderr = child.stderr.map(|p| Box::new(p) as Box<dyn ReadFd>);
        let mut pipes = [None, None];
        for (slot, (reader, stream)) in [(stdout, Stream::Stdout), (stderr, Stream::Stderr)]
            .into_iter()
            .enumerate()
        {
            let Some(reader) = reader else { continue };
            set_nonblocking(reader.as_raw_fd());
            let fd = reader.as_raw_fd();
            if self
                .poll
                .registry()
                .register(&mut SourceFd(&fd), Token(index * 3 + slot), Interest::READABLE)
                .is_ok()
            {
                pipes[slot] = Some(Pipe {
                    stream,
                    reader,
                    pending: Vec::new(),
                });
            }
        }
        let fd = pidfd.as_raw_fd();
        let registered =
            self.poll
                .registry()
                .register(&mut SourceFd(&fd), Token(index * 3 + PIDFD), Interest::READABLE);
        if let Err(e) = registered {
            eprintln!("rlaunch: cannot watch rank {rank}'s exit ({e})");
        }
        self.children.push(Some(Watched {
            rank,
            pid: child.pid,
            pipes,
            pidfd: Some(pidfd),
        }));
        self.live += 1;
    }

    fn serve(&mut self, index: usize, what: usize, sink: &mut impl FnMut(ChildEvent)) {
        let Some(Some(child)) = self.children.get_mut(index) else {
            return;
        };
        if what == PIDFD {
            let Some(ending) = reap(child.pid) else { return };
            if let Some(fd) = child.pidfd.take() {
                let _ = self.poll.registry().deregister(&mut SourceFd(&fd.as_raw_fd()));
            }
            for slot in 0..2 {
                drain(&self.poll, child, slot, sink);
            }
            sink(ChildEvent::Exited {
                rank: child.rank,
                pid: child.pid,
                ending,
            });
        } else {
            drain(&self.poll, child, what, sink);
        }
        if child.pidfd.is_none() && child.pipes.iter().all(Option::is_none) {
            self.children[index] = None;
            self.live -= 1;
        }
    }
}

/// Reads one pipe until it would block, reporting whole lines; at end of
/// file reports the rest and closes the pipe.
fn drain(poll: &Poll, child: &mut Watched, slot: usize, sink: &mut impl FnMut(ChildEvent)) {
    let rank = child.rank;
    let Some(pipe) = child.pipes[slot].as_mut() else {
        return;
    };
    let mut chunk = [0u8; 64 * 1024];
    let open = loop {
        match pipe.reader.read(&mut chunk) {
            Ok(0) => break false,
            Ok(n) => {
                pipe.pending.extend_from_slice(&chunk[..n]);
                let mut start = 0;
                while let Some(end) = pipe.pending[start..].iter().position(|&b| b == b'\n') {
                    let stop = start + end + 1;
                    sink(ChildEvent::Line {
                        rank,
                        stream: pipe.stream,
                        line: &pipe.pending[start..stop],
                    });
                    start = stop;
                }
                pipe.pending.drain(..start);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
            Err(_) => break false,
        }
    };
    if open {
        return;
    }
    if !pipe.pending.is_empty() {
        pipe.pending.push(b'\n');
        sink(ChildEvent::Line {
            rank,
            stream: pipe.stream,
            line: &pipe.pending,
        });
    }
    let _ = poll.registry().deregister(&mut SourceFd(&pipe.reader.as_raw_fd()));
    child.pipes[slot] = None;
}

/// Collects `pid`'s status if it has ended.
fn reap(pid: i32) -> Option<Ending> {
    let mut status = 0;
    // SAFETY: waitpid writes the status into our local; WNOHANG never blocks.
    let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    match reaped {
        0 => None,
        p if p == pid => Some(Ending::from_status(ExitStatus::from_raw(status))),
        // Already reaped elsewhere, or not our child: we cannot know its status.
        _ => Some(Ending::Code(255)),
    }
}

fn set_nonblocking(fd: i32) {
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}
