//! The runtime's timeline (`rlaunch --trace`, `ONESIDE_TRACE=DIR`): every
//! blocking call (waits, locks, barriers, collectives, allocation) and
//! every get and quiet, as a begin time and a duration, per thread.
//!
//! Memory is bounded: each thread keeps its last [`capacity`] events and
//! counts the ones it dropped to make room. At finalize each rank writes
//! `DIR/rank-<rank>.trace`, a [`RankTrace`] as one versioned JSON document
//! (the envelope and why JSON: `versioned`), streamed into the file; each
//! thread's events are copied out of its ring first (24 bytes an event,
//! less than the text the version 1 writer built), so the ring's lock is
//! held for a copy, not for the writing. rlaunch merges the ranks into one
//! Chrome trace-event (Perfetto) file.
//!
//! ```text
//! {"format":"oneside-trace","version":2,"rank":3,"epoch_unix_ns":1764086400000000000,
//!  "host":"node7","threads":[{"thread":1,"dropped":0,"events":[
//!  {"family":"barrier","begin_ns":1200,"duration_ns":35000},...]},...]}
//! ```
//! (one line in the file.) `begin_ns` counts from `epoch_unix_ns`, the
//! rank's start.

use super::versioned::{self, TRACE};
use super::Family;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Mutex;

/// Events kept per thread: `ONESIDE_TRACE_EVENTS`, else 65536 (about
/// 1.5 MiB per thread).
pub fn capacity() -> usize {
    std::env::var("ONESIDE_TRACE_EVENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1 << 16)
}

/// One call on a thread's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub family: Family,
    /// Nanoseconds after the rank's start ([`RankTrace::epoch_unix_ns`]).
    pub begin_ns: u64,
    pub duration_ns: u64,
}

/// One thread's last events.
pub(crate) struct Ring {
    capacity: usize,
    inner: Mutex<(VecDeque<TraceEvent>, u64)>,
}

impl Ring {
    pub fn new(capacity: usize) -> Ring {
        Ring {
            capacity,
            inner: Mutex::new((VecDeque::with_capacity(capacity.min(1024)), 0)),
        }
    }

    /// Keeps one event, dropping the oldest when full.
    pub fn push(&self, family: Family, begin_ns: u64, duration_ns: u64) {
        let mut inner = crate::sync::lock(&self.inner);
        if inner.0.len() == self.capacity {
            inner.0.pop_front();
            inner.1 += 1;
        }
        inner.0.push_back(TraceEvent {
            family,
            begin_ns,
            duration_ns,
        });
    }

    /// A copy of this thread's events so far (`thread` is its number).
    pub fn snapshot(&self, thread: usize) -> ThreadTrace {
        let inner = crate::sync::lock(&self.inner);
        ThreadTrace {
            thread,
            dropped: inner.1,
            events: inner.0.iter().copied().collect(),
        }
    }
}

/// One thread's part of a rank's trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTrace {
    pub thread: usize,
    /// Older events dropped to stay within its capacity.
    pub dropped: u64,
    /// Its last events, oldest first.
    pub events: Vec<TraceEvent>,
}

/// One rank's trace, as written at finalize and read back by rlaunch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankTrace {
    pub rank: usize,
    /// The rank's start, by its host's clock.
    pub epoch_unix_ns: u64,
    pub host: String,
    pub threads: Vec<ThreadTrace>,
}

impl RankTrace {
    /// The name of rank `rank`'s file in the trace's directory.
    pub fn file_name(rank: usize) -> String {
        versioned::file_name(&TRACE, rank)
    }

    /// Writes the file at `path`, streamed (the module docs).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        versioned::write(path, &TRACE, self)
    }

    /// Reads a file [`write`](RankTrace::write) wrote; an error is a
    /// sentence that names the file and says what to do.
    pub fn read(path: &Path) -> Result<RankTrace, String> {
        versioned::read(path, &TRACE)
    }

    /// [`read`](RankTrace::read) of a file's bytes; `file` names it in
    /// the errors.
    pub fn parse(bytes: &[u8], file: &str) -> Result<RankTrace, String> {
        versioned::decode(bytes, file, &TRACE)
    }

    /// Events the threads dropped to stay within their capacity.
    pub fn dropped(&self) -> u64 {
        self.threads.iter().map(|t| t.dropped).sum()
    }

    /// Events kept, over the threads.
    pub fn events(&self) -> usize {
        self.threads.iter().map(|t| t.events.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(family: Family, begin_ns: u64) -> TraceEvent {
        TraceEvent {
            family,
            begin_ns,
            duration_ns: 5,
        }
    }

    #[test]
    fn a_full_ring_drops_its_oldest_and_the_trace_reads_back() {
        let ring = Ring::new(2);
        ring.push(Family::Barrier, 10, 5);
        ring.push(Family::Wait, 20, 5);
        ring.push(Family::InitFinalize, 30, 5);
        let trace = RankTrace {
            rank: 4,
            epoch_unix_ns: 1000,
            host: "h".into(),
            threads: vec![ring.snapshot(2), Ring::new(8).snapshot(3)],
        };
        assert_eq!(
            trace.threads[0].events,
            [event(Family::Wait, 20), event(Family::InitFinalize, 30)]
        );
        assert_eq!((trace.dropped(), trace.events()), (1, 2));
        let path = std::env::temp_dir().join(format!(
            "oneside-trace-{}-{}",
            std::process::id(),
            RankTrace::file_name(4)
        ));
        trace.write(&path).expect("written");
        let read = RankTrace::read(&path);
        let text = std::fs::read_to_string(&path).expect("read back");
        let _ = std::fs::remove_file(&path);
        assert_eq!(read, Ok(trace));
        assert!(
            text.starts_with("{\"format\":\"oneside-trace\",\"version\":2,\"rank\":4,"),
            "{text}"
        );
        assert!(
            text.contains("{\"family\":\"init_finalize\",\"begin_ns\":30,\"duration_ns\":5}"),
            "{text}"
        );
    }

    #[test]
    fn a_trace_of_another_version_or_none_is_refused() {
        let refused = |text: &str| RankTrace::parse(text.as_bytes(), "rank-0.trace").expect_err("refused");
        let version_1 = "rank-0.trace is a oneside trace of version 1; this rlaunch reads version 2: \
                         run the job again with this build's rlaunch and library";
        let old_text = "oneside-trace 1\nrank 0 epoch_unix_ns 5 host h\nthread 0 dropped 0\ne wait 0 1 2\n";
        assert_eq!(refused(old_text), version_1);
        assert_eq!(
            refused("{\"format\":\"oneside-trace\",\"version\":1,\"events\":[]}"),
            version_1
        );
        assert!(refused("e wait 0 1 2").starts_with("rank-0.trace is not a oneside trace ("));
        let unknown = "{\"format\":\"oneside-trace\",\"version\":2,\"rank\":0,\"epoch_unix_ns\":5,\"host\":\"h\",\
                       \"threads\":[{\"thread\":0,\"dropped\":0,\"events\":[\
                       {\"family\":\"teleport\",\"begin_ns\":1,\"duration_ns\":2}]}]}";
        let why = refused(unknown);
        assert!(
            why.starts_with("rank-0.trace, a oneside trace of version 2, is damaged (unknown variant `teleport`"),
            "{why}"
        );
    }

    #[test]
    fn a_family_is_spelt_by_its_name_in_the_files() {
        for i in 0..Family::COUNT {
            let name = Family::NAMES[i];
            let family: Family = serde_json::from_str(&format!("\"{name}\"")).expect(name);
            assert_eq!(family as usize, i, "{name}");
            assert_eq!(serde_json::to_string(&family).expect(name), format!("\"{name}\""));
            assert_eq!(family.name(), name);
        }
    }
}
