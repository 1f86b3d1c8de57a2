//! The runtime's own profile (`rlaunch --profile`, `ONESIDE_PROFILE=DIR`):
//! calls, bytes and time per operation family, bytes and operations per
//! target rank, and the time a rank spends blocked.
//!
//! Every API call that is profiled opens a [`Span`] through [`span`]. With
//! profiling off (no `ONESIDE_PROFILE`, or `shmem_pcontrol(0)`), that is one
//! relaxed load of [`ACTIVE`] and a branch: no clock is read, nothing is
//! counted. With it on, a call's time and bytes go into relaxed atomic
//! counters ([`record::Counters`]), shared by the rank's threads.
//!
//! Only the outermost call is counted: a barrier's quiet, a lock's atomics
//! and a collective's waits belong to the barrier, the lock and the
//! collective. Collectives' own transfers are counted apart, per target
//! ([`collective_bytes`]), so the matrix of the program's puts, gets and
//! atomics stays exact.
//!
//! At finalize each rank writes `DIR/rank-<rank>.prof` ([`RankProfile`]);
//! rlaunch merges them.

mod record;

pub use record::{FamilyStats, RankProfile, HISTOGRAM_BUCKETS};

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The operation families counted, in the order of [`Family::NAMES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Put,
    Get,
    PutNbi,
    GetNbi,
    Atomic,
    Signal,
    Wait,
    Lock,
    Quiet,
    Fence,
    Barrier,
    Sync,
    Broadcast,
    Reduce,
    Collect,
    Fcollect,
    Alltoall,
    Scan,
    Alloc,
}

impl Family {
    /// Every family's name, as the profile files spell it.
    pub const NAMES: [&'static str; 19] = [
        "put",
        "get",
        "put_nbi",
        "get_nbi",
        "atomic",
        "signal",
        "wait",
        "lock",
        "quiet",
        "fence",
        "barrier",
        "sync",
        "broadcast",
        "reduce",
        "collect",
        "fcollect",
        "alltoall",
        "scan",
        "alloc",
    ];
    /// How many families there are.
    pub const COUNT: usize = Family::NAMES.len();

    /// The family of a collective, by the name it runs under.
    pub fn of_collective(op: &str) -> Family {
        match op {
            "team_sync" => Family::Sync,
            "broadcast" => Family::Broadcast,
            "reduce" | "reduce_values" => Family::Reduce,
            "collect" => Family::Collect,
            "fcollect" => Family::Fcollect,
            "alltoall" | "alltoalls" => Family::Alltoall,
            "alloc" | "free" | "realloc" | "align" => Family::Alloc,
            _ => Family::Scan,
        }
    }

    /// Whether time in this family is time blocked: waiting for other
    /// ranks (waits, collectives, quiet) or for data (blocking gets).
    pub fn blocks(name: &str) -> bool {
        matches!(
            name,
            "get"
                | "wait"
                | "quiet"
                | "barrier"
                | "sync"
                | "broadcast"
                | "reduce"
                | "collect"
                | "fcollect"
                | "alltoall"
                | "scan"
                | "alloc"
        )
    }
}

/// Whether calls are being counted now: a profile was asked for and the
/// profiling level is at least 1.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The rank's counters, made at start when a profile was asked for.
static COUNTERS: OnceLock<record::Counters> = OnceLock::new();

thread_local! {
    /// How many spans this thread has open (only the outermost counts).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Starts profiling this rank when `ONESIDE_PROFILE` names a directory.
pub(crate) fn start(rank: usize, size: usize, host: &str) {
    let Some(dir) = std::env::var_os("ONESIDE_PROFILE").filter(|d| !d.is_empty()) else {
        return;
    };
    let counters = record::Counters::new(PathBuf::from(dir), rank, size, host);
    if COUNTERS.set(counters).is_ok() {
        level_changed(crate::pcontrol::profiling_level());
    }
}

/// Whether this process profiles (`ONESIDE_PROFILE` was set at start),
/// whatever the current level. The C API then leaves `shmem.h`'s inline
/// paths off, so that every call is counted.
pub fn configured() -> bool {
    COUNTERS.get().is_some()
}

/// Follows `shmem_pcontrol`: level 0 pauses counting, 1 and above count.
pub(crate) fn level_changed(level: i32) {
    ACTIVE.store(configured() && level >= 1, Ordering::Relaxed);
}

/// Opens a span for one call of `family`, or `None` when not profiling.
#[inline(always)]
pub(crate) fn span(family: Family) -> Option<Span> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return None;
    }
    Some(Span::open(family))
}

/// Counts `bytes` a collective moved to world rank `target`.
#[inline(always)]
pub(crate) fn collective_bytes(target: usize, bytes: usize) {
    if ACTIVE.load(Ordering::Relaxed) {
        if let Some(counters) = COUNTERS.get() {
            counters.collective_bytes(target, bytes as u64);
        }
    }
}

/// Writes this rank's profile file, if profiling; called at finalize.
pub(crate) fn finish() -> std::io::Result<()> {
    match COUNTERS.get() {
        Some(counters) => counters.write(),
        None => Ok(()),
    }
}

/// One profiled call in progress: counted when dropped, if outermost.
pub(crate) struct Span {
    family: Family,
    started: Option<Instant>,
    target: Option<usize>,
    bytes: u64,
}

impl Span {
    fn open(family: Family) -> Span {
        let outer = DEPTH.with(|d| {
            d.set(d.get() + 1);
            d.get() == 1
        });
        Span {
            family,
            started: outer.then(Instant::now),
            target: None,
            bytes: 0,
        }
    }

    /// Names the call's target rank and the bytes it moved, for the matrix.
    #[inline]
    pub fn to(&mut self, target: usize, bytes: usize) {
        self.target = Some(target);
        self.bytes = bytes as u64;
    }
}

/// Names the target of an open span, if any (the common call shape).
#[inline(always)]
pub(crate) fn aim(span: &mut Option<Span>, target: usize, bytes: usize) {
    if let Some(span) = span {
        span.to(target, bytes);
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
        let (Some(started), Some(counters)) = (self.started, COUNTERS.get()) else {
            return;
        };
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let detail = crate::pcontrol::profiling_level() >= 2;
        counters.count(self.family, self.target, self.bytes, nanos, detail);
    }
}
