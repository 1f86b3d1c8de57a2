//! `collect` across nodes in one leaders' round. A collect's counts are
//! known only to their members, so elsewhere it costs a round for the
//! counts before the data moves. Here each node's leader reads its
//! members' counts and sources in place, sends every other leader its
//! node's counts with its node's elements in one message, writes the result
//! into its members' destinations and hands each member every count. When
//! some node's elements do not fit a leader's region, the leaders send
//! only counts, and the blocks move afterwards (`gather_blocks`).
//!
//! A member passes what the leader needs through a *mailbox*: the start of
//! the scratch half of the exchange round it skips. Only the leaders take
//! part in that round, so nobody else writes a member's half meanwhile, and
//! the member's next round uses the other half.

use super::exchange::Bytes;
use super::{Coll, Members};
use crate::error::Result;
use crate::sym::{Pod, Sym};
use std::mem::size_of;

/// What a member tells its leader, in its mailbox (u64 words).
#[derive(Clone, Copy)]
struct Ask {
    count: usize,
    src_off: usize,
    dst_off: usize,
    /// Elements the destination holds.
    dst_len: usize,
}

const ASK_WORDS: usize = 4;

impl Ask {
    /// Whether the leader may write `total` elements into this member's
    /// destination: exactly when the member's own checks pass.
    fn takes(&self, total: usize, size: usize) -> bool {
        let overlap = self.count > 0
            && total > 0
            && self.dst_off < self.src_off + self.count * size
            && self.src_off < self.dst_off + total * size;
        total <= self.dst_len && !overlap
    }
}

impl Coll<'_> {
    /// Whether a collect runs here: the team spans nodes with several
    /// members on some node, and every count fits a member's mailbox.
    pub(super) fn collect_by_nodes(&self) -> bool {
        self.t.nodes.hierarchical() && self.n().max(ASK_WORDS) * 8 <= self.exchange_capacity_among(1)
    }

    /// `collect` of `n` elements from this rank, node-aware. Returns the
    /// number of elements gathered.
    pub(super) fn collect_nodes<T: Pod>(&self, dst: &Sym<T>, src: &Sym<T>, src_off: usize, n: usize) -> Result<usize> {
        let size = size_of::<T>();
        let nodes = &self.t.nodes;
        let leader = nodes.groups[nodes.mine][0];
        let mailbox_off = self.next_exchange_half();
        let mailbox = self.own(mailbox_off).cast::<u64>();
        let ask = Ask {
            count: n,
            src_off,
            dst_off: self.w.checked_offset(self.op, dst, self.w.rank, 0, 0)?,
            dst_len: dst.len(),
        };
        let counts = if self.me() == leader {
            self.lead_collect(ask, mailbox_off, size)?
        } else {
            let words = [ask.count, ask.src_off, ask.dst_off, ask.dst_len];
            for (k, word) in words.into_iter().enumerate() {
                // SAFETY: the mailbox is this rank's scratch half for the
                // round it skips (module doc); n_pes words fit it.
                unsafe { mailbox.add(k).write(word as u64) };
            }
            self.notify(leader, 1)?;
            self.skip_exchanges(1);
            self.wait(leader, 3)?;
            (0..self.n())
                // SAFETY: the leader wrote every count here before step 3.
                .map(|i| unsafe { mailbox.add(i).read() as usize })
                .collect()
        };
        let total = counts.iter().sum();
        let dst_off = self.collect_destination(dst, src, total, n, || counts.clone())?;
        if !self.inline_by_nodes(&counts, size) {
            self.gather_counted(4, src_off, dst_off, &counts, size)?;
        }
        Ok(total)
    }

    /// Whether every leader sent its node's elements with its counts.
    fn inline_by_nodes(&self, counts: &[usize], size: usize) -> bool {
        let capacity = self.exchange_capacity_among(self.t.nodes.groups.len());
        (self.t.nodes.groups.iter()).all(|g| leader_payload(g, counts, size) <= capacity)
    }

    /// The leader's part: returns every member's count. `mailbox_off` is
    /// where each member's mailbox lies in its heap.
    fn lead_collect(&self, mine: Ask, mailbox_off: usize, size: usize) -> Result<Vec<usize>> {
        let nodes = &self.t.nodes;
        let local = &nodes.groups[nodes.mine];
        let bases = local.iter().map(|&m| self.peer_base(m)).collect::<Result<Vec<_>>>()?;
        let mut asks = vec![mine];
        for (&member, &base) in local.iter().zip(&bases).skip(1) {
            self.wait(member, 1)?;
            let mailbox = base.wrapping_add(mailbox_off).cast::<u64>();
            // SAFETY: the member wrote its mailbox before notifying step 1.
            let word = |k: usize| unsafe { mailbox.add(k).read() as usize };
            asks.push(Ask {
                count: word(0),
                src_off: word(1),
                dst_off: word(2),
                dst_len: word(3),
            });
        }
        let source = |at: usize| {
            // SAFETY: each local member's source holds its count of
            // elements and stays put until we notify step 3.
            unsafe { std::slice::from_raw_parts(bases[at].add(asks[at].src_off), asks[at].count * size) }
        };
        let mut packed: Vec<u8> = asks.iter().flat_map(|a| (a.count as u64).to_ne_bytes()).collect();
        let capacity = self.exchange_capacity_among(nodes.groups.len());
        if packed.len() + asks.iter().map(|a| a.count * size).sum::<usize>() <= capacity {
            (0..local.len()).for_each(|at| packed.extend_from_slice(source(at)));
        }
        let leaders = &nodes.leaders;
        let inbox = self.exchange_among(Members::Some(leaders), nodes.mine, 2, |_| Bytes::of(&packed))?;
        let mut counts = vec![0; self.n()];
        for (g, group) in nodes.groups.iter().enumerate() {
            let header = match g == nodes.mine {
                true => packed.as_ptr(),
                false => inbox.from(leaders[g]),
            };
            for (k, &i) in group.iter().enumerate() {
                // SAFETY: every leader's payload starts with its node's counts.
                counts[i] = unsafe { header.cast::<u64>().add(k).read_unaligned() as usize };
            }
        }
        let total: usize = counts.iter().sum();
        if self.inline_by_nodes(&counts, size) {
            let starts = starts(&counts);
            for (j_at, ask) in asks.iter().enumerate().filter(|(_, a)| a.takes(total, size)) {
                let dst = bases[j_at].wrapping_add(ask.dst_off);
                for (g, group) in nodes.groups.iter().enumerate() {
                    let mut data = match g == nodes.mine {
                        true => std::ptr::null(),
                        // SAFETY: the node's elements follow its counts.
                        false => unsafe { inbox.from(leaders[g]).add(group.len() * 8) },
                    };
                    for (k, &i) in group.iter().enumerate() {
                        let bytes = counts[i] * size;
                        if g == nodes.mine {
                            data = source(k).as_ptr();
                        }
                        // SAFETY: member j's destination holds `total`
                        // elements and overlaps no source (`takes`); the
                        // data is a local source or what leader g sent.
                        unsafe { std::ptr::copy_nonoverlapping(data, dst.add(starts[i] * size), bytes) };
                        // SAFETY: node g's elements lie back to back, in group order.
                        data = unsafe { data.add(bytes) };
                    }
                }
            }
        }
        for (&member, &base) in local.iter().zip(&bases).skip(1) {
            let mailbox = base.wrapping_add(mailbox_off).cast::<u64>();
            for (i, &count) in counts.iter().enumerate() {
                // SAFETY: the member's mailbox holds n_pes words
                // (`collect_by_nodes`) and it reads them only after step 3.
                unsafe { mailbox.add(i).write(count as u64) };
            }
            self.notify(member, 3)?;
        }
        Ok(counts)
    }
}

/// Bytes a node's leader sends: its members' counts, then their elements.
fn leader_payload(group: &[usize], counts: &[usize], size: usize) -> usize {
    group.len() * 8 + group.iter().map(|&i| counts[i] * size).sum::<usize>()
}

/// Where each member's elements start in the result.
pub(super) fn starts(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &count| {
            *at += count;
            Some(*at - count)
        })
        .collect()
}
