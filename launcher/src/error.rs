//! The one error type of `rlaunch`. Each variant says what failed, where
//! (file:line, host, rank) and, where it can, what to do about it.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    #[error("cannot read hostfile {path}: {source}")]
    HostfileRead {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("{origin}: {reason}: '{text}'")]
    HostfileSyntax {
        origin: String,
        text: String,
        reason: String,
    },

    #[error("{origin} lists no hosts")]
    NoHosts { origin: String },

    #[error("-n must be at least 1")]
    ZeroRanks,

    #[error("requested {requested} ranks but {source_name} provides only {slots} slot(s) ({hosts}); lower -n, add slots ({example}), or pass --oversubscribe (or set RLAUNCH_OVERSUBSCRIBE=1) to let ranks share CPUs")]
    NotEnoughSlots {
        requested: usize,
        slots: usize,
        source_name: String,
        hosts: String,
        /// How slots are added where these came from.
        example: String,
    },

    #[error("requested {requested} ranks but the hosts' max_slots allow only {limit}, even with --oversubscribe; lower -n or raise max_slots")]
    OverMaxSlots { requested: usize, limit: usize },

    #[error("-x {spec}: {reason}")]
    BadEnvForward { spec: String, reason: String },

    #[error("cannot run '{program}': {reason}")]
    Program { program: String, reason: String },

    #[error("--profile/--trace: cannot use the directory {}: {source}; name a writable one with --profile=DIR or --trace=DIR", dir.display())]
    Profile {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },

    #[error("cannot choose the bootstrap address: {detail}")]
    Address { detail: String },

    #[error("{detail}")]
    UnknownHost { detail: String },

    #[error("--ssh '{command}': {reason}")]
    BadSsh { command: String, reason: String },

    #[error("cannot find rlaunch's own path or working directory: {source}")]
    SelfPath {
        #[source]
        source: io::Error,
    },

    #[error("cannot start the bootstrap service: {source}")]
    BootstrapListen {
        #[source]
        source: io::Error,
    },

    #[error("cannot start rank {rank} on host {host} ({program}): {source}")]
    Spawn {
        rank: usize,
        host: String,
        program: String,
        #[source]
        source: io::Error,
    },

    #[error("cannot start the spawner process (rlaunch --spawner, from /proc/self/exe) that starts this host's ranks: {source}")]
    Spawner {
        #[source]
        source: io::Error,
    },

    #[error("cannot watch the ranks' output and exits (pidfd_open needs Linux 5.3 or later): {source}")]
    Watch {
        #[source]
        source: io::Error,
    },

    #[error("{host}: this job needs about {needed} open files in rlaunch ({why}), but the hard limit (ulimit -Hn) is {hard}; raise it (limits.conf, or LimitNOFILE under systemd), or place fewer ranks on this host")]
    Descriptors {
        host: String,
        needed: u64,
        hard: u64,
        why: String,
    },

    #[error("cannot use the batch allocation: {var}='{value}': {detail} (fix or unset {var})")]
    BadAllocation { var: String, value: String, detail: String },

    #[error("cannot read {var}={path}: {source}; unset {var} if this is not a batch job")]
    AllocationRead {
        var: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("cannot install the Ctrl-C handler: {0}")]
    SignalHandler(#[from] ctrlc::Error),
}
