//! The symmetric heap grows as the program allocates, under the real
//! `rlaunch` (`examples/grow.rs`): while another thread's atomics flow, at
//! 1, 2 and 4 ranks, over every transport; under `--debug`; against a cap;
//! through a simulated failure to commit; and a job killed while its heap
//! grows leaves no file in `/dev/shm` and gives its memory back.

mod common;
use common::*;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One test at a time: the kill test reads the host's shared memory.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn grow_args() -> Vec<&'static str> {
    vec!["8", "64"]
}

#[test]
fn the_heap_grows_while_atomics_flow_at_every_size() {
    let _one = one_at_a_time();
    for (transport, _) in transports() {
        for n in [1, 2, 4] {
            let n_text = n.to_string();
            let mut args = vec!["-n", &n_text, "--transport", transport];
            let exe = example("grow");
            args.push(&exe);
            args.extend(grow_args());
            let out = rlaunch(&args);
            assert_eq!(out.code, Some(0), "n={n} {transport}: {out:?}");
            assert_eq!(
                out.stdout.matches(" ok: heap KiB by step ").count(),
                n,
                "n={n} {transport}: {out:?}"
            );
            // 63 MiB at its peak, then almost nothing once freed, unless
            // a NIC registered it (`nic_keeps_heap`): then all of it.
            for line in out.lines() {
                let kib = |after: &str| -> usize {
                    let at = line.find(after).unwrap() + after.len();
                    line[at..].split_whitespace().next().unwrap().parse().unwrap()
                };
                let (before, freed) = (kib("; "), kib("before freeing, "));
                let kept = match nic_keeps_heap(transport) {
                    true => freed == before,
                    false => freed < 4096,
                };
                assert!(before >= 63 << 10 && kept, "n={n} {transport}: {line}");
            }
        }
    }
}

#[test]
fn the_heap_grows_under_the_checking_mode() {
    let _one = one_at_a_time();
    for (transport, _) in transports() {
        let mut args = vec!["-n", "2", "--debug", "--transport", transport];
        let exe = example("grow");
        args.push(&exe);
        args.extend(grow_args());
        let out = rlaunch(&args);
        assert_eq!(out.code, Some(0), "{transport}: {out:?}");
        assert_eq!(out.stdout.matches(" ok: ").count(), 2, "{transport}: {out:?}");
    }
}

#[test]
fn a_cap_refuses_with_a_message_that_says_how_to_raise_it() {
    let _one = one_at_a_time();
    let out = rlaunch(&["-n", "2", "--heap-size", "16M", &example("grow"), "cap", "100"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    for rank in 0..2 {
        let line = format!(
            "grow: rank {rank} refused: rank {rank}: symmetric heap full: asked for 16777316 bytes (16.0 MiB); 0 bytes of its 16 MiB cap are in use"
        );
        assert!(out.stdout.contains(&line), "{out:?}");
    }
    assert!(
        out.stdout
            .contains("raise it, or unset it and the heap grows as far as memory allows"),
        "{out:?}"
    );
    // Without a cap, the reservation is what bounds the heap, and the
    // message says so.
    let out = rlaunch(&["-n", "2", &example("grow"), "cap", "1"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("reservation are in use"), "{out:?}");
    assert!(
        out.stdout.contains("set a larger cap with ONESIDE_HEAP_SIZE"),
        "{out:?}"
    );
}

#[test]
fn a_failed_commit_fails_the_allocation_on_every_rank_and_the_job_goes_on() {
    let _one = one_at_a_time();
    for (transport, _) in transports() {
        let mut command = launcher(rlaunch_path());
        command
            .args(["-n", "4", "--transport", transport])
            .arg(example("grow"))
            .arg("fault")
            .env("ONESIDE_HEAP_FAULT", "commit:2");
        let out = finish(start_piped(command));
        assert_eq!(out.code, Some(0), "{transport}: {out:?}");
        for rank in 0..4 {
            assert!(
                out.stdout.contains(&format!(
                    "grow: rank {rank} refused: rank {rank}: symmetric heap cannot grow: asking for 67108864 bytes (64 MiB) needs "
                )),
                "{transport}: {out:?}"
            );
            assert!(
                out.stdout.contains(&format!(
                    "grow: rank {rank} fault: failed true, heap unchanged true, then allocated true"
                )),
                "{transport}: {out:?}"
            );
        }
        assert_eq!(
            out.stdout
                .matches("and rank 2 has 0 bytes of memory available on its host (MemAvailable) (simulated by ONESIDE_HEAP_FAULT)")
                .count(),
            4,
            "{transport}: {out:?}"
        );
    }
}

fn shmem_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with("Shmem:")).unwrap();
    line[6..].trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024
}

#[test]
fn a_job_killed_while_its_heap_grows_leaves_no_file_and_gives_its_memory_back() {
    let _one = one_at_a_time();
    let before = shmem_bytes();
    // Four ranks grow to 1 GiB each; the launcher is killed on the way.
    let mut child = spawn_rlaunch(&["-n", "4", &example("grow"), "12", "512"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while shmem_bytes() < before + (512 << 20) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let grown = shmem_bytes();
    assert!(grown >= before + (512 << 20), "the heaps grew: {before} -> {grown}");
    send_signal(&child, libc::SIGKILL);
    let _ = child.wait();
    // The ranks see their launcher gone and exit; their memory goes with them.
    let deadline = Instant::now() + Duration::from_secs(30);
    while shmem_bytes() > before + (256 << 20) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = shmem_bytes();
    assert!(
        after <= before + (256 << 20),
        "memory back: {before} before, {grown} grown, {after} after"
    );
    // Other tests' segments live only through their init: wait them out.
    let ours = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("oneside-"))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ours().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ours().is_empty(), "left in /dev/shm: {:?}", ours());
}
