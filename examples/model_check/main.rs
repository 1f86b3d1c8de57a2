//! Randomized check of put/get/quiet/barrier and of remote atomics against
//! a model of what memory must hold. `model_check [SEED] [PHASES]`, or
//! `model_check SEED PHASES THREADS` for the check with threads and
//! contexts (`threads.rs`), or `model_check --self-test` to check the
//! atomic checkers themselves.
//!
//! Every rank draws every rank's operations from the same seeded generator,
//! so each can run the same model. Rank r only ever writes slots
//! `[r·K, (r+1)·K)` of any rank's array, so writes of different ranks never
//! race. In a phase a rank issues random puts (calling `quiet` before a put
//! that overlaps an unquieted one to the same target, as the memory model
//! requires) and random gets of slots nobody writes in that phase, checked
//! against the model (every other get is non-blocking, all of a phase's
//! issued together in one `nbi` scope). After a barrier every rank compares its whole local
//! copy with the model. Interleaved with these, every rank issues random
//! atomics on every rank's atomic words (see `atomics.rs` for how their
//! results are checked for exact totals and a valid linearization).

mod atomics;
mod threads;

use oneside::prelude::*;
use std::process::ExitCode;

const SLOTS_PER_RANK: usize = 24;
const OPS_PER_PHASE: usize = 12;

/// SplitMix64: small, good enough, identical on every rank.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

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
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("model_check: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<bool> {
    if std::env::args().nth(1).as_deref() == Some("--self-test") {
        let verdict = atomics::self_test();
        println!(
            "model_check: self-test: {}",
            verdict.as_ref().map_or_else(|e| e.as_str(), |()| "ok")
        );
        return Ok(verdict.is_ok());
    }
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let seed = args.next().flatten().unwrap_or(1);
    let phases = args.next().flatten().unwrap_or(40) as usize;
    if let Some(threads) = args.next().flatten() {
        return threads::run(seed, phases, threads.max(1) as usize);
    }
    let world = oneside::init()?;
    let (me, n) = (world.rank(), world.size());
    let slots = n * SLOTS_PER_RANK;
    let array = world.alloc::<u64>(slots)?;
    let mut model = vec![vec![0u64; slots]; n];
    let (mut puts, mut gets, mut amos) = (0, 0, 0);
    let atomic_words = atomics::Atomics::new(&world)?;
    // Zeroed by alloc; read no earlier copy, as peers may already be at work on it.
    let mut before = vec![0u64; atomics::WORDS];

    for phase in 0..phases {
        let mut rng = Rng(seed ^ (phase as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
        let plan: Vec<Vec<Op>> = (0..n).map(|writer| draw_ops(&mut rng, writer, n)).collect();
        // Slots written by anyone this phase, per target: gets must avoid them.
        let mut written = vec![vec![false; slots]; n];
        for op in plan.iter().flatten() {
            if let Op::Put { target, start, values } = op {
                written[*target][*start..start + values.len()].fill(true);
            }
        }
        let mut unquieted = vec![vec![false; slots]; n];
        let mut deferred: Vec<(usize, usize, Vec<u64>)> = Vec::new();
        let mut atomic_rng = Rng(seed ^ (phase as u64 + 1).wrapping_mul(0x1000_0001) ^ (me as u64) << 40);
        for (i, op) in plan[me].iter().enumerate() {
            if i < atomics::OPS {
                atomic_words.issue(&world, &mut atomic_rng, seed, phase, i)?;
            }
            match op {
                Op::Put { target, start, values } => {
                    let range = *start..start + values.len();
                    if unquieted[*target][range.clone()].iter().any(|&w| w) {
                        world.quiet()?;
                        unquieted.iter_mut().for_each(|t| t.fill(false));
                    }
                    world.put(&array, *target, *start, values)?;
                    unquieted[*target][range].fill(true);
                    puts += 1;
                }
                Op::Get { target, start, len } => {
                    let range = *start..start + len;
                    if written[*target][range.clone()].iter().any(|&w| w) {
                        continue;
                    }
                    if i % 2 == 1 {
                        deferred.push((*target, *start, vec![0u64; *len]));
                        continue;
                    }
                    let mut got = vec![0u64; *len];
                    world.get(&array, *target, *start, &mut got)?;
                    if got[..] != model[*target][range] {
                        println!(
                            "MISMATCH rank {me} phase {phase}: get from rank {target} at {start}: {got:?} != model"
                        );
                        return Ok(false);
                    }
                    gets += 1;
                }
            }
        }
        // Every other get was deferred: issue them all at once, non-blocking,
        // and check them after the scope's quiet.
        world.nbi(|s| {
            for (target, start, got) in deferred.iter_mut() {
                s.get(&array, *target, *start, got)?;
            }
            Ok(())
        })?;
        for (target, start, got) in deferred.drain(..) {
            if got[..] != model[target][start..start + got.len()] {
                println!("MISMATCH rank {me} phase {phase}: get_nbi from rank {target} at {start}: {got:?} != model");
                return Ok(false);
            }
            gets += 1;
        }
        world.barrier()?;
        for op in plan.iter().flatten() {
            if let Op::Put { target, start, values } = op {
                model[*target][*start..start + values.len()].copy_from_slice(values);
            }
        }
        let local = world.local_to_vec(&array)?;
        if let Some(slot) = (0..slots).find(|&s| local[s] != model[me][s]) {
            println!(
                "MISMATCH rank {me} phase {phase}: slot {slot} holds {} but the model says {}",
                local[slot], model[me][slot]
            );
            return Ok(false);
        }
        match atomic_words.check(&world, seed, phase, &before)? {
            Ok(checked) => amos += checked,
            Err(violation) => {
                println!("MISMATCH rank {me} phase {phase}: atomics: {violation}");
                return Ok(false);
            }
        }
        before = atomic_words.snapshot(&world)?;
        atomic_words.clear_log(&world)?;
        // Nobody writes the next phase until everyone has checked this one.
        world.barrier()?;
    }
    println!(
        "model_check: rank {me}/{n} ok: {phases} phases, {puts} puts, {gets} gets, {amos} atomics checked (seed {seed})"
    );
    world.finalize()?;
    Ok(true)
}

fn draw_ops(rng: &mut Rng, writer: usize, n: usize) -> Vec<Op> {
    (0..OPS_PER_PHASE)
        .map(|_| {
            let target = rng.below(n);
            let len = 1 + rng.below(6);
            if rng.below(3) < 2 {
                let start = writer * SLOTS_PER_RANK + rng.below(SLOTS_PER_RANK - len + 1);
                let values = (0..len).map(|_| rng.next()).collect();
                Op::Put { target, start, values }
            } else {
                let start = rng.below(n * SLOTS_PER_RANK - len + 1);
                Op::Get { target, start, len }
            }
        })
        .collect()
}
