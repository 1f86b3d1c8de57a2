//! A failed operation of a NIC transport (verbs or ofi), as the engines
//! report it: the peer, the operation and what the library said. The layer
//! above adds the rank when it turns one into an [`Error`].

use crate::error::Error;

/// A failed RDMA operation, before the world adds its rank.
#[derive(Debug)]
pub struct Failure {
    pub peer: usize,
    pub op: &'static str,
    pub detail: String,
    /// A flushed work request: the queue pair broke because of an earlier
    /// error, most often the peer's, which that peer reports itself.
    pub consequence: bool,
}

/// How long a rank that only saw the consequence of another rank's failure
/// holds its own error back, so that the launcher hears of the cause first
/// (and stops this rank) rather than blaming this one.
pub const CONSEQUENCE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Failure {
    pub fn into_error(self, rank: usize) -> Error {
        Error::Rdma {
            rank,
            peer: self.peer,
            op: self.op,
            detail: self.detail,
        }
    }
}
