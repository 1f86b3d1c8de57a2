//! Parallel pi, a course classic: integrate 4/(1+x²) over [0, 1] with the
//! midpoint rule. Each rank sums its share of the intervals and puts its
//! partial sum into slot `rank` of rank 0's array; after a barrier rank 0
//! adds them up.
//!
//! `pi [INTERVALS]` (default 10 000 000).

use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pi: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<()> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let intervals: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let partials = world.alloc::<f64>(size)?;

    let width = 1.0 / intervals as f64;
    let mine: f64 = (rank as u64..intervals)
        .step_by(size)
        .map(|i| {
            let x = (i as f64 + 0.5) * width;
            4.0 / (1.0 + x * x)
        })
        .sum::<f64>()
        * width;
    world.put_value(&partials, 0, rank, mine)?;
    world.barrier()?;

    if rank == 0 {
        let pi: f64 = world.local_to_vec(&partials)?.iter().sum();
        let error = (pi - std::f64::consts::PI).abs();
        println!("pi ≈ {pi:.12} from {size} rank(s), {intervals} intervals (error {error:.2e})");
    }
    world.finalize()
}
