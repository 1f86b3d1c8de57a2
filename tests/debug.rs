//! The checking mode (`rlaunch --debug`) on examples/misuse.rs, over shm
//! and tcp: mismatched collectives and mismatched allocations are errors
//! naming both ranks' calls and source lines (no hang); a broadcast into
//! the previous reduction's destination with no barrier between is an
//! error; the same calls done right pass. The C API's checks (and its
//! bounds check) are in tests/capi.rs.

mod common;
use common::*;

fn misuse(transport: &str, mistake: &str) -> Outcome {
    let program = example("misuse");
    rlaunch(&[
        "-n",
        "4",
        "--transport",
        transport,
        "--timeout",
        "60",
        "--debug",
        &program,
        mistake,
    ])
}

#[test]
fn mismatched_collectives_are_reported_with_both_calls() {
    for (transport, _) in transports() {
        let out = misuse(transport, "mismatch");
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("collectives do not match"), "{out:?}");
        assert!(
            out.stderr
                .contains("called broadcast(root 0, 4 elements of 8 bytes) at examples/misuse.rs:"),
            "{out:?}"
        );
        assert!(
            out.stderr
                .contains("rank 3 called reduce(4 elements of 8 bytes) at examples/misuse.rs:")
                || out.stderr.contains("rank 3: reduce at examples/misuse.rs:"),
            "{out:?}"
        );
        assert!(out.stderr.contains("(found by --debug)"), "{out:?}");
    }
}

#[test]
fn a_collective_where_the_others_sync_is_reported() {
    for (transport, _) in transports() {
        let out = misuse(transport, "barrier");
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("collectives do not match"), "{out:?}");
        assert!(
            out.stderr.contains("broadcast(root 0, 4 elements of 8 bytes)"),
            "{out:?}"
        );
        assert!(out.stderr.contains("a barrier or sync"), "{out:?}");
    }
}

#[test]
fn mismatched_allocations_are_reported() {
    for (transport, _) in transports() {
        let out = misuse(transport, "alloc");
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("alloc(128 bytes)"), "{out:?}");
        assert!(out.stderr.contains("alloc(64 bytes)"), "{out:?}");
    }
}

#[test]
fn a_destination_reused_without_a_barrier_is_reported() {
    for (transport, _) in transports() {
        let out = misuse(transport, "reuse");
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("broadcast at examples/misuse.rs:"), "{out:?}");
        assert!(
            out.stderr
                .contains("is the destination of the team's previous collective, reduce at examples/misuse.rs:"),
            "{out:?}"
        );
    }
}

#[test]
fn the_same_calls_done_right_pass_the_checks() {
    for (transport, _) in transports() {
        let out = misuse(transport, "fine");
        assert_eq!(out.code, Some(0), "{transport}: {out:?}");
        assert!(!out.stderr.contains("--debug"), "{out:?}");
    }
}
