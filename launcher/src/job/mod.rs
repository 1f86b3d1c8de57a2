//! Running a `LaunchPlan`: start the bootstrap service and the ranks, then
//! supervise them from one event channel until every rank has exited.
//!
//! All news arrives as a [`JobEvent`] on a single channel (rank exits from
//! waiter threads, bootstrap news from the service, Ctrl-C from the signal
//! handler), so the supervisor sees it in causal order. The first failure
//! aborts the job: SIGTERM to every rank's process group, SIGKILL after
//! [`KILL_GRACE`].

mod output;
mod pmi;
mod report;
mod spawn;

use crate::error::LaunchError;
use crate::plan::LaunchPlan;
use crossbeam::channel::{self, RecvTimeoutError};
use oneside::protocol::{auth, env::hex_encode};
use report::Ending;
use spawn::{Agent, JobContext, RankProcess};
use std::time::{Duration, Instant};

/// How long ranks get between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(3);
/// Exit status when `--timeout` fires (as coreutils' `timeout`).
pub const TIMEOUT_EXIT: u8 = 124;
/// Exit status after Ctrl-C (128 + SIGINT).
pub const INTERRUPT_EXIT: u8 = 130;

/// Everything the supervisor can learn.
pub enum JobEvent {
    Registered {
        rank: usize,
    },
    Finalized {
        rank: usize,
    },
    BootstrapTimeout {
        missing: Vec<usize>,
        waited: Duration,
    },
    BootstrapFailed {
        detail: String,
    },
    Exited {
        rank: usize,
        status: std::io::Result<std::process::ExitStatus>,
    },
    Interrupted,
}

/// Per-rank bookkeeping.
#[derive(Default, Clone)]
struct RankState {
    registered: bool,
    finalized: bool,
    ending: Option<Ending>,
}

struct Abort {
    code: u8,
    kill_at: Instant,
    killed: bool,
}

/// Runs the job to the end and returns rlaunch's exit status.
pub fn run(plan: &LaunchPlan) -> Result<u8, LaunchError> {
    for placement in &plan.ranks {
        let host = &plan.hosts[placement.host];
        Agent::for_host(&host.host, &host.origin)?;
    }
    let secret = auth::random_bytes::<32>();
    let job = JobContext {
        bootstrap_addr: String::new(),
        secret_hex: hex_encode(&secret),
        job_id: hex_encode(&auth::random_bytes::<8>()),
    };
    let server =
        pmi::BootstrapServer::bind([127, 0, 0, 1].into()).map_err(|source| LaunchError::BootstrapListen { source })?;
    let job = JobContext {
        bootstrap_addr: server.addr().to_string(),
        ..job
    };
    let (events_tx, events) = channel::unbounded();
    let server_events = events_tx.clone();
    let (size, timeout) = (plan.ranks.len(), plan.bootstrap_timeout);
    std::thread::spawn(move || server.serve(size, secret.to_vec(), timeout, server_events));
    let interrupt = events_tx.clone();
    ctrlc::set_handler(move || {
        let _ = interrupt.send(JobEvent::Interrupted);
    })?;

    let mut procs: Vec<RankProcess> = Vec::with_capacity(size);
    let mut readers = Vec::new();
    let mut states = vec![RankState::default(); size];
    let mut abort: Option<Abort> = None;
    let mut spawn_error = None;
    for placement in &plan.ranks {
        match spawn::start_rank(plan, placement, &job, &events_tx, &mut readers) {
            Ok(process) => procs.push(process),
            Err(e) => {
                spawn_error = Some(e);
                break;
            }
        }
    }
    if spawn_error.is_some() {
        for state in states.iter_mut().skip(procs.len()) {
            state.ending = Some(Ending::Code(0));
        }
        abort = Some(start_abort(&procs, &states, 1));
    }

    let deadline = plan.timeout.map(|t| Instant::now() + t);
    while states.iter().any(|s| s.ending.is_none()) {
        let wake = match &abort {
            Some(a) if !a.killed => Some(a.kill_at),
            Some(_) => None,
            None => deadline,
        };
        let event = match wake {
            Some(at) => events.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let event = match event {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => {
                match abort.as_mut() {
                    Some(a) => {
                        signal_all(&procs, &states, libc::SIGKILL);
                        a.killed = true;
                    }
                    None => {
                        let secs = plan.timeout.unwrap_or_default().as_secs_f64();
                        eprintln!("rlaunch: job timed out after {secs}s (--timeout {secs}); stopping all ranks");
                        abort = Some(start_abort(&procs, &states, TIMEOUT_EXIT));
                    }
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if let Some(code) = judge(event, &procs, &mut states, abort.as_mut()) {
            if abort.is_none() {
                abort = Some(start_abort(&procs, &states, code));
            }
        }
    }

    // Pipes close once every rank (and its process group) is gone.
    for reader in readers {
        let _ = reader.join();
    }
    report::sweep_shm_files(&job.job_id);
    if let Some(e) = spawn_error {
        return Err(e);
    }
    Ok(abort.map_or(0, |a| a.code))
}

/// Applies one event to the job's state; returns an exit code if the job must abort.
fn judge(event: JobEvent, procs: &[RankProcess], states: &mut [RankState], abort: Option<&mut Abort>) -> Option<u8> {
    let aborting = abort.is_some();
    let describe = |rank: usize| {
        let p = &procs[rank];
        format!("rank {} on host {} (pid {})", p.rank, p.host, p.pid)
    };
    match event {
        JobEvent::Registered { rank } => {
            states[rank].registered = true;
            let gone: Vec<usize> = (0..states.len())
                .filter(|&r| states[r].ending.is_some() && !states[r].registered)
                .collect();
            if let Some(&first) = gone.first().filter(|_| !aborting) {
                eprintln!(
                    "rlaunch: {} exited without calling oneside::init(), but rank {rank} is waiting for it in init; aborting the job",
                    describe(first)
                );
                return Some(1);
            }
            None
        }
        JobEvent::Finalized { rank } => {
            states[rank].finalized = true;
            None
        }
        JobEvent::BootstrapTimeout { missing, waited } if !aborting => {
            let list: Vec<String> = missing.iter().map(|r| describe(*r)).collect();
            eprintln!(
                "rlaunch: bootstrap timed out after {}s: never called oneside::init(): {} (raise --bootstrap-timeout if they start slowly)",
                waited.as_secs(),
                list.join(", ")
            );
            Some(1)
        }
        JobEvent::BootstrapFailed { detail } if !aborting => {
            eprintln!("rlaunch: bootstrap failed: {detail}");
            Some(1)
        }
        JobEvent::BootstrapTimeout { .. } | JobEvent::BootstrapFailed { .. } => None,
        JobEvent::Interrupted => match abort {
            Some(a) => {
                eprintln!("rlaunch: interrupted again; killing all ranks now");
                signal_all(procs, states, libc::SIGKILL);
                a.killed = true;
                None
            }
            None => {
                eprintln!("rlaunch: interrupted; stopping all ranks");
                Some(INTERRUPT_EXIT)
            }
        },
        JobEvent::Exited { rank, status } => {
            let ending = status.map(Ending::from_status).unwrap_or(Ending::Code(255));
            states[rank].ending = Some(ending);
            if aborting {
                return None;
            }
            let state = &states[rank];
            if !ending.success() {
                eprintln!("rlaunch: {} {}", describe(rank), ending.describe());
                return Some(ending.exit_code());
            }
            if state.registered && !state.finalized {
                eprintln!(
                    "rlaunch: {} exited with code 0 after oneside::init() without finalizing (leaked World or process::exit?); aborting the job",
                    describe(rank)
                );
                return Some(1);
            }
            let waiting = (0..states.len()).find(|&r| states[r].registered && states[r].ending.is_none());
            match waiting {
                Some(other) if !state.registered => {
                    eprintln!(
                        "rlaunch: {} exited without calling oneside::init(), but rank {other} is waiting for it in init; aborting the job",
                        describe(rank)
                    );
                    Some(1)
                }
                _ => None,
            }
        }
    }
}

fn start_abort(procs: &[RankProcess], states: &[RankState], code: u8) -> Abort {
    let running = signal_all(procs, states, libc::SIGTERM);
    if running > 0 {
        eprintln!("rlaunch: sent SIGTERM to {running} remaining rank(s)");
    }
    Abort {
        code,
        kill_at: Instant::now() + KILL_GRACE,
        killed: false,
    }
}

/// Signals the process group of every rank still running; returns how many.
fn signal_all(procs: &[RankProcess], states: &[RankState], signal: i32) -> usize {
    let mut count = 0;
    for p in procs.iter().filter(|p| states[p.rank].ending.is_none()) {
        // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
        // names the rank's own process group, created at spawn.
        unsafe { libc::kill(-p.pid, signal) };
        count += 1;
    }
    count
}
