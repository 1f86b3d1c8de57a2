//! Distributed histogram, a course classic for remote atomics: the bins are
//! spread block-wise over the ranks, each rank draws values from its own
//! seeded generator and counts each one with an `atomic_inc` on the rank
//! that owns its bin. Increments from many ranks hit the same bins at the
//! same time, so a plain get-add-put would lose counts; atomics must not.
//!
//! The check is exact: after a barrier rank 0 gets every rank's block of
//! bins and compares each bin with a serial recount of all ranks' values
//! (it regenerates them from the same seeds).
//!
//! With THREADS > 1, every rank counts its values from THREADS threads,
//! each with a communication context of its own (`ctx_create`): value `i`
//! is counted by thread `i % THREADS`, and each thread quiets its context
//! before the barrier. The counts must come out the same.
//!
//! `histogram [BINS [VALUES_PER_RANK [THREADS]]]` (default 256 bins, 5000
//! values, 1 thread). Run threaded ranks with `rlaunch --bind-to none`.

use oneside::prelude::*;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("histogram: {e}");
            ExitCode::FAILURE
        }
    }
}

/// SplitMix64: a small, well-mixed generator; one seed per rank.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Rank `rank`'s values, as bin numbers: the sum of two uniform draws, so
/// the middle bins are the busiest (a triangular distribution).
fn values(rank: usize, count: usize, bins: usize) -> impl Iterator<Item = usize> {
    let mut rng = SplitMix(0x5eed_0000 + rank as u64);
    (0..count).map(move |_| {
        let a = rng.next() % bins as u64;
        let b = rng.next() % bins as u64;
        ((a + b) / 2) as usize
    })
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let arg = |i: usize| std::env::args().nth(i).and_then(|a| a.parse::<usize>().ok());
    let bins = arg(1).unwrap_or(256).max(1);
    let per_rank_values = arg(2).unwrap_or(5000);
    let threads = arg(3).unwrap_or(1).max(1);
    // Block distribution: bin b lives on rank b / block, at b % block.
    let block = bins.div_ceil(size);
    let counts = world.alloc::<u64>(block)?;

    if threads == 1 {
        for bin in values(rank, per_rank_values, bins) {
            world.atomic_inc(&counts, bin / block, bin % block)?;
        }
    } else {
        std::thread::scope(|s| {
            let counters: Vec<_> = (0..threads)
                .map(|t| {
                    let (world, counts) = (&world, &counts);
                    s.spawn(move || -> oneside::Result<()> {
                        let ctx = world.ctx_create()?;
                        let mine = values(rank, per_rank_values, bins).skip(t).step_by(threads);
                        for bin in mine {
                            ctx.atomic_inc(counts, bin / block, bin % block)?;
                        }
                        ctx.quiet()
                    })
                })
                .collect();
            counters
                .into_iter()
                .try_for_each(|c| c.join().expect("a counting thread panicked"))
        })?;
    }
    world.barrier()?;

    let mut ok = true;
    if rank == 0 {
        let mut got = vec![0u64; block * size];
        for (owner, chunk) in got.chunks_mut(block).enumerate() {
            world.get(&counts, owner, 0, chunk)?;
        }
        let mut expected = vec![0u64; block * size];
        for r in 0..size {
            for bin in values(r, per_rank_values, bins) {
                expected[bin] += 1;
            }
        }
        let wrong: Vec<usize> = (0..bins).filter(|&b| got[b] != expected[b]).collect();
        for &b in wrong.iter().take(5) {
            eprintln!("histogram: bin {b} holds {}, expected {}", got[b], expected[b]);
        }
        // The padding after the last bin must stay untouched too.
        let total: u64 = got.iter().sum();
        let all = per_rank_values * size;
        ok = wrong.is_empty() && total == all as u64;
        let verdict = if ok { "exact: ok" } else { "WRONG" };
        let by = match threads {
            1 => String::new(),
            t => format!(" x {t} threads"),
        };
        println!("histogram: {bins} bins, {all} values from {size} ranks{by}: {verdict}");
    }
    world.finalize()?;
    Ok(ok)
}
