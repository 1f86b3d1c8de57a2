//! The ssh agent: each other host's ranks under one `rlaunch --proxy`
//! started over ssh, whose one connection carries the proxy's frames on
//! its stdin and stdout.

use super::super::output::{self, Stream};
use super::super::spawn::{self, JobContext};
use super::super::{JobEvent, RankProcess};
use super::proxy_link::{
    agent_end, collect_stderr, forward_frames, proxy_spec, rank_processes, ProxyChannel, ProxyLink,
};
use crate::error::LaunchError;
use crate::hostfile::HostEntry;
use crate::plan::{LaunchPlan, Placement};
use crate::proxy::wire::ToProxy;
use crossbeam::channel::Sender;
use oneside::protocol::wire::encode_any;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::thread::JoinHandle;

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
