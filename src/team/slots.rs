//! A world's teams: the world team, and the team slots of the team area
//! that splits take and `team_destroy` gives back.

use super::Team;
use crate::error::{Error, Result};
use crate::world::World;

impl World {
    pub(crate) fn make_team(&self, slot: usize, start: usize, stride: isize, size: usize, me: usize) -> Team {
        Team::new(&self.node_of, self.id, slot, start, stride, size, me)
    }

    /// Marks `slot` as used by a team of this rank (a new team: no step
    /// signalled on it yet).
    pub(crate) fn take_slot(&self, slot: usize) {
        self.slot_reached[slot].store(0, std::sync::atomic::Ordering::Relaxed);
        self.free_slots
            .fetch_and(!(1 << slot), std::sync::atomic::Ordering::Relaxed);
    }

    /// Each used slot and the furthest step this rank signalled on its
    /// team, for the farewell.
    pub(crate) fn steps_reached(&self) -> Vec<(u32, u64)> {
        let free = self.free_slots.load(std::sync::atomic::Ordering::Relaxed);
        (0..self.slot_reached.len())
            .filter(|slot| free & (1 << slot) == 0)
            .map(|slot| {
                (
                    slot as u32,
                    self.slot_reached[slot].load(std::sync::atomic::Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// Gives `slot` back, clearing its flags for the next team to use it.
    fn release_slot(&self, slot: usize) {
        let range = self.team_layout().flags_range(slot);
        // SAFETY: the range is this rank's team area (inside the heap), and
        // no member signals into a slot after its last collective on it.
        unsafe { self.own.heap_base().add(range.start).write_bytes(0, range.len()) };
        self.free_slots
            .fetch_or(1 << slot, std::sync::atomic::Ordering::Relaxed);
    }

    /// The team of every rank, numbered as the world (`SHMEM_TEAM_WORLD`).
    pub fn team_world(&self) -> &Team {
        &self.world_team
    }

    /// Gives a split team's slot back (`shmem_team_destroy`). Every member
    /// should destroy it, after its last collective on it.
    #[track_caller]
    pub fn team_destroy(&self, team: Team) -> Result<()> {
        crate::error::located(|| {
            self.check_team("team_destroy", &team)?;
            self.release_slot(team.slot);
            Ok(())
        })
    }

    /// Checks that `team` belongs to this world.
    pub(crate) fn check_team(&self, op: &'static str, team: &Team) -> Result<()> {
        if team.world_id == self.id {
            return Ok(());
        }
        Err(Error::BadCollective {
            rank: self.rank,
            op,
            detail: "the team belongs to another world (or was made before this one)".into(),
        })
    }
}
