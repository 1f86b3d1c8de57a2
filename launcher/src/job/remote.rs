//! Ranks on other hosts: one ssh connection per host, running
//! `rlaunch --proxy` there (rlaunch must be at the same path, as on a
//! cluster with a shared filesystem). The proxy's frames become job events;
//! a host whose ssh fails, or whose proxy cannot start a rank, becomes one
//! `HostFailed` event carrying ssh's own error text.

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
use std::path::Path;
use std::process::{ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// How much of ssh's stderr a failure report quotes.
const STDERR_LIMIT: usize = 2000;

/// The launcher's handle on one host's proxy.
pub struct ProxyLink {
    pub host: String,
    stdin: Mutex<ChildStdin>,
    ssh_pid: i32,
}

impl ProxyLink {
    /// Asks the proxy to signal its ranks.
    pub fn signal(&self, signal: i32) {
        let frame = encode_any(&ToProxy::Signal { signal });
        let mut stdin = self.stdin.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let _ = stdin.write_all(&frame).and_then(|()| stdin.flush());
    }

    /// Cuts the connection: the proxy then SIGKILLs whatever still runs.
    pub fn disconnect(&self) {
        spawn::signal_group(self.ssh_pid, libc::SIGKILL);
    }
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

    let cwd = std::env::current_dir().map_err(|source| LaunchError::SelfPath { source })?;
    let spec = ProxySpec {
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
    };
    let mut stdin = child.stdin.take().expect("piped stdin");
    // A dead ssh shows up below as a host failure with its stderr.
    let _ = stdin
        .write_all(&encode_any(&ToProxy::Start(spec)))
        .and_then(|()| stdin.flush());
    let link = Arc::new(ProxyLink {
        host: host.host.clone(),
        stdin: Mutex::new(stdin),
        ssh_pid: child.id() as i32,
    });

    let mut stderr = child.stderr.take().expect("piped stderr");
    let stderr_text = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        String::from_utf8_lossy(&text)
            .trim()
            .chars()
            .take(STDERR_LIMIT)
            .collect::<String>()
    });
    let mut stdout = child.stdout.take().expect("piped stdout");
    let (events, host_name, tag_output) = (events.clone(), host.host.clone(), plan.tag_output);
    let agent = match plan.launch_agent {
        crate::cli::LaunchAgent::Ssh => "ssh",
        crate::cli::LaunchAgent::Srun => "srun",
    };
    let mut pending: Vec<usize> = placements.iter().map(|p| p.rank).collect();
    readers.push(std::thread::spawn(move || {
        let mut failed = false;
        while let Ok(msg) = recv_any::<FromProxy>(&mut stdout, MAX_FRAME) {
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
                    let detail = format!("cannot start rank {rank}: {error}");
                    JobEvent::HostFailed {
                        host: host_name.clone(),
                        ranks: pending.clone(),
                        detail,
                    }
                }
            };
            let _ = events.send(event);
        }
        let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        let stderr = stderr_text.join().unwrap_or_default();
        if !pending.is_empty() && !failed {
            let detail = match stderr.is_empty() {
                true => format!("{agent} ended ({status}) before its ranks did"),
                false => format!("{agent} failed ({status}): {}", stderr.replace('\n', " | ")),
            };
            let _ = events.send(JobEvent::HostFailed {
                host: host_name,
                ranks: pending,
                detail,
            });
        } else if !stderr.is_empty() {
            output::print_line(Stream::Stderr, None, format!("{stderr}\n").as_bytes());
        }
    }));
    Ok(placements
        .iter()
        .map(|p| RankProcess {
            rank: p.rank,
            host: host.host.clone(),
            pid: 0,
            control: Control::Remote(Arc::clone(&link)),
        })
        .collect())
}

/// The ssh command line that runs `words` on `host`: the `--ssh` command,
/// BatchMode and a connect timeout, the login, and the words quoted for the
/// remote shell after `exec`. Returns the program and its arguments.
pub fn ssh_command(plan: &LaunchPlan, host: &HostEntry, words: &[String]) -> (String, Vec<String>) {
    if plan.launch_agent == crate::cli::LaunchAgent::Srun {
        return srun_command(host, words);
    }
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

/// One `srun` step on `host` running `words` (no shell in between): one
/// task with the host's slots as its CPUs (the ranks' share, where Slurm
/// binds or confines steps), overlapping the other hosts' steps, its stdin
/// and stdout the proxy's frames, as over ssh.
/// Slurm tracks everything the proxy starts, so `scancel` reaches the ranks.
fn srun_command(host: &HostEntry, words: &[String]) -> (String, Vec<String>) {
    let mut args: Vec<String> = ["--nodes=1", "--ntasks=1", "--overlap", "--quiet"]
        .map(String::from)
        .to_vec();
    args.push(format!("--cpus-per-task={}", host.slots.max(1)));
    args.push(format!("--nodelist={}", host.host));
    args.push("--".to_string());
    args.extend(words.iter().cloned());
    ("srun".to_string(), args)
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
