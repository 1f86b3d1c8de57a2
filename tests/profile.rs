//! `rlaunch --profile`: the merged `profile.json` of a program with known
//! traffic (examples/traffic.rs) is exact, calls made while profiling is
//! paused are not counted, collectives' own traffic is apart, and the
//! summary and the HTML report are written, over shm and tcp.

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
            .contains("--profile: cannot use the directory /proc/no-such-dir"),
        "{}",
        out.stderr
    );
}
