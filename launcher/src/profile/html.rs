//! `report.html`: one self-contained page (inline SVG, no scripts, no
//! network): the communication matrix as a heat map, each rank's time as
//! computing / communicating / blocked, and per-operation latency
//! histograms (filled at `shmem_pcontrol(2)`).

use super::summary::{bytes, time};
use super::Merged;
use std::fmt::Write as _;

/// The heat map's side in pixels, whatever the job's size.
const MAP: f64 = 480.0;

/// A colour from white (nothing) to dark red (the most), on a log scale.
fn heat(value: u64, max: u64) -> String {
    if value == 0 || max == 0 {
        return "#f4f4f4".into();
    }
    let t = ((value as f64).ln_1p() / (max as f64).ln_1p()).clamp(0.0, 1.0);
    let (r, g, b) = (255.0 - 115.0 * t, 230.0 * (1.0 - t), 200.0 * (1.0 - t));
    format!("rgb({:.0},{:.0},{:.0})", r, g, b)
}

fn heat_map(out: &mut String, matrix: &[Vec<u64>]) {
    let n = matrix.len().max(1);
    let cell = MAP / n as f64;
    let max = matrix.iter().flatten().copied().max().unwrap_or(0);
    let _ = writeln!(
        out,
        "<svg id=\"heatmap\" width=\"{w}\" height=\"{w}\" viewBox=\"-40 -20 {w} {w}\" role=\"img\">",
        w = MAP + 60.0
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"-6\" font-size=\"12\" text-anchor=\"middle\">target rank</text>",
        MAP / 2.0
    );
    let _ = writeln!(
        out,
        "<text x=\"-28\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 -28 {y})\" text-anchor=\"middle\">origin rank</text>",
        MAP / 2.0,
        y = MAP / 2.0
    );
    for (from, row) in matrix.iter().enumerate() {
        for (to, &value) in row.iter().enumerate() {
            let _ = writeln!(
                out,
                "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{c:.2}\" height=\"{c:.2}\" fill=\"{}\"><title>{from} -&gt; {to}: {}</title></rect>",
                to as f64 * cell,
                from as f64 * cell,
                heat(value, max),
                bytes(value),
                c = cell
            );
        }
    }
    out.push_str("</svg>\n");
}

fn time_bars(out: &mut String, m: &Merged) {
    let longest = m.ranks.iter().map(|p| p.elapsed_ns).max().unwrap_or(1).max(1);
    let row = 18.0;
    let height = row * m.ranks.len() as f64 + 10.0;
    let _ = writeln!(out, "<svg id=\"timebars\" width=\"620\" height=\"{height}\">");
    for (i, p) in m.ranks.iter().enumerate() {
        let (blocked, communicating) = Merged::split(p);
        let computing = p.elapsed_ns.saturating_sub(blocked + communicating);
        let mut x = 60.0;
        let y = i as f64 * row;
        let _ = writeln!(
            out,
            "<text x=\"0\" y=\"{:.0}\" font-size=\"12\">rank {}</text>",
            y + 13.0,
            p.rank
        );
        for (part, colour, what) in [
            (computing, "#4c9a2a", "computing"),
            (communicating, "#2a6ebb", "communicating"),
            (blocked, "#e67e22", "blocked"),
        ] {
            let w = 540.0 * part as f64 / longest as f64;
            let _ = writeln!(
                out,
                "<rect x=\"{x:.2}\" y=\"{y:.0}\" width=\"{w:.2}\" height=\"{}\" fill=\"{colour}\"><title>rank {}: {what} {}</title></rect>",
                row - 4.0,
                p.rank,
                time(part)
            );
            x += w;
        }
    }
    out.push_str("</svg>\n");
}

fn histograms(out: &mut String, m: &Merged) {
    let mut sums: Vec<(String, Vec<u64>)> = m.totals().into_iter().map(|t| (t.name, t.histogram)).collect();
    sums.retain(|s| s.1.iter().any(|&c| c > 0));
    if sums.is_empty() {
        out.push_str("<p>No latency histograms: call <code>shmem_pcontrol(2)</code> (Rust: <code>oneside::set_profiling_level(2)</code>) to record them.</p>\n");
        return;
    }
    for (name, counts) in sums {
        let max = counts.iter().copied().max().unwrap_or(1).max(1);
        let _ = writeln!(
            out,
            "<h3>{name}</h3>\n<svg class=\"histogram\" width=\"{}\" height=\"120\">",
            counts.len() * 16 + 10
        );
        for (b, &c) in counts.iter().enumerate() {
            let h = 90.0 * c as f64 / max as f64;
            let _ = writeln!(
                out,
                "<rect x=\"{}\" y=\"{:.1}\" width=\"14\" height=\"{h:.1}\" fill=\"#2a6ebb\"><title>{} .. {}: {c} calls</title></rect>",
                b * 16,
                95.0 - h,
                time(1 << b),
                time(2 << b)
            );
            if b % 5 == 0 {
                let _ = writeln!(
                    out,
                    "<text x=\"{}\" y=\"112\" font-size=\"9\">{}</text>",
                    b * 16,
                    time(1 << b)
                );
            }
        }
        out.push_str("</svg>\n");
    }
}

pub fn render(m: &Merged) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>oneside profile</title>\n\
         <style>body{font-family:sans-serif;margin:2em;max-width:60em}h2{margin-top:1.5em}</style></head><body>\n",
    );
    let _ = writeln!(out, "<h1>oneside profile: {} ranks</h1>", m.size);
    for (rank, why) in &m.missing {
        let _ = writeln!(out, "<p>rank {rank}: no profile ({why})</p>");
    }
    out.push_str("<h2>Bytes moved by the program's puts, gets and atomics (row: origin, column: target)</h2>\n");
    heat_map(&mut out, &m.matrix(|p| &p.target_bytes));
    out.push_str("<h2>Time per rank: computing, communicating, blocked</h2>\n");
    time_bars(&mut out, m);
    out.push_str("<h2>Latency per operation</h2>\n");
    histograms(&mut out, m);
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_runs_from_pale_to_dark() {
        assert_eq!(heat(0, 100), "#f4f4f4");
        assert_eq!(heat(100, 100), "rgb(140,0,0)");
        assert_ne!(heat(1, 100), heat(50, 100));
    }
}
