//! Bootstrap without rlaunch, under the launcher's PMI ([`super::pmi`]:
//! `srun`, `mpirun`, `mpiexec.hydra`, Flux): what rlaunch would have told
//! the rank ([`LaunchEnv`]) comes from the server, and the cards travel
//! through its key-value space.
//!
//! * Local rank and size: the ranks on this rank's node, in rank order, as
//!   rlaunch numbers them. The server's `PMI_process_mapping` (or PMIx's
//!   local peers) says where every rank runs; a server without it costs an
//!   all-gather of each rank's host name instead.
//! * The job secret, which admits connections to the TCP progress engines:
//!   rank 0's nonce, the one key every rank reads. Only the step's own
//!   tasks read its key-value space.
//! * The job id (it names the shared-memory segments): the server's job id
//!   (`<job>.<step>` under Slurm, a KVS name, a PMIx namespace), letters and
//!   digits only: `42.0` becomes `p42x0`.
//! * The address peers reach this rank's engine at: the one this host
//!   routes to the srun host with (`SLURM_LAUNCH_NODE_IPADDR`), else the
//!   address of its host name, else loopback (a one-host job).
//!
//! The cards, as with rlaunch, are read once per node: every rank puts its
//! own; after the fence each node's lowest rank gets them all and writes
//! the table to a shared-memory file ([`super::table`]); after a second
//! fence the node's other ranks read that file. So the server answers N
//! gets per node, not N per rank: at 4 nodes x 256 ranks, N² gets took
//! 110 s. A rank that cannot read the file gets the cards itself.

use super::pmi::Pmi;
use super::table::{self, TableBytes};
use super::LauncherLink;
use crate::error::Result;
use crate::protocol::env::LaunchEnv;
use crate::protocol::wire::{card_table_path, encode_table, table_entries};
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};

const NONCE_BYTES: usize = 16;
const SECRET_KEY: &str = "oneside-secret";

/// A rank's connection to its PMI server, and the ranks of its node.
pub(crate) struct PmiJob {
    pmi: Pmi,
    /// This node's ranks, in rank order (never empty: it holds this rank).
    local: Vec<usize>,
}

/// Learns this rank's launch environment from the server.
pub(crate) fn launch_env(mut pmi: Pmi) -> Result<(LaunchEnv, PmiJob)> {
    let host = crate::protocol::host_addr::hostname();
    let (rank, size) = (pmi.rank(), pmi.size());
    let (local, secret) = match pmi.local_ranks()? {
        Some(local) => (local, shared_nonce(&mut pmi)?),
        None => hosts_and_nonce(&mut pmi, &host)?,
    };
    let env = LaunchEnv {
        rank,
        size,
        local_rank: local.iter().position(|&p| p == rank).unwrap_or(0),
        local_size: local.len(),
        host,
        bootstrap_addr: String::new(),
        secret,
        job_id: job_id(pmi.jobid()),
        bootstrap_timeout_secs: pmi.timeout().as_secs().max(1),
    };
    Ok((env, PmiJob { pmi, local }))
}

/// Rank 0 puts a nonce; after the fence every rank reads it.
fn shared_nonce(pmi: &mut Pmi) -> Result<Vec<u8>> {
    if pmi.rank() == 0 {
        let nonce: [u8; NONCE_BYTES] = crate::protocol::auth::random_bytes();
        pmi.put(SECRET_KEY, &crate::protocol::env::hex_encode(&nonce))?;
    }
    pmi.fence()?;
    let text = pmi.get(0, SECRET_KEY)?;
    text.as_deref()
        .and_then(crate::protocol::env::hex_decode)
        .filter(|nonce| nonce.len() == NONCE_BYTES)
        .ok_or_else(|| pmi.fail("get", format!("rank 0's nonce under {SECRET_KEY} is {text:?}")))
}

/// Without a process mapping: an all-gather of every rank's nonce and host
/// name. Returns this host's ranks and rank 0's nonce.
fn hosts_and_nonce(pmi: &mut Pmi, host: &str) -> Result<(Vec<usize>, Vec<u8>)> {
    let nonce: [u8; NONCE_BYTES] = crate::protocol::auth::random_bytes();
    let mut own = nonce.to_vec();
    own.extend_from_slice(host.as_bytes());
    let all = pmi.allgather(&own)?;
    let mut local = Vec::new();
    for (peer, blob) in all.iter().enumerate() {
        if blob.len() < NONCE_BYTES {
            let detail = format!("rank {peer} published {} bytes, not a nonce and a host", blob.len());
            return Err(pmi.fail("get", detail));
        }
        if &blob[NONCE_BYTES..] == host.as_bytes() {
            local.push(peer);
        }
    }
    Ok((local, all[0][..NONCE_BYTES].to_vec()))
}

impl PmiJob {
    /// The server this rank joined through, for messages.
    pub(crate) fn server(&self) -> String {
        self.pmi.server()
    }

    /// The card table, every rank's card indexed by rank, read once per
    /// node (see the module docs); then the link that finalizes through the
    /// server and removes this node's table file after the wire-up barrier.
    pub(crate) fn exchange_cards(mut self, env: &LaunchEnv, card: Vec<u8>) -> Result<(TableBytes, LauncherLink)> {
        let epoch = self.pmi.publish(&card)?;
        let leader = self.local[0];
        let path = card_table_path(&env.job_id, leader);
        let mut published = None;
        let mut fetched = None;
        if env.rank == leader {
            let table = self.fetch_all(epoch, &card)?;
            if self.local.len() > 1 {
                published = table::publish(&path, &table).ok();
            }
            fetched = Some(TableBytes::Inline(table));
        }
        // Every rank fences, so the count matches; after it the tables are
        // in place. Nothing new was put: a barrier is enough.
        self.pmi.barrier()?;
        let table = match fetched {
            Some(table) => table,
            None => match read_table(&path, env.size, env.rank, &card) {
                Some(table) => table,
                None => TableBytes::Inline(self.fetch_all(epoch, &card)?),
            },
        };
        Ok((table, LauncherLink::pmi(self.pmi, published)))
    }

    /// Every rank's card from the server, as an encoded table.
    fn fetch_all(&mut self, epoch: u64, own: &[u8]) -> Result<Vec<u8>> {
        let rank = self.pmi.rank();
        let cards = (0..self.pmi.size())
            .map(|peer| match peer == rank {
                true => Ok(own.to_vec()),
                false => self.pmi.fetch(epoch, peer),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(encode_table(&cards))
    }
}

/// The node's table, if it can be read, holds `size` cards and has this
/// rank's own card in its place.
fn read_table(path: &str, size: usize, rank: usize, own: &[u8]) -> Option<TableBytes> {
    let table = table::read(path).ok()?;
    let valid = table_entries(&table).is_ok_and(|cards| cards.len() == size && cards[rank] == own);
    valid.then_some(table)
}

/// `42.0` → `p42x0`: letters and digits only, as segment names need.
fn job_id(pmi_jobid: &str) -> String {
    let mut id = String::from("p");
    for c in pmi_jobid.chars() {
        match c {
            c if c.is_ascii_alphanumeric() => id.push(c),
            _ => id.push('x'),
        }
    }
    id
}

/// The address this rank's engine listens on and peers connect to.
pub(crate) fn local_ip() -> IpAddr {
    let toward = |target: &str| -> Option<IpAddr> {
        let target = (target, 9).to_socket_addrs().ok()?.next()?;
        crate::protocol::host_addr::source_toward(target).ok()
    };
    if let Some(ip) = std::env::var("SLURM_LAUNCH_NODE_IPADDR").ok().and_then(|a| toward(&a)) {
        if !ip.is_unspecified() {
            return ip;
        }
    }
    let named = (crate::protocol::host_addr::hostname().as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.find(|a| a.is_ipv4() && !a.ip().is_loopback()));
    named.map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |a| a.ip())
}

#[cfg(test)]
mod tests {
    #[test]
    fn job_ids_are_letters_and_digits() {
        assert_eq!(super::job_id("42.0"), "p42x0");
        assert_eq!(super::job_id("7"), "p7");
    }
}
