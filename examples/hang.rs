//! Programs that hang on purpose, for `rlaunch --hang-timeout`'s tests
//! and for seeing a hang report. The first argument picks the bug:
//!
//! * `wait`: rank 0 waits for a word nobody writes; the others finalize
//!   (a deadlock rlaunch ends at once).
//! * `cycle`: ranks 0 and 1 each wait for a word only the other would
//!   write after its own wait (a two-rank wait cycle); the rest finalize.
//!   At 2 ranks nobody is in finalize, and only `--hang-timeout` ends it.
//! * `die`: the last rank sleeps a second and a half, then kills itself
//!   with SIGKILL while the others wait for it in a barrier.
//!
//! ```text
//! rlaunch -n 2 --hang-timeout 3 target/release/examples/hang cycle
//! ```

use oneside::prelude::*;
use oneside::Cmp;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let bug = std::env::args().nth(1).unwrap_or_default();
    match run(&bug) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hang: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(bug: &str) -> oneside::Result<()> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let flag = world.alloc::<u64>(1)?;
    match bug {
        "wait" if rank == 0 => {
            println!("hang: rank 0 waits");
            world.wait_until(&flag, 0, |v| v == 1)?;
        }
        "cycle" if rank < 2 => {
            println!("hang: rank {rank} waits");
            world.signal_wait_until(&flag, 0, Cmp::Eq(1))?;
            world.put_value(&flag, 1 - rank, 0, 1u64)?;
        }
        "die" if rank == size - 1 => {
            std::thread::sleep(Duration::from_millis(1500));
            // SAFETY: raising a signal on this process has no memory effects.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        "die" => world.barrier()?,
        "wait" | "cycle" => {}
        other => {
            eprintln!("hang: unknown bug {other:?}: use wait, cycle or die");
            std::process::exit(2);
        }
    }
    world.finalize()
}
