//! `rlaunch --trace[=DIR]`: reads every rank's `rank-<r>.trace` (a
//! versioned JSON document, `oneside::profile::RankTrace`; one of another
//! version, or no trace, is counted missing and its reason printed) and
//! merges them into `DIR/trace.json`, a Chrome trace-event file (open it in Perfetto,
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
    let mut refused = Vec::new();
    for rank in 0..size {
        let path = dir.join(RankTrace::file_name(rank));
        match RankTrace::read(&path) {
            Ok(trace) if trace.rank == rank => {
                traces.push(trace);
                continue;
            }
            Ok(trace) => refused.push(format!("{} is rank {}'s trace", path.display(), trace.rank)),
            Err(why) if path.exists() => refused.push(why),
            Err(_) => {}
        }
        missing.push(rank);
    }
    let json = to_json(&traces, size, &missing);
    let path = dir.join("trace.json");
    std::fs::write(&path, json)?;
    let events: usize = traces.iter().map(RankTrace::events).sum();
    let dropped: u64 = traces.iter().map(RankTrace::dropped).sum();
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
    for why in refused {
        let _ = write!(line, "\n  {why}");
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
        for thread in &t.threads {
            for e in &thread.events {
                let at = (t.epoch_unix_ns - origin).saturating_add(e.begin_ns);
                events.push(Event::Call {
                    name: e.family.name(),
                    cat: "oneside",
                    ph: "X",
                    pid: t.rank,
                    tid: thread.thread,
                    ts: at as f64 / 1e3,
                    dur: e.duration_ns as f64 / 1e3,
                });
            }
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
    trace_events: Vec<Event>,
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
        s.collect_map(self.0.iter().map(|t| (t.rank.to_string(), t.dropped())))
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Event {
    Meta {
        name: &'static str,
        ph: &'static str,
        pid: usize,
        args: MetaArgs,
    },
    Call {
        name: &'static str,
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
    use oneside::profile::{Family, ThreadTrace, TraceEvent};

    #[test]
    fn ranks_share_one_time_origin() {
        let rank = |rank, epoch| RankTrace {
            rank,
            epoch_unix_ns: epoch,
            host: "h".into(),
            threads: vec![ThreadTrace {
                thread: 0,
                dropped: rank as u64,
                events: vec![TraceEvent {
                    family: Family::Barrier,
                    begin_ns: 1000,
                    duration_ns: 500,
                }],
            }],
        };
        let json = to_json(&[rank(0, 5_000), rank(1, 2_000)], 3, &[2]);
        assert!(json.contains("\"name\":\"barrier\",\"cat\":\"oneside\""), "{json}");
        assert!(json.contains("\"pid\":0,\"tid\":0,\"ts\":4.0,\"dur\":0.5"), "{json}");
        assert!(json.contains("\"pid\":1,\"tid\":0,\"ts\":1.0,\"dur\":0.5"), "{json}");
        assert!(json.contains("\"missing_ranks\":[2]"), "{json}");
        assert!(json.contains("\"dropped_events\":{\"0\":0,\"1\":1}"), "{json}");
    }

    #[test]
    fn a_refused_trace_is_missing_and_says_why() {
        let dir = std::env::temp_dir().join(format!("rlaunch-timeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let trace = RankTrace {
            rank: 0,
            epoch_unix_ns: 1,
            host: "h".into(),
            threads: Vec::new(),
        };
        trace.write(&dir.join("rank-0.trace")).expect("written");
        std::fs::write(
            dir.join("rank-1.trace"),
            "oneside-trace 1\nrank 1 epoch_unix_ns 5 host h\n",
        )
        .expect("written");
        let written = write(&dir, 3);
        let _ = std::fs::remove_dir_all(&dir);
        let (_, line) = written.expect("trace.json written");
        assert!(line.contains("(0 events); no trace from ranks [1, 2]\n"), "{line}");
        let why = "rank-1.trace is a oneside trace of version 1; this rlaunch reads version 2: \
                   run the job again with this build's rlaunch and library\n";
        assert!(line.ends_with(why), "{line}");
        assert_eq!(
            line.matches('\n').count(),
            2,
            "rank 2 wrote nothing, and that needs no line: {line}"
        );
    }
}
