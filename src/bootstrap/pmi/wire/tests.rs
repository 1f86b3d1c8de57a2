//! The client against a fake PMI-2 server that formats its replies as
//! Slurm's `mpi/pmi2` plugin does, and a fake PMI-1 server that refuses
//! version 2 as Flux's does.

use super::super::message::*;
use super::super::{Pmi, CHUNK};
use super::conn::Link;
use super::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Instant;

/// Generous: only a broken test ever waits this long.
const LONG: Duration = Duration::from_secs(10);
/// For the tests that expect a timeout.
const SHORT: Duration = Duration::from_millis(200);
const JOBID: &str = "1234.0";

/// Ways the fake server departs from a healthy slurmstepd.
#[derive(Clone, Copy, Default)]
struct Quirks {
    /// Never answer this command ("init" for the init line).
    silent: Option<&'static str>,
    /// Answer this command with this payload instead.
    reply: Option<(&'static str, &'static str)>,
    /// The init reply line instead of the healthy one.
    init_reply: Option<&'static str>,
    /// Write length headers like MPICH (`%6u`) instead of Slurm (`%-6d`).
    right_justified: bool,
    /// The `PMI_process_mapping` job attribute, if the server has one.
    mapping: Option<&'static str>,
}

/// One step's KVS, shared by the fake stepd connections: committed pairs
/// and a fence barrier across all `size` tasks.
struct Kvs {
    size: usize,
    jobid: String,
    state: Mutex<(HashMap<String, String>, usize, u64)>,
    fenced: Condvar,
}

impl Kvs {
    fn new(size: usize, jobid: &str) -> Arc<Kvs> {
        Arc::new(Kvs {
            size,
            jobid: jobid.to_string(),
            state: Mutex::new(Default::default()),
            fenced: Condvar::new(),
        })
    }

    /// Commits this task's puts, then waits for every task (like Slurm, puts are invisible until here).
    fn fence(&self, pending: &mut Vec<(String, String)>) {
        let mut st = self.state.lock().unwrap();
        st.0.extend(pending.drain(..));
        st.1 += 1;
        let generation = st.2;
        if st.1 == self.size {
            st.1 = 0;
            st.2 += 1;
            self.fenced.notify_all();
        }
        let deadline = Instant::now() + LONG;
        while st.2 == generation {
            let left = deadline
                .checked_duration_since(Instant::now())
                .expect("fake fence: a rank never fenced");
            st = self.fenced.wait_timeout(st, left).unwrap().0;
        }
    }

    fn get(&self, key: &str) -> Option<String> {
        self.state.lock().unwrap().0.get(key).cloned()
    }
}

fn frame(payload: &str, right_justified: bool) -> Vec<u8> {
    let len = payload.len();
    let header = if right_justified {
        format!("{len:>6}")
    } else {
        format!("{len:<6}")
    };
    format!("{header}{payload}").into_bytes()
}

/// Serves one task the way Slurm 22.05's mpi/pmi2 agent does, and returns
/// every request exactly as it arrived on the wire.
fn serve(mut s: UnixStream, rank: usize, kvs: Arc<Kvs>, q: Quirks) -> Vec<String> {
    let mut log = Vec::new();
    // Slurm does one read of up to 64 bytes and sscanf()s it as the init line.
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], INIT_V2, "the first read must hold exactly the init line");
    log.push(String::from_utf8(buf[..n].to_vec()).unwrap());
    if q.silent == Some("init") {
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
        return log;
    }
    let init = q
        .init_reply
        .unwrap_or("cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n");
    s.write_all(init.as_bytes()).unwrap();
    let mut pending = Vec::new();
    loop {
        let mut header = [0u8; 6];
        if s.read_exact(&mut header).is_err() {
            return log; // the client hung up
        }
        let len: usize = std::str::from_utf8(&header).unwrap().trim().parse().unwrap();
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).unwrap();
        let text = String::from_utf8(body).unwrap();
        log.push(format!("{}{text}", std::str::from_utf8(&header).unwrap()));
        let req = parse_reply(&text).expect("Slurm drops, unanswered, requests that break its syntax");
        let field = |k: &str| {
            req.get(k)
                .unwrap_or_else(|| panic!("{} without {k}", req.cmd))
                .to_string()
        };
        if q.silent == Some(req.cmd.as_str()) || req.cmd == "abort" {
            continue;
        }
        let reply = match (q.reply, req.cmd.as_str()) {
            (Some((cmd, reply)), _) if cmd == req.cmd => reply.to_string(),
            (_, "fullinit") => {
                field("pmijobid");
                field("pmirank");
                assert_eq!(field("threaded"), "FALSE");
                format!(
                    "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank={rank};size={};\
                     appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
                    kvs.size
                )
            }
            (_, "job-getid") => format!("cmd=job-getid-response;rc=0;jobid={};", kvs.jobid),
            (_, "kvs-put") => {
                pending.push((field("key"), field("value")));
                "cmd=kvs-put-response;rc=0;".into()
            }
            (_, "kvs-fence") => {
                kvs.fence(&mut pending);
                "cmd=kvs-fence-response;rc=0;".into()
            }
            (_, "kvs-get") => {
                field("jobid");
                field("srcid");
                match kvs.get(&field("key")) {
                    Some(v) => format!("cmd=kvs-get-response;rc=0;found=TRUE;value={v};"),
                    None => "cmd=kvs-get-response;rc=0;found=FALSE;".into(),
                }
            }
            (_, "info-getjobattr") => match (field("key").as_str(), q.mapping) {
                ("PMI_process_mapping", Some(m)) => format!("cmd=info-getjobattr-response;rc=0;found=TRUE;value={m};"),
                _ => "cmd=info-getjobattr-response;rc=0;found=FALSE;".into(),
            },
            (_, "finalize") => "cmd=finalize-response;rc=0;".into(),
            (_, other) => panic!("Slurm would drop the unknown command {other} without a reply"),
        };
        s.write_all(&frame(&reply, q.right_justified)).unwrap();
        if req.cmd == "finalize" {
            return log;
        }
    }
}

/// A fake step of `size` tasks: the client ends, and the server threads.
fn fake_step(size: usize, q: Quirks) -> (Vec<UnixStream>, Vec<JoinHandle<Vec<String>>>) {
    fake_job(size, JOBID, q)
}

fn fake_job(size: usize, jobid: &str, q: Quirks) -> (Vec<UnixStream>, Vec<JoinHandle<Vec<String>>>) {
    let kvs = Kvs::new(size, jobid);
    (0..size)
        .map(|rank| {
            let (client, server) = UnixStream::pair().unwrap();
            let kvs = kvs.clone();
            (client, thread::spawn(move || serve(server, rank, kvs, q)))
        })
        .unzip()
}

/// Connects as the task `rank` of `size` that Slurm started.
fn connect(stream: UnixStream, rank: usize, size: usize, timeout: Duration) -> Result<Wire> {
    let told = Told {
        rank: Some(rank),
        size: Some(size),
        id: None,
        jobid: Some(JOBID.into()),
    };
    Wire::connect(Link::Fd(stream), told, timeout, MpiHere::Absent, "PMI_FD=test".into())
}

/// One task connected to a one-task fake step.
fn single(q: Quirks, timeout: Duration) -> (Result<Wire>, JoinHandle<Vec<String>>) {
    let (mut clients, mut servers) = fake_step(1, q);
    let pmi = connect(clients.pop().unwrap(), 0, 1, timeout);
    (pmi, servers.pop().unwrap())
}

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

/// Four tasks of a step through `under_pmi`, with the server's process
/// mapping (`mapping`) or without it (every task then on this one host).
/// Returns each task's local rank and size, and the server logs.
fn wire_up_under_pmi(mapping: Option<&'static str>) -> (Vec<(usize, usize)>, Vec<Vec<String>>) {
    use crate::bootstrap::under_pmi;
    use crate::protocol::wire::table_entries;
    let jobid = format!("{}.{}", std::process::id(), mapping.is_some() as u8);
    let (clients, servers) = fake_job(
        4,
        &jobid,
        Quirks {
            mapping,
            ..Quirks::default()
        },
    );
    let card = |rank: usize| vec![rank as u8; 40 + rank];
    // The wire-up barrier, after which a table's writer removes it.
    let wired = Arc::new(std::sync::Barrier::new(4));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            let wired = wired.clone();
            thread::spawn(move || {
                let pmi = Pmi::wire(connect(stream, rank, 4, LONG).unwrap());
                let (env, job) = under_pmi::launch_env(pmi).unwrap();
                let (table, mut link) = job.exchange_cards(&env, card(rank)).unwrap();
                let cards: Vec<Vec<u8>> = table_entries(&table).unwrap().iter().map(|c| c.to_vec()).collect();
                assert_eq!(cards, (0..4).map(card).collect::<Vec<_>>(), "rank {rank}'s cards");
                wired.wait();
                link.remove_card_table();
                link.send_finalized("at test.rs:1:1").unwrap();
                (env.local_rank, env.local_size, env.secret)
            })
        })
        .collect();
    let results: Vec<_> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(results.iter().all(|r| r.2 == results[0].2), "one secret for the job");
    let leftover = std::fs::read_dir("/dev/shm").unwrap().filter_map(|e| e.ok()).any(|e| {
        e.file_name()
            .to_string_lossy()
            .contains(&format!("oneside-p{}", jobid.replace('.', "x")))
    });
    assert!(!leftover, "the table files are removed");
    let logs = servers.into_iter().map(|s| s.join().unwrap()).collect();
    (results.iter().map(|r| (r.0, r.1)).collect(), logs)
}

/// How many cards a task read from the server (its count keys).
fn cards_fetched(log: &[String], epoch: u64) -> usize {
    let prefix = format!("key=oneside-{epoch}-");
    log.iter()
        .filter(|l| l.contains("cmd=kvs-get;") && l.contains(&prefix) && l.ends_with("-n;"))
        .count()
}

#[test]
fn under_a_process_mapping_only_each_nodes_first_task_reads_the_cards() {
    let (local, logs) = wire_up_under_pmi(Some("(vector,(0,2,2))"));
    assert_eq!(local, [(0, 2), (1, 2), (0, 2), (1, 2)]);
    let fetched: Vec<usize> = logs.iter().map(|log| cards_fetched(log, 0)).collect();
    assert_eq!(fetched, [3, 0, 3, 0], "the other tasks read their node's table file");
    for log in &logs {
        let gets = log.iter().filter(|l| l.contains("cmd=kvs-get;")).count();
        assert!(gets <= 1 + 2 * 3, "{gets} gets: {log:?}");
    }
}

#[test]
fn without_a_mapping_the_host_names_are_gathered_first() {
    let (local, logs) = wire_up_under_pmi(None);
    assert_eq!(local, [(0, 4), (1, 4), (2, 4), (3, 4)]);
    // Epoch 0 gathers host names (every task reads every other's); the
    // cards (epoch 1) are read by task 0 only.
    let fetched: Vec<usize> = logs.iter().map(|log| cards_fetched(log, 1)).collect();
    assert_eq!(fetched, [3, 0, 0, 0]);
}

/// Serves one process as Flux's simple PMI-1 server does: version 2 is
/// refused with `rc=-1`, then PMI-1 lines on the same connection. With
/// `port`, the process must first say `initack` and learns rank and size.
fn serve_v1(s: UnixStream, rank: usize, kvs: Arc<Kvs>, port: bool) -> Vec<String> {
    let mut log = Vec::new();
    let mut reader = std::io::BufReader::new(s.try_clone().unwrap());
    let mut out = s;
    let mut pending = Vec::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
            return log;
        }
        log.push(line.clone());
        let f = |k: &str| field(line.trim_end(), k).map(str::to_string);
        let reply = match f("cmd").as_deref() {
            Some("init") if f("pmi_version").as_deref() == Some("2") => "cmd=response_to_init rc=-1\n".to_string(),
            Some("init") => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".into(),
            Some("initack") => {
                assert!(port, "initack only with PMI_PORT");
                assert_eq!(f("pmiid"), Some(rank.to_string()));
                format!(
                    "cmd=initack\ncmd=set size={}\ncmd=set rank={rank}\ncmd=set debug=0\n",
                    kvs.size
                )
            }
            Some("get_maxes") => "cmd=maxes kvsname_max=64 keylen_max=64 vallen_max=1024\n".into(),
            Some("get_my_kvsname") => format!("cmd=my_kvsname kvsname={}\n", kvs.jobid),
            Some("put") => {
                assert_eq!(f("kvsname"), Some(kvs.jobid.clone()));
                pending.push((f("key").unwrap(), f("value").unwrap()));
                "cmd=put_result rc=0\n".into()
            }
            Some("barrier_in") => {
                kvs.fence(&mut pending);
                "cmd=barrier_out\n".into()
            }
            Some("get") => match kvs.get(&f("key").unwrap()) {
                Some(v) => format!("cmd=get_result rc=0 value={v}\n"),
                None => "cmd=get_result rc=-1\n".into(),
            },
            Some("finalize") => "cmd=finalize_ack\n".into(),
            Some("abort") => return log,
            other => panic!("a PMI-1 server has no {other:?}"),
        };
        out.write_all(reply.as_bytes()).unwrap();
        if line.starts_with("cmd=finalize") {
            return log;
        }
    }
}

/// `size` processes wire up through a Flux-like PMI-1 server (on PMI_FD,
/// or on a port with `initack`); returns every process's cards and logs.
fn wire_up_over_pmi1(size: usize, port: bool) -> Vec<Vec<String>> {
    use crate::bootstrap::under_pmi;
    use crate::protocol::wire::table_entries;
    let jobid = format!("flux-{}-{}", std::process::id(), port as u8);
    let kvs = Kvs::new(size, &jobid);
    let card = |rank: usize| vec![rank as u8 + 1; 700 + rank];
    let wired = Arc::new(std::sync::Barrier::new(size));
    let (ranks, servers): (Vec<_>, Vec<_>) = (0..size)
        .map(|rank| {
            let (client, server) = UnixStream::pair().unwrap();
            let kvs = kvs.clone();
            let server = thread::spawn(move || serve_v1(server, rank, kvs, port));
            let wired = wired.clone();
            let task = thread::spawn(move || {
                let told = match port {
                    true => Told {
                        id: Some(rank),
                        ..Told::default()
                    },
                    false => Told {
                        rank: Some(rank),
                        size: Some(size),
                        ..Told::default()
                    },
                };
                let wire = Wire::connect(Link::Fd(client), told, LONG, MpiHere::Absent, "PMI_FD=flux".into()).unwrap();
                assert_eq!((wire.rank(), wire.size()), (rank, size));
                let (env, job) = under_pmi::launch_env(Pmi::wire(wire)).unwrap();
                let (table, mut link) = job.exchange_cards(&env, card(rank)).unwrap();
                let cards: Vec<Vec<u8>> = table_entries(&table).unwrap().iter().map(|c| c.to_vec()).collect();
                assert_eq!(cards, (0..size).map(card).collect::<Vec<_>>(), "rank {rank}'s cards");
                wired.wait();
                link.remove_card_table();
                link.send_finalized("at test.rs:1:1").unwrap();
            });
            (task, server)
        })
        .unzip();
    ranks.into_iter().for_each(|t| t.join().unwrap());
    servers.into_iter().map(|s| s.join().unwrap()).collect()
}

#[test]
fn a_server_that_refuses_version_2_is_spoken_to_in_pmi1() {
    let logs = wire_up_over_pmi1(3, false);
    for log in &logs {
        assert_eq!(log[0], "cmd=init pmi_version=2 pmi_subversion=0\n");
        assert_eq!(log[1], "cmd=init pmi_version=1 pmi_subversion=1\n");
        assert!(log.iter().any(|l| l == "cmd=get_my_kvsname\n"), "{log:?}");
        assert!(log.iter().any(|l| l == "cmd=barrier_in\n"));
        assert_eq!(log.last().unwrap(), "cmd=finalize\n");
        assert!(log.iter().all(|l| l.len() <= 1100), "values are chunked");
    }
}

#[test]
fn on_a_port_pmi1_learns_rank_and_size_from_initack() {
    let logs = wire_up_over_pmi1(2, true);
    assert_eq!(logs[1][1], "cmd=initack pmiid=1\n");
    assert_eq!(logs[1][2], "cmd=init pmi_version=1 pmi_subversion=1\n");
}

#[test]
fn beside_an_initialized_mpi_the_pmi1_session_is_joined_without_a_second_init() {
    let (client, server) = UnixStream::pair().unwrap();
    let kvs = Kvs::new(1, "kvs_mpich_0");
    let server = thread::spawn(move || serve_v1(server, 0, kvs, false));
    let told = Told {
        rank: Some(0),
        size: Some(1),
        ..Told::default()
    };
    let wire = Wire::connect(Link::Fd(client), told, LONG, MpiHere::Active, "PMI_FD=mpich".into()).unwrap();
    assert_eq!((wire.rank(), wire.size(), wire.jobid()), (0, 1, "kvs_mpich_0"));
    let mut pmi = Pmi::wire(wire);
    assert_eq!(pmi.allgather(b"card").unwrap(), [b"card".to_vec()]);
    pmi.farewell().unwrap();
    let log = server.join().unwrap();
    assert_eq!(log[0], "cmd=get_my_kvsname\n");
    assert!(
        !log.iter()
            .any(|l| l.starts_with("cmd=init") || l.starts_with("cmd=finalize")),
        "{log:?}"
    );
}

#[test]
fn under_srun_an_mpi_not_yet_initialized_keeps_the_one_init() {
    let (client, _server) = UnixStream::pair().unwrap();
    let told = Told {
        rank: Some(0),
        size: Some(2),
        id: None,
        jobid: Some("7.0".into()),
    };
    let err = Wire::connect(Link::Fd(client), told, SHORT, MpiHere::Later, "PMI_FD=9".into())
        .err()
        .unwrap();
    assert!(err.to_string().contains("call MPI_Init before shmem_init"), "{err}");
}
