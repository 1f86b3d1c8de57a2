//! What serving its peers costs a rank that computes: rank 1 runs the same
//! fixed arithmetic `ROUNDS` times, alternately while rank 0 waits
//! ("quiet") and while rank 0 gets rank 1's word every `GAP_US`
//! ("served"). Over a network whose provider moves data only while the
//! target polls (libfabric's tcp;ofi_rxm, rxd, shm), a progress thread
//! serves those gets; it shares the rank's core when rlaunch pins ranks,
//! and polls for 1 ms after each arrival.
//!
//! ```text
//! rlaunch -n 2 --transport ofi target/release/examples/busy_target [ROUNDS] [GAP_US] [MILLIONS]
//! ```
//! (defaults: 9 rounds, 500 µs, 600 million steps of arithmetic: about
//! 100 ms in a release build here). Prints
//! `busy_target quiet <ms> ms served <ms> ms served/quiet <ratio>` (medians
//! over the rounds, the ratio taken within each pair of rounds) and
//! `busy_target gets <n> every <us> us`.

use oneside::prelude::*;
use oneside::Cmp;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("busy_target: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The computation: `steps` multiply-adds the compiler cannot skip.
fn compute(steps: u64) -> Duration {
    let started = Instant::now();
    let mut x = black_box(1u64);
    for i in 0..steps {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    black_box(x);
    started.elapsed()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, default: u64| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (rounds, gap) = (arg(1, 9).max(1) as usize, Duration::from_micros(arg(2, 500)));
    let steps = arg(3, 600) * 1_000_000;
    let world = oneside::init()?;
    if world.size() != 2 {
        return Err("needs 2 ranks".into());
    }
    let word = world.alloc::<u64>(1)?;
    let done = world.alloc::<u64>(1)?;
    world.local_write(&word, 0, &[7])?;
    let (mut quiet, mut served, mut ratios, mut gets) = (Vec::new(), Vec::new(), Vec::new(), 0u64);
    for round in 0..rounds {
        let mut ms = [0.0; 2];
        for serving in [round % 2 == 0, round % 2 != 0] {
            world.local_write(&done, 0, &[0])?;
            world.barrier()?;
            if world.rank() == 1 {
                ms[serving as usize] = compute(steps).as_secs_f64() * 1e3;
                world.put_value(&done, 0, 0, 1)?;
            } else if serving {
                while !world.test(&done, 0, Cmp::Ne(0))? {
                    if world.get_value(&word, 1, 0)? != 7 {
                        return Err("rank 0 read a wrong value from rank 1's word".into());
                    }
                    gets += 1;
                    std::thread::sleep(gap);
                }
            } else {
                world.wait_until(&done, 0, |v| v != 0)?;
            }
            world.barrier()?;
        }
        quiet.push(ms[0]);
        served.push(ms[1]);
        ratios.push(ms[1] / ms[0]);
    }
    if world.rank() == 1 {
        let (q, s, r) = (median(&mut quiet), median(&mut served), median(&mut ratios));
        println!("busy_target quiet {q:.1} ms served {s:.1} ms served/quiet {r:.3}");
    }
    world.barrier()?;
    if world.rank() == 0 {
        println!("busy_target gets {gets} every {} us", gap.as_micros());
    }
    Ok(())
}
