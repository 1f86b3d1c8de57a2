//! The model check with threads: `model_check SEED PHASES THREADS`.
//!
//! Every rank runs THREADS threads for the whole check. Each (rank, thread)
//! pair is one *writer* of the model, with its own slots `[w·K, (w+1)·K)`
//! of every rank's array. Even threads work on a context of their own
//! (`ctx_create`), odd threads on the world itself (the default context,
//! shared by those threads), so both kinds are checked under concurrency.
//! In a phase each thread issues its writer's random puts (quieting its own
//! endpoint before a put that overlaps one of its unquieted puts) and gets
//! of slots nobody writes that phase, checked against the model, and
//! fetch-adds of 1 on a shared counter of random ranks: its fetched values
//! from one counter must increase, and after the phase each counter must
//! hold exactly the number of increments every writer drew for it.
//!
//! Phases end with each thread quieting its endpoint, then one thread runs
//! the barrier and checks the local copy, as collectives are one thread's.

use crate::Rng;
use oneside::prelude::*;
use oneside::{Sym, World};
use std::sync::Barrier;

const SLOTS_PER_WRITER: usize = 16;
const OPS_PER_PHASE: usize = 16;

/// One writer's operations in one phase.
enum Op {
    Put {
        target: usize,
        start: usize,
        values: Vec<u64>,
    },
    Get {
        target: usize,
        start: usize,
        len: usize,
    },
    FetchAdd {
        target: usize,
    },
}

/// What every rank needs for the check, shared by its threads.
struct Shared<'w> {
    world: &'w World,
    array: Sym<u64>,
    counter: Sym<u64>,
    writers: usize,
    threads: usize,
    seed: u64,
}

pub fn run(seed: u64, phases: usize, threads: usize) -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (me, n) = (world.rank(), world.size());
    let writers = n * threads;
    let shared = Shared {
        world: &world,
        array: world.alloc::<u64>(writers * SLOTS_PER_WRITER)?,
        counter: world.alloc::<u64>(1)?,
        writers,
        threads,
        seed,
    };
    let meet = Barrier::new(threads);
    let ops: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (shared, meet) = (&shared, &meet);
                s.spawn(move || {
                    let done = match t % 2 {
                        0 => shared
                            .world
                            .ctx_create()
                            .and_then(|ctx| thread(shared, &ctx, t, phases, meet)),
                        _ => thread(shared, shared.world, t, phases, meet),
                    };
                    done.unwrap_or_else(|e| fail(&format!("rank {me} thread {t}: {e}")))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a model thread panicked"))
            .sum()
    });
    println!(
        "model_check: rank {me}/{n} ok: {phases} phases, {threads} threads, {ops} operations checked (seed {seed})"
    );
    world.finalize()?;
    Ok(true)
}

/// One thread's part of the whole check, on endpoint `on`.
fn thread<E: Rma + Atomics>(
    sh: &Shared<'_>,
    on: &E,
    t: usize,
    phases: usize,
    meet: &Barrier,
) -> oneside::Result<usize> {
    let (me, n) = (sh.world.rank(), sh.world.size());
    let slots = sh.writers * SLOTS_PER_WRITER;
    let writer = me * sh.threads + t;
    let mut model = vec![vec![0u64; slots]; n];
    let mut counted = vec![0u64; n];
    let mut done = 0;
    for phase in 0..phases {
        let mut rng = Rng(sh.seed ^ (phase as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
        let plan: Vec<Vec<Op>> = (0..sh.writers).map(|w| draw(&mut rng, w, n, sh.writers)).collect();
        let mut written = vec![vec![false; slots]; n];
        for op in plan.iter().flatten() {
            match op {
                Op::Put { target, start, values } => written[*target][*start..start + values.len()].fill(true),
                Op::FetchAdd { target } => counted[*target] += 1,
                Op::Get { .. } => {}
            }
        }
        let mut unquieted = vec![vec![false; slots]; n];
        let mut last_ticket = vec![None::<u64>; n];
        for op in &plan[writer] {
            match op {
                Op::Put { target, start, values } => {
                    let range = *start..start + values.len();
                    if unquieted[*target][range.clone()].iter().any(|&w| w) {
                        on.quiet()?;
                        unquieted.iter_mut().for_each(|u| u.fill(false));
                    }
                    on.put(&sh.array, *target, *start, values)?;
                    unquieted[*target][range].fill(true);
                }
                Op::Get { target, start, len } => {
                    let range = *start..start + len;
                    if written[*target][range.clone()].iter().any(|&w| w) {
                        continue;
                    }
                    let mut got = vec![0u64; *len];
                    on.get(&sh.array, *target, *start, &mut got)?;
                    if got[..] != model[*target][range] {
                        fail(&format!("MISMATCH rank {me} thread {t} phase {phase}: get from rank {target} at {start}: {got:?} != model"));
                    }
                }
                Op::FetchAdd { target } => {
                    let ticket = on.atomic_fetch_add(&sh.counter, *target, 0, 1u64)?;
                    if last_ticket[*target].is_some_and(|last| ticket <= last) {
                        fail(&format!("MISMATCH rank {me} thread {t} phase {phase}: fetch-add on rank {target} went back to {ticket}"));
                    }
                    last_ticket[*target] = Some(ticket);
                }
            }
            done += 1;
        }
        on.quiet()?;
        for op in plan.iter().flatten() {
            if let Op::Put { target, start, values } = op {
                model[*target][*start..start + values.len()].copy_from_slice(values);
            }
        }
        meet.wait();
        if t == 0 {
            sh.world.barrier()?;
            let local = sh.world.local_to_vec(&sh.array)?;
            if let Some(slot) = (0..slots).find(|&s| local[s] != model[me][s]) {
                fail(&format!(
                    "MISMATCH rank {me} phase {phase}: slot {slot} holds {} but the model says {}",
                    local[slot], model[me][slot]
                ));
            }
            let total = sh.world.local_to_vec(&sh.counter)?[0];
            if total != counted[me] {
                fail(&format!(
                    "MISMATCH rank {me} phase {phase}: counter holds {total}, but {} increments were drawn",
                    counted[me]
                ));
            }
            sh.world.barrier()?;
        }
        meet.wait();
    }
    Ok(done)
}

/// Ends this rank at once: the other threads may be waiting for this one,
/// and rlaunch stops the job when a rank exits non-zero.
fn fail(what: &str) -> ! {
    println!("{what}");
    std::process::exit(1)
}

/// Writer `w`'s operations: puts into its own slots of any rank, gets of
/// anything, and fetch-adds on any rank's counter.
fn draw(rng: &mut Rng, w: usize, n: usize, writers: usize) -> Vec<Op> {
    (0..OPS_PER_PHASE)
        .map(|_| {
            let target = rng.below(n);
            let len = 1 + rng.below(6);
            match rng.below(4) {
                0 | 1 => {
                    let start = w * SLOTS_PER_WRITER + rng.below(SLOTS_PER_WRITER - len + 1);
                    let values = (0..len).map(|_| rng.next()).collect();
                    Op::Put { target, start, values }
                }
                2 => Op::Get {
                    target,
                    start: rng.below(writers * SLOTS_PER_WRITER - len + 1),
                    len,
                },
                _ => Op::FetchAdd { target },
            }
        })
        .collect()
}
