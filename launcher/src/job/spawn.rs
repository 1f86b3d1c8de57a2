//! Starting processes for a job: ranks on this host, and ssh connections to
//! the proxies on other hosts.
//!
//! Every process rlaunch starts gets its own process group (so teardown can
//! signal it and anything it started, and a terminal's Ctrl-C reaches only
//! rlaunch) and dies with its parent (`PR_SET_PDEATHSIG`), so not even a
//! SIGKILLed rlaunch or proxy leaves orphans.

use crate::plan::{LaunchPlan, Placement};
use oneside::protocol::env as vars;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// How ranks reach a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// This machine: fork and exec directly.
    Local,
    /// Another machine: one ssh connection running `rlaunch --proxy`.
    Ssh,
}

impl Agent {
    pub fn for_host(host: &str) -> Agent {
        if is_local(host) {
            Agent::Local
        } else {
            Agent::Ssh
        }
    }
}

/// The job-wide facts every rank's environment carries.
pub struct JobContext {
    pub bootstrap_addr: String,
    pub secret_hex: String,
    pub job_id: String,
}

/// The complete environment rlaunch sets for one rank.
pub fn rank_env(plan: &LaunchPlan, placement: &Placement, job: &JobContext) -> Vec<(String, String)> {
    let host = &plan.hosts[placement.host];
    let mut env = vec![
        (vars::RANK, placement.rank.to_string()),
        (vars::SIZE, plan.ranks.len().to_string()),
        (vars::LOCAL_RANK, placement.local_rank.to_string()),
        (vars::LOCAL_SIZE, placement.local_size.to_string()),
        (vars::HOST, host.host.clone()),
        (vars::BOOTSTRAP_ADDR, job.bootstrap_addr.clone()),
        (vars::JOB_SECRET, job.secret_hex.clone()),
        (vars::JOB_ID, job.job_id.clone()),
        (vars::BOOTSTRAP_TIMEOUT, plan.bootstrap_timeout.as_secs().to_string()),
        (vars::TRANSPORT, plan.transport.name().to_string()),
    ];
    if let Some(size) = &plan.heap_size {
        env.push((vars::HEAP_SIZE, size.clone()));
    }
    let mut env: Vec<(String, String)> = env.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    env.extend(plan.env.iter().cloned());
    env
}

/// Spawns `program` with piped stdout and stderr, in its own process group,
/// dying with this process. Call it on the main thread: the parent-death
/// signal fires when the *thread* that forked exits, not the process.
pub fn spawn_process(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
    stdin: Stdio,
) -> std::io::Result<Child> {
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().cloned())
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (setpgid, prctl, getppid, _exit).
    unsafe {
        let parent = libc::getpid();
        command.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Sends `signal` to the process group led by `pid`.
pub fn signal_group(pid: i32, signal: i32) {
    if pid > 0 {
        // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
        // names the process group the child created at spawn.
        unsafe { libc::kill(-pid, signal) };
    }
}

/// Whether `host` names this machine.
pub fn is_local(host: &str) -> bool {
    if matches!(host, "localhost" | "127.0.0.1" | "::1" | "localhost.localdomain") {
        return true;
    }
    let own = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let own = own.trim();
    host == own || own.split('.').next() == Some(host)
}
