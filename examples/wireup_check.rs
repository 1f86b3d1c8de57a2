//! A large job's wire-up, checked from inside: every rank holds every
//! other rank's card (it has a path to each, of the kind the card implies),
//! reaches its neighbour and the rank opposite it on the ring with a put
//! (so a same-host peer mapped on first access works), and the ranks add
//! up (atomic sums of r and r² at rank 0, which only a complete,
//! duplicate-free set of ranks passes). The scale test runs it at 1024
//! ranks.
//!
//! `wireup_check [TRANSPORT]`: every path to a peer must be TRANSPORT
//! (e.g. `shm`); rank 0 prints one line if all of it holds.

use oneside::prelude::*;
use oneside::World;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wireup_check: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let world = oneside::init().map_err(chain)?;
    check(&world).map_err(|e| format!("rank {}: {e}", world.rank()))?;
    world.finalize().map_err(chain)
}

fn check(world: &World) -> Result<(), String> {
    let (rank, size) = (world.rank(), world.size());
    let expected = std::env::args().nth(1);
    for peer in (0..size).filter(|&p| p != rank) {
        let path = world.transport_to(peer).map_err(chain)?;
        if expected.as_deref().is_some_and(|want| want != path) {
            return Err(format!("its path to rank {peer} is {path}, not {expected:?}"));
        }
    }

    let inbox = world.alloc::<u64>(2).map_err(chain)?;
    let (right, opposite) = ((rank + 1) % size, (rank + size / 2) % size);
    world.put(&inbox, right, 0, &[rank as u64]).map_err(chain)?;
    world.put(&inbox, opposite, 1, &[rank as u64]).map_err(chain)?;
    world.barrier().map_err(chain)?;
    let arrived = world.local_to_vec(&inbox).map_err(chain)?;
    let (left, across) = ((rank + size - 1) % size, (rank + size - size / 2) % size);
    if arrived != [left as u64, across as u64] {
        return Err(format!(
            "expected puts from ranks {left} and {across}, found {arrived:?}"
        ));
    }

    // Every rank adds r and r² into rank 0's counters: only a complete,
    // duplicate-free set of ranks gives both sums.
    let sums = world.alloc::<u64>(2).map_err(chain)?;
    let r = rank as u64;
    world.atomic_add(&sums, 0, 0, r).map_err(chain)?;
    world.atomic_add(&sums, 0, 1, r * r).map_err(chain)?;
    world.barrier().map_err(chain)?;
    let n = size as u64;
    let want = [n * (n - 1) / 2, (n - 1) * n * (2 * n - 1) / 6];
    let got = world.local_to_vec(&sums).map_err(chain)?;
    if rank == 0 && got != want {
        return Err(format!("the ranks add up to {got:?}, not {want:?}"));
    }
    if rank == 0 {
        println!("wireup_check: {size} ranks, every card, put and rank in place");
    }
    Ok(())
}

/// The error and its causes, one after another.
fn chain(e: oneside::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}
