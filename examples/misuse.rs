//! Programs with the mistakes `rlaunch --debug` finds, for its tests. The
//! first argument picks one:
//!
//! * `mismatch`: the last rank calls a reduction where the others call a
//!   broadcast (without `--debug`: a hang or garbage);
//! * `barrier`: rank 1 calls a broadcast where the others sync (`--debug`
//!   compares a sync's record after it, every other collective's before);
//! * `alloc`: rank 0 allocates a different size than the others;
//! * `reuse`: a reduction's destination is the next broadcast's
//!   destination, with no barrier between (wrong answers at 8 ranks);
//! * `fine`: the same calls done right, which `--debug` lets through.
//!
//! ```text
//! rlaunch -n 4 --debug target/release/examples/misuse reuse
//! ```

use oneside::Sum;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mistake = std::env::args().nth(1).unwrap_or_default();
    let world = match oneside::init() {
        Ok(world) => world,
        Err(e) => return fail(&e),
    };
    // The report is written while this rank's world is still open, and in
    // one write: once it is closed, a peer still reading from it fails
    // and exits, and rlaunch's SIGTERM could cut a report written in
    // pieces (seen under CI's load).
    match run(&world, &mistake) {
        Ok(()) => match world.finalize() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        },
        Err(e) => fail(&e),
    }
}

fn fail(e: &oneside::Error) -> ExitCode {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("misuse: {e}\n").as_bytes());
    ExitCode::FAILURE
}

fn run(world: &oneside::World, mistake: &str) -> oneside::Result<()> {
    let (rank, size) = (world.rank(), world.size());
    let team = world.team_world();
    let src = world.alloc::<u64>(4)?;
    let dst = world.alloc::<u64>(4)?;
    world.local_write(&src, 0, &[rank as u64; 4])?;
    match mistake {
        "mismatch" if rank == size - 1 => world.reduce(team, Sum, &dst, &src, 4)?,
        "mismatch" => world.broadcast(team, &dst, &src, 4, 0)?,
        "barrier" if rank == 1 => world.broadcast(team, &dst, &src, 4, 0)?,
        "barrier" => world.team_sync(team)?,
        "alloc" => {
            let n = if rank == 0 { 16 } else { 8 };
            let extra = world.alloc::<u64>(n)?;
            world.free(extra)?;
        }
        "reuse" | "fine" => {
            world.reduce(team, Sum, &dst, &src, 4)?;
            if mistake == "fine" {
                world.barrier()?;
            }
            world.broadcast(team, &dst, &src, 4, 0)?;
        }
        other => {
            eprintln!("misuse: unknown mistake {other:?}: use mismatch, barrier, alloc, reuse or fine");
            std::process::exit(2);
        }
    }
    Ok(())
}
