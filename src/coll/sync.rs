//! `sync` and `barrier` on a team.
//!
//! On one node whose ranks outnumber its cores, members check in with
//! member 0, which releases them. Other flat teams use the dissemination
//! algorithm (Hensgen, Finkel and Manber):
//! in round k, member i notifies member i + 2^k and waits for member
//! i - 2^k, ⌈log2 n⌉ rounds. Teams spread over several nodes with several
//! members on some node sync node-aware: each node's members notify their
//! leader over shared memory, the leaders run dissemination among
//! themselves, and each leader releases its node. Inter-host messages then
//! scale with nodes, not ranks.

use super::{Coll, Members};
use crate::error::Result;
use crate::rma::Rma;
use crate::team::Team;
use crate::world::World;

impl World {
    /// Waits until every member of `team` has entered the sync
    /// (`shmem_team_sync`). Unlike [`team_barrier`](World::team_barrier),
    /// it does not complete this rank's puts first.
    #[track_caller]
    pub fn team_sync(&self, team: &Team) -> Result<()> {
        let at = std::panic::Location::caller();
        crate::error::located_call(|| self.sync_then(team, at, false))
    }

    /// The sync, after a quiet when `quiet`. The world's syncs cut the job
    /// into the race checker's phases: the phase ends before the quiet, so
    /// that the barrier's own quiet orders nothing inside the phase.
    fn sync_then(&self, team: &Team, at: &'static std::panic::Location<'static>, quiet: bool) -> Result<()> {
        let phase = match crate::race::on() && team.slot == 0 {
            true => crate::race::phase_ends(&self.links, at)?,
            false => None,
        };
        if quiet {
            self.quiet()?;
        }
        let c = Coll::begin(self, team, "team_sync")?;
        let published = c.agree_sync()?;
        c.sync(0)?;
        c.agreed_sync(published)?;
        crate::race::phase_ended(phase)
    }

    /// Completes this rank's puts ([`quiet`](World::quiet)), then syncs
    /// the team: a put made before the barrier is visible to every member
    /// after it.
    #[track_caller]
    pub fn team_barrier(&self, team: &Team) -> Result<()> {
        let at = std::panic::Location::caller();
        crate::error::located_call(|| {
            let _call = crate::watch::call("barrier");
            let _span = crate::profile::span(crate::profile::Family::Barrier);
            self.sync_then(team, at, true)
        })
    }

    /// Completes this rank's puts, then waits until every rank of the job
    /// has entered the barrier (`shmem_barrier_all`).
    #[track_caller]
    pub fn barrier(&self) -> Result<()> {
        crate::error::located_call(|| self.team_barrier(&self.world_team))
    }

    /// Waits until every rank has entered, without completing puts (`shmem_sync_all`).
    #[track_caller]
    pub fn sync_all(&self) -> Result<()> {
        crate::error::located_call(|| self.team_sync(&self.world_team))
    }
}

impl Coll<'_> {
    /// Syncs the team, using steps from `step` on; returns the next free step.
    #[track_caller]
    pub fn sync(&self, step: u64) -> Result<u64> {
        crate::error::located(|| {
            let nodes = &self.t.nodes;
            if nodes.single() && !self.w.spin_waits && self.n() > 2 {
                return self.central(step);
            }
            if !nodes.hierarchical() {
                return self.dissemination(Members::All(self.n()), self.me(), step);
            }
            let local = &nodes.groups[nodes.mine];
            let leader = local[0];
            if self.me() != leader {
                self.notify(leader, step)?;
                self.wait(leader, step + 2)?;
                return Ok(step + 3 + 64);
            }
            for &member in &local[1..] {
                self.wait(member, step)?;
            }
            let leaders = &nodes.leaders;
            let at = nodes.mine;
            self.dissemination(Members::Some(leaders), at, step + 3)?;
            for &member in &local[1..] {
                self.notify(member, step + 2)?;
            }
            Ok(step + 3 + 64)
        })
    }

    /// One node whose ranks outnumber its cores: every member notifies
    /// member 0, which releases them all. Each member waits once, instead
    /// of once per dissemination round, each wait a turn on a shared core;
    /// and member 0 leaves first, the root of most rooted collectives.
    fn central(&self, step: u64) -> Result<u64> {
        if self.me() != 0 {
            self.notify(0, step)?;
            self.wait(0, step + 1)?;
            return Ok(step + 2);
        }
        for member in 1..self.n() {
            self.wait(member, step)?;
        }
        for member in 1..self.n() {
            self.notify(member, step + 1)?;
        }
        Ok(step + 2)
    }

    /// Dissemination among `members` (member numbers), this rank being
    /// `members[at]`; uses steps `step..step + rounds`.
    #[track_caller]
    pub fn dissemination(&self, members: Members, at: usize, step: u64) -> Result<u64> {
        crate::error::located(|| {
            let m = members.len();
            let mut distance = 1;
            let mut round = step;
            while distance < m {
                self.notify(members.get((at + distance) % m), round)?;
                self.wait(members.get((at + m - distance) % m), round)?;
                distance <<= 1;
                round += 1;
            }
            Ok(round)
        })
    }
}
