//! Bootstrap without rlaunch, under a PMI-2 server (`srun --mpi=pmi2`):
//! what rlaunch would have told the rank ([`LaunchEnv`]) comes from a first
//! all-gather through the server's key-value space, of each rank's host
//! name and a random nonce; the cards then travel in a second one.
//!
//! * Local rank and size: the ranks with this rank's host name, in rank
//!   order, as rlaunch numbers them.
//! * The job secret, which admits connections to the TCP progress engines:
//!   rank 0's nonce. Only the step's own tasks read its key-value space.
//! * The job id (it names the shared-memory segments): the PMI job id,
//!   `<job>.<step>`, as `p<job>x<step>`.
//! * The address peers reach this rank's engine at: the one this host
//!   routes to the srun host with (`SLURM_LAUNCH_NODE_IPADDR`), else the
//!   address of its host name, else loopback (a one-host job).

use super::pmi2::Pmi2;
use crate::error::{Error, Result};
use crate::protocol::env::LaunchEnv;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};

const NONCE_BYTES: usize = 16;

/// Runs the first all-gather and returns this rank's launch environment.
pub(crate) fn launch_env(pmi: &mut Pmi2) -> Result<LaunchEnv> {
    let host = crate::protocol::route::hostname();
    let nonce: [u8; NONCE_BYTES] = crate::protocol::auth::random_bytes();
    let mut own = nonce.to_vec();
    own.extend_from_slice(host.as_bytes());
    let all = pmi.allgather(&own)?;
    let (rank, size) = (pmi.rank(), pmi.size());
    let bad = |detail: String| Error::Pmi {
        rank: Some(rank),
        step: "kvs-get",
        detail,
    };
    let mut hosts = Vec::with_capacity(size);
    for (peer, blob) in all.iter().enumerate() {
        if blob.len() < NONCE_BYTES {
            return Err(bad(format!(
                "rank {peer} published {} bytes, not a nonce and a host",
                blob.len()
            )));
        }
        hosts.push(String::from_utf8_lossy(&blob[NONCE_BYTES..]).into_owned());
    }
    let local: Vec<usize> = (0..size).filter(|&p| hosts[p] == host).collect();
    let local_rank = local.iter().position(|&p| p == rank).unwrap_or(0);
    Ok(LaunchEnv {
        rank,
        size,
        local_rank,
        local_size: local.len().max(1),
        host,
        bootstrap_addr: String::new(),
        secret: all[0][..NONCE_BYTES].to_vec(),
        job_id: job_id(pmi.jobid()),
        bootstrap_timeout_secs: pmi.timeout().as_secs().max(1),
    })
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
        crate::protocol::route::source_toward(target).ok()
    };
    if let Some(ip) = std::env::var("SLURM_LAUNCH_NODE_IPADDR").ok().and_then(|a| toward(&a)) {
        if !ip.is_unspecified() {
            return ip;
        }
    }
    let named = (crate::protocol::route::hostname().as_str(), 0)
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
