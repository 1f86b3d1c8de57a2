//! The rank's reports to rlaunch while it runs (hang reports, moving on,
//! crashes): a copy of the launcher link, kept apart from `bootstrap`, so
//! that the watchdog and the engines may report without reaching the
//! bootstrap. It names only the wire protocol and the lock helper.

use crate::protocol::wire::{send_blocking, Msg};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

/// The watchdog's way to the launcher: a copy of the launcher link, which
/// the farewell takes away before it sends, so the two never interleave
/// and nothing follows `Finalized`.
#[derive(Clone)]
pub(crate) struct Reporter(Arc<Mutex<Option<TcpStream>>>);

impl Reporter {
    /// A reporter over `link`, the launcher link's copy that the farewell
    /// empties before it sends.
    pub(crate) fn new(link: Arc<Mutex<Option<TcpStream>>>) -> Reporter {
        Reporter(link)
    }

    /// Sends `msg`; false once the link is gone or finalize has begun.
    pub fn send(&self, msg: &Msg) -> bool {
        self.send_if(|| Some(msg.clone()))
    }

    /// Sends `msg` unless another thread holds the link (or it is gone).
    pub fn try_send(&self, msg: &Msg) -> bool {
        match self.0.try_lock() {
            Ok(mut stream) => stream.as_mut().is_some_and(|s| send_blocking(s, msg).is_ok()),
            Err(_) => false,
        }
    }

    /// Sends what `decide` returns, deciding under the link's lock, so no
    /// other report can come between the decision and the message; true
    /// if `decide` sent nothing or the message went out.
    pub fn send_if(&self, decide: impl FnOnce() -> Option<Msg>) -> bool {
        let mut stream = crate::sync::lock(&self.0);
        match (stream.as_mut(), decide()) {
            (Some(s), Some(msg)) => send_blocking(s, &msg).is_ok(),
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}
