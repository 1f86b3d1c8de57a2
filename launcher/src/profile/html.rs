//! `report.html`: one self-contained page (inline SVG, no scripts, no
//! network) that reads on paper: what stands out, computed from the data;
//! the communication matrix; each rank's time; every operation with its
//! calls, bytes and time; latency histograms (of the timed calls, by
//! default). The pictures are in `charts.rs`.

use super::charts;
use super::summary::{bytes, time};
use super::Merged;
use std::fmt::Write as _;

pub fn render(m: &Merged) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>oneside profile</title>\n\
         <style>body{font-family:sans-serif;margin:2em;max-width:60em}h2{margin-top:1.5em}\
         table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #ddd}\
         td:first-child,th:first-child{text-align:left}</style></head><body>\n",
    );
    let _ = writeln!(out, "<h1>oneside profile: {} ranks</h1>", m.size);
    for (rank, why) in &m.missing {
        let _ = writeln!(out, "<p>rank {rank}: no profile ({why})</p>");
    }
    out.push_str("<h2>Bytes moved by the program's puts, gets and atomics (row: origin, column: target)</h2>\n");
    let matrix = m.matrix(|p| &p.target_bytes);
    charts::heat_map(&mut out, &matrix);
    if m.size > charts::NUMBERED {
        out.push_str("<h2>Bytes moved between nodes, and within each</h2>\n");
        super::nodes::node_view(&mut out, m, &matrix);
    }
    out.push_str("<h2>What stands out</h2>\n<ul id=\"standout\">\n");
    for line in standouts(m, &matrix) {
        let _ = writeln!(out, "<li>{line}</li>");
    }
    out.push_str("</ul>\n<h2>Time per rank: computing, communicating, blocked</h2>\n");
    charts::time_bars(&mut out, m);
    out.push_str("<h2>Operations, over all ranks</h2>\n");
    operations(&mut out, m);
    out.push_str("<h2>Latency per operation</h2>\n");
    charts::histograms(&mut out, m);
    out.push_str("</body></html>\n");
    out
}

/// The per-operation table: calls, bytes, time, time per call and the
/// share of the run (the ranks' elapsed times added up), most time first.
fn operations(out: &mut String, m: &Merged) {
    let run: u64 = m.ranks.iter().map(|p| p.elapsed_ns).sum::<u64>().max(1);
    let (totals, runtime_own) = m.program_totals();
    out.push_str("<table id=\"operations\">\n<tr><th>operation</th><th>calls</th><th>bytes</th><th>time</th><th>per call</th><th>% of the run</th></tr>\n");
    for t in &totals {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td></tr>",
            t.name,
            t.calls,
            bytes(t.bytes),
            time(t.nanos),
            time(t.nanos / t.calls),
            100.0 * t.nanos as f64 / run as f64
        );
    }
    out.push_str("</table>\n");
    if let Some(line) = runtime_own {
        let _ = writeln!(out, "<p id=\"runtime-own\">{line}.</p>");
    }
}

/// A few sentences computed from the data: the most blocked rank and in
/// what, how uneven the ranks are, and the pair that moved the most.
fn standouts(m: &Merged, matrix: &[Vec<u64>]) -> Vec<String> {
    let mut lines = Vec::new();
    let blocked: Vec<(u64, usize)> = m.ranks.iter().map(|p| (Merged::split(p).0, p.rank)).collect();
    if let Some(p) = blocked
        .iter()
        .max()
        .and_then(|&(_, r)| m.ranks.iter().find(|p| p.rank == r))
    {
        let (most, _) = Merged::split(p);
        let worst = p
            .families
            .iter()
            .filter(|f| oneside::profile::Family::blocks(&f.name))
            .max_by_key(|f| f.nanos);
        let share = 100.0 * most as f64 / p.elapsed_ns.max(1) as f64;
        let line = match worst {
            Some(f) if most > 0 => format!(
                "The most blocked rank is rank {}: {} ({share:.0}% of its run), most of it in {} ({}).",
                p.rank,
                time(most),
                super::display_name(&f.name),
                time(f.nanos)
            ),
            _ => "No rank was blocked in oneside.".to_string(),
        };
        lines.push(line);
        let mean = blocked.iter().map(|b| b.0).sum::<u64>() as f64 / blocked.len() as f64;
        if mean > 0.0 {
            lines.push(format!(
                "Imbalance: the most blocked rank waited {:.2}x the mean.",
                most as f64 / mean
            ));
        }
    }
    let total: u64 = matrix.iter().flatten().sum();
    let hottest = matrix
        .iter()
        .enumerate()
        .flat_map(|(from, row)| row.iter().enumerate().map(move |(to, &b)| (b, from, to)))
        .max();
    match hottest {
        Some((b, from, to)) if b > 0 => lines.push(format!(
            "The hottest pair is rank {from} to rank {to}: {} ({:.0}% of all bytes moved).",
            bytes(b),
            100.0 * b as f64 / total as f64
        )),
        _ => lines.push("The program moved no bytes with puts, gets or atomics.".to_string()),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use oneside::profile::{FamilyStats, RankProfile};

    fn family(name: &str, calls: u64, bytes: u64, nanos: u64) -> FamilyStats {
        FamilyStats {
            name: name.into(),
            calls,
            bytes,
            nanos,
            histogram: Vec::new(),
        }
    }

    fn two_ranks() -> Merged {
        let rank = |rank: usize, barrier_ns: u64, to_other: u64| RankProfile {
            rank,
            size: 2,
            host: "h".into(),
            elapsed_ns: 1_000_000,
            families: vec![family("put", 10, 80, 2_000), family("barrier", 1, 0, barrier_ns)],
            target_bytes: if rank == 0 {
                vec![0, to_other]
            } else {
                vec![to_other, 0]
            },
            target_ops: vec![0, 0],
            collective_bytes: vec![0, 0],
        };
        Merged {
            size: 2,
            ranks: vec![rank(0, 100_000, 80), rank(1, 500_000, 8)],
            missing: Vec::new(),
        }
    }

    #[test]
    fn the_table_gives_each_operation_its_share_of_the_run() {
        let mut out = String::new();
        operations(&mut out, &two_ranks());
        // 600 us of barrier over 2 ms of run; the barrier comes first.
        let barrier =
            out.find("<td>barrier</td><td>2</td><td>0 B</td><td>600.0 us</td><td>300.0 us</td><td>30.0%</td>");
        let put = out.find("<td>put</td><td>20</td><td>160 B</td><td>4000 ns</td><td>200 ns</td><td>0.2%</td>");
        assert!(barrier.is_some() && put.is_some() && barrier < put, "{out}");
    }

    #[test]
    fn what_stands_out_is_computed_from_the_data() {
        let m = two_ranks();
        let lines = standouts(&m, &m.matrix(|p| &p.target_bytes));
        assert_eq!(
            lines[0],
            "The most blocked rank is rank 1: 500.0 us (50% of its run), most of it in barrier (500.0 us)."
        );
        assert_eq!(lines[1], "Imbalance: the most blocked rank waited 1.67x the mean.");
        assert_eq!(
            lines[2],
            "The hottest pair is rank 0 to rank 1: 80 B (91% of all bytes moved)."
        );
    }
}
