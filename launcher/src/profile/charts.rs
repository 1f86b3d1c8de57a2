//! The pictures of `report.html`, as inline SVG that reads on paper: the
//! communication matrix with rank labels, the bytes in its cells (up to
//! 32 ranks) and a colour scale with values; each rank's time as bars with
//! a legend and a time axis; latency histograms with their axes. Every
//! number is drawn as text, not only in hover titles.

use super::summary::{bytes, time};
use super::Merged;
use std::fmt::Write as _;

/// The heat map's side in pixels, whatever the job's size.
const MAP: f64 = 480.0;

/// Up to this many ranks, every cell shows its bytes and every rank its label.
pub const NUMBERED: usize = 32;

/// Where the map starts in its picture: room for the labels.
const LEFT: f64 = 64.0;
const TOP: f64 = 40.0;

/// A colour from pale (nothing) to dark red (the most), on a log scale:
/// `t` in 0..=1.
fn shade(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let (r, g, b) = (255.0 - 115.0 * t, 230.0 * (1.0 - t), 200.0 * (1.0 - t));
    format!("rgb({:.0},{:.0},{:.0})", r, g, b)
}

/// Where `value` sits on the log scale up to `max`.
pub fn level(value: u64, max: u64) -> f64 {
    match value == 0 || max == 0 {
        true => 0.0,
        false => ((value as f64).ln_1p() / (max as f64).ln_1p()).clamp(0.0, 1.0),
    }
}

/// The colour of `value` on the scale up to `max`; nothing is grey.
pub fn heat(value: u64, max: u64) -> String {
    match value == 0 || max == 0 {
        true => "#f4f4f4".into(),
        false => shade(level(value, max)),
    }
}

/// Every `step`-th rank is labelled: all of them up to [`NUMBERED`], then
/// 16 or so along each side.
fn label_step(n: usize) -> usize {
    match n <= NUMBERED {
        true => 1,
        false => n.div_ceil(16),
    }
}

/// The matrix (row: origin, column: target), labelled, with its scale.
pub fn heat_map(out: &mut String, matrix: &[Vec<u64>]) {
    let labels: Vec<String> = (0..matrix.len()).map(|r| r.to_string()).collect();
    let ranks = Axis {
        name: "rank",
        labels: &labels,
    };
    grid(out, "heatmap", matrix, &ranks, &ranks);
}

/// One side of a [`grid`]: what its rows or columns are, and their labels.
pub struct Axis<'a> {
    /// "rank" or "node": the axis reads "origin rank", "target node".
    pub name: &'a str,
    pub labels: &'a [String],
}

/// A matrix of bytes (rows: origins, columns: targets) as a heat map with
/// its labels, its numbers up to [`NUMBERED`] rows and columns, and its
/// colour scale; `id` names the picture.
pub fn grid(out: &mut String, id: &str, matrix: &[Vec<u64>], rows: &Axis, cols: &Axis) {
    let (nr, nc) = (rows.labels.len().max(1), cols.labels.len().max(1));
    let (cw, ch) = (MAP / nc as f64, MAP / nr as f64);
    let max = matrix.iter().flatten().copied().max().unwrap_or(0);
    let (width, height) = (LEFT + MAP + 20.0, TOP + MAP + 80.0);
    let _ = writeln!(
        out,
        "<svg id=\"{id}\" width=\"{width}\" height=\"{height}\" viewBox=\"{} {} {width} {height}\" role=\"img\" font-family=\"sans-serif\">",
        -LEFT, -TOP
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"-24\" font-size=\"12\" text-anchor=\"middle\">target {}</text>",
        MAP / 2.0,
        cols.name
    );
    let _ = writeln!(
        out,
        "<text x=\"-48\" y=\"{y}\" font-size=\"12\" transform=\"rotate(-90 -48 {y})\" text-anchor=\"middle\">origin {}</text>",
        rows.name,
        y = MAP / 2.0
    );
    for c in (0..nc.min(cols.labels.len())).step_by(label_step(nc)) {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"-6\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            (c as f64 + 0.5) * cw,
            cols.labels[c]
        );
    }
    for r in (0..nr.min(rows.labels.len())).step_by(label_step(nr)) {
        let _ = writeln!(
            out,
            "<text x=\"-6\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            (r as f64 + 0.5) * ch + 3.0,
            rows.labels[r]
        );
    }
    let numbered = nr <= NUMBERED && nc <= NUMBERED;
    let font = (cw.min(ch) / 5.0).clamp(6.0, 12.0);
    for (from, row) in matrix.iter().enumerate() {
        for (to, &value) in row.iter().enumerate() {
            let (x, y) = (to as f64 * cw, from as f64 * ch);
            let _ = writeln!(
                out,
                "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{cw:.2}\" height=\"{ch:.2}\" fill=\"{}\"><title>{} -&gt; {}: {}</title></rect>",
                heat(value, max),
                rows.labels.get(from).map_or("", String::as_str),
                cols.labels.get(to).map_or("", String::as_str),
                bytes(value),
            );
            if numbered && value > 0 {
                let ink = if level(value, max) > 0.5 { "white" } else { "black" };
                let _ = writeln!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{font:.0}\" text-anchor=\"middle\" fill=\"{ink}\">{}</text>",
                    x + cw / 2.0,
                    y + ch / 2.0 + font / 3.0,
                    bytes(value)
                );
            }
        }
    }
    scale(out, max);
    out.push_str("</svg>\n");
}

/// The colour scale under the map: ten steps from 0 to `max`, with the
/// values at its ends and middle.
fn scale(out: &mut String, max: u64) {
    let y = MAP + 24.0;
    if max == 0 {
        // Nothing moved: a scale from 0 B to 0 B says nothing.
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">no bytes moved between ranks</text>",
            MAP / 2.0,
            y + 12.0
        );
        return;
    }
    let steps = 10;
    let width = MAP / steps as f64;
    for i in 0..steps {
        let t = (i as f64 + 0.5) / steps as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"14\" fill=\"{}\"/>",
            i as f64 * width,
            shade(t)
        );
    }
    // The value at a point of the log scale: e^(t ln(1 + max)) - 1.
    let at = |t: f64| ((max as f64).ln_1p() * t).exp_m1().round() as u64;
    for (t, anchor) in [(0.0, "start"), (0.5, "middle"), (1.0, "end")] {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"{anchor}\">{}</text>",
            t * MAP,
            y + 28.0,
            bytes(at(t))
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">bytes moved (log scale)</text>",
        MAP / 2.0,
        y + 44.0
    );
}

/// Each rank's time, split, with a legend above and a time axis below.
pub fn time_bars(out: &mut String, m: &Merged) {
    let longest = m.ranks.iter().map(|p| p.elapsed_ns).max().unwrap_or(1).max(1);
    let (row, left, span) = (18.0, 60.0, 540.0);
    let top = 24.0;
    let height = top + row * m.ranks.len() as f64 + 36.0;
    let parts = [
        ("computing", "#4c9a2a"),
        ("communicating", "#2a6ebb"),
        ("blocked", "#e67e22"),
    ];
    let _ = writeln!(
        out,
        "<svg id=\"timebars\" width=\"620\" height=\"{height}\" font-family=\"sans-serif\">"
    );
    for (i, (what, colour)) in parts.iter().enumerate() {
        let x = left + i as f64 * 150.0;
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"2\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
        );
        let _ = writeln!(out, "<text x=\"{}\" y=\"12\" font-size=\"12\">{what}</text>", x + 16.0);
    }
    for (i, p) in m.ranks.iter().enumerate() {
        let (blocked, communicating) = Merged::split(p);
        let computing = p.elapsed_ns.saturating_sub(blocked + communicating);
        let y = top + i as f64 * row;
        let _ = writeln!(
            out,
            "<text x=\"0\" y=\"{:.0}\" font-size=\"12\">rank {}</text>",
            y + 13.0,
            p.rank
        );
        let mut x = left;
        for (part, (what, colour)) in [computing, communicating, blocked].into_iter().zip(parts) {
            let w = span * part as f64 / longest as f64;
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
    let axis = top + row * m.ranks.len() as f64 + 4.0;
    let _ = writeln!(
        out,
        "<line x1=\"{left}\" y1=\"{axis}\" x2=\"{}\" y2=\"{axis}\" stroke=\"#333\"/>",
        left + span
    );
    for q in 0..=4 {
        let x = left + span * q as f64 / 4.0;
        let anchor = match q {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{axis}\" x2=\"{x}\" y2=\"{}\" stroke=\"#333\"/>",
            axis + 4.0
        );
        let _ = writeln!(
            out,
            "<text x=\"{x}\" y=\"{}\" font-size=\"11\" text-anchor=\"{anchor}\">{}</text>",
            axis + 16.0,
            time(longest * q / 4)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">time since start</text>",
        left + span / 2.0,
        axis + 30.0
    );
    out.push_str("</svg>\n");
}

/// One histogram per operation that has one: calls per latency bucket,
/// with both axes labelled and each bar's count written above it.
pub fn histograms(out: &mut String, m: &Merged) {
    let mut sums: Vec<(String, Vec<u64>)> = m
        .totals()
        .into_iter()
        .map(|t| (super::display_name(&t.name).to_string(), t.histogram))
        .collect();
    sums.retain(|s| s.1.iter().any(|&c| c > 0));
    if sums.is_empty() {
        out.push_str("<p>No latency histograms: no call was timed.</p>\n");
        return;
    }
    out.push_str(
        "<p>Calls counted are the timed ones: every blocking call, and one in 64 of the cheap ones \
         (puts, gets, atomics, quiet), or all of them after <code>shmem_pcontrol(2)</code> \
         (Rust: <code>oneside::set_profiling_level(2)</code>).</p>\n",
    );
    for (name, counts) in sums {
        let max = counts.iter().copied().max().unwrap_or(1).max(1);
        let used = counts.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
        let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
        let _ = writeln!(
            out,
            "<h3>{name}</h3>\n<svg class=\"histogram\" width=\"{}\" height=\"150\" font-family=\"sans-serif\">",
            ((used - first) * 40 + 60).max(200)
        );
        let _ = writeln!(out, "<text x=\"0\" y=\"12\" font-size=\"11\">calls</text>");
        for (i, b) in (first..used).enumerate() {
            let c = counts[b];
            let h = 80.0 * c as f64 / max as f64;
            let x = 40 + i * 40;
            let _ = writeln!(
                out,
                "<rect x=\"{x}\" y=\"{:.1}\" width=\"34\" height=\"{h:.1}\" fill=\"#2a6ebb\"><title>{} .. {}: {c} calls</title></rect>",
                105.0 - h,
                time(1 << b),
                time(2 << b)
            );
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{c}</text>",
                x + 17,
                102.0 - h
            );
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"120\" font-size=\"9\" text-anchor=\"middle\">{}</text>",
                x + 17,
                time(1 << b)
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"40\" y=\"140\" font-size=\"11\">latency (bucket from)</text>"
        );
        out.push_str("</svg>\n");
    }
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

    #[test]
    fn up_to_32_ranks_the_cells_say_their_bytes() {
        let matrix = vec![vec![0, 120], vec![56, 0]];
        let mut out = String::new();
        heat_map(&mut out, &matrix);
        assert!(out.contains(">120 B</text>") && out.contains(">56 B</text>"), "{out}");
        assert!(
            out.contains(">target rank</text>") && out.contains(">1</text>"),
            "{out}"
        );
        assert!(out.contains(">bytes moved (log scale)</text>"), "{out}");
        let big = vec![vec![1; 64]; 64];
        let mut out = String::new();
        heat_map(&mut out, &big);
        let cell_text = |out: &str| out.contains("fill=\"white\">") || out.contains("fill=\"black\">");
        assert!(!cell_text(&out), "no numbers in 4096 cells");
        assert!(out.contains(">48</text>"), "every third or so rank labelled");
        let mut out = String::new();
        heat_map(&mut out, &[vec![0, 0], vec![0, 0]]);
        assert!(out.contains(">no bytes moved between ranks</text>"), "{out}");
        assert!(!out.contains(">0 B</text>"), "no scale of nothing: {out}");
    }
}
