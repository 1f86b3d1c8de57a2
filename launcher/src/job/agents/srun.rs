//! The srun agent: every other host's proxy from one srun step, as Open MPI's mpirun starts
//! its daemons inside an allocation: `srun --nodes=N --ntasks=N
//! --ntasks-per-node=1 --nodelist=… rlaunch --proxy --connect ADDR`.
//!
//! srun merges its tasks' stdout into one stream, so the proxies cannot
//! speak frames on it as they do over ssh. Each connects back to a listener
//! here instead, proves it holds the secret passed in its environment
//! ([`PROXY_SECRET_ENV`]), names its node, and receives that host's ranks.
//! From then on it is the ssh path's protocol on a TCP stream. Slurm tracks
//! everything a proxy starts, so `scancel` reaches the ranks; a proxy whose
//! connection closes SIGKILLs its ranks, so a killed rlaunch leaves nothing.

use super::super::output::{self, Stream};
use super::super::spawn::{self, JobContext};
use super::super::{JobEvent, RankProcess};
use super::proxy_link::{self as remote, ProxyChannel, ProxyLink};
use crate::error::LaunchError;
use crate::hostfile::{self, HostEntry};
use crate::plan::{LaunchPlan, Placement};
use crate::proxy::wire::{FromProxy, ToProxy, MAX_FRAME, PROXY_SECRET_ENV};
use crossbeam::channel::Sender;
use oneside::protocol::auth::{self, HandshakeError};
use oneside::protocol::env::hex_encode;
use oneside::protocol::wire::{encode_any, recv_any};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a connecting proxy has for the handshake and its hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a host's failure report waits for srun's own last words.
const SRUN_WORDS_WAIT: Duration = Duration::from_secs(2);
/// What srun says on every run where the cluster has no CPU-binding task
/// plugin, in answer to `--cpu-bind=none`: noise, not news.
const NO_BINDING_NOTICE: &str = "cluster configuration lacks support for cpu binding";

/// The srun command line that runs `words` once on each of `hosts`: one
/// task per node, overlapping the allocation's other steps and given all of
/// each node's CPUs unbound (the proxy shares them among its ranks), no
/// PMI and no stdin of its own, and surviving a task's bad exit (rlaunch,
/// not Slurm, decides what a failure ends).
pub fn srun_command(hosts: &[&HostEntry], words: &[String]) -> (String, Vec<String>) {
    let names: Vec<&str> = hosts.iter().map(|h| h.host.as_str()).collect();
    let mut args = vec![
        format!("--nodes={}", hosts.len()),
        format!("--ntasks={}", hosts.len()),
        "--ntasks-per-node=1".to_string(),
        format!("--nodelist={}", names.join(",")),
    ];
    args.extend(
        [
            "--overlap",
            "--cpu-bind=none",
            "--mpi=none",
            "--input=none",
            "--export=ALL",
            "--kill-on-bad-exit=0",
            "--quiet",
            "--",
        ]
        .map(String::from),
    );
    args.extend(words.iter().cloned());
    ("srun".to_string(), args)
}

/// The srun step: its process group (what cutting a host's link kills),
/// and how it ended, for the failure reports of hosts whose proxy vanished.
struct SrunStep {
    pid: i32,
    words: Mutex<Option<String>>,
    ended: Condvar,
}

impl SrunStep {
    fn new(pid: i32) -> SrunStep {
        SrunStep {
            pid,
            words: Mutex::new(None),
            ended: Condvar::new(),
        }
    }

    fn publish(&self, status: String, stderr: &str) {
        let words = remote::agent_end("srun", &status, stderr);
        *crate::sync::lock(&self.words) = Some(words);
        self.ended.notify_all();
    }

    fn wait(&self, limit: Duration) -> Option<String> {
        let words = crate::sync::lock(&self.words);
        let (words, _) = self
            .ended
            .wait_timeout_while(words, limit, |w| w.is_none())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        words.clone()
    }
}

/// Starts `hosts` (each one host's placements) with one srun step. Must
/// run on the main thread. Returns once every proxy has its ranks, or srun
/// has failed, or the bootstrap timeout has passed; failures arrive as
/// `HostFailed` events.
pub fn start_hosts(
    plan: &LaunchPlan,
    hosts: &[Vec<&Placement>],
    job: &JobContext,
    events: &Sender<JobEvent>,
    readers: &mut Vec<JoinHandle<()>>,
) -> Result<Vec<RankProcess>, LaunchError> {
    let entries: Vec<&HostEntry> = hosts.iter().map(|p| &plan.hosts[p[0].host]).collect();
    let listen_ip = job
        .bootstrap_addr
        .parse::<SocketAddr>()
        .map(|a| a.ip())
        .expect("the bootstrap address is an ip:port");
    let listener = TcpListener::bind((listen_ip, 0)).map_err(|source| LaunchError::BootstrapListen { source })?;
    let address = listener
        .local_addr()
        .and_then(|a| listener.set_nonblocking(true).map(|()| a))
        .map_err(|source| LaunchError::BootstrapListen { source })?;
    let secret = auth::random_bytes::<32>();
    let rlaunch = std::env::current_exe().map_err(|source| LaunchError::SelfPath { source })?;
    let words = [
        rlaunch.display().to_string(),
        "--proxy".into(),
        "--connect".into(),
        address.to_string(),
    ];
    let (srun, args) = srun_command(&entries, &words);
    let env = [(PROXY_SECRET_ENV.to_string(), hex_encode(&secret))];
    let mut child =
        spawn::spawn_process(Path::new(&srun), &args, &env, None, Stdio::null(), None).map_err(|source| {
            LaunchError::Spawn {
                rank: hosts[0][0].rank,
                host: entries[0].host.clone(),
                program: srun.clone(),
                source,
            }
        })?;
    let stderr = remote::collect_stderr(child.stderr.take().expect("piped stderr"));
    let stdout = child.stdout.take().expect("piped stdout");
    readers.push(output::forward_lines(stdout, |line| {
        output::print_line(Stream::Stdout, None, line)
    }));

    let step = Arc::new(SrunStep::new(child.id() as i32));
    let deadline = Instant::now() + plan.bootstrap_timeout;
    let mut links: Vec<Option<Arc<ProxyLink>>> = vec![None; hosts.len()];
    let mut srun_status = None;
    while links.iter().any(Option::is_none) {
        match listener.accept() {
            Ok((stream, peer)) => match admit(stream, &secret) {
                Ok((stream, node, hostname)) => {
                    let Some(index) =
                        (0..hosts.len()).find(|&i| links[i].is_none() && names(entries[i], &node, &hostname))
                    else {
                        eprintln!("rlaunch: a proxy connected from {peer} for node {node} ({hostname}), which has no ranks left to start; ignoring it");
                        continue;
                    };
                    let link = serve(plan, &hosts[index], job, stream, &step, events, readers)?;
                    links[index] = Some(link);
                }
                Err(detail) => eprintln!("rlaunch: refused a connection to the proxy listener from {peer}: {detail}"),
            },
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    srun_status = Some(status.to_string());
                    break;
                }
                if Instant::now() >= deadline {
                    spawn::signal_group(step.pid, libc::SIGKILL);
                    let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    srun_status = Some(format!(
                        "{status}, killed after --bootstrap-timeout {}s",
                        plan.bootstrap_timeout.as_secs()
                    ));
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => eprintln!("rlaunch: the proxy listener failed to accept: {e}"),
        }
    }

    match srun_status {
        Some(status) => {
            step.publish(status, &without_noise(stderr.join().unwrap_or_default()));
        }
        None => readers.push(reap(child, stderr, Arc::clone(&step))),
    }
    let mut procs = Vec::new();
    for (index, placements) in hosts.iter().enumerate() {
        let link = match links[index].take() {
            Some(link) => link,
            None => {
                let detail = step.wait(Duration::ZERO).unwrap_or_default();
                let _ = events.send(JobEvent::HostFailed {
                    host: entries[index].host.clone(),
                    ranks: placements.iter().map(|p| p.rank).collect(),
                    detail: format!("srun started no proxy there: {detail}"),
                });
                Arc::new(ProxyLink::new(entries[index].host.clone(), ProxyChannel::Absent))
            }
        };
        procs.extend(remote::rank_processes(placements, &link));
    }
    Ok(procs)
}

/// Whether the proxy that says it runs on `node` (`hostname`) is `host`'s.
fn names(host: &HostEntry, node: &str, hostname: &str) -> bool {
    host.host == node || hostfile::same_host(&host.host, hostname)
}

/// Authenticates a connecting proxy and reads its hello: (stream, node, hostname).
fn admit(mut stream: TcpStream, secret: &[u8]) -> Result<(TcpStream, String, String), String> {
    let setup = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)))
        .and_then(|()| stream.set_nodelay(true))
        .and_then(|()| oneside::protocol::liveness::watch(&stream));
    setup.map_err(|e| e.to_string())?;
    auth::accept_blocking(&mut stream, secret).map_err(|e| match e {
        HandshakeError::Io(e) => e.to_string(),
        HandshakeError::Auth(e) => e.describe().to_string(),
    })?;
    match recv_any::<FromProxy>(&mut stream, MAX_FRAME) {
        Ok(FromProxy::Hello { node, hostname }) => {
            stream.set_read_timeout(None).map_err(|e| e.to_string())?;
            Ok((stream, node, hostname))
        }
        Ok(other) => Err(format!("expected its hello, got {other:?}")),
        Err(e) => Err(format!("no hello: {e}")),
    }
}

/// Sends a connected proxy its host's ranks and forwards its frames.
fn serve(
    plan: &LaunchPlan,
    placements: &[&Placement],
    job: &JobContext,
    mut stream: TcpStream,
    step: &Arc<SrunStep>,
    events: &Sender<JobEvent>,
    readers: &mut Vec<JoinHandle<()>>,
) -> Result<Arc<ProxyLink>, LaunchError> {
    let host = plan.hosts[placements[0].host].host.clone();
    let spec = remote::proxy_spec(plan, placements, job)?;
    // A proxy that is already gone shows up below as its stream ending.
    let _ = stream.write_all(&encode_any(&ToProxy::Start(spec)));
    let reader = stream.try_clone();
    let link = Arc::new(ProxyLink::new(
        host.clone(),
        ProxyChannel::Tcp {
            stream,
            srun_pid: step.pid,
        },
    ));
    let pending: Vec<usize> = placements.iter().map(|p| p.rank).collect();
    let (events, step, tag_output) = (events.clone(), Arc::clone(step), plan.tag_output);
    readers.push(std::thread::spawn(move || {
        let outcome = match reader {
            Ok(reader) => remote::forward_frames(reader, &host, tag_output, pending, &events),
            Err(_) => remote::ProxyOutcome { pending, failed: false },
        };
        if !outcome.pending.is_empty() && !outcome.failed {
            let srun = step
                .wait(SRUN_WORDS_WAIT)
                .unwrap_or_else(|| "srun still runs".to_string());
            let _ = events.send(JobEvent::HostFailed {
                host,
                ranks: outcome.pending,
                detail: format!("its proxy's connection closed before its ranks ended ({srun})"),
            });
        }
    }));
    Ok(link)
}

/// srun's stderr without the lines it prints on every run.
fn without_noise(stderr: String) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.contains(NO_BINDING_NOTICE)).collect();
    lines.join("\n")
}

/// Waits for srun once every proxy has its ranks, and publishes how it ended.
fn reap(mut child: Child, stderr: JoinHandle<String>, step: Arc<SrunStep>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let status = child.wait();
        let success = status.as_ref().is_ok_and(|s| s.success());
        let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        let stderr = without_noise(stderr.join().unwrap_or_default());
        if success && !stderr.is_empty() {
            output::print_line(Stream::Stderr, None, format!("{stderr}\n").as_bytes());
        }
        step.publish(status, &stderr);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> HostEntry {
        HostEntry {
            user: None,
            host: name.to_string(),
            slots: 2,
            max_slots: None,
            origin: "test".to_string(),
        }
    }

    #[test]
    fn one_step_runs_one_proxy_per_node() {
        let (a, b) = (host("node01"), host("node07"));
        let (program, args) = srun_command(&[&a, &b], &["/x/rlaunch".into(), "--proxy".into()]);
        assert_eq!(program, "srun");
        for expected in [
            "--nodes=2",
            "--ntasks=2",
            "--ntasks-per-node=1",
            "--nodelist=node01,node07",
        ] {
            assert!(args.contains(&expected.to_string()), "{expected} missing from {args:?}");
        }
        let split = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(&args[split + 1..], ["/x/rlaunch", "--proxy"]);
    }

    #[test]
    fn a_proxy_is_matched_by_node_name_or_hostname() {
        assert!(names(&host("os-h2"), "os-h2", "other"));
        assert!(names(&host("n3.cluster"), "n3", "n3.cluster"));
        assert!(names(&host("n3"), "slurm-n3", "n3.cluster"));
        assert!(!names(&host("n3"), "n4", "n4"));
    }
}
