//! A program whose traffic is known exactly, for `rlaunch --profile`'s
//! tests. Every rank, with `right` and `left` its neighbours:
//! 3 puts of 8 bytes and 5 one-value puts of a u64 to `right` (64 bytes),
//! a get of 16 bytes from `left`, and 7 fetch-adds of a u64 on rank 0
//! (56 bytes). Then, with profiling paused (`set_profiling_level(0)`),
//! 100 more puts to `right`, which no profile may count; and a broadcast,
//! whose traffic is the collective's, not the program's.
//!
//! ```text
//! rlaunch -n 4 --profile target/release/examples/traffic
//! ```

use oneside::prelude::*;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("traffic: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let (right, left) = ((rank + 1) % size, (rank + size - 1) % size);
    let text = world.alloc::<u8>(16)?;
    let words = world.alloc::<u64>(5)?;
    let counter = world.alloc::<u64>(1)?;
    let source = world.alloc::<u64>(64)?;
    let block = world.alloc::<u64>(64)?;

    for _ in 0..3 {
        world.put(&text, right, 0, b"abcdefg\0")?;
    }
    for i in 0..5 {
        world.put_value(&words, right, i, (10 * rank + i) as u64)?;
    }
    world.barrier()?;
    let mut got = [0u8; 16];
    world.get(&text, left, 0, &mut got)?;
    for _ in 0..7 {
        world.atomic_fetch_add(&counter, 0, 0, 1)?;
    }
    oneside::set_profiling_level(0);
    for _ in 0..100 {
        world.put(&text, right, 8, b"unseen\0\0")?;
    }
    oneside::set_profiling_level(1);
    world.barrier()?;

    let mine = world.local_to_vec(&words)?;
    let expected: Vec<u64> = (0..5).map(|i| (10 * left + i) as u64).collect();
    let count = world.local_to_vec(&counter)?[0];
    if mine != expected || &got[..8] != b"abcdefg\0" || (rank == 0 && count != 7 * size as u64) {
        eprintln!("traffic: rank {rank} saw words {mine:?}, text {got:?}, counter {count}");
        return Ok(false);
    }
    world.broadcast(world.team_world(), &block, &source, 64, 0)?;
    if rank == 0 {
        println!("traffic ok: {size} ranks");
    }
    world.finalize()?;
    Ok(true)
}
