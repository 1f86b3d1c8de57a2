//! Threads and contexts: the model check with threads per rank (their own
//! contexts, and the shared world), the threaded histogram course program,
//! and context isolation (a quiet on one context while another waits for a
//! stopped peer). Over every transport of `transports()` (so over verbs in
//! the Soft-RoCE guest), isolation over TCP, where contexts own links.

mod common;
use common::*;

/// rlaunch with unpinned ranks (threads of one rank need more than its
/// share of cores), over `transport`.
fn threaded(transport: &str, n: usize, program: &str, args: &[&str]) -> Outcome {
    let n = n.to_string();
    let exe = example(program);
    let mut all = vec!["-n", &n, "--bind-to", "none", "--transport", transport, &exe];
    all.extend_from_slice(args);
    rlaunch(&all)
}

#[test]
fn threads_with_their_own_contexts_and_the_shared_world_match_the_model() {
    for (transport, _) in transports() {
        // Under the guest's emulated CPUs (verbs), one small run.
        let runs: &[(usize, usize, &str)] = match transport {
            "verbs" => &[(2, 2, "21")],
            _ => &[(2, 2, "21"), (3, 4, "22"), (2, 3, "23")],
        };
        for &(n, threads, seed) in runs {
            let out = threaded(transport, n, "model_check", &[seed, "20", &threads.to_string()]);
            let what = format!("{transport} n={n} threads={threads} seed={seed}");
            assert_eq!(out.code, Some(0), "{what}: {out:?}");
            let ok = out.lines().iter().filter(|l| l.contains(" ok: 20 phases")).count();
            assert_eq!(ok, n, "{what}: every rank must report success: {out:?}");
        }
    }
}

#[test]
fn a_histogram_counted_by_every_thread_on_its_own_context_is_exact() {
    for (transport, _) in transports() {
        for (n, threads) in [(2, 2), (3, 4)] {
            let out = threaded(transport, n, "histogram", &["100", "3000", &threads.to_string()]);
            assert_eq!(
                out.stdout,
                format!(
                    "histogram: 100 bins, {} values from {n} ranks x {threads} threads: exact: ok\n",
                    3000 * n
                ),
                "{transport} n={n} threads={threads}: {out:?}"
            );
        }
    }
}

#[test]
fn a_quiet_on_one_context_does_not_wait_for_another_contexts_stopped_peer() {
    // Contexts own links over TCP only (they share the verbs transport), and
    // the timing bounds assume a real CPU: not in the Soft-RoCE guest.
    if !transports().iter().any(|&(t, _)| t == "tcp") {
        eprintln!("context isolation is a TCP test; this run has no tcp transport");
        return;
    }
    let out = threaded("tcp", 3, "ctx_isolation", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("ctx_isolation ok"), "{out:?}");
}
