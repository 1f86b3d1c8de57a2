//! How fast a rank that sits idle in a long wait answers its peers' gets:
//! rank 1 enters a barrier at once, rank 0 first lets it wait `IDLE_MS`
//! (long past the point where waits stop spinning and yielding), then
//! times `GETS` 8-byte gets of rank 1's memory one by one. Over a network
//! whose provider moves data only while the target polls it (libfabric's
//! tcp;ofi_rxm, rxd, shm), each get is as slow as the target's wait is
//! slow to poll.
//!
//! ```text
//! rlaunch -n 2 --transport ofi target/release/examples/idle_target [IDLE_MS] [GETS]
//! ```
//! (defaults: 200 ms, 200 gets). Prints
//! `idle_target get median <us> us max <us> us after <ms> ms idle`.

use oneside::prelude::*;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("idle_target: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the measurement; a wrong value read is an error too.
fn run() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, default: u64| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (idle_ms, gets) = (arg(1, 200), arg(2, 200).max(1) as usize);
    let world = oneside::init()?;
    let word = world.alloc::<u64>(1)?;
    world.local_write(&word, 0, &[7])?;
    world.barrier()?;
    if world.rank() == 0 && world.size() > 1 {
        std::thread::sleep(Duration::from_millis(idle_ms));
        let mut micros = Vec::with_capacity(gets);
        for _ in 0..gets {
            let started = Instant::now();
            let value = world.get_value(&word, 1, 0)?;
            micros.push(started.elapsed().as_secs_f64() * 1e6);
            if value != 7 {
                return Err(format!("rank 0 read {value} from rank 1's word, which holds 7").into());
            }
        }
        micros.sort_by(f64::total_cmp);
        println!(
            "idle_target get median {:.1} us max {:.1} us after {idle_ms} ms idle",
            micros[gets / 2],
            micros[gets - 1]
        );
    }
    world.barrier()?;
    Ok(())
}
