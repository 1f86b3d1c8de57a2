//! Context isolation: `quiet` on one context does not wait for another
//! context's operations. Three ranks on one host over TCP:
//!
//! * rank 2 stops its whole process (SIGSTOP: its progress engine too) for
//!   `STALL`; rank 1 wakes it (SIGCONT);
//! * on rank 0, thread B puts to rank 2 on context B and quiets B, which
//!   cannot finish before rank 2 runs again; meanwhile thread A puts to
//!   rank 1 on context A and quiets A.
//!
//! A's quiet must return long before B's (it owes rank 1 only), and B's
//! must take about as long as the stall (so the stall really happened).
//! Prints the two times and `ctx_isolation ok`, or exits non-zero.
//!
//!   rlaunch -n 3 --transport tcp ./ctx_isolation

use oneside::prelude::*;
use oneside::Ctx;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Under rlaunch's limit for a stopped rank that others wait for (2 s).
const STALL: Duration = Duration::from_millis(1000);

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ctx_isolation: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    if world.size() != 3 || world.transport_to((world.rank() + 1) % 3)? != "tcp" {
        eprintln!("ctx_isolation: run 3 ranks over tcp (rlaunch -n 3 --transport tcp)");
        return Ok(false);
    }
    let pids = world.alloc::<u64>(3)?;
    let data = world.alloc::<u64>(1024)?;
    for rank in 0..3 {
        world.put_value(&pids, rank, world.rank(), u64::from(std::process::id()))?;
    }
    // Contexts connect to every peer's engine: before rank 2 stops.
    let contexts = match world.rank() {
        0 => Some((world.ctx_create()?, world.ctx_create()?)),
        _ => None,
    };
    world.barrier()?;
    let verdict = match contexts {
        Some((ctx_a, ctx_b)) => origin(&ctx_a, &ctx_b, &data)?,
        None if world.rank() == 1 => {
            std::thread::sleep(STALL);
            let stopped = world.local_to_vec(&pids)?[2];
            // SAFETY: sending a signal to a process of this job.
            unsafe { libc::kill(stopped as libc::pid_t, libc::SIGCONT) };
            true
        }
        None => {
            // SAFETY: stopping this process until rank 1 continues it.
            unsafe { libc::raise(libc::SIGSTOP) };
            true
        }
    };
    world.barrier()?;
    Ok(verdict)
}

/// Rank 0: context B stuck behind the stopped rank 2, context A not.
fn origin(ctx_a: &Ctx<'_>, ctx_b: &Ctx<'_>, data: &oneside::Sym<u64>) -> oneside::Result<bool> {
    // Give rank 2 time to stop before anything is sent to it.
    std::thread::sleep(Duration::from_millis(200));
    let block = vec![7u64; 1024];
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| -> oneside::Result<Duration> {
            let start = Instant::now();
            ctx_b.put(data, 2, 0, &block)?;
            ctx_b.quiet()?;
            Ok(start.elapsed())
        });
        std::thread::sleep(Duration::from_millis(100));
        let a = (|| -> oneside::Result<Duration> {
            let start = Instant::now();
            ctx_a.put(data, 1, 0, &block)?;
            ctx_a.quiet()?;
            Ok(start.elapsed())
        })();
        (a, b.join().expect("thread B panicked"))
    });
    let (a, b) = (a?, b?);
    println!("ctx_isolation: context A quiet in {a:?} while context B waited {b:?} for a stopped peer");
    let stall_seen = b >= STALL / 2;
    let isolated = a < Duration::from_millis(300) && a * 4 < b;
    match (stall_seen, isolated) {
        (true, true) => println!("ctx_isolation ok"),
        (false, _) => println!("ctx_isolation FAILED: context B did not wait for the stopped peer"),
        (true, false) => println!("ctx_isolation FAILED: context A's quiet waited for context B's operations"),
    }
    Ok(stall_seen && isolated)
}
