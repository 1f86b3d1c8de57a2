//! What rlaunch and its proxies say to each other, over an ssh connection's
//! stdin and stdout or over the TCP connection a srun-started proxy makes
//! back to rlaunch: a closed set of messages in the same versioned,
//! length-prefixed postcard frames as the bootstrap protocol.

use crate::job::output::Stream;
use crate::job::report::Ending;
use serde::{Deserialize, Serialize};

/// Largest frame either side accepts.
pub const MAX_FRAME: usize = 16 << 20;

/// The environment variable that hands a srun-started proxy the secret it
/// proves itself with when it connects back (never on a command line,
/// where other users of the node could read it).
pub const PROXY_SECRET_ENV: &str = "RLAUNCH_PROXY_SECRET";

/// Launcher → proxy.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToProxy {
    /// Start these ranks (always the first message).
    Start(ProxySpec),
    /// Send a signal to every rank still running.
    Signal { signal: i32 },
}

/// Everything a proxy needs to start its host's ranks.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProxySpec {
    pub cwd: String,
    pub program: String,
    pub args: Vec<String>,
    pub ranks: Vec<ProxyRank>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ProxyRank {
    pub rank: u32,
    /// The complete environment rlaunch sets for this rank.
    pub env: Vec<(String, String)>,
    /// Its CPU share on the proxy's host (`--bind-to core`).
    pub share: Option<crate::job::spawn::CpuShare>,
}

/// Proxy → launcher.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromProxy {
    /// A proxy that connected back over TCP names its node (Slurm's name
    /// for it, and its hostname) before anything else.
    Hello {
        node: String,
        hostname: String,
    },
    Started {
        rank: u32,
        pid: i32,
    },
    SpawnFailed {
        rank: u32,
        error: String,
    },
    Output {
        rank: u32,
        stream: Stream,
        line: Vec<u8>,
    },
    Exited {
        rank: u32,
        ending: Ending,
    },
    /// The rank was stopped by a signal (SIGSTOP, SIGTSTP), or, with
    /// `stopped: false`, runs again: rlaunch cannot read another host's
    /// `/proc`, so the proxy tells it.
    Stopped {
        rank: u32,
        stopped: bool,
    },
}
