//! A rank that leaves early while its peers wait for it (a C `return` or
//! `exit` with a status, `shmem_global_exit`, a Rust `?` out of `main`, a
//! panic, an early `Ok`): the job ends at once with that rank's status, no
//! peer passes a collective the rank never called, and rlaunch says who
//! left and where the others wait. A rank that returns 0 early while the
//! others compute, with no call that needs it, is a legal program and
//! still succeeds. Over shm and tcp (or `ONESIDE_TEST_TRANSPORTS`), in C
//! (`tests/c/early_exit.c`) and Rust (`examples/leave_early.rs`).

mod common;
use common::capi::*;
use common::*;

use std::time::{Duration, Instant};

/// The whole job's bound, start-up and teardown included (debug builds,
/// several tests' jobs side by side on two cores). Before, such a job
/// took 30 s.
const BOUND: Duration = Duration::from_secs(15);

/// How long the waiting ranks may have been blocked when rlaunch ends the
/// job (the goal is 1 s; a loaded machine delays the reports a little).
const BLOCKED_AT_MOST: f64 = 2.5;

/// Checks a job in which rank 1 left early and the others waited for it.
fn ended_at_once(out: &Outcome, took: Duration, code: i32, what: &str) {
    let what = format!("{what} ({took:?}): {out:?}");
    assert_eq!(out.code, Some(code), "{what}");
    assert!(took < BOUND, "{what}");
    for blocked in out.stderr.split(", blocked ").skip(1) {
        let secs: f64 = blocked
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(f64::MAX);
        assert!(secs <= BLOCKED_AT_MOST, "waited {secs} s before rlaunch acted: {what}");
    }
    assert!(!out.stdout.contains("passed the barrier"), "{what}");
    assert!(!out.stderr.contains("panicked at") || what.contains("panic"), "{what}");
}

fn timed(run: impl FnOnce() -> Outcome) -> (Outcome, Duration) {
    let start = Instant::now();
    let out = run();
    (out, start.elapsed())
}

#[test]
fn a_c_pe_that_returns_or_exits_early_ends_the_job_with_its_status() {
    let exe = compile("early_exit");
    for transport in transports_for_c() {
        for n in [2, 4, 8] {
            let (out, took) = timed(|| oshrun(n, transport, &exe, &["return", "2"]));
            let what = format!("return 2 at -np {n} over {transport}");
            ended_at_once(&out, took, 2, &what);
            // It leaves at once with its status, with no farewell to wait in.
            assert!(
                out.stderr.contains("rank 1 on host") && out.stderr.contains("exited with code 2"),
                "{what}: {out:?}"
            );
            assert!(!out.stderr.contains("in finalize"), "{what}: {out:?}");
        }
        let (out, took) = timed(|| oshrun(4, transport, &exe, &["exit", "3"]));
        ended_at_once(&out, took, 3, &format!("exit(3) over {transport}"));
        let (out, took) = timed(|| oshrun(4, transport, &exe, &["global_exit", "5"]));
        ended_at_once(&out, took, 5, &format!("shmem_global_exit(5) over {transport}"));
    }
}

/// The bound on a job whose rank fails at once while the others compute
/// for [`COMPUTE`]: start-up, the failure and teardown (the goal is 1 s
/// after the failure; debug builds, ranks sharing two cores).
const FAILED_WHILE_COMPUTING: Duration = Duration::from_secs(4);
const COMPUTE: &str = "10";

/// A failing rank ends the job at once whatever the others do: here they
/// compute for 10 s with no call of oneside's. Before, a C `exit(3)` or
/// `return 3` slept in its at-exit farewell until the others finished,
/// and a Rust `?` out of main in its World's drop, with its error printed
/// only after the others were done.
#[test]
fn a_rank_that_fails_while_the_others_compute_ends_the_job_at_once() {
    let exe = compile("early_exit");
    let program = example("leave_early");
    for transport in transports_for_c() {
        for n in [2, 4, 8] {
            let np = n.to_string();
            for how in ["exit", "return"] {
                let (out, took) = timed(|| oshrun(n, transport, &exe, &[how, "3", COMPUTE]));
                let what = format!("C {how} 3 at -np {n} over {transport} ({took:?}): {out:?}");
                assert_eq!(out.code, Some(3), "{what}");
                assert!(took < FAILED_WHILE_COMPUTING, "{what}");
                assert!(out.stderr.contains("exited with code 3"), "{what}");
            }
            let rust_transport = if transport == "shm" { "auto" } else { transport };
            for (mode, code) in [("error", 1), ("panic", 101)] {
                let args = ["-n", &np, "--transport", rust_transport, &program, mode, "1", COMPUTE];
                let (out, took) = timed(|| rlaunch(&args));
                let what = format!("Rust {mode} at -n {n} over {transport} ({took:?}): {out:?}");
                assert_eq!(out.code, Some(code), "{what}");
                assert!(took < FAILED_WHILE_COMPUTING, "{what}");
                if mode == "error" {
                    // Its error first, then rlaunch's line.
                    let error = out.stderr.find("Error: rank 1: put targets rank ");
                    let exited = out.stderr.find("exited with code 1");
                    assert!(error.is_some() && error < exited, "{what}");
                }
            }
        }
    }
}

#[test]
fn a_c_pe_that_returns_0_early_while_the_others_compute_is_legal() {
    let exe = compile("early_exit");
    for transport in transports_for_c() {
        let out = oshrun(3, transport, &exe, &["compute", "3"]);
        assert_eq!(out.code, Some(0), "over {transport}: {out:?}");
        assert_eq!(out.stdout.matches("computed").count(), 2, "over {transport}: {out:?}");
        assert!(!out.stderr.contains("deadlock"), "over {transport}: {out:?}");
    }
}

#[test]
fn a_rust_rank_whose_error_leaves_main_ends_the_job_with_a_sentence() {
    let program = example("leave_early");
    for (transport, _) in transports() {
        for n in [2, 4, 8] {
            let n = n.to_string();
            let (out, took) = timed(|| rlaunch(&["-n", &n, "--transport", transport, &program, "error", "1"]));
            let what = format!("`?` at -n {n} over {transport}");
            ended_at_once(&out, took, 1, &what);
            assert!(
                out.stderr.contains("rank 1 on host") && out.stderr.contains("exited with code 1"),
                "{what}: {out:?}"
            );
            // The error that left main, as a sentence rather than a struct.
            assert!(
                out.stderr.contains("Error: rank 1: put targets rank "),
                "{what}: {out:?}"
            );
            // And where the program made the call (`#[track_caller]`).
            assert!(
                out.stderr.contains("\n  at examples/leave_early.rs:33:"),
                "{what}: {out:?}"
            );
        }
    }
}

#[test]
fn a_rust_rank_that_panics_ends_the_job_with_its_status() {
    let program = example("leave_early");
    for (transport, _) in transports() {
        let (out, took) = timed(|| rlaunch(&["-n", "4", "--transport", transport, &program, "panic", "2"]));
        ended_at_once(&out, took, 101, &format!("panic over {transport}"));
        assert!(out.stderr.contains("rank 2 gives up"), "{out:?}");
    }
}

#[test]
fn waits_that_only_a_rank_in_finalize_could_end_are_a_deadlock() {
    let program = example("leave_early");
    for (transport, _) in transports() {
        let (out, took) = timed(|| rlaunch(&["-n", "3", "--transport", transport, &program, "wait", "2"]));
        let what = format!("wait over {transport}");
        // Rank 2 returned Ok: its status is 0, but the job failed.
        ended_at_once(&out, took, 1, &what);
        assert!(!out.stdout.contains("saw the word"), "{what}: {out:?}");
        assert!(
            out.stderr
                .contains("rank 2 in finalize (rank 2 when its World was dropped")
                && out.stderr.contains("every other rank is blocked (ranks 0-1;"),
            "{what}: {out:?}"
        );
        assert!(
            out.stderr.contains("exited with code 0 after leaving finalize early"),
            "{what}: {out:?}"
        );
    }
}

#[test]
fn a_rust_rank_that_returns_early_while_the_others_compute_is_legal() {
    let program = example("leave_early");
    for (transport, _) in transports() {
        let out = rlaunch(&["-n", "3", "--transport", transport, &program, "compute", "0", "3"]);
        assert_eq!(out.code, Some(0), "over {transport}: {out:?}");
        assert_eq!(out.stdout.matches("computed for 3 s").count(), 2, "{out:?}");
        assert!(!out.stderr.contains("deadlock"), "over {transport}: {out:?}");
    }
}
