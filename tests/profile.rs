//! `rlaunch --profile`: the merged `profile.json` of a program with known
//! traffic (examples/traffic.rs) is exact, calls made while profiling is
//! paused are not counted, collectives' own traffic is apart, and the
//! summary and the HTML report are written, over shm and tcp; and
//! `rlaunch --trace`: a Chrome trace-event timeline per rank, bounded.

mod common;
use common::*;

use std::path::PathBuf;

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oneside-profile-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_matrix_of_a_program_with_known_traffic_is_exact() {
    for (transport, _) in transports() {
        for n in [2, 4] {
            let dir = fresh_dir(&format!("{transport}-{n}"));
            let profile = format!("--profile={}", dir.display());
            let traffic = example("traffic");
            let out = rlaunch(&["-n", &n.to_string(), "--transport", transport, &profile, &traffic]);
            assert_eq!(out.code, Some(0), "{out:?}");
            assert_eq!(out.stdout, format!("traffic ok: {n} ranks\n"));
            let json = std::fs::read_to_string(dir.join("profile.json")).expect("profile.json");
            assert!(json.contains(&format!("\"ranks\":{n},")), "{json}");
            assert!(json.contains("\"missing_ranks\":[],"), "{json}");
            assert_eq!(
                json_matrix(&json, "matrix_bytes"),
                known_traffic(n, true),
                "{transport} at {n}: {json}"
            );
            let ops = json_matrix(&json, "matrix_ops");
            for (r, row) in ops.iter().enumerate() {
                let expected_total = 8 + 1 + 7;
                assert_eq!(row.iter().sum::<u64>(), expected_total, "rank {r}: {json}");
            }
            // The program's 2 barriers; init's closing barrier is apart.
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            for rank in value["ops"].as_array().unwrap() {
                assert_eq!(rank["ops"]["barrier"]["calls"], 2, "{transport} at {n}: {rank}");
                assert_eq!(rank["ops"]["init_finalize"]["calls"], 1, "{transport} at {n}: {rank}");
            }
            let collective = json_matrix(&json, "collective_matrix_bytes");
            if transport == "tcp" {
                assert!(collective[0].iter().sum::<u64>() >= 512, "the root's broadcast: {json}");
            }
            for word in ["operation", "computing", "blocked", "imbalance"] {
                assert!(out.stderr.contains(word), "summary lacks {word}: {}", out.stderr);
            }
            let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
            assert!(out.stderr.contains(&summary), "the printed summary is the file's");
            let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
            assert!(html.contains("<svg id=\"heatmap\""), "{html}");
            assert!(html.matches("<rect").count() >= n * n, "a cell per pair: {html}");
            assert!(
                !html.contains("http://") && !html.contains("https://"),
                "self-contained"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

#[test]
fn without_profile_no_rank_writes_one() {
    let dir = fresh_dir("off");
    std::fs::create_dir_all(&dir).unwrap();
    let traffic = example("traffic");
    let child = std::process::Command::new(rlaunch_path())
        .args(["-n", "2", &traffic])
        .current_dir(&dir)
        .env_remove("ONESIDE_PROFILE")
        .output()
        .expect("rlaunch runs");
    assert!(child.status.success(), "{child:?}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written in the working directory"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_that_cannot_be_made_is_a_clear_error() {
    let traffic = example("traffic");
    let out = rlaunch(&["-n", "2", "--profile=/proc/no-such-dir", &traffic]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("--profile/--trace: cannot use the directory /proc/no-such-dir"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_trace_has_a_track_per_rank_with_its_collectives() {
    for (transport, _) in transports() {
        let dir = fresh_dir(&format!("trace-{transport}"));
        let trace = format!("--trace={}", dir.display());
        let out = rlaunch(&["-n", "4", "--transport", transport, &trace, &example("traffic")]);
        assert_eq!(out.code, Some(0), "{out:?}");
        let json = std::fs::read_to_string(dir.join("trace.json")).expect("trace.json");
        assert!(json.starts_with("{\"displayTimeUnit\""), "{json}");
        assert!(
            json.contains("\"dropped_events\":{\"0\":0,\"1\":0,\"2\":0,\"3\":0}"),
            "{json}"
        );
        for rank in 0..4 {
            let name = format!("\"pid\":{rank},\"args\":{{\"name\":\"rank {rank} (");
            assert!(json.contains(&name), "rank {rank}'s track is named: {json}");
            for call in ["barrier", "broadcast", "get", "alloc"] {
                let event = format!("{{\"name\":\"{call}\",\"cat\":\"oneside\",\"ph\":\"X\",\"pid\":{rank},");
                assert!(json.contains(&event), "rank {rank} has a {call}: {json}");
            }
        }
        assert!(!json.contains("\"name\":\"put\""), "puts are not on the timeline");
        assert!(out.stderr.contains("oneside trace: "), "{}", out.stderr);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_full_trace_keeps_the_latest_events_and_says_how_many_went() {
    let dir = fresh_dir("trace-bounded");
    let trace = format!("--trace={}", dir.display());
    let out = rlaunch_with_env(
        &["-n", "2", &trace, &example("traffic")],
        &[("ONESIDE_TRACE_EVENTS", "4")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let json = std::fs::read_to_string(dir.join("trace.json")).expect("trace.json");
    for rank in 0..2 {
        let events = json.matches(&format!("\"ph\":\"X\",\"pid\":{rank},")).count();
        assert_eq!(events, 4, "rank {rank} keeps its last 4: {json}");
        assert!(
            json.contains(&format!(
                "\"name\":\"broadcast\",\"cat\":\"oneside\",\"ph\":\"X\",\"pid\":{rank},"
            )),
            "the last call is kept: {json}"
        );
    }
    assert!(!json.contains("\"dropped_events\":{\"0\":0"), "{json}");
    assert!(out.stderr.contains("older ones dropped"), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// examples/profile_cost switches profiling on and off between blocks of
/// one process: the profile counts exactly the calls of its counting
/// blocks (the warm-up and one block per pair), and it prints one cost
/// line per operation. Without --profile it says there is nothing to
/// measure.
#[test]
fn profile_cost_counts_only_its_counting_blocks() {
    let dir = fresh_dir("cost");
    let profile = format!("--profile={}", dir.display());
    let cost = example("profile_cost");
    let out = rlaunch(&["-n", "2", &profile, &cost, "5", "100"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    for op in ["put+quiet", "get", "fetch_add"] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("profile_cost {op} off ")))
            .unwrap_or_else(|| panic!("no line for {op}: {out:?}"));
        let ratio: f64 = line.rsplit(' ').next().unwrap().parse().expect("a ratio");
        assert!(ratio.is_finite() && ratio > 0.0, "{line}");
    }
    let json = std::fs::read_to_string(dir.join("profile.json")).expect("profile.json");
    assert!(json.contains("\"put\":{\"calls\":600,"), "(5 + 1) x 100 puts: {json}");
    assert!(json.contains("\"get\":{\"calls\":600,"), "(5 + 1) x 100 gets: {json}");
    let out = rlaunch(&["-n", "2", &cost, "1", "10"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("not profiled: run it under rlaunch --profile=DIR"),
        "{out:?}"
    );
}

/// When a rank dies, rlaunch ends the others with SIGTERM; those still
/// write their profile and trace (src/profile/on_term.rs), so the merged
/// profile lists only the dead rank as missing, and the job keeps the
/// dead rank's exit status.
#[test]
fn the_ranks_that_lived_write_their_profile_when_the_job_is_ended() {
    for (transport, _) in transports() {
        let dir = fresh_dir(&format!("ended-{transport}"));
        let profile = format!("--profile={}", dir.join("p").display());
        let trace = format!("--trace={}", dir.join("t").display());
        let faults = example("faults");
        let args = [
            "-n",
            "3",
            "--transport",
            transport,
            &profile,
            &trace,
            &faults,
            "signal",
            "1",
        ];
        let out = rlaunch(&args);
        assert_eq!(out.code, Some(128 + 9), "{transport}: {out:?}");
        for rank in [0, 2] {
            assert!(
                dir.join(format!("p/rank-{rank}.prof")).exists(),
                "{transport}, rank {rank}: {out:?}"
            );
            assert!(
                dir.join(format!("t/rank-{rank}.trace")).exists(),
                "{transport}, rank {rank}: {out:?}"
            );
        }
        assert!(!dir.join("p/rank-1.prof").exists(), "{transport}: {out:?}");
        let json = std::fs::read_to_string(dir.join("p/profile.json")).expect("profile.json");
        assert!(json.contains("\"missing_ranks\":[1],"), "{transport}: {json}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A SIGTERM handler installed before init (the program's, or a
/// library's, as libfabric's shm provider installs one) still runs when
/// rlaunch ends the job, after the profile is written: the fault campaign
/// found ranks beside such a handler writing none.
#[test]
fn a_sigterm_handler_that_was_there_first_runs_after_the_profile_is_written() {
    for (transport, _) in transports() {
        let dir = fresh_dir(&format!("handled-{transport}"));
        let profile = format!("--profile={}", dir.display());
        let out = rlaunch(&[
            "-n",
            "3",
            "--transport",
            transport,
            &profile,
            &example("faults"),
            "signal-handled",
            "1",
        ]);
        assert_eq!(out.code, Some(128 + 9), "{transport}: {out:?}");
        for rank in [0, 2] {
            assert!(
                dir.join(format!("rank-{rank}.prof")).exists(),
                "{transport}, rank {rank}: {out:?}"
            );
        }
        assert_eq!(
            out.stderr.matches("the program's own SIGTERM handler ran").count(),
            2,
            "{transport}: {out:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Each rank's (elapsed, blocked, communicating) ns and its families' ns
/// by name, from a merged profile.json.
fn shares(dir: &std::path::Path) -> Vec<(u64, u64, u64, serde_json::Value)> {
    let json = std::fs::read_to_string(dir.join("profile.json")).expect("profile.json");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
            (
                n("elapsed_ns"),
                n("blocked_ns"),
                n("communicating_ns"),
                r["ops"].clone(),
            )
        })
        .collect()
}

/// The profile of a job that did not finish tells the truth: the time a
/// rank spent in the wait it was in when the job ended counts, as that
/// wait, and every rank's computing, communicating and blocked add up to
/// its elapsed time. Each way a job ends: a hang ended by
/// `--hang-timeout`, a rank that fails early (an error out of main) while
/// the others wait in a barrier, a rank killed by SIGKILL while the others
/// wait for it, and a deadlock around finalize. Before, a hung job's
/// summary said "computing 2374.6 ms … blocked 4.2 ms", with no wait row,
/// and its trace held only init and alloc events.
#[test]
fn profiles_of_jobs_that_did_not_finish_show_where_their_ranks_waited() {
    let hang = example("hang");
    let leave = example("leave_early");
    // (args, the ranks that waited, the family they waited in, the least
    // share of their run they must show blocked)
    let cases: [(Vec<&str>, &[usize], &str, f64); 4] = [
        (
            vec!["-n", "2", "--hang-timeout", "2", &hang, "cycle"],
            &[0, 1],
            "wait",
            0.8,
        ),
        (vec!["-n", "3", &leave, "error", "1"], &[0, 2], "barrier", 0.5),
        (vec!["-n", "3", &hang, "die"], &[0, 1], "barrier", 0.8),
        (vec!["-n", "3", &hang, "wait"], &[0], "wait", 0.7),
    ];
    for (transport, _) in transports() {
        for (args, waiters, family, least) in &cases {
            let dir = fresh_dir(&format!("ended-{transport}-{}", args.last().unwrap()));
            let profile = format!("--profile={}", dir.display());
            let trace = format!("--trace={}", dir.join("trace").display());
            let mut full = vec!["--oversubscribe", "--transport", transport, &profile, &trace];
            full.extend(args.iter().copied());
            let out = rlaunch(&full);
            let what = format!("{args:?} over {transport}: {out:?}");
            assert_ne!(out.code, Some(0), "{what}");
            let ranks = shares(&dir);
            for (rank, (elapsed, blocked, communicating, ops)) in ranks.iter().enumerate() {
                assert!(
                    blocked + communicating <= *elapsed,
                    "rank {rank} adds up past its run: {what}"
                );
                if waiters.contains(&rank) {
                    let share = *blocked as f64 / *elapsed as f64;
                    assert!(
                        share >= *least,
                        "rank {rank} shows {share:.2} of its run blocked: {what}"
                    );
                    let waited = ops[*family]["ns"].as_u64().unwrap_or(0);
                    assert!(
                        waited as f64 >= least * *elapsed as f64,
                        "rank {rank}'s {family} row has {waited} ns of {elapsed}: {what}"
                    );
                }
            }
            let summary = std::fs::read_to_string(dir.join("summary.txt")).expect("summary.txt");
            assert!(summary.contains("blocked is measured"), "{summary}");
            // The trace has the wait too, begun and never ended.
            let timeline = std::fs::read_to_string(dir.join("trace/trace.json")).expect("trace.json");
            assert!(timeline.contains(&format!("\"name\":\"{family}\"")), "{what}");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
