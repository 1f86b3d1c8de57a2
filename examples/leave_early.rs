//! A rank that leaves `main` early while its peers wait for it, the ways
//! Rust programs do, to test that the job ends at once with that rank's
//! exit status and that no peer passes a collective it never called.
//! `leave_early MODE RANK [SECS]`:
//!
//! * `error`   — RANK's put to a rank that does not exist fails and `?`
//!   leaves `main`; the others compute for SECS seconds (default 0), then
//!   meet in a barrier
//! * `panic`   — RANK panics; the others compute for SECS, then meet in a
//!   barrier
//! * `wait`    — RANK returns `Ok` early; the others wait for a word that
//!   only RANK would have written
//! * `compute` — RANK returns `Ok` early; the others compute for SECS
//!   seconds with no call that needs RANK, then finalize: a legal program,
//!   which must succeed
//!
//! A rank that gets past the barrier prints `rank R passed the barrier`.

use oneside::prelude::*;
use std::time::{Duration, Instant};

fn main() -> oneside::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("error");
    let leaver: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let secs: Option<f64> = args.get(2).and_then(|a| a.parse().ok());
    let world = oneside::init()?;
    let flag = world.alloc::<u64>(1)?;
    let rank = world.rank();
    if rank == leaver {
        match mode {
            "error" => {
                world.put(&flag, world.size() + 5, 0, &[1u64])?;
            }
            "panic" => panic!("rank {rank} gives up"),
            _ => return Ok(()),
        }
    }
    match mode {
        "compute" => {
            let secs = secs.unwrap_or(3.0);
            compute(secs);
            println!("rank {rank} computed for {secs} s");
        }
        "wait" => {
            world.wait_until(&flag, 0, |v| v == 1)?;
            println!("rank {rank} saw the word");
        }
        _ => {
            compute(secs.unwrap_or(0.0));
            world.barrier()?;
            println!("rank {rank} passed the barrier");
        }
    }
    world.finalize()
}

/// Computes for `secs` seconds without a call of oneside's.
fn compute(secs: f64) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < Duration::from_secs_f64(secs) {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}
