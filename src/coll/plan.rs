//! Where each collective's algorithm is chosen: by the team's shape (one
//! node, several nodes, nodes of one rank) and the message size.
//!
//! The size thresholds come from `examples/bench --only-coll` sweeps on
//! shared memory at 2, 4 and 8 ranks (see `bench/compare_coll.sh`).

use super::Coll;

/// Largest per-member payload that goes through the exchange on one node,
/// when the exchange could take more. Above it, members read each other's
/// objects in place.
const MAPPED_EXCHANGE_MAX: usize = 2048;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReduceAlgo {
    Exchange,
    Doubling,
    MappedScatterGather,
    RemoteScatterGather,
    NodeAware,
}

pub(super) fn reduce(c: &Coll, bytes: usize, elem: usize) -> ReduceAlgo {
    let nodes = &c.t.nodes;
    let fits = bytes <= c.exchange_capacity();
    if c.n() == 1 {
        return ReduceAlgo::Exchange;
    }
    // A team too large for the exchange to carry one element: on one node,
    // read every member's source in place.
    if c.exchange_capacity() < elem {
        return match nodes.single() {
            true => ReduceAlgo::MappedScatterGather,
            false => ReduceAlgo::Exchange,
        };
    }
    if bytes > 0 && bytes <= c.doubling_capacity() {
        return ReduceAlgo::Doubling;
    }
    if nodes.hierarchical() {
        return ReduceAlgo::NodeAware;
    }
    if nodes.single() {
        return match bytes <= MAPPED_EXCHANGE_MAX && fits {
            true => ReduceAlgo::Exchange,
            false => ReduceAlgo::MappedScatterGather,
        };
    }
    match fits || c.n() == 2 {
        true => ReduceAlgo::Exchange,
        false => ReduceAlgo::RemoteScatterGather,
    }
}

/// Whether a node's leader writes a broadcast's or a reduction's result
/// into its members' destinations (one hop each, and done) rather than
/// letting them copy it from its own and waiting until they have (in
/// parallel, for large data).
pub(super) fn fan_out_by_push(bytes: usize) -> bool {
    bytes <= MAPPED_EXCHANGE_MAX
}

/// Heads (nodes) up to which a small broadcast goes flat.
const FLAT_HEADS: usize = 4;
/// The largest broadcast that goes flat among [`FLAT_HEADS`] heads.
const FLAT_BYTES: usize = 128;

/// Whether a broadcast's root sends to each of the `heads` nodes' heads
/// itself (one hop each, the root's sends one after the other) rather than
/// down a binomial tree (⌈log2 heads⌉ hops). With a few heads a hop costs
/// more than the root's extra sends: across 2 namespace hosts x 2 ranks
/// all over TCP (4 heads), 3 runs of 3-6 alternating rounds, flat took
/// 0.89x the tree's time at 8-128 B (median of 15 figures, 0.84-1.17x),
/// and 0.9-1.3x at 256 B-16 KiB in the first run, where the root's
/// sends grow.
pub(super) fn broadcast_flat(heads: usize, bytes: usize) -> bool {
    heads <= FLAT_HEADS && bytes <= FLAT_BYTES
}

/// How the members' blocks travel in fcollect, collect and alltoall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MoveAlgo {
    /// Through the exchange (the largest block fits its region).
    Exchange,
    /// Each member reads the others' sources in place (one node).
    Pull,
    /// Each member puts its blocks into the others' destinations.
    Push,
}

pub(super) fn movement(c: &Coll, largest_block: usize) -> MoveAlgo {
    if largest_block <= movement_exchange_limit(c) || c.n() == 1 {
        return MoveAlgo::Exchange;
    }
    match c.t.nodes.single() {
        true => MoveAlgo::Pull,
        false => MoveAlgo::Push,
    }
}

/// Whether fcollect, collect and alltoall go node-aware (`gather_nodes`):
/// the team spans nodes with several members on some node, and the most
/// one leader sends another (`leader_bytes`) fits one region of an
/// exchange among the leaders.
pub(super) fn by_nodes(c: &Coll, leader_bytes: usize) -> bool {
    let nodes = &c.t.nodes;
    nodes.hierarchical() && leader_bytes <= c.exchange_capacity_among(nodes.groups.len())
}

/// The most bytes of elements a collect's member sends in the first
/// exchange round (its count goes beside the flag): the largest block
/// fcollect moves through the exchange.
pub(super) fn collect_inline_max(c: &Coll) -> usize {
    movement_exchange_limit(c)
}

/// The largest block that moves through the exchange.
fn movement_exchange_limit(c: &Coll) -> usize {
    match c.t.nodes.single() {
        true => MAPPED_EXCHANGE_MAX.min(c.exchange_capacity()),
        false => c.exchange_capacity(),
    }
}
