//! Which address the bootstrap service listens on: loopback for a job on
//! this host alone; otherwise `--bootstrap-addr`, the address of `--iface`,
//! or the source address the kernel would use to reach the first remote host.

use crate::error::LaunchError;
use crate::plan::LaunchPlan;
use std::net::{IpAddr, Ipv4Addr};

pub fn bootstrap_ip(plan: &LaunchPlan) -> Result<IpAddr, LaunchError> {
    bootstrap_ip_skipping(plan, &[])
}

/// [`bootstrap_ip`], leaving out the hosts whose index `skip` marks true
/// (`--check`, which reports a host it cannot resolve in its row).
pub fn bootstrap_ip_skipping(plan: &LaunchPlan, skip: &[bool]) -> Result<IpAddr, LaunchError> {
    if let Some(ip) = plan.bootstrap_addr {
        return Ok(ip);
    }
    if let Some(name) = &plan.iface {
        return interface_ip(name).ok_or_else(|| LaunchError::Address {
            detail: format!("interface '{name}' has no IPv4 address (see `ip addr`)"),
        });
    }
    let remote = (plan.hosts.iter().zip(&plan.agents).enumerate())
        .find(|&(i, (_, agent))| !agent.is_local() && !skip.get(i).copied().unwrap_or(false))
        .map(|(_, pair)| pair);
    let Some((remote, _)) = remote else {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    };
    // A name that does not resolve is the hostfile's mistake, not the
    // address's: say where it was written, and what it may have meant.
    let target = crate::known_hosts::resolve(&remote.host).map_err(|why| LaunchError::UnknownHost {
        detail: crate::known_hosts::unknown_host(remote, &why, &plan.hosts),
    })?;
    // The local address the kernel picks to reach it (no packet is sent).
    oneside::protocol::host_addr::source_toward(target).map_err(|e| LaunchError::Address {
        detail: format!(
            "cannot find a local address that reaches '{}': {e}; pass --bootstrap-addr or --iface",
            remote.host
        ),
    })
}

/// The first IPv4 address of interface `name`.
fn interface_ip(name: &str) -> Option<IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cursor = list;
    while !cursor.is_null() && found.is_none() {
        // SAFETY: `cursor` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let entry = unsafe { &*cursor };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let entry_name = unsafe { std::ffi::CStr::from_ptr(entry.ifa_name) };
        let addr = entry.ifa_addr;
        if entry_name.to_bytes() == name.as_bytes()
            && !addr.is_null()
            // SAFETY: a non-null ifa_addr points at a sockaddr whose family says its real type.
            && unsafe { (*addr).sa_family } as i32 == libc::AF_INET
        {
            // SAFETY: the family is AF_INET, so this is a sockaddr_in.
            let sin = unsafe { &*(addr as *const libc::sockaddr_in) };
            found = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
        }
        cursor = entry.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs and is freed exactly once.
    unsafe { libc::freeifaddrs(list) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_an_address_and_routes_resolve() {
        assert_eq!(interface_ip("lo"), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(interface_ip("no-such-interface"), None);
        let loopback = crate::known_hosts::resolve("127.0.0.1").unwrap();
        let source = oneside::protocol::host_addr::source_toward(loopback).unwrap();
        assert_eq!(source, IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
}
