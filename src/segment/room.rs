//! How much memory this host can still give a growing heap, and which
//! limit says so: the memory the kernel calls available
//! (`MemAvailable`), this process's cgroup (`memory.max` less
//! `memory.current`, each level up to the root), and, for a segment in
//! `/dev/shm`, the room left on that file system.
//!
//! A commit asks here first, because memory a tmpfs file takes past these
//! limits is not refused cleanly: past `MemAvailable` the kernel reclaims
//! and may end some process with the OOM killer. The check is a
//! snapshot: ranks of one host that grow at the same moment each see the
//! same room, so [`MARGIN`] stays free for them and the rest of the host.

use std::path::Path;

/// Bytes left free on top of a commit: 1/32 of the host's memory, at
/// most 256 MiB.
pub fn margin() -> u64 {
    (total_memory() / 32).min(256 << 20)
}

/// What bounds the room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The host's available memory (`MemAvailable` in `/proc/meminfo`).
    Memory,
    /// This process's cgroup memory limit.
    Cgroup,
    /// The room on `/dev/shm` (its `size=` mount option).
    ShmFs,
}

impl Limit {
    /// The limit in a user's words, for messages.
    pub fn words(self) -> &'static str {
        match self {
            Limit::Memory => "memory available on its host (MemAvailable)",
            Limit::Cgroup => "memory left under its cgroup's memory.max",
            Limit::ShmFs => "room left on /dev/shm",
        }
    }

    /// A code for the allocation's vote (`heap::vote`), and back.
    pub fn code(self) -> u64 {
        match self {
            Limit::Memory => 1,
            Limit::Cgroup => 2,
            Limit::ShmFs => 3,
        }
    }

    pub fn from_code(code: u64) -> Option<Limit> {
        match code {
            1 => Some(Limit::Memory),
            2 => Some(Limit::Cgroup),
            3 => Some(Limit::ShmFs),
            _ => None,
        }
    }
}

/// The room left and the limit that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub bytes: u64,
    pub limit: Limit,
}

/// The smallest of the limits that apply; `in_dev_shm` for a segment file
/// in `/dev/shm` (a memfd is not bound by that file system's size).
pub fn left(in_dev_shm: bool) -> Room {
    let mut room = Room {
        bytes: meminfo("MemAvailable:").unwrap_or(u64::MAX),
        limit: Limit::Memory,
    };
    let mut consider = |bytes: Option<u64>, limit| {
        if let Some(bytes) = bytes.filter(|&b| b < room.bytes) {
            room = Room { bytes, limit };
        }
    };
    consider(cgroup_left(), Limit::Cgroup);
    if in_dev_shm {
        consider(fs_left(Path::new("/dev/shm")), Limit::ShmFs);
    }
    room
}

/// The host's memory (`MemTotal`), or 0 if unknown.
pub fn total_memory() -> u64 {
    meminfo("MemTotal:").unwrap_or(0)
}

fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// The least room under `memory.max` of this process's cgroup v2 and its
/// ancestors; `None` without a limit (or without cgroup v2).
fn cgroup_left() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mut dir = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let mut least: Option<u64> = None;
    loop {
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let max = read("memory.max").and_then(|t| t.trim().parse::<u64>().ok());
        let current = read("memory.current").and_then(|t| t.trim().parse::<u64>().ok());
        if let (Some(max), Some(current)) = (max, current) {
            let here = max.saturating_sub(current);
            least = Some(least.map_or(here, |l| l.min(here)));
        }
        if dir == Path::new("/sys/fs/cgroup") || !dir.pop() {
            return least;
        }
    }
}

fn fs_left(path: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer statvfs fills on success.
    let rc = unsafe { libc::statvfs(c.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the buffer.
    let stat = unsafe { stat.assume_init() };
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_has_some_room_and_a_limit_that_names_it() {
        let room = left(true);
        assert!(room.bytes > 0, "{room:?}");
        assert!(total_memory() > 0);
        assert!(margin() <= 256 << 20);
        for limit in [Limit::Memory, Limit::Cgroup, Limit::ShmFs] {
            assert_eq!(Limit::from_code(limit.code()), Some(limit));
        }
        assert_eq!(Limit::from_code(0), None);
    }
}
