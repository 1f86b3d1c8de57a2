//! GUPS, the HPCC RandomAccess benchmark, a course classic: a table of u64
//! words spread over all ranks (TABLE_PER_RANK each, a power of two) takes
//! a stream of random updates `table[ran & (total - 1)] ^= ran`, each one an
//! `atomic_xor` on the rank that owns the word. The random numbers come from
//! HPCC's generator, a shift register over GF(2) with the polynomial
//! POLY = 7; rank r's stream is the global sequence from element r × U on,
//! reached with HPCC's jump-ahead (`starts`).
//!
//! The check: after a barrier every rank replays the whole sequence (all
//! ranks' streams in turn, so each stream's jump-ahead seed is checked too)
//! against a private copy of its own slice and compares it with its table.
//! HPCC tolerates 1% of lost updates; with atomics there must be none. The
//! error counts meet on rank 0 with `atomic_add`.
//!
//! `gups [TABLE_PER_RANK [UPDATES_PER_RANK]]` (default 4096, and 4 × the table).

use oneside::prelude::*;
use std::process::ExitCode;
use std::time::Instant;

const POLY: u64 = 7;
const PERIOD: i64 = 1_317_624_576_693_539_401;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("gups: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One step of the generator.
fn next(ran: u64) -> u64 {
    (ran << 1) ^ if (ran as i64) < 0 { POLY } else { 0 }
}

/// Element `n` of the sequence that starts at 1, in O(log n) steps (HPCC_starts).
fn starts(mut n: i64) -> u64 {
    while n < 0 {
        n += PERIOD;
    }
    while n > PERIOD {
        n -= PERIOD;
    }
    if n == 0 {
        return 1;
    }
    // m2[j] = x^(2j), so XORing m2[j] over ran's set bits j squares ran
    // (squaring is linear over GF(2)); then a step multiplies by x.
    let mut m2 = [0u64; 64];
    let mut temp = 1u64;
    for slot in m2.iter_mut() {
        *slot = temp;
        temp = next(next(temp));
    }
    let mut i = 62;
    while (n >> i) & 1 == 0 {
        i -= 1;
    }
    let mut ran = 2u64;
    while i > 0 {
        ran = (0..64).filter(|j| (ran >> j) & 1 == 1).fold(0, |acc, j| acc ^ m2[j]);
        i -= 1;
        if (n >> i) & 1 == 1 {
            ran = next(ran);
        }
    }
    ran
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let arg = |i: usize| std::env::args().nth(i).and_then(|a| a.parse::<usize>().ok());
    let per_rank = arg(1).unwrap_or(4096);
    let updates = arg(2).unwrap_or(4 * per_rank);
    if !per_rank.is_power_of_two() {
        eprintln!("gups: TABLE_PER_RANK must be a power of two, not {per_rank}");
        return Ok(false);
    }
    let total = per_rank * size;
    // HPCC masks with total - 1; a rank count that is not a power of two
    // makes the table size not one either, and then the remainder is used.
    let slot = |ran: u64| match total.is_power_of_two() {
        true => (ran & (total as u64 - 1)) as usize,
        false => (ran % total as u64) as usize,
    };
    let base = rank * per_rank;

    let table = world.alloc::<u64>(per_rank)?;
    let errors = world.alloc::<u64>(1)?;
    let initial: Vec<u64> = (base as u64..(base + per_rank) as u64).collect();
    world.local_write(&table, 0, &initial)?;
    world.barrier()?;

    let start = Instant::now();
    let mut ran = starts((rank * updates) as i64);
    for _ in 0..updates {
        ran = next(ran);
        let index = slot(ran);
        world.atomic_xor(&table, index / per_rank, index % per_rank, ran)?;
    }
    world.barrier()?;
    let seconds = start.elapsed().as_secs_f64();

    // Replay every rank's stream serially, keeping the updates to our slice.
    let mut expected = initial;
    let mut wrong = 0u64;
    let mut ran = 1u64;
    for r in 0..size {
        if ran != starts((r * updates) as i64) {
            eprintln!("gups: rank {rank}: the jump-ahead seed of rank {r}'s stream is wrong");
            wrong += 1;
        }
        for _ in 0..updates {
            ran = next(ran);
            let index = slot(ran);
            if index / per_rank == rank {
                expected[index % per_rank] ^= ran;
            }
        }
    }
    let got = world.local_to_vec(&table)?;
    wrong += expected.iter().zip(&got).filter(|(e, g)| e != g).count() as u64;
    world.atomic_add(&errors, 0, 0, wrong)?;
    world.barrier()?;

    let mut ok = true;
    if rank == 0 {
        let errors = world.atomic_fetch(&errors, 0, 0)?;
        ok = errors == 0;
        let verdict = if ok { "ok" } else { "WRONG" };
        let all = updates * size;
        let rate = all as f64 / seconds / 1e9;
        println!("gups: {size} ranks, {all} updates, {errors} errors: {verdict} ({rate:.6} GUP/s)");
    }
    world.finalize()?;
    Ok(ok)
}
