//! The one error type of every transport engine (tcp, verbs, ofi): a step
//! of setting up that failed, or an operation with a peer that failed, in
//! the words of the socket or the library. Engines know no rank of their
//! own and no [`Error`]; the layer above adds this rank and turns a fault
//! into one ([`Fault::into_error`] for operations, the setup's own variant
//! for a step).

use crate::error::Error;
use std::fmt;
use std::io;

/// What an engine reports when something fails.
#[derive(Debug)]
pub struct Fault {
    /// The peer of the operation; `None` for a step of this rank's own
    /// set-up (opening a library or device, starting a thread).
    pub peer: Option<usize>,
    /// What was being done: `"put"`, `"connect the queue pair"`, `"open the
    /// device"`.
    pub op: &'static str,
    pub cause: Cause,
    /// A flushed work request: the connection broke because of an earlier
    /// error, most often the peer's, which that peer reports itself.
    pub consequence: bool,
}

/// What the layer below said.
#[derive(Debug)]
pub enum Cause {
    /// A library's (or the engine's own) description.
    Said(String),
    /// A socket's or a system call's error.
    Io(io::Error),
}

/// How long a rank that only saw the consequence of another rank's failure
/// holds its own error back, so that the launcher hears of the cause first
/// (and stops this rank) rather than blaming this one.
pub const CONSEQUENCE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Fault {
    /// A failed step of set-up, described by the library.
    pub fn setup(op: &'static str, detail: impl Into<String>) -> Fault {
        Fault {
            peer: None,
            op,
            cause: Cause::Said(detail.into()),
            consequence: false,
        }
    }

    /// A failed operation with `peer`, described by the library.
    pub fn with(peer: usize, op: &'static str, detail: impl Into<String>) -> Fault {
        Fault {
            peer: Some(peer),
            op,
            cause: Cause::Said(detail.into()),
            consequence: false,
        }
    }

    /// A failed operation with `peer`, as a socket reported it.
    pub fn io(peer: usize, op: &'static str, source: io::Error) -> Fault {
        Fault {
            peer: Some(peer),
            op,
            cause: Cause::Io(source),
            consequence: false,
        }
    }

    /// A failed step of set-up, as a system call reported it.
    pub fn setup_io(op: &'static str, source: io::Error) -> Fault {
        Fault {
            peer: None,
            op,
            cause: Cause::Io(source),
            consequence: false,
        }
    }

    /// The same fault, named after the caller's operation (a collective's
    /// traffic rather than the put it was made of).
    pub fn during(mut self, op: &'static str) -> Fault {
        self.op = op;
        self
    }

    /// The system call's error of a set-up step (a thread that would not
    /// start), for the variants that carry one.
    pub fn into_io(self) -> io::Error {
        match self.cause {
            Cause::Io(source) => source,
            Cause::Said(detail) => io::Error::other(detail),
        }
    }

    /// The crate's error for a failed operation of rank `rank`: a broken
    /// connection ([`Error::PeerLost`]) or a library's failure
    /// ([`Error::Rdma`]). A set-up step is mapped by its caller, which
    /// knows the transport; one that reaches here is a NIC's
    /// ([`Error::RdmaSetup`]).
    pub fn into_error(self, rank: usize) -> Error {
        let detail = match (self.peer, self.cause) {
            (Some(peer), Cause::Io(source)) => {
                return Error::PeerLost {
                    rank,
                    peer,
                    op: self.op,
                    source,
                }
            }
            (Some(peer), Cause::Said(detail)) => {
                return Error::Rdma {
                    rank,
                    peer,
                    op: self.op,
                    detail,
                }
            }
            (None, Cause::Said(detail)) => detail,
            (None, Cause::Io(source)) => source.to_string(),
        };
        Error::RdmaSetup {
            rank,
            detail: format!("{}: {detail}", self.op),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cause: &dyn fmt::Display = match &self.cause {
            Cause::Said(detail) => detail,
            Cause::Io(source) => source,
        };
        match self.peer {
            Some(peer) => write!(f, "{} with rank {peer} failed: {cause}", self.op),
            None => write!(f, "{cause}"),
        }
    }
}

/// A library's description of a failed step, where the step's own words
/// are the whole story (`?` on a helper's `String`).
impl From<String> for Fault {
    fn from(detail: String) -> Fault {
        Fault::setup("set up", detail)
    }
}

impl From<&str> for Fault {
    fn from(detail: &str) -> Fault {
        Fault::setup("set up", detail)
    }
}
