//! `rlaunch --proxy`: one host's agent. It starts its host's ranks,
//! forwards their output and exit statuses as frames (from one watcher
//! loop, like rlaunch's own local ranks), applies the launcher's signals,
//! and SIGKILLs every rank when its link to the launcher closes, which is
//! how it learns the launcher or the connection is gone. A rank therefore
//! never outlives the job, even if rlaunch is killed. The link is the ssh
//! connection's stdin and stdout (`rlaunch --proxy`), or a TCP connection
//! back to the launcher for a proxy started by srun (`rlaunch --proxy
//! --connect ADDR`). Twice a second it reads its ranks' `/proc/<pid>/stat`
//! and tells the launcher when one is stopped by a signal or runs again,
//! as rlaunch sees for itself on its own host.

mod connect;
pub mod wire;

use crate::job::children::{ChildEvent, Watcher};
use crate::job::report::Ending;
use crate::job::spawn;
use crossbeam::channel;
use oneside::protocol::env as vars;
use oneside::protocol::shm_files;
use oneside::protocol::wire::{encode_any, recv_any};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use wire::{FromProxy, ProxySpec, ToProxy, MAX_FRAME};

enum ProxyEvent {
    Exited { rank: u32, pid: i32, ending: Ending },
    Control(ToProxy),
    LauncherGone,
}

type Outbox = Arc<Mutex<Box<dyn Write + Send>>>;

fn send(out: &Outbox, msg: &FromProxy) {
    let frame = encode_any(msg);
    let mut out = crate::sync::lock(out);
    let _ = out.write_all(&frame).and_then(|()| out.flush());
}

/// Runs the proxy (`args`: what follows `--proxy`); returns its exit status.
pub fn run(args: &[String]) -> u8 {
    let link = match args {
        [] => from_stdin(),
        [flag, address] if flag == "--connect" => connect::connect(address).and_then(|(stream, spec)| {
            let input = stream.try_clone().map_err(|e| e.to_string())?;
            Ok(Upstream {
                spec,
                input: Box::new(input),
                output: Box::new(stream),
            })
        }),
        _ => Err(format!(
            "unexpected arguments {args:?}; rlaunch starts its proxies itself"
        )),
    };
    match link {
        Ok(link) => serve(link),
        Err(e) => {
            eprintln!("rlaunch --proxy: {e}");
            2
        }
    }
}

/// The launcher's side of the proxy: what to start, and the two directions of frames.
struct Upstream {
    spec: ProxySpec,
    input: Box<dyn Read + Send>,
    output: Box<dyn Write + Send>,
}

/// The ssh link: the start message on stdin, frames on stdout.
fn from_stdin() -> Result<Upstream, String> {
    match recv_any::<ToProxy>(&mut std::io::stdin().lock(), MAX_FRAME) {
        Ok(ToProxy::Start(spec)) => Ok(Upstream {
            spec,
            input: Box::new(std::io::stdin()),
            output: Box::new(std::io::stdout()),
        }),
        Ok(other) => Err(format!("expected a start message, got {other:?}")),
        Err(e) => Err(format!("no start message from the launcher: {e}")),
    }
}

/// Starts `spec`'s ranks and relays until every one has ended.
fn serve(link: Upstream) -> u8 {
    let Upstream {
        spec,
        mut input,
        output,
    } = link;
    let out: Outbox = Arc::new(Mutex::new(output));
    let (events_tx, events) = channel::unbounded();
    let mut live: Vec<(u32, i32)> = Vec::new();
    oneside::protocol::limits::raise_open_files();
    let watcher = {
        let (out, events_tx) = (Arc::clone(&out), events_tx.clone());
        Watcher::start(move |event| match event {
            ChildEvent::Line { rank, stream, line } => send(
                &out,
                &FromProxy::Output {
                    rank,
                    stream,
                    line: line.to_vec(),
                },
            ),
            ChildEvent::Exited { rank, pid, ending } => {
                let _ = events_tx.send(ProxyEvent::Exited { rank, pid, ending });
            }
        })
    };
    // Before any rank starts, a failure is the host's, told as its first rank's.
    let fail_all = |error: String| {
        let rank = spec.ranks.first().map_or(0, |r| r.rank);
        send(&out, &FromProxy::SpawnFailed { rank, error });
        1
    };
    let watcher = match watcher {
        Ok(watcher) => watcher,
        Err(e) => {
            return fail_all(format!(
                "cannot watch the ranks (pidfd_open needs Linux 5.3 or later): {e}"
            ))
        }
    };
    let spawner = match crate::spawner::Spawner::start() {
        Ok(spawner) => spawner,
        Err(e) => return fail_all(format!("cannot start the spawner process (rlaunch --spawner): {e}")),
    };
    for rank in &spec.ranks {
        let program = Path::new(&spec.program);
        let cwd = Path::new(&spec.cwd);
        let cpus = spawn::pin_cpus(rank.share);
        let started = spawner
            .spawn(program, &spec.args, &rank.env, Some(cwd), false, cpus.as_deref())
            .and_then(|child| {
                let pid = child.pid;
                watcher.watch(rank.rank, child).map(|()| pid).inspect_err(|_| {
                    spawn::signal_group(pid, libc::SIGKILL);
                })
            });
        let pid = match started {
            Ok(pid) => pid,
            Err(e) => {
                send(
                    &out,
                    &FromProxy::SpawnFailed {
                        rank: rank.rank,
                        error: format!("{}: {e}", spec.program),
                    },
                );
                for &(_, pid) in &live {
                    spawn::signal_group(pid, libc::SIGKILL);
                }
                return 1;
            }
        };
        send(&out, &FromProxy::Started { rank: rank.rank, pid });
        live.push((rank.rank, pid));
    }
    drop(spawner);
    let watched = Arc::new(Mutex::new(live.clone()));
    watch_stops(Arc::clone(&watched), Arc::clone(&out));

    std::thread::spawn(move || loop {
        match recv_any::<ToProxy>(&mut input, MAX_FRAME) {
            Ok(msg) => {
                let _ = events_tx.send(ProxyEvent::Control(msg));
            }
            Err(_) => {
                let _ = events_tx.send(ProxyEvent::LauncherGone);
                return;
            }
        }
    });

    while !live.is_empty() {
        match events.recv() {
            Ok(ProxyEvent::Exited { rank, pid, ending }) => {
                live.retain(|&(_, p)| p != pid);
                crate::sync::lock(&watched).retain(|&(_, p)| p != pid);
                if !ending.success() {
                    // A rank that did not end cleanly may have left its
                    // libfabric shm region (16 MiB) behind.
                    shm_files::remove_ofi_shm_regions(pid as u32);
                }
                send(&out, &FromProxy::Exited { rank, ending });
            }
            Ok(ProxyEvent::Control(ToProxy::Signal { signal })) => {
                for &(_, pid) in &live {
                    spawn::signal_group(pid, signal);
                }
            }
            Ok(ProxyEvent::Control(ToProxy::Start(_))) => {}
            Ok(ProxyEvent::LauncherGone) | Err(_) => {
                for &(_, pid) in &live {
                    spawn::signal_group(pid, libc::SIGKILL);
                }
            }
        }
    }
    watcher.finish();
    // Ranks killed before finalize leave their segment files (and, past
    // the eager mapping cutoff, every rank keeps its file until finalize).
    let job_id = spec.ranks.iter().flat_map(|r| &r.env).find(|(k, _)| k == vars::JOB_ID);
    if let Some((_, job_id)) = job_id {
        shm_files::remove_job_segments(job_id);
    }
    0
}

/// How often the proxy reads its ranks' states.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Tells the launcher, on a thread, when a rank of `live` is stopped by a
/// signal and when it runs again; ends when no rank is left.
fn watch_stops(live: Arc<Mutex<Vec<(u32, i32)>>>, out: Outbox) {
    std::thread::spawn(move || {
        let mut stopped: Vec<u32> = Vec::new();
        loop {
            std::thread::sleep(LOOK_EVERY);
            let ranks = crate::sync::lock(&live).clone();
            if ranks.is_empty() {
                return;
            }
            for (rank, pid) in ranks {
                let now = crate::job::silent::is_stopped(pid);
                if now != stopped.contains(&rank) {
                    match now {
                        true => stopped.push(rank),
                        false => stopped.retain(|&r| r != rank),
                    }
                    send(&out, &FromProxy::Stopped { rank, stopped: now });
                }
            }
        }
    });
}
