//! What the runtime's profiling costs the cheapest calls, measured inside
//! one process. Rank 0 times blocks of 8-byte put+quiet (and of 8-byte
//! gets and fetch-adds) to rank 1, switching the profiling level between
//! blocks: 0 (counting paused: the path of a job without `--profile`) and
//! 1 (counting). Each pair of blocks runs off/on or on/off, in turn. Both
//! settings see the same cores in the same state, which separate runs
//! cannot promise on a machine whose cores switch between a fast and a
//! slow cross-core state every few seconds; the ratio is taken within each
//! pair, and the median over pairs reported.
//!
//! ```text
//! rlaunch -n 2 --profile=DIR target/release/examples/profile_cost [PAIRS] [CALLS]
//! ```
//! (defaults: 201 pairs of blocks of 2000 calls). Without `--profile`
//! there is nothing to count, and it says so and exits with status 2.
//! Prints one line per operation:
//! `profile_cost <op> off <ns> on <ns> on/off <ratio>`.

use oneside::prelude::*;
use oneside::{set_profiling_level, Sym, World};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    match run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("profile_cost: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One timed operation on `target`'s word.
type Op = fn(&World, &Sym<u64>, usize) -> oneside::Result<()>;

const OPS: [(&str, Op); 3] = [
    ("put+quiet", |w, s, t| {
        w.put_value(s, t, 0, 7)?;
        w.quiet()
    }),
    ("get", |w, s, t| w.get_value(s, t, 0).map(drop)),
    ("fetch_add", |w, s, t| w.atomic_fetch_add(s, t, 0, 1).map(drop)),
];

/// Nanoseconds per call of `op` over `calls` calls at profiling `level`.
fn block(world: &World, word: &Sym<u64>, op: Op, level: i32, calls: usize) -> oneside::Result<f64> {
    set_profiling_level(level);
    let started = Instant::now();
    for _ in 0..calls {
        op(world, word, 1)?;
    }
    Ok(started.elapsed().as_nanos() as f64 / calls as f64)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn run() -> oneside::Result<u8> {
    let arg = |i: usize, default: usize| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (pairs, calls) = (arg(1, 201).max(1), arg(2, 2000).max(1));
    let world = oneside::init()?;
    if world.size() < 2 {
        eprintln!("profile_cost: needs 2 ranks (rlaunch -n 2 --profile=DIR ...)");
        return Ok(2);
    }
    let profiled = oneside::profile::configured();
    let word = world.alloc::<u64>(1)?;
    if world.rank() == 0 && profiled {
        for (name, op) in OPS {
            block(&world, &word, op, 1, calls)?; // warm-up
            let (mut off, mut on, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            for pair in 0..pairs {
                // ns[level]: the block at that level, in turn first and second.
                let mut ns = [0.0; 2];
                let order = if pair % 2 == 0 { [0, 1] } else { [1, 0] };
                for level in order {
                    ns[level] = block(&world, &word, op, level as i32, calls)?;
                }
                off.push(ns[0]);
                on.push(ns[1]);
                ratios.push(ns[1] / ns[0]);
            }
            println!(
                "profile_cost {name} off {:.1} on {:.1} on/off {:.3}",
                median(&mut off),
                median(&mut on),
                median(&mut ratios)
            );
        }
        set_profiling_level(1);
    }
    world.barrier()?;
    if !profiled {
        if world.rank() == 0 {
            eprintln!("profile_cost: not profiled: run it under rlaunch --profile=DIR");
        }
        return Ok(2);
    }
    Ok(0)
}
