//! `rlaunch --trace[=DIR]`: merges every rank's `rank-<r>.trace` into
//! `DIR/trace.json`, a Chrome trace-event file (open it in Perfetto,
//! ui.perfetto.dev, or chrome://tracing): one process per rank, one
//! thread per rank thread, a complete event ("X") per call. Times are
//! microseconds after the earliest rank's start, by each host's clock.

use oneside::profile::RankTrace;
use serde::{Serialize, Serializer};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Writes `dir/trace.json` from the ranks' files; returns its path and a
/// one-line account for the terminal.
pub fn write(dir: &Path, size: usize) -> std::io::Result<(PathBuf, String)> {
    let mut traces = Vec::new();
    let mut missing = Vec::new();
    for rank in 0..size {
        let path = dir.join(format!("rank-{rank}.trace"));
        let read = std::fs::read_to_string(&path).map_err(|e| e.to_string());
        match read.and_then(|text| RankTrace::parse(&text)) {
            Ok(trace) if trace.rank == rank => traces.push(trace),
            _ => missing.push(rank),
        }
    }
    let json = to_json(&traces, size, &missing);
    let path = dir.join("trace.json");
    std::fs::write(&path, json)?;
    let events: usize = traces.iter().map(|t| t.events.len()).sum();
    let dropped: u64 = traces.iter().map(|t| t.dropped).sum();
    let mut line = format!("oneside trace: {} ({events} events", path.display());
    if dropped > 0 {
        let _ = write!(
            line,
            "; {dropped} older ones dropped to stay within ONESIDE_TRACE_EVENTS per thread"
        );
    }
    line.push(')');
    if !missing.is_empty() {
        let _ = write!(line, "; no trace from ranks {missing:?}");
    }
    Ok((path, line + "\n"))
}

/// The Chrome trace-event file (its "JSON object format"): a named,
/// ordered track per rank, an `X` event per call, written by serde_json.
fn to_json(traces: &[RankTrace], size: usize, missing: &[usize]) -> String {
    let origin = traces.iter().map(|t| t.epoch_unix_ns).min().unwrap_or(0);
    let mut events = Vec::new();
    for t in traces {
        events.push(Event::Meta {
            name: "process_name",
            ph: "M",
            pid: t.rank,
            args: MetaArgs::Name {
                name: format!("rank {} ({})", t.rank, t.host),
            },
        });
        events.push(Event::Meta {
            name: "process_sort_index",
            ph: "M",
            pid: t.rank,
            args: MetaArgs::SortIndex { sort_index: t.rank },
        });
        for (name, thread, begin, duration) in &t.events {
            let at = (t.epoch_unix_ns - origin).saturating_add(*begin);
            events.push(Event::Call {
                name,
                cat: "oneside",
                ph: "X",
                pid: t.rank,
                tid: *thread,
                ts: at as f64 / 1e3,
                dur: *duration as f64 / 1e3,
            });
        }
    }
    let file = TraceFile {
        display_time_unit: "ns",
        other_data: OtherData {
            ranks: size,
            missing_ranks: missing,
            dropped_events: Dropped(traces),
        },
        trace_events: events,
    };
    serde_json::to_string(&file).expect("a trace serializes") + "\n"
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TraceFile<'a> {
    display_time_unit: &'static str,
    other_data: OtherData<'a>,
    trace_events: Vec<Event<'a>>,
}

#[derive(Serialize)]
struct OtherData<'a> {
    ranks: usize,
    missing_ranks: &'a [usize],
    dropped_events: Dropped<'a>,
}

/// Events each rank dropped, keyed by rank, in rank order.
struct Dropped<'a>(&'a [RankTrace]);

impl Serialize for Dropped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|t| (t.rank.to_string(), t.dropped)))
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Event<'a> {
    Meta {
        name: &'static str,
        ph: &'static str,
        pid: usize,
        args: MetaArgs,
    },
    Call {
        name: &'a str,
        cat: &'static str,
        ph: &'static str,
        pid: usize,
        tid: usize,
        /// Microseconds, as the format wants.
        ts: f64,
        dur: f64,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum MetaArgs {
    Name { name: String },
    SortIndex { sort_index: usize },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_one_time_origin() {
        let rank = |rank, epoch| RankTrace {
            rank,
            epoch_unix_ns: epoch,
            host: "h".into(),
            dropped: rank as u64,
            events: vec![("barrier".into(), 0, 1000, 500)],
        };
        let json = to_json(&[rank(0, 5_000), rank(1, 2_000)], 3, &[2]);
        assert!(json.contains("\"pid\":0,\"tid\":0,\"ts\":4.0,\"dur\":0.5"), "{json}");
        assert!(json.contains("\"pid\":1,\"tid\":0,\"ts\":1.0,\"dur\":0.5"), "{json}");
        assert!(json.contains("\"missing_ranks\":[2]"), "{json}");
        assert!(json.contains("\"dropped_events\":{\"0\":0,\"1\":1}"), "{json}");
    }
}
