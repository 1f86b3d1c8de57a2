//! fcollect, collect and alltoall across nodes, node-aware: each node's
//! leader reads its members' blocks in place, the leaders trade their
//! nodes' blocks in one exchange round, and each leader writes what its
//! members receive into their destinations. Inter-host messages then scale
//! with nodes, not ranks: 2 hosts x 2 ranks send 2 messages across instead
//! of 8.
//!
//! Used while what one leader sends another fits a region of the leaders'
//! exchange (`plan::by_nodes`); otherwise `move_blocks` moves the blocks.

use super::collect::Block;
use super::exchange::Bytes;
use super::{plan, Coll, Members};
use crate::error::Result;

/// Whether a member's block is the same for every receiver (fcollect and
/// collect: it travels across once per node) or differs (alltoall).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Spread {
    SameForAll,
    PerReceiver,
}

impl Coll<'_> {
    /// Moves `block(i)`, member i's block (the same for every receiver),
    /// to every member. Uses steps `first` to `first + 2`.
    pub(super) fn gather_blocks(&self, first: u64, block: impl Fn(usize) -> Block) -> Result<()> {
        self.blocks_by_nodes(first, Spread::SameForAll, |i, _| block(i))
    }

    /// Moves `block(i, j)`, member i's block for member j, from every
    /// member to every member (this rank's block to itself included):
    /// node-aware when the team spans nodes and the leaders' payloads fit,
    /// else by `move_blocks`. Block lengths must depend only on the sender.
    /// Uses steps `first` to `first + 2`.
    pub(super) fn blocks_by_nodes(
        &self,
        first: u64,
        spread: Spread,
        block: impl Fn(usize, usize) -> Block,
    ) -> Result<()> {
        let nodes = &self.t.nodes;
        // What the leader of `from` sends the leader of `to`.
        let payload = |from: &[usize], to: &[usize]| -> usize {
            let per_sender = |i: usize| match spread {
                Spread::SameForAll => block(i, i).len,
                Spread::PerReceiver => to.iter().map(|&j| block(i, j).len).sum(),
            };
            from.iter().map(|&i| per_sender(i)).sum()
        };
        let largest = (nodes.groups.iter())
            .flat_map(|from| nodes.groups.iter().map(move |to| (from, to)))
            .filter(|(from, to)| !std::ptr::eq(*from, *to))
            .map(|(from, to)| payload(from, to))
            .max()
            .unwrap_or(0);
        if !plan::by_nodes(self, largest) {
            return self.move_blocks(first, block);
        }
        let local = &nodes.groups[nodes.mine];
        let leader = local[0];
        if self.me() != leader {
            self.notify(leader, first)?;
            self.skip_exchanges(1);
            // The leader writes our destination, then notifies.
            return self.wait(leader, first + 2);
        }
        for &member in &local[1..] {
            self.wait(member, first)?;
        }
        let sources = local
            .iter()
            .map(|&member| self.peer_base(member))
            .collect::<Result<Vec<_>>>()?;
        let source = |at: usize, b: Block| {
            // SAFETY: each local member's source holds its blocks and stays
            // put until we notify `first + 2` (it waits for that).
            unsafe { std::slice::from_raw_parts(sources[at].add(b.from), b.len) }
        };
        let packed: Vec<Vec<u8>> = (nodes.groups.iter().enumerate())
            .map(|(g, group)| {
                let mut out = Vec::new();
                if g != nodes.mine {
                    for (at, &i) in local.iter().enumerate() {
                        match spread {
                            Spread::SameForAll => out.extend_from_slice(source(at, block(i, i))),
                            Spread::PerReceiver => group
                                .iter()
                                .for_each(|&j| out.extend_from_slice(source(at, block(i, j)))),
                        }
                    }
                }
                out
            })
            .collect();
        let leaders = &nodes.leaders;
        let inbox = self.exchange_among(Members::Some(leaders), nodes.mine, first + 1, |to| {
            let g = leaders.iter().position(|&l| l == to).expect("a leader");
            Bytes::of(&packed[g])
        })?;
        // Every local member is inside this collective (it notified
        // `first`), so its checked destination is ours to fill.
        let write = |j_at: usize, b: Block, data: *const u8| {
            // SAFETY: `data` holds `b.len` bytes (a member's source, or
            // what a leader sent this round) and the destination range is
            // inside member j's checked object.
            unsafe { std::ptr::copy_nonoverlapping(data, sources[j_at].add(b.to), b.len) }
        };
        for (i_at, &i) in local.iter().enumerate() {
            for (j_at, &j) in local.iter().enumerate() {
                let b = block(i, j);
                write(j_at, b, source(i_at, b).as_ptr());
            }
        }
        for (g, group) in nodes.groups.iter().enumerate().filter(|&(g, _)| g != nodes.mine) {
            let mut data = inbox.from(leaders[g]);
            for &i in group {
                for (j_at, &j) in local.iter().enumerate() {
                    let b = block(i, j);
                    write(j_at, b, data);
                    if spread == Spread::PerReceiver {
                        // SAFETY: node g's blocks for us lie back to back,
                        // sender-major, in group order.
                        data = unsafe { data.add(b.len) };
                    }
                }
                if spread == Spread::SameForAll {
                    // SAFETY: as above, one block per sender.
                    data = unsafe { data.add(block(i, i).len) };
                }
            }
        }
        for &member in &local[1..] {
            self.notify(member, first + 2)?;
        }
        Ok(())
    }
}
