//! Hang reports (`rlaunch --hang-timeout`, `--timeout`, a dead rank,
//! SIGQUIT, a deadlock with ranks in finalize) on examples/hang.rs, over
//! shm and tcp: a wait nobody can satisfy while the other ranks are in
//! finalize ends the job within 4 s (under 1 s here; the emulated guest
//! is slower), naming the waiting rank, its call and
//! source line and the ranks in finalize with theirs; two ranks waiting
//! for values only the other could write are said to be stuck (not a
//! cycle of calls); a rank killed while the others wait in a
//! barrier is named as the reason they wait. The C API's reports are in
//! tests/capi.rs.

mod common;
use common::*;

use std::time::{Duration, Instant};

const HANG_TIMEOUT: f64 = 2.0;

fn hang(transport: &str, bug: &str, options: &[&str]) -> Outcome {
    let program = example("hang");
    let mut args = vec!["-n", "4", "--transport", transport];
    args.extend_from_slice(options);
    args.extend_from_slice(&[&program, bug]);
    rlaunch(&args)
}

#[test]
fn a_wait_nobody_can_satisfy_with_the_others_in_finalize_ends_the_job_at_once() {
    for (transport, _) in transports() {
        // Timed from the moment rank 0 starts waiting: start-up is slow in
        // the Soft-RoCE guest, where this runs over verbs. The hang
        // timeout is longer than the bound: the deadlock ends it first.
        let timeout = (HANG_TIMEOUT * 5.0).to_string();
        let program = example("hang");
        let args = [
            "-n",
            "4",
            "--transport",
            transport,
            "--hang-timeout",
            &timeout,
            &program,
            "wait",
        ];
        let mut child = spawn_rlaunch(&args);
        let _ = wait_for_lines(&mut child, "hang: rank 0 waits", 1);
        let waiting_since = Instant::now();
        let out = finish(child);
        let took = waiting_since.elapsed();
        // Ranks 1-3 were told to leave finalize; their explicit finalize
        // returned an error, and the example exits 1.
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        // Well under 1 s on this host; the bound leaves room for the
        // emulated Soft-RoCE guest, and is far below the hang timeout.
        assert!(
            took < Duration::from_secs_f64(HANG_TIMEOUT + 2.0),
            "{transport}: reported after {took:?}: {out:?}"
        );
        assert!(
            out.stderr
                .contains("rlaunch: deadlock: ranks 1-3 in finalize (rank 1 at examples/hang.rs:"),
            "{out:?}"
        );
        assert!(!out.stderr.contains("--hang-timeout"), "{out:?}");
        let waiting = &report_line(&out, 0);
        assert!(waiting.contains("wait_until at examples/hang.rs:"), "{waiting}");
        assert!(waiting.contains(", now 0)"), "{waiting}");
        assert!(
            waiting.contains("no other rank is left to write it (ranks 1-3 in finalize)"),
            "{waiting}"
        );
        for rank in 1..4 {
            let line = &report_line(&out, rank);
            assert!(line.contains("in finalize at examples/hang.rs:"), "{line}");
        }
        assert!(!out.stderr.contains("cycle"), "{out:?}");
    }
}

#[test]
fn two_ranks_waiting_for_each_others_values_are_reported_stuck() {
    for (transport, _) in transports() {
        // Two ranks: nobody is in finalize, so only --hang-timeout ends it.
        let program = example("hang");
        let out = rlaunch(&[
            "-n",
            "2",
            "--transport",
            transport,
            "--hang-timeout",
            "2",
            &program,
            "cycle",
        ]);
        assert_eq!(out.code, Some(124), "{transport}: {out:?}");
        assert!(out.stderr.contains("--hang-timeout 2"), "{out:?}");
        for rank in 0..2 {
            let line = &report_line(&out, rank);
            assert!(line.contains("signal_wait_until at examples/hang.rs:"), "{line}");
            assert!(
                line.contains("waits for the 8-byte object allocated at examples/hang.rs:35:"),
                "the object is named by its allocation: {line}"
            );
            assert!(line.contains("to become == 1"), "{line}");
            assert!(
                line.contains(&format!("only rank {} could write it", 1 - rank)),
                "{line}"
            );
        }
        assert!(
            out.stderr.contains("no rank can go on: rank 0 waits for a value rank 1 could write, rank 1 waits for a value rank 0 could write"),
            "{transport}: {out:?}"
        );
    }
}

#[test]
fn a_rank_killed_in_a_barrier_is_named_as_the_reason_the_others_wait() {
    for (transport, _) in transports() {
        let out = hang(transport, "die", &[]);
        assert_eq!(out.code, Some(128 + 9), "{transport}: {out:?}");
        assert!(out.stderr.contains("rank 3 on host"), "{out:?}");
        for rank in 0..3 {
            let line = &report_line(&out, rank);
            assert!(line.contains("barrier at examples/hang.rs:"), "{line}");
            assert!(
                line.contains("rank 3, which was killed by signal 9 (SIGKILL): that is why it waits"),
                "{transport}: {line}"
            );
        }
    }
}

#[test]
fn timeout_prints_the_report_and_sigquit_prints_it_without_ending_the_job() {
    for (transport, _) in transports() {
        let program = example("hang");
        let mut child = spawn_rlaunch(&[
            "-n",
            "2",
            "--transport",
            transport,
            "--timeout",
            "10",
            &program,
            "cycle",
        ]);
        let _ = wait_for_lines(&mut child, "hang: rank", 2);
        std::thread::sleep(Duration::from_millis(1500));
        send_signal(&child, libc::SIGQUIT);
        let status_now = child.try_wait().expect("wait");
        assert!(status_now.is_none(), "SIGQUIT ended the job");
        let out = finish(child);
        assert_eq!(out.code, Some(124), "{transport}: {out:?}");
        let quit = out.stderr.find("SIGQUIT: where every rank is (the job goes on)");
        let timed_out = out.stderr.find("where every rank was");
        assert!(
            quit.is_some() && timed_out.is_some() && quit < timed_out,
            "{transport}: {out:?}"
        );
        let rank_0_waits = out
            .stderr
            .lines()
            .filter(|l| l.contains("  rank 0 (") && l.contains("signal_wait_until at examples/hang.rs:"))
            .count();
        assert_eq!(rank_0_waits, 2, "in both reports: {transport}: {out:?}");
    }
}
