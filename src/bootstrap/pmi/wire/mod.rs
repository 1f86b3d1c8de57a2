//! A PMI client that speaks the wire protocols itself, both versions, so no
//! libpmi is needed: Slurm's `srun --mpi=pmi2`, MPICH's Hydra (`PMI_FD`, or
//! `PMI_PORT` + `PMI_ID` with `-pmi-port`) and Flux (PMI-1 only).
//!
//! The first line is always PMI-1's `cmd=init pmi_version=2 ...`. A server
//! that accepts version 2 then gets PMI-2 messages: a 6-byte decimal length
//! and `cmd=<name>;key=value;...;`, formatted as Slurm 22.05's `mpi/pmi2`
//! plugin parses them and as its `contribs/pmi2` library sends them. A
//! server that refuses (Flux answers `rc=-1`) gets `cmd=init pmi_version=1`
//! on the same connection and PMI-1's newline-ended `cmd=<name> key=value`
//! lines from then on. Servers drop malformed requests without a reply, so
//! every read has a timeout.
//!
//! The job id comes from the protocol (`job-getid`, or PMI-1's KVS name),
//! never from `PMI_JOBID`, which Hydra and Flux do not set.
//!
//! When the process's own MPI library (MPICH under Hydra or srun) owns
//! `PMI_FD`, the connection is shared ([`MpiHere`]): we talk on a duplicate,
//! only while MPI is not in a PMI call of its own (its PMI client is
//! synchronous and our calls run before or after MPI's init), join MPI's
//! PMI-1 session rather than `init` a second time once MPI has initialized,
//! and leave the PMI `finalize` to MPI.

use super::message::{self, check_key, check_value};
use crate::error::{Error, Result};
use crate::protocol::env::{BOOTSTRAP_TIMEOUT, DEFAULT_BOOTSTRAP_TIMEOUT_SECS};
pub(super) use crate::protocol::pmi1::field;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

mod conn;
mod v1;
mod v2;

use conn::{Conn, PmiSocket};

pub(super) const INIT_V2: &[u8] = b"cmd=init pmi_version=2 pmi_subversion=0\n";
pub(super) const INIT_V1: &[u8] = b"cmd=init pmi_version=1 pmi_subversion=1\n";

/// Set once [`Wire::from_env`] has taken `PMI_FD` or `PMI_PORT`.
static PMI_TAKEN: AtomicBool = AtomicBool::new(false);

/// Which protocol the server accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    One,
    Two,
}

/// The process's own MPI, as far as the PMI connection goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MpiHere {
    /// No MPI in the process: the connection is ours alone.
    Absent,
    /// MPI is linked but not initialized: it will say `init` on this
    /// connection after us.
    Later,
    /// MPI has initialized on this connection already (in PMI-1, MPICH's
    /// default): we join its session without a second `init`, which
    /// Slurm's agent refuses.
    Active,
}

/// What the environment says before the server is asked.
#[derive(Clone, Debug, Default)]
pub(crate) struct Told {
    /// `PMI_RANK` and `PMI_SIZE` (every `PMI_FD` launcher sets them).
    pub rank: Option<usize>,
    pub size: Option<usize>,
    /// `PMI_ID`, with `PMI_PORT`.
    pub id: Option<usize>,
    /// `PMI_JOBID` (Slurm), only echoed in `fullinit` as Slurm's own client does.
    pub jobid: Option<String>,
}

/// An initialized connection to a PMI-1 or PMI-2 server.
pub(crate) struct Wire {
    conn: Conn,
    version: Version,
    rank: usize,
    size: usize,
    jobid: String,
    timeout: Duration,
    /// The process's MPI library talks on this connection too.
    mpi: MpiHere,
    /// `PMI_FD=6` or `PMI_PORT=host:port`, for messages.
    server: String,
}

impl Wire {
    /// Connects to the server `PMI_FD` or `PMI_PORT` names; `None` when
    /// neither is set. `mpi`: whether the process's MPI uses it too.
    pub(crate) fn from_env(mpi: MpiHere) -> Option<Result<Wire>> {
        if std::env::var_os("PMI_FD").is_none() && std::env::var_os("PMI_PORT").is_none() {
            return None;
        }
        if PMI_TAKEN.swap(true, Ordering::SeqCst) {
            return Some(Err(env_err(None, "PMI_FD is already in use by this process".into())));
        }
        // SAFETY: the launcher opened PMI_FD for this process; PMI_TAKEN
        // makes sure we take it once, and a shared one is duplicated.
        unsafe { Self::from_lookup(|k| std::env::var(k).ok(), mpi) }
    }

    /// [`Wire::from_env`] with the variables read through `var`.
    ///
    /// # Safety
    /// If `PMI_FD` names an open socket and `mpi` is `Absent`, it must be
    /// owned by nobody else: the returned `Wire` (or an error path) closes it.
    pub(super) unsafe fn from_lookup(var: impl Fn(&str) -> Option<String>, mpi: MpiHere) -> Option<Result<Wire>> {
        let (fd_text, port) = (var("PMI_FD"), var("PMI_PORT"));
        if fd_text.is_none() && port.is_none() {
            return None;
        }
        Some((|| {
            let told = Told {
                rank: optional(&var, "PMI_RANK")?,
                size: optional(&var, "PMI_SIZE")?,
                id: optional(&var, "PMI_ID")?,
                jobid: var("PMI_JOBID"),
            };
            let timeout = timeout(&var)?;
            let (link, server) = match (fd_text, port) {
                (Some(text), _) => {
                    let fd = parse(told.rank, "PMI_FD", &text)?;
                    // SAFETY: the caller's guarantee for PMI_FD.
                    let link = unsafe { conn::inherited(fd as i32, mpi != MpiHere::Absent) }
                        .map_err(|d| env_err(told.rank, format!("PMI_FD={fd}: {d}")))?;
                    (link, format!("PMI_FD={fd}"))
                }
                // Hydra gives a rank one connection on its port; a second
                // would take the place of MPI's, so none is made.
                (None, Some(_)) if mpi == MpiHere::Active => {
                    return Err(Error::MissingPmi {
                        detail: "MPI was initialized first under `mpiexec -pmi-port`, and its PMI connection to \
                                 Hydra is this rank's only one (a second would take the rank's place); start \
                                 without -pmi-port (MPI and oneside then share PMI_FD), or call shmem_init \
                                 before MPI_Init"
                            .into(),
                    })
                }
                (None, Some(addr)) => (connect_port(&addr, timeout)?, format!("PMI_PORT={addr}")),
                (None, None) => unreachable!("checked above"),
            };
            Wire::connect(link, told, timeout, mpi, server)
        })())
    }

    /// Runs the handshake on `link`: version 2 if the server takes it, else
    /// 1; or joins the PMI-1 session the process's MPI already began.
    pub(crate) fn connect(
        link: PmiSocket,
        told: Told,
        timeout: Duration,
        mpi: MpiHere,
        server: String,
    ) -> Result<Wire> {
        let conn = Conn::new(link, timeout)
            .map_err(|e| env_err(told.rank, format!("cannot set a timeout on {server}: {e}")))?;
        let mut wire = Wire {
            conn,
            version: Version::Two,
            rank: told.rank.unwrap_or(0),
            size: told.size.unwrap_or(0),
            jobid: String::new(),
            timeout,
            mpi,
            server,
        };
        match mpi {
            MpiHere::Active => {
                wire.version = Version::One;
                v1::join(&mut wire, &told)?;
                return Ok(wire);
            }
            // Only Slurm sets PMI_JOBID, and its agent takes one init a task.
            MpiHere::Later if told.jobid.is_some() => {
                return Err(wire.fail(
                    "init",
                    "srun's PMI server takes one init per task, and the program's MPI (linked, not yet \
                     initialized) needs it for MPI_Init: call MPI_Init before shmem_init, or run with \
                     `srun --mpi=pmix`, where both share one PMIx connection",
                ))
            }
            _ => {}
        }
        let answer = wire.init_line(INIT_V2)?;
        match field(&answer, "rc") == Some("0") && field(&answer, "pmi_version") == Some("2") {
            true => v2::fullinit(&mut wire, &told)?,
            false => {
                wire.version = Version::One;
                v1::init(&mut wire, &told, &answer)?;
            }
        }
        Ok(wire)
    }

    pub(crate) fn rank(&self) -> usize {
        self.rank
    }
    pub(crate) fn size(&self) -> usize {
        self.size
    }
    pub(crate) fn jobid(&self) -> &str {
        &self.jobid
    }
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
    pub(crate) fn shared(&self) -> bool {
        self.mpi != MpiHere::Absent
    }

    /// MPI came into the process after init (Python programs that import
    /// shmem4py before mpi4py): its PMI client took the same `PMI_FD`, so
    /// the connection is shared from now on, as if MPI had been there at
    /// init. Without this, our finalize would close MPI's socket under it.
    pub(crate) fn mpi_arrived(&mut self) {
        if self.mpi == MpiHere::Absent && self.conn.share().is_ok() {
            self.mpi = MpiHere::Later;
        }
    }

    /// What this is, for messages: `the PMI-2 server on PMI_FD=6`.
    pub(crate) fn server(&self) -> String {
        let v = match self.version {
            Version::One => 1,
            Version::Two => 2,
        };
        format!("the PMI-{v} server on {}", self.server)
    }

    pub(super) fn set_identity(&mut self, rank: usize, size: usize, jobid: String) {
        (self.rank, self.size, self.jobid) = (rank, size, jobid);
    }

    pub(super) fn set_rank_size(&mut self, rank: usize, size: usize) {
        (self.rank, self.size) = (rank, size);
    }

    pub(super) fn set_jobid(&mut self, jobid: String) {
        self.jobid = jobid;
    }

    fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    /// Stores `key=value` for this rank; other ranks see it after the next fence.
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<()> {
        check_key(key).map_err(|d| self.fail("kvs-put", d))?;
        check_value(value).map_err(|d| self.fail("kvs-put", format!("value of {key}: {d}")))?;
        match self.version {
            Version::One => v1::put(self, key, value),
            Version::Two => v2::request(self, "kvs-put", &format!("cmd=kvs-put;key={key};value={value};")).map(drop),
        }
    }

    /// The global barrier that publishes every rank's puts.
    pub(crate) fn fence(&mut self) -> Result<()> {
        match self.version {
            Version::One => v1::barrier(self),
            Version::Two => v2::request(self, "kvs-fence", "cmd=kvs-fence;").map(drop),
        }
    }

    /// Reads `key`; `Ok(None)` when nobody has put it (before a fence).
    /// `None` for `src_rank` sends PMI2_ID_NULL (Slurm ignores it anyway).
    pub(crate) fn get(&mut self, src_rank: Option<usize>, key: &str) -> Result<Option<String>> {
        check_key(key).map_err(|d| self.fail("kvs-get", d))?;
        if self.version == Version::One {
            return v1::get(self, key);
        }
        let src = src_rank.map_or_else(|| "-1".to_string(), |r| r.to_string());
        let cmd = format!("cmd=kvs-get;jobid={};srcid={src};key={key};", self.jobid);
        let reply = v2::request(self, "kvs-get", &cmd)?;
        v2::found(self, "kvs-get", key, reply)
    }

    /// A job attribute such as `PMI_process_mapping`; `Ok(None)` when the
    /// server has none. PMI-1 servers keep it in the job's KVS.
    pub(crate) fn job_attr(&mut self, key: &str) -> Result<Option<String>> {
        check_key(key).map_err(|d| self.fail("info-getjobattr", d))?;
        if self.version == Version::One {
            return v1::get(self, key);
        }
        let reply = v2::request(self, "info-getjobattr", &format!("cmd=info-getjobattr;key={key};"))?;
        Ok(v2::found(self, "info-getjobattr", key, reply).unwrap_or(None))
    }

    /// Says goodbye to the server, unless MPI shares the connection (then
    /// MPI's own finalize does); the connection is unusable afterwards.
    pub(crate) fn finalize(mut self) -> Result<()> {
        match (self.shared(), self.version) {
            (true, _) => Ok(()),
            (false, Version::One) => v1::finalize(&mut self),
            (false, Version::Two) => v2::request(&mut self, "finalize", "cmd=finalize;").map(drop),
        }
    }

    /// Asks the server to kill the whole job (there is no reply). The
    /// caller should exit afterwards in case the kill is slow.
    pub(crate) fn abort(mut self, msg: &str) -> Result<()> {
        if self.version == Version::One {
            return self.send("abort", "cmd=abort exitcode=1\n");
        }
        let msg = message::printable(msg);
        self.send("abort", &v2::frame(&format!("cmd=abort;isworld=TRUE;msg={msg};")))
    }

    /// Sends an init line and reads the server's answer line.
    pub(super) fn init_line(&mut self, line: &[u8]) -> Result<String> {
        self.conn.send(line).map_err(|e| self.io_fail("init", e))?;
        let answer = self.conn.read_line().map_err(|e| self.io_fail("init", e))?;
        if field(&answer, "cmd") != Some("response_to_init") {
            return Err(self.fail("init", format!("expected response_to_init, got {answer:?}")));
        }
        Ok(answer)
    }

    /// One PMI-1 exchange: `line` out, a reply line back.
    pub(super) fn line_request(&mut self, step: &'static str, line: &str) -> Result<String> {
        self.send(step, line)?;
        self.conn.read_line().map_err(|e| self.io_fail(step, e))
    }

    /// One more line of an answer that spans several.
    pub(super) fn read_line(&mut self, step: &'static str) -> Result<String> {
        self.conn.read_line().map_err(|e| self.io_fail(step, e))
    }

    pub(super) fn send(&mut self, step: &'static str, bytes: &str) -> Result<()> {
        self.conn.send(bytes.as_bytes()).map_err(|e| self.io_fail(step, e))
    }

    pub(super) fn fail(&self, step: &'static str, detail: impl Into<String>) -> Error {
        Error::Pmi {
            rank: Some(self.rank),
            server: self.server(),
            step,
            detail: detail.into(),
        }
    }

    pub(super) fn io_fail(&self, step: &'static str, e: io::Error) -> Error {
        let detail = match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                let why = match step {
                    "kvs-fence" | "barrier" => "some rank has not reached the fence",
                    _ => "the server ignored the request",
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

    #[cfg(test)]
    pub(super) fn raw_fd(&self) -> std::os::fd::RawFd {
        self.conn.raw_fd()
    }
}

fn connect_port(addr: &str, timeout: Duration) -> Result<PmiSocket> {
    let fail = |d: String| env_err(None, format!("PMI_PORT={addr}: {d}"));
    let target = addr
        .to_socket_addrs()
        .map_err(|e| fail(e.to_string()))?
        .next()
        .ok_or_else(|| fail("resolves to no address".into()))?;
    let stream = TcpStream::connect_timeout(&target, timeout).map_err(|e| fail(format!("cannot connect: {e}")))?;
    Ok(PmiSocket::Port(stream))
}

/// How long each exchange with the server may take: the bootstrap timeout,
/// for every road (PMIx included).
pub(super) fn timeout(var: &impl Fn(&str) -> Option<String>) -> Result<Duration> {
    let secs = optional(var, BOOTSTRAP_TIMEOUT)?.unwrap_or(DEFAULT_BOOTSTRAP_TIMEOUT_SECS as usize);
    Ok(Duration::from_secs(secs.max(1) as u64))
}

fn optional(var: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<usize>> {
    var(name).map(|v| parse(None, name, &v)).transpose()
}

fn parse(rank: Option<usize>, name: &str, value: &str) -> Result<usize> {
    value
        .trim()
        .parse()
        .map_err(|_| env_err(rank, format!("{name}={value:?} is not a non-negative integer")))
}

pub(super) fn env_err(rank: Option<usize>, detail: String) -> Error {
    Error::Pmi {
        rank,
        server: "the PMI server the launcher named (PMI_FD or PMI_PORT)".into(),
        step: "init",
        detail,
    }
}

#[cfg(test)]
mod tests;
