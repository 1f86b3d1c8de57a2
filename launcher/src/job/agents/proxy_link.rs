//! Ranks on other hosts, each host's ranks under one `rlaunch --proxy`
//! (rlaunch must be at the same path, as on a cluster with a shared
//! filesystem). Over ssh, one connection per host carries the proxy's
//! frames on its stdin and stdout; under srun ([`super::srun_step`]), one
//! step starts every host's proxy and each connects back over TCP. Either
//! way the proxy's frames become job events, and a host whose agent fails,
//! or whose proxy cannot start a rank, becomes one `HostFailed` event
//! carrying the agent's own error text.

use super::output::{self, Stream};
use super::spawn::{self, JobContext};
use super::{Control, JobEvent, RankProcess};
use crate::error::LaunchError;
use crate::hostfile::HostEntry;
use crate::plan::{LaunchPlan, Placement};
use crate::proxy::wire::{FromProxy, ProxyRank, ProxySpec, ToProxy, MAX_FRAME};
use crossbeam::channel::Sender;
use oneside::protocol::wire::{encode_any, recv_any};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::Stdio;
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
        let mut channel = self.channel.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
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
        let channel = self.channel.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
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
            control: Control::Remote(Arc::clone(link)),
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

/// Starts `placements` (all on one host) through ssh. Must run on the main thread.
pub fn start_host(
    plan: &LaunchPlan,
    placements: &[&Placement],
    job: &JobContext,
    events: &Sender<JobEvent>,
    readers: &mut Vec<JoinHandle<()>>,
) -> Result<Vec<RankProcess>, LaunchError> {
    let host = &plan.hosts[placements[0].host];
    let rlaunch = std::env::current_exe().map_err(|source| LaunchError::SelfPath { source })?;
    let words = [rlaunch.display().to_string(), "--proxy".to_string()];
    let (ssh, args) = ssh_command(plan, host, &words);
    let spawn_err = |source| LaunchError::Spawn {
        rank: placements[0].rank,
        host: host.host.clone(),
        program: ssh.clone(),
        source,
    };
    let mut child = spawn::spawn_process(Path::new(&ssh), &args, &[], None, Stdio::piped(), None).map_err(spawn_err)?;
    let spec = proxy_spec(plan, placements, job)?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    // A dead ssh shows up below as a host failure with its stderr.
    let _ = stdin
        .write_all(&encode_any(&ToProxy::Start(spec)))
        .and_then(|()| stdin.flush());
    let channel = ProxyChannel::Ssh {
        stdin: Box::new(stdin),
        ssh_pid: child.id() as i32,
    };
    let link = Arc::new(ProxyLink::new(host.host.clone(), channel));

    let stderr_text = collect_stderr(child.stderr.take().expect("piped stderr"));
    let stdout = child.stdout.take().expect("piped stdout");
    let (events, host_name, tag_output) = (events.clone(), host.host.clone(), plan.tag_output);
    let pending: Vec<usize> = placements.iter().map(|p| p.rank).collect();
    readers.push(std::thread::spawn(move || {
        let outcome = forward_frames(stdout, &host_name, tag_output, pending, &events);
        let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        let stderr = stderr_text.join().unwrap_or_default();
        if !outcome.pending.is_empty() && !outcome.failed {
            let mut detail = agent_end("ssh", &status, &stderr);
            if stderr.is_empty() {
                detail += " before its ranks did";
            }
            let _ = events.send(JobEvent::HostFailed {
                host: host_name,
                ranks: outcome.pending,
                detail,
            });
        } else if !stderr.is_empty() {
            output::print_line(Stream::Stderr, None, format!("{stderr}\n").as_bytes());
        }
    }));
    Ok(rank_processes(placements, &link))
}

/// The ssh command line that runs `words` on `host`: the `--ssh` command,
/// BatchMode and a connect timeout, the login, and the words quoted for the
/// remote shell after `exec`. Returns the program and its arguments.
pub fn ssh_command(plan: &LaunchPlan, host: &HostEntry, words: &[String]) -> (String, Vec<String>) {
    let (ssh, ssh_options) = plan.ssh.split_first().expect("the ssh command is never empty");
    let mut args = ssh_options.to_vec();
    let connect_timeout = plan.bootstrap_timeout.as_secs().clamp(1, 10);
    for option in ["BatchMode=yes".to_string(), format!("ConnectTimeout={connect_timeout}")] {
        args.extend(["-o".to_string(), option]);
    }
    let quoted: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
    args.extend([host.login(), "--".to_string(), format!("exec {}", quoted.join(" "))]);
    (ssh.clone(), args)
}

/// Quotes a word for the remote shell.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn words_survive_the_remote_shell() {
        assert_eq!(super::shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
