//! Teams: ordered subsets of the job's ranks that run collectives together,
//! as in OpenSHMEM 1.5.
//!
//! Every team is a strided set of world ranks (`start`, `start + stride`,
//! ...), because both ways to make one keep that shape: a strided split of
//! a strided team is strided, and so are the rows and columns of a 2-D
//! split. A team owns one slot of the team area ([`layout`]) on each of its
//! members, which holds its step flags and scratch.
//!
//! Creation ([`World::split_strided`](crate::World::split_strided), [`World::split_2d`](crate::World::split_2d)) is collective
//! over the parent: the parent all-reduces its members' free-slot masks
//! (with an AND) together with a digest of the arguments, so every member
//! picks the same slot, and arguments that differ between members are an
//! error on all of them instead of a hang.

pub(crate) mod layout;
mod slots;
mod split;

use std::sync::atomic::AtomicU64;

pub use layout::MAX_TEAMS;

/// A team this rank belongs to. Made by [`World::split_strided`](crate::World::split_strided) or
/// [`World::split_2d`](crate::World::split_2d), or the world team [`World::team_world`](crate::World::team_world). Give a
/// split team back with [`World::team_destroy`](crate::World::team_destroy).
///
/// Team member numbers ("team PEs") run `0..n_pes()` in world-rank order of
/// the split that made the team.
#[derive(Debug)]
pub struct Team {
    pub(crate) slot: usize,
    /// World rank of member 0.
    start: usize,
    /// World-rank distance between consecutive members.
    stride: isize,
    size: usize,
    me: usize,
    pub(crate) world_id: u64,
    /// Collectives this rank has run on the team; numbers its step flags.
    pub(crate) calls: AtomicU64,
    /// Exchange rounds run on the team; picks the scratch half (`coll::exchange`).
    pub(crate) exchanges: AtomicU64,
    /// Members grouped by the node (same-host ranks whose heaps are mapped
    /// into each other), in member order; for node-aware algorithms.
    pub(crate) nodes: Nodes,
}

/// A team's members grouped by node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Nodes {
    /// Member indices of each node, ascending; nodes ordered by first member.
    pub groups: Vec<Vec<usize>>,
    /// Which group this rank is in.
    pub mine: usize,
    /// Each group's leader: its lowest member.
    pub leaders: Vec<usize>,
}

impl Nodes {
    /// Whether every member shares this rank's node (all heaps mapped here).
    pub fn single(&self) -> bool {
        self.groups.len() == 1
    }

    /// Whether the hierarchy helps: more than one node, and some node with
    /// more than one member.
    pub fn hierarchical(&self) -> bool {
        self.groups.len() > 1 && self.groups.len() < self.groups.iter().map(Vec::len).sum::<usize>()
    }
}

impl Team {
    /// A team of `size` world ranks from `start`, `stride` apart; this rank
    /// is member `me`. `node_of` gives each world rank's node.
    fn new(node_of: &[usize], world_id: u64, slot: usize, start: usize, stride: isize, size: usize, me: usize) -> Team {
        let rank_of = |i: usize| (start as isize + i as isize * stride) as usize;
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut node_ids: Vec<usize> = Vec::new();
        for member in 0..size {
            let node = node_of[rank_of(member)];
            match node_ids.iter().position(|&n| n == node) {
                Some(g) => groups[g].push(member),
                None => {
                    node_ids.push(node);
                    groups.push(vec![member]);
                }
            }
        }
        let mine = groups
            .iter()
            .position(|g| g.contains(&me))
            .expect("every member is in a group");
        Team {
            slot,
            start,
            stride,
            size,
            me,
            world_id,
            calls: AtomicU64::new(0),
            exchanges: AtomicU64::new(0),
            nodes: Nodes {
                leaders: groups.iter().map(|g| g[0]).collect(),
                groups,
                mine,
            },
        }
    }

    /// This rank's number in the team (`shmem_team_my_pe`).
    pub fn my_pe(&self) -> usize {
        self.me
    }

    /// Number of members (`shmem_team_n_pes`).
    pub fn n_pes(&self) -> usize {
        self.size
    }

    /// The world rank of member `pe`, if `pe < n_pes()`.
    pub fn world_rank(&self, pe: usize) -> Option<usize> {
        (pe < self.size).then(|| self.rank_of(pe))
    }

    /// Member `pe` of this team as a member of `other`, if it is one
    /// (`shmem_team_translate_pe`).
    pub fn translate_pe(&self, pe: usize, other: &Team) -> Option<usize> {
        other.member_of_rank(self.world_rank(pe)?)
    }

    /// The member number of world rank `rank`, if it is a member.
    pub fn member_of_rank(&self, rank: usize) -> Option<usize> {
        let offset = rank as isize - self.start as isize;
        if self.stride == 0 {
            return (offset == 0 && self.size > 0).then_some(0);
        }
        if offset % self.stride != 0 {
            return None;
        }
        let index = offset / self.stride;
        (index >= 0 && (index as usize) < self.size).then_some(index as usize)
    }

    /// World rank of member `i`; `i < n_pes()`.
    #[inline]
    pub(crate) fn rank_of(&self, i: usize) -> usize {
        (self.start as isize + i as isize * self.stride) as usize
    }

    /// The world team, in slot 0, for a world being assembled.
    pub(crate) fn world(node_of: &[usize], world_id: u64, rank: usize) -> Team {
        Team::new(node_of, world_id, 0, 0, 1, node_of.len(), rank)
    }

    /// The world-rank geometry: (start, stride, size).
    pub(crate) fn geometry(&self) -> (usize, isize, usize) {
        (self.start, self.stride, self.size)
    }
}
