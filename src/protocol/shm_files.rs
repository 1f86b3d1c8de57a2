//! The files ranks keep in `/dev/shm`, and their removal once the rank that
//! made them is gone. A rank's heap segments are `oneside-<job>-...`
//! ([`SHM_PREFIX`]); libfabric's shm provider names each process's region
//! `<pid>:...` (16 MiB each in 1.17). A rank removes both when it
//! finalizes; one killed before that leaves them behind. rlaunch (and each
//! host's proxy) removes a job's segments when its ranks are gone, and the
//! regions of every rank that did not end cleanly. A later rank that got
//! a killed rank's pid removes that pid's regions before it makes its own,
//! or shm's `fi_enable` fails with `EBUSY`.

use super::env::SHM_PREFIX;

/// Where the files are.
const SHM_DIR: &str = "/dev/shm";

/// Removes every file in `/dev/shm` whose name starts with `prefix`;
/// returns how many were removed.
fn remove_with_prefix(prefix: &str) -> usize {
    let Ok(dir) = std::fs::read_dir(SHM_DIR) else {
        return 0;
    };
    dir.flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(prefix))
        .filter(|entry| std::fs::remove_file(entry.path()).is_ok())
        .count()
}

/// Removes the heap segments of job `job_id`'s ranks on this host.
pub fn remove_job_segments(job_id: &str) -> usize {
    remove_with_prefix(&segment_prefix(job_id))
}

/// Removes the regions libfabric's shm provider made for process `pid`.
pub fn remove_ofi_shm_regions(pid: u32) -> usize {
    remove_with_prefix(&region_prefix(pid))
}

fn segment_prefix(job_id: &str) -> String {
    format!("{SHM_PREFIX}{job_id}-")
}

fn region_prefix(pid: u32) -> String {
    format!("{pid}:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_prefix_names_that_pid_alone() {
        let prefix = region_prefix(12);
        assert!("12:0:0".starts_with(&prefix));
        assert!(!"123:0:0".starts_with(&prefix));
        assert!(!"112:0:0".starts_with(&prefix));
    }

    #[test]
    fn only_files_with_the_prefix_go() {
        let job = format!("shmfilestest{}", std::process::id());
        let mine = std::path::Path::new(SHM_DIR).join(format!("{}0", segment_prefix(&job)));
        let other = std::path::Path::new(SHM_DIR).join(format!("{}0", segment_prefix(&format!("{job}x"))));
        std::fs::write(&mine, b"").expect("write /dev/shm");
        std::fs::write(&other, b"").expect("write /dev/shm");
        assert_eq!(remove_job_segments(&job), 1);
        assert!(!mine.exists());
        assert!(other.exists(), "job {job}x's segment is not job {job}'s");
        std::fs::remove_file(other).expect("remove");
    }
}
