//! The default context's link to one TCP peer: connected at wire-up in
//! small jobs, or on first use in large ones (`ONESIDE_TCP_EAGER_PEERS`,
//! default 64 other ranks), so a rank that talks to 8 of 1023 peers holds
//! 8 connections, not 1023, and the peers' engines serve only those (as
//! libfabric's rxm and Open MPI's add_procs cutoff connect on demand).
//!
//! A peer never contacted has no link, so quiet and the batch flushes skip
//! it: nothing was ever sent there to complete.

use super::TcpPeer;
use crate::error::Result;
use crate::sync::lock;
use std::sync::{Arc, Mutex, OnceLock};

/// How many other ranks a job may have before its TCP links connect on
/// first use (`ONESIDE_TCP_EAGER_PEERS`, default 64).
pub fn eager_peers() -> usize {
    crate::protocol::env::count_or("ONESIDE_TCP_EAGER_PEERS", 64)
}

/// One peer's link, once connected.
pub struct TcpPath {
    link: OnceLock<Arc<Mutex<TcpPeer>>>,
    /// Held while connecting, so two threads never open two links.
    connecting: Mutex<()>,
}

impl TcpPath {
    /// A link connected at wire-up.
    pub fn connected(link: Arc<Mutex<TcpPeer>>) -> TcpPath {
        TcpPath {
            link: OnceLock::from(link),
            connecting: Mutex::new(()),
        }
    }

    /// A link to connect on first use.
    pub fn lazy() -> TcpPath {
        TcpPath {
            link: OnceLock::new(),
            connecting: Mutex::new(()),
        }
    }

    /// The link, if it has been connected.
    #[inline]
    pub fn get(&self) -> Option<&Mutex<TcpPeer>> {
        self.link.get().map(|link| &**link)
    }

    /// The link, connecting it with `connect` first if need be.
    #[inline]
    pub fn get_or_connect(&self, connect: impl FnOnce() -> Result<Arc<Mutex<TcpPeer>>>) -> Result<&Mutex<TcpPeer>> {
        match self.get() {
            Some(link) => Ok(link),
            None => self.connect(connect),
        }
    }

    #[cold]
    fn connect(&self, connect: impl FnOnce() -> Result<Arc<Mutex<TcpPeer>>>) -> Result<&Mutex<TcpPeer>> {
        let _connecting = lock(&self.connecting);
        if self.link.get().is_none() {
            let _ = self.link.set(connect()?);
        }
        Ok(self.get().expect("connected above"))
    }
}
