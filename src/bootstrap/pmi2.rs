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
//! [`Pmi2::allgather`] builds the card exchange on the KVS: each rank puts its
//! card hex-encoded, in chunks of at most [`CHUNK`] characters, under
//! `oneside-<epoch>-<rank>-<i>` plus a count key `oneside-<epoch>-<rank>-n`;
//! one fence; then every rank reads every other rank's chunks.

use crate::error::{Error, Result};
use crate::protocol::env::{hex_decode, hex_encode, BOOTSTRAP_TIMEOUT, DEFAULT_BOOTSTRAP_TIMEOUT_SECS};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Hex characters per KVS value; PMI-2's conventional value limit is 1024.
pub(crate) const CHUNK: usize = 1000;
/// PMI2_MAX_VALLEN: longer values are refused by libpmi2 and MPICH.
const MAX_VALUE: usize = 1024;
/// PMI2_MAX_KEYLEN.
const MAX_KEY: usize = 64;
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

/// One PMI-2 reply: its `cmd` and the other `key=value` pairs in order.
#[derive(Debug)]
struct Reply {
    cmd: String,
    fields: Vec<(String, String)>,
}

impl Reply {
    /// The first value of `key` (Slurm's lookup rule for duplicate keys).
    fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
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
    /// rank must call it, the same number of times.
    pub(crate) fn allgather(&mut self, own: &[u8]) -> Result<Vec<Vec<u8>>> {
        let epoch = self.epoch;
        self.epoch += 1;
        let key = |rank: usize, part: &str| format!("oneside-{epoch}-{rank}-{part}");
        let hex = hex_encode(own);
        let chunks: Vec<&str> = (0..hex.len())
            .step_by(CHUNK)
            .map(|i| &hex[i..(i + CHUNK).min(hex.len())])
            .collect();
        for (i, chunk) in chunks.iter().enumerate() {
            self.put(&key(self.rank, &i.to_string()), chunk)?;
        }
        self.put(&key(self.rank, "n"), &chunks.len().to_string())?;
        self.fence()?;

        let mut cards = Vec::with_capacity(self.size);
        for rank in 0..self.size {
            if rank == self.rank {
                cards.push(own.to_vec());
                continue;
            }
            let missing = |k: &str| {
                format!(
                    "{k} is not in the KVS after the fence (did every rank call allgather the same number of times?)"
                )
            };
            let n_key = key(rank, "n");
            let n_text = self
                .get(Some(rank), &n_key)?
                .ok_or_else(|| self.fail("kvs-get", missing(&n_key)))?;
            let n: usize = n_text
                .parse()
                .map_err(|_| self.fail("kvs-get", format!("{n_key}={n_text:?} is not a count")))?;
            let mut hex = String::new();
            for i in 0..n {
                let k = key(rank, &i.to_string());
                hex += &self
                    .get(Some(rank), &k)?
                    .ok_or_else(|| self.fail("kvs-get", missing(&k)))?;
            }
            let card = hex_decode(&hex)
                .ok_or_else(|| self.fail("kvs-get", format!("rank {rank}'s card under {n_key} is not valid hex")))?;
            cards.push(card);
        }
        Ok(cards)
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
        let mut header = [0u8; 6];
        self.stream.read_exact(&mut header).map_err(|e| self.io_fail(step, e))?;
        let len = std::str::from_utf8(&header)
            .ok()
            .and_then(|h| h.trim_matches(' ').parse::<usize>().ok())
            .ok_or_else(|| {
                self.fail(
                    step,
                    format!("bad length header {:?}", String::from_utf8_lossy(&header)),
                )
            })?;
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).map_err(|e| self.io_fail(step, e))?;
        parse_reply(&String::from_utf8_lossy(&body)).map_err(|d| self.fail(step, d))
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

/// A sentence for a rank started by a PMIx-only launcher, which oneside
/// cannot talk to; `None` if `PMI_FD` is set or there is no PMIx server.
pub(crate) fn pmix_only_hint() -> Option<String> {
    pmix_only_hint_from(|k| std::env::var(k).ok())
}

fn pmix_only_hint_from(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    const URIS: [&str; 6] = [
        "PMIX_SERVER_URI41",
        "PMIX_SERVER_URI4",
        "PMIX_SERVER_URI3",
        "PMIX_SERVER_URI2",
        "PMIX_SERVER_URI21",
        "PMIX_SERVER_URI",
    ];
    if var("PMI_FD").is_some() || !URIS.iter().any(|u| var(u).is_some()) {
        return None;
    }
    let (namespace, rank) = (var("PMIX_NAMESPACE")?, var("PMIX_RANK")?);
    Some(format!(
        "this process was started by a PMIx-only launcher (PMIX_NAMESPACE={namespace}, PMIX_RANK={rank}) \
         and has no PMI_FD: oneside speaks PMI-2, not PMIx; run it with `srun --mpi=pmi2` or with rlaunch"
    ))
}

/// Parses `cmd=<name>;key=value;...;` by Slurm's rules: a key runs to the
/// first `=`, a value to the next `;`, and every value must end in `;`.
fn parse_reply(text: &str) -> Result<Reply, String> {
    let mut fields = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .ok_or_else(|| format!("malformed reply {text:?}: {rest:?} has no '='"))?;
        let (value, next) = after
            .split_once(';')
            .ok_or_else(|| format!("malformed reply {text:?}: the value of {key} does not end in ';'"))?;
        if key.is_empty() || key.contains(';') {
            return Err(format!("malformed reply {text:?}: bad key {key:?}"));
        }
        fields.push((key.to_string(), value.to_string()));
        rest = next;
    }
    match fields.first() {
        Some((k, _)) if k == "cmd" => {
            let cmd = fields.remove(0).1;
            Ok(Reply { cmd, fields })
        }
        _ => Err(format!("malformed reply {text:?}: it does not start with cmd=")),
    }
}

fn check_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then_some(())
        .ok_or_else(|| format!("key {key:?} is not 1 to {MAX_KEY} of [-_A-Za-z0-9]"))
}

fn check_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_VALUE {
        return Err(format!("{} characters is over PMI-2's {MAX_VALUE}", value.len()));
    }
    match value.bytes().find(|&b| b == b';' || !(b' '..=b'~').contains(&b)) {
        Some(b) => Err(format!("byte {b:#04x} cannot travel in a PMI-2 value")),
        None => Ok(()),
    }
}

/// Names of the PMI2 return codes Slurm uses (its `pmi.h`).
fn rc_name(rc: &str) -> &'static str {
    match rc {
        "-1" => "PMI2_FAIL",
        "1" => "PMI2_ERR_INIT",
        "3" => "PMI2_ERR_INVALID_ARG",
        "10" => "PMI2_ERR_INVALID_ARGS",
        "14" => "PMI2_ERR_OTHER",
        _ => "unknown code",
    }
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
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::fd::{AsRawFd, IntoRawFd};
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
    }

    /// One step's KVS, shared by the fake stepd connections: committed pairs
    /// and a fence barrier across all `size` tasks.
    struct Kvs {
        size: usize,
        state: Mutex<(HashMap<String, String>, usize, u64)>,
        fenced: Condvar,
    }

    impl Kvs {
        fn new(size: usize) -> Arc<Kvs> {
            Arc::new(Kvs {
                size,
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
        assert_eq!(&buf[..n], INIT_LINE, "the first read must hold exactly the init line");
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
        let kvs = Kvs::new(size);
        (0..size)
            .map(|rank| {
                let (client, server) = UnixStream::pair().unwrap();
                let kvs = kvs.clone();
                (client, thread::spawn(move || serve(server, rank, kvs, q)))
            })
            .unzip()
    }

    /// One task connected to a one-task fake step.
    fn single(q: Quirks, timeout: Duration) -> (Result<Pmi2>, JoinHandle<Vec<String>>) {
        let (mut clients, mut servers) = fake_step(1, q);
        let pmi = Pmi2::connect(clients.pop().unwrap(), 0, 1, JOBID.into(), timeout);
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
                    let mut pmi = Pmi2::connect(stream, rank, 3, JOBID.into(), LONG).unwrap();
                    assert_eq!((pmi.rank(), pmi.size()), (rank, 3));
                    let first = pmi.allgather(&cards(0, rank)).unwrap();
                    let second = pmi.allgather(&cards(1, rank)).unwrap();
                    pmi.finalize().unwrap();
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
                2,
                "one fence per allgather"
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
        let mut pmi = pmi.unwrap();
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
            "srun --mpi=pmi2",
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
        let err = pmi.unwrap().allgather(b"x").unwrap_err();
        assert!(matches!(err, Error::Pmi { step: "kvs-fence", .. }), "{err:?}");
        assert!(err.to_string().contains("some rank has not reached the fence"), "{err}");
        server.join().unwrap();
    }

    #[test]
    fn a_pmi1_only_server_is_reported_at_init() {
        let q = Quirks {
            init_reply: Some("cmd=response_to_init rc=-1 pmi_version=1 pmi_subversion=1\n"),
            ..Quirks::default()
        };
        let (pmi, server) = single(q, LONG);
        let err = pmi.err().unwrap();
        assert!(matches!(err, Error::Pmi { step: "init", .. }), "{err:?}");
        assert!(err.to_string().contains("PMI-1"), "{err}");
        server.join().unwrap();
    }

    #[test]
    fn fullinit_must_agree_with_the_environment() {
        let (mut clients, mut servers) = fake_step(1, Quirks::default());
        let err = Pmi2::connect(clients.pop().unwrap(), 1, 2, JOBID.into(), LONG)
            .err()
            .unwrap();
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
        let mut pmi = pmi.unwrap();
        assert_eq!(pmi.allgather(&[1, 2, 3]).unwrap(), [vec![1, 2, 3]]);
        pmi.finalize().unwrap();
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
        let server = thread::spawn(move || serve(server, 0, Kvs::new(1), Quirks::default()));
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
        let mut pmi = unsafe { Pmi2::from_lookup(|k| vars.get(k).cloned()) }.unwrap().unwrap();
        assert_eq!(
            (pmi.rank(), pmi.size(), pmi.jobid.as_str(), pmi.timeout),
            (0, 1, "77.0", Duration::from_secs(5))
        );
        // SAFETY: fcntl on an fd `pmi` owns.
        let flags = unsafe { libc::fcntl(pmi.stream.as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        assert_eq!(pmi.allgather(b"hi").unwrap(), [b"hi".to_vec()]);
        pmi.finalize().unwrap();
        assert!(server.join().unwrap()[1].contains("pmijobid=77.0;pmirank=0;"));
    }

    #[test]
    fn environment_problems_are_explained() {
        // SAFETY (all three): no PMI_FD, a non-number, and a regular file's fd,
        // which is refused before anything takes it over.
        assert!(unsafe { Pmi2::from_lookup(|_| None) }.is_none());
        let vars = |fd: String| {
            move |k: &str| {
                if k == "PMI_FD" {
                    Some(fd.clone())
                } else {
                    Some("0".into())
                }
            }
        };
        let err = unsafe { Pmi2::from_lookup(vars("abc".into())) }.unwrap().err().unwrap();
        assert!(
            err.to_string()
                .contains(r#"PMI_FD="abc" is not a non-negative integer"#),
            "{err}"
        );
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let err = unsafe { Pmi2::from_lookup(vars(file.as_raw_fd().to_string())) }
            .unwrap()
            .err()
            .unwrap();
        assert!(err.to_string().contains("not a socket"), "{err}");
        assert!(err.to_string().contains("srun --mpi=pmi2"), "{err}");
    }

    #[test]
    fn pmix_only_launch_gets_a_hint() {
        let pmix: HashMap<&str, &str> = [
            ("PMIX_RANK", "2"),
            ("PMIX_NAMESPACE", "slurm.pmix.9.0"),
            ("PMIX_SERVER_URI41", "pmix-server.1;tcp4://x"),
        ]
        .into();
        let hint = pmix_only_hint_from(|k| pmix.get(k).map(|v| v.to_string())).unwrap();
        for part in [
            "PMIx",
            "PMIX_NAMESPACE=slurm.pmix.9.0",
            "PMI-2",
            "srun --mpi=pmi2",
            "rlaunch",
        ] {
            assert!(hint.contains(part), "{part:?} missing from: {hint}");
        }
        let with_fd = |k: &str| {
            if k == "PMI_FD" {
                Some("3".into())
            } else {
                pmix.get(k).map(|v| v.to_string())
            }
        };
        assert_eq!(pmix_only_hint_from(with_fd), None);
        assert_eq!(pmix_only_hint_from(|_| None), None);
    }
}
