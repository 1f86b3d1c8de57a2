//! The NIC's registration of the heap in parts, driven by hand (the
//! transports' registration of a growing heap, `transport::parts`): run
//! with `ONESIDE_TEST_FIRST_PART=SIZE`, so that the NIC registers only the
//! heap's first SIZE bytes at start, and over a transport that registers
//! memory (verbs, or ofi in parts: `ONESIDE_OFI_REGISTER=parts`).
//!
//! Each rank allocates a large object across the first part's end (SIZE
//! must cover the team area: 4M at 2 to 4 ranks), then registers the heap
//! beyond it in steps of half what is registered (`World::register_grown`, what a
//! growing allocation calls) while two threads of every rank keep putting,
//! getting and fetch-adding in the first part, one on the world and one on
//! a context of its own. After each step it writes its right neighbour's
//! copy of the object across every boundary registered so far, reads it
//! back, and fetch-adds the first word of each new part; at the end it
//! writes and reads the whole object in one call each, and checks every
//! count of the threads' fetch-adds.
//!
//! With `ONESIDE_TEST_REFUSE_GROWTH=RANK:N` the Nth step must fail on every
//! rank naming RANK, and its retry succeed. `grow_parts beyond` instead
//! puts past the registered part before any step, which must fail clearly;
//! `grow_parts mismatch` makes rank 1 register its segment whole
//! (`ONESIDE_OFI_REGISTER=whole`), which wire-up must refuse.
//!
//! Prints `grow_parts: rank R/N ok: ...` per rank, or exits 1.

use oneside::prelude::*;
use oneside::{Sym, World};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The object the steps register, in 8-byte words (12 MiB).
const BIG_WORDS: usize = 12 << 17;
const PAGE: usize = 4096;

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
    let mode = std::env::args().nth(1).unwrap_or_default();
    if mode == "mismatch" && std::env::var("ONESIDE_RANK").as_deref() == Ok("1") {
        // Before init, and before any thread: this rank alone registers whole.
        std::env::set_var("ONESIDE_OFI_REGISTER", "whole");
        std::env::remove_var("ONESIDE_TEST_FIRST_PART");
    }
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    let Some(first) = std::env::var("ONESIDE_TEST_FIRST_PART")
        .ok()
        .and_then(|v| oneside::protocol::env::parse_size(&v))
    else {
        eprintln!("grow_parts: set ONESIDE_TEST_FIRST_PART (e.g. 1M)");
        return Ok(false);
    };
    if !world.registers_memory() {
        eprintln!("grow_parts: this transport does not register memory in parts (ONESIDE_OFI_REGISTER=parts?)");
        return Ok(false);
    }
    let first = first.next_multiple_of(PAGE);
    // In the first part: the threads' words (their puts, and counters the
    // left neighbour's threads add to).
    let words = world.alloc::<u64>(64)?;
    let counters = world.alloc::<u64>(2)?;
    let big = world.alloc::<u64>(BIG_WORDS)?;
    let big_at = world
        .offset_of(world.address_of(&big) as usize, BIG_WORDS * 8)
        .expect("a symmetric object has an offset");
    let end = (big_at + BIG_WORDS * 8).next_multiple_of(PAGE);
    if big_at > first || end <= first {
        eprintln!("grow_parts: the object ({big_at:#x}..{end:#x}) must cross the first part's end ({first:#x})");
        return Ok(false);
    }

    if mode == "beyond" {
        let put = world.put(&big, right, BIG_WORDS - 1, &[1u64]);
        let why = put.err().map(|e| e.to_string()).unwrap_or_default();
        println!("grow_parts: rank {rank}: a put past the registered part: {why}");
        return Ok(false);
    }

    let stop = AtomicBool::new(false);
    let ops = [AtomicU64::new(0), AtomicU64::new(0)];
    world.barrier()?;
    let (steps, refused, checked) = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let (world, words, counters, stop, ops) = (&world, &words, &counters, &stop, &ops);
                s.spawn(move || match t {
                    0 => traffic(world, words, counters, t, right, stop, &ops[t]),
                    _ => traffic(&world.ctx_create()?, words, counters, t, right, stop, &ops[t]),
                })
            })
            .collect();
        let grown = grow(&world, &big, (big_at, first, end), right);
        stop.store(true, Ordering::Release);
        for thread in threads {
            thread.join().expect("a traffic thread panicked")?;
        }
        grown
    })?;
    world.barrier()?;
    // The left neighbour's threads added once per operation they counted.
    let left = (rank + size - 1) % size;
    let expected = world.alloc::<u64>(2)?;
    world.put(&expected, right, 0, &[ops[0].load(Ordering::Relaxed), ops[1].load(Ordering::Relaxed)])?;
    world.barrier()?;
    let (got, want) = (world.local_to_vec(&counters)?, world.local_to_vec(&expected)?);
    if got != want {
        println!("grow_parts: rank {rank}: MISMATCH counters from rank {left}: {got:?}, expected {want:?}");
        return Ok(false);
    }
    let refused = refused.map_or(String::new(), |why| format!("; refused as asked: {why}"));
    println!(
        "grow_parts: rank {rank}/{size} ok: {steps} parts registered past {first} bytes up to {end}, \
         {checked} words checked, {} operations meanwhile{refused}",
        want[0] + want[1]
    );
    world.finalize()?;
    Ok(true)
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

/// Registers `[first, end)` in steps of half what is registered, checking the object after
/// each; returns the steps, the refusal seen (if one was asked for) and
/// the words checked.
fn grow(
    world: &World,
    big: &Sym<u64>,
    (big_at, first, end): (usize, usize, usize),
    right: usize,
) -> oneside::Result<(usize, Option<String>, usize)> {
    let rank = world.rank();
    let refuse = std::env::var("ONESIDE_TEST_REFUSE_GROWTH").ok();
    let (mut start, mut steps, mut refused, mut checked) = (first, 0, None, 0);
    let mut boundaries = Vec::new();
    while start < end {
        let len = (start / 2).next_multiple_of(PAGE).min(end - start);
        match world.register_grown(start, len) {
            Ok(()) => {}
            Err(e) if refuse.is_some() && refused.is_none() => {
                let why = e.to_string();
                let named = refuse.as_deref().and_then(|r| r.split(':').next()).unwrap_or("");
                if !why.contains(&format!("rank {named} could not register")) {
                    panic!("rank {rank}: the refusal names another rank: {why}");
                }
                refused = Some(why);
                continue; // the retry of the same range
            }
            Err(e) => return Err(e),
        }
        boundaries.push(start);
        steps += 1;
        start += len;
        checked += check(world, big, big_at, start, &boundaries, right, steps as u64)?;
    }
    if refuse.is_some() && refused.is_none() {
        panic!("rank {rank}: no step was refused");
    }
    // The whole object in one put and one get, across every part.
    let all: Vec<u64> = (0..BIG_WORDS as u64).map(|i| i ^ (rank as u64) << 40).collect();
    world.put(big, right, 0, &all)?;
    world.quiet()?;
    let mut back = vec![0u64; BIG_WORDS];
    world.get(big, right, 0, &mut back)?;
    if back != all {
        let at = back.iter().zip(&all).position(|(a, b)| a != b).unwrap_or(0);
        panic!("rank {rank}: the whole object read back differs at word {at}");
    }
    world.barrier()?;
    Ok((steps, refused, checked + BIG_WORDS))
}

/// Writes 4 KiB on each side of every registered boundary inside the
/// object at `right`, reads them back, and fetch-adds the first word of
/// the newest part; returns the words checked.
fn check(
    world: &World,
    big: &Sym<u64>,
    big_at: usize,
    registered_end: usize,
    boundaries: &[usize],
    right: usize,
    step: u64,
) -> oneside::Result<usize> {
    let mut checked = 0;
    for &boundary in boundaries {
        let lo = boundary.saturating_sub(PAGE).max(big_at);
        let hi = (boundary + PAGE).min(registered_end).min(big_at + BIG_WORDS * 8);
        if hi <= lo {
            continue;
        }
        let (index, n) = ((lo - big_at) / 8, (hi - lo) / 8);
        let data: Vec<u64> = (0..n as u64).map(|i| step << 48 | (lo as u64 + 8 * i)).collect();
        world.put(big, right, index, &data)?;
        world.quiet()?;
        let mut back = vec![0u64; n];
        world.get(big, right, index, &mut back)?;
        assert_eq!(back, data, "across the boundary at {boundary:#x}, step {step}");
        checked += n;
    }
    let newest = *boundaries.last().expect("a step was registered");
    if newest >= big_at {
        let index = (newest - big_at) / 8;
        world.put(big, right, index, &[0u64])?;
        world.quiet()?;
        let old = world.atomic_fetch_add(big, right, index, 5)?;
        let now = world.atomic_fetch_add(big, right, index, 0)?;
        assert_eq!((old, now), (0, 5), "a fetch-add at the start of the part at {newest:#x}");
        checked += 1;
    }
    world.barrier()?;
    Ok(checked)
}
