//! The heap grows while a NIC registers it in parts (`transport::parts`):
//! run over a transport that registers memory (verbs, or ofi in parts:
//! `ONESIDE_OFI_REGISTER=parts`).
//!
//! `grow_parts [STEPS]` (default 6): two threads of every rank (one on the
//! world, one on a context of its own) keep putting, getting and
//! fetch-adding in the heap's first grown part while the main thread
//! allocates objects of growing, uneven sizes, so that the heap grows and
//! the NIC registers each range (`Links::grown`), and most objects cross
//! the end of the part they start in. After each allocation every rank
//! writes its right neighbour's copy of the new object whole in one put,
//! reads it back whole in one get, and fetch-adds its first and last
//! words. At the end every count of the threads' fetch-adds is checked.
//!
//! With `ONESIDE_TEST_REFUSE_GROWTH=RANK:N` the Nth growth must fail on
//! every rank naming RANK, and the same allocation again succeed.
//! `grow_parts mismatch` makes rank 1 register its segment whole
//! (`ONESIDE_OFI_REGISTER=whole`), which wire-up must refuse.
//!
//! Prints `grow_parts: rank R/N ok: ...` per rank, or exits 1.

use oneside::prelude::*;
use oneside::{Sym, World};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("grow_parts: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> oneside::Result<bool> {
    let arg = std::env::args().nth(1).unwrap_or_default();
    if arg == "mismatch" && std::env::var("ONESIDE_RANK").as_deref() == Ok("1") {
        // Before init, and before any thread: this rank alone registers whole.
        std::env::set_var("ONESIDE_OFI_REGISTER", "whole");
    }
    let steps = arg.parse().unwrap_or(6usize);
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    if !world.heap_registered() {
        eprintln!("grow_parts: this transport does not register the heap as it grows (ONESIDE_OFI_REGISTER=parts?)");
        return Ok(false);
    }
    let mut refused = None;
    // The threads' words (their puts, and counters the left neighbour's
    // threads add to), in the first range the heap grows by.
    let words = alloc(&world, 64, &mut refused)?;
    let counters = alloc(&world, 2, &mut refused)?;
    let stop = AtomicBool::new(false);
    let ops = [AtomicU64::new(0), AtomicU64::new(0)];
    world.barrier()?;
    let sizes = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let (world, words, counters, stop, ops) = (&world, &words, &counters, &stop, &ops);
                s.spawn(move || match t {
                    0 => traffic(world, words, counters, t, right, stop, &ops[t]),
                    _ => traffic(&world.ctx_create()?, words, counters, t, right, stop, &ops[t]),
                })
            })
            .collect();
        let grown = grow(&world, steps, right, &mut refused);
        stop.store(true, Ordering::Release);
        for thread in threads {
            thread.join().expect("a traffic thread panicked")?;
        }
        grown
    })?;
    world.barrier()?;
    // The left neighbour's threads added once per operation they counted.
    let expected = world.alloc::<u64>(2)?;
    world.put(
        &expected,
        right,
        0,
        &[ops[0].load(Ordering::Relaxed), ops[1].load(Ordering::Relaxed)],
    )?;
    world.barrier()?;
    let (got, want) = (world.local_to_vec(&counters)?, world.local_to_vec(&expected)?);
    if got != want {
        println!(
            "grow_parts: rank {rank}: MISMATCH in the counters its left neighbour added to: {got:?}, expected {want:?}"
        );
        return Ok(false);
    }
    let asked = std::env::var("ONESIDE_TEST_REFUSE_GROWTH").is_ok();
    if asked && refused.is_none() {
        println!("grow_parts: rank {rank}: no growth was refused");
        return Ok(false);
    }
    let sizes: Vec<String> = sizes.iter().map(|s| (s >> 10).to_string()).collect();
    let refused = refused.map_or(String::new(), |why| format!("; refused as asked: {why}"));
    println!(
        "grow_parts: rank {rank}/{size} ok: {steps} objects, heap KiB {}, {} operations meanwhile{refused}",
        sizes.join(" "),
        want[0] + want[1]
    );
    world.finalize()?;
    Ok(true)
}

/// Allocates `words` words; a growth refused (`ONESIDE_TEST_REFUSE_GROWTH`)
/// is noted in `refused` and the allocation made again, once.
fn alloc(world: &World, words: usize, refused: &mut Option<String>) -> oneside::Result<Sym<u64>> {
    match world.alloc::<u64>(words) {
        Err(e) if refused.is_none() && std::env::var("ONESIDE_TEST_REFUSE_GROWTH").is_ok() => {
            let why = e.to_string();
            let named = std::env::var("ONESIDE_TEST_REFUSE_GROWTH").unwrap_or_default();
            let named = named.split(':').next().unwrap_or("");
            assert!(
                why.contains(&format!("rank {named} could not register heap offsets")),
                "rank {}: the refusal names another rank: {why}",
                world.rank()
            );
            *refused = Some(why);
            world.alloc::<u64>(words)
        }
        other => other,
    }
}

/// Puts, gets and fetch-adds in the first part until `stop`, counting them.
fn traffic<E: Rma + Atomics>(
    on: &E,
    words: &Sym<u64>,
    counters: &Sym<u64>,
    t: usize,
    right: usize,
    stop: &AtomicBool,
    ops: &AtomicU64,
) -> oneside::Result<()> {
    let mut n = 0u64;
    while !stop.load(Ordering::Acquire) {
        let slot = t * 32 + (n % 32) as usize;
        on.put(words, right, slot, &[n])?;
        on.quiet()?;
        let mut back = [0u64];
        on.get(words, right, slot, &mut back)?;
        assert_eq!(back[0], n, "thread {t} read back another value");
        on.atomic_fetch_add(counters, right, t, 1)?;
        n += 1;
        ops.store(n, Ordering::Relaxed);
    }
    on.quiet()
}

/// Allocates `steps` objects of growing, uneven sizes (the heap grows),
/// and writes, reads and fetch-adds each one whole on `right`; returns
/// the heap's size after each.
fn grow(world: &World, steps: usize, right: usize, refused: &mut Option<String>) -> oneside::Result<Vec<usize>> {
    let rank = world.rank();
    let mut sizes = vec![world.heap_info().size];
    for step in 0..steps {
        // 0.75 MiB, then about twice as much each time, never whole pages.
        let words = ((3 << 17) << step) / 8 + 1000 * step + 3;
        let object = alloc(world, words, refused)?;
        sizes.push(world.heap_info().size);
        let data: Vec<u64> = (0..words as u64)
            .map(|i| (step as u64) << 56 | (rank as u64) << 40 | i)
            .collect();
        world.put(&object, right, 0, &data)?;
        world.quiet()?;
        let mut back = vec![0u64; words];
        world.get(&object, right, 0, &mut back)?;
        if let Some(at) = back.iter().zip(&data).position(|(a, b)| a != b) {
            panic!("rank {rank}: object {step} read back differs at word {at} of {words}");
        }
        for index in [0, words - 1] {
            let old = world.atomic_fetch_add(&object, right, index, 5)?;
            let now = world.atomic_fetch_add(&object, right, index, 0)?;
            assert_eq!(
                (old + 5, now),
                (data[index] + 5, data[index] + 5),
                "object {step}, word {index}"
            );
        }
        world.barrier()?;
    }
    Ok(sizes)
}
