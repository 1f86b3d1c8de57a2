//! The spawner process (`rlaunch --spawner`): reads [`Request`]s from its
//! socket, starts each process and answers with its pid and pipes, until
//! the socket closes.
//!
//! Everything a child needs (argument and environment arrays, the CPU set)
//! is built before the fork; between fork and exec the child calls only
//! async-signal-safe functions. A failure there travels back through a
//! close-on-exec pipe as the errno and the step that failed.

use super::fds::{recv_with_fds, send_with_fds};
use super::{Reply, Request, SOCKET_FD};
use oneside::syscall::cvt;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

/// Runs the spawner until rlaunch closes its socket; the exit status.
pub fn run() -> u8 {
    // SAFETY: rlaunch placed the socket on this descriptor before exec;
    // nothing else in this process owns it. PR_SET_NAME reads at most 16
    // bytes of a NUL-terminated name (it was started as /proc/self/exe,
    // so `ps` would show "exe").
    let socket = unsafe {
        libc::prctl(libc::PR_SET_NAME, c"rlaunch-spawn".as_ptr());
        OwnedFd::from_raw_fd(SOCKET_FD)
    };
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let base_env: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let len = match recv_with_fds(&socket, &mut buf) {
            Ok((0, _)) | Err(_) => return 0,
            Ok((len, _)) => len,
        };
        let (reply, fds) = match postcard::from_bytes::<Request>(&buf[..len]) {
            Ok(request) => start(&request, &base_env, parent),
            Err(e) => (
                failed(0, libc::EINVAL, &format!("undecodable request ({e})")),
                Vec::new(),
            ),
        };
        let encoded = postcard::to_stdvec(&reply).expect("postcard encoding into a Vec cannot fail");
        let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
        if send_with_fds(&socket, &encoded, &raw).is_err() {
            return 1;
        }
    }
}

fn failed(pid: i32, errno: i32, step: &str) -> Reply {
    Reply::Failed {
        pid,
        errno,
        step: step.to_string(),
    }
}

fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// A pipe, both ends close-on-exec: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds`.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn cstring(bytes: &[u8]) -> Option<CString> {
    CString::new(bytes).ok()
}

/// The program to exec: as given when it holds a '/', else the first
/// executable of that name on `path`.
fn resolve(program: &[u8], path: Option<&[u8]>) -> Vec<u8> {
    if program.contains(&b'/') {
        return program.to_vec();
    }
    let path = path.unwrap_or(b"/usr/local/bin:/usr/bin:/bin");
    path.split(|&b| b == b':')
        .map(|dir| [dir, b"/", program].concat())
        .find(|full| {
            let c = cstring(full);
            // SAFETY: access takes a NUL-terminated path and a mode.
            c.is_some_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0)
        })
        .unwrap_or_else(|| program.to_vec())
}

/// Starts one process; the reply and the descriptors to send with it.
fn start(request: &Request, base_env: &[(Vec<u8>, Vec<u8>)], parent: i32) -> (Reply, Vec<OwnedFd>) {
    let mut env: Vec<(Vec<u8>, Vec<u8>)> = base_env
        .iter()
        .filter(|(k, _)| !request.env.iter().any(|(key, _)| key == k))
        .cloned()
        .collect();
    env.extend(request.env.iter().cloned());
    let path_var = env.iter().find(|(k, _)| k == b"PATH").map(|(_, v)| v.as_slice());
    let program = resolve(&request.program, path_var);
    let strings = (
        cstring(&program),
        request.args.iter().map(|a| cstring(a)).collect::<Option<Vec<_>>>(),
        env.iter()
            .map(|(k, v)| cstring(&[k.as_slice(), b"=", v.as_slice()].concat()))
            .collect::<Option<Vec<_>>>(),
        request.cwd.as_deref().map(cstring),
    );
    let (Some(exe), Some(args), Some(envs), None | Some(Some(_))) = strings else {
        return (
            failed(0, libc::EINVAL, "an argument or variable holds a NUL byte"),
            Vec::new(),
        );
    };
    let cwd = request.cwd.as_deref().and_then(cstring);
    let argv0 = cstring(&request.program).unwrap_or_else(|| exe.clone());
    let mut argv: Vec<*const libc::c_char> = std::iter::once(argv0.as_ptr())
        .chain(args.iter().map(|a| a.as_ptr()))
        .collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = envs.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET takes indices
    // below CPU_SETSIZE, which every index rlaunch sends is (it read them
    // from sched_getaffinity).
    let cpus = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in request.cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        set
    };
    let pin = !request.cpus.is_empty();

    let pipes = (pipe(), pipe(), pipe(), request.stdin.then(pipe).transpose());
    let (Ok(out), Ok(err), Ok(report), Ok(input)) = pipes else {
        return (failed(0, last_errno(), "pipe"), Vec::new());
    };
    let null = match request.stdin {
        false => std::fs::File::open(OsStr::new("/dev/null")).ok().map(OwnedFd::from),
        true => None,
    };
    let stdin_fd = input
        .as_ref()
        .map(|(r, _)| r.as_raw_fd())
        .or(null.as_ref().map(AsRawFd::as_raw_fd));
    let child = Child {
        exe: &exe,
        argv: &argv,
        envp: &envp,
        cwd: cwd.as_ref(),
        cpus: pin.then_some(&cpus),
        stdin: stdin_fd.unwrap_or(-1),
        stdout: out.1.as_raw_fd(),
        stderr: err.1.as_raw_fd(),
        report: report.1.as_raw_fd(),
        parent,
    };
    // SAFETY: this process is single-threaded, so a fork-like clone leaves
    // the child a consistent copy; CLONE_PARENT makes rlaunch its parent.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    } as i32;
    if pid == 0 {
        // SAFETY: in the child, which runs only async-signal-safe calls and exec.
        unsafe { child.exec() }
    }
    if pid < 0 {
        return (failed(0, last_errno(), "fork"), Vec::new());
    }
    drop((out.1, err.1, report.1, null));
    let input = input.map(|(r, w)| {
        drop(r);
        w
    });
    // The report pipe closes on exec, or carries errno and step first.
    let mut word = [0u8; 8];
    let mut got = 0;
    while got < word.len() {
        // SAFETY: read into the rest of our local buffer.
        let n = unsafe { libc::read(report.0.as_raw_fd(), word[got..].as_mut_ptr().cast(), word.len() - got) };
        match n {
            n if n > 0 => got += n as usize,
            n if n < 0 && last_errno() == libc::EINTR => continue,
            _ => break,
        }
    }
    if got == word.len() {
        let errno = i32::from_ne_bytes(word[..4].try_into().expect("4 bytes"));
        let step = ["sched_setaffinity", "setpgid", "prctl", "dup2", "chdir", "execve"];
        let at = u32::from_ne_bytes(word[4..].try_into().expect("4 bytes")) as usize;
        return (failed(pid, errno, step.get(at).copied().unwrap_or("exec")), Vec::new());
    }
    let mut fds = vec![out.0, err.0];
    fds.extend(input);
    (Reply::Started { pid }, fds)
}

/// What the forked child needs, all prepared before the fork.
struct Child<'a> {
    exe: &'a CString,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    cwd: Option<&'a CString>,
    cpus: Option<&'a libc::cpu_set_t>,
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    report: RawFd,
    parent: i32,
}

impl Child<'_> {
    /// Sets the child up and execs; on failure writes errno and the step
    /// number to the report pipe and exits 127.
    ///
    /// # Safety
    /// Call only in the child of a fork of a single-threaded process.
    unsafe fn exec(&self) -> ! {
        let fail = |step: u32| -> ! {
            let errno = *libc::__errno_location();
            let mut word = [0u8; 8];
            word[..4].copy_from_slice(&errno.to_ne_bytes());
            word[4..].copy_from_slice(&step.to_ne_bytes());
            libc::write(self.report, word.as_ptr().cast(), word.len());
            libc::_exit(127)
        };
        if let Some(set) = self.cpus {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                fail(0);
            }
        }
        if libc::setpgid(0, 0) != 0 {
            fail(1);
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
            fail(2);
        }
        // rlaunch may have died before prctl took effect.
        if libc::getppid() != self.parent {
            libc::_exit(1);
        }
        for (from, to) in [(self.stdin, 0), (self.stdout, 1), (self.stderr, 2)] {
            if from >= 0 && libc::dup2(from, to) < 0 {
                fail(3);
            }
        }
        if let Some(dir) = self.cwd {
            if libc::chdir(dir.as_ptr()) != 0 {
                fail(4);
            }
        }
        // As std's Command: default SIGPIPE (Rust ignores it) and no mask.
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::execve(self.exe.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr());
        fail(5)
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn programs_without_a_slash_are_found_on_the_path() {
        assert_eq!(resolve(b"./a.out", Some(b"/bin")), b"./a.out");
        assert_eq!(resolve(b"sh", Some(b"/nonexistent:/bin")), b"/bin/sh");
        assert_eq!(resolve(b"no-such-program-here", Some(b"/bin")), b"no-such-program-here");
    }
}
