//! Message rate with threads, each on a private context: 8-byte puts
//! (windows of 64 `put_nbi`, each closed by the context's quiet) and
//! 8-byte fetch-adds, from 1 and from 2 threads of rank 0 to rank 1, which
//! waits in a barrier. Also the same loops on the world itself from one
//! thread (the default context), the figure a program without contexts
//! gets. Each figure is the median of ROUNDS runs of a fixed duration.
//!
//!   rlaunch -n 2 --bind-to none ./ctx_rate [ROUNDS]
//!
//! Prints `<metric> 8 <value> msg/s` lines (`put_rate_world`,
//! `put_rate_ctx_t1`, `put_rate_ctx_t2`, the same for `fadd_rate`), then the
//! 2-thread / 1-thread ratios.

use oneside::prelude::*;
use oneside::{Sym, World};
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::{Duration, Instant};

const WINDOW: usize = 64;
const RUN: Duration = Duration::from_millis(300);

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctx_rate: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Put,
    FetchAdd,
}

fn run() -> oneside::Result<()> {
    let rounds = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5usize);
    let world = oneside::init()?;
    if world.size() < 2 {
        eprintln!("ctx_rate: needs 2 ranks");
        return Ok(());
    }
    let words = world.alloc::<u64>(2 * WINDOW)?;
    for (kind, name) in [(Kind::Put, "put_rate"), (Kind::FetchAdd, "fadd_rate")] {
        let mut figures = Vec::new();
        for (label, threads, on_ctx) in [("world", 1, false), ("ctx_t1", 1, true), ("ctx_t2", 2, true)] {
            let mut samples = Vec::new();
            for _ in 0..rounds {
                world.barrier()?;
                if world.rank() == 0 {
                    samples.push(rate(&world, &words, kind, threads, on_ctx)?);
                }
                world.barrier()?;
            }
            if world.rank() == 0 {
                samples.sort_by(f64::total_cmp);
                let median = samples[samples.len() / 2];
                println!("{name}_{label} 8 {median:.0} msg/s");
                figures.push(median);
            }
        }
        if world.rank() == 0 {
            println!(
                "{name}: 2 threads / 1 thread {:.2}; 1 context / world {:.3}",
                figures[2] / figures[1],
                figures[1] / figures[0]
            );
        }
    }
    world.finalize()
}

/// Messages per second from `threads` threads of this rank to rank 1, each
/// on a context of its own (or on the world), for `RUN`.
fn rate(world: &World, words: &Sym<u64>, kind: Kind, threads: usize, on_ctx: bool) -> oneside::Result<f64> {
    let start_line = Barrier::new(threads);
    let counts: Vec<oneside::Result<(u64, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let start_line = &start_line;
                s.spawn(move || match on_ctx {
                    true => loop_for(&world.ctx_create()?, words, kind, t, start_line),
                    false => loop_for(world, words, kind, t, start_line),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rate thread panicked"))
            .collect()
    });
    let (mut total, mut longest) = (0, 0f64);
    for count in counts {
        let (done, seconds) = count?;
        total += done;
        longest = longest.max(seconds);
    }
    Ok(total as f64 / longest)
}

/// Runs one thread's loop for `RUN` after every thread is ready; returns
/// the messages it completed and the seconds it took.
fn loop_for<E: Rma + Atomics>(
    on: &E,
    words: &Sym<u64>,
    kind: Kind,
    t: usize,
    start_line: &Barrier,
) -> oneside::Result<(u64, f64)> {
    let value = [t as u64; 1];
    start_line.wait();
    let start = Instant::now();
    let mut done = 0u64;
    while start.elapsed() < RUN {
        match kind {
            Kind::Put => {
                for i in 0..WINDOW {
                    on.put_nbi(words, 1, t * WINDOW + i, &value)?;
                }
                on.quiet()?;
                done += WINDOW as u64;
            }
            Kind::FetchAdd => {
                for _ in 0..WINDOW {
                    on.atomic_fetch_add(words, 1, t * WINDOW, 1u64)?;
                }
                done += WINDOW as u64;
            }
        }
    }
    Ok((done, start.elapsed().as_secs_f64()))
}
