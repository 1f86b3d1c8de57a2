//! Running a `LaunchPlan`: start the bootstrap service and the ranks (here,
//! and on other hosts through one ssh connection each or one srun step for
//! all), then supervise them from one event channel until every rank has
//! ended.
//!
//! All news arrives as a [`JobEvent`] on a single channel (rank exits from
//! the one loop that watches local ranks, and from proxies, bootstrap news from the service, Ctrl-C from
//! the signal handler), so the supervisor sees it in causal order. The first
//! failure aborts the job: SIGTERM to every rank, SIGKILL after
//! [`kill_grace`], and after another grace period rlaunch stops waiting for
//! ranks on hosts it can no longer reach.

pub mod address;
pub mod agents;
pub mod children;
mod deadlock;
mod hang;
mod judge;
pub mod output;
mod pmi;
pub mod report;
pub mod silent;
mod simple_pmi;
pub mod spawn;
mod table;

use crate::error::LaunchError;
use crate::plan::LaunchPlan;
use agents::Reach;
use crossbeam::channel::{self, RecvTimeoutError};
use oneside::protocol::{auth, env::hex_encode, shm_files};
use report::Ending;
use spawn::JobContext;
use std::time::{Duration, Instant};

/// How long ranks get between SIGTERM and SIGKILL, and after SIGKILL
/// before rlaunch gives up on ranks it cannot reach: 3 s, or
/// `RLAUNCH_KILL_GRACE` seconds.
fn kill_grace() -> Duration {
    let secs = std::env::var("RLAUNCH_KILL_GRACE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok());
    Duration::from_secs_f64(secs.filter(|s| s.is_finite() && *s >= 0.0).unwrap_or(3.0))
}
/// Exit status when `--timeout` fires (as coreutils' `timeout`).
pub const TIMEOUT_EXIT: u8 = 124;
/// Exit status after Ctrl-C (128 + SIGINT).
pub const INTERRUPT_EXIT: u8 = 130;

/// Everything the supervisor can learn.
pub enum JobEvent {
    Registered {
        rank: usize,
    },
    /// `at`: where the rank called finalize, or how it got there;
    /// `reached`: each team slot it uses and the furthest collective step
    /// it signalled there.
    /// `races`: the data races it reported under `--check-races`.
    Finalized {
        rank: usize,
        at: String,
        reached: Vec<(u32, u64)>,
        races: u32,
    },
    /// A rank is dying of a fault, in the program's frame `at`.
    Crashed {
        rank: usize,
        at: String,
    },
    /// A rank asked to end the job with `status` (`shmem_global_exit`).
    GlobalExit {
        rank: usize,
        status: i32,
    },
    BootstrapTimeout {
        missing: Vec<usize>,
        waited: Duration,
    },
    BootstrapFailed {
        detail: String,
    },
    RemoteStarted {
        rank: usize,
        pid: i32,
    },
    Exited {
        rank: usize,
        ending: Ending,
    },
    HostFailed {
        host: String,
        ranks: Vec<usize>,
        detail: String,
    },
    Interrupted,
    /// Every thread of `rank` has been blocked in oneside for a while.
    Stalled(oneside::protocol::stall::Stall),
    /// A thread of a stalled rank got going again.
    Moving {
        rank: usize,
    },
    /// Another host's proxy saw `rank` stopped by a signal, or running again.
    RemoteStopped {
        rank: usize,
        stopped: bool,
    },
    /// Nothing has been heard from `rank`'s host for
    /// `liveness::SILENCE`: its connection to rlaunch timed out.
    Silent {
        rank: usize,
    },
}

/// A started rank.
pub struct RankProcess {
    pub rank: usize,
    pub host: String,
    /// 0 until a remote proxy reports it.
    pub pid: i32,
    /// How to signal it, through the agent that started it.
    pub control: Reach,
}

/// Per-rank bookkeeping.
#[derive(Default, Clone)]
pub struct RankState {
    pub registered: bool,
    /// Said `Finalized`: in finalize, waiting for the farewell.
    pub finalized: bool,
    /// Told to give up its finalize: a peer waits for it in a call it
    /// will never make ([`deadlock`]). Its exit then ends the job.
    pub gave_up: bool,
    /// Where it called finalize, as it said in `Finalized`.
    pub finalize_at: String,
    /// The furthest collective step it had signalled on each team slot by
    /// then, as it said in `Finalized` (`ThreadStall::step_of`).
    pub finalize_reached: Vec<(u32, u64)>,
    /// The data races it reported (`--check-races`), as it said in `Finalized`.
    pub races: u32,
    pub ending: Option<Ending>,
    /// Where it is blocked, from its latest `Stalled` (hang reports).
    pub stall: Option<hang::Seen>,
    /// The program's frame it died in, from its `Crashed`.
    pub crashed_at: Option<String>,
    /// Its host fell silent: its connection to rlaunch timed out.
    pub silent: bool,
    /// Since when another host's proxy has said it is stopped by a signal.
    pub stopped_since: Option<std::time::Instant>,
}

pub struct Abort {
    pub code: u8,
    /// Read once per abort (`RLAUNCH_KILL_GRACE`), not at every wake-up.
    grace: Duration,
    kill_at: Instant,
    killed: bool,
}

/// Runs the job to the end and returns rlaunch's exit status.
pub fn run(plan: &LaunchPlan) -> Result<u8, LaunchError> {
    let secret = auth::random_bytes::<32>();
    let bind_ip = address::bootstrap_ip(plan)?;
    let server = pmi::BootstrapServer::bind(bind_ip).map_err(|source| LaunchError::BootstrapListen { source })?;
    let job_id = hex_encode(&auth::random_bytes::<8>());
    // The program's own MPI (MPICH's family) wires up through this, so it
    // sees the job's ranks rather than one singleton per process.
    let mpi_pmi_ids = simple_pmi::Ids::new(plan.ranks.len());
    let mpi_pmi_addr = simple_pmi::start(bind_ip, plan, &job_id, mpi_pmi_ids)
        .map_err(|source| LaunchError::BootstrapListen { source })?;
    let job = JobContext {
        bootstrap_addr: server.addr().to_string(),
        secret_hex: hex_encode(&secret),
        job_id,
        mpi_pmi_addr,
        mpi_pmi_ids,
    };
    let (events_tx, events) = channel::unbounded();
    let server_events = events_tx.clone();
    let mailbox = server.mailbox();
    let (size, timeout) = (plan.ranks.len(), plan.bootstrap_timeout);
    let table = table::CardExchange::new(size, &job.job_id);
    std::thread::spawn(move || server.serve(table, secret.to_vec(), timeout, server_events));
    let interrupt = events_tx.clone();
    ctrlc::set_handler(move || {
        let _ = interrupt.send(JobEvent::Interrupted);
    })?;
    hang::catch_quit();

    let mut started = agents::start(plan, &job, &events_tx)?;
    let procs = std::mem::take(&mut started.procs);
    let spawn_error = started.error.take();
    let mut states = vec![RankState::default(); size];
    let mut abort: Option<Abort> = None;
    if spawn_error.is_some() {
        let mut started = vec![false; size];
        for p in &procs {
            started[p.rank] = true;
        }
        for (state, _) in states.iter_mut().zip(&started).filter(|(_, &s)| !s) {
            state.ending = Some(Ending::Code(0));
        }
        abort = Some(start_abort(&procs, &states, 1));
    }
    supervise(plan, &procs, &mut states, &mut abort, &events, &mailbox);

    started.finish();
    remove_left_shm_files(&job.job_id, &procs, &states);
    if let Some(e) = spawn_error {
        return Err(e);
    }
    Ok(abort.map_or_else(|| races_found(&states), |a| a.code))
}

/// The exit status of a job whose ranks all ended well: 0, or
/// [`RACES_EXIT`] (ThreadSanitizer's) when the race checker reported races.
fn races_found(states: &[RankState]) -> u8 {
    let races: u64 = states.iter().map(|s| u64::from(s.races)).sum();
    if races == 0 {
        return 0;
    }
    let ranks = states.iter().filter(|s| s.races > 0).count();
    eprintln!(
        "rlaunch: --check-races reported {races} data race{} on {ranks} rank{} (above); exit status {RACES_EXIT}",
        if races == 1 { "" } else { "s" },
        if ranks == 1 { "" } else { "s" },
    );
    RACES_EXIT
}

/// A job whose ranks reported data races exits with this, as a program
/// under ThreadSanitizer does.
pub const RACES_EXIT: u8 = 66;

/// Removes what the job's ranks on this host left in `/dev/shm`: their
/// heap segments, and the libfabric shm regions of every local rank that
/// did not finalize and exit 0 (it was killed, or exited early, before shm
/// unlinked its region). Remote hosts' proxies do the same for theirs.
fn remove_left_shm_files(job_id: &str, procs: &[RankProcess], states: &[RankState]) {
    shm_files::remove_job_segments(job_id);
    for p in procs {
        let Some(pid) = p.control.pid_here(p.pid) else { continue };
        let state = &states[p.rank];
        if !(state.finalized && state.ending.is_some_and(Ending::success)) {
            shm_files::remove_ofi_shm_regions(pid as u32);
        }
    }
}

fn supervise(
    plan: &LaunchPlan,
    procs: &[RankProcess],
    states: &mut [RankState],
    abort: &mut Option<Abort>,
    events: &channel::Receiver<JobEvent>,
    mailbox: &pmi::Mailbox,
) {
    let deadline = plan.timeout.map(|t| Instant::now() + t);
    let mut pids: Vec<i32> = procs.iter().map(|p| p.pid).collect();
    let hosts: Vec<&str> = procs.iter().map(|p| p.host.as_str()).collect();
    let mut finalize_deadlock = deadlock::Watch::default();
    let mut silent = silent::Watch::default();
    while states.iter().any(|s| s.ending.is_none()) {
        let wake = match abort.as_ref() {
            Some(a) if a.killed => Some(a.kill_at + a.grace),
            Some(a) => Some(a.kill_at),
            None => [deadline, finalize_deadlock.wake()].into_iter().flatten().min(),
        };
        // Hang checks and SIGQUIT are looked at every tick.
        let tick = Instant::now() + HANG_TICK;
        let at = wake.map_or(tick, |w| w.min(tick));
        let event = events.recv_timeout(at.saturating_duration_since(Instant::now()));
        if hang::quit_asked() {
            print_report("SIGQUIT: where every rank is (the job goes on)", states, &hosts);
        }
        if let (None, Some(limit)) = (abort.as_ref(), plan.hang_timeout) {
            if hang::hung(states, limit) {
                let secs = limit.as_secs_f64();
                print_report(&format!("hang: every rank has been blocked for {secs}s with no progress (--hang-timeout {secs}); stopping the job"), states, &hosts);
                *abort = Some(start_abort(procs, states, TIMEOUT_EXIT));
            }
        }
        if abort.is_none() {
            let code = finalize_deadlock.check(states, &hosts, mailbox);
            if let Some(code) = code.or_else(|| silent.check(procs, &pids, states, &hosts)) {
                *abort = Some(start_abort(procs, states, code));
            }
        }
        if matches!(event, Err(RecvTimeoutError::Timeout)) && wake.is_none_or(|w| Instant::now() < w) {
            continue;
        }
        match event {
            Ok(JobEvent::RemoteStarted { rank, pid }) => pids[rank] = pid,
            Ok(event) => {
                let view = judge::View { procs, pids: &pids };
                if let Some(code) = judge::judge(event, &view, states, abort.as_mut()) {
                    if abort.is_none() {
                        settle(events, &mut pids, procs, states);
                        *abort = Some(start_abort(procs, states, code));
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => match abort.as_mut() {
                Some(a) if a.killed => give_up(procs, states),
                Some(a) => {
                    signal_all(procs, states, libc::SIGKILL);
                    a.killed = true;
                }
                // Woken for a deadlock's confirmation (handled above), not
                // by --timeout.
                None if deadline.is_none_or(|d| Instant::now() < d) => {}
                None => {
                    let secs = plan.timeout.unwrap_or_default().as_secs_f64();
                    eprintln!("rlaunch: job timed out after {secs}s (--timeout {secs}); stopping all ranks");
                    print_report("where every rank was", states, &hosts);
                    *abort = Some(start_abort(procs, states, TIMEOUT_EXIT));
                }
            },
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
}

/// How long the first failure waits for news of other ranks' endings
/// before the job is torn down: a rank that cannot reach a SIGKILLed peer
/// may exit before rlaunch has read that peer's own death, the cause.
const SETTLE: Duration = Duration::from_millis(100);

/// Reads what arrives within [`SETTLE`] of the first failure and judges it
/// as if the job were not yet ending, so the report names every rank that
/// had already ended, each on its line, before any is sent SIGTERM.
fn settle(events: &channel::Receiver<JobEvent>, pids: &mut [i32], procs: &[RankProcess], states: &mut [RankState]) {
    let until = Instant::now() + SETTLE;
    while states.iter().any(|s| s.ending.is_none()) {
        let Ok(event) = events.recv_timeout(until.saturating_duration_since(Instant::now())) else {
            return;
        };
        match event {
            JobEvent::RemoteStarted { rank, pid } => pids[rank] = pid,
            event => {
                let view = judge::View { procs, pids };
                let _ = judge::judge(event, &view, states, None);
            }
        }
    }
}

/// How often the supervisor checks for a hang and for SIGQUIT.
const HANG_TICK: Duration = Duration::from_millis(200);

/// Prints a hang report under `title`.
pub(crate) fn print_report(title: &str, states: &[RankState], hosts: &[&str]) {
    eprintln!("rlaunch: {title}");
    for line in hang::report(states, hosts) {
        eprintln!("rlaunch: {line}");
    }
}

fn start_abort(procs: &[RankProcess], states: &[RankState], code: u8) -> Abort {
    let running = signal_all(procs, states, libc::SIGTERM);
    if running > 0 {
        eprintln!("rlaunch: sent SIGTERM to {running} remaining rank(s)");
    }
    let grace = kill_grace();
    Abort {
        code,
        grace,
        kill_at: Instant::now() + grace,
        killed: false,
    }
}

/// Signals every rank still running (remote ones through their proxy,
/// once per host); returns how many ranks that covers.
pub fn signal_all(procs: &[RankProcess], states: &[RankState], signal: i32) -> usize {
    let mut told = agents::Told::default();
    let mut count = 0;
    for p in procs.iter().filter(|p| states[p.rank].ending.is_none()) {
        count += 1;
        p.control.signal(p.pid, signal, &mut told);
    }
    count
}

/// After SIGKILL and a grace period: stop waiting for ranks that never
/// reported their end, and cut their hosts' connections.
fn give_up(procs: &[RankProcess], states: &mut [RankState]) {
    for p in procs {
        if states[p.rank].ending.is_some() {
            continue;
        }
        eprintln!(
            "rlaunch: rank {} on host {} did not report its end after SIGKILL; giving up on it",
            p.rank, p.host
        );
        p.control.give_up();
        states[p.rank].ending = Some(Ending::Signal(libc::SIGKILL));
    }
}
