//! Which of this host's addresses reaches another: the source address the
//! kernel picks for a route to it, found by connecting a UDP socket (which
//! sends nothing). rlaunch advertises it as the bootstrap address, and a
//! rank started by srun as its progress engine's. And the host name it
//! goes by, which ranks, rlaunch and its proxies all read the same way.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};

/// The local address of the route to `target`.
pub fn source_toward(target: SocketAddr) -> io::Result<IpAddr> {
    let probe = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    probe.connect(target)?;
    Ok(probe.local_addr()?.ip())
}

/// This machine's host name, or `localhost` when it cannot be read.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
