//! Presenting benchmark figures: a table for people, one line per figure
//! for scripts, CSV, and an SVG plot (ours next to a peer's).

use plotters::prelude::*;
use std::path::Path;

/// One measured number.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub metric: String,
    pub bytes: usize,
    pub value: f64,
    pub unit: &'static str,
}

impl Figure {
    /// `<metric> <bytes> <value> <unit>`
    pub fn line(&self) -> String {
        format!("{} {} {:.4} {}", self.metric, self.bytes, self.value, self.unit)
    }
}

fn find(figures: &[Figure], metric: &str, bytes: usize) -> Option<f64> {
    figures
        .iter()
        .find(|f| f.metric == metric && f.bytes == bytes)
        .map(|f| f.value)
}

/// The human-readable table.
pub fn table(transport: &str, ranks: usize, figures: &[Figure]) -> String {
    let mut out = format!("# oneside bench: transport {transport}, {ranks} ranks, rank 0 -> rank 1\n");
    out += &format!(
        "{:>10} {:>12} {:>12} {:>14} {:>14}\n",
        "bytes", "put us", "get us", "put MB/s", "bi-put MB/s"
    );
    let mut sizes: Vec<usize> = figures
        .iter()
        .filter(|f| f.metric == "put_lat")
        .map(|f| f.bytes)
        .collect();
    sizes.dedup();
    let cell = |v: Option<f64>, width: usize| v.map_or(format!("{:>width$}", "-"), |v| format!("{v:>width$.3}"));
    for size in sizes {
        out += &format!(
            "{size:>10} {} {} {} {}\n",
            cell(find(figures, "put_lat", size), 12),
            cell(find(figures, "get_lat", size), 12),
            cell(find(figures, "put_bw", size), 14),
            cell(find(figures, "put_bibw", size), 14),
        );
    }
    for f in figures.iter().filter(|f| f.metric == "copy_bw") {
        let put = find(figures, "put_bw", f.bytes).unwrap_or(0.0);
        out += &format!(
            "one-core memcpy {:>8} B {:>14.3} MB/s (put reaches {:.0}%)\n",
            f.bytes,
            f.value,
            100.0 * put / f.value
        );
    }
    let tabled = ["put_lat", "get_lat", "put_bw", "put_bibw", "copy_bw"];
    for f in figures.iter().filter(|f| !tabled.contains(&f.metric.as_str())) {
        let name = format!("{} [{} B]", f.metric, f.bytes);
        out += &format!("{name:<24} {:>14.3} {}\n", f.value, f.unit);
    }
    out
}

pub fn csv(figures: &[Figure]) -> String {
    let mut out = String::from("metric,bytes,value,unit\n");
    for f in figures {
        out += &format!("{},{},{},{}\n", f.metric, f.bytes, f.value, f.unit);
    }
    out
}

/// Reads `<metric> <bytes> <value> <unit>` lines, skipping anything else.
pub fn parse_lines(text: &str) -> Vec<Figure> {
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [metric, bytes, value, unit] = words[..] else {
                return None;
            };
            let unit = match unit {
                "us" => "us",
                "MB/s" => "MB/s",
                "msg/s" => "msg/s",
                _ => return None,
            };
            Some(Figure {
                metric: metric.into(),
                bytes: bytes.parse().ok()?,
                value: value.parse().ok()?,
                unit,
            })
        })
        .collect()
}

/// A labelled line of (size, value) points.
type Series = (String, Vec<(f64, f64)>, RGBColor);

/// Draws latency and bandwidth against message size, log-log, ours and the peer's.
pub fn plot(path: &Path, ours: &[Figure], peer: &[Figure], peer_name: &str) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    let panels = [
        (left, "latency (us, lower is better)", ["put_lat", "get_lat"]),
        (right, "bandwidth (MB/s, higher is better)", ["put_bw", "put_bibw"]),
    ];
    for (area, title, metrics) in panels {
        let series: Vec<Series> = [(ours, "oneside", [BLUE, CYAN]), (peer, peer_name, [RED, MAGENTA])]
            .iter()
            .flat_map(|(figures, who, colors)| {
                metrics.iter().zip(colors).map(move |(metric, color)| {
                    let points = figures
                        .iter()
                        .filter(|f| f.metric == *metric)
                        .map(|f| (f.bytes as f64, f.value))
                        .collect();
                    (format!("{who} {metric}"), points, *color)
                })
            })
            .filter(|(_, points, _): &Series| !points.is_empty())
            .collect();
        let all = series.iter().flat_map(|(_, p, _)| p.iter());
        let (x_max, y_min, y_max) = all.fold((8.0f64, f64::MAX, f64::MIN), |(x, lo, hi), &(px, py)| {
            (x.max(px), lo.min(py), hi.max(py))
        });
        let (y_min, y_max) = if y_min > y_max {
            (0.01, 1.0)
        } else {
            (y_min * 0.8, y_max * 1.25)
        };
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((8.0..x_max * 1.2).log_scale(), (y_min..y_max).log_scale())?;
        chart.configure_mesh().x_desc("message size (bytes)").draw()?;
        for (label, points, color) in series {
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
