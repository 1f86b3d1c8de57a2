//! Hang reports: where every rank is blocked, from the latest `Stalled`
//! each rank sent, printed when the whole job has been blocked for
//! `--hang-timeout`, when `--timeout` fires, when a rank dies while others
//! wait, and on SIGQUIT (Ctrl-\) without ending the job.
//!
//! Who waits for whom: a collective's step names the rank it waits for; a
//! wait on a rank's own word (a `wait_until`, a signal, a lock) can be
//! ended by any rank still running outside finalize. Following those
//! edges finds a cycle (each rank waits for another in the loop), or a
//! dead rank at the end of a chain: the reason the others wait.

use super::report::Ending;
use super::RankState;
use oneside::protocol::stall::Stall;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A rank's latest stall, and when its oldest-running block began here.
#[derive(Clone, Debug)]
pub struct Seen {
    pub since: Instant,
    pub stall: Stall,
}

impl Seen {
    pub fn new(stall: Stall) -> Seen {
        let since = Instant::now() - Duration::from_millis(stall.for_ms);
        Seen { since, stall }
    }
}

/// Whether every rank still running has been blocked for at least
/// `timeout`, with no progress since.
pub fn hung(states: &[RankState], timeout: Duration) -> bool {
    let mut live = states.iter().filter(|s| s.ending.is_none()).peekable();
    live.peek().is_some() && live.all(|s| s.stall.as_ref().is_some_and(|seen| seen.since.elapsed() >= timeout))
}

static QUIT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_quit(_: libc::c_int) {
    QUIT.store(true, Ordering::Relaxed);
}

/// Makes SIGQUIT (Ctrl-\) ask for a report instead of ending rlaunch.
pub fn catch_quit() {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe; the ranks, exec'd children, get the default back.
    unsafe { libc::signal(libc::SIGQUIT, on_quit as *const () as libc::sighandler_t) };
}

/// Whether SIGQUIT arrived since the last call.
pub fn quit_asked() -> bool {
    QUIT.swap(false, Ordering::Relaxed)
}

/// The report's lines: one per rank, then the cycle or the dead rank the
/// waits lead to. `hosts[r]` names rank r's host.
pub fn report(states: &[RankState], hosts: &[&str]) -> Vec<String> {
    let graph = Graph::new(states);
    let mut lines = Vec::with_capacity(states.len() + 2);
    for (rank, state) in states.iter().enumerate() {
        let at = format!("  rank {rank} ({}): ", hosts.get(rank).copied().unwrap_or("?"));
        let Some(seen) = state.stall.as_ref().filter(|_| state.ending.is_none()) else {
            lines.push(at + &not_blocked(state));
            continue;
        };
        for thread in &seen.stall.threads {
            let site = oneside::site::phrase(&thread.at);
            let mut line = format!(
                "{at}{}{site}, blocked {:.1} s: waits for {}",
                thread.call,
                seen.since.elapsed().as_secs_f64(),
                thread.waits
            );
            if thread.anyone {
                line += &graph.writers(rank);
            }
            if let Some(reason) = graph.dead_end(rank, &thread.on) {
                line += &reason;
            }
            lines.push(line);
        }
    }
    // "cycle" only for a real one: each rank waits for a call or an
    // answer of the next. A loop through a wait on a value (which any
    // running rank could write) is said as what it is.
    if let Some(cycle) = graph.cycle(true) {
        let path: Vec<String> = cycle.iter().map(|r| format!("rank {r}")).collect();
        lines.push(format!(
            "  cycle: {} -> rank {}: each waits for the next, so none can go on",
            path.join(" -> "),
            cycle[0]
        ));
    } else if let Some(ring) = graph.cycle(false) {
        let steps: Vec<String> = ring
            .iter()
            .zip(ring.iter().cycle().skip(1))
            .map(|(&from, &to)| match graph.definite(from, to) {
                true => format!("rank {from} waits for rank {to}"),
                false => format!("rank {from} waits for a value rank {to} could write"),
            })
            .collect();
        lines.push(format!(
            "  no rank can go on: {}; each of them is blocked, so none of those writes will come",
            steps.join(", ")
        ));
    }
    lines
}

/// What rlaunch says of a rank whose host fell silent.
pub fn silent() -> String {
    oneside::protocol::liveness::silent_host("its host")
}

fn not_blocked(state: &RankState) -> String {
    match state.ending {
        None if state.silent => silent(),
        Some(Ending::Code(0)) if state.finalized => "finalized and exited".into(),
        Some(ending) => ending.describe(),
        None if state.finalized => format!("in finalize {}, waiting for every rank's farewell", state.finalize_at),
        None if state.stall.is_none() => "running (not blocked in oneside, or for less than a second)".into(),
        None => "running".into(),
    }
}

/// Who waits for whom.
struct Graph<'a> {
    states: &'a [RankState],
    /// Edges of each blocked rank, to the ranks that could end its wait:
    /// `true` where it waits for that rank's call or answer, `false` where
    /// that rank could write the value it waits for.
    waits_for: Vec<Vec<(usize, bool)>>,
}

impl<'a> Graph<'a> {
    fn new(states: &'a [RankState]) -> Graph<'a> {
        let writers: Vec<usize> = (0..states.len()).filter(|&r| could_write(&states[r])).collect();
        let waits_for = (0..states.len())
            .map(|rank| match blocked(&states[rank]) {
                None => Vec::new(),
                Some(stall) => {
                    let mut to: Vec<(usize, bool)> = Vec::new();
                    for t in &stall.threads {
                        to.extend(t.on.iter().map(|&r| (r as usize, true)));
                        if t.anyone {
                            to.extend(writers.iter().filter(|&&w| w != rank).map(|&w| (w, false)));
                        }
                    }
                    // A definite edge first, so it wins over a possible one.
                    to.sort_unstable_by_key(|&(r, definite)| (r, !definite));
                    to.dedup_by_key(|&mut (r, _)| r);
                    to
                }
            })
            .collect();
        Graph { states, waits_for }
    }

    /// Why nobody ends a wait on rank `rank`'s own word: the ranks that
    /// could write it, or that none is left.
    fn writers(&self, rank: usize) -> String {
        let others: Vec<usize> = (0..self.states.len())
            .filter(|&r| r != rank && could_write(&self.states[r]))
            .collect();
        let finalizing: Vec<usize> = (0..self.states.len())
            .filter(|&r| in_finalize(&self.states[r]))
            .collect();
        let in_finalize = match finalizing.is_empty() {
            true => String::new(),
            false => format!(" ({} in finalize)", ranks(&finalizing)),
        };
        match others.is_empty() {
            true => format!("; no other rank is left to write it{in_finalize}"),
            false => format!("; only {} could write it{in_finalize}", ranks(&others)),
        }
    }

    /// Where the chain of named waits from `on` ends, when it ends at a
    /// rank that died.
    fn dead_end(&self, from: usize, on: &[u32]) -> Option<String> {
        let mut chain = vec![from];
        let mut next = *on.first()? as usize;
        while !chain.contains(&next) {
            let state = self.states.get(next)?;
            if let Some(ending) = state.ending.filter(|e| !e.success()) {
                let via: Vec<String> = chain[1..]
                    .iter()
                    .map(|r| format!("rank {r}, which waits for "))
                    .collect();
                return Some(format!(
                    " -- {}rank {next}, which {}: that is why it waits",
                    via.concat(),
                    ending.describe()
                ));
            }
            let stall = blocked(state)?;
            chain.push(next);
            next = *stall.threads.iter().find_map(|t| t.on.first())? as usize;
        }
        None
    }

    /// Whether `from` waits for `to`'s own call or answer.
    fn definite(&self, from: usize, to: usize) -> bool {
        self.waits_for[from].iter().any(|&(r, definite)| r == to && definite)
    }

    /// A cycle among blocked ranks, if the waits form one; with
    /// `definite_only`, of waits for a rank's call or answer alone.
    fn cycle(&self, definite_only: bool) -> Option<Vec<usize>> {
        let n = self.states.len();
        // 0: not seen, 1: on the current path, 2: done.
        let mut mark = vec![0u8; n];
        let mut path: Vec<usize> = Vec::new();
        for start in 0..n {
            if mark[start] != 0 || blocked(&self.states[start]).is_none() {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            mark[start] = 1;
            path.push(start);
            while let Some(&mut (node, ref mut edge)) = stack.last_mut() {
                let Some(&(to, definite)) = self.waits_for[node].get(*edge) else {
                    mark[node] = 2;
                    stack.pop();
                    path.pop();
                    continue;
                };
                *edge += 1;
                if blocked(&self.states[to]).is_none() || (definite_only && !definite) {
                    continue;
                }
                match mark[to] {
                    1 => {
                        let from = path.iter().position(|&r| r == to)?;
                        return Some(path[from..].to_vec());
                    }
                    0 => {
                        mark[to] = 1;
                        path.push(to);
                        stack.push((to, 0));
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

/// The rank's stall, if it is still running and blocked.
fn blocked(state: &RankState) -> Option<&Stall> {
    state
        .stall
        .as_ref()
        .filter(|_| state.ending.is_none())
        .map(|s| &s.stall)
}

/// Whether the rank could still write a word: running, and not in finalize.
fn could_write(state: &RankState) -> bool {
    state.ending.is_none() && !in_finalize(state)
}

/// Whether the rank is in finalize: it said `Finalized`, or its threads
/// are blocked in finalize's own waits.
fn in_finalize(state: &RankState) -> bool {
    state.ending.is_none() && (state.finalized || blocked(state).is_some_and(Stall::finalizing))
}

/// `ranks 1-3, 5`.
pub(crate) fn ranks(list: &[usize]) -> String {
    let noun = if list.len() == 1 { "rank" } else { "ranks" };
    format!("{noun} {}", crate::words::number_runs(list, ", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oneside::protocol::stall::ThreadStall;

    fn stalled(rank: u32, call: &str, on: &[u32], anyone: bool) -> RankState {
        let thread = ThreadStall {
            call: call.into(),
            at: "x.rs:1:1".into(),
            waits: "something".into(),
            on: on.to_vec(),
            anyone,
            answer: false,
            finalizing: call == "finalize",
            step_of: None,
        };
        let stall = Stall {
            rank,
            for_ms: 5000,
            threads: vec![thread],
        };
        RankState {
            registered: true,
            stall: Some(Seen::new(stall)),
            ..RankState::default()
        }
    }

    #[test]
    fn two_ranks_waiting_on_their_own_words_are_not_called_a_cycle() {
        let states = [stalled(0, "wait_until", &[], true), stalled(1, "wait_until", &[], true)];
        let lines = report(&states, &["h", "h"]);
        assert!(!lines.iter().any(|l| l.contains("cycle")), "{lines:?}");
        assert!(
            lines.last().unwrap().contains(
                "no rank can go on: rank 0 waits for a value rank 1 could write, rank 1 waits for a value rank 0 could write"
            ),
            "{lines:?}"
        );
        assert!(hung(&states, Duration::from_secs(3)));
    }

    #[test]
    fn a_value_wait_against_a_collective_is_said_as_such() {
        let states = [stalled(0, "wait_until", &[], true), stalled(1, "barrier", &[0], false)];
        let lines = report(&states, &["h", "h"]);
        assert!(!lines.iter().any(|l| l.contains("cycle")), "{lines:?}");
        assert!(
            lines
                .last()
                .unwrap()
                .contains("rank 0 waits for a value rank 1 could write, rank 1 waits for rank 0"),
            "{lines:?}"
        );
    }

    #[test]
    fn collectives_waiting_on_each_other_are_a_cycle() {
        let states = [stalled(0, "barrier", &[1], false), stalled(1, "broadcast", &[0], false)];
        let lines = report(&states, &["h", "h"]);
        assert!(
            lines.last().unwrap().contains("cycle: rank 0 -> rank 1 -> rank 0"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_wait_with_everyone_else_in_finalize_says_nobody_can_end_it() {
        let states = [
            stalled(0, "wait_until", &[], true),
            stalled(1, "finalize", &[0], false),
            stalled(2, "finalize", &[1], false),
        ];
        let lines = report(&states, &["h"; 3]);
        assert!(
            lines[0].contains("no other rank is left to write it (ranks 1-2 in finalize)"),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("cycle")), "{lines:?}");
    }

    #[test]
    fn a_chain_of_waits_ending_at_a_dead_rank_names_it() {
        let dead = RankState {
            ending: Some(Ending::Signal(9)),
            ..RankState::default()
        };
        let states = [
            stalled(0, "barrier", &[3], false),
            RankState::default(),
            dead,
            stalled(3, "barrier", &[2], false),
        ];
        let lines = report(&states, &["h"; 4]);
        assert!(
            lines[0].contains("rank 3, which waits for rank 2, which was killed by signal 9"),
            "{lines:?}"
        );
        assert!(
            lines[3].contains("-- rank 2, which was killed by signal 9"),
            "{lines:?}"
        );
        assert!(!hung(&states, Duration::from_secs(3)), "rank 1 is running");
    }

    #[test]
    fn rank_lists_are_compressed() {
        assert_eq!(ranks(&[1, 2, 3, 5]), "ranks 1-3, 5");
        assert_eq!(ranks(&[4]), "rank 4");
    }
}
