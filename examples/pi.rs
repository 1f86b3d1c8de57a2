//! Parallel pi, a course classic: integrate 4/(1+x²) over [0, 1] with the
//! midpoint rule. Each rank sums its share of the intervals (every
//! `size`-th one) and one all-reduce (`reduce_value` with `Sum`) adds the
//! partial sums up on every rank.
//!
//! The check: the midpoint rule's error for N intervals of width h is about
//! (h²/24)·|f'(1) − f'(0)| = h²/12, and adding up N terms whose total is
//! about π loses at most about N·π·ε to rounding in the worst case, so
//! every rank requires |pi − π| ≤ h²/6 + 4N·ε (twice the truncation error,
//! plus the rounding bound) and exits 1 otherwise. Rank 0 prints the
//! result:
//!
//! `pi ≈ 3.141592653590 from 2 rank(s), 10000000 intervals (error 1.92e-13)`
//!
//! `pi [INTERVALS]` (default 10 000 000).

use oneside::Sum;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("pi: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The largest error a correct sum of `intervals` midpoint terms may have.
fn error_bound(intervals: u64) -> f64 {
    let h = 1.0 / intervals as f64;
    h * h / 6.0 + 4.0 * intervals as f64 * f64::EPSILON
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let intervals: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000)
        .max(1);

    let width = 1.0 / intervals as f64;
    let mine: f64 = (rank as u64..intervals)
        .step_by(size)
        .map(|i| {
            let x = (i as f64 + 0.5) * width;
            4.0 / (1.0 + x * x)
        })
        .sum::<f64>()
        * width;
    let pi = world.reduce_value(world.team_world(), Sum, mine)?;

    let error = (pi - std::f64::consts::PI).abs();
    let bound = error_bound(intervals);
    let ok = error <= bound;
    if rank == 0 {
        println!("pi ≈ {pi:.12} from {size} rank(s), {intervals} intervals (error {error:.2e})");
    }
    if !ok {
        eprintln!("pi: rank {rank}: error {error:.2e} is above the bound {bound:.2e}: WRONG");
    }
    world.finalize()?;
    Ok(ok)
}
