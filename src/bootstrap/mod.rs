//! Rank-side bootstrap: connect to `rlaunch`, authenticate, register this
//! rank's transport card, and receive every rank's card: inline, or from
//! the host's card table file that one rank of the host writes for the
//! others ([`table`]). Started by another launcher instead (`srun`,
//! `mpirun`, `mpiexec.hydra`, Flux), a rank wires up through that
//! launcher's PMI ([`pmi`]: PMIx, PMI-2 or PMI-1, chosen at run time;
//! [`under_pmi`]), which says where every rank runs ([`process_mapping`]).
//! With none, the rank is a singleton, unless some launcher's variables say
//! it is one of many ([`pmi::hint`]): then it stops with a message. Which
//! launcher that is ([`launcher`]) and which MPI is in the process
//! ([`mpi_library`]) decide, before any road is taken, whether the
//! program's MPI can join the same job ([`mpi_agree`], [`mpi_advice`]).
//!
//! The launcher link stays open after bootstrap; it carries `Finalized` at the
//! end of the job and lets the launcher see a rank vanish.

pub(crate) mod in_mpi;
pub(crate) mod launcher;
pub(crate) mod mpi_advice;
pub(crate) mod mpi_agree;
pub(crate) mod mpi_library;
pub(crate) mod pmi;
pub(crate) mod process_mapping;
pub(crate) mod table;
pub(crate) mod under_pmi;

use crate::error::{Error, Result};
use crate::protocol::auth::{self, HandshakeError};
use crate::protocol::env::LaunchEnv;
use crate::protocol::wire::{recv_blocking, send_blocking, table_entries, Msg, MAX_FRAME, MAX_TABLE_FRAME};
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use table::TableBytes;

use crate::reporter::Reporter;

/// How much longer than the launcher a rank waits for every rank to
/// register, so the launcher's verdict (which ranks are missing) comes first.
const LAUNCHER_VERDICT_GRACE: Duration = Duration::from_secs(2);

/// The open connection to whoever launched the job, kept for the life of
/// the world: rlaunch, or the launcher's PMI (taken by `finalize` or
/// `abort`, hence the `Option`).
pub struct LauncherLink {
    stream: Option<TcpStream>,
    pmi: Option<pmi::Pmi>,
    rank: usize,
    /// The card table file this rank published for its host, until
    /// [`LauncherLink::remove_card_table`].
    card_table: Option<PathBuf>,
    /// The watchdog's copy of `stream`, shared with the farewell, which
    /// ends it first (see [`Reporter`]).
    reports: Arc<Mutex<Option<TcpStream>>>,
}

impl LauncherLink {
    /// The link to a PMI server, after wire-up; `card_table` is the
    /// node's table file, if this rank published it.
    pub(crate) fn pmi(pmi: pmi::Pmi, card_table: Option<PathBuf>) -> LauncherLink {
        let rank = pmi.rank();
        LauncherLink {
            stream: None,
            pmi: Some(pmi),
            rank,
            card_table,
            reports: Arc::default(),
        }
    }

    /// A reporter for the watchdog, when the launcher is rlaunch (which
    /// reads what it sends).
    pub(crate) fn reporter(&self) -> Option<Reporter> {
        let copy = self.stream.as_ref()?.try_clone().ok()?;
        *crate::sync::lock(&self.reports) = Some(copy);
        Some(Reporter::new(self.reports.clone()))
    }

    /// Removes the card table file this rank published, once every rank of
    /// its host has read it (after the wire-up barrier).
    pub fn remove_card_table(&mut self) {
        if let Some(path) = self.card_table.take() {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Tells the launcher this rank finalized cleanly, and waits until it
    /// has recorded that, so the launcher never mistakes our exit for a
    /// crash, and until every rank has done the same (a PMI fence under
    /// other launchers), so no rank closes its endpoints while a peer's operations
    /// on it still wait for their completions.
    /// `at` says where finalize was called, for rlaunch's reports;
    /// `reached`, the furthest collective step signalled on each team slot
    /// in use (the deadlock check's evidence, `Msg::Finalized`).
    pub fn send_finalized(&mut self, at: &str, reached: Vec<(u32, u64)>) -> Result<()> {
        if let Some(pmi) = self.pmi.take() {
            return pmi.farewell();
        }
        self.farewell(Msg::Finalized {
            rank: self.rank as u32,
            at: at.to_string(),
            reached,
            races: crate::race::found() as u32,
        })
    }

    /// Asks the launcher to end the whole job with `status`, and waits
    /// until it has recorded that (a PMI server is asked to abort the
    /// job, which it does without an answer).
    pub fn send_global_exit(&mut self, status: i32) -> Result<()> {
        if let Some(pmi) = self.pmi.take() {
            let rank = self.rank;
            return pmi.abort(&format!("rank {rank} called global_exit({status})"));
        }
        self.farewell(Msg::GlobalExit {
            rank: self.rank as u32,
            status,
        })
    }

    fn farewell(&mut self, msg: Msg) -> Result<()> {
        let rank = self.rank;
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        let fail = |source| Error::Finalize { rank, source };
        // The watchdog's copy goes first: nothing may follow the farewell.
        crate::sync::lock(&self.reports).take();
        send_blocking(stream, &msg).map_err(fail)?;
        // No time limit: the launcher answers once every rank has said
        // farewell, which may be long after this rank (a rank may leave
        // main early while the others compute), or ends the job when a
        // peer waits for this rank in a call it will never make; it is
        // the one that can tell the two apart. A launcher that dies
        // closes the link.
        stream.set_read_timeout(None).map_err(fail)?;
        match recv_blocking(stream, MAX_FRAME).map_err(fail)? {
            Msg::Goodbye => Ok(()),
            Msg::Abort { reason } => Err(Error::FinalizeAbandoned { rank, reason }),
            other => Err(fail(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("expected Goodbye, got {}", other.kind()),
            ))),
        }
    }
}

/// Who started this rank: rlaunch (its variables), another launcher (its
/// PMI server, connected, after the first all-gather), or nobody (`None`:
/// a singleton). A launcher that says this is one of many ranks but left no
/// PMI road is an error that says so: never a silent singleton. So is a
/// program's MPI that cannot join the launcher's job ([`mpi_agree`]),
/// before any road is taken.
pub(crate) fn launched() -> Result<Option<(LaunchEnv, Option<under_pmi::PmiJob>)>> {
    mpi_agree::check_launch()?;
    if let Some(env) = LaunchEnv::from_env()? {
        return Ok(Some((env, None)));
    }
    if let Some(connected) = pmi::Pmi::from_env() {
        let (env, job) = under_pmi::launch_env(connected?)?;
        return Ok(Some((env, Some(job))));
    }
    match pmi::hint::missing_pmi_hint() {
        Some(detail) => Err(Error::MissingPmi { detail }),
        None => Ok(None),
    }
}

/// Runs the whole bootstrap and returns the card table, which holds every
/// rank's card, indexed by rank ([`table_entries`]).
///
/// `make_card` builds this rank's card once the address peers reach it at
/// (the local end of the launcher connection) is known.
pub fn exchange_cards(
    env: &LaunchEnv,
    make_card: impl FnOnce(IpAddr) -> Result<Vec<u8>>,
) -> Result<(TableBytes, LauncherLink)> {
    let timeout = Duration::from_secs(env.bootstrap_timeout_secs.max(1));
    let launcher_err = |stage: &'static str| {
        let addr = env.bootstrap_addr.clone();
        move |source: io::Error| Error::BootstrapLauncher {
            rank: env.rank,
            addr,
            stage,
            source,
        }
    };

    let addr = resolve(&env.bootstrap_addr).map_err(launcher_err("address lookup"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(launcher_err("connect"))?;
    stream.set_nodelay(true).map_err(launcher_err("connect"))?;
    crate::protocol::liveness::watch(&stream).map_err(launcher_err("connect"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(launcher_err("connect"))?;

    auth::connect_blocking(&mut stream, &env.secret).map_err(|e| handshake_error(e, env, "authenticate"))?;

    // Peers reach us at the address the launcher sees us at.
    let local_ip = stream.local_addr().map_err(launcher_err("register"))?.ip();
    let register = Msg::Register {
        rank: env.rank as u32,
        size: env.size as u32,
        card: make_card(local_ip)?,
        host: env.host.clone(),
        pid: std::process::id(),
    };
    send_blocking(&mut stream, &register).map_err(launcher_err("register"))?;
    // The launcher's deadline for every rank to register is `timeout` from
    // its start, and it then names the missing ranks in an `Abort`; waiting
    // a grace longer here lets that verdict arrive even when the launcher
    // runs late under load, rather than this rank's own, less telling error.
    stream
        .set_read_timeout(Some(timeout + LAUNCHER_VERDICT_GRACE))
        .map_err(launcher_err("register"))?;
    let (table, card_table) = receive_table(env, &mut stream, timeout + LAUNCHER_VERDICT_GRACE)?;
    if !table_entries(&table).is_ok_and(|cards| cards.len() == env.size) {
        let detail = format!("the card table does not hold {} cards", env.size);
        return Err(protocol(env, &env.bootstrap_addr, detail));
    }
    stream.set_read_timeout(None).map_err(launcher_err("finish"))?;
    Ok((
        table,
        LauncherLink {
            stream: Some(stream),
            pmi: None,
            rank: env.rank,
            card_table,
            reports: Arc::default(),
        },
    ))
}

/// Waits for the card table: inline (publishing it for the host's other
/// ranks if asked), or from the file another rank of this host wrote.
fn receive_table(env: &LaunchEnv, stream: &mut TcpStream, waited: Duration) -> Result<(TableBytes, Option<PathBuf>)> {
    let launcher_err = |stage: &'static str| {
        move |source: io::Error| Error::BootstrapLauncher {
            rank: env.rank,
            addr: env.bootstrap_addr.clone(),
            stage,
            source,
        }
    };
    loop {
        match recv_blocking(stream, MAX_TABLE_FRAME) {
            Ok(Msg::Cards { table, publish }) => {
                let Some(path) = publish else {
                    return Ok((TableBytes::Inline(table), None));
                };
                // If the file cannot be written, the launcher sends the
                // others the table itself.
                let published = table::publish(&path, &table).ok();
                let answer = match published {
                    Some(_) => Msg::CardsPublished,
                    None => Msg::NeedCards,
                };
                send_blocking(stream, &answer).map_err(launcher_err("publish the card table"))?;
                return Ok((TableBytes::Inline(table), published));
            }
            Ok(Msg::CardsAt { path }) => match table::read(&path) {
                Ok(table) => return Ok((table, None)),
                Err(_) => send_blocking(stream, &Msg::NeedCards).map_err(launcher_err("ask for the card table"))?,
            },
            Ok(Msg::Abort { reason }) => return Err(Error::Aborted { rank: env.rank, reason }),
            Ok(other) => {
                return Err(protocol(
                    env,
                    &env.bootstrap_addr,
                    format!("expected Cards, got {}", other.kind()),
                ))
            }
            Err(e) if is_timeout(&e) => {
                return Err(Error::BootstrapTimeout {
                    rank: env.rank,
                    stage: "wait for every rank to register with the launcher",
                    waited,
                    missing: Vec::new(),
                })
            }
            Err(e) => return Err(launcher_err("wait for every rank to register")(e)),
        }
    }
}

/// A failed handshake with the launcher, as this rank's error.
fn handshake_error(e: HandshakeError, env: &LaunchEnv, stage: &'static str) -> Error {
    match e {
        HandshakeError::Io(source) => Error::BootstrapLauncher {
            rank: env.rank,
            addr: env.bootstrap_addr.clone(),
            stage,
            source,
        },
        HandshakeError::Auth(e) => Error::BootstrapAuth {
            rank: env.rank,
            peer: format!("launcher at {}", env.bootstrap_addr),
            detail: e.describe(),
        },
    }
}

fn resolve(addr: &str) -> io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("'{addr}' resolves to no address")))
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

fn protocol(env: &LaunchEnv, peer: &str, detail: String) -> Error {
    Error::BootstrapProtocol {
        rank: env.rank,
        peer: peer.to_string(),
        detail,
    }
}
