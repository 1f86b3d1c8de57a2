//! The classic two-node RDMA-write demo, reduced to its essence: every rank
//! writes "Hello from rank r" straight into its right neighbour's symmetric
//! buffer with one put, and every rank prints what arrived.
//!
//! ```text
//! rlaunch -n 2 target/release/examples/hello_put
//! ```

use oneside::prelude::*;
use std::process::ExitCode;

const INBOX_BYTES: usize = 64;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hello_put: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<()> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let inbox = world.alloc::<u8>(INBOX_BYTES)?;

    let right = (rank + 1) % size;
    let message = format!("Hello from rank {rank}");
    world.put(&inbox, right, 0, message.as_bytes())?;
    world.barrier()?;

    let arrived = world.local_to_vec(&inbox)?;
    let text = String::from_utf8_lossy(arrived.split(|&b| b == 0).next().unwrap_or_default());
    let left = (rank + size - 1) % size;
    let via = world.transport_to(left)?;
    println!("rank {rank}/{size} received \"{text}\" from rank {left} (via {via})");
    world.finalize()
}
