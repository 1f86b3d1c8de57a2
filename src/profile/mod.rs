//! The runtime's own profile (`rlaunch --profile`, `ONESIDE_PROFILE=DIR`):
//! calls, bytes and time per operation family, bytes and operations per
//! target rank, and the time a rank spends blocked.
//!
//! With profiling off (no `ONESIDE_PROFILE`, or `shmem_pcontrol(0)`), a
//! profiled call costs one relaxed load and a branch (`hooks::any` for the
//! cheap calls, `ACTIVE` for the others): no clock is read, nothing is
//! counted.
//!
//! With it on, each thread counts into its own block of counters
//! (`record::Block`: single-writer atomics, plain loads and stores, no
//! read-modify-write), which finalize sums. Calls that block (waits,
//! locks, collectives, allocation) open a `Span` and are always timed.
//! Calls that cost tens of nanoseconds on shared memory (puts, gets,
//! atomics, signals, quiet, fence) run through `leaf!`: counted every time,
//! timed one call in `SAMPLE`, and every call at level 2. Their time is
//! the sampled mean times the calls. Every timed call also lands in its
//! family's latency histogram, so histograms are there by default, of
//! every blocking call and of the sampled cheap ones. Reading the clock on
//! every 8-byte put would cost more than the put.
//!
//! Only the outermost call is counted: a barrier's quiet, a lock's atomics
//! and a collective's waits belong to the barrier, the lock and the
//! collective. Collectives' own transfers are counted apart, per target
//! (`collective_bytes`), so the matrix of the program's puts, gets and
//! atomics stays exact.
//!
//! At finalize each rank writes `DIR/rank-<rank>.prof` ([`RankProfile`]),
//! and `rank-<rank>.trace` ([`RankTrace`]) when tracing: versioned JSON
//! documents (`versioned`); rlaunch merges them.

mod file;
pub(crate) mod level;
mod on_term;
mod record;
mod trace;
mod versioned;

pub use file::{FamilyStats, RankProfile, HISTOGRAM_BUCKETS};
pub use trace::{RankTrace, ThreadTrace, TraceEvent};

use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Declares [`Family`] from one list: each variant with the name the files
/// spell it by, so the enum, [`Family::NAMES`] and [`Family::ALL`] cannot
/// disagree.
macro_rules! families {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// The operation families counted, in the order of [`Family::NAMES`]. The
        /// families whose calls name a target rank come first (`record::AIMED`).
        /// A trace file spells each by its name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        pub enum Family {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl Family {
            /// Every family's name, as the profile files spell it.
            pub const NAMES: [&'static str; Family::COUNT] = [$($name,)*];
            /// Every family, in [`Family::NAMES`]' order (`ALL[f as usize] == f`).
            pub const ALL: [Family; Family::COUNT] = [$(Family::$variant,)*];
            /// How many families there are.
            pub const COUNT: usize = [$($name,)*].len();
        }
    };
}

families! {
    Put = "put",
    Get = "get",
    PutNbi = "put_nbi",
    GetNbi = "get_nbi",
    Atomic = "atomic",
    Signal = "signal",
    Wait = "wait",
    Lock = "lock",
    Quiet = "quiet",
    Fence = "fence",
    Barrier = "barrier",
    Sync = "sync",
    Broadcast = "broadcast",
    Reduce = "reduce",
    Collect = "collect",
    Fcollect = "fcollect",
    Alltoall = "alltoall",
    Scan = "scan",
    Alloc = "alloc",
    /// `free` (collective, as `alloc` is), apart from allocations.
    Free = "free",
    /// The runtime's own collectives at init and finalize (the barrier
    /// that ends wire-up, the C API's `SHMEM_TEAM_SHARED`), kept apart
    /// from the program's: a program that never calls a reduce shows none.
    InitFinalize = "init_finalize",
}

impl Family {
    /// This family's name, as the files spell it.
    pub fn name(self) -> &'static str {
        Family::NAMES[self as usize]
    }

    /// The family of a collective, by the name it runs under.
    pub fn of_collective(op: &str) -> Family {
        match op {
            "team_sync" => Family::Sync,
            "broadcast" => Family::Broadcast,
            "reduce" | "reduce_values" => Family::Reduce,
            "collect" => Family::Collect,
            "fcollect" => Family::Fcollect,
            "alltoall" | "alltoalls" => Family::Alltoall,
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
                | "free"
                | "init_finalize"
        )
    }
}

/// Cheap calls are timed one in this many at level 1.
pub const SAMPLE: u64 = 64;

/// Whether calls are being counted now: a profile was asked for and the
/// profiling level is at least 1.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether every cheap call is timed: the profiling level is 2 or more.
static TIME_EVERY_CALL: AtomicBool = AtomicBool::new(false);
/// The rank's counters, made at start when a profile was asked for.
static COUNTERS: OnceLock<record::Counters> = OnceLock::new();

/// This thread's view: its counter block and how many spans it has open.
struct Local {
    block: Cell<Option<&'static record::Block>>,
    depth: Cell<u32>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            block: Cell::new(None),
            depth: Cell::new(0),
        }
    };
}

/// This thread's counter block, made on its first counted call.
#[inline]
fn block() -> Option<&'static record::Block> {
    LOCAL.with(|local| match local.block.get() {
        Some(block) => Some(block),
        None => {
            let block = COUNTERS.get()?.new_block();
            local.block.set(Some(block));
            Some(block)
        }
    })
}

/// Starts profiling this rank when `ONESIDE_PROFILE` names a directory,
/// and tracing it when `ONESIDE_TRACE` does.
pub(crate) fn start(rank: usize, size: usize, host: &str) {
    let dir = |var| std::env::var_os(var).filter(|d| !d.is_empty()).map(PathBuf::from);
    let outputs = record::Outputs {
        profile: dir("ONESIDE_PROFILE"),
        trace: dir("ONESIDE_TRACE"),
    };
    if outputs.profile.is_none() && outputs.trace.is_none() {
        return;
    }
    let counters = record::Counters::new(outputs, rank, size, host);
    if COUNTERS.set(counters).is_ok() {
        level_changed(level::profiling_level());
        if let Err(why) = on_term::write_on_sigterm(rank) {
            eprintln!("oneside: rank {rank}: its profile will not be written if the job is ended ({why})");
        }
    }
}

/// Whether this process profiles or traces (`ONESIDE_PROFILE` or
/// `ONESIDE_TRACE` was set at start),
/// whatever the current level. The C API then leaves `shmem.h`'s inline
/// paths off, so that every call is counted.
pub fn configured() -> bool {
    COUNTERS.get().is_some()
}

/// Follows `shmem_pcontrol`: level 0 pauses counting, 1 and above count.
pub(crate) fn level_changed(level: i32) {
    TIME_EVERY_CALL.store(level >= 2, Ordering::Relaxed);
    let active = configured() && level >= 1;
    ACTIVE.store(active, Ordering::Relaxed);
    crate::hooks::set(crate::hooks::PROFILE, active);
}

/// Opens a span for one blocking call of `family`, or `None` when not
/// profiling.
#[inline(always)]
pub(crate) fn span(family: Family) -> Option<Span> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return None;
    }
    Some(Span::open(family))
}

/// Runs `work`, the runtime's own part of init or finalize (a language
/// binding's too), as one [`Family::InitFinalize`] call: the collectives
/// inside it are counted there, not as the program's.
#[doc(hidden)]
pub fn runtime_own<R>(work: impl FnOnce() -> R) -> R {
    let _span = span(Family::InitFinalize);
    work()
}

/// Whether calls are being counted now.
#[inline(always)]
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Runs one cheap call (`family`, to `target`, moving `bytes`) written as
/// a block that names a flag, `|races| { ... }`: whether the race checker
/// is on. With every hook off (`hooks::any`) the block runs as written,
/// `races` false, with nothing around it but one load and a branch; the
/// checker's own tests then fold away. With a hook on, it runs inside
/// [`hooked_leaf`], counted when profiling. The block appears twice so
/// that the path taken with everything off is not a closure: a closure
/// around an 8-byte put cost 2-3x in examples/bench's message rate. The
/// hooked path is a closure and a call: inlined into the caller instead,
/// it made profiling cost about a third less, and the message rate with
/// profiling off about 10% less (the caller's loop grew). A second test
/// of the race checker's own flag in the plain path cost an 8-byte put
/// 5 ns, a fifth (examples/bench, A/B).
macro_rules! leaf {
    ($family:expr, $target:expr, $bytes:expr, |$races:ident| $call:block) => {
        if $crate::hooks::any() {
            let $races = $crate::race::on();
            $crate::profile::hooked_leaf($family, $target, $bytes, move || $call)
        } else {
            let $races = false;
            $call
        }
    };
}
pub(crate) use leaf;

/// Counts `bytes` a collective moved to world rank `target`.
#[inline(always)]
pub(crate) fn collective_bytes(target: usize, bytes: usize) {
    if ACTIVE.load(Ordering::Relaxed) {
        if let Some(block) = block() {
            block.collective_bytes(target, bytes as u64);
        }
    }
}

/// Writes this rank's profile and trace now, if asked for: for a C
/// program's exit through an error, which never reaches finalize.
#[doc(hidden)]
pub fn write_now() -> std::io::Result<()> {
    finish()
}

/// Writes this rank's profile file, if profiling; called at finalize.
pub(crate) fn finish() -> std::io::Result<()> {
    match COUNTERS.get() {
        Some(counters) => counters.write(),
        None => Ok(()),
    }
}

fn nanos_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// One blocking call in progress: timed and counted when dropped, if it
/// is the thread's outermost profiled call.
pub(crate) struct Span {
    family: Family,
    started: Option<Instant>,
}

impl Span {
    fn open(family: Family) -> Span {
        let outer = LOCAL.with(|local| {
            local.depth.set(local.depth.get() + 1);
            local.depth.get() == 1
        });
        let started = outer.then(Instant::now);
        if let (Some(started), Some(block), Some(counters)) = (started, block(), COUNTERS.get()) {
            block.open(family, counters.since_start(started));
        }
        Span { family, started }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        LOCAL.with(|local| local.depth.set(local.depth.get() - 1));
        let (Some(started), Some(block)) = (self.started, block()) else {
            return;
        };
        block.close();
        let duration = nanos_since(started);
        block.count_call(self.family);
        block.time(self.family, duration);
        trace(block, self.family, started, duration);
    }
}

/// Keeps one event on the thread's timeline, when tracing.
fn trace(block: &record::Block, family: Family, started: Instant, duration: u64) {
    if let (Some(ring), Some(counters)) = (&block.ring, COUNTERS.get()) {
        ring.push(family, counters.since_start(started), duration);
    }
}

/// [`leaf`] with a hook on: counted when profiling, else run as it is.
#[inline]
pub(crate) fn hooked_leaf<R>(family: Family, target: Option<usize>, bytes: usize, call: impl FnOnce() -> R) -> R {
    match active() {
        true => counted_leaf(family, target, bytes, call),
        false => call(),
    }
}

/// [`leaf`] while profiling: counts the call unless it runs inside
/// another profiled call, and times one in `SAMPLE` (every one at level
/// 2, and every get and quiet while tracing).
#[inline]
pub(crate) fn counted_leaf<R>(family: Family, target: Option<usize>, bytes: usize, call: impl FnOnce() -> R) -> R {
    match count_leaf(family, target, bytes) {
        false => call(),
        true => timed_leaf(family, call),
    }
}

/// Counts one leaf call unless it runs inside another profiled call, and
/// says whether to time it. The usual path is a few loads and stores.
#[inline(always)]
pub(crate) fn count_leaf(family: Family, target: Option<usize>, bytes: usize) -> bool {
    let (depth, block) = LOCAL.with(|local| (local.depth.get(), local.block.get()));
    let block = match (depth, block) {
        (0, Some(block)) => block,
        (0, None) => match self::block() {
            Some(block) => block,
            None => return false,
        },
        _ => return false,
    };
    let calls = match target.and_then(|target| block.aim(family, target, bytes as u64)) {
        Some(calls) => calls,
        None => block.count_call(family),
    };
    calls % SAMPLE == 0
        || TIME_EVERY_CALL.load(Ordering::Relaxed)
        || (matches!(family, Family::Get | Family::Quiet) && block.ring.is_some())
}

/// Runs one leaf call that [`count_leaf`] chose to time (already
/// counted), and records its time and trace event.
#[cold]
#[inline(never)]
pub(crate) fn timed_leaf<R>(family: Family, call: impl FnOnce() -> R) -> R {
    let Some(block) = LOCAL.with(|local| local.block.get()) else {
        return call();
    };
    let traced = block.ring.is_some() && matches!(family, Family::Get | Family::Quiet);
    let started = Instant::now();
    let result = call();
    let duration = nanos_since(started);
    block.time(family, duration);
    if traced {
        trace(block, family, started, duration);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::Family;

    #[test]
    fn all_lists_every_family_at_its_own_index() {
        for (i, family) in Family::ALL.iter().enumerate() {
            assert_eq!(*family as usize, i);
            assert_eq!(family.name(), Family::NAMES[i]);
        }
    }
}
