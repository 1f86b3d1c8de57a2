//! `rlaunch --proxy`: the remote end of one ssh connection. It starts its
//! host's ranks, forwards their output and exit statuses as frames on
//! stdout, applies the launcher's signals, and SIGKILLs every rank when its
//! stdin closes, which is how it learns the launcher or the connection is
//! gone. A rank therefore never outlives the job, even if rlaunch is killed.

pub mod wire;

use crate::job::output::{self, Stream};
use crate::job::report::Ending;
use crate::job::spawn;
use crossbeam::channel;
use oneside::protocol::wire::{encode_any, recv_any};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use wire::{FromProxy, ToProxy, MAX_FRAME};

enum ProxyEvent {
    Exited { rank: u32, pid: i32, ending: Ending },
    Control(ToProxy),
    LauncherGone,
}

type Outbox = Arc<Mutex<std::io::Stdout>>;

fn send(out: &Outbox, msg: &FromProxy) {
    let frame = encode_any(msg);
    let mut out = out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = out.write_all(&frame).and_then(|()| out.flush());
}

/// Runs the proxy; returns its exit status.
pub fn run() -> u8 {
    let mut stdin = std::io::stdin().lock();
    let spec = match recv_any::<ToProxy>(&mut stdin, MAX_FRAME) {
        Ok(ToProxy::Start(spec)) => spec,
        Ok(other) => {
            eprintln!("rlaunch --proxy: expected a start message, got {other:?}");
            return 2;
        }
        Err(e) => {
            eprintln!("rlaunch --proxy: no start message from the launcher: {e}");
            return 2;
        }
    };
    drop(stdin);
    let out: Outbox = Arc::new(Mutex::new(std::io::stdout()));
    let (events_tx, events) = channel::unbounded();
    let mut live: Vec<(u32, i32)> = Vec::new();

    for rank in &spec.ranks {
        let program = Path::new(&spec.program);
        let cwd = Path::new(&spec.cwd);
        let mut child = match spawn::spawn_process(program, &spec.args, &rank.env, Some(cwd), Stdio::null(), rank.share)
        {
            Ok(child) => child,
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
        let pid = child.id() as i32;
        send(&out, &FromProxy::Started { rank: rank.rank, pid });
        let mut readers = Vec::new();
        for (pipe, stream) in [
            (
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
                Stream::Stdout,
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
                Stream::Stderr,
            ),
        ] {
            if let Some(pipe) = pipe {
                let (out, r) = (Arc::clone(&out), rank.rank);
                readers.push(output::forward_lines(pipe, move |line| {
                    send(
                        &out,
                        &FromProxy::Output {
                            rank: r,
                            stream,
                            line: line.to_vec(),
                        },
                    )
                }));
            }
        }
        let (events_tx, r) = (events_tx.clone(), rank.rank);
        std::thread::spawn(move || {
            let ending = child.wait().map(Ending::from_status).unwrap_or(Ending::Code(255));
            // Output first, so the launcher prints a rank's last lines before its end.
            for reader in readers {
                let _ = reader.join();
            }
            let _ = events_tx.send(ProxyEvent::Exited { rank: r, pid, ending });
        });
        live.push((rank.rank, pid));
    }

    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            match recv_any::<ToProxy>(&mut stdin, MAX_FRAME) {
                Ok(msg) => {
                    let _ = events_tx.send(ProxyEvent::Control(msg));
                }
                Err(_) => {
                    let _ = events_tx.send(ProxyEvent::LauncherGone);
                    return;
                }
            }
        }
    });

    while !live.is_empty() {
        match events.recv() {
            Ok(ProxyEvent::Exited { rank, pid, ending }) => {
                live.retain(|&(_, p)| p != pid);
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
    0
}
