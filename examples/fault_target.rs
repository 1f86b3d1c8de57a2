//! The workload of the fault campaign (`tests/fault_campaign.rs`): every
//! rank runs one family of operations in a loop, meeting the others every
//! 8 rounds to agree whether `SECS` have passed, then finalizes.
//! The campaign kills or stops one rank at a random moment and checks how
//! the job ends. `fault_target FAMILY [SECS]`, FAMILY one of:
//! `put get nbi atomics signals waits locks barrier broadcast reduce
//! alltoall collect init finalize`.
//!
//! Each rank prints `starting rank=R pid=P` before init, `ready rank=R
//! pid=P job=J` after it, and `finalizing rank=R` before finalize, so the
//! campaign knows whom to hit and when.

use oneside::prelude::*;
use oneside::{Cmp, Sum, World};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let family = args.first().cloned().unwrap_or_else(|| "put".into());
    let secs: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20.0);
    match run(&family, Duration::from_secs_f64(secs)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fault_target: {e}");
            ExitCode::from(2)
        }
    }
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn run(family: &str, secs: Duration) -> oneside::Result<()> {
    let rank_env = std::env::var("ONESIDE_RANK").unwrap_or_default();
    let pid = std::process::id();
    say(format!("starting rank={rank_env} pid={pid}"));
    let world = oneside::init()?;
    let rank = world.rank();
    let job = std::env::var("ONESIDE_JOB_ID").unwrap_or_default();
    say(format!("ready rank={rank} pid={pid} job={job}"));
    let objects = Objects::new(&world)?;
    let start = Instant::now();
    let mut round = 0u64;
    // `init` and `finalize` faults land at start and end: a short loop.
    let limit = match family {
        "init" | "finalize" => Duration::from_millis(50),
        _ => secs,
    };
    loop {
        round += 1;
        one_round(&world, &objects, family, round)?;
        // Every 8 rounds the ranks meet and agree whether to stop (any
        // rank past the limit stops them all), so all make the same calls.
        if round.is_multiple_of(8) {
            let late = u64::from(start.elapsed() >= limit);
            if world.reduce_value(world.team_world(), oneside::Max, late)? == 1 {
                break;
            }
        }
    }
    say(format!("finalizing rank={rank}"));
    world.finalize()
}

struct Objects {
    words: oneside::Sym<u64>,
    block: oneside::Sym<u64>,
    all: oneside::Sym<u64>,
    spread: oneside::Sym<u64>,
    flags: oneside::Sym<u64>,
    lock: oneside::Lock,
}

const BLOCK: usize = 512;

impl Objects {
    fn new(world: &World) -> oneside::Result<Objects> {
        Ok(Objects {
            words: world.alloc::<u64>(4)?,
            block: world.alloc::<u64>(BLOCK)?,
            all: world.alloc::<u64>(BLOCK * world.size())?,
            spread: world.alloc::<u64>(BLOCK)?,
            flags: world.alloc::<u64>(2)?,
            lock: world.alloc_lock()?,
        })
    }
}

fn one_round(world: &World, o: &Objects, family: &str, round: u64) -> oneside::Result<()> {
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    let team = world.team_world();
    let data = vec![round; BLOCK];
    match family {
        "put" => {
            world.put(&o.block, right, 0, &data)?;
            world.quiet()?;
        }
        "get" => {
            let mut got = vec![0u64; BLOCK];
            world.get(&o.block, right, 0, &mut got)?;
        }
        "nbi" => {
            let mut got = [0u64; 4];
            world.nbi(|s| {
                s.put(&o.block, right, 0, &data)?;
                s.get(&o.words, right, 0, &mut got)
            })?
        }
        "atomics" => {
            world.atomic_fetch_add(&o.words, right, 0, 1)?;
            world.atomic_compare_swap(&o.words, right, 1, round - 1, round)?;
        }
        "signals" => {
            world.put_signal(
                &o.block,
                right,
                0,
                &data[..8],
                &o.flags,
                0,
                oneside::SignalOp::Set,
                round,
            )?;
            world.signal_wait_until(&o.flags, 0, Cmp::Ge(round))?;
        }
        "waits" => {
            // A ring of waits: each rank waits for its left neighbour's word.
            world.put_value(&o.flags, right, 1, round)?;
            world.wait_until(&o.flags, 1, |v| v >= round)?;
        }
        "locks" => {
            let guard = world.lock(&o.lock)?;
            let value = world.get_value(&o.words, 0, 2)?;
            world.put_value(&o.words, 0, 2, value + 1)?;
            guard.unlock()?;
        }
        "barrier" | "init" | "finalize" => world.barrier()?,
        "broadcast" => world.broadcast(team, &o.block, &o.block, BLOCK, (round as usize) % size)?,
        "reduce" => {
            world.reduce_value(team, Sum, round)?;
        }
        "alltoall" => world.alltoall(team, &o.spread, &o.block, BLOCK / size)?,
        "collect" => world.fcollect(team, &o.all, &o.block, BLOCK)?,
        other => {
            eprintln!("fault_target: unknown family {other:?}");
            std::process::exit(2);
        }
    }
    Ok(())
}
