//! `summary.txt`: the terminal table rlaunch prints after a profiled job:
//! the top operations over all ranks, each rank's time split, and how
//! unevenly the ranks spent it.

use super::Merged;
use std::fmt::Write as _;
use std::path::Path;

/// A duration in the unit that suits it.
pub fn time(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns} ns"),
        10_000..=999_999 => format!("{:.1} us", ns as f64 / 1e3),
        1_000_000..=9_999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// A byte count in the unit that suits it.
pub fn bytes(b: u64) -> String {
    match b {
        0..=9_999 => format!("{b} B"),
        10_000..=9_999_999 => format!("{:.1} KiB", b as f64 / 1024.0),
        _ => format!("{:.1} MiB", b as f64 / 1048576.0),
    }
}

pub fn render(m: &Merged, dir: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "oneside profile: {} of {} ranks; {} has profile.json and report.html",
        m.ranks.len(),
        m.size,
        dir.display()
    );
    for (rank, why) in &m.missing {
        let _ = writeln!(out, "  rank {rank}: no profile ({why})");
    }
    let (totals, runtime_own) = m.program_totals();
    let _ = writeln!(
        out,
        "\n{:<12} {:>10} {:>12} {:>12} {:>12}",
        "operation", "calls", "bytes", "time", "per call"
    );
    for t in totals.iter().take(8) {
        let _ = writeln!(
            out,
            "{:<12} {:>10} {:>12} {:>12} {:>12}",
            t.name,
            t.calls,
            bytes(t.bytes),
            time(t.nanos),
            time(t.nanos / t.calls)
        );
    }
    if let Some(line) = runtime_own {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "\n{:>5} {:<16} {:>12} {:>12} {:>14} {:>12}",
        "rank", "host", "elapsed", "computing", "communicating", "blocked"
    );
    let mut blocked_all = Vec::new();
    for p in &m.ranks {
        let (blocked, communicating) = Merged::split(p);
        blocked_all.push((blocked, p.rank));
        let computing = p.elapsed_ns.saturating_sub(blocked + communicating);
        let _ = writeln!(
            out,
            "{:>5} {:<16} {:>12} {:>12} {:>14} {:>12}",
            p.rank,
            p.host,
            time(p.elapsed_ns),
            time(computing),
            time(communicating),
            time(blocked)
        );
    }
    let _ = writeln!(
        out,
        "(blocked is measured; communicating is estimated from sampled calls, within what blocking leaves; computing is the rest)"
    );
    if let Some(&(most, who)) = blocked_all.iter().max() {
        let mean = blocked_all.iter().map(|b| b.0).sum::<u64>() as f64 / blocked_all.len() as f64;
        let sent: Vec<u64> = m.ranks.iter().map(|p| p.target_bytes.iter().sum()).collect();
        let sent_mean = sent.iter().sum::<u64>() as f64 / sent.len() as f64;
        let ratio = |max: f64, mean: f64| if mean > 0.0 { max / mean } else { 1.0 };
        let _ = writeln!(
            out,
            "\nimbalance: blocked time max/mean {:.2} (rank {who} the most); bytes moved max/mean {:.2}",
            ratio(most as f64, mean),
            ratio(sent.iter().copied().max().unwrap_or(0) as f64, sent_mean)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_suit_the_size() {
        assert_eq!(time(950), "950 ns");
        assert_eq!(time(12_500), "12.5 us");
        assert_eq!(time(1_607_900), "1.6 ms");
        assert_eq!(time(25_000_000), "25.0 ms");
        assert_eq!(time(12_000_000_000), "12.00 s");
        assert_eq!(bytes(64), "64 B");
        assert_eq!(bytes(1 << 20), "1024.0 KiB");
        assert_eq!(bytes(100 << 20), "100.0 MiB");
    }
}
