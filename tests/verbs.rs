//! RDMA-specific behaviour, run inside the Soft-RoCE VM by
//! `tests/vm/run-suite.sh` against the verbs build of the examples (the
//! `verbs-tests` feature keeps it out of a plain `cargo test`).

mod common;
use common::*;

fn verbs_run(extra: &[&str], program: &str, args: &[&str]) -> Outcome {
    let mut full = vec!["-n", "2", "--transport", "verbs", "--timeout", "120"];
    full.extend_from_slice(extra);
    let program = example(program);
    full.push(&program);
    full.extend_from_slice(args);
    rlaunch(&full)
}

#[test]
fn a_bad_rkey_is_refused_by_the_nic_and_named_on_the_right_rank() {
    // Rank 0 (only) uses a corrupted remote key for rank 1.
    let out = verbs_run(&["-x", "ONESIDE_VERBS_FAULT=bad-rkey:1"], "hello_put", &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("hello_put: rank 0: "), "{out:?}");
    assert!(
        out.stderr
            .contains("with rank 1 failed: work completion remote access error"),
        "{out:?}"
    );
    assert!(
        !out.stderr.contains("hello_put: rank 1: "),
        "rank 1 did nothing wrong: {out:?}"
    );
    assert!(out.stderr.contains("rlaunch: rank 0 on host localhost"), "{out:?}");
}

#[test]
fn an_out_of_range_remote_access_never_reaches_the_wire() {
    let out = verbs_run(&[], "faults", &["oob-put"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .contains("oob-put: refused: rank 0: put of 8 element(s) at index 10 is out of bounds"),
        "{out:?}"
    );
    assert_eq!(out.stdout.matches("object intact: true").count(), 2, "{out:?}");
}

#[test]
fn a_missing_device_is_a_clear_error_at_init() {
    let out = verbs_run(&["-x", "ONESIDE_VERBS_DEVICE=no-such-hca"], "hello_put", &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("cannot use RDMA: no RDMA device named 'no-such-hca' (found: "),
        "{out:?}"
    );
}

#[test]
fn a_low_memlock_limit_says_what_ulimit_should_be() {
    // Root's CAP_IPC_LOCK ignores the limit, so drop it, as an ordinary user lacks it.
    let command = format!(
        "ulimit -l 64 && exec {} -n 2 --transport verbs --timeout 120 {}",
        rlaunch_path().display(),
        example("hello_put")
    );
    let out = finish(
        std::process::Command::new("setpriv")
            .args(["--bounding-set", "-ipc_lock", "sh", "-c", &command])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("the locked-memory limit is 64 KiB"), "{out:?}");
    assert!(out.stderr.contains("ulimit -l unlimited"), "{out:?}");
}

#[test]
fn the_doctor_sees_the_active_port() {
    let out = rlaunch(&["--check", "-H", "localhost"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("verbs:rxe0/1=ACTIVE"), "{out:?}");
}
