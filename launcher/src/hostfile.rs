//! One parser for every hostfile dialect, and for `-H a,b:2` lists.
//!
//! * Open MPI: `node1 slots=4 max_slots=8`, `#` comments
//! * MPICH: `node1:4`
//! * plain: `node1`, one slot per line
//!
//! Each accepts `user@host`. Repeated hosts add up their slots, as in
//! Open MPI. Errors name `file:line` and quote the offending text.

use crate::error::LaunchError;
use std::path::Path;

/// One host with its slot count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    pub user: Option<String>,
    pub host: String,
    pub slots: usize,
    pub max_slots: Option<usize>,
    /// Where the host was first named, e.g. `hosts:3` or `-H`.
    pub origin: String,
}

/// Whether `host` names this machine: a loopback name, or our hostname
/// (see [`same_host`]).
pub fn is_this_machine(host: &str) -> bool {
    if matches!(host, "localhost" | "127.0.0.1" | "::1" | "localhost.localdomain") {
        return true;
    }
    same_host(host, &oneside::protocol::host_addr::hostname())
}

/// The one rule for "the same host" (rlaunch's placement, and a proxy
/// telling which host it runs on): equal names, or equal short names, so
/// that `node1` and `node1.cluster` match.
pub fn same_host(a: &str, b: &str) -> bool {
    let short = |name: &str| name.split('.').next().unwrap_or(name).to_owned();
    a == b || short(a) == short(b)
}

impl HostEntry {
    /// `user@host` or `host`, as ssh would want it.
    pub fn login(&self) -> String {
        match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

/// Reads and parses a hostfile.
pub fn read_hostfile(path: &Path) -> Result<Vec<HostEntry>, LaunchError> {
    let text = std::fs::read_to_string(path).map_err(|source| LaunchError::HostfileRead {
        path: path.to_path_buf(),
        source,
    })?;
    parse_hostfile(&text, &path.display().to_string())
}

/// Parses hostfile text; `name` is used in error messages.
pub fn parse_hostfile(text: &str, name: &str) -> Result<Vec<HostEntry>, LaunchError> {
    let mut hosts = Vec::new();
    for (number, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let origin = format!("{name}:{}", number + 1);
        merge(&mut hosts, parse_line(line, &origin)?);
    }
    if hosts.is_empty() {
        return Err(LaunchError::NoHosts {
            origin: name.to_string(),
        });
    }
    Ok(hosts)
}

/// Parses `-H a,b:2,user@c`.
pub fn parse_host_list(list: &str) -> Result<Vec<HostEntry>, LaunchError> {
    let mut hosts = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(syntax("-H", list, "empty host name in the list"));
        }
        merge(&mut hosts, parse_line(item, "-H")?);
    }
    Ok(hosts)
}

fn parse_line(line: &str, origin: &str) -> Result<HostEntry, LaunchError> {
    let mut words = line.split_whitespace();
    let spec = words.next().expect("the line is not empty");
    let (user, rest) = match spec.split_once('@') {
        Some((user, rest)) if valid_name(user) => (Some(user.to_string()), rest),
        Some(_) => return Err(syntax(origin, spec, "invalid user name before '@'")),
        None => (None, spec),
    };
    let (host, mut slots) = match rest.rsplit_once(':') {
        Some((host, count)) => (host, Some(count_value(origin, spec, count)?)),
        None => (rest, None),
    };
    if !valid_name(host) {
        return Err(syntax(origin, spec, "invalid host name"));
    }
    let mut max_slots = None;
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(syntax(origin, word, "expected key=value (slots=N or max_slots=N)"));
        };
        let target = match key {
            "slots" | "cpu" | "cpus" => &mut slots,
            "max_slots" | "max-slots" => &mut max_slots,
            _ => {
                return Err(syntax(
                    origin,
                    word,
                    "unknown attribute (expected slots=N or max_slots=N)",
                ))
            }
        };
        if target.replace(count_value(origin, word, value)?).is_some() {
            return Err(syntax(origin, line, &format!("'{key}' is given twice")));
        }
    }
    let slots = slots.unwrap_or(1);
    if max_slots.is_some_and(|max| max < slots) {
        return Err(syntax(origin, line, "max_slots is smaller than slots"));
    }
    Ok(HostEntry {
        user,
        host: host.to_string(),
        slots,
        max_slots,
        origin: origin.to_string(),
    })
}

fn merge(hosts: &mut Vec<HostEntry>, entry: HostEntry) {
    match hosts.iter_mut().find(|h| h.host == entry.host && h.user == entry.user) {
        Some(existing) => {
            existing.slots += entry.slots;
            existing.max_slots = match (existing.max_slots, entry.max_slots) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        None => hosts.push(entry),
    }
}

fn count_value(origin: &str, text: &str, value: &str) -> Result<usize, LaunchError> {
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(syntax(origin, text, "slot count must be a positive integer")),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
}

fn syntax(origin: &str, text: &str, reason: &str) -> LaunchError {
    LaunchError::HostfileSyntax {
        origin: origin.to_string(),
        text: text.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(host: &str, slots: usize) -> (String, usize) {
        (host.to_string(), slots)
    }

    fn summary(hosts: &[HostEntry]) -> Vec<(String, usize)> {
        hosts.iter().map(|h| (h.login(), h.slots)).collect()
    }

    #[test]
    fn open_mpi_dialect_with_comments_and_max_slots() {
        let text = "# cluster\nnode1 slots=4 max_slots=8\n\n  node2   slots=2 # two cores\n";
        let hosts = parse_hostfile(text, "hosts").unwrap();
        assert_eq!(summary(&hosts), vec![entry("node1", 4), entry("node2", 2)]);
        assert_eq!(hosts[0].max_slots, Some(8));
        assert_eq!(hosts[1].origin, "hosts:4");
    }

    #[test]
    fn mpich_and_plain_dialects_and_users() {
        let hosts = parse_hostfile("alice@node1:3\nnode2\nnode2\n", "h").unwrap();
        assert_eq!(summary(&hosts), vec![entry("alice@node1", 3), entry("node2", 2)]);
        assert_eq!(hosts[0].user.as_deref(), Some("alice"));
    }

    #[test]
    fn host_lists() {
        let hosts = parse_host_list("a,b:2,bob@c").unwrap();
        assert_eq!(summary(&hosts), vec![entry("a", 1), entry("b", 2), entry("bob@c", 1)]);
        assert!(parse_host_list("a,,b").is_err());
    }

    #[test]
    fn every_error_names_file_line_and_text() {
        let cases = [
            ("node1 slots=x\n", "hosts:1", "slots=x", "positive integer"),
            ("ok\nnode1 slots=0\n", "hosts:2", "slots=0", "positive integer"),
            ("node1:zero\n", "hosts:1", "node1:zero", "positive integer"),
            ("node1 cores=4\n", "hosts:1", "cores=4", "unknown attribute"),
            ("node1 slots\n", "hosts:1", "slots", "key=value"),
            (
                "node1 slots=2 slots=3\n",
                "hosts:1",
                "node1 slots=2 slots=3",
                "given twice",
            ),
            ("node1:2 slots=3\n", "hosts:1", "node1:2 slots=3", "given twice"),
            (
                "node1 slots=4 max_slots=2\n",
                "hosts:1",
                "node1 slots=4 max_slots=2",
                "max_slots",
            ),
            ("no/de\n", "hosts:1", "no/de", "invalid host name"),
            ("@node\n", "hosts:1", "@node", "invalid user name"),
        ];
        for (text, origin, quoted, reason) in cases {
            let err = parse_hostfile(text, "hosts").unwrap_err().to_string();
            assert!(err.starts_with(origin), "{err}");
            assert!(err.contains(&format!("'{quoted}'")), "{err}");
            assert!(err.contains(reason), "{err}");
        }
        let err = parse_hostfile("# only comments\n", "hosts").unwrap_err().to_string();
        assert_eq!(err, "hosts lists no hosts");
    }

    #[test]
    fn a_missing_file_is_a_read_error() {
        let err = read_hostfile(Path::new("/nonexistent/hosts")).unwrap_err().to_string();
        assert!(err.starts_with("cannot read hostfile /nonexistent/hosts"), "{err}");
    }

    /// Property-based fuzzing: hostfile text and `-H` lists, random or
    /// near a valid file, never panic, and every error names the file's
    /// line. 100 000 cases (`ONESIDE_FUZZ_CASES`).
    #[test]
    fn any_hostfile_text_parses_or_fails_with_a_line_never_panics() {
        use proptest::prelude::*;
        let valid = "alice@node-1:4 max_slots=8\n# comment\nnode-2 slots=2\n10.0.0.1\n";
        let near = (0..valid.len(), "[ -~\\n:@=#,]{0,12}").prop_map(move |(at, insert)| {
            let at = (0..=at).rev().find(|&i| valid.is_char_boundary(i)).unwrap_or(0);
            format!("{}{insert}{}", &valid[..at], &valid[at..])
        });
        let text = prop_oneof![any::<String>(), "[ -~\\n]{0,80}", near];
        crate::fuzz::fuzz(text, |text| {
            if let Err(e) = parse_hostfile(&text, "hosts") {
                let said = e.to_string();
                prop_assert!(said.starts_with("hosts"), "{said}");
            }
            let _ = parse_host_list(&text);
            Ok(())
        });
    }
}
