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
    // Rank 1 did nothing wrong. It may see the broken connection (its own
    // writes to rank 0 flushed), but never an access error of its own.
    for line in out.stderr.lines().filter(|l| l.contains("hello_put: rank 1: ")) {
        assert!(
            line.contains("Flushed") && line.contains("after an earlier error, here or at rank 0"),
            "{out:?}"
        );
    }
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

/// Runs atomic_hammer under `args` (rlaunch options) and checks that every
/// rank reported success with atomics by the NIC and the given data path.
fn hammer(args: &[&str], ranks: usize, atomics: &str, path: &str) {
    let program = example("atomic_hammer");
    let mut full = vec!["--timeout", "110"];
    full.extend_from_slice(args);
    full.extend_from_slice(&[&program, "100"]);
    let out = rlaunch(&full);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stdout.contains("MISMATCH"), "{out:?}");
    for rank in 0..ranks {
        let ok = format!(
            "atomic_hammer: rank {rank}/{ranks} ok: 100 iterations, atomics by {atomics}, right neighbour via {path}"
        );
        assert!(out.stdout.contains(&ok), "missing `{ok}`: {out:?}");
    }
}

#[test]
fn every_atomic_goes_through_the_nic_and_totals_are_exact_at_2_and_4_ranks() {
    hammer(&["-n", "2", "--transport", "verbs"], 2, "nic rxe0", "verbs");
    hammer(&["-n", "4", "--transport", "verbs"], 4, "nic rxe0", "verbs");
}

#[test]
fn a_job_spanning_hosts_sends_shm_peers_atomics_through_the_nic_too() {
    // Two host names for this machine: auto sees a job across hosts, every
    // rank publishes a verbs card, so the job uses verbs; the segments still
    // open here, so the data goes by shared memory while atomics take the NIC.
    let hosts = std::env::temp_dir().join(format!("oneside-two-names-{}", std::process::id()));
    std::fs::write(&hosts, "localhost slots=2\n127.0.0.1 slots=2\n").unwrap();
    let hosts_arg = hosts.display().to_string();
    hammer(&["-n", "4", "-f", &hosts_arg], 4, "nic rxe0", "shm");
    std::fs::remove_file(&hosts).unwrap();
}

#[test]
fn a_single_host_auto_job_keeps_cpu_atomics() {
    hammer(&["-n", "2"], 2, "cpu", "shm");
}

/// A peer killed mid-job makes rank 0's next get or fetch-add on it fail
/// within 10 s, naming it: the queue pair's ack timeout (4.096 µs × 2^16)
/// times its tries (7) is about 1.9 s. rlaunch's kill grace is set to
/// 10 s, so a report that came later would never be printed.
#[test]
fn a_dead_peer_is_named_within_ten_seconds() {
    let faults = example("faults");
    for mode in ["get", "fadd"] {
        let args = [
            "-n",
            "2",
            "--transport",
            "verbs",
            "--timeout",
            "120",
            &faults,
            "peer-dies",
            mode,
        ];
        let out = rlaunch_with_env(&args, &[("RLAUNCH_KILL_GRACE", "10")]);
        assert_eq!(out.code, Some(137), "rank 1's death decides the exit code: {out:?}");
        let said = out
            .stderr
            .lines()
            .find(|l| l.starts_with("faults: rank 0: ") && l.contains(" with rank 1 failed: "));
        assert!(said.is_some(), "{mode}: rank 0 names rank 1: {out:?}");
        assert!(!out.stdout.contains("still answers"), "{out:?}");
    }
}

/// The heap grows over verbs, each range registered with the NIC as it
/// comes (`src/transport/parts.rs`), while two threads of every rank keep
/// putting, getting and fetch-adding in the first grown part; a range one
/// rank cannot register fails the allocation on every rank, naming that
/// rank, and the same allocation then succeeds.
#[test]
fn the_heap_grows_and_each_range_is_registered_as_it_comes() {
    let out = verbs_run(&["--bind-to", "none"], "grow_parts", &["4"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout.matches(" ok: 4 objects, heap KiB ").count(), 2, "{out:?}");
    let refuse = ["--bind-to", "none", "-x", "ONESIDE_TEST_REFUSE_GROWTH=1:2"];
    let out = verbs_run(&refuse, "grow_parts", &["4"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let refused = out
        .lines()
        .iter()
        .filter(|l| l.contains(" ok: 4 objects") && l.contains("rank 1 could not register heap offsets 0x"))
        .count();
    assert_eq!(refused, 2, "every rank saw the same refusal: {out:?}");
}
