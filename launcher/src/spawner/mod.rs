//! The spawner: a small process that starts a host's ranks, so that no
//! rank is forked from the process holding the job.
//!
//! rlaunch (or a host's proxy) holds 4 descriptors a rank, a dozen threads
//! and the job's tables; every fork of it copied all of that and every exec
//! closed it again, so starting N ranks cost N², 20% of a 2048-rank start
//! on one host. As Flux and PRRTE do, a small process spawns instead: it
//! is `rlaunch --spawner`, started once, single-threaded, holding stdin,
//! stdout, stderr and its socket. Per rank it makes the pipes, forks
//! itself (cheap: it is small) and execs, then hands the pipes' far ends
//! back over its socket (`SCM_RIGHTS`).
//!
//! The rank is forked with `CLONE_PARENT`, so its parent is rlaunch, not
//! the spawner: rlaunch reaps it and reads its exit status (the child
//! watcher's pidfd and `waitpid`), and the rank's parent-death signal
//! fires when rlaunch's main thread ends, as when rlaunch forked it.
//!
//! Invariant: the spawner is started from the main thread (the parent-death
//! signal follows the thread that forked), and is used from one thread.

mod fds;
pub mod serve;

use fds::{recv_with_fds, send_with_fds};
use oneside::syscall::cvt;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The descriptor the spawner finds its socket on.
const SOCKET_FD: i32 = 3;

/// One process to start.
#[derive(Serialize, Deserialize)]
pub struct Request {
    pub program: Vec<u8>,
    pub args: Vec<Vec<u8>>,
    /// Added to the spawner's own environment (rlaunch's, as it started).
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    pub cwd: Option<Vec<u8>>,
    /// Pipe the child's stdin (else it reads /dev/null).
    pub stdin: bool,
    /// The CPUs to pin the child to; empty: not pinned.
    pub cpus: Vec<usize>,
}

/// The spawner's answer; `Started` comes with the pipes' descriptors:
/// stdout, stderr, then stdin if it was piped.
#[derive(Serialize, Deserialize)]
pub enum Reply {
    Started {
        pid: i32,
    },
    /// `pid` is a child that ended before exec (0 if none was forked);
    /// rlaunch reaps it, being its parent.
    Failed {
        pid: i32,
        errno: i32,
        step: String,
    },
}

/// A started process: its pid and its pipes. Its parent is the caller.
pub struct Spawned {
    pub pid: i32,
    pub stdout: Option<File>,
    pub stderr: Option<File>,
    pub stdin: Option<File>,
}

/// rlaunch's end of the spawner.
pub struct Spawner {
    socket: OwnedFd,
    process: Child,
}

impl Spawner {
    /// Starts the spawner from this executable. Call it on the main thread.
    pub fn start() -> io::Result<Spawner> {
        let mut pair = [0; 2];
        // SAFETY: socketpair writes two descriptors into `pair`.
        cvt(unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        })?;
        // SAFETY: both descriptors are new and owned by nobody else.
        let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        let far = theirs.as_raw_fd();
        let mut command = Command::new("/proc/self/exe");
        command.arg0("rlaunch-spawner").arg("--spawner").stdin(Stdio::null());
        // SAFETY: between fork and exec the closure calls only
        // async-signal-safe functions (dup2, setpgid, prctl) and `cvt`,
        // which only reads errno.
        unsafe {
            command.pre_exec(move || {
                // dup2 leaves the copy without close-on-exec; a socket
                // that is already on that descriptor has it cleared.
                cvt(match far == SOCKET_FD {
                    true => libc::fcntl(far, libc::F_SETFD, 0),
                    false => libc::dup2(far, SOCKET_FD),
                })?;
                cvt(libc::setpgid(0, 0))?;
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                Ok(())
            });
        }
        let process = command.spawn()?;
        drop(theirs);
        Ok(Spawner { socket: ours, process })
    }

    /// Starts `program` with piped stdout and stderr (and stdin if asked),
    /// in its own process group, dying with this process's main thread.
    pub fn spawn(
        &self,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        cwd: Option<&Path>,
        stdin: bool,
        cpus: Option<&[usize]>,
    ) -> io::Result<Spawned> {
        let bytes = |s: &str| s.as_bytes().to_vec();
        let mut env: Vec<(Vec<u8>, Vec<u8>)> = env.iter().map(|(k, v)| (bytes(k), bytes(v))).collect();
        if cpus.is_some() {
            env.push((bytes(oneside::protocol::env::BOUND), bytes("1")));
        }
        let request = Request {
            program: program.as_os_str().as_bytes().to_vec(),
            args: args.iter().map(|a| bytes(a)).collect(),
            env,
            cwd: cwd.map(|c| c.as_os_str().as_bytes().to_vec()),
            stdin,
            cpus: cpus.unwrap_or_default().to_vec(),
        };
        let encoded = postcard::to_stdvec(&request).map_err(io::Error::other)?;
        send_with_fds(&self.socket, &encoded, &[])?;
        let mut buf = [0u8; 4096];
        let (len, mut fds) = recv_with_fds(&self.socket, &mut buf)?;
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the spawner process ended"));
        }
        match postcard::from_bytes::<Reply>(&buf[..len]).map_err(io::Error::other)? {
            Reply::Started { pid } if fds.len() == 2 + usize::from(stdin) => {
                let stdin = stdin.then(|| File::from(fds.pop().expect("counted")));
                let stderr = fds.pop().map(File::from);
                let stdout = fds.pop().map(File::from);
                Ok(Spawned {
                    pid,
                    stdout,
                    stderr,
                    stdin,
                })
            }
            Reply::Started { pid } => {
                // SAFETY: kill(2) on the process group the child made, and
                // waitpid on our own child, status discarded.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
                Err(io::Error::other(format!(
                    "the spawner sent {} descriptors for pid {pid}",
                    fds.len()
                )))
            }
            Reply::Failed { pid, errno, step } => {
                if pid > 0 {
                    // SAFETY: waitpid on our own child, status discarded.
                    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
                }
                let os = io::Error::from_raw_os_error(errno);
                Err(io::Error::new(os.kind(), format!("{step}: {os}")))
            }
        }
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // Closing the socket ends the spawner; then it is reaped.
        // SAFETY: shutdown on a descriptor we own.
        unsafe { libc::shutdown(self.socket.as_raw_fd(), libc::SHUT_RDWR) };
        let _ = self.process.wait();
    }
}
