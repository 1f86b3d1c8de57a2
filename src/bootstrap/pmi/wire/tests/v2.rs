//! PMI-2 as Slurm's `mpi/pmi2` agent speaks it: the bytes, the all-gather,
//! errors, time-outs, and the environment that hands the connection over.

use super::*;

#[test]
fn wire_bytes_are_slurms() {
    let (pmi, server) = single(Quirks::default(), LONG);
    let mut pmi = pmi.unwrap();
    pmi.put("oneside-3-c0", "4a5f00ff").unwrap();
    assert_eq!(
        pmi.get(None, "oneside-3-c0").unwrap(),
        None,
        "own puts are invisible before the fence"
    );
    pmi.fence().unwrap();
    assert_eq!(pmi.get(None, "oneside-3-c0").unwrap().as_deref(), Some("4a5f00ff"));
    assert_eq!(pmi.get(Some(0), "nobody-put-this").unwrap(), None);
    pmi.finalize().unwrap();
    let log = server.join().unwrap();
    assert_eq!(
        log,
        [
            "cmd=init pmi_version=2 pmi_subversion=0\n",
            "54    cmd=fullinit;pmijobid=1234.0;pmirank=0;threaded=FALSE;",
            "14    cmd=job-getid;",
            "44    cmd=kvs-put;key=oneside-3-c0;value=4a5f00ff;",
            "51    cmd=kvs-get;jobid=1234.0;srcid=-1;key=oneside-3-c0;",
            "14    cmd=kvs-fence;",
            "51    cmd=kvs-get;jobid=1234.0;srcid=-1;key=oneside-3-c0;",
            "53    cmd=kvs-get;jobid=1234.0;srcid=0;key=nobody-put-this;",
            "13    cmd=finalize;",
        ]
    );
}

#[test]
fn allgather_across_three_ranks_twice_with_chunking() {
    let (clients, servers) = fake_step(3, Quirks::default());
    // Epoch 0: small cards. Epoch 1: exactly one chunk, three chunks, empty.
    let cards = |epoch: usize, rank: usize| -> Vec<u8> {
        match (epoch, rank) {
            (0, r) => vec![r as u8; 5 + r],
            (1, 0) => vec![0xa0; CHUNK / 2],
            (1, 1) => (0..1500).map(|i| i as u8).collect(),
            _ => Vec::new(),
        }
    };
    let ranks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            thread::spawn(move || {
                let mut pmi = Pmi::wire(connect(stream, rank, 3, LONG).unwrap());
                assert_eq!((pmi.rank(), pmi.size()), (rank, 3));
                let first = pmi.allgather(&cards(0, rank)).unwrap();
                let second = pmi.allgather(&cards(1, rank)).unwrap();
                pmi.farewell().unwrap();
                (first, second)
            })
        })
        .collect();
    for handle in ranks {
        let (first, second) = handle.join().unwrap();
        assert_eq!(first, (0..3).map(|r| cards(0, r)).collect::<Vec<_>>());
        assert_eq!(second, (0..3).map(|r| cards(1, r)).collect::<Vec<_>>());
    }
    let logs: Vec<Vec<String>> = servers.into_iter().map(|s| s.join().unwrap()).collect();
    let puts = |rank: usize, prefix: &str| logs[rank].iter().filter(|l| l.contains(prefix)).count();
    assert_eq!(
        puts(0, "cmd=kvs-put;key=oneside-1-0-"),
        2,
        "500 bytes = 1000 hex = one chunk + count"
    );
    assert_eq!(
        puts(1, "cmd=kvs-put;key=oneside-1-1-"),
        4,
        "3000 hex = three chunks + count"
    );
    assert!(logs[1].iter().any(|l| l.contains("key=oneside-1-1-n;value=3;")));
    assert!(logs[2].iter().any(|l| l.contains("key=oneside-1-2-n;value=0;")));
    assert!(logs.iter().flatten().all(|l| l.len() < 6 + 30 + MAX_VALUE));
    for log in &logs {
        assert_eq!(
            log.iter().filter(|l| l.ends_with("cmd=kvs-fence;")).count(),
            3,
            "one fence per allgather, and the farewell's"
        );
    }
}

#[test]
fn rc_error_names_the_step_and_the_servers_errmsg() {
    let q = Quirks {
        reply: Some((
            "kvs-fence",
            "cmd=kvs-fence-response;rc=14;errmsg=failed to send temp kvs to srun_ retried 5 times;",
        )),
        ..Quirks::default()
    };
    let (pmi, server) = single(q, LONG);
    let mut pmi = Pmi::wire(pmi.unwrap());
    let err = pmi.allgather(b"card").unwrap_err();
    assert!(
        matches!(
            err,
            Error::Pmi {
                rank: Some(0),
                step: "kvs-fence",
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    for part in [
        "rank 0",
        "kvs-fence",
        "rc=14",
        "PMI2_ERR_OTHER",
        "retried 5 times",
        "mpi/pmi2",
        "PMI-2 server on PMI_FD=test",
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    drop(pmi);
    server.join().unwrap();
}

#[test]
fn a_server_that_never_replies_times_out() {
    let start = Instant::now();
    let (pmi, server) = single(
        Quirks {
            silent: Some("init"),
            ..Quirks::default()
        },
        SHORT,
    );
    let err = pmi.err().expect("no reply must be an error");
    assert!(matches!(err, Error::Pmi { step: "init", .. }), "{err:?}");
    assert!(err.to_string().contains("no reply within 200ms"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
    server.join().unwrap();
}

#[test]
fn an_unanswered_fence_times_out() {
    let (pmi, server) = single(
        Quirks {
            silent: Some("kvs-fence"),
            ..Quirks::default()
        },
        SHORT,
    );
    let err = Pmi::wire(pmi.unwrap()).allgather(b"x").unwrap_err();
    assert!(matches!(err, Error::Pmi { step: "kvs-fence", .. }), "{err:?}");
    assert!(err.to_string().contains("some rank has not reached the fence"), "{err}");
    server.join().unwrap();
}

#[test]
fn fullinit_must_agree_with_the_environment() {
    let (mut clients, mut servers) = fake_step(1, Quirks::default());
    let err = connect(clients.pop().unwrap(), 1, 2, LONG).err().unwrap();
    assert!(matches!(err, Error::Pmi { step: "fullinit", .. }), "{err:?}");
    assert!(
        err.to_string().contains("rank 0 of 1, but PMI_RANK=1 and PMI_SIZE=2"),
        "{err}"
    );
    servers.pop().unwrap().join().unwrap();
}

#[test]
fn right_justified_headers_are_read_too() {
    let (pmi, server) = single(
        Quirks {
            right_justified: true,
            ..Quirks::default()
        },
        LONG,
    );
    let mut pmi = Pmi::wire(pmi.unwrap());
    assert_eq!(pmi.allgather(&[1, 2, 3]).unwrap(), [vec![1, 2, 3]]);
    pmi.farewell().unwrap();
    server.join().unwrap();
}

#[test]
fn bad_keys_and_values_are_refused_before_sending() {
    let (pmi, server) = single(Quirks::default(), LONG);
    let mut pmi = pmi.unwrap();
    for (key, value) in [
        ("k", "a;b"),
        ("k", "line\n"),
        ("has space", "v"),
        (&*"k".repeat(65), "v"),
    ] {
        let err = pmi.put(key, value).unwrap_err();
        assert!(matches!(err, Error::Pmi { step: "kvs-put", .. }), "{err:?}");
    }
    assert!(pmi.put("k", &"v".repeat(MAX_VALUE + 1)).is_err());
    pmi.finalize().unwrap();
    let log = server.join().unwrap();
    assert!(!log.iter().any(|l| l.contains("kvs-put")), "{log:?}");
}

#[test]
fn abort_asks_for_the_whole_step_and_expects_no_reply() {
    let (pmi, server) = single(Quirks::default(), LONG);
    pmi.unwrap().abort("rank 0: out of memory; giving up\n").unwrap();
    let log = server.join().unwrap();
    assert_eq!(
        log.last().unwrap(),
        "61    cmd=abort;isworld=TRUE;msg=rank 0: out of memory_ giving up_;"
    );
}

#[test]
fn replies_parse_by_slurms_rules() {
    let r = parse_reply("cmd=kvs-get-response;rc=0;found=TRUE;value=a=b;value=second;").unwrap();
    assert_eq!(r.cmd, "kvs-get-response");
    assert_eq!(
        r.get("value"),
        Some("a=b"),
        "'=' may appear in a value; the first duplicate wins"
    );
    assert!(parse_reply("cmd=kvs-put-response;rc=0")
        .unwrap_err()
        .contains("does not end in ';'"));
    assert!(parse_reply("rc=0;cmd=x;").unwrap_err().contains("cmd="));
    assert!(parse_reply("").is_err());
}

#[test]
fn environment_hands_over_pmi_fd() {
    let (client, server) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || serve(server, 0, Kvs::new(1, "77.0"), Quirks::default()));
    let fd = client.into_raw_fd();
    let vars: HashMap<&str, String> = [
        ("PMI_FD", fd.to_string()),
        ("PMI_RANK", "0".into()),
        ("PMI_SIZE", "1".into()),
        ("PMI_JOBID", "77.0".into()),
        (BOOTSTRAP_TIMEOUT, "5".into()),
    ]
    .into();
    // SAFETY: `fd` came from into_raw_fd just above; nothing else owns it.
    let pmi = unsafe { Wire::from_lookup(|k| vars.get(k).cloned(), MpiHere::Absent) }
        .unwrap()
        .unwrap();
    assert_eq!(
        (pmi.rank(), pmi.size(), pmi.jobid(), pmi.timeout()),
        (0, 1, "77.0", Duration::from_secs(5))
    );
    // SAFETY: fcntl on an fd `pmi` owns.
    let flags = unsafe { libc::fcntl(pmi.raw_fd(), libc::F_GETFD) };
    assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    let mut pmi = Pmi::wire(pmi);
    assert_eq!(pmi.allgather(b"hi").unwrap(), [b"hi".to_vec()]);
    pmi.farewell().unwrap();
    assert!(server.join().unwrap()[1].contains("pmijobid=77.0;pmirank=0;"));
}

#[test]
fn environment_problems_are_explained() {
    // SAFETY: here and below: no PMI_FD, a non-number, and a regular
    // file's fd, which is refused before anything takes it over.
    assert!(unsafe { Wire::from_lookup(|_| None, MpiHere::Absent) }.is_none());
    let vars = |fd: String| {
        move |k: &str| {
            if k == "PMI_FD" {
                Some(fd.clone())
            } else {
                Some("0".into())
            }
        }
    };
    // SAFETY: see above.
    let err = unsafe { Wire::from_lookup(vars("abc".into()), MpiHere::Absent) }
        .unwrap()
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains(r#"PMI_FD="abc" is not a non-negative integer"#),
        "{err}"
    );
    let file = std::fs::File::open("/proc/self/status").unwrap();
    // SAFETY: see above.
    let err = unsafe { Wire::from_lookup(vars(file.as_raw_fd().to_string()), MpiHere::Absent) }
        .unwrap()
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a socket"), "{err}");
    assert!(err.to_string().contains("PMI_FD="), "{err}");
}
