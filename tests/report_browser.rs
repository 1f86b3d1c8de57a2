//! `report.html` in a real browser: headless Chromium (Debian's
//! `chromium`, installed by `.ci/run`) screenshots the report of a
//! profiled run of examples/traffic.rs, and the screenshot must show the
//! heat map: enough dark-red pixels (tests/profile/heat_pixels.py). The
//! same page with the heat map cut out must not, so the check sees the
//! map and nothing else. The page's visible text, as the browser holds
//! it with hover titles left out, must carry every number and label a
//! reader of a printout needs. Built with `--features browser-tests`.

mod common;
use common::*;

use std::path::Path;
use std::process::Command;

/// Screenshots `page` (800 x 1000) and returns its hot pixels.
fn hot_pixels(page: &Path) -> u64 {
    let shot = page.with_extension("png");
    let _ = std::fs::remove_file(&shot);
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg("--window-size=800,1000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (apt-get install chromium)");
    assert!(shot.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    let counted = Command::new("python3")
        .arg(repo_file("tests/profile/heat_pixels.py"))
        .arg(&shot)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&counted.stdout);
    assert!(
        counted.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&counted.stderr)
    );
    text.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count")
}

#[test]
fn the_report_shows_its_heat_map_in_a_browser() {
    let dir = std::env::temp_dir().join(format!("oneside-report-browser-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let profile = format!("--profile={}", dir.display());
    let out = rlaunch(&["-n", "4", &profile, &example("traffic")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let report = dir.join("report.html");
    let with_map = hot_pixels(&report);
    let html = std::fs::read_to_string(&report).unwrap();
    let (start, end) = (html.find("<svg id=\"heatmap\"").unwrap(), html.find("</svg>").unwrap());
    let without = dir.join("without-map.html");
    std::fs::write(&without, format!("{}{}", &html[..start], &html[end + 6..])).unwrap();
    let without_map = hot_pixels(&without);
    // At n = 4 the map is 480 px square: 8 of its 16 cells (120 px each)
    // hold 56 to 120 bytes, dark on its log scale.
    assert!(with_map >= 4 * 120 * 120, "{with_map} hot pixels with the map");
    assert!(without_map < 2_000, "{without_map} hot pixels without the map");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The page's text as the browser renders it (Chromium's DOM after
/// layout), without hover titles and styles: what a printout shows.
fn visible_text(page: &Path) -> String {
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (apt-get install chromium)");
    let mut dom = String::from_utf8_lossy(&out.stdout).into_owned();
    for tag in ["title", "style"] {
        while let Some(start) = dom.find(&format!("<{tag}")) {
            let end = dom[start..]
                .find(&format!("</{tag}>"))
                .map_or(dom.len(), |e| start + e + tag.len() + 3);
            dom.replace_range(start..end, " ");
        }
    }
    let mut text = String::new();
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The visible text of the report of examples/traffic.rs at `ranks`.
fn traffic_report_text(ranks: &str) -> String {
    let dir = std::env::temp_dir().join(format!("oneside-report-text-{ranks}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let profile = format!("--profile={}", dir.display());
    let out = rlaunch(&["-n", ranks, &profile, &example("traffic")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = visible_text(&dir.join("report.html"));
    let _ = std::fs::remove_dir_all(&dir);
    text
}

/// Fails unless every one of `expected` is in `text`.
fn assert_reads(text: &str, expected: &[&str]) {
    for expected in expected {
        assert!(
            text.contains(expected),
            "'{expected}' is not in the page's visible text: {text}"
        );
    }
}

#[test]
fn the_report_reads_on_paper() {
    let text = traffic_report_text("4");
    // examples/traffic.rs: each rank puts 64 bytes to its right, gets 16
    // from its left and fetch-adds 56 on rank 0, so rank 3 sends rank 0
    // 120 bytes, the most.
    assert_reads(
        &text,
        &[
            "target rank",
            "origin rank",
            "120 B",
            "bytes moved (log scale)",
            "0 B",
            "computing communicating blocked",
            "time since start",
            "operation calls bytes time per call % of the run",
            "put 32 256 B",
            "The hottest pair is rank 3 to rank 0: 120 B",
            "The most blocked rank is rank",
            // Histograms by default: the barriers are timed, every one.
            "barrier calls",
            "latency (bucket from)",
        ],
    );
}

/// Above 32 ranks the rank matrix carries no numbers; the node view does,
/// with each node's drill-down (here one node, this host, of 40 ranks),
/// and init's and finalize's collectives are a line of their own.
#[test]
fn a_large_job_reads_by_node() {
    let text = traffic_report_text("40");
    // examples/traffic.rs at 40 ranks: each rank puts 64 bytes to its
    // right, gets 16 from its left, fetch-adds 56 on rank 0: 136 bytes
    // each, 5440 B in all, every byte within the one node.
    assert_reads(
        &text,
        &[
            "Bytes moved between nodes, and within each",
            "40 ranks on 1 node(s)",
            "target node",
            "origin node",
            "5440 B",
            "Node localhost: ranks 0-39",
            "Its ranks moved 5440 B to all nodes; 5440 B came to it.",
            "rank \\ to node localhost 0 136 B 1 136 B",
            "39 136 B",
            "init/finalize: ",
        ],
    );
}
