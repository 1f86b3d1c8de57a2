//! Making teams: `split_strided` and `split_2d`, collective over the parent.

use super::{layout::MAX_TEAMS, Team};
use crate::coll::ops::And;
use crate::error::{Error, Result};
use crate::world::World;

/// What the parent's members agree on before a team exists: the slots free
/// on all of them, and whether the arguments were valid everywhere.
struct Agreement {
    free: u64,
    all_valid: bool,
}

impl World {
    /// Makes a team of the parent's members `start, start + stride, ...`
    /// (`size` of them), numbered in that order (`shmem_team_split_strided`).
    /// Every member of `parent` calls it with the same arguments; members
    /// of the new team get `Some(team)`, the others `None`.
    ///
    /// Fails on every member alike when the arguments differ between
    /// members, name a non-member of the parent, or when no team slot is
    /// free on every member (at most [`MAX_TEAMS`](crate::MAX_TEAMS) teams
    /// per rank, the world team included).
    #[track_caller]
    pub fn split_strided(&self, parent: &Team, start: usize, stride: isize, size: usize) -> Result<Option<Team>> {
        crate::error::located(|| {
            const OP: &str = "split_strided";
            self.check_team(OP, parent)?;
            let n = parent.n_pes() as isize;
            let member = |i: usize| start as isize + i as isize * stride;
            let valid = size >= 1 && (0..size).all(|i| (0..n).contains(&member(i))) && (stride != 0 || size == 1);
            let digest = [start as u64, stride as u64, size as u64];
            let agreed = self.agree(OP, parent, &digest, valid)?;
            if !agreed.all_valid {
                return Err(self.bad_split(
                    OP,
                    format!(
                        "members start={start}, stride={stride}, size={size} do not all lie in the parent's 0..{n}"
                    ),
                ));
            }
            let slot = self.pick_slots(OP, agreed.free, 1)?[0];
            let Some(me) = (0..size).find(|&i| member(i) as usize == parent.my_pe()) else {
                return Ok(None);
            };
            self.take_slot(slot);
            let world_start = parent.rank_of(start);
            let (_, parent_stride, _) = parent.geometry();
            Ok(Some(self.make_team(
                slot,
                world_start,
                stride * parent_stride,
                size,
                me,
            )))
        })
    }

    /// Splits `parent` into a grid `xrange` members wide
    /// (`shmem_team_split_2d`): returns this rank's row team (the members in
    /// its row, consecutive in the parent) and column team (the members of
    /// its column, `xrange` apart). When the parent's size is not a
    /// multiple of `xrange`, the last row is shorter. An `xrange` above the
    /// parent's size means one row.
    pub fn split_2d(&self, parent: &Team, xrange: usize) -> Result<(Team, Team)> {
        const OP: &str = "split_2d";
        self.check_team(OP, parent)?;
        let n = parent.n_pes();
        let agreed = self.agree(OP, parent, &[xrange as u64], xrange >= 1)?;
        if !agreed.all_valid {
            return Err(self.bad_split(OP, format!("xrange must be at least 1, not {xrange}")));
        }
        let slots = self.pick_slots(OP, agreed.free, 2)?;
        let x = xrange.min(n);
        let (row, col) = (parent.my_pe() / x, parent.my_pe() % x);
        let (_, stride, _) = parent.geometry();
        let row_size = x.min(n - row * x);
        let col_size = (n - col).div_ceil(x);
        self.take_slot(slots[0]);
        self.take_slot(slots[1]);
        let row_team = self.make_team(slots[0], parent.rank_of(row * x), stride, row_size, col);
        let col_team = self.make_team(slots[1], parent.rank_of(col), stride * x as isize, col_size, row);
        Ok((row_team, col_team))
    }

    /// Makes the team of the ranks on this rank's node, the ranks whose
    /// memory is mapped here (OpenSHMEM's `SHMEM_TEAM_SHARED`); collective
    /// over the world. A node whose ranks are not evenly spaced in the
    /// world gets one-member teams, since every team is strided.
    #[track_caller]
    pub fn split_node(&self) -> Result<Team> {
        crate::error::located(|| {
            const OP: &str = "split_node";
            let agreed = self.agree(OP, self.team_world(), &[], true)?;
            let slot = self.pick_slots(OP, agreed.free, 1)?[0];
            let node: Vec<usize> = (0..self.size)
                .filter(|&r| self.node_of[r] == self.node_of[self.rank])
                .collect();
            let stride = match node.len() {
                1 => 1,
                _ => node[1] - node[0],
            };
            let even = node.windows(2).all(|w| w[1] - w[0] == stride);
            self.take_slot(slot);
            Ok(match even {
                true => {
                    let me = node
                        .iter()
                        .position(|&r| r == self.rank)
                        .expect("a rank is on its own node");
                    self.make_team(slot, node[0], stride as isize, node.len(), me)
                }
                false => self.make_team(slot, self.rank, 1, 1, 0),
            })
        })
    }

    /// All-reduces the free-slot masks and the argument digest over `parent`.
    fn agree(&self, op: &'static str, parent: &Team, digest: &[u64], valid: bool) -> Result<Agreement> {
        let mut words = vec![
            self.free_slots.load(std::sync::atomic::Ordering::Relaxed),
            u64::from(valid),
        ];
        words.extend(digest.iter().copied());
        words.extend(digest.iter().map(|d| !d));
        self.reduce_values(parent, And, &mut words)?;
        let k = digest.len();
        let same_args = (0..k).all(|i| words[2 + i] == !words[2 + k + i]);
        if !same_args {
            return Err(self.bad_split(op, "the members of the parent team passed different arguments".into()));
        }
        Ok(Agreement {
            free: words[0],
            all_valid: words[1] == 1,
        })
    }

    /// The `count` lowest slots free on every member.
    fn pick_slots(&self, op: &'static str, free: u64, count: usize) -> Result<Vec<usize>> {
        let slots: Vec<usize> = (0..MAX_TEAMS).filter(|&s| free & (1 << s) != 0).take(count).collect();
        if slots.len() < count {
            return Err(Error::TeamsExhausted {
                rank: self.rank,
                op,
                max: MAX_TEAMS,
            });
        }
        Ok(slots)
    }

    fn bad_split(&self, op: &'static str, detail: String) -> Error {
        Error::BadCollective {
            rank: self.rank,
            op,
            detail,
        }
    }
}
