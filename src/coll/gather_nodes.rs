//! fcollect and collect across nodes, node-aware: each node's leader reads
//! its members' blocks in place, the leaders trade their nodes' blocks in
//! one exchange round, and each leader writes the whole result into its
//! members' destinations. Inter-host messages then scale with nodes, not
//! ranks: 2 hosts x 2 ranks send 2 messages across instead of 8.
//!
//! Used while one node's blocks fit an exchange region
//! (`plan::gather_by_nodes`); otherwise `move_blocks` moves them.

use super::collect::Block;
use super::exchange::Bytes;
use super::{plan, Coll, Members};
use crate::error::Result;

impl Coll<'_> {
    /// Moves `block(i)`, member i's block (the same for every receiver),
    /// to every member: node-aware when the team spans nodes and a node's
    /// blocks fit one exchange region, else by `move_blocks`. Uses steps
    /// `first` to `first + 2`.
    pub(super) fn gather_blocks(&self, first: u64, block: impl Fn(usize) -> Block) -> Result<()> {
        let nodes = &self.t.nodes;
        let node_bytes = |group: &Vec<usize>| group.iter().map(|&i| block(i).len).sum::<usize>();
        let largest_node = nodes.groups.iter().map(node_bytes).max().unwrap_or(0);
        if !plan::gather_by_nodes(self, largest_node) {
            return self.move_blocks(first, |i, _| block(i));
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
        let mut packed = Vec::with_capacity(node_bytes(local));
        for &member in local {
            let b = block(member);
            let base = self.peer_base(member)?;
            // SAFETY: the member's source holds its block and stays put
            // until we notify `first + 2` (it waits for that).
            packed.extend_from_slice(unsafe { std::slice::from_raw_parts(base.add(b.from), b.len) });
        }
        let leaders: Vec<usize> = nodes.groups.iter().map(|g| g[0]).collect();
        let at = nodes.mine;
        let inbox = self.exchange_among(Members::Some(&leaders), at, first + 1, |_| Bytes::of(&packed))?;
        let targets = local
            .iter()
            .map(|&member| self.peer_base(member))
            .collect::<Result<Vec<_>>>()?;
        for (g, group) in nodes.groups.iter().enumerate() {
            let mut data = match g == at {
                true => packed.as_ptr(),
                false => inbox.from(leaders[g]),
            };
            for &i in group {
                let b = block(i);
                for &base in &targets {
                    // SAFETY: every local member is inside this collective
                    // (it notified `first`), so its checked destination is
                    // ours to fill; the data lies in `packed` or in what
                    // leader g sent this round.
                    unsafe { std::ptr::copy_nonoverlapping(data, base.add(b.to), b.len) };
                }
                // SAFETY: node g's blocks lie back to back, in group order.
                data = unsafe { data.add(b.len) };
            }
        }
        for &member in &local[1..] {
            self.notify(member, first + 2)?;
        }
        Ok(())
    }
}
