//! The one error type of the `oneside` crate.
//!
//! Every variant names the operation that failed, carries the numbers a user
//! needs (rank, index, sizes), keeps its source error, and where it helps,
//! says what to do about it.

use std::io;
use std::panic::Location;
use std::time::Duration;

use crate::words::{bytes, heap_call, heap_cap_setting, members, noun, valid_targets, who};

/// Result alias used throughout `oneside`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in `oneside`.
///
/// Its `Debug` is its sentence (with the errors that caused it), so that
/// `fn main() -> oneside::Result<()>` prints what went wrong in words.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The launcher set an environment variable we cannot use.
    #[error("bad launcher environment: {var}={value:?}: {reason} (was this rank started by rlaunch?)")]
    LaunchEnv {
        var: &'static str,
        value: String,
        reason: String,
    },

    /// Connecting to, or talking with, the launcher's bootstrap service failed.
    #[error("{who_rank}: bootstrap with the launcher at {addr} failed during {stage}", who_rank = who(.rank))]
    BootstrapLauncher {
        rank: usize,
        addr: String,
        stage: &'static str,
        #[source]
        source: io::Error,
    },

    /// A bootstrap peer failed to prove it knows the job secret.
    #[error("{who_rank}: bootstrap peer {peer} failed authentication ({detail}); the connection was dropped", who_rank = who(.rank))]
    BootstrapAuth {
        rank: usize,
        peer: String,
        detail: &'static str,
    },

    /// A bootstrap stage did not finish in time.
    #[error("{who_rank}: bootstrap stage '{stage}' timed out after {waited:?}; still missing: {}", describe_missing(.missing), who_rank = who(.rank))]
    BootstrapTimeout {
        rank: usize,
        stage: &'static str,
        waited: Duration,
        missing: Vec<usize>,
    },

    /// A bootstrap peer sent something the protocol does not allow.
    #[error("{who_rank}: bootstrap protocol error from {peer}: {detail}", who_rank = who(.rank))]
    BootstrapProtocol { rank: usize, peer: String, detail: String },

    /// Talking to the launcher's PMI server (PMI-1, PMI-2 or PMIx) failed.
    #[error("{}: {step} with {server} failed: {detail} (the launcher logs its side: srun as 'mpi/pmi2' or 'mpi/pmix' errors, mpiexec.hydra with -verbose, mpirun with --mca pmix_base_verbose 10)", .rank.map_or_else(|| format!("this {}", noun()), |r| who(&r).to_string()))]
    Pmi {
        rank: Option<usize>,
        /// What the server is: `the PMI-2 server on PMI_FD=6`.
        server: String,
        step: &'static str,
        detail: String,
    },

    /// A launcher started this process as one of many ranks but gave it no
    /// PMI road oneside can take; running alone would be a silent singleton.
    #[error("cannot wire up: {detail}")]
    MissingPmi { detail: String },

    /// The program's MPI and this rank's job disagree, or will once
    /// `MPI_Init` runs: MPI cannot join the job the launcher started (it
    /// would run as a singleton), or its `MPI_COMM_WORLD` differs from the
    /// launcher's job or OpenSHMEM's. A PE number equals the MPI rank, or
    /// the rank stops.
    #[error("{pe} ({how}) {mpi_says}, so any answer mixing MPI and OpenSHMEM would be wrong; {what_to_do}", pe = pe_of(.rank, .size))]
    MpiMismatch {
        /// This rank and the job's size, as far as known.
        rank: Option<usize>,
        size: Option<usize>,
        /// How this rank joined, or who started it: `started by
        /// mpiexec.hydra (PMI_RANK=3, PMI_SIZE=4, PMI_FD=6)`.
        how: String,
        /// What MPI says of this process, and why: `is MPI_COMM_WORLD rank
        /// 0 of 1 in Open MPI v4.1.4: Open MPI joins a job only through a
        /// PMIx server, and mpiexec.hydra offers …`.
        mpi_says: String,
        what_to_do: String,
    },

    /// The launcher aborted the job while this rank was bootstrapping.
    #[error("{who_rank}: the launcher aborted the job: {reason}", who_rank = who(.rank))]
    Aborted { rank: usize, reason: String },

    /// Creating or mapping this rank's shared-memory segment failed.
    #[error("{who_rank}: cannot {what} shared-memory segment {path}: {source} (is /dev/shm mounted and writable, with room for the heap? see ONESIDE_HEAP_SIZE)", who_rank = who(.rank))]
    SegmentCreate {
        rank: usize,
        what: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },

    /// Mapping a same-host peer's segment failed.
    #[error("{who_rank}: cannot map the shared-memory segment of {who_peer} at {path}: {detail}", who_rank = who(.rank), who_peer = who(.peer))]
    PeerSegment {
        rank: usize,
        peer: usize,
        path: String,
        detail: String,
    },

    /// Two ranks were started with different heap sizes.
    #[error("{who_rank}: heap reservation mismatch: this {} reserves {ours} bytes, {who_peer} reserves {theirs} (set the same heap cap, ONESIDE_HEAP_SIZE, for every {}, or none)", noun(), noun(), who_rank = who(.rank), who_peer = who(.peer))]
    HeapMismatch {
        rank: usize,
        peer: usize,
        ours: usize,
        theirs: usize,
    },

    /// The requested transport is not available.
    #[error("{who_rank}: transport '{requested}' is not available: {detail}", who_rank = who(.rank))]
    TransportUnavailable {
        rank: usize,
        requested: String,
        detail: String,
    },

    /// Starting this rank's TCP progress engine failed.
    #[error("{who_rank}: cannot start the TCP transport's progress engine", who_rank = who(.rank))]
    TcpListen {
        rank: usize,
        #[source]
        source: io::Error,
    },

    /// Starting one of this rank's transport threads other than the TCP
    /// engine failed: the TCP flusher, or libfabric's progress thread.
    #[error("{who_rank}: cannot start the {thread} thread (is the process's thread or memory limit reached? see `ulimit -u`)", who_rank = who(.rank))]
    ThreadStart {
        rank: usize,
        thread: &'static str,
        #[source]
        source: io::Error,
    },

    /// Connecting to a peer's TCP progress engine failed.
    #[error("{who_rank}: cannot connect to {who_peer}'s TCP transport at {addr} (is a firewall in the way?)", who_rank = who(.rank), who_peer = who(.peer))]
    TcpConnect {
        rank: usize,
        peer: usize,
        addr: String,
        #[source]
        source: io::Error,
    },

    /// A peer's connection broke during an operation.
    #[error("{who_rank}: {op} with {who_peer} failed: {source} ({})", why_lost(.source, who(.peer)), who_rank = who(.rank), who_peer = who(.peer))]
    PeerLost {
        rank: usize,
        peer: usize,
        op: &'static str,
        #[source]
        source: io::Error,
    },

    /// The RDMA device could not be set up.
    #[error("{who_rank}: cannot use RDMA: {detail}", who_rank = who(.rank))]
    RdmaSetup { rank: usize, detail: String },

    /// libfabric or its provider could not be set up (`--transport ofi`).
    #[error("{who_rank}: cannot use libfabric (--transport ofi): {detail}", who_rank = who(.rank))]
    OfiSetup { rank: usize, detail: String },

    /// A range the heap grew by could not be registered with the NIC on
    /// some rank (`Links::grown`): every rank returns this error, having
    /// deregistered its own registration of the range.
    #[error("{who_rank}: the symmetric heap cannot grow over the NIC: {who_failed} could not register heap offsets {start:#x}..{:#x} ({len} bytes) with it: {detail}; the allocation failed on every {}: raise the locked-memory limit on that host (`ulimit -l unlimited`, or memlock in /etc/security/limits.conf), free symmetric objects no longer used, or ask for less", .start + .len, noun(), who_rank = who(.rank), who_failed = who(.failed))]
    HeapRegistration {
        rank: usize,
        /// The rank that could not register the range (the lowest, if several).
        failed: usize,
        start: usize,
        len: usize,
        detail: String,
    },

    /// An RDMA operation with a peer failed (a bad work completion, or posting failed).
    #[error("{who_rank}: {op} with {who_peer} failed: {detail}", who_rank = who(.rank), who_peer = who(.peer))]
    Rdma {
        rank: usize,
        peer: usize,
        op: &'static str,
        detail: String,
    },

    /// No transport reaches a peer.
    #[error("{who_rank}: no transport reaches {who_peer} on host '{host}': {detail}", who_rank = who(.rank), who_peer = who(.peer))]
    Unreachable {
        rank: usize,
        peer: usize,
        host: String,
        detail: String,
    },

    /// A target rank that does not exist.
    #[error("{who_rank}: {op} targets {who_target}, but the job has {}; use a target from {}", members(.size), valid_targets(.size), who_rank = who(.rank), who_target = who(.target))]
    RankOutOfRange {
        rank: usize,
        op: &'static str,
        target: usize,
        size: usize,
    },

    /// An access outside a symmetric object.
    #[error("{who_rank}: {op} of {count} element(s) at index {index} is out of bounds for a symmetric object of {len} element(s)", who_rank = who(.rank))]
    IndexOutOfRange {
        rank: usize,
        op: &'static str,
        index: usize,
        count: usize,
        len: usize,
    },

    /// An atomic on an address that is not aligned to its width.
    #[error("{who_rank}: {op} on heap offset {offset} is misaligned: a {width}-byte atomic needs an offset that is a multiple of {width}", who_rank = who(.rank))]
    MisalignedAtomic {
        rank: usize,
        op: &'static str,
        offset: usize,
        width: usize,
    },

    /// The symmetric heap has no free range large enough.
    #[error("{who_rank}: symmetric heap full: asked for {requested} bytes ({}); {} of its {} {} are in use and the largest free block is {} ({})", bytes(.requested), bytes(.used), bytes(.heap_size), cap_kind(*.capped), bytes(.largest_free), cap_advice(*.capped), who_rank = who(.rank))]
    HeapExhausted {
        rank: usize,
        requested: usize,
        largest_free: usize,
        /// The most the heap can hand out: its cap, or its reservation.
        heap_size: usize,
        /// Bytes live objects hold.
        used: usize,
        /// Whether `heap_size` is a cap the user set (else the reservation).
        capped: bool,
    },

    /// The heap would have to grow, and a rank's host (or cgroup, or
    /// `/dev/shm`) has no room for it. Every rank returns this error; no
    /// rank's heap changed.
    #[error("{who_rank}: symmetric heap cannot grow: asking for {requested} bytes ({}) needs {} more memory on every {}, and {who_short} has {} of {limit}{}: free symmetric objects no longer used, ask for less, or run fewer {}s on that host", bytes(.requested), bytes(.growth), noun(), bytes(&(*.available as usize)), simulated_note(*.simulated), noun(), who_rank = who(.rank), who_short = who(.short_rank))]
    HeapGrowth {
        rank: usize,
        requested: usize,
        /// The memory the growth needed on each rank.
        growth: usize,
        /// The rank whose host refused (the first such, by rank).
        short_rank: usize,
        /// Bytes that rank's limit had left.
        available: u64,
        /// What limited it: "memory available on its host (MemAvailable)", ...
        limit: &'static str,
        /// Made by `ONESIDE_HEAP_FAULT` (tests), not by the host.
        simulated: bool,
    },

    /// An aligned allocation asked for more than the heap's alignment.
    #[error("{who_rank}: an allocation aligned to {align} bytes: the symmetric heap aligns objects to at most {max} bytes", who_rank = who(.rank))]
    BadAlignment { rank: usize, align: usize, max: usize },

    /// A handle that does not belong to this heap (freed, or from another world).
    #[error("{who_rank}: {op} was given a symmetric object (offset {offset}, {bytes} bytes) that is not allocated on this heap", who_rank = who(.rank))]
    UnknownObject {
        rank: usize,
        op: &'static str,
        offset: usize,
        bytes: usize,
    },

    /// An address that is neither in the symmetric heap nor in the
    /// program's symmetric global data.
    #[error("{who_rank}: {op}: address {addr:#x} ({bytes} bytes) is not symmetric; use memory from the symmetric heap ({}) or a global or static variable", heap_call(), who_rank = who(.rank))]
    NotSymmetric {
        rank: usize,
        op: &'static str,
        addr: usize,
        bytes: usize,
    },

    /// A rank is in as many teams as it has team slots.
    #[error("{who_rank}: {op} needs a team slot, but all {max} are in use on some member of the parent team (destroy teams you no longer need with team_destroy)", who_rank = who(.rank))]
    TeamsExhausted { rank: usize, op: &'static str, max: usize },

    /// The checking mode (`rlaunch --debug`) found a mistake: collectives
    /// or allocations that differ between members, a destination reused
    /// too early, or a transfer outside every allocated object.
    #[error("{who_rank}: {call}{}: {detail} (found by --debug)", crate::site::phrase(.at), who_rank = who(.rank))]
    Check {
        rank: usize,
        call: String,
        at: String,
        detail: String,
    },

    /// The race checker (`--check-races=abort`) found two accesses of
    /// different PEs to the same bytes that nothing orders; `report` says
    /// both, the object and what was missing.
    #[error("{report}\n(found by --check-races=abort, which ends the job at the first race)")]
    DataRace { rank: usize, report: String },

    /// A collective was called with arguments it cannot use.
    #[error("{who_rank}: {op}: {detail}", who_rank = who(.rank))]
    BadCollective {
        rank: usize,
        op: &'static str,
        detail: String,
    },

    /// Two threads of one rank were in collectives at once.
    #[error("{who_rank}: {op} was called while another thread of this {} is in a collective; a {} runs one collective at a time, on one thread (OpenSHMEM's rule): call collectives from one thread, or serialize them", noun(), noun(), who_rank = who(.rank))]
    ConcurrentCollective { rank: usize, op: &'static str },

    /// The launcher ended the job while this rank waited in finalize: a
    /// peer waits for this rank in a call (a collective, or a word only a
    /// running rank could write) that this rank will never make.
    #[error("{who_rank}: finalize gave up, the job is ending: {reason}", who_rank = who(.rank))]
    FinalizeAbandoned { rank: usize, reason: String },

    /// Reporting to the launcher at finalize failed.
    #[error("{who_rank}: finalize could not notify the launcher", who_rank = who(.rank))]
    Finalize {
        rank: usize,
        #[source]
        source: io::Error,
    },

    /// An error with the place of the call the program made. Every public
    /// call's error comes wrapped so, once; its `Display` and causes are
    /// the error's, its `Debug` adds the place. Match on [`Error::kind`].
    #[error(transparent)]
    Located(Box<LocatedError>),
}

/// An [`Error`] and where the program made the call that returned it.
pub struct LocatedError {
    error: Error,
    at: &'static Location<'static>,
}

impl std::fmt::Display for LocatedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::fmt::Debug for LocatedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Error::fmt_debug(&self.error, Some(self.at), f)
    }
}

impl std::error::Error for LocatedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl Error {
    /// The error itself, whether or not it carries the caller's place:
    /// what to match on (`matches!(e.kind(), Error::RankOutOfRange { .. })`).
    pub fn kind(&self) -> &Error {
        match self {
            Error::Located(located) => located.error.kind(),
            other => other,
        }
    }

    /// Where the program made the call that failed (`#[track_caller]`).
    pub fn location(&self) -> Option<&'static Location<'static>> {
        match self {
            Error::Located(located) => Some(located.at),
            _ => None,
        }
    }

    /// This error, placed at `at`; the outermost public call's place wins.
    #[cold]
    #[inline(never)]
    pub(crate) fn located_at(self, at: &'static Location<'static>) -> Error {
        FAILED_LAST.set(true);
        let error = match self {
            Error::Located(located) => located.error,
            other => other,
        };
        Error::Located(Box::new(LocatedError { error, at }))
    }

    /// The sentence, the place (when known), then each cause on a line
    /// of its own.
    fn fmt_debug(error: &Error, at: Option<&Location<'_>>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{error}")?;
        if let Some(at) = at {
            write!(f, "\n  at {}:{}:{}", at.file(), at.line(), at.column())?;
        }
        let mut cause = std::error::Error::source(error);
        while let Some(e) = cause {
            write!(f, "\n  caused by: {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

/// [`located`], for a call whose body records the program's place itself
/// (through [`crate::site::call_site`]: hang reports, the checking mode): the place
/// is kept for the body, which runs in a closure, where `#[track_caller]`
/// does not reach.
#[track_caller]
#[inline(always)]
pub(crate) fn located_call<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    let at = Location::caller();
    let _outer = crate::site::Outermost::enter(at);
    match body() {
        Ok(value) => Ok(answered(value)),
        Err(e) => Err(e.located_at(at)),
    }
}

thread_local! {
    /// Whether this thread's last public call returned an error.
    static FAILED_LAST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A public call succeeded: the thread's last call no longer failed.
#[inline(always)]
fn answered<T>(value: T) -> T {
    if FAILED_LAST.get() {
        FAILED_LAST.set(false);
    }
    value
}

/// Whether the last public call this thread made returned an error (and
/// none succeeded since): a `World` dropped then is being left by `?` or
/// an early return with that error, on its way out of `main` as a failure.
pub(crate) fn failed_last() -> bool {
    FAILED_LAST.get()
}

/// Runs a public call's `body`, placing its error at the program's call
/// (the caller of the `#[track_caller]` function that uses this).
#[track_caller]
#[inline(always)]
pub(crate) fn located<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    match body() {
        Ok(value) => Ok(answered(value)),
        Err(e) => Err(e.located_at(Location::caller())),
    }
}

impl From<crate::protocol::env::BadVar> for Error {
    fn from(bad: crate::protocol::env::BadVar) -> Error {
        let crate::protocol::env::BadVar { var, value, reason } = bad;
        Error::LaunchEnv { var, value, reason }
    }
}

impl std::fmt::Debug for Error {
    /// The sentence, where the program made the failing call, then each
    /// cause on a line of its own: what `fn main() -> oneside::Result<()>`
    /// prints when an error leaves main.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Located(located) => located.fmt(f),
            error => Error::fmt_debug(error, None, f),
        }
    }
}

/// `PE 3 of 4`, `PE 3`, or `this PE`.
fn pe_of(rank: &Option<usize>, size: &Option<usize>) -> String {
    match (rank, size) {
        (Some(r), Some(n)) => format!("{} of {n}", who(r)),
        (Some(r), None) => who(r).to_string(),
        (None, _) => format!("this {}", noun()),
    }
}

fn describe_missing(missing: &[usize]) -> String {
    if missing.is_empty() {
        return "the launcher's reply".to_string();
    }
    let ranks: Vec<String> = missing.iter().map(|r| r.to_string()).collect();
    format!("{}(s) {}", noun(), ranks.join(", "))
}

/// Why a peer's connection broke, as far as its error can say: a peer
/// whose host went silent (`ETIMEDOUT`, after `liveness::SILENCE`) was not
/// heard to exit.
fn why_lost(source: &io::Error, peer: crate::words::Who) -> String {
    match source.kind() {
        io::ErrorKind::TimedOut => format!(
            "{}; check the network to it",
            crate::protocol::liveness::silent_host(&format!("the host of {peer}"))
        ),
        _ => format!("did {peer} exit or crash?"),
    }
}

fn cap_kind(capped: bool) -> &'static str {
    match capped {
        true => "cap",
        false => "reservation",
    }
}

fn cap_advice(capped: bool) -> String {
    match capped {
        true => format!(
            "the cap is {}: raise it, or unset it and the heap grows as far as memory allows",
            heap_cap_setting()
        ),
        false => format!(
            "the reservation is the address space each {} keeps for its heap in a job of this size; set a larger cap with {} to reserve more",
            noun(),
            heap_cap_setting()
        ),
    }
}

fn simulated_note(simulated: bool) -> &'static str {
    match simulated {
        true => " (simulated by ONESIDE_HEAP_FAULT)",
        false => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_located_error_is_its_sentence_with_the_place_and_matches_by_kind() {
        let error = Error::RankOutOfRange {
            rank: 0,
            op: "put",
            target: 2,
            size: 2,
        };
        let sentence = error.to_string();
        let at = Location::caller();
        let located = error.located_at(at);
        assert_eq!(located.to_string(), sentence);
        let debug = format!("{located:?}");
        assert_eq!(
            debug,
            format!("{sentence}\n  at {}:{}:{}", at.file(), at.line(), at.column())
        );
        assert!(matches!(located.kind(), Error::RankOutOfRange { target: 2, .. }));
        // Placed again by an outer call: once, at the outer place.
        let outer = Location::caller();
        let twice = located.located_at(outer);
        assert_eq!(twice.location(), Some(outer));
        assert!(matches!(twice.kind(), Error::RankOutOfRange { .. }));
    }

    #[test]
    fn located_places_the_error_at_the_callers_line() {
        #[track_caller]
        fn public_call() -> Result<()> {
            located(|| {
                Err(Error::TeamsExhausted {
                    rank: 0,
                    op: "split",
                    max: 1,
                })
            })
        }
        let line = line!() + 1;
        let e = public_call().unwrap_err();
        assert_eq!(e.location().map(|at| (at.file(), at.line())), Some((file!(), line)));
    }
}
