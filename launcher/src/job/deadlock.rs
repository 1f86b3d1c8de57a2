//! Deadlocks around finalize: a rank that left early (returned from main,
//! `?`, `exit`) waits in its farewell, and a peer waits for it in a call it
//! will never make. Finalize takes part in no collective of the program's,
//! so nothing but the job's end releases that peer; rlaunch ends it as soon
//! as the deadlock is sure, instead of letting the job sit.
//!
//! Two shapes are certain:
//! * a running rank's collective step names a rank in finalize (that rank
//!   will never reach the step);
//! * every rank not in finalize is blocked in a wait (nobody is left to
//!   write the word, release the lock or reach the step).
//!
//! A wait for a peer's answer (a get's data, a quiet's acknowledgement) is
//! neither: the peer's progress engine answers even from finalize. Nor is
//! a wait for a step the rank in finalize has already signalled: it said
//! in `Finalized` how far it signalled on each team (by team slot), and a
//! step up to there is on its way (over a lossy link TCP may take seconds
//! to resend it, and the waiter's `Moving` as long), so only the hang
//! reports may judge it.
//!
//! rlaunch knows blocks only from ranks' `Stalled` (sent once a rank has
//! been blocked 300 ms), so a block may have ended without rlaunch knowing
//! yet: a peer's last put may be the very word a waiter wanted. A thread
//! that leaves a reported wait says `Moving` itself, before its call
//! returns, and it re-checks its condition at least every 10 ms (a nap) or
//! is woken by the store; so a deadlock is acted on only once it has held
//! for [`CONFIRM`] with no such news.

use super::RankState;
use oneside::protocol::stall::ThreadStall;
use oneside::site::phrase;
use std::time::{Duration, Instant};

/// How long a deadlock must hold, with no rank moving, before rlaunch acts.
pub const CONFIRM: Duration = Duration::from_millis(200);

/// How long ranks told to give up their finalize get to exit by
/// themselves (with their own exit status) before they are stopped.
pub const GIVE_UP_GRACE: Duration = Duration::from_secs(1);

/// A certain deadlock: who is in finalize and who waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deadlock {
    /// The ranks in finalize (that left the program's calls behind).
    pub finalizing: Vec<usize>,
    /// One line that says who waits for whom.
    pub why: String,
}

/// The deadlock the ranks' states show, if they show one.
pub fn find(states: &[RankState]) -> Option<Deadlock> {
    let live = |r: &usize| states[*r].ending.is_none();
    let finalizing: Vec<usize> = (0..states.len())
        .filter(live)
        .filter(|&r| states[r].finalized && !states[r].gave_up)
        .collect();
    let running: Vec<usize> = (0..states.len())
        .filter(live)
        .filter(|&r| !states[r].finalized)
        .collect();
    if finalizing.is_empty() || running.is_empty() {
        return None;
    }
    // A step the rank in finalize signalled is on its way, however late.
    let in_flight = |thread: &ThreadStall, gone: usize| {
        thread.step_of.is_some_and(|(slot, wanted)| {
            states[gone]
                .finalize_reached
                .iter()
                .any(|&(used, reached)| used == slot && reached >= wanted)
        })
    };
    let missing = |thread: &ThreadStall| {
        thread
            .on
            .iter()
            .map(|&on| on as usize)
            .find(|&on| finalizing.contains(&on) && !in_flight(thread, on))
    };
    for &r in &running {
        let Some(seen) = &states[r].stall else { continue };
        // An answer comes from the peer's progress engine even while that
        // peer is in finalize: only a collective's step can never come.
        for thread in seen.stall.threads.iter().filter(|t| !t.answer) {
            if let Some(gone) = missing(thread) {
                return Some(Deadlock {
                    why: format!(
                        "rank {r} waits in {}{} for rank {gone}, which is in finalize {} and will never make that call",
                        thread.call,
                        phrase(&thread.at),
                        states[gone].finalize_at
                    ),
                    finalizing,
                });
            }
        }
    }
    // Blocked with nothing on its way: no answer, and no step that a rank
    // in finalize signalled.
    let stuck = |r: &usize| {
        states[*r].stall.as_ref().is_some_and(|seen| {
            seen.stall
                .threads
                .iter()
                .all(|t| !t.answer && !t.on.iter().any(|&on| in_flight(t, on as usize)))
        })
    };
    if running.iter().all(stuck) {
        let first = &states[running[0]].stall.as_ref()?.stall.threads;
        let call = first
            .first()
            .map_or(String::new(), |t| format!(" in {}{}", t.call, phrase(&t.at)));
        return Some(Deadlock {
            why: format!(
                "{} in finalize (rank {} {}) and will make no further call, and every other rank is \
                 blocked ({}; rank {}{call}): no rank is left to end those waits",
                super::hang::ranks(&finalizing),
                finalizing[0],
                states[finalizing[0]].finalize_at,
                super::hang::ranks(&running),
                running[0]
            ),
            finalizing,
        });
    }
    None
}

/// The supervisor's watch for a deadlock around finalize
/// (this module): since when one has held, and once acted on, until when
/// the ranks told to give up may take to exit.
#[derive(Default)]
pub struct Watch {
    since: Option<Instant>,
    giving_up_until: Option<Instant>,
}

impl Watch {
    /// When the supervisor must look again.
    pub fn wake(&self) -> Option<Instant> {
        self.giving_up_until.or(self.since.map(|s| s + CONFIRM))
    }

    /// Looks at the ranks after each event; returns an exit status when
    /// the job must be stopped now.
    pub fn check(&mut self, states: &mut [RankState], hosts: &[&str], mailbox: &super::pmi::Mailbox) -> Option<u8> {
        if let Some(until) = self.giving_up_until {
            // The ranks told to give up end the job by exiting (judge);
            // one that has not done so in time is stopped with the rest.
            let waiting = states.iter().any(|s| s.gave_up && s.ending.is_none());
            return (waiting && Instant::now() >= until).then(|| {
                eprintln!(
                    "rlaunch: the ranks told to leave finalize did not exit within {:?}; stopping the job",
                    GIVE_UP_GRACE
                );
                1
            });
        }
        let Some(found) = find(states) else {
            self.since = None;
            return None;
        };
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() < CONFIRM {
            return None;
        }
        super::print_report(&format!("deadlock: {}; ending the job", found.why), states, hosts);
        for &rank in &found.finalizing {
            states[rank].gave_up = true;
            mailbox.send(
                rank,
                oneside::protocol::wire::Msg::Abort {
                    reason: found.why.clone(),
                },
            );
        }
        self.giving_up_until = Some(Instant::now() + GIVE_UP_GRACE);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::hang::Seen;
    use crate::job::report::Ending;
    use oneside::protocol::stall::Stall;

    fn blocked(rank: u32, call: &str, on: &[u32], anyone: bool) -> RankState {
        let thread = ThreadStall {
            call: call.into(),
            at: "prog.c:12".into(),
            waits: "something".into(),
            on: on.to_vec(),
            anyone,
            answer: false,
            finalizing: false,
            step_of: None,
        };
        RankState {
            registered: true,
            stall: Some(Seen::new(Stall {
                rank,
                for_ms: 400,
                threads: vec![thread],
            })),
            ..RankState::default()
        }
    }

    fn in_finalize() -> RankState {
        RankState {
            registered: true,
            finalized: true,
            finalize_at: "at exit".into(),
            ..RankState::default()
        }
    }

    fn running() -> RankState {
        RankState {
            registered: true,
            ..RankState::default()
        }
    }

    #[test]
    fn a_collective_step_on_a_rank_in_finalize_is_a_deadlock_even_while_others_compute() {
        let states = [blocked(0, "shmem_barrier_all", &[1], false), in_finalize(), running()];
        let found = find(&states).expect("rank 0 waits for rank 1's step");
        assert_eq!(found.finalizing, vec![1]);
        assert!(
            found
                .why
                .contains("rank 0 waits in shmem_barrier_all at prog.c:12 for rank 1, which is in finalize at exit"),
            "{found:?}"
        );
    }

    #[test]
    fn every_running_rank_blocked_beside_a_rank_in_finalize_is_a_deadlock() {
        let states = [
            blocked(0, "wait_until", &[], true),
            in_finalize(),
            blocked(2, "barrier", &[0], false),
        ];
        let found = find(&states).expect("nobody is left to write");
        assert!(
            found
                .why
                .contains("every other rank is blocked (ranks 0, 2; rank 0 in wait_until at prog.c:12)"),
            "{found:?}"
        );
        assert!(
            found.why.starts_with("rank 1 in finalize (rank 1 at exit)"),
            "{found:?}"
        );
    }

    #[test]
    fn an_early_finalize_while_the_others_compute_is_legal() {
        assert_eq!(find(&[in_finalize(), running(), running()]), None);
        // One computes, one waits for a word the computing one may write.
        assert_eq!(
            find(&[in_finalize(), running(), blocked(2, "wait_until", &[], true)]),
            None
        );
    }

    #[test]
    fn all_in_finalize_or_gone_is_no_deadlock() {
        let done = RankState {
            finalized: true,
            ending: Some(Ending::Code(0)),
            ..RankState::default()
        };
        assert_eq!(find(&[in_finalize(), in_finalize()]), None);
        assert_eq!(find(&[done, in_finalize()]), None);
        assert_eq!(find(&[blocked(0, "barrier", &[1], false), running()]), None);
    }

    #[test]
    fn a_wait_for_an_answer_is_no_deadlock_the_engine_answers_from_finalize() {
        let mut answer = blocked(0, "get", &[1], false);
        if let Some(seen) = answer.stall.as_mut() {
            seen.stall.threads[0].answer = true;
        }
        assert_eq!(find(&[answer, in_finalize()]), None);
    }

    /// Rank `rank` waits for `on`'s step `step` of the world team's call
    /// `call` (the flag value `(call << 24) | step`).
    fn in_step(rank: u32, on: u32, call: u64, step: u64) -> RankState {
        let mut state = blocked(rank, "broadcast", &[on], false);
        if let Some(seen) = state.stall.as_mut() {
            seen.stall.threads[0].step_of = Some((0, call << 24 | step));
        }
        state
    }

    #[test]
    fn a_step_the_rank_in_finalize_signalled_is_in_flight_not_missing() {
        // examples/traffic across a lossy link: the root broadcast (call 9
        // on the world team, slot 0) and finalized; its data, and rank 2's
        // news that it moved on, are still being resent.
        let root = |reached: u64| RankState {
            finalize_reached: vec![(0, reached), (3, 1 << 24)],
            ..in_finalize()
        };
        let waits = || [in_step(2, 0, 9, 1), in_step(3, 2, 9, 1)];
        let states = [[root(9 << 24 | 1), in_finalize()], waits()].concat();
        assert_eq!(find(&states), None);
        // Root began call 9 but failed before signalling (a bad root, a
        // mismatch): the same waits are a deadlock.
        let states = [[root(8 << 24 | 3), in_finalize()], waits()].concat();
        let found = find(&states).expect("rank 0 never signalled call 9");
        assert!(found.why.contains("rank 2 waits in broadcast"), "{found:?}");
        // Steps signalled on another team say nothing of this one.
        let other = RankState {
            finalize_reached: vec![(1, 20 << 24)],
            ..in_finalize()
        };
        assert!(find(&[other, in_step(1, 0, 9, 1)]).is_some());
    }

    #[test]
    fn ranks_already_told_to_give_up_are_not_found_again() {
        let gave_up = RankState {
            gave_up: true,
            ..in_finalize()
        };
        assert_eq!(find(&[blocked(0, "barrier", &[1], false), gave_up]), None);
    }
}
