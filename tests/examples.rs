//! The examples under the real `rlaunch`, at 1, 2, 4 and 8 ranks (8 ranks
//! oversubscribe a 2-core machine), checking what they print.

mod common;
use common::*;

/// Every (transport, path name, rank count) to run the examples at.
fn matrix() -> Vec<(&'static str, &'static str, usize)> {
    transports()
        .into_iter()
        .flat_map(|(t, p)| sizes().into_iter().map(move |n| (t, p, n)))
        .collect()
}

#[test]
fn hello_put_every_rank_hears_from_its_left_neighbour() {
    for (transport, path, n) in matrix() {
        let out = rlaunch(&["-n", &n.to_string(), "--transport", transport, &example("hello_put")]);
        assert_eq!(out.code, Some(0), "n={n} {transport}: {out:?}");
        let mut lines = out.lines();
        lines.sort();
        assert_eq!(lines.len(), n, "n={n}: {out:?}");
        for rank in 0..n {
            let left = (rank + n - 1) % n;
            let via = if n == 1 { "self" } else { path };
            let expected = format!("rank {rank}/{n} received \"Hello from rank {left}\" from rank {left} (via {via})");
            assert!(
                lines.contains(&expected.as_str()),
                "n={n}: missing '{expected}' in {lines:?}"
            );
        }
    }
}

#[test]
fn the_readme_demo_runs_from_the_localhost_hostfile() {
    let hostfile = repo_file("hostfiles/localhost");
    let out = rlaunch(&["-n", "2", "-f", &hostfile, &example("hello_put")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .contains("rank 1/2 received \"Hello from rank 0\" from rank 0 (via shm)"),
        "{out:?}"
    );
}

#[test]
fn hello_put_runs_alone_as_a_singleton() {
    let out = std::process::Command::new(example("hello_put")).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "rank 0/1 received \"Hello from rank 0\" from rank 0 (via self)\n"
    );
}

#[test]
fn ring_pass_sums_every_rank_on_every_lap() {
    for (transport, _, n) in matrix() {
        let out = rlaunch(&["-n", &n.to_string(), "--transport", transport, &example("ring"), "3"]);
        assert_eq!(out.code, Some(0), "n={n}: {out:?}");
        let expected = 3 * n * (n - 1) / 2;
        assert_eq!(
            out.stdout,
            format!("ring: 3 lap(s) over {n} ranks: token {expected}, expected {expected}: ok\n")
        );
    }
}

#[test]
fn parallel_pi_is_accurate_at_every_size() {
    for (transport, _, n) in matrix() {
        let out = rlaunch(&["-n", &n.to_string(), "--transport", transport, &example("pi"), "200000"]);
        assert_eq!(out.code, Some(0), "n={n}: {out:?}");
        let value: f64 = out
            .stdout
            .split_whitespace()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .expect("pi value");
        assert!((value - std::f64::consts::PI).abs() < 1e-9, "n={n}: {}", out.stdout);
        assert!(out.stdout.contains(&format!("from {n} rank(s)")), "{}", out.stdout);
    }
}

#[test]
fn tagged_output_keeps_lines_whole() {
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo \"line-$i-$ONESIDE_RANK-abcdefghijklmnopqrstuvwxyz\"; done";
    let out = rlaunch(&["-n", "4", "--tag-output", "sh", "-c", script]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines = out.lines();
    assert_eq!(lines.len(), 40);
    for line in lines {
        let (tag, rest) = line.split_once(' ').expect("tag then text");
        let rank = tag.trim_start_matches('[').trim_end_matches(']');
        assert!(
            rest.starts_with("line-") && rest.ends_with(&format!("-{rank}-abcdefghijklmnopqrstuvwxyz")),
            "{line}"
        );
    }
}

#[test]
fn every_rank_learns_its_place_from_the_environment() {
    let script = "echo $ONESIDE_RANK $ONESIDE_SIZE $ONESIDE_LOCAL_RANK $ONESIDE_LOCAL_SIZE";
    let out = rlaunch(&["-n", "3", "--oversubscribe", "-H", "localhost:2", "sh", "-c", script]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let mut lines = out.lines();
    lines.sort();
    assert_eq!(lines, vec!["0 3 0 3", "1 3 1 3", "2 3 2 3"]);
}

#[test]
fn stdin_goes_to_rank_0_and_x_forwards_variables() {
    use std::io::Write;
    let mut child = std::process::Command::new(rlaunch_path())
        .args(["-n", "2", &example("faults"), "echo-stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"typed by the user\n").unwrap();
    let out = finish(child);
    assert_eq!(out.stdout, "rank 0 read: typed by the user\n", "{out:?}");

    let out = rlaunch(&[
        "-n",
        "2",
        "-x",
        "GREETING=hi there",
        &example("faults"),
        "env",
        "GREETING",
    ]);
    assert_eq!(out.stdout, "GREETING=hi there\n", "{out:?}");
}

#[test]
fn dry_run_prints_the_rank_map_for_both_dialects() {
    let out = rlaunch(&[
        "--dry-run",
        "-n",
        "6",
        "-f",
        &repo_file("hostfiles/mpich.example"),
        "sh",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines = out.lines();
    assert_eq!(lines.len(), 6);
    assert!(lines[0].starts_with("rank 0 -> node01 (local rank 0 of 4"), "{lines:?}");
    assert!(lines[5].starts_with("rank 5 -> node02 (local rank 1 of 2"), "{lines:?}");
    let out = rlaunch(&["--dry-run", "-f", &repo_file("hostfiles/openmpi.example"), "sh"]);
    assert_eq!(out.lines().len(), 10, "-n defaults to every slot: {out:?}");
    assert!(
        out.stdout.contains("rank 9 -> alice@node03 (local rank 1 of 2"),
        "{out:?}"
    );
}

/// `--dry-run` says the binding each rank then really gets: the CPU list
/// it prints is the `Cpus_allowed_list` of the started rank, and "not
/// bound" means the rank may use every CPU rlaunch may.
#[test]
fn dry_run_binding_is_what_the_ranks_get() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let show = "echo \"$ONESIDE_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)\"";
    let everything = rlaunch(&["-n", "1", "--bind-to", "none", "sh", "-c", show]);
    let everything = everything.stdout.split_whitespace().nth(1).unwrap_or("").to_string();
    for (count, bind) in [(1, "core"), (2, "core"), (cpus + 1, "core"), (2, "none")] {
        let n = count.to_string();
        let plan = rlaunch(&["--dry-run", "-n", &n, "--bind-to", bind, "sh"]);
        let ran = rlaunch(&["-n", &n, "--bind-to", bind, "sh", "-c", show]);
        assert_eq!(ran.code, Some(0), "{ran:?}");
        assert_eq!(plan.lines().len(), count, "{plan:?}");
        for line in plan.lines() {
            let rank = line.split_whitespace().nth(1).unwrap();
            let got = ran
                .lines()
                .into_iter()
                .find_map(|l| l.strip_prefix(&format!("{rank} ")).map(str::to_string))
                .unwrap_or_default();
            match line.split_once("bound to CPU ") {
                Some((_, list)) => assert_eq!(list.trim_end_matches(')'), got, "{line}: {ran:?}"),
                None => {
                    assert!(line.contains("not bound"), "{line}");
                    assert_eq!(got, everything, "{line}: {ran:?}");
                }
            }
        }
    }
}

#[test]
fn the_doctor_checks_this_host() {
    let out = rlaunch(&["--check", "-H", "localhost", &example("hello_put")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let row = out
        .lines()
        .into_iter()
        .find(|l| l.starts_with("localhost"))
        .expect("a row for localhost");
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words[1..5], ["ok", "ok", "ok", "ok"], "{row}");
    let out = rlaunch(&["--check", "-H", "localhost", "./no-such-program"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stdout
            .contains("localhost: program: cannot run './no-such-program'"),
        "{out:?}"
    );
}

#[test]
fn openshmem_1_6_additions_in_rust() {
    for (transport, _, n) in matrix() {
        let out = rlaunch(&["-n", &n.to_string(), "--transport", transport, &example("spec16")]);
        assert_eq!(out.code, Some(0), "n={n} {transport}: {out:?}");
        assert_eq!(
            out.stdout,
            format!("spec16: ok over {n} ranks\n"),
            "n={n} {transport}: {out:?}"
        );
    }
}
