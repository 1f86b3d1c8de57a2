//! The agents that start a job's ranks, one file each: `local` (this host,
//! through the spawner process), `ssh` (another host's proxy over ssh) and
//! `srun` (every other host's proxy from one srun step), with what the
//! last two share in `proxy_link`. The plan chose each host's agent
//! ([`Agent`]); the supervisor calls [`start`], holds a [`Reach`] for
//! every rank and [`Started::finish`]es once they have ended. Nothing
//! outside this folder asks which agent a host has.

mod local;
mod proxy_link;
mod srun;
mod ssh;

use super::spawn::JobContext;
use super::{JobEvent, RankProcess};
use crate::error::LaunchError;
use crate::hostfile::HostEntry;
use crate::plan::{Agent, LaunchPlan, Placement};
use crate::spawner::Spawner;
use crossbeam::channel::Sender;
use proxy_link::ProxyLink;
use std::sync::Arc;
use std::thread::JoinHandle;

/// How the supervisor reaches a started rank.
pub struct Reach(Via);

enum Via {
    /// A process of this host, started by the local agent.
    Here,
    /// Through its host's proxy.
    Proxy(Arc<ProxyLink>),
}

/// The proxies a signal has gone to, so each host is told once.
#[derive(Default)]
pub struct Told(Vec<String>);

impl Reach {
    fn here() -> Reach {
        Reach(Via::Here)
    }

    fn proxy(link: Arc<ProxyLink>) -> Reach {
        Reach(Via::Proxy(link))
    }

    /// The rank's pid as a process of this host, if it is one (and has
    /// started), for what only this host can see: `/proc`, `/dev/shm`.
    pub fn pid_here(&self, pid: i32) -> Option<i32> {
        matches!(self.0, Via::Here).then_some(pid).filter(|&pid| pid > 0)
    }

    /// Sends `signal` to the rank (its process group here), or asks its
    /// host's proxy to signal all its ranks, once per host (`told`).
    pub fn signal(&self, pid: i32, signal: i32, told: &mut Told) {
        match &self.0 {
            Via::Here => super::spawn::signal_group(pid, signal),
            Via::Proxy(link) if !told.0.contains(&link.host) => {
                told.0.push(link.host.clone());
                link.signal(signal);
            }
            Via::Proxy(_) => {}
        }
    }

    /// The rank will not report its end: cut what reaches it (its host's
    /// proxy connection and agent; a rank here always reports).
    pub fn give_up(&self) {
        if let Via::Proxy(link) = &self.0 {
            link.disconnect();
        }
    }
}

/// What the agents started: a handle on every rank that started, the
/// error that stopped the start (the ranks started before it must be torn
/// down), and what to wait for once every rank has ended.
pub struct Started {
    pub procs: Vec<RankProcess>,
    pub error: Option<LaunchError>,
    watcher: Option<super::children::Watcher>,
    readers: Vec<JoinHandle<()>>,
}

impl Started {
    /// Waits for the agents' output to end: proxy streams and pipes close
    /// once every rank is gone.
    pub fn finish(self) {
        for reader in self.readers {
            let _ = reader.join();
        }
        if let Some(watcher) = self.watcher {
            watcher.finish();
        }
    }
}

/// Starts every host's ranks through its agent, in host order; the ranks
/// of every srun host go in one step, after the others. Must run on the
/// main thread: the ranks' (and proxies') parent-death signal follows the
/// thread that started them.
pub fn start(plan: &LaunchPlan, job: &JobContext, events: &Sender<JobEvent>) -> Result<Started, LaunchError> {
    let hosts = host_groups(plan);
    let local_ranks: usize = hosts
        .iter()
        .filter(|(agent, _)| agent.is_local())
        .map(|(_, p)| p.len())
        .sum();
    let remote_hosts = hosts.iter().filter(|(agent, _)| !agent.is_local()).count();
    check_open_files(plan, local_ranks, remote_hosts)?;
    let (spawner, watcher) = match local_ranks {
        0 => (None, None),
        _ => (
            Some(Spawner::start().map_err(|source| LaunchError::Spawner { source })?),
            Some(local::watcher(plan, events)?),
        ),
    };
    let mut started = Started {
        procs: Vec::with_capacity(plan.ranks.len()),
        error: None,
        watcher,
        readers: Vec::new(),
    };
    let mut srun_hosts: Vec<Vec<&Placement>> = Vec::new();
    for (agent, placements) in hosts {
        let ranks = match agent {
            Agent::Local => {
                let local = spawner
                    .as_ref()
                    .zip(started.watcher.as_ref())
                    .expect("started for local ranks");
                placements
                    .iter()
                    .map(|p| local::start_rank(plan, p, job, local))
                    .collect::<Result<Vec<_>, _>>()
            }
            Agent::Ssh => ssh::start_host(plan, &placements, job, events, &mut started.readers),
            Agent::Srun => {
                srun_hosts.push(placements);
                continue;
            }
        };
        match ranks {
            Ok(mut ranks) => started.procs.append(&mut ranks),
            Err(e) => {
                started.error = Some(e);
                break;
            }
        }
    }
    if started.error.is_none() && !srun_hosts.is_empty() {
        match srun::start_hosts(plan, &srun_hosts, job, events, &mut started.readers) {
            Ok(mut ranks) => started.procs.append(&mut ranks),
            Err(e) => started.error = Some(e),
        }
    }
    started.procs.sort_by_key(|p| p.rank);
    Ok(started)
}

/// The command that runs `words` (a program and its arguments) on `host`
/// through `agent`: itself here, under ssh, or in a one-node srun step
/// (the doctor's probe of every host).
pub fn command_on(plan: &LaunchPlan, host: &HostEntry, agent: Agent, words: &[String]) -> (String, Vec<String>) {
    match agent {
        Agent::Local => (words[0].clone(), words[1..].to_vec()),
        Agent::Ssh => ssh::ssh_command(plan, host, words),
        Agent::Srun => srun::srun_command(&[host], words),
    }
}

/// Each host with ranks, in host order, with its agent and its ranks:
/// one pass over the ranks.
fn host_groups(plan: &LaunchPlan) -> Vec<(Agent, Vec<&Placement>)> {
    let mut by_host: Vec<Vec<&Placement>> = vec![Vec::new(); plan.hosts.len()];
    for p in &plan.ranks {
        by_host[p.host].push(p);
    }
    plan.agents
        .iter()
        .copied()
        .zip(by_host)
        .filter(|(_, placements)| !placements.is_empty())
        .collect()
}

/// Raises rlaunch's open-file limit and checks that the job fits in it:
/// each local rank holds two pipes and a pidfd here, and every rank a
/// bootstrap link.
fn check_open_files(plan: &LaunchPlan, local_ranks: usize, remote_hosts: usize) -> Result<(), LaunchError> {
    let (soft, hard) = oneside::protocol::limits::raise_open_files();
    let needed = (4 * local_ranks + (plan.ranks.len() - local_ranks) + 4 * remote_hosts + 64) as u64;
    if soft == 0 || needed <= soft {
        return Ok(());
    }
    Err(LaunchError::Descriptors {
        host: oneside::protocol::host_addr::hostname(),
        needed,
        hard,
        why: format!(
            "{local_ranks} local ranks x 4: output pipes, exit watch and bootstrap link; {} remote ranks x 1",
            plan.ranks.len() - local_ranks
        ),
    })
}
