//! What the ssh and srun agents share: the launcher's link to one host's
//! `rlaunch --proxy` (rlaunch must be at the same path, as on a cluster
//! with a shared filesystem), the ranks a proxy is given, and its frames
//! turned into job events. A host whose agent fails, or whose proxy cannot
//! start a rank, becomes one `HostFailed` event carrying the agent's own
//! error text.

use super::super::output;
use super::super::spawn::{self, JobContext};
use super::super::{JobEvent, RankProcess};
use super::Reach;
use crate::error::LaunchError;
use crate::plan::{LaunchPlan, Placement};
use crate::proxy::wire::{FromProxy, ProxyRank, ProxySpec, ToProxy, MAX_FRAME};
use crossbeam::channel::Sender;
use oneside::protocol::wire::{encode_any, recv_any};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// How much of an agent's stderr a failure report quotes.
pub const STDERR_LIMIT: usize = 2000;

/// How the launcher reaches one host's proxy.
pub enum ProxyChannel {
    /// The stdin of the ssh connection whose process group leads with `ssh_pid`.
    Ssh { stdin: Box<dyn Write + Send>, ssh_pid: i32 },
    /// The TCP connection the proxy made back to the launcher, and the srun
    /// step (its process group) that started it.
    Tcp { stream: TcpStream, srun_pid: i32 },
    /// A proxy that never connected: nothing to say to it.
    Absent,
}

/// The launcher's handle on one host's proxy.
pub struct ProxyLink {
    pub host: String,
    channel: Mutex<ProxyChannel>,
}

impl ProxyLink {
    pub fn new(host: String, channel: ProxyChannel) -> ProxyLink {
        ProxyLink {
            host,
            channel: Mutex::new(channel),
        }
    }

    /// Asks the proxy to signal its ranks.
    pub fn signal(&self, signal: i32) {
        let frame = encode_any(&ToProxy::Signal { signal });
        let mut channel = crate::sync::lock(&self.channel);
        let _ = match &mut *channel {
            ProxyChannel::Ssh { stdin, .. } => stdin.write_all(&frame).and_then(|()| stdin.flush()),
            ProxyChannel::Tcp { stream, .. } => stream.write_all(&frame),
            ProxyChannel::Absent => Ok(()),
        };
    }

    /// Cuts the connection and its agent: the proxy then SIGKILLs whatever
    /// still runs, and no agent is left for rlaunch to wait on (under srun
    /// that is the one step of every host, which rlaunch only cuts once it
    /// has given up on a rank).
    pub fn disconnect(&self) {
        let channel = crate::sync::lock(&self.channel);
        match &*channel {
            ProxyChannel::Ssh { ssh_pid, .. } => spawn::signal_group(*ssh_pid, libc::SIGKILL),
            ProxyChannel::Tcp { stream, srun_pid } => {
                let _ = stream.shutdown(Shutdown::Both);
                spawn::signal_group(*srun_pid, libc::SIGKILL);
            }
            ProxyChannel::Absent => {}
        }
    }
}

/// The ranks a host runs, as its proxy needs them.
pub fn proxy_spec(plan: &LaunchPlan, placements: &[&Placement], job: &JobContext) -> Result<ProxySpec, LaunchError> {
    let cwd = std::env::current_dir().map_err(|source| LaunchError::SelfPath { source })?;
    Ok(ProxySpec {
        cwd: cwd.display().to_string(),
        program: plan.program.display().to_string(),
        args: plan.args.clone(),
        ranks: placements
            .iter()
            .map(|p| ProxyRank {
                rank: p.rank as u32,
                env: spawn::rank_env(plan, p, job),
                share: spawn::CpuShare::for_rank(plan, p),
            })
            .collect(),
    })
}

/// The handles the supervisor keeps for `placements`, all behind `link`.
pub fn rank_processes(placements: &[&Placement], link: &Arc<ProxyLink>) -> Vec<RankProcess> {
    placements
        .iter()
        .map(|p| RankProcess {
            rank: p.rank,
            host: link.host.clone(),
            pid: 0,
            control: Reach::proxy(Arc::clone(link)),
        })
        .collect()
}

/// What a proxy's frames said before its stream ended.
pub struct ProxyOutcome {
    /// Ranks whose end the proxy never reported.
    pub pending: Vec<usize>,
    /// Whether a failure to start a rank was already reported for the host.
    pub failed: bool,
}

/// Turns one proxy's frames into job events (printing rank output as it
/// comes) until its stream ends.
pub fn forward_frames(
    mut frames: impl Read,
    host: &str,
    tag_output: bool,
    mut pending: Vec<usize>,
    events: &Sender<JobEvent>,
) -> ProxyOutcome {
    let mut failed = false;
    while let Ok(msg) = recv_any::<FromProxy>(&mut frames, MAX_FRAME) {
        let event = match msg {
            FromProxy::Started { rank, pid } => JobEvent::RemoteStarted {
                rank: rank as usize,
                pid,
            },
            FromProxy::Output { rank, stream, line } => {
                let tag = output::tag(tag_output, rank as usize);
                output::print_line(stream, tag.as_deref(), &line);
                continue;
            }
            FromProxy::Exited { rank, ending } => {
                pending.retain(|&r| r != rank as usize);
                ending.let_the_crash_report_arrive();
                JobEvent::Exited {
                    rank: rank as usize,
                    ending,
                }
            }
            FromProxy::SpawnFailed { rank, error } => {
                failed = true;
                JobEvent::HostFailed {
                    host: host.to_string(),
                    ranks: pending.clone(),
                    detail: format!("cannot start rank {rank}: {error}"),
                }
            }
            FromProxy::Stopped { rank, stopped } => JobEvent::RemoteStopped {
                rank: rank as usize,
                stopped,
            },
            FromProxy::Hello { .. } => continue,
        };
        let _ = events.send(event);
    }
    ProxyOutcome { pending, failed }
}

/// How an agent (ssh, srun) ended, quoting its stderr if it said anything.
pub fn agent_end(agent: &str, status: &str, stderr: &str) -> String {
    match stderr.is_empty() {
        true => format!("{agent} ended ({status})"),
        false => format!("{agent} failed ({status}): {}", stderr.replace('\n', " | ")),
    }
}

/// Reads a child's stderr to its end on a thread; yields at most
/// [`STDERR_LIMIT`] characters of it, trimmed.
pub fn collect_stderr(mut stderr: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        String::from_utf8_lossy(&text)
            .trim()
            .chars()
            .take(STDERR_LIMIT)
            .collect::<String>()
    })
}
