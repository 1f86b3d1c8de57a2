//! The course's race mistakes and their corrections, for the race checker
//! (`rlaunch --check-races`): `races CASE`, at 2 ranks or more. Each racy
//! case has a race-free twin that orders the same accesses with one of
//! the synchronizations OpenSHMEM defines; tests/races.rs runs every case
//! and checks the checker's verdict.
//!
//! Racy: `halo-early` (a ghost cell read before the barrier that orders
//! the neighbour's put), `no-fence` (data and flag put with nothing
//! between, the flag waited for), `get-put` (a read-modify-write of a
//! counter on rank 0 with get and put), `atomic-mix` (an atomic add and a
//! plain write of one word), `two-puts` (two ranks put into the same
//! bytes), `put-get` (rank 0 gets bytes its own put, not yet completed,
//! writes), `reduce-put` (a put into a member's reduction destination,
//! which that member may still be writing), `atomic-teams` (rank 0's
//! atomic add and the others', on a context of another team).
//!
//! Race-free: `halo`, `quiet-flag`, `fence-flag`, `signal`, `lock`,
//! `atomic`, `test-flag`, `owned` (each rank writes its own part),
//! `put-quiet-get`, `reduce-barrier-put`, `atomic-contexts` (the same adds
//! on a context of the world's team).

use oneside::prelude::*;
use oneside::{Cmp, SignalOp};
use std::process::ExitCode;

fn main() -> ExitCode {
    let case = std::env::args().nth(1).unwrap_or_default();
    match run(&case) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("races {case}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(case: &str) -> oneside::Result<()> {
    let world = oneside::init()?;
    let (me, n) = (world.rank(), world.size());
    let right = (me + 1) % n;
    let data = world.alloc::<u64>(8)?;
    let flag = world.alloc::<u64>(1)?;
    let lock = world.alloc_lock()?;
    world.barrier()?;
    match case {
        "halo-early" | "halo" => {
            world.put(&data, right, 0, &[me as u64; 4])?;
            if case == "halo" {
                world.barrier()?;
            }
            let ghost = world.local_to_vec(&data)?;
            world.barrier()?;
            assert!(case == "halo-early" || ghost[0] == ((me + n - 1) % n) as u64);
        }
        "no-fence" | "quiet-flag" | "fence-flag" => {
            if me == 0 {
                world.put(&data, 1, 0, &[7; 8])?;
                match case {
                    "quiet-flag" => world.quiet()?,
                    "fence-flag" => world.fence()?,
                    _ => {}
                }
                world.put_value(&flag, 1, 0, 1)?;
            } else if me == 1 {
                world.wait_until(&flag, 0, Cmp::Eq(1))?;
                let seen = world.local_to_vec(&data)?;
                // The flag is the reader's to reset, after the wait saw it.
                world.local_write(&flag, 0, &[0])?;
                assert!(case == "no-fence" || seen == [7; 8]);
            }
            world.barrier()?;
        }
        "signal" => {
            let signal = world.alloc::<u64>(1)?;
            if me == 0 {
                world.put_signal(&data, 1, 0, &[5; 8], &signal, 0, SignalOp::Set, 1)?;
            } else if me == 1 {
                world.signal_wait_until(&signal, 0, Cmp::Eq(1))?;
                assert_eq!(world.local_to_vec(&data)?, [5; 8]);
            }
            world.barrier()?;
        }
        "test-flag" => {
            if me == 0 {
                world.put(&data, 1, 0, &[3; 8])?;
                world.quiet()?;
                world.atomic_set(&flag, 1, 0, 1)?;
            } else if me == 1 {
                while !world.test(&flag, 0, Cmp::Eq(1))? {}
                assert_eq!(world.local_to_vec(&data)?, [3; 8]);
            }
            world.barrier()?;
        }
        "get-put" | "lock" => {
            let guard = match case {
                "lock" => Some(world.lock(&lock)?),
                _ => None,
            };
            let v = world.get_value(&data, 0, 0)?;
            world.put_value(&data, 0, 0, v + 1)?;
            drop(guard);
            world.barrier()?;
        }
        "atomic" | "atomic-mix" => {
            if me != 0 {
                world.atomic_add(&data, 0, 0, 1u64)?;
            } else if case == "atomic-mix" {
                world.local_write(&data, 0, &[100])?;
            }
            world.barrier()?;
        }
        "atomic-teams" | "atomic-contexts" => {
            // One word's increments on contexts of two teams (the world's
            // and a copy of it) are not atomic with each other; on two
            // contexts of one team they are.
            let all = world
                .split_strided(world.team_world(), 0, 1, n)?
                .expect("every rank is a member of the team of all");
            let ctx = match case {
                "atomic-teams" => world.team_ctx_create(&all)?,
                _ => world.ctx_create()?,
            };
            world.barrier()?; // a phase that begins with no acquire
            match me {
                0 => world.atomic_add(&data, 0, 0, 1u64)?,
                _ => ctx.atomic_add(&data, 0, 0, 1u64)?,
            }
            world.barrier()?;
            ctx.destroy()?;
            world.team_destroy(all)?;
        }
        "two-puts" | "owned" => {
            let at = match case {
                "owned" => me % 8,
                _ => 0,
            };
            world.put_value(&data, 0, at, me as u64)?;
            world.barrier()?;
        }
        "put-get" | "put-quiet-get" => {
            if me == 0 {
                world.put(&data, right, 0, &[7; 8])?;
                if case == "put-quiet-get" {
                    world.quiet()?;
                }
                let v = world.get_value(&data, right, 3)?;
                assert!(case == "put-get" || v == 7);
            }
            world.barrier()?;
        }
        "reduce-put" | "reduce-barrier-put" => {
            let one = world.alloc::<u64>(1)?;
            world.local_write(&one, 0, &[1])?;
            world.barrier()?;
            world.reduce(world.team_world(), oneside::Sum, &data, &one, 1)?;
            if case == "reduce-barrier-put" {
                world.barrier()?;
            }
            if me == 0 {
                world.put_value(&data, right, 0, 0)?;
            }
            world.barrier()?;
        }
        other => panic!("races: no case {other:?}"),
    }
    Ok(())
}
