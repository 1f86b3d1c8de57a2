//! Host names this machine can resolve, and the nearest one to a name it
//! cannot: a typo in a hostfile (`localhots`) is named with its
//! `file:line` and a likely fix, as rustc suggests a misspelt name.

use crate::hostfile::HostEntry;
use std::net::{SocketAddr, ToSocketAddrs};

/// `host`'s first IPv4 address (ssh's port, for routing), or why it has none.
pub fn resolve(host: &str) -> Result<SocketAddr, String> {
    (host, 22)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .find(SocketAddr::is_ipv4)
        .ok_or_else(|| "it has no IPv4 address".into())
}

/// Why `host` does not resolve to an IPv4 address here, if it does not.
pub fn unresolved(host: &str) -> Option<String> {
    resolve(host).err()
}

/// The message for `entry`, whose name does not resolve (`why`): where it
/// was named, and the nearest of the names this machine knows (the
/// job's other hosts, this host's names, `/etc/hosts`).
pub fn unknown_host(entry: &HostEntry, why: &str, others: &[HostEntry]) -> String {
    let mut known: Vec<String> = others.iter().map(|h| h.host.clone()).collect();
    known.extend(["localhost".to_string(), oneside::protocol::host_addr::hostname()]);
    known.extend(etc_hosts_names());
    let hint = match nearest(&entry.host, &known) {
        Some(name) => format!("did you mean '{name}'? "),
        None => String::new(),
    };
    format!(
        "host '{}' ({}) is not a name this machine can resolve ({why}); {hint}fix the name there, \
         or make it resolvable (DNS or /etc/hosts)",
        entry.host, entry.origin
    )
}

/// Every name in `/etc/hosts` (none if it cannot be read).
fn etc_hosts_names() -> Vec<String> {
    let text = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(|line| line.split_whitespace().skip(1).map(String::from).collect::<Vec<_>>())
        .collect()
}

/// The known name closest to `name` by edit distance, if it is close:
/// at most 2 edits, and fewer than half the name's length.
pub fn nearest(name: &str, known: &[String]) -> Option<String> {
    let limit = 2.min(name.chars().count().saturating_sub(1) / 2);
    known
        .iter()
        .filter(|k| k.as_str() != name)
        .map(|k| (distance(name, k), k))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k.clone())
}

/// Levenshtein distance, with a swap of two neighbours as one edit.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    rows[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_typo_finds_the_name_it_misspells() {
        let known = names(&["localhost", "node1", "node2"]);
        assert_eq!(nearest("localhots", &known).as_deref(), Some("localhost"));
        assert_eq!(nearest("nod1", &known).as_deref(), Some("node1"));
        assert_eq!(nearest("gpu7", &known), None);
        assert_eq!(nearest("n1", &known), None, "short names suggest nothing far");
        assert_eq!(distance("ab", "ba"), 1);
    }

    #[test]
    fn names_that_do_not_resolve_say_why() {
        assert_eq!(unresolved("localhost"), None);
        assert!(unresolved("no-such-host.invalid").is_some());
    }
}
