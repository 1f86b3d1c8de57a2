//! A shared counter under a distributed lock, a course classic for mutual
//! exclusion: every rank adds 1 to a plain (not atomic) u64 on rank 0, K
//! times, each time reading it with `get`, and writing it back with `put`
//! while it holds the lock. Without the lock two ranks would read the same
//! value and one increment would be lost. Releasing the lock quiets first,
//! so the put is complete before the next holder reads.
//!
//! The lock is an MCS queue lock: a rank that asks while it is held waits
//! in line, on its own memory. At the end, after a barrier, nobody holds or
//! waits (after a check that `try_lock` refuses on every other rank while
//! the last rank holds it), so rank 0's `try_lock` (which takes the lock only if it is free
//! right now) must succeed; rank 0 reads the counter under it and checks
//! it is N × K.
//!
//! `lock_counter [K]` (default 200).

use oneside::prelude::*;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("lock_counter: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let k: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let counter = world.alloc::<u64>(1)?;
    let lock = world.alloc_lock()?;

    for _ in 0..k {
        let guard = world.lock(&lock)?;
        let v = world.get_value(&counter, 0, 0)?;
        world.put_value(&counter, 0, 0, v + 1)?;
        drop(guard);
    }
    world.barrier()?;

    // While the last rank holds the lock, every other rank's try_lock must refuse.
    let holder = size - 1;
    let held = match rank == holder {
        true => Some(world.lock(&lock)?),
        false => None,
    };
    world.barrier()?;
    let refusals = world.alloc::<u64>(1)?;
    if rank != holder && world.try_lock(&lock)?.is_none() {
        world.atomic_inc(&refusals, 0, 0)?;
    }
    world.barrier()?;
    drop(held);
    world.barrier()?;

    let mut ok = true;
    if rank == 0 {
        let expected = size as u64 * k;
        let (total, free) = match world.try_lock(&lock)? {
            Some(guard) => {
                let total = world.get_value(&counter, 0, 0)?;
                guard.unlock()?;
                (total, true)
            }
            None => (world.get_value(&counter, 0, 0)?, false),
        };
        if !free {
            eprintln!("lock_counter: the lock is not free after every rank finished");
        }
        let refused = world.get_value(&refusals, 0, 0)?;
        ok = free && total == expected && refused == size as u64 - 1;
        let verdict = if ok { "ok" } else { "WRONG" };
        println!(
            "lock_counter: {size} ranks x {k} increments = {total}, expected {expected}; \
             try_lock refused by {refused} of {} while held: {verdict}",
            size - 1
        );
    }
    world.finalize()?;
    Ok(ok)
}
