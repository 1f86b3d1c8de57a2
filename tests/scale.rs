//! A thousand ranks on this one host: wire-up, checked from inside the
//! ranks, and the failure paths at that scale. The jobs run one at a time
//! (a lock), since each alone oversubscribes the machine 500 times.

mod common;
use common::*;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const RANKS: &str = "1024";
static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

fn oneside_files() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("oneside-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_thousand_ranks_hold_every_card_and_leave_no_file() {
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let before = oneside_files();
    let out = rlaunch(&["-n", RANKS, "--oversubscribe", &example("wireup_check"), "shm"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.trim(),
        "wireup_check: 1024 ranks, every card, put and rank in place",
        "{out:?}"
    );
    let left: Vec<String> = oneside_files().difference(&before).cloned().collect();
    assert!(left.is_empty(), "the job left {left:?} in /dev/shm");
}

#[test]
fn a_rank_lost_in_wire_up_among_a_thousand_ends_the_job_naming_it() {
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let out = rlaunch(&["-n", RANKS, "--oversubscribe", &example("faults"), "no-init", "517"]);
    let took = started.elapsed();
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("rank 517 on host localhost (pid "), "{out:?}");
    assert!(out.stderr.contains("exited without calling oneside::init()"), "{out:?}");
    // Starting 1024 ranks takes about 1 s here; the verdict must follow at once.
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

#[test]
fn ctrl_c_among_a_thousand_ranks_leaves_no_process() {
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    ctrl_c_leaves_nothing(&["-n", RANKS, "--oversubscribe", &example("faults"), "sleep"], 1024);
}

#[test]
fn a_job_beyond_the_open_file_limit_says_what_it_needs_before_starting() {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(rlaunch_path());
    command
        .args(["-n", RANKS, "--oversubscribe", &example("faults"), "sleep"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only our struct.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let out = finish(command.spawn().expect("rlaunch starts"));
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("needs about 4160 open files in rlaunch (1024 local ranks x 4"),
        "{out:?}"
    );
    assert!(out.stderr.contains("the hard limit (ulimit -Hn) is 256"), "{out:?}");
    assert!(!out.stdout.contains("ready"), "nothing may start: {out:?}");
}
