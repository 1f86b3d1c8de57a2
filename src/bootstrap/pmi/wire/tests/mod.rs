//! The client against a fake PMI-2 server that formats its replies as
//! Slurm's `mpi/pmi2` plugin does (`v2.rs`, `under_pmi.rs`), and a fake
//! PMI-1 server that refuses version 2 as Flux's does (`v1.rs`). This file
//! holds the fake step they share.

mod under_pmi;
mod v1;
mod v2;

use super::super::message::*;
use super::super::{Pmi, CHUNK};
use super::conn::PmiSocket;
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
    Wire::connect(
        PmiSocket::Fd(stream),
        told,
        timeout,
        MpiHere::Absent,
        "PMI_FD=test".into(),
    )
}

/// One task connected to a one-task fake step.
fn single(q: Quirks, timeout: Duration) -> (Result<Wire>, JoinHandle<Vec<String>>) {
    let (mut clients, mut servers) = fake_step(1, q);
    let pmi = connect(clients.pop().unwrap(), 0, 1, timeout);
    (pmi, servers.pop().unwrap())
}
