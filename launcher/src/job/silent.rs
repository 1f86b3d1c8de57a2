//! Silent ranks: a rank stopped by a signal (SIGSTOP, SIGTSTP) sends
//! nothing and ends nothing, so its peers wait for it forever without
//! any rank having failed. rlaunch looks at the state of the ranks it
//! started on this host (`/proc/<pid>/stat`), every [`LOOK_WAITING`] while
//! some rank is blocked or in finalize (where it waits for every rank's
//! farewell) or registered in init while another has not, or once any rank
//! has ended, and every [`LOOK_ALONE`] otherwise; a rank that has stayed
//! stopped for [`STOPPED_FOR`] ends the job, named, whether or not a peer
//! is seen waiting: a peer may be spinning inside a fabric library for a
//! lock the stopped rank holds (libfabric's shm provider keeps its locks
//! in shared memory; `fi_cq_read` then never returns, and the peer cannot
//! say that it waits). A rank stopped by a debugger (tracing stop, `t`)
//! is left alone: someone is looking at it. Ranks on other hosts are their
//! proxies' to watch: a proxy says when one of its ranks is stopped
//! (`FromProxy::Stopped`), and the same limit applies from then.

use super::{RankProcess, RankState};
use std::time::{Duration, Instant};

/// How long a rank must stay stopped before the job ends: long enough for
/// a program that stops a rank on purpose for a moment
/// (`examples/ctx_isolation.rs` stops one for 1 s). The same whether or
/// not a peer is seen waiting, since one spinning inside a fabric library
/// cannot say it waits: with 3 s and a look a second when none was seen,
/// a job over libfabric's shm provider ended up to 5.8 s after the stop.
pub const STOPPED_FOR: Duration = Duration::from_secs(2);

/// The limit, unless `RLAUNCH_STOPPED_LIMIT` sets it (seconds; 0: stopped
/// ranks never end the job, for stopping ranks on purpose).
fn limit() -> Option<Duration> {
    match std::env::var("RLAUNCH_STOPPED_LIMIT")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        Some(secs) if secs.is_finite() && secs > 0.0 => Some(Duration::from_secs_f64(secs)),
        Some(_) => None,
        None => Some(STOPPED_FOR),
    }
}
/// How often the ranks' states are read while no rank is seen waiting: a
/// stop is seen at most this late, so a job ends at most
/// `STOPPED_FOR + LOOK_ALONE` after it, plus the teardown.
const LOOK_ALONE: Duration = Duration::from_millis(250);

/// How often rlaunch looks while some rank waits: the supervisor calls
/// `check` after every event, and reading every local rank's
/// `/proc/<pid>/stat` on each of N registrations or exits made launching
/// and ending N ranks quadratic (45% of rlaunch's time at 2048 ranks).
const LOOK_WAITING: Duration = Duration::from_millis(100);

/// Since when each rank has been seen stopped, and when rlaunch last looked.
#[derive(Default)]
pub struct Watch {
    since: Vec<Option<Instant>>,
    looked: Option<Instant>,
    /// Read once from the environment ([`limit`]).
    limit: Option<Option<Duration>>,
}

impl Watch {
    /// Looks at the local ranks' states when some rank waits for others;
    /// returns the exit status when a stopped rank must end the job now.
    pub fn check(&mut self, procs: &[RankProcess], pids: &[i32], states: &[RankState], hosts: &[&str]) -> Option<u8> {
        // A silent rank is waited for by ranks blocked, in finalize, or in
        // init while some rank has not registered yet; and by rlaunch
        // itself once some rank has ended (the job can end only with it).
        let registering = states.iter().any(|s| s.ending.is_none() && !s.registered);
        let waiting = |s: &RankState| match s.ending {
            Some(_) => true,
            None => s.stall.is_some() || s.finalized || (registering && s.registered),
        };
        let someone_waits = states.iter().any(waiting);
        let every = if someone_waits { LOOK_WAITING } else { LOOK_ALONE };
        if self.looked.is_some_and(|at| at.elapsed() < every) {
            return None;
        }
        self.looked = Some(Instant::now());
        let limit = self.limit.get_or_insert_with(limit).as_ref().copied()?;
        self.since.resize(states.len(), None);
        for p in procs {
            let state = &states[p.rank];
            // A rank in finalize may be stopped there after the others
            // left: it is watched too, as long as it has not ended.
            let watched = state.ending.is_none() && state.stall.is_none();
            let since = &mut self.since[p.rank];
            let stopped_since = match p.control.pid_here(p.pid) {
                Some(pid) if watched && is_stopped(pid) => Some(*since.get_or_insert_with(Instant::now)),
                Some(_) => None,
                // Another host's rank: as its proxy last said.
                None => state.stopped_since.filter(|_| watched),
            };
            let Some(stopped_since) = stopped_since else {
                *since = None;
                continue;
            };
            let stopped_for = stopped_since.elapsed();
            if stopped_for >= limit {
                let title = format!(
                    "rank {} on host {} (pid {}) is stopped by a signal (SIGSTOP or SIGTSTP) and has sent nothing \
                     for {:.1} s, while other ranks wait or may; ending the job (SIGCONT it to go on, if that was meant)",
                    p.rank,
                    p.host,
                    pids[p.rank],
                    stopped_for.as_secs_f64()
                );
                super::print_report(&title, states, hosts);
                // A stopped process acts on SIGTERM only once continued
                // (another host's gets its SIGKILL after rlaunch's grace).
                if let Some(pid) = p.control.pid_here(p.pid) {
                    super::spawn::signal_group(pid, libc::SIGKILL);
                }
                return Some(1);
            }
        }
        None
    }
}

/// Whether process `pid` is stopped by a signal (state `T` in
/// `/proc/<pid>/stat`; a tracing stop, `t`, is not).
pub fn is_stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .as_deref()
        .and_then(state_of)
        == Some('T')
}

/// The state letter of a `/proc/<pid>/stat` line: the field after the
/// command, which is in parentheses and may hold spaces and parentheses.
fn state_of(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_follows_the_last_parenthesis() {
        assert_eq!(state_of("123 (a) b) T 1 2 3"), Some('T'));
        assert_eq!(state_of("7 (sleep) S 1"), Some('S'));
        assert_eq!(state_of("7 (gdb-target) t 1"), Some('t'));
        assert_eq!(state_of("garbage"), None);
    }

    #[test]
    fn a_stopped_child_reads_as_stopped_and_a_running_one_does_not() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        assert!(!is_stopped(pid));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !is_stopped(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(is_stopped(pid));
        let _ = child.kill();
        let _ = child.wait();
    }
}
