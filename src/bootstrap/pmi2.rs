//! A PMI-2 client that speaks the wire protocol itself, for jobs started by
//! `srun --mpi=pmi2` (no libpmi2 needed).
//!
//! Slurm hands every task one end of a socketpair as the inherited fd
//! `PMI_FD`. On it we send the PMI-1 style `cmd=init pmi_version=2 ...` line,
//! wait for `response_to_init`, then exchange PMI-2 messages: a 6-byte decimal
//! length header followed by `cmd=<name>;key=value;...;` (every value ends in
//! `;`). We use `fullinit`, `kvs-put`, `kvs-fence`, `kvs-get`, `finalize` and
//! `abort`, formatted exactly as Slurm's `src/plugins/mpi/pmi2` plugin
//! (22.05) parses them and as its `contribs/pmi2` client library sends them.
//! Slurm drops malformed or unknown requests without a reply, so every read
//! has a timeout.
//!
//! [`Pmi2::publish`] and [`Pmi2::fetch`] build an all-gather on the KVS:
//! each rank puts its bytes hex-encoded, in chunks of at most [`CHUNK`]
//! characters, under `oneside-<epoch>-<rank>-<i>` plus a count key
//! `oneside-<epoch>-<rank>-n`; one fence; then a rank reads another's
//! chunks. [`Pmi2::allgather`] has every rank read every other's; the card
//! exchange has only one rank per node do so (`under_pmi`).

pub(crate) mod message;

use crate::error::{Error, Result};
use crate::protocol::env::{hex_decode, hex_encode, BOOTSTRAP_TIMEOUT, DEFAULT_BOOTSTRAP_TIMEOUT_SECS};
use message::{check_key, check_value, rc_name, Reply, MAX_VALUE};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Hex characters per KVS value; PMI-2's conventional value limit is 1024.
pub(crate) const CHUNK: usize = 1000;
/// The largest payload a 6-digit length header can describe.
const MAX_MESSAGE: usize = 999_999;
const INIT_LINE: &[u8] = b"cmd=init pmi_version=2 pmi_subversion=0\n";

/// Set once [`Pmi2::from_env`] has taken ownership of `PMI_FD`.
static PMI_FD_TAKEN: AtomicBool = AtomicBool::new(false);

/// An initialized PMI-2 connection (after `init` and `fullinit`).
pub(crate) struct Pmi2 {
    stream: UnixStream,
    rank: usize,
    size: usize,
    jobid: String,
    timeout: Duration,
    /// How many [`Pmi2::allgather`]s have run; part of every key so no key is reused.
    epoch: u64,
}

impl Pmi2 {
    /// Connects to the PMI-2 server named by `PMI_FD`. `None` when `PMI_FD`
    /// is not set (not launched by `srun --mpi=pmi2`).
    pub(crate) fn from_env() -> Option<Result<Pmi2>> {
        std::env::var_os("PMI_FD")?;
        if PMI_FD_TAKEN.swap(true, Ordering::SeqCst) {
            return Some(Err(env_err(None, "PMI_FD is already in use by this process".into())));
        }
        // SAFETY: Slurm opened PMI_FD for this task and nothing else in this
        // process uses it; PMI_FD_TAKEN makes sure we take it only once.
        unsafe { Self::from_lookup(|k| std::env::var(k).ok()) }
    }

    /// [`Pmi2::from_env`] with the variables read through `var`.
    ///
    /// # Safety
    /// If `PMI_FD` names an open socket, it must be owned by nobody else: the
    /// returned `Pmi2` (or an error path) takes it over and closes it.
    unsafe fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Option<Result<Pmi2>> {
        let fd_text = var("PMI_FD")?;
        Some((|| {
            let fd: RawFd = parse_var(None, "PMI_FD", Some(fd_text))?;
            let rank: usize = parse_var(None, "PMI_RANK", var("PMI_RANK"))?;
            let size: usize = parse_var(Some(rank), "PMI_SIZE", var("PMI_SIZE"))?;
            let jobid = var("PMI_JOBID").ok_or_else(|| env_err(Some(rank), "PMI_JOBID is not set".into()))?;
            let secs = match var(BOOTSTRAP_TIMEOUT) {
                Some(v) => parse_var::<u64>(Some(rank), BOOTSTRAP_TIMEOUT, Some(v))?,
                None => DEFAULT_BOOTSTRAP_TIMEOUT_SECS,
            };
            check_socket(fd).map_err(|detail| env_err(Some(rank), format!("PMI_FD={fd}: {detail}")))?;
            // SAFETY: `fd` is an open socket (checked above) that the caller
            // guarantees nobody else owns.
            let stream = unsafe { UnixStream::from_raw_fd(fd) };
            // Children we start must not inherit the PMI connection.
            // SAFETY: plain fcntl on an fd we own.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
                let e = io::Error::last_os_error();
                return Err(env_err(
                    Some(rank),
                    format!("cannot set FD_CLOEXEC on PMI_FD={fd}: {e}"),
                ));
            }
            Pmi2::connect(stream, rank, size, jobid, Duration::from_secs(secs.max(1)))
        })())
    }

    /// Runs `init` and `fullinit` on `stream`. `rank`, `size` and `jobid` are
    /// what the environment says (`PMI_RANK`, `PMI_SIZE`, `PMI_JOBID`); the
    /// server's `fullinit` reply must agree. Every read waits at most `timeout`.
    pub(crate) fn connect(
        stream: UnixStream,
        rank: usize,
        size: usize,
        jobid: String,
        timeout: Duration,
    ) -> Result<Pmi2> {
        let mut pmi = Pmi2 {
            stream,
            rank,
            size,
            jobid,
            timeout,
            epoch: 0,
        };
        let setup = |e: io::Error| env_err(Some(rank), format!("cannot set a timeout on PMI_FD: {e}"));
        pmi.stream.set_read_timeout(Some(timeout)).map_err(setup)?;
        pmi.stream.set_write_timeout(Some(timeout)).map_err(setup)?;
        if let Err(detail) = check_value(&pmi.jobid) {
            return Err(pmi.fail("fullinit", format!("PMI_JOBID={:?}: {detail}", pmi.jobid)));
        }
        pmi.init()?;
        let cmd = format!("cmd=fullinit;pmijobid={};pmirank={rank};threaded=FALSE;", pmi.jobid);
        let reply = pmi.request("fullinit", &cmd)?;
        let (got_rank, got_size) = (reply.get("rank"), reply.get("size"));
        if got_rank != Some(&rank.to_string()) || got_size != Some(&size.to_string()) {
            return Err(pmi.fail(
                "fullinit",
                format!(
                    "the server says rank {} of {}, but PMI_RANK={rank} and PMI_SIZE={size}",
                    got_rank.unwrap_or("?"),
                    got_size.unwrap_or("?")
                ),
            ));
        }
        Ok(pmi)
    }

    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The server's job id, `<job>.<step>` under Slurm.
    pub(crate) fn jobid(&self) -> &str {
        &self.jobid
    }

    /// How long each exchange with the server may take.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Stores `key=value` for this rank; other ranks see it after the next fence.
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<()> {
        check_key(key).map_err(|d| self.fail("kvs-put", d))?;
        check_value(value).map_err(|d| self.fail("kvs-put", format!("value of {key}: {d}")))?;
        self.request("kvs-put", &format!("cmd=kvs-put;key={key};value={value};"))
            .map(drop)
    }

    /// The global barrier that publishes every rank's puts.
    pub(crate) fn fence(&mut self) -> Result<()> {
        self.request("kvs-fence", "cmd=kvs-fence;").map(drop)
    }

    /// Reads `key`; `Ok(None)` when nobody has put it (before a fence). Slurm
    /// ignores `src_rank`; `None` sends PMI2_ID_NULL.
    pub(crate) fn get(&mut self, src_rank: Option<usize>, key: &str) -> Result<Option<String>> {
        check_key(key).map_err(|d| self.fail("kvs-get", d))?;
        let src = src_rank.map_or_else(|| "-1".to_string(), |r| r.to_string());
        let cmd = format!("cmd=kvs-get;jobid={};srcid={src};key={key};", self.jobid);
        let mut reply = self.request("kvs-get", &cmd)?;
        match reply.get("found") {
            Some(f) if f.eq_ignore_ascii_case("TRUE") => match reply.fields.iter().position(|(k, _)| k == "value") {
                Some(i) => Ok(Some(reply.fields.swap_remove(i).1)),
                None => Err(self.fail("kvs-get", format!("reply for {key} says found=TRUE but has no value"))),
            },
            Some(f) if f.eq_ignore_ascii_case("FALSE") => Ok(None),
            other => Err(self.fail("kvs-get", format!("reply for {key} has found={other:?}"))),
        }
    }

    /// Gathers every rank's `own` bytes, indexed by rank. Collective: every
    /// rank must call it, the same number of times. Each rank reads every
    /// other rank's keys: N² gets in all, which `pmi_nodes` avoids at scale.
    pub(crate) fn allgather(&mut self, own: &[u8]) -> Result<Vec<Vec<u8>>> {
        let epoch = self.publish(own)?;
        (0..self.size)
            .map(|rank| match rank == self.rank {
                true => Ok(own.to_vec()),
                false => self.fetch(epoch, rank),
            })
            .collect()
    }

    /// Puts this rank's `own` bytes for an all-gather, then fences: every
    /// rank's bytes can be fetched after it. Returns the all-gather's epoch.
    /// Collective, as [`allgather`](Self::allgather).
    pub(crate) fn publish(&mut self, own: &[u8]) -> Result<u64> {
        let epoch = self.epoch;
        self.epoch += 1;
        let hex = hex_encode(own);
        let chunks: Vec<&str> = (0..hex.len())
            .step_by(CHUNK)
            .map(|i| &hex[i..(i + CHUNK).min(hex.len())])
            .collect();
        for (i, chunk) in chunks.iter().enumerate() {
            self.put(&gather_key(epoch, self.rank, &i.to_string()), chunk)?;
        }
        self.put(&gather_key(epoch, self.rank, "n"), &chunks.len().to_string())?;
        self.fence()?;
        Ok(epoch)
    }

    /// The bytes `rank` published in all-gather `epoch`.
    pub(crate) fn fetch(&mut self, epoch: u64, rank: usize) -> Result<Vec<u8>> {
        let missing = |k: &str| {
            format!("{k} is not in the KVS after the fence (did every rank call allgather the same number of times?)")
        };
        let n_key = gather_key(epoch, rank, "n");
        let n_text = self
            .get(Some(rank), &n_key)?
            .ok_or_else(|| self.fail("kvs-get", missing(&n_key)))?;
        let n: usize = n_text
            .parse()
            .map_err(|_| self.fail("kvs-get", format!("{n_key}={n_text:?} is not a count")))?;
        let mut hex = String::new();
        for i in 0..n {
            let k = gather_key(epoch, rank, &i.to_string());
            hex += &self
                .get(Some(rank), &k)?
                .ok_or_else(|| self.fail("kvs-get", missing(&k)))?;
        }
        hex_decode(&hex).ok_or_else(|| {
            self.fail(
                "kvs-get",
                format!("rank {rank}'s bytes under {n_key} are not valid hex"),
            )
        })
    }

    /// A job attribute of the server (`info-getjobattr`), such as
    /// `PMI_process_mapping`; `Ok(None)` when the server has none.
    pub(crate) fn job_attr(&mut self, key: &str) -> Result<Option<String>> {
        check_key(key).map_err(|d| self.fail("info-getjobattr", d))?;
        let mut reply = self.request("info-getjobattr", &format!("cmd=info-getjobattr;key={key};"))?;
        match reply.get("found") {
            Some(f) if f.eq_ignore_ascii_case("TRUE") => Ok(reply
                .fields
                .iter()
                .position(|(k, _)| k == "value")
                .map(|i| reply.fields.swap_remove(i).1)),
            _ => Ok(None),
        }
    }

    /// Says goodbye to the server; the connection is unusable afterwards.
    pub(crate) fn finalize(mut self) -> Result<()> {
        self.request("finalize", "cmd=finalize;").map(drop)
    }

    /// Asks Slurm to kill the whole step (there is no reply). The caller
    /// should exit afterwards in case the kill is slow.
    pub(crate) fn abort(mut self, msg: &str) -> Result<()> {
        let msg: String = msg
            .chars()
            .map(|c| {
                if (c.is_ascii_graphic() && c != ';') || c == ' ' {
                    c
                } else {
                    '_'
                }
            })
            .take(MAX_VALUE)
            .collect();
        self.send("abort", &format!("cmd=abort;isworld=TRUE;msg={msg};"))
    }

    /// The PMI-1 handshake; it must precede everything and be answered
    /// before we send anything else.
    fn init(&mut self) -> Result<()> {
        self.stream.write_all(INIT_LINE).map_err(|e| self.io_fail("init", e))?;
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while byte[0] != b'\n' {
            match self.stream.read(&mut byte) {
                Ok(0) => return Err(self.io_fail("init", io::ErrorKind::UnexpectedEof.into())),
                Ok(_) if line.len() < 256 => line.push(byte[0]),
                Ok(_) => return Err(self.fail("init", "the reply line is longer than 256 bytes")),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_fail("init", e)),
            }
        }
        let text = String::from_utf8_lossy(&line);
        let field = |name: &str| {
            text.split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        };
        if field("cmd") != Some("response_to_init") {
            return Err(self.fail("init", format!("expected response_to_init, got {:?}", text.trim_end())));
        }
        if field("rc") != Some("0") || field("pmi_version") != Some("2") {
            return Err(self.fail(
                "init",
                format!(
                    "the server refused PMI-2 ({:?}); it may speak only PMI-1",
                    text.trim_end()
                ),
            ));
        }
        Ok(())
    }

    /// Sends `payload` and checks the reply: `<cmd>-response` with `rc=0`.
    fn request(&mut self, step: &'static str, payload: &str) -> Result<Reply> {
        self.send(step, payload)?;
        let reply = self.recv(step)?;
        let expected = format!("{step}-response");
        if reply.cmd != expected {
            return Err(self.fail(step, format!("expected {expected}, got {}", reply.cmd)));
        }
        match reply.get("rc") {
            Some("0") => Ok(reply),
            Some(rc) => {
                let errmsg = reply.get("errmsg").map(|m| format!(": {m}")).unwrap_or_default();
                Err(self.fail(step, format!("the server answered rc={rc} ({}){errmsg}", rc_name(rc))))
            }
            None => Err(self.fail(step, format!("{} has no rc", reply.cmd))),
        }
    }

    /// Writes one framed message in a single write (Slurm's agent blocks on partial ones).
    fn send(&mut self, step: &'static str, payload: &str) -> Result<()> {
        if payload.len() > MAX_MESSAGE {
            return Err(self.fail(step, format!("a {}-byte message is too long for PMI-2", payload.len())));
        }
        let frame = format!("{:<6}{payload}", payload.len());
        self.stream
            .write_all(frame.as_bytes())
            .map_err(|e| self.io_fail(step, e))
    }

    fn recv(&mut self, step: &'static str) -> Result<Reply> {
        match message::read_reply(&mut self.stream) {
            Ok(reply) => reply.map_err(|d| self.fail(step, d)),
            Err(e) => Err(self.io_fail(step, e)),
        }
    }

    fn fail(&self, step: &'static str, detail: impl Into<String>) -> Error {
        Error::Pmi {
            rank: Some(self.rank),
            step,
            detail: detail.into(),
        }
    }

    fn io_fail(&self, step: &'static str, e: io::Error) -> Error {
        let detail = match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                let why = if step == "kvs-fence" {
                    "some rank has not reached the fence"
                } else {
                    "the server ignored the request"
                };
                format!(
                    "no reply within {:?} ({why}; raise {BOOTSTRAP_TIMEOUT} if ranks start slowly)",
                    self.timeout
                )
            }
            io::ErrorKind::UnexpectedEof | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                format!("the PMI server closed the connection ({e})")
            }
            _ => e.to_string(),
        };
        self.fail(step, detail)
    }
}

/// A sentence for a process that a launcher started as one of many tasks
/// but without a PMI-2 server to wire up through: a PMIx-only launcher, or
/// srun without `--mpi=pmi2`. Either would otherwise run every task alone
/// as a singleton. `None` when `PMI_FD` is set or nothing says so.
pub(crate) fn missing_pmi_hint() -> Option<String> {
    missing_pmi_hint_from(|k| std::env::var(k).ok())
}

fn missing_pmi_hint_from(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    const URIS: [&str; 6] = [
        "PMIX_SERVER_URI41",
        "PMIX_SERVER_URI4",
        "PMIX_SERVER_URI3",
        "PMIX_SERVER_URI2",
        "PMIX_SERVER_URI21",
        "PMIX_SERVER_URI",
    ];
    if var("PMI_FD").is_some() {
        return None;
    }
    if URIS.iter().any(|u| var(u).is_some()) {
        let (namespace, rank) = (var("PMIX_NAMESPACE")?, var("PMIX_RANK")?);
        return Some(format!(
            "this process was started by a PMIx-only launcher (PMIX_NAMESPACE={namespace}, PMIX_RANK={rank}) \
             and has no PMI_FD: oneside speaks PMI-2, not PMIx; run it with `srun --mpi=pmi2` or with rlaunch"
        ));
    }
    // Only srun's tasks carry SLURM_STEP_NUM_TASKS; a batch script does not.
    let tasks: u64 = var("SLURM_STEP_NUM_TASKS")?.parse().ok()?;
    let task = var("SLURM_PROCID")?;
    (tasks > 1).then(|| {
        let step = var("SLURM_STEP_ID").unwrap_or_else(|| "?".into());
        let job = var("SLURM_JOB_ID").unwrap_or_else(|| "?".into());
        format!(
            "this process is task {task} of {tasks} in Slurm step {job}.{step}, but srun gave it no PMI server \
             (PMI_FD is unset), so its tasks cannot find each other; run it with `srun --mpi=pmi2` \
             (or set MpiDefault=pmi2 in slurm.conf), or start it with rlaunch"
        )
    })
}

/// The key of part `part` of `rank`'s bytes in all-gather `epoch`.
fn gather_key(epoch: u64, rank: usize, part: &str) -> String {
    format!("oneside-{epoch}-{rank}-{part}")
}

fn check_socket(fd: RawFd) -> Result<(), String> {
    if fd < 0 {
        return Err("not a file descriptor".into());
    }
    // SAFETY: `stat` is plain old data, so all-zero is a valid value, and
    // fstat only writes into it; a closed fd just makes it fail.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } == -1 {
        return Err(format!("not an open file descriptor ({})", io::Error::last_os_error()));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err("not a socket".into());
    }
    Ok(())
}

fn parse_var<T: std::str::FromStr>(rank: Option<usize>, name: &str, value: Option<String>) -> Result<T> {
    let value = value.ok_or_else(|| env_err(rank, format!("{name} is not set")))?;
    value
        .trim()
        .parse()
        .map_err(|_| env_err(rank, format!("{name}={value:?} is not a non-negative integer")))
}

fn env_err(rank: Option<usize>, detail: String) -> Error {
    Error::Pmi {
        rank,
        step: "init",
        detail,
    }
}

#[cfg(test)]
mod tests;
