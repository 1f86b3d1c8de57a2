//! The benchmark in smoke mode: it must run under rlaunch and print every
//! metric, in both the table and the machine-readable lines, and write its
//! CSV and plot. Timings are never asserted: the machine is shared and noisy.

mod common;
use common::*;

#[test]
fn bench_smoke_prints_every_metric_and_writes_csv_and_plot() {
    let dir = std::env::temp_dir().join(format!("oneside-bench-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (csv, svg) = (dir.join("bench.csv"), dir.join("bench.svg"));
    let peer = dir.join("peer.txt");
    std::fs::write(&peer, "put_lat 8 0.5 us\nget_lat 8 0.6 us\nput_bw 65536 1000 MB/s\n").unwrap();
    let out = rlaunch(&[
        "-n",
        "2",
        &example("bench"),
        "--smoke",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
        "--peer",
        peer.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.starts_with("# oneside bench: transport shm, 2 ranks"),
        "{out:?}"
    );

    let mut expected: Vec<String> = Vec::new();
    for bytes in [8, 4096, 65536] {
        for metric in ["put_lat", "get_lat", "put_bw", "put_bibw"] {
            expected.push(format!("{metric} {bytes}"));
        }
    }
    expected.extend(["copy_bw 65536", "msg_rate 8", "barrier_n2 0"].map(String::from));
    expected.extend(
        [
            "fadd_lat 8",
            "cswap_lat 8",
            "add_lat 8",
            "add_rate 8",
            "line_lat 8",
            "put_signal_lat 8",
            "put_signal_lat 4096",
            "put_signal_lat 65536",
            "put_nbi_bw 65536",
            "put_win_bw 65536",
        ]
        .map(String::from),
    );
    for key in &expected {
        let line = out
            .lines()
            .into_iter()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| {
                panic!("no '{key}' line in {}", out.stdout);
            });
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.len(), 4, "{line}");
        let value: f64 = words[2].parse().unwrap();
        assert!(value.is_finite() && value > 0.0, "{line}");
        assert!(["us", "MB/s", "msg/s"].contains(&words[3]), "{line}");
    }

    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().next(), Some("metric,bytes,value,unit"));
    assert_eq!(csv.lines().count(), 1 + expected.len(), "{csv}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("oneside put_lat") && svg.contains("peer put_lat"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_refuses_to_run_alone() {
    let out = std::process::Command::new(example("bench"))
        .arg("--smoke")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs at least 2 ranks"));
}
