//! Parallel bucket sort, a course classic for all-to-all communication:
//! every rank draws random 64-bit keys from its own seeded generator; the
//! key range is cut into one bucket per rank (rank j gets the j-th slice
//! of 0..2⁶⁴), and every key travels to its bucket's rank, which sorts
//! what it received. Rank order then gives the global order.
//!
//! The exchange, with collectives:
//! 1. each rank counts its keys per bucket, and `alltoall` (one count per
//!    pair) tells every rank how many keys it will receive from each rank;
//! 2. an `exscan` (`Sum`) of the count vectors gives, for every bucket j,
//!    where this rank's keys start in rank j's inbox: after the keys that
//!    ranks below it send there;
//! 3. the inbox is allocated as large as the largest bucket (a `reduce`,
//!    `Max`, of the received totals, since symmetric objects have one
//!    length everywhere), every rank puts each of its buckets straight at
//!    its offset in the owner's inbox, and a barrier completes the puts.
//!
//! The check: the result is sorted (each rank's keys are in order, and an
//! `fcollect` of every rank's count, smallest and largest key shows each
//! non-empty rank's largest key at most the next non-empty rank's
//! smallest), and it is a permutation of the input: the number of keys,
//! and the sum and the xor of a hash of every key, all-reduced over the
//! ranks, are the same before and after the exchange. Rank 0 prints the
//! verdict; every rank exits 1 when a check fails.
//!
//! `bucket_sort [KEYS_PER_RANK]` (default 16 384).

use oneside::prelude::*;
use oneside::{Max, Sum, World, Xor};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("bucket_sort: {e}");
            ExitCode::FAILURE
        }
    }
}

/// SplitMix64: a small, well-mixed generator; one seed per rank.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
}

/// SplitMix64's finalizer, also the hash of a key in the checksums.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The bucket (owning rank) of `key`: its slice of the 64-bit range.
fn bucket(key: u64, size: usize) -> usize {
    ((u128::from(key) * size as u128) >> 64) as usize
}

/// The number of keys, and the wrapping sum and the xor of their hashes,
/// all-reduced over the ranks.
fn fingerprint(world: &World, keys: &[u64]) -> oneside::Result<[u64; 3]> {
    let team = world.team_world();
    let sum = keys
        .iter()
        .fold(0u64, |s, &k| s.wrapping_add(mix(k ^ 0x0123_4567_89ab_cdef)));
    let xor = keys.iter().fold(0u64, |x, &k| x ^ mix(k.rotate_left(17)));
    let mut counted = [keys.len() as u64, sum];
    world.reduce_values(team, Sum, &mut counted)?;
    let xor = world.reduce_value(team, Xor, xor)?;
    Ok([counted[0], counted[1], xor])
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let team = world.team_world();
    let (rank, size) = (world.rank(), world.size());
    let per_rank = std::env::args()
        .nth(1)
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(16_384);

    let mut rng = SplitMix(0xb0c4_e700 + rank as u64);
    let keys: Vec<u64> = (0..per_rank).map(|_| rng.next()).collect();
    let before = fingerprint(&world, &keys)?;

    // Group the keys by bucket, and count them.
    let mut buckets: Vec<Vec<u64>> = vec![Vec::new(); size];
    for &key in &keys {
        buckets[bucket(key, size)].push(key);
    }
    let counts: Vec<u64> = buckets.iter().map(|b| b.len() as u64).collect();
    let send_counts = world.alloc::<u64>(size)?;
    let recv_counts = world.alloc::<u64>(size)?;
    let offsets = world.alloc::<u64>(size)?; // zero: rank 0's exscan result
    world.local_write(&send_counts, 0, &counts)?;

    // 1. How many keys come from each rank; 2. where ours go in each inbox.
    world.alltoall(team, &recv_counts, &send_counts, 1)?;
    world.exscan(team, Sum, &offsets, &send_counts, size)?;
    let received: u64 = world.local_to_vec(&recv_counts)?.iter().sum();
    let capacity = world.reduce_value(team, Max, received)?;

    // 3. Every bucket straight into its owner's inbox.
    let inbox = world.alloc::<u64>(capacity as usize)?;
    let offsets = world.local_to_vec(&offsets)?;
    for (owner, keys) in buckets.iter().enumerate() {
        world.put(&inbox, owner, offsets[owner] as usize, keys)?;
    }
    world.barrier()?;

    let mut mine = vec![0u64; received as usize];
    world.local_read(&inbox, 0, &mut mine)?;
    mine.sort_unstable();

    // The check: sorted here, in order across ranks, and a permutation.
    // Each rank reports its own keys' problems; rank 0 reports the global
    // ones (every rank finds the same).
    let mut here = Vec::new();
    if let Some(i) = (1..mine.len()).find(|&i| mine[i - 1] > mine[i]) {
        here.push(format!("rank {rank}'s keys are out of order at {i}"));
    }
    if let Some(key) = mine.iter().find(|&&k| bucket(k, size) != rank) {
        here.push(format!(
            "rank {rank} holds key {key:#x} of bucket {}",
            bucket(*key, size)
        ));
    }
    let mut global = Vec::new();
    let bounds = world.alloc::<u64>(3)?;
    let all_bounds = world.alloc::<u64>(3 * size)?;
    let (lo, hi) = (mine.first().copied().unwrap_or(0), mine.last().copied().unwrap_or(0));
    world.local_write(&bounds, 0, &[mine.len() as u64, lo, hi])?;
    world.fcollect(team, &all_bounds, &bounds, 3)?;
    let all_bounds = world.local_to_vec(&all_bounds)?;
    let non_empty: Vec<(usize, &[u64])> = all_bounds.chunks(3).enumerate().filter(|(_, b)| b[0] > 0).collect();
    for pair in non_empty.windows(2) {
        let ((r, a), (s, b)) = (pair[0], pair[1]);
        if a[2] > b[1] {
            global.push(format!(
                "rank {r}'s largest key {:#x} exceeds rank {s}'s smallest {:#x}",
                a[2], b[1]
            ));
        }
    }
    let after = fingerprint(&world, &mine)?;
    if after != before {
        global.push(format!(
            "(count, hash sum, hash xor) was {before:x?} before the exchange and {after:x?} after"
        ));
    }
    let total = (per_rank * size) as u64;
    if before[0] != total {
        global.push(format!("{} keys drawn, expected {total}", before[0]));
    }
    let wrong_ranks = world.reduce_value(team, Sum, u64::from(!here.is_empty()))?;
    let ok = wrong_ranks == 0 && global.is_empty();
    let reported = if rank == 0 { &global[..] } else { &[] };
    for problem in here.iter().chain(reported) {
        eprintln!("bucket_sort: {problem}");
    }
    if rank == 0 {
        let verdict = match ok {
            true => "sorted and a permutation: ok",
            false => "WRONG",
        };
        println!("bucket_sort: {size} ranks, {total} keys: {verdict}");
    }
    world.finalize()?;
    Ok(ok)
}
