//! Failure handling end to end: a failing or killed rank, Ctrl-C, SIGKILL of
//! rlaunch, timeouts, ranks that skip init, bad input, bad accesses, and
//! strangers at the bootstrap port. Every case must end promptly with a
//! clear message and leave no process or shared-memory file behind.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn a_failing_rank_aborts_the_job_with_its_exit_code() {
    let out = rlaunch(&["-n", "4", &example("faults"), "exit", "2", "3"]);
    assert_eq!(out.code, Some(3), "{out:?}");
    let reports: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(" exited with code "))
        .collect();
    assert_eq!(reports.len(), 1, "one report line per failed rank: {out:?}");
    assert!(
        reports[0].starts_with("rlaunch: rank 2 on host localhost (pid "),
        "{reports:?}"
    );
    assert!(reports[0].ends_with(") exited with code 3"), "{reports:?}");
}

#[test]
fn a_rank_killed_by_a_signal_gives_128_plus_the_signal() {
    let out = rlaunch(&["-n", "3", &example("faults"), "signal", "1"]);
    assert_eq!(out.code, Some(128 + 9), "{out:?}");
    assert!(out.stderr.contains("rlaunch: rank 1 on host localhost"), "{out:?}");
    assert!(out.stderr.contains("was killed by signal 9 (SIGKILL)"), "{out:?}");
}

#[test]
fn a_rank_stopped_by_sigstop_while_the_others_wait_ends_the_job_named() {
    for (transport, _) in transports() {
        let start = std::time::Instant::now();
        let out = rlaunch(&["-n", "3", "--transport", transport, &example("faults"), "stop", "2"]);
        let took = start.elapsed();
        assert_ne!(out.code, Some(0), "{out:?}");
        assert!(took < Duration::from_secs(8), "{took:?}: {out:?}");
        assert!(
            out.stderr.contains("rlaunch: rank 2 on host ") && out.stderr.contains("is stopped by a signal"),
            "{out:?}"
        );
        let pid: u32 = field(out.stdout.lines().find(|l| l.contains("stopping")).unwrap(), "pid")
            .parse()
            .unwrap();
        assert!(process_gone(pid, Duration::from_secs(5)), "the stopped rank was killed");
    }
}

#[test]
fn ctrl_c_tears_down_every_rank_and_shared_memory_file() {
    // Rank 1 never calls init, so ranks 0 and 2 sit in the bootstrap with
    // their segment files still linked: the worst moment to be interrupted.
    let mut child = spawn_rlaunch(&["-n", "3", &example("faults"), "stall-init", "1"]);
    let (stalled, _) = wait_for_lines(&mut child, "stalling", 1);
    let job = field(&stalled[0], "job").to_string();
    let pid: u32 = field(&stalled[0], "pid").parse().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while shm_files(&job).len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(shm_files(&job).len(), 2, "ranks 0 and 2 created their segments");
    send_signal(&child, libc::SIGINT);
    let out = finish(child);
    assert_eq!(out.code, Some(130), "{out:?}");
    assert!(
        out.stderr.contains("rlaunch: interrupted; stopping all ranks"),
        "{out:?}"
    );
    assert!(process_gone(pid, Duration::from_secs(5)));
    assert_eq!(
        shm_files(&job),
        Vec::<String>::new(),
        "no shared-memory file may remain"
    );
}

#[test]
fn ctrl_c_after_init_leaves_no_process() {
    ctrl_c_leaves_nothing(&["-n", "3", &example("faults"), "sleep"], 3);
}

#[test]
fn ranks_die_with_a_sigkilled_launcher() {
    let mut child = spawn_rlaunch(&["-n", "2", &example("faults"), "sleep"]);
    let (ready, _) = wait_for_lines(&mut child, "ready", 2);
    send_signal(&child, libc::SIGKILL);
    let _ = child.wait();
    for line in &ready {
        let pid: u32 = field(line, "pid").parse().unwrap();
        assert!(
            process_gone(pid, Duration::from_secs(5)),
            "rank pid {pid} outlived rlaunch"
        );
    }
}

#[test]
fn timeout_kills_the_job_and_says_so() {
    let out = rlaunch(&["-n", "2", "--timeout", "1", &example("faults"), "sleep"]);
    assert_eq!(out.code, Some(124), "{out:?}");
    assert!(
        out.stderr.contains("rlaunch: job timed out after 1s (--timeout 1)"),
        "{out:?}"
    );
}

#[test]
fn a_rank_that_never_calls_init_is_named_when_bootstrap_times_out() {
    let out = rlaunch(&[
        "-n",
        "3",
        "--bootstrap-timeout",
        "2",
        &example("faults"),
        "stall-init",
        "1",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("bootstrap timed out after 2s: never called oneside::init(): rank 1 on host localhost"),
        "{out:?}"
    );
}

#[test]
fn a_rank_that_exits_0_without_init_does_not_hang_the_job() {
    let out = rlaunch(&["-n", "3", &example("faults"), "no-init", "1"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("rank 1 on host localhost"), "{out:?}");
    assert!(
        out.stderr.contains("exited without calling oneside::init(), but rank"),
        "{out:?}"
    );
}

#[test]
fn a_rank_that_exits_without_finalizing_is_reported() {
    let out = rlaunch(&["-n", "2", &example("faults"), "leak"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("rank 1 on host localhost"), "{out:?}");
    assert!(out.stderr.contains("without finalizing"), "{out:?}");
}

#[test]
fn bad_accesses_are_errors_with_numbers_and_touch_nothing() {
    let cases = [
        (
            "oob-put",
            "put of 8 element(s) at index 10 is out of bounds for a symmetric object of 16 element(s)",
        ),
        (
            "bad-rank",
            "put targets rank 2, but the job has 2 ranks (0 to 1); use a target from 0 to 1 (World::size() - 1)",
        ),
        (
            "oob-atomic",
            "atomic_fetch_add of 1 element(s) at index 16 is out of bounds for a symmetric object of 16 element(s)",
        ),
        (
            "bad-rank-atomic",
            "atomic_compare_swap targets rank 2, but the job has 2 ranks (0 to 1)",
        ),
        ("exhaust", "symmetric heap full: asked for "),
    ];
    for (mode, message) in cases {
        let out = rlaunch(&["-n", "2", &example("faults"), mode]);
        assert_eq!(out.code, Some(0), "{mode}: {out:?}");
        assert!(
            out.stdout.contains(&format!("{mode}: refused: rank 0: {message}")),
            "{mode}: {out:?}"
        );
        assert_eq!(out.stdout.matches("object intact: true").count(), 2, "{mode}: {out:?}");
    }
}

#[test]
fn bad_input_is_one_clear_line_and_a_nonzero_exit() {
    let dir = std::env::temp_dir().join(format!("oneside-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("hosts");
    std::fs::write(&bad, "# fine\nlocalhost slots=2\nlocalhost slots=two\n").unwrap();
    let bad = bad.display().to_string();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["-f", &bad, "sh"],
            format!("rlaunch: error: {bad}:3: slot count must be a positive integer: 'slots=two'"),
        ),
        (
            vec!["-f", "/nonexistent/hosts", "sh"],
            "rlaunch: error: cannot read hostfile /nonexistent/hosts: No such file".into(),
        ),
        (vec!["-n", "0", "sh"], "rlaunch: error: -n must be at least 1".into()),
        (
            vec!["-n", "2", "./no-such-program"],
            "rlaunch: error: cannot run './no-such-program'".into(),
        ),
        (
            vec!["-n", "2", "no-such-program-in-path"],
            "rlaunch: error: cannot run 'no-such-program-in-path': no such executable in PATH".into(),
        ),
        (
            vec!["-n", "3", "-H", "localhost:2", "sh"],
            "rlaunch: error: requested 3 ranks but -H provides only 2 slot(s) (localhost:2); lower -n".into(),
        ),
        (
            vec!["-n", "1", "-H", "node-far-away", "sh"],
            "rlaunch: error: host 'node-far-away' (-H) is not a name this machine can resolve".into(),
        ),
    ];
    for (args, expected) in cases {
        let out = rlaunch_within_slots(&args);
        assert_eq!(out.code, Some(1), "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: exactly one line: {out:?}");
        assert!(out.stderr.starts_with(&expected), "{args:?}: {out:?}");
        assert!(!out.stderr.contains("panicked"), "{out:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// One rule for slots, with or without a hostfile (Open MPI's): a host has
/// the slots its line gives, this host without one has one per CPU rlaunch
/// may use, and more ranks than slots are refused with the same sentence
/// unless `--oversubscribe` or `RLAUNCH_OVERSUBSCRIBE=1` allows them.
#[test]
fn more_ranks_than_slots_get_one_answer_with_or_without_a_hostfile() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let cpus = cpus.min(
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let list = s
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
                    .trim()
                    .to_string();
                Some(
                    list.split(',')
                        .map(|r| match r.split_once('-') {
                            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
                            None => 1,
                        })
                        .sum(),
                )
            })
            .unwrap_or(cpus),
    );
    let (n, slots) = ((cpus + 1).to_string(), cpus.to_string());
    let hosts = format!("localhost:{slots}");
    let no_hostfile = rlaunch_within_slots(&["-n", &n, "--dry-run", "sh"]);
    assert_eq!(no_hostfile.code, Some(1), "{no_hostfile:?}");
    assert_eq!(
        no_hostfile.stderr.trim_end(),
        format!(
            "rlaunch: error: requested {n} ranks but this host (no hostfile or -H: one slot per CPU rlaunch may use) \
             provides only {slots} slot(s) (localhost:{slots}); lower -n, add slots (-H localhost:{n}), or pass \
             --oversubscribe (or set RLAUNCH_OVERSUBSCRIBE=1) to let ranks share CPUs"
        )
    );
    let with_hosts = rlaunch_within_slots(&["-n", &n, "-H", &hosts, "--dry-run", "sh"]);
    assert_eq!(with_hosts.code, Some(1), "{with_hosts:?}");
    assert!(
        with_hosts.stderr.starts_with(&format!(
            "rlaunch: error: requested {n} ranks but -H provides only {slots} slot(s) ({hosts}); lower -n"
        )),
        "{with_hosts:?}"
    );
    // Within the slots, and past them when allowed, either way.
    let fits = rlaunch_within_slots(&["-n", &slots, "--dry-run", "sh"]);
    assert_eq!(fits.code, Some(0), "{fits:?}");
    assert!(fits.stdout.contains("one slot per CPU, bound to CPU"), "{fits:?}");
    for args in [vec!["--oversubscribe"], vec!["--oversubscribe", "-H", &hosts]] {
        let args: Vec<&str> = args.into_iter().chain(["-n", &n, "--dry-run", "sh"]).collect();
        let out = rlaunch_within_slots(&args);
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
        assert!(out.stdout.contains("not bound: this host's"), "{args:?}: {out:?}");
    }
    let by_env = rlaunch_with_env(&["-n", &n, "--dry-run", "sh"], &[("RLAUNCH_OVERSUBSCRIBE", "1")]);
    assert_eq!(by_env.code, Some(0), "{by_env:?}");
    // A real job past the slots starts only when allowed.
    let refused = rlaunch_within_slots(&["-n", &n, &example("hello_put")]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(refused.stdout.is_empty(), "nothing started: {refused:?}");
}

#[test]
fn strangers_at_the_bootstrap_port_are_dropped_untrusted() {
    use oneside::protocol::wire::{recv_blocking, send_blocking, Msg, MAX_FRAME};
    use std::net::TcpStream;
    let mut child = spawn_rlaunch(&[
        "-n",
        "2",
        "--bootstrap-timeout",
        "30",
        &example("faults"),
        "stall-init",
        "1",
    ]);
    let (stalled, _) = wait_for_lines(&mut child, "stalling", 1);
    let addr = field(&stalled[0], "bootstrap").to_string();

    // A forged proof: the launcher closes the connection without a Confirm.
    let mut stranger = TcpStream::connect(&addr).unwrap();
    stranger.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(matches!(
        recv_blocking(&mut stranger, MAX_FRAME).unwrap(),
        Msg::Challenge { .. }
    ));
    send_blocking(
        &mut stranger,
        &Msg::Response {
            nonce: [1; 32],
            tag: [2; 32],
        },
    )
    .unwrap();
    assert!(
        recv_blocking(&mut stranger, MAX_FRAME).is_err(),
        "a stranger must get no Confirm"
    );

    // Skipping the handshake and registering as rank 1 does not work either.
    let mut impostor = TcpStream::connect(&addr).unwrap();
    impostor.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _challenge = recv_blocking(&mut impostor, MAX_FRAME).unwrap();
    let register = Msg::Register {
        rank: 1,
        size: 2,
        card: vec![0; 16],
        host: "x".into(),
        pid: 1,
    };
    let _ = send_blocking(&mut impostor, &register);
    assert!(
        recv_blocking(&mut impostor, MAX_FRAME).is_err(),
        "an impostor must learn nothing"
    );

    // The job is unharmed: it still waits for the real rank 1.
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the job must survive strangers");
    send_signal(&child, libc::SIGINT);
    assert_eq!(finish(child).code, Some(130));
}

#[test]
fn a_peer_that_dies_makes_the_next_operation_fail_naming_it() {
    let out = rlaunch(&["-n", "2", "--transport", "tcp", &example("faults"), "peer-dies"]);
    assert_eq!(out.code, Some(137), "rank 1's death decides the exit code: {out:?}");
    assert!(out.stderr.contains("rlaunch: rank 1 on host localhost"), "{out:?}");
    assert!(
        out.stderr.contains("faults: rank 0: get with rank 1 failed: "),
        "{out:?}"
    );
    assert!(out.stderr.contains("(did rank 1 exit or crash?)"), "{out:?}");
    assert!(!out.stdout.contains("still answers"), "{out:?}");
}

#[test]
fn a_peer_lost_during_an_atomic_is_named() {
    let out = rlaunch(&["-n", "2", "--transport", "tcp", &example("faults"), "peer-dies", "fadd"]);
    assert_eq!(out.code, Some(137), "rank 1's death decides the exit code: {out:?}");
    assert!(
        out.stderr
            .contains("faults: rank 0: atomic_fetch_add with rank 1 failed: "),
        "{out:?}"
    );
    assert!(out.stderr.contains("(did rank 1 exit or crash?)"), "{out:?}");
}

#[test]
fn strangers_at_a_ranks_tcp_port_can_neither_read_nor_write() {
    use oneside::protocol::wire::{recv_blocking, send_blocking, Msg, MAX_FRAME};
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let mut child = spawn_rlaunch(&["-n", "2", "--transport", "tcp", &example("faults"), "guard", "3"]);
    let (ready, rest) = wait_for_lines(&mut child, "ready", 2);
    for line in &ready {
        let addr = field(line, "tcp");
        // A raw PUT header of 16 bytes of 0xff at offset 0, without a handshake.
        let mut raw = TcpStream::connect(addr).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut put = vec![1, 0, 0, 0, 16, 0, 0, 0];
        put.extend_from_slice(&[0; 16]);
        put.extend_from_slice(&[0xff; 16]);
        let _ = raw.write_all(&put);
        let mut sink = Vec::new();
        let _ = raw.read_to_end(&mut sink);
        assert!(
            sink.len() < 200,
            "only a challenge may come back, got {} bytes",
            sink.len()
        );

        // A forged handshake gets no Confirm.
        let mut forged = TcpStream::connect(addr).unwrap();
        forged.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert!(matches!(
            recv_blocking(&mut forged, MAX_FRAME).unwrap(),
            Msg::Challenge { .. }
        ));
        send_blocking(
            &mut forged,
            &Msg::Response {
                nonce: [3; 32],
                tag: [4; 32],
            },
        )
        .unwrap();
        assert!(recv_blocking(&mut forged, MAX_FRAME).is_err());
    }
    let out = finish(child);
    assert_eq!(out.code, Some(0), "{out:?}");
    let stdout = rest.rest();
    assert_eq!(
        stdout.matches("object intact: true").count(),
        2,
        "memory must be untouched: {stdout}"
    );
}

/// On a machine without libibverbs (a file that does not exist stands in
/// for it), `--transport verbs` is one clear error per rank and the doctor
/// says so; `auto` runs as ever, over shared memory.
#[test]
fn without_libibverbs_verbs_is_a_clear_error_and_auto_still_runs() {
    let missing = [("ONESIDE_VERBS_LIBRARY", "libibverbs-not-here.so.1")];
    let out = rlaunch_with_env(&["-n", "2", "--transport", "verbs", &example("hello_put")], &missing);
    assert_eq!(out.code, Some(1), "{out:?}");
    // Both ranks fail the same way; whichever reports first is named.
    let said = |rank: u32| {
        out.stderr.contains(&format!(
            "rank {rank}: cannot use RDMA: not found (libibverbs-not-here.so.1"
        ))
    };
    assert!(said(0) || said(1), "{out:?}");
    let out = rlaunch_with_env(&["-n", "2", &example("hello_put")], &missing);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = rlaunch_with_env(&["--check", "-H", "localhost"], &missing);
    assert!(out.stdout.contains("localhost: libibverbs: not found ("), "{out:?}");
}

/// A panic in one of oneside's own threads (here the TCP progress
/// engine, every rank's) ends the rank with a message naming it and the
/// thread, and the job at once with that rank's exit code (70), rather
/// than leaving the thread dead and the peers waiting.
#[test]
fn a_panic_in_a_service_thread_ends_the_job_naming_the_rank() {
    let started = std::time::Instant::now();
    let out = rlaunch_with_env(
        &["-n", "2", "--transport", "tcp", &example("hello_put")],
        &[("ONESIDE_TEST_PANIC", "TCP progress")],
    );
    assert_eq!(out.code, Some(70), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{out:?}");
    assert!(
        out.stderr
            .contains(": the TCP progress thread failed (ONESIDE_TEST_PANIC=TCP progress)"),
        "{out:?}"
    );
    assert!(out.stderr.contains("oneside: rank "), "{out:?}");
    assert!(!out.stdout.contains("received"), "{out:?}");
}

/// Variable `name` of process `pid`'s environment (as only its user can
/// read it).
fn env_of(pid: &str, name: &str) -> String {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    environ
        .split(|&b| b == 0)
        .find_map(|v| v.strip_prefix(format!("{name}=").as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_else(|| panic!("{name} in the environment of {pid}"))
}

/// The job's own key (read from a rank's environment, which only the
/// job's user can) gets a Confirm at a rank's TCP port, so what follows
/// is refused for its proof and not for a broken exchange: that same
/// proof replayed on a new connection, and a proof made with another key,
/// get no Confirm, and the ranks' memory stays untouched.
#[test]
fn a_replayed_or_wrong_key_handshake_at_a_ranks_tcp_port_is_refused() {
    use oneside::protocol::auth::Connector;
    use oneside::protocol::wire::{recv_blocking, send_blocking, MAX_FRAME};
    use std::net::TcpStream;
    let mut child = spawn_rlaunch(&["-n", "2", "--transport", "tcp", &example("faults"), "guard", "3"]);
    let (ready, rest) = wait_for_lines(&mut child, "ready", 2);
    for line in &ready {
        let (pid, addr) = (field(line, "pid"), field(line, "tcp"));
        let hex = env_of(pid, "ONESIDE_JOB_SECRET");
        let secret: Vec<u8> = hex
            .as_bytes()
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect();
        let connect = || {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let challenge = recv_blocking(&mut stream, MAX_FRAME).unwrap();
            (stream, challenge)
        };

        let (mut honest, challenge) = connect();
        let (connector, proof) = Connector::respond(&secret, &challenge).unwrap();
        send_blocking(&mut honest, &proof).unwrap();
        let confirm = recv_blocking(&mut honest, MAX_FRAME).expect("the real key is confirmed");
        connector.finish(&secret, &confirm).expect("by the rank itself");
        drop(honest);

        let (mut replay, _) = connect();
        send_blocking(&mut replay, &proof).unwrap();
        assert!(
            recv_blocking(&mut replay, MAX_FRAME).is_err(),
            "a replayed proof must get no Confirm"
        );

        let (mut stranger, challenge) = connect();
        let (_, wrong) = Connector::respond(&[7; 32], &challenge).unwrap();
        send_blocking(&mut stranger, &wrong).unwrap();
        assert!(
            recv_blocking(&mut stranger, MAX_FRAME).is_err(),
            "another key must get no Confirm"
        );
    }
    let out = finish(child);
    assert_eq!(out.code, Some(0), "{out:?}");
    let stdout = rest.rest();
    assert_eq!(stdout.matches("object intact: true").count(), 2, "{stdout}");
}

/// rlaunch's PMI-1 port (for the program's own MPI) hangs up on a
/// stranger: a garbage line, a bare rank as `pmiid`, an id made with
/// another key, a barrier, put or get without a claim, and the real id
/// presented a second time; the real id
/// (read from a rank's environment, as only the job's user can) is
/// answered, so the others were refused for their id. The job goes on.
#[test]
fn strangers_at_the_mpi_pmi_port_are_hung_up_on() {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpStream;
    let mut child = spawn_rlaunch(&["-n", "2", "--transport", "tcp", &example("faults"), "guard", "3"]);
    let (ready, rest) = wait_for_lines(&mut child, "ready", 2);
    let var = |name: &str| env_of(field(&ready[0], "pid"), name);
    let (port, id): (String, u64) = (var("PMI_PORT"), var("PMI_ID").parse().unwrap());
    // The first line the server answers `line` with, or "" when it hangs up.
    let first_reply = |line: &str| {
        let mut stream = TcpStream::connect(&port).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        stream.write_all(line.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut reply = String::new();
        let _ = reader.read_line(&mut reply);
        (stream, reply)
    };
    let rank = id % 2;
    for stranger in [
        "\u{1}\u{7f}garbage\n".to_string(),
        format!("cmd=initack pmiid={rank}\n"),
        format!("cmd=initack pmiid={}\n", id + 2),
        "cmd=barrier_in\n".to_string(),
        "cmd=put kvsname=x key=k value=v\n".to_string(),
        "cmd=get kvsname=x key=PMI_process_mapping\n".to_string(),
    ] {
        assert_eq!(first_reply(&stranger).1, "", "{stranger:?} must be hung up on");
    }
    let (_honest, reply) = first_reply(&format!("cmd=initack pmiid={id}\n"));
    assert_eq!(reply, "cmd=initack\n", "the rank's own id is answered");
    let (_, again) = first_reply(&format!("cmd=initack pmiid={id}\n"));
    assert_eq!(again, "", "an id already claimed is refused");
    let out = finish(child);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(rest.rest().matches("object intact: true").count(), 2);
}

/// A misspelt host in a hostfile is named with its `file:line` and the
/// name it likely meant, not answered with advice about addresses; and
/// `--check` reports it in its own row and checks the other hosts.
#[test]
fn a_misspelt_host_is_named_with_its_line_and_a_likely_fix() {
    let dir = std::env::temp_dir().join(format!("oneside-typo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "localhost slots=1\nlocalhots slots=1\n").unwrap();
    let hosts = hosts.display().to_string();
    let said = format!("host 'localhots' ({hosts}:2) is not a name this machine can resolve");
    let out = rlaunch(&["-n", "2", "-f", &hosts, &example("hello_put")]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains(&said), "{out:?}");
    assert!(out.stderr.contains("did you mean 'localhost'?"), "{out:?}");
    assert!(!out.stderr.contains("--bootstrap-addr"), "{out:?}");
    let out = rlaunch(&["--check", "-f", &hosts]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let row = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("localhost ").contains(" ok "), "{out:?}");
    assert!(row("localhots ").contains("FAILED"), "{out:?}");
    assert!(out.stdout.contains(&format!("  localhots: {said}")), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Rust rank that dies of a fault says where (the program's frame with
/// file:line), as rlaunch's line does; a stack overflow is called one.
#[test]
fn a_rust_rank_that_faults_says_where() {
    let out = rlaunch(&["-n", "2", &example("faults"), "segv", "1"]);
    assert_eq!(out.code, Some(128 + 11), "{out:?}");
    // The faulting function, or (optimized, where its frame is a leaf
    // the symbolizer misses) the line that called it.
    let said = "died of SIGSEGV (address 0x0 is not mapped) in faults::";
    assert!(out.stderr.contains("oneside: rank 1 (pid "), "{out:?}");
    assert!(
        out.stderr.contains(said) && out.stderr.contains("examples/faults.rs:"),
        "{out:?}"
    );
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("rlaunch: rank 1 "))
        .unwrap_or("");
    assert!(
        line.contains("was killed by signal 11 (SIGSEGV) in faults::"),
        "{out:?}"
    );
    assert!(line.contains("examples/faults.rs:"), "{out:?}");
    let out = rlaunch(&["-n", "2", &example("faults"), "overflow", "1"]);
    assert_eq!(out.code, Some(128 + 11), "{out:?}");
    assert!(
        out.stderr.contains("died of SIGSEGV (stack overflow at address 0x"),
        "{out:?}"
    );
    assert!(out.stderr.contains(" in faults::recurse at "), "{out:?}");
}
