//! The launchers' process-management interfaces, as one closed set chosen at
//! run time: PMIx through the launcher's `libpmix` ([`pmix`]), or PMI-2 and
//! PMI-1 on the wire ([`wire`], with [`v2`] and [`v1`]). [`Pmi`] is their one surface: rank
//! and size, a key-value space with a fence, the job's local ranks, the
//! farewell and the abort; over it an all-gather ([`Pmi::publish`],
//! [`Pmi::fetch`]) carries bytes of any length.
//!
//! The all-gather puts each rank's bytes hex-encoded, in chunks of at most
//! [`CHUNK`] characters, under `oneside-<epoch>-<rank>-<i>` plus a count key
//! `oneside-<epoch>-<rank>-n`; one fence; then a rank reads another's chunks.

pub(crate) mod hint;
pub(crate) mod message;
pub(crate) mod pmix;
pub(crate) mod wire;

use super::in_mpi;
use crate::error::{Error, Result};
use crate::protocol::env::{hex_decode, hex_encode};
use std::time::Duration;

/// Hex characters per KVS value; PMI's conventional value limit is 1024.
pub(crate) const CHUNK: usize = 1000;

/// A connected PMI client, whichever road it took.
pub(crate) struct Pmi {
    road: Road,
    /// How many all-gathers have run; part of every key so no key is reused.
    epoch: u64,
}

enum Road {
    Wire(wire::Wire),
    Pmix(pmix::Pmix),
}

/// Whether the process's MPI, if any, takes `PMI_FD` or `PMI_PORT` too
/// and so shares our connection, finalizing it itself: MPICH's family,
/// and Open MPI under srun or Flux with its Slurm PMI-1/2 or Flux
/// component. Open MPI otherwise joins only through PMIx: under Hydra it
/// runs as a singleton and never sends the PMI `finalize`, whose absence
/// Hydra reports as the rank's bad termination (`Hangup`). An MPI that
/// cannot be named is taken as sharing it, as before.
fn mpi_takes_the_wire() -> bool {
    use super::launcher::{Kind, Launcher};
    use super::mpi_library::{Family, MpiLibrary};
    if !in_mpi::linked() {
        return false;
    }
    let kind = Launcher::at_start().map(|l| l.kind);
    MpiLibrary::found().is_none_or(|m| match m.family {
        Family::Mpich => true,
        Family::OpenMpi => (m.slurm_pmi && kind == Some(Kind::Srun)) || (m.flux && kind == Some(Kind::Flux)),
    })
}

impl Pmi {
    /// The launcher's PMI, if it named one: PMIx when a PMIx server is
    /// named (falling back to `PMI_FD` if libpmix will not open), else the
    /// wire server of `PMI_FD` or `PMI_PORT`. `None`: no PMI at all.
    pub(crate) fn from_env() -> Option<Result<Pmi>> {
        let var = |k: &str| std::env::var(k).ok();
        if hint::pmix_named(&var) {
            let timeout = match wire::timeout(&var) {
                Ok(timeout) => timeout,
                Err(e) => return Some(Err(e)),
            };
            match pmix::Pmix::init(timeout) {
                Ok(p) => return Some(Ok(Pmi::from(Road::Pmix(p)))),
                Err(e) if var("PMI_FD").is_none() => return Some(Err(e)),
                Err(_) => {}
            }
        }
        let mpi = match (mpi_takes_the_wire(), in_mpi::active()) {
            (false, _) => wire::MpiHere::Absent,
            (true, false) => wire::MpiHere::Later,
            (true, true) => wire::MpiHere::Active,
        };
        let wire = wire::Wire::from_env(mpi)?;
        Some(wire.map(|w| Pmi::from(Road::Wire(w))))
    }

    fn from(road: Road) -> Pmi {
        Pmi { road, epoch: 0 }
    }

    #[cfg(test)]
    pub(crate) fn wire(w: wire::Wire) -> Pmi {
        Pmi::from(Road::Wire(w))
    }

    pub(crate) fn rank(&self) -> usize {
        match &self.road {
            Road::Wire(w) => w.rank(),
            Road::Pmix(p) => p.rank(),
        }
    }

    pub(crate) fn size(&self) -> usize {
        match &self.road {
            Road::Wire(w) => w.size(),
            Road::Pmix(p) => p.size(),
        }
    }

    /// The job's id from the server (Slurm's `<job>.<step>`, a KVS name,
    /// a PMIx namespace).
    pub(crate) fn jobid(&self) -> &str {
        match &self.road {
            Road::Wire(w) => w.jobid(),
            Road::Pmix(p) => p.jobid(),
        }
    }

    /// How long each exchange with the server may take.
    pub(crate) fn timeout(&self) -> Duration {
        match &self.road {
            Road::Wire(w) => w.timeout(),
            Road::Pmix(p) => p.timeout(),
        }
    }

    /// What the server is, for messages.
    pub(crate) fn server(&self) -> String {
        match &self.road {
            Road::Wire(w) => w.server(),
            Road::Pmix(p) => p.server(),
        }
    }

    /// Stores `key=value` for this rank; others see it after the next fence.
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<()> {
        match &mut self.road {
            Road::Wire(w) => w.put(key, value),
            Road::Pmix(p) => p.put(key, value),
        }
    }

    /// The barrier that publishes every rank's puts.
    pub(crate) fn fence(&mut self) -> Result<()> {
        match &mut self.road {
            Road::Wire(w) => w.fence(),
            Road::Pmix(p) => p.fence(),
        }
    }

    /// A barrier that publishes nothing new: PMIx then skips gathering
    /// every rank's data to every node (a wire server has one fence).
    pub(crate) fn barrier(&mut self) -> Result<()> {
        match &mut self.road {
            Road::Wire(w) => w.fence(),
            Road::Pmix(p) => p.barrier(),
        }
    }

    /// `key` as `rank` put it; `Ok(None)` when nobody did.
    pub(crate) fn get(&mut self, rank: usize, key: &str) -> Result<Option<String>> {
        match &mut self.road {
            Road::Wire(w) => w.get(Some(rank), key),
            Road::Pmix(p) => p.get(rank, key),
        }
    }

    /// The ranks on this rank's node, in rank order, if the server says
    /// (`PMI_process_mapping`, or PMIx's local peers).
    pub(crate) fn local_ranks(&mut self) -> Result<Option<Vec<usize>>> {
        let (rank, size) = (self.rank(), self.size());
        match &mut self.road {
            Road::Wire(w) => {
                let mapped = w.job_attr("PMI_process_mapping")?;
                let nodes = mapped.and_then(|m| super::process_mapping::nodes_of(&m, size));
                Ok(nodes.map(|node_of| (0..size).filter(|&p| node_of[p] == node_of[rank]).collect()))
            }
            Road::Pmix(p) => Ok(p.local_ranks()?.map(|mut r| {
                r.sort_unstable();
                r
            })),
        }
    }

    /// The end of the job for this rank: a fence, so no rank closes its
    /// endpoints while a peer's operations on it still wait, then goodbye.
    /// On a connection MPI shares, after MPI_Finalize closed it, there is
    /// nothing left to fence on: MPI_Finalize itself was the last barrier.
    pub(crate) fn farewell(mut self) -> Result<()> {
        if let Road::Wire(w) = &mut self.road {
            if !w.shared() && mpi_takes_the_wire() {
                w.mpi_arrived();
            }
            if w.shared() && in_mpi::finalized() {
                return Ok(());
            }
        }
        self.barrier()?;
        match self.road {
            Road::Wire(w) => w.finalize(),
            Road::Pmix(p) => p.finalize(),
        }
    }

    /// Asks the launcher to end the whole job.
    pub(crate) fn abort(self, msg: &str) -> Result<()> {
        match self.road {
            Road::Wire(w) => w.abort(msg),
            Road::Pmix(p) => p.abort(msg),
        }
    }

    /// Gathers every rank's `own` bytes, indexed by rank. Collective: every
    /// rank must call it, the same number of times. Each rank reads every
    /// other rank's keys: N² gets in all, which `under_pmi` avoids for cards.
    pub(crate) fn allgather(&mut self, own: &[u8]) -> Result<Vec<Vec<u8>>> {
        let epoch = self.publish(own)?;
        let rank = self.rank();
        (0..self.size())
            .map(|peer| match peer == rank {
                true => Ok(own.to_vec()),
                false => self.fetch(epoch, peer),
            })
            .collect()
    }

    /// Puts this rank's `own` bytes for an all-gather, then fences: every
    /// rank's bytes can be fetched after it. Returns the all-gather's epoch.
    pub(crate) fn publish(&mut self, own: &[u8]) -> Result<u64> {
        let epoch = self.epoch;
        self.epoch += 1;
        let hex = hex_encode(own);
        let chunks: Vec<&str> = (0..hex.len())
            .step_by(CHUNK)
            .map(|i| &hex[i..(i + CHUNK).min(hex.len())])
            .collect();
        let rank = self.rank();
        for (i, chunk) in chunks.iter().enumerate() {
            self.put(&gather_key(epoch, rank, &i.to_string()), chunk)?;
        }
        self.put(&gather_key(epoch, rank, "n"), &chunks.len().to_string())?;
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
            .get(rank, &n_key)?
            .ok_or_else(|| self.fail("get", missing(&n_key)))?;
        let n: usize = n_text
            .parse()
            .map_err(|_| self.fail("get", format!("{n_key}={n_text:?} is not a count")))?;
        let mut hex = String::new();
        for i in 0..n {
            let k = gather_key(epoch, rank, &i.to_string());
            hex += &self.get(rank, &k)?.ok_or_else(|| self.fail("get", missing(&k)))?;
        }
        hex_decode(&hex).ok_or_else(|| self.fail("get", format!("rank {rank}'s bytes under {n_key} are not valid hex")))
    }

    pub(crate) fn fail(&self, step: &'static str, detail: String) -> Error {
        Error::Pmi {
            rank: Some(self.rank()),
            server: self.server(),
            step,
            detail,
        }
    }
}

/// The key of part `part` of `rank`'s bytes in all-gather `epoch`.
fn gather_key(epoch: u64, rank: usize, part: &str) -> String {
    format!("oneside-{epoch}-{rank}-{part}")
}
