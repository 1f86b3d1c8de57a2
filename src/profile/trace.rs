//! The runtime's timeline (`rlaunch --trace`, `ONESIDE_TRACE=DIR`): every
//! blocking call (waits, locks, barriers, collectives, allocation) and
//! every get and quiet, as a begin time and a duration, per thread.
//!
//! Memory is bounded: each thread keeps its last [`capacity`] events and
//! counts the ones it dropped to make room. At finalize each rank writes
//! `DIR/rank-<rank>.trace`; rlaunch merges the ranks into one Chrome
//! trace-event (Perfetto) file.
//!
//! ```text
//! oneside-trace 1
//! rank 3 epoch_unix_ns 1764086400000000000 host node7
//! thread 1 dropped 0
//! e barrier 1 1200 35000
//! ```
//! An event line is `e <family> <thread> <begin ns after epoch> <duration ns>`.

use super::Family;
use std::collections::VecDeque;
use std::fmt::Write as _;
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

#[derive(Clone, Copy)]
struct Event {
    family: Family,
    begin_ns: u64,
    duration_ns: u64,
}

/// One thread's last events.
pub(crate) struct Ring {
    capacity: usize,
    inner: Mutex<(VecDeque<Event>, u64)>,
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
        inner.0.push_back(Event {
            family,
            begin_ns,
            duration_ns,
        });
    }

    /// This thread's lines of the trace file (`thread` is its number).
    pub fn lines(&self, thread: usize, out: &mut String) {
        let inner = crate::sync::lock(&self.inner);
        let _ = writeln!(out, "thread {thread} dropped {}", inner.1);
        for e in &inner.0 {
            let name = Family::NAMES[e.family as usize];
            let _ = writeln!(out, "e {name} {thread} {} {}", e.begin_ns, e.duration_ns);
        }
    }
}

/// The head of a rank's trace file.
pub fn header(rank: usize, epoch_unix_ns: u64, host: &str) -> String {
    format!("oneside-trace 1\nrank {rank} epoch_unix_ns {epoch_unix_ns} host {host}\n")
}

/// One rank's trace as read back by rlaunch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankTrace {
    pub rank: usize,
    pub epoch_unix_ns: u64,
    pub host: String,
    /// Events each thread dropped to stay within its capacity.
    pub dropped: u64,
    /// (family, thread, begin ns after the epoch, duration ns)
    pub events: Vec<(String, usize, u64, u64)>,
}

impl RankTrace {
    /// Reads a file written at finalize (the module docs).
    pub fn parse(text: &str) -> Result<RankTrace, String> {
        let mut lines = text.lines();
        if lines.next() != Some("oneside-trace 1") {
            return Err("not a trace file (the first line is not \"oneside-trace 1\")".into());
        }
        let head: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
        let number = |s: &str| s.parse::<u64>().map_err(|_| format!("\"{s}\" is not a number"));
        let ["rank", rank, "epoch_unix_ns", epoch, "host", host] = head[..] else {
            return Err("the second line is not \"rank R epoch_unix_ns T host H\"".into());
        };
        let mut trace = RankTrace {
            rank: number(rank)? as usize,
            epoch_unix_ns: number(epoch)?,
            host: host.to_string(),
            dropped: 0,
            events: Vec::new(),
        };
        for line in lines {
            match line.split(' ').collect::<Vec<_>>()[..] {
                ["thread", _, "dropped", n] => trace.dropped += number(n)?,
                ["e", name, thread, begin, duration] => trace.events.push((
                    name.to_string(),
                    number(thread)? as usize,
                    number(begin)?,
                    number(duration)?,
                )),
                _ => return Err(format!("unreadable line \"{line}\"")),
            }
        }
        Ok(trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_drops_its_oldest_and_says_how_many() {
        let ring = Ring::new(2);
        ring.push(Family::Barrier, 10, 5);
        ring.push(Family::Wait, 20, 5);
        ring.push(Family::Quiet, 30, 5);
        let mut text = header(4, 1000, "h");
        ring.lines(2, &mut text);
        let trace = RankTrace::parse(&text).expect("parses");
        assert_eq!((trace.rank, trace.epoch_unix_ns, trace.dropped), (4, 1000, 1));
        assert_eq!(
            trace.events,
            vec![("wait".into(), 2, 20, 5), ("quiet".into(), 2, 30, 5)]
        );
        assert!(RankTrace::parse("oneside-trace 1\nrank x").is_err());
    }
}
