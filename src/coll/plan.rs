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
    MappedScatterGather,
    RemoteScatterGather,
    NodeAware,
}

pub(super) fn reduce(c: &Coll, bytes: usize, elem: usize) -> ReduceAlgo {
    let nodes = &c.t.nodes;
    let fits = bytes <= c.exchange_capacity();
    if c.n() == 1 || c.exchange_capacity() < elem {
        return ReduceAlgo::Exchange;
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

/// Whether a broadcast goes through one exchange round: small messages on
/// one node, where it costs one hop instead of a read and an acknowledgement.
pub(super) fn broadcast_by_exchange(c: &Coll, bytes: usize) -> bool {
    c.t.nodes.single() && c.n() > 1 && bytes <= MAPPED_EXCHANGE_MAX.min(c.exchange_capacity())
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
    let single = c.t.nodes.single();
    let limit = match single {
        true => MAPPED_EXCHANGE_MAX.min(c.exchange_capacity()),
        false => c.exchange_capacity(),
    };
    if largest_block <= limit || c.n() == 1 {
        return MoveAlgo::Exchange;
    }
    match single {
        true => MoveAlgo::Pull,
        false => MoveAlgo::Push,
    }
}
