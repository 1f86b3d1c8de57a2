//! Starting rank processes on their hosts.
//!
//! [`Agent`] is the seam for remote hosts: today only `Local` exists, which
//! forks the rank here. Each rank gets its own process group (so teardown can
//! signal the rank and anything it started) and dies with the launcher
//! (`PR_SET_PDEATHSIG`), so not even a SIGKILLed rlaunch leaves orphans.

use super::output::{self, Stream};
use super::JobEvent;
use crate::error::LaunchError;
use crate::plan::{LaunchPlan, Placement};
use crossbeam::channel::Sender;
use oneside::protocol::env as vars;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;

/// How ranks reach a host.
pub enum Agent {
    /// This machine: fork and exec directly.
    Local,
}

impl Agent {
    /// Picks the agent for a host, or explains why none can reach it.
    pub fn for_host(host: &str, origin: &str) -> Result<Agent, LaunchError> {
        if is_local(host) {
            Ok(Agent::Local)
        } else {
            Err(LaunchError::RemoteHost {
                host: host.to_string(),
                origin: origin.to_string(),
            })
        }
    }
}

/// The job-wide facts every rank's environment carries.
pub struct JobContext {
    pub bootstrap_addr: String,
    pub secret_hex: String,
    pub job_id: String,
}

/// A started rank.
pub struct RankProcess {
    pub rank: usize,
    pub pid: i32,
    pub host: String,
}

/// Starts one rank. Must run on the main thread: the parent-death signal
/// fires when the *thread* that forked exits, not the process.
pub fn start_rank(
    plan: &LaunchPlan,
    placement: &Placement,
    job: &JobContext,
    events: &Sender<JobEvent>,
    readers: &mut Vec<JoinHandle<()>>,
) -> Result<RankProcess, LaunchError> {
    let host = &plan.hosts[placement.host];
    let Agent::Local = Agent::for_host(&host.host, &host.origin)?;
    let rank = placement.rank;
    let mut command = Command::new(&plan.program);
    command
        .args(&plan.args)
        .env(vars::RANK, rank.to_string())
        .env(vars::SIZE, plan.ranks.len().to_string())
        .env(vars::LOCAL_RANK, placement.local_rank.to_string())
        .env(vars::LOCAL_SIZE, placement.local_size.to_string())
        .env(vars::HOST, &host.host)
        .env(vars::BOOTSTRAP_ADDR, &job.bootstrap_addr)
        .env(vars::JOB_SECRET, &job.secret_hex)
        .env(vars::JOB_ID, &job.job_id)
        .env(vars::BOOTSTRAP_TIMEOUT, plan.bootstrap_timeout.as_secs().to_string())
        .env(vars::TRANSPORT, plan.transport.name())
        .stdin(if rank == 0 { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(size) = &plan.heap_size {
        command.env(vars::HEAP_SIZE, size);
    }
    for (name, value) in &plan.env {
        command.env(name, value);
    }
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (setpgid, prctl, getppid, _exit).
    unsafe {
        let launcher = libc::getpid();
        command.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The launcher may have died before prctl took effect.
            if libc::getppid() != launcher {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|source| LaunchError::Spawn {
        rank,
        host: host.host.clone(),
        program: plan.program.display().to_string(),
        source,
    })?;
    let tag = plan.tag_output.then(|| format!("[{rank}] "));
    if let Some(stdout) = child.stdout.take() {
        readers.push(output::forward_lines(stdout, Stream::Stdout, tag.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(output::forward_lines(stderr, Stream::Stderr, tag));
    }
    if let Some(stdin) = child.stdin.take() {
        output::forward_stdin(stdin);
    }
    let pid = child.id() as i32;
    let events = events.clone();
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = events.send(JobEvent::Exited { rank, status });
    });
    Ok(RankProcess {
        rank,
        pid,
        host: host.host.clone(),
    })
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
