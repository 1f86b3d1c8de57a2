//! What a blocked rank tells rlaunch for hang reports: every thread's
//! blocking call, where it was made and what it waits for. Ranks send a
//! [`Stall`] once all their threads have been blocked a while, and
//! `Moving` when one of them gets going again; rlaunch keeps the latest of
//! each rank and prints them when the job hangs, times out, loses a rank
//! or gets SIGQUIT.

use serde::{Deserialize, Serialize};

/// One blocked rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    pub rank: u32,
    /// How long its most recently blocked thread has been blocked.
    pub for_ms: u64,
    pub threads: Vec<ThreadStall>,
}

/// One blocked thread of a rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadStall {
    /// The outermost oneside call, as the program spelled it
    /// (`barrier`, `shmem_barrier_all`, `finalize`).
    pub call: String,
    /// Where the program made it: `file:line:column`, or empty when not known.
    pub at: String,
    /// What it waits for, in words.
    pub waits: String,
    /// The ranks it waits for, when the wait names them (a collective's step).
    pub on: Vec<u32>,
    /// Whether any other rank could end the wait (a word of its own heap,
    /// which any rank may write).
    pub anyone: bool,
    /// Whether it waits for an answer the named rank's progress engine
    /// owes: it comes even while that rank is in finalize, or blocked.
    pub answer: bool,
    /// Whether the call is finalize (or its barrier).
    pub finalizing: bool,
    /// For a wait for a member's step: the team's slot and the value of
    /// the step's flag (`(call << 24) | step`, the call numbered from 1 on
    /// that team). A member in finalize that reported signalling at least
    /// that far on that slot sent this step: it is in flight, not missing.
    pub step_of: Option<(u32, u64)>,
}

impl Stall {
    /// Whether every blocked thread of the rank is in finalize.
    pub fn finalizing(&self) -> bool {
        !self.threads.is_empty() && self.threads.iter().all(|t| t.finalizing)
    }
}
