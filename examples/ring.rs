//! Ring pass, a course classic: a token starts at rank 0 and travels around
//! the ring; each rank adds its number and puts the token into the next
//! rank's mailbox, then raises that rank's flag to the lap number. The data
//! is ordered before the flag with `quiet`, and the receiver waits with
//! `wait_until`, the OpenSHMEM point-to-point pattern.
//!
//! `ring [LAPS]`; rank 0 checks the total LAPS × N(N−1)/2.

use oneside::prelude::*;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ring: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let laps: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let mailbox = world.alloc::<u64>(1)?;
    // The lap number of the token's latest arrival here.
    let arrived = world.alloc::<u64>(1)?;
    let right = (rank + 1) % size;

    for lap in 1..=laps {
        // Rank 0 starts lap 1 itself; every other hand-over is awaited.
        let awaited = if rank == 0 { lap - 1 } else { lap };
        if awaited > 0 {
            world.wait_until(&arrived, 0, |l| l >= awaited)?;
        }
        let token = world.get_value(&mailbox, rank, 0)? + rank as u64;
        world.put_value(&mailbox, right, 0, token)?;
        world.quiet()?;
        world.put_value(&arrived, right, 0, lap)?;
    }

    let mut ok = true;
    if rank == 0 {
        world.wait_until(&arrived, 0, |l| l >= laps)?;
        let total = world.get_value(&mailbox, 0, 0)?;
        let n = size as u64;
        let expected = laps * n * (n - 1) / 2;
        ok = total == expected;
        let verdict = if ok { "ok" } else { "WRONG" };
        println!("ring: {laps} lap(s) over {size} ranks: token {total}, expected {expected}: {verdict}");
    }
    world.finalize()?;
    Ok(ok)
}
