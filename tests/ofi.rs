//! The ofi transport's own cases, run by tests/ofi/run.sh (feature
//! `ofi-tests`) on a host with libfabric: the doctor lists the providers,
//! a forced ofi job says which provider carries every path and atomic, a
//! provider that does not exist is one clear error per rank, a dead peer
//! is named within 10 s, a rank killed over shm leaves no region behind,
//! the providers' known faults in atomics (shm, udp;ofi_rxd) give exact
//! answers or a clear error, never a wrong answer, a rank idle in a long
//! wait answers its peers promptly (also when its waits must poll, with
//! no CQ wait descriptor), a wait object it does not know is refused,
//! a rank that computes keeps its
//! core while it serves them, and shm's writes skip the delivery flag
//! only where the start-up check proved cross-memory attach, and a heap
//! registered in parts grows (a range registered on every rank or none).

mod common;
use common::*;

/// rlaunch's arguments for a 2-rank job over ofi `provider`, then `program`
/// (an example) and its arguments.
fn over(provider: &str, program: &str, args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = ["-n", "2", "--transport", "ofi", "--ofi-provider", provider]
        .map(String::from)
        .to_vec();
    all.push(example(program));
    all.extend(args.iter().map(|a| a.to_string()));
    all
}

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn the_doctor_lists_libfabrics_providers() {
    let out = rlaunch(&["--check", "-H", "localhost"]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("libfabric: "))
        .unwrap_or_else(|| panic!("no libfabric line: {out:?}"));
    assert!(line.contains("with RMA and atomics:"), "{line}");
    assert!(line.contains("tcp;ofi_rxm"), "{line}");
}

#[test]
fn a_forced_ofi_job_sends_data_and_atomics_through_the_provider() {
    let out = rlaunch(&refs(&over("tcp;ofi_rxm", "atomic_hammer", &["50"])));
    assert_eq!(out.code, Some(0), "{out:?}");
    for line in out.lines().iter().filter(|l| l.contains(" ok: ")) {
        assert!(line.contains("atomics by nic ofi tcp;ofi_rxm"), "{line}");
        assert!(line.contains("via ofi"), "{line}");
    }
    assert_eq!(out.lines().iter().filter(|l| l.contains(" ok: ")).count(), 2, "{out:?}");
}

#[test]
fn an_unknown_provider_is_a_clear_error() {
    let out = rlaunch(&refs(&over("no-such-provider", "hello_put", &[])));
    assert_eq!(out.code, Some(1), "{out:?}");
    // Both ranks fail the same way; whichever reports first is named.
    let said = |rank: u32| {
        out.stderr.contains(&format!(
            "rank {rank}: cannot use libfabric (--transport ofi): provider \"no-such-provider\" offers no RDM endpoint"
        ))
    };
    assert!(said(0) || said(1), "{out:?}");
}

/// Over tcp;ofi_rxm, a peer killed mid-job makes the next get or
/// fetch-add on it fail naming it, within 10 s: rlaunch's kill grace is set
/// to 10 s, so a report that came later would never be printed.
#[test]
fn a_dead_peer_is_named_within_ten_seconds() {
    for (mode, call) in [("get", "get"), ("fadd", "atomic")] {
        let args = over("tcp;ofi_rxm", "faults", &["peer-dies", mode]);
        let out = rlaunch_with_env(&refs(&args), &[("RLAUNCH_KILL_GRACE", "10")]);
        assert_eq!(out.code, Some(137), "rank 1's death decides the exit code: {out:?}");
        assert!(
            out.stderr
                .contains(&format!("faults: rank 0: {call} with rank 1 failed: ")),
            "{mode}: {out:?}"
        );
        assert!(!out.stdout.contains("still answers"), "{out:?}");
    }
}

/// A rank killed over shm leaves no region behind: libfabric's shm names
/// each process's region `/dev/shm/<pid>:...` (16 MiB) and unlinks it only
/// when the endpoint closes, so rlaunch removes the regions of ranks that
/// did not end cleanly. Left there, a later rank given the same pid failed
/// `fi_enable` with `EBUSY`.
#[test]
fn a_rank_killed_over_shm_leaves_no_region_behind() {
    let out = rlaunch(&refs(&over("shm", "faults", &["signal", "1"])));
    assert_eq!(out.code, Some(137), "{out:?}");
    let pid = out
        .stdout
        .lines()
        .find_map(|l| l.split("dying pid=").nth(1))
        .unwrap_or_else(|| panic!("no pid: {out:?}"))
        .trim()
        .to_string();
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .expect("/dev/shm")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&format!("{pid}:")))
        .collect();
    assert!(left.is_empty(), "rank 1 (pid {pid}) left {left:?}");
}

/// A rank idle in a long barrier answers gets promptly over tcp;ofi_rxm,
/// whose provider moves data only while someone polls the target: its
/// progress thread sleeps on the CQ's wait descriptor and the provider
/// wakes it, then polls the descriptor without sleeping for 1 ms. When
/// that thread only polled every 500 µs, each get took about 600 µs; woken
/// on each, 40-70 µs; polling after an arrival, 20-30 µs. The bound
/// leaves room for a loaded machine.
#[test]
fn a_rank_idle_in_a_barrier_answers_gets_promptly() {
    assert_idle_rank_answers_within("tcp;ofi_rxm", 300.0, &[]);
}

/// shm and udp;ofi_rxd offer no wait descriptor: their progress thread
/// reads the CQ every 500 µs until a counter of peers' operations
/// (`FI_RMA_EVENT`) moves, then at once for a while. A get of an idle rank
/// over shm took about 610 µs with the periodic reads alone, and 2-3 µs
/// with the counter; over rxd, 28 µs.
#[test]
fn a_rank_idle_in_a_barrier_answers_gets_promptly_without_a_wait_descriptor() {
    assert_idle_rank_answers_within("shm", 200.0, &[]);
    assert_idle_rank_answers_within("udp;ofi_rxd", 300.0, &[]);
}

/// With `ONESIDE_OFI_CQ_WAIT=none` the CQ has no wait descriptor, so the
/// progress thread only reads it every 500 µs; the idle rank's own wait
/// must keep polling and serve the gets itself (on a host with a core a
/// rank; elsewhere the setting is not taken, and the descriptor serves).
/// A get took 540-560 µs when such a wait napped, 16-26 µs polling.
#[test]
fn a_rank_idle_in_a_barrier_answers_gets_promptly_when_its_waits_poll() {
    assert_idle_rank_answers_within("tcp;ofi_rxm", 300.0, &[("ONESIDE_OFI_CQ_WAIT", "none")]);
}

/// A wait object this transport does not know is refused, saying which
/// two it knows, not taken for the default.
#[test]
fn an_unknown_cq_wait_object_is_a_clear_error() {
    let out = rlaunch_with_env(
        &refs(&over("tcp;ofi_rxm", "hello_put", &[])),
        &[("ONESIDE_OFI_CQ_WAIT", "yield")],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("cannot use libfabric (--transport ofi): ONESIDE_OFI_CQ_WAIT=\"yield\" is not a wait object"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("say fd") && out.stderr.contains("or none"),
        "{out:?}"
    );
}

/// Runs examples/idle_target over `provider`, with `vars` set for the
/// job; its median get must be below `bound_us`.
fn assert_idle_rank_answers_within(provider: &str, bound_us: f64, vars: &[(&str, &str)]) {
    let out = rlaunch_with_env(&refs(&over(provider, "idle_target", &["200", "200"])), vars);
    let (median, line) = figure(&out, "idle_target get median ", 3);
    assert!(
        median < bound_us,
        "{provider}: a get of an idle rank took {median} µs: {line}"
    );
}

/// A rank that computes, pinned to one core with its progress thread,
/// keeps its core while a peer gets from it every 500 µs over
/// tcp;ofi_rxm: the thread polls after an arrival only while the rank
/// waits (or when it has a core of its own). When it polled after every
/// arrival regardless, the same arithmetic took 1.87-1.89x as long while
/// served; now 1.02-1.05x. One job's ratio spreads widely here (1.03-1.43
/// in 16 jobs on 2026-12-01, the same before and after that day's changes),
/// so the median of three jobs is held to the bound.
#[test]
fn a_computing_rank_keeps_its_core_while_it_serves_gets() {
    let mut runs: Vec<(f64, String)> = (0..3)
        .map(|_| {
            let out = rlaunch(&refs(&over("tcp;ofi_rxm", "busy_target", &["5", "500", "40"])));
            assert!(out.stdout.contains("busy_target gets "), "{out:?}");
            figure(&out, "busy_target quiet ", 8)
        })
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (ratio, line) = &runs[1];
    let all: Vec<String> = runs.iter().map(|r| format!("{:.3}", r.0)).collect();
    assert!(
        *ratio < 1.4,
        "computing while serving gets took {ratio}x as long (the median of {}): {line}",
        all.join(", ")
    );
}

/// A job that succeeded: word `word` of its first line of output that
/// starts with `prefix`, as a number, and that line.
fn figure(out: &Outcome, prefix: &str, word: usize) -> (f64, String) {
    assert_eq!(out.code, Some(0), "{out:?}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line \"{prefix}...\": {out:?}"));
    let value = line.split(' ').nth(word).and_then(|v| v.parse().ok()).expect(line);
    (value, line.to_string())
}

/// shm's `fi_atomic` landed wrong values at a peer (and lost a lock's
/// hand-over); every atomic over shm takes the fetching form, and the
/// exact hammer and the lock counter hold.
#[test]
fn atomics_over_shm_are_exact() {
    for program in ["atomic_hammer", "lock_counter"] {
        let out = rlaunch(&refs(&over("shm", program, &[])));
        assert_eq!(out.code, Some(0), "{program}: {out:?}");
        assert!(out.stdout.contains("ok"), "{program}: {out:?}");
    }
}

/// udp;ofi_rxd crashes inside fi_cq_read on a fetching atomic
/// (ofiwg/libfabric#11814): such an atomic is a clear error naming the
/// way out, while puts, gets and collectives work.
#[test]
fn fetching_atomics_over_rxd_are_a_clear_error_not_a_crash() {
    let rxd = |program: &str| rlaunch(&refs(&over("udp;ofi_rxd", program, &[])));
    let out = rxd("hello_put");
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = rxd("lock_counter");
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("udp;ofi_rxd crashes in fetching atomics (ofiwg/libfabric#11814)"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("signal 11"), "{out:?}");
}

/// Over shm, writes skip the delivery flag only where the start-up check
/// proved they land inside `fi_write` (cross-memory attach): the bench
/// names the path ("direct writes"), and with CMA forced off
/// (`FI_SHM_DISABLE_CMA=1`) the writes keep the flag, and the memory-model
/// check and a 3-rank ring stay exact either way.
#[test]
fn shm_writes_skip_the_delivery_flag_only_where_cma_is_proved() {
    for (cma, vars) in [(true, vec![]), (false, vec![("FI_SHM_DISABLE_CMA", "1")])] {
        let out = rlaunch_with_env(&refs(&over("shm", "bench", &["--smoke"])), &vars);
        assert_eq!(out.code, Some(0), "{out:?}");
        let header = out
            .stdout
            .lines()
            .find(|l| l.starts_with("# oneside bench"))
            .unwrap_or_default();
        assert!(header.contains("ofi shm"), "{out:?}");
        assert_eq!(header.contains("direct writes"), cma, "CMA {cma}: {header}");
        for n in ["2", "3"] {
            let model = example("model_check");
            let args = [
                "-n",
                n,
                "--transport",
                "ofi",
                "--ofi-provider",
                "shm",
                &model,
                "21",
                "30",
            ];
            let out = rlaunch_with_env(&args, &vars);
            assert_eq!(out.code, Some(0), "{n} ranks, CMA {cma}: {out:?}");
            let ok = out.lines().iter().filter(|l| l.contains(" ok: 30 phases")).count();
            assert_eq!(ok.to_string(), n, "{n} ranks, CMA {cma}: {out:?}");
            let ring = example("ring");
            let args = ["-n", n, "--transport", "ofi", "--ofi-provider", "shm", &ring];
            let out = rlaunch_with_env(&args, &vars);
            assert_eq!(out.code, Some(0), "ring at {n}, CMA {cma}: {out:?}");
        }
    }
}

/// A panic in the libfabric progress thread ends the job with a message
/// naming the rank and the thread (src/service.rs), never a job whose
/// ranks wait on a thread that is gone.
#[test]
fn a_panic_in_the_progress_thread_ends_the_job_naming_the_rank() {
    let started = std::time::Instant::now();
    let out = rlaunch_with_env(
        &refs(&over("tcp;ofi_rxm", "hello_put", &[])),
        &[("ONESIDE_TEST_PANIC", "ofi progress")],
    );
    assert_eq!(out.code, Some(70), "{out:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{out:?}");
    assert!(out.stderr.contains(": the ofi progress thread failed"), "{out:?}");
}

/// The heap registered in parts (`src/transport/parts.rs`), as a
/// provider that pins memory needs: what is committed at start, then each
/// range the heap grows by (`Links::grown`).
const IN_PARTS: [(&str, &str); 1] = [("ONESIDE_OFI_REGISTER", "parts")];

/// rlaunch's arguments for `program` at `n` ranks over `provider`, its
/// threads unpinned.
fn unpinned(provider: &str, n: usize, program: &str, args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = ["-n", &n.to_string(), "--bind-to", "none", "--transport", "ofi"]
        .map(String::from)
        .to_vec();
    all.extend(["--ofi-provider".into(), provider.into(), example(program)]);
    all.extend(args.iter().map(|a| a.to_string()));
    all
}

/// While two threads of every rank keep putting, getting and
/// fetch-adding in its first grown part, the heap grows six times, and
/// each new object, most of them across the end of a part, carries a
/// whole put, a whole get and atomics; examples/grow (objects up to
/// 64 MiB, an adder thread on all of them, freed and allocated again)
/// passes too.
#[test]
fn a_heap_registered_in_parts_grows_while_traffic_flows() {
    for (provider, n) in [("tcp;ofi_rxm", 2), ("tcp;ofi_rxm", 3), ("shm", 2)] {
        let out = rlaunch_with_env(&refs(&unpinned(provider, n, "grow_parts", &[])), &IN_PARTS);
        assert_eq!(out.code, Some(0), "{provider} n={n}: {out:?}");
        let ok = out
            .lines()
            .iter()
            .filter(|l| l.contains(" ok: 6 objects, heap KiB "))
            .count();
        assert_eq!(ok, n, "{provider} n={n}: {out:?}");
        let out = rlaunch_with_env(&refs(&unpinned(provider, n, "grow", &[])), &IN_PARTS);
        assert_eq!(out.code, Some(0), "{provider} n={n}: {out:?}");
        assert_eq!(
            out.lines().iter().filter(|l| l.contains(" ok: heap KiB")).count(),
            n,
            "{out:?}"
        );
    }
}

/// A range one rank cannot register fails the allocation on every rank,
/// naming that rank, and the others deregister theirs: the same
/// allocation then succeeds.
#[test]
fn a_range_one_rank_cannot_register_fails_on_every_rank_and_registers_on_retry() {
    let mut vars = IN_PARTS.to_vec();
    vars.push(("ONESIDE_TEST_REFUSE_GROWTH", "1:3"));
    let out = rlaunch_with_env(&refs(&unpinned("tcp;ofi_rxm", 3, "grow_parts", &[])), &vars);
    assert_eq!(out.code, Some(0), "{out:?}");
    let named = "rank 1 could not register heap offsets 0x";
    let why = "with it: refused on purpose (ONESIDE_TEST_REFUSE_GROWTH=1:3); the allocation failed on every rank";
    let refused = out
        .lines()
        .iter()
        .filter(|l| l.contains(" ok: 6 objects") && l.contains(named) && l.contains(why))
        .count();
    assert_eq!(refused, 3, "every rank saw the same refusal: {out:?}");
}

/// Ranks that register their segments differently (one whole, one in
/// parts) are refused at wire-up, naming the setting.
#[test]
fn ranks_that_register_their_segments_differently_are_refused_at_wire_up() {
    let out = rlaunch_with_env(
        &refs(&unpinned("tcp;ofi_rxm", 2, "grow_parts", &["mismatch"])),
        &IN_PARTS,
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    let said = |rank: u32, theirs: &str, ours: &str| {
        out.stderr.contains(&format!(
            "rank {rank}: connect the ofi endpoint with rank {} failed: it registers its segment {theirs}, \
             this rank {ours}: set the same ONESIDE_OFI_REGISTER everywhere",
            1 - rank
        ))
    };
    assert!(said(0, "whole", "in parts") || said(1, "in parts", "whole"), "{out:?}");
}
