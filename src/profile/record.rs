//! A rank's counters while it runs: a block per thread, summed at finalize
//! into the [`RankProfile`] its file holds.

use super::file::{FamilyStats, RankProfile, HISTOGRAM_BUCKETS};
use super::trace::{RankTrace, TraceEvent};
use super::Family;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

/// A sampled family's time: its calls times the mean of its timed calls,
/// leaving out the buckets of samples 64 times the median bucket or more
/// (a lost time slice, not the call). `histogram` and `bucket_nanos` are
/// the timed calls' counts and times per bucket.
fn estimate(calls: u64, histogram: &[u64], bucket_nanos: &[u64]) -> u64 {
    let timed: u64 = histogram.iter().sum();
    if timed == 0 {
        return 0;
    }
    let mut seen = 0;
    let median = histogram
        .iter()
        .position(|&n| {
            seen += n;
            seen * 2 >= timed
        })
        .unwrap_or(0);
    let kept = median + 6;
    let (n, nanos) = (0..histogram.len().min(kept + 1))
        .map(|b| (histogram[b], bucket_nanos[b]))
        .fold((0u64, 0u64), |(n, t), (bn, bt)| (n + bn, t + bt));
    match n {
        0 => 0,
        n => (nanos as u128 * calls as u128 / n as u128) as u64,
    }
}

/// Adds `v` to a counter only its own thread writes: a load and a store,
/// no read-modify-write.
#[inline(always)]
fn bump(counter: &AtomicU64, v: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(v), Relaxed);
}

/// One family's counters in one thread's block.
#[derive(Default)]
struct FamilyCounters {
    /// Calls of a family that names no target (the others count in their
    /// target cells), and calls whose target was not a rank.
    calls: AtomicU64,
    timed_calls: AtomicU64,
    timed_nanos: AtomicU64,
    histogram: [AtomicU64; HISTOGRAM_BUCKETS],
    /// The time of the timed calls in each histogram bucket.
    bucket_nanos: [AtomicU64; HISTOGRAM_BUCKETS],
}

/// The program's own traffic of one family to one target rank.
#[derive(Default)]
struct TargetCounters {
    bytes: AtomicU64,
    ops: AtomicU64,
}

/// How many families name a target rank: the first ones of [`Family`]
/// (put, get, put_nbi, get_nbi, atomic, signal). Each has a row of
/// [`TargetCounters`] in a block: a call of these is counted once, in its
/// family's and target's cell, and the family's and the target's totals
/// are sums taken at finalize.
const AIMED: usize = 6;

/// `family`'s row in a block's target cells, if it names targets.
#[inline(always)]
fn aimed_row(family: usize) -> Option<usize> {
    (family < AIMED).then_some(family)
}

/// One thread's counters: written by that thread alone, read at finalize.
pub(crate) struct Block {
    families: [FamilyCounters; Family::COUNT],
    /// `AIMED` rows of one cell per target rank.
    targets: Box<[TargetCounters]>,
    size: usize,
    collective: Box<[AtomicU64]>,
    /// The thread's last events, when tracing.
    pub ring: Option<super::trace::Ring>,
    /// The blocking call the thread is in now: its start in ns after the
    /// rank's, plus one (0: none), and its family. A rank ended while it
    /// waits (SIGTERM from rlaunch when a peer failed or the job hung)
    /// writes its files from another thread: the wait it was in counts up
    /// to that moment, as the wait it was.
    open_since: AtomicU64,
    open_family: AtomicU64,
}

fn bucket(nanos: u64) -> usize {
    (64 - nanos.leading_zeros() as usize)
        .saturating_sub(1)
        .min(HISTOGRAM_BUCKETS - 1)
}

impl Block {
    fn new(size: usize, trace_capacity: Option<usize>) -> Block {
        Block {
            families: Default::default(),
            targets: (0..AIMED * size).map(|_| TargetCounters::default()).collect(),
            size,
            collective: (0..size).map(|_| AtomicU64::new(0)).collect(),
            ring: trace_capacity.map(super::trace::Ring::new),
            open_since: AtomicU64::new(0),
            open_family: AtomicU64::new(0),
        }
    }

    /// Notes that the thread entered a blocking call of `family` that
    /// began `since_ns` after the rank's start.
    pub fn open(&self, family: Family, since_ns: u64) {
        self.open_family.store(family as u64, Relaxed);
        self.open_since.store(since_ns + 1, Relaxed);
    }

    /// The thread left its blocking call.
    pub fn close(&self) {
        self.open_since.store(0, Relaxed);
    }

    /// The blocking call the thread is in, if any: its family and start.
    fn in_call(&self) -> Option<(usize, u64)> {
        match self.open_since.load(Relaxed) {
            0 => None,
            since => Some((self.open_family.load(Relaxed) as usize, since - 1)),
        }
    }

    /// Counts one call of `family`; returns how many this thread had
    /// counted before it.
    #[inline]
    pub fn count_call(&self, family: Family) -> u64 {
        let calls = &self.families[family as usize].calls;
        let before = calls.load(Relaxed);
        calls.store(before.wrapping_add(1), Relaxed);
        before
    }

    /// Counts one call of `family` to `target` moving `bytes`; returns how
    /// many this thread had counted to that target before it, or `None`
    /// (nothing counted) when the family names no target or `target` is
    /// not a rank.
    #[inline(always)]
    pub fn aim(&self, family: Family, target: usize, bytes: u64) -> Option<u64> {
        let cell = self.cell(family as usize, target)?;
        let before = cell.ops.load(Relaxed);
        cell.ops.store(before.wrapping_add(1), Relaxed);
        bump(&cell.bytes, bytes);
        Some(before)
    }

    /// `family`'s cell for `target`, if the family names targets and
    /// `target` is a rank.
    #[inline(always)]
    fn cell(&self, family: usize, target: usize) -> Option<&TargetCounters> {
        let row = aimed_row(family)?;
        match target < self.size {
            true => self.targets.get(row * self.size + target),
            false => None,
        }
    }

    /// Adds one timed call, to its time and to its latency histogram:
    /// every blocking call, and the cheap calls that are timed (one in
    /// [`SAMPLE`](super::SAMPLE) at level 1, all at level 2).
    pub fn time(&self, family: Family, nanos: u64) {
        let f = &self.families[family as usize];
        bump(&f.timed_calls, 1);
        bump(&f.timed_nanos, nanos);
        bump(&f.histogram[bucket(nanos)], 1);
        bump(&f.bucket_nanos[bucket(nanos)], nanos);
    }

    pub fn collective_bytes(&self, target: usize, bytes: u64) {
        if let Some(t) = self.collective.get(target) {
            bump(t, bytes);
        }
    }
}

/// Where a rank's records go: the profile's directory, the trace's, or both.
pub(crate) struct Outputs {
    pub profile: Option<PathBuf>,
    pub trace: Option<PathBuf>,
}

/// Everything one rank counts while profiling or tracing: a block per thread.
pub(crate) struct Counters {
    outputs: Outputs,
    rank: usize,
    size: usize,
    host: String,
    started: Instant,
    epoch_unix_ns: u64,
    trace_capacity: usize,
    blocks: Mutex<Vec<&'static Block>>,
}

impl Counters {
    pub fn new(outputs: Outputs, rank: usize, size: usize, host: &str) -> Counters {
        let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        Counters {
            outputs,
            rank,
            size,
            host: host.to_string(),
            started: Instant::now(),
            epoch_unix_ns: since_epoch.map_or(0, |d| d.as_nanos() as u64),
            trace_capacity: super::trace::capacity(),
            blocks: Mutex::new(Vec::new()),
        }
    }

    /// A block for a new thread. It lives as long as the process, since
    /// the thread may outlive any owner (96 bytes per rank in the job, a
    /// few KiB more, and the trace's ring when tracing).
    pub fn new_block(&self) -> &'static Block {
        let tracing = self.outputs.trace.is_some().then_some(self.trace_capacity);
        let block: &'static Block = Box::leak(Box::new(Block::new(self.size, tracing)));
        crate::sync::lock(&self.blocks).push(block);
        block
    }

    /// Nanoseconds from this rank's start to `at` (the trace's clock).
    pub fn since_start(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.started).as_nanos()).unwrap_or(u64::MAX)
    }

    /// What has been counted so far, summed over the threads. A family
    /// every call of which is timed (the blocking calls) has their total
    /// time, with the calls threads are in now counted up to now; a
    /// sampled family's time is an estimate, its timed calls' mean times
    /// all its calls, leaving out samples that a lost time slice made 64
    /// times the typical one (with 4 ranks on 2 cores one such sample
    /// stood for 64 calls, and the estimate passed the rank's whole run).
    pub fn snapshot(&self) -> RankProfile {
        let blocks = crate::sync::lock(&self.blocks).clone();
        let now = self.since_start(Instant::now());
        let sum = |read: &dyn Fn(&Block) -> u64| blocks.iter().map(|b| read(b)).sum::<u64>();
        // One counter of the cells of `families` x `targets`, summed over
        // every block (families that name no target have no cells).
        let cells = |families: Range<usize>, targets: Range<usize>, read: fn(&TargetCounters) -> &AtomicU64| {
            let mut total = 0u64;
            for b in &blocks {
                for f in families.clone() {
                    total += targets
                        .clone()
                        .filter_map(|t| b.cell(f, t))
                        .map(|c| read(c).load(Relaxed))
                        .sum::<u64>();
                }
            }
            total
        };
        let ops: fn(&TargetCounters) -> &AtomicU64 = |c| &c.ops;
        let bytes: fn(&TargetCounters) -> &AtomicU64 = |c| &c.bytes;
        // The calls in progress, by family: (how many, their time so far).
        let mut open = [(0u64, 0u64); Family::COUNT];
        for (family, since) in blocks.iter().filter_map(|b| b.in_call()) {
            if let Some(slot) = open.get_mut(family) {
                *slot = (slot.0 + 1, slot.1 + now.saturating_sub(since));
            }
        }
        let families = (0..Family::COUNT)
            .map(|i| {
                let (open_calls, open_nanos) = open[i];
                let calls =
                    sum(&|b| b.families[i].calls.load(Relaxed)) + cells(i..i + 1, 0..self.size, ops) + open_calls;
                let timed_calls = sum(&|b| b.families[i].timed_calls.load(Relaxed)) + open_calls;
                let histogram: Vec<u64> = (0..HISTOGRAM_BUCKETS)
                    .map(|h| sum(&|b| b.families[i].histogram[h].load(Relaxed)))
                    .collect();
                let bucket_nanos: Vec<u64> = (0..HISTOGRAM_BUCKETS)
                    .map(|h| sum(&|b| b.families[i].bucket_nanos[h].load(Relaxed)))
                    .collect();
                let nanos = match timed_calls {
                    0 => 0,
                    n if n >= calls => bucket_nanos.iter().sum::<u64>() + open_nanos,
                    _ => estimate(calls, &histogram, &bucket_nanos),
                };
                FamilyStats {
                    name: Family::NAMES[i].to_string(),
                    calls,
                    bytes: cells(i..i + 1, 0..self.size, bytes),
                    nanos,
                    histogram,
                }
            })
            .collect();
        RankProfile {
            rank: self.rank,
            size: self.size,
            host: self.host.clone(),
            elapsed_ns: now,
            families,
            target_bytes: (0..self.size).map(|t| cells(0..AIMED, t..t + 1, bytes)).collect(),
            target_ops: (0..self.size).map(|t| cells(0..AIMED, t..t + 1, ops)).collect(),
            collective_bytes: (0..self.size)
                .map(|t| sum(&|b| b.collective[t].load(Relaxed)))
                .collect(),
        }
    }

    /// Writes `rank-<rank>.prof` into the profile's directory and
    /// `rank-<rank>.trace` into the trace's, as asked, each streamed into
    /// its file (`versioned`).
    pub fn write(&self) -> std::io::Result<()> {
        if let Some(dir) = &self.outputs.profile {
            std::fs::create_dir_all(dir)?;
            self.snapshot().write(&dir.join(RankProfile::file_name(self.rank)))?;
        }
        if let Some(dir) = &self.outputs.trace {
            let blocks = crate::sync::lock(&self.blocks).clone();
            let now = self.since_start(Instant::now());
            let threads = blocks.iter().enumerate();
            let trace = RankTrace {
                rank: self.rank,
                epoch_unix_ns: self.epoch_unix_ns,
                host: self.host.clone(),
                threads: threads
                    .filter_map(|(n, block)| {
                        let mut thread = block.ring.as_ref()?.snapshot(n);
                        // The blocking call the thread is in now, begun but
                        // not ended, timed up to now.
                        if let Some((family, since)) = block.in_call() {
                            thread.events.push(TraceEvent {
                                family: Family::ALL.get(family).copied().unwrap_or(Family::Wait),
                                begin_ns: since,
                                duration_ns: now.saturating_sub(since),
                            });
                        }
                        Some(thread)
                    })
                    .collect(),
            };
            std::fs::create_dir_all(dir)?;
            trace.write(&dir.join(RankTrace::file_name(self.rank)))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_sums_every_threads_block() {
        let outputs = Outputs {
            profile: None,
            trace: None,
        };
        let counters = Counters::new(outputs, 1, 3, "node a");
        let (one, two) = (counters.new_block(), counters.new_block());
        assert_eq!(one.aim(Family::Put, 2, 80), Some(0));
        one.time(Family::Put, 1500);
        assert_eq!(two.aim(Family::Put, 2, 8), Some(0));
        assert_eq!(two.aim(Family::Put, 3, 8), None, "not a rank: counted as a call alone");
        two.count_call(Family::Put);
        assert_eq!(one.aim(Family::Quiet, 0, 0), None, "quiet names no target");
        two.time(Family::Put, 70);
        one.count_call(Family::Barrier);
        one.time(Family::Barrier, 9000);
        two.collective_bytes(0, 4096);
        let read = counters.snapshot();
        assert_eq!(read.host, "node a");
        assert_eq!((read.target_bytes[2], read.target_ops[2]), (88, 2));
        assert_eq!(read.collective_bytes, vec![4096, 0, 0]);
        let put = &read.families[Family::Put as usize];
        assert_eq!((put.calls, put.bytes), (3, 88), "summed over both threads' blocks");
        assert_eq!(put.nanos, (1500 + 70) * 3 / 2, "the timed calls' mean times every call");
        assert_eq!(put.histogram[bucket(1500)], 1);
        assert_eq!(put.histogram[bucket(70)], 1, "every timed call is in the histogram");
        let barrier = &read.families[Family::Barrier as usize];
        assert_eq!(barrier.histogram[bucket(9000)], 1);
    }

    #[test]
    fn a_ranks_files_read_back_as_written() {
        let dir = std::env::temp_dir().join(format!("oneside-record-{}", std::process::id()));
        let outputs = Outputs {
            profile: Some(dir.join("p")),
            trace: Some(dir.join("t")),
        };
        let counters = Counters::new(outputs, 2, 4, "node7");
        let block = counters.new_block();
        block.aim(Family::Get, 1, 64);
        block.ring.as_ref().expect("tracing").push(Family::Get, 100, 20);
        counters.write().expect("written");
        let profile = RankProfile::read(&dir.join("p/rank-2.prof"));
        let trace = RankTrace::read(&dir.join("t/rank-2.trace"));
        let _ = std::fs::remove_dir_all(&dir);
        let profile = profile.expect("the profile reads");
        assert_eq!((profile.rank, profile.size, profile.target_bytes[1]), (2, 4, 64));
        let trace = trace.expect("the trace reads");
        assert_eq!((trace.rank, trace.host.as_str(), trace.events()), (2, "node7", 1));
        let event = trace.threads[0].events[0];
        assert_eq!(
            (event.family, event.begin_ns, event.duration_ns),
            (Family::Get, 100, 20)
        );
    }

    #[test]
    fn the_families_that_name_targets_come_first() {
        let aimed = [
            Family::Put,
            Family::Get,
            Family::PutNbi,
            Family::GetNbi,
            Family::Atomic,
            Family::Signal,
        ];
        for family in aimed {
            assert_eq!(aimed_row(family as usize), Some(family as usize), "{family:?}");
        }
        for family in [Family::Wait, Family::Quiet, Family::Barrier, Family::Alloc] {
            assert_eq!(aimed_row(family as usize), None, "{family:?}");
        }
    }

    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(2), 1);
        assert_eq!(bucket(1023), 9);
        assert_eq!(bucket(1024), 10);
        assert_eq!(bucket(u64::MAX), HISTOGRAM_BUCKETS - 1);
    }
}
