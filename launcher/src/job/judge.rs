//! The failure rules: what each event means for the job, which events
//! abort it, with what exit status, and the one line rlaunch prints for it.

use super::{Abort, JobEvent, RankProcess, RankState, INTERRUPT_EXIT};

/// What the judge may read about the ranks.
pub struct View<'a> {
    pub procs: &'a [RankProcess],
    /// Pids as known now (remote ones arrive after start).
    pub pids: &'a [i32],
}

impl View<'_> {
    fn describe(&self, rank: usize) -> String {
        let p = &self.procs[rank];
        match self.pids[rank] {
            0 => format!("rank {} on host {}", p.rank, p.host),
            pid => format!("rank {} on host {} (pid {pid})", p.rank, p.host),
        }
    }
}

/// Applies one event to the job's state; returns an exit status if the job must abort.
pub fn judge(event: JobEvent, view: &View, states: &mut [RankState], abort: Option<&mut Abort>) -> Option<u8> {
    let aborting = abort.is_some();
    match event {
        JobEvent::Registered { rank } => {
            states[rank].registered = true;
            let gone = (0..states.len()).find(|&r| states[r].ending.is_some() && !states[r].registered);
            match gone.filter(|_| !aborting) {
                Some(first) => {
                    eprintln!(
                        "rlaunch: {} exited without calling oneside::init(), but rank {rank} is waiting for it in init; aborting the job",
                        view.describe(first)
                    );
                    Some(1)
                }
                None => None,
            }
        }
        JobEvent::Finalized {
            rank,
            at,
            reached,
            races,
        } => {
            states[rank].finalized = true;
            states[rank].races = races;
            states[rank].finalize_at = at;
            states[rank].finalize_reached = reached;
            None
        }
        JobEvent::Stalled(stall) => {
            let rank = stall.rank as usize;
            states[rank].stall = Some(super::hang::Seen::new(stall));
            None
        }
        JobEvent::Crashed { rank, at } => {
            states[rank].crashed_at = Some(at);
            None
        }
        JobEvent::Moving { rank } => {
            states[rank].stall = None;
            None
        }
        JobEvent::RemoteStopped { rank, stopped } => {
            states[rank].stopped_since = stopped.then(std::time::Instant::now);
            None
        }
        JobEvent::Silent { rank } => {
            states[rank].silent = true;
            if aborting || states[rank].ending.is_some() {
                return None;
            }
            eprintln!("rlaunch: {}: {}", view.describe(rank), super::hang::silent());
            Some(1)
        }
        JobEvent::GlobalExit { rank, status } if !aborting => {
            // Its own exit is the job's end, not a failure to finalize.
            states[rank].finalized = true;
            eprintln!(
                "rlaunch: {} called global exit with status {status}; stopping the job",
                view.describe(rank)
            );
            Some(status as u8)
        }
        JobEvent::GlobalExit { .. } => None,
        JobEvent::BootstrapTimeout { missing, waited } if !aborting => {
            let list: Vec<String> = missing.iter().map(|r| view.describe(*r)).collect();
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
        JobEvent::BootstrapTimeout { .. } | JobEvent::BootstrapFailed { .. } | JobEvent::RemoteStarted { .. } => None,
        JobEvent::HostFailed { host, ranks, detail } => {
            // Reported even while aborting: every failed host gets its line.
            eprintln!("rlaunch: host {host}: {detail}");
            for rank in ranks {
                states[rank].ending.get_or_insert(super::Ending::Code(255));
            }
            (!aborting).then_some(1)
        }
        JobEvent::Interrupted => match abort {
            Some(a) => {
                eprintln!("rlaunch: interrupted again; killing all ranks now");
                super::signal_all(view.procs, states, libc::SIGKILL);
                a.killed = true;
                None
            }
            None => {
                eprintln!("rlaunch: interrupted; stopping all ranks");
                Some(INTERRUPT_EXIT)
            }
        },
        JobEvent::Exited { rank, ending } => {
            states[rank].ending = Some(ending);
            if aborting {
                return None;
            }
            let state = &states[rank];
            if !ending.success() {
                let at = state.crashed_at.as_deref().filter(|_| ending.is_fault());
                let at = at.map(|at| format!(" {at}")).unwrap_or_default();
                eprintln!("rlaunch: {} {}{at}", view.describe(rank), ending.describe());
                // A rank that gave up its finalize comes after the
                // deadlock's report, which said where everyone was.
                if !state.gave_up && states.iter().any(|s| s.ending.is_none() && s.stall.is_some()) {
                    let hosts: Vec<&str> = view.procs.iter().map(|p| p.host.as_str()).collect();
                    super::print_report("where the other ranks were", states, &hosts);
                }
                return Some(ending.exit_code());
            }
            if state.gave_up {
                eprintln!(
                    "rlaunch: {} exited with code 0 after leaving finalize early (see the deadlock above); the job failed",
                    view.describe(rank)
                );
                return Some(1);
            }
            if state.registered && !state.finalized {
                eprintln!(
                    "rlaunch: {} exited with code 0 after oneside::init() without finalizing (leaked World or process::exit?); aborting the job",
                    view.describe(rank)
                );
                return Some(1);
            }
            let waiting = (0..states.len()).find(|&r| states[r].registered && states[r].ending.is_none());
            match waiting {
                Some(other) if !state.registered => {
                    eprintln!(
                        "rlaunch: {} exited without calling oneside::init(), but rank {other} is waiting for it in init; aborting the job",
                        view.describe(rank)
                    );
                    Some(1)
                }
                _ => None,
            }
        }
    }
}
