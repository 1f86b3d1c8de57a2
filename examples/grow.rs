//! The symmetric heap grows while traffic flows, and gives memory back.
//!
//! `grow [STEPS] [LARGEST_MIB]` (default 8 steps, 64 MiB): each step
//! allocates a larger object (16 bytes, then 4 KiB, then doubling from
//! 1 MiB up to LARGEST_MIB), so the heap grows several times. While the
//! main thread allocates, a second thread adds to a counter in every
//! object allocated so far, on the right neighbour. After each step every
//! rank puts a tagged word at both ends of every object on its right
//! neighbour and gets them back from there; the new object must read as
//! zeros. Then the large objects are freed (their memory goes back,
//! unless a NIC registered it) and allocated again (zeroed again), and
//! every counter is checked against the adds made. Prints
//! `grow: rank R/N ok: ...` with the heap's size at each stage.
//!
//! `grow cap BYTES` asks for BYTES more than the heap's cap allows and
//! prints the error; `grow fault` allocates 64 MiB expecting the
//! simulated failure of `ONESIDE_HEAP_FAULT=commit:<rank>` on every
//! rank, then allocates again, which must work.

use oneside::prelude::*;
use oneside::{Sym, World};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("cap") => cap(args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1 << 30)),
        Some("fault") => fault(),
        _ => {
            let steps = args.first().and_then(|a| a.parse().ok()).unwrap_or(8usize).max(3);
            let largest = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(64usize);
            traffic(steps, largest << 20)
        }
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("grow: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The bytes of step `i`'s object.
fn step_bytes(i: usize, largest: usize) -> usize {
    match i {
        0 => 16,
        1 => 4096,
        i => (1usize << 20 << (i - 2)).min(largest),
    }
}

fn traffic(steps: usize, largest: usize) -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (me, n) = (world.rank(), world.size());
    let right = (me + 1) % n;
    let start = world.heap_info();
    // Each object's address and length, for the adder's handles.
    let objects: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let adds = AtomicU64::new(0);
    let mut ok = true;
    let mut sizes = vec![start.size];
    std::thread::scope(|s| -> oneside::Result<()> {
        let adder = s.spawn(|| -> oneside::Result<()> {
            while !stop.load(Ordering::Relaxed) {
                let now = objects.lock().unwrap().clone();
                for (addr, len) in now {
                    // SAFETY: the handle only names a live object for
                    // atomics; it is never freed nor borrowed mutably.
                    let object = unsafe { world.sym_at::<u64>("grow", addr as *const u64, len)? };
                    world.atomic_add(&object, right, 1, 1u64)?;
                    adds.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::yield_now();
            }
            // Its adds complete before the main thread's barrier and frees.
            world.quiet()
        });
        let mut mine = Vec::new();
        for i in 0..steps {
            let object = world.alloc::<u64>(step_bytes(i, largest) / 8)?;
            // A fresh object reads as zeros, whatever it was before.
            ok &= zeros(&world, &object, "new")?;
            // Before any rank puts into it.
            world.barrier()?;
            objects
                .lock()
                .unwrap()
                .push((world.address_of(&object) as usize, object.len()));
            mine.push(object);
            sizes.push(world.heap_info().size);
            ok &= ends(&world, &mine, i as u64)?;
        }
        // Make the adder meet every object at least once more (unless it
        // stopped on an error, which its join below returns).
        let seen = adds.load(Ordering::Relaxed);
        while adds.load(Ordering::Relaxed) < seen + mine.len() as u64 && !adder.is_finished() {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        adder.join().expect("the adder thread panicked")?;
        world.barrier()?;
        // Every add arrived: word 1 of each object counts the left
        // neighbour's adds to it; their sum over ranks is every add made.
        let counted: u64 = mine
            .iter()
            .map(|o| world.local_to_vec(o).map(|v| v[1]))
            .sum::<oneside::Result<u64>>()?;
        let made = world.reduce_value(world.team_world(), oneside::Sum, adds.load(Ordering::Relaxed))?;
        let arrived = world.reduce_value(world.team_world(), oneside::Sum, counted)?;
        if made != arrived {
            println!("grow: rank {me}: MISMATCH: {made} adds made, {arrived} arrived");
            ok = false;
        }
        // Free the large objects: their memory goes back.
        let big = mine.split_off(2);
        let before = world.heap_info().size;
        for object in big {
            world.free(object)?;
        }
        let freed = world.heap_info().size;
        // And again: the same offsets, zeroed again.
        for i in 2..steps {
            let object = world.alloc::<u64>(step_bytes(i, largest) / 8)?;
            ok &= zeros(&world, &object, "reused")?;
            mine.push(object);
        }
        world.barrier()?;
        ok &= ends(&world, &mine, steps as u64)?;
        let again = world.heap_info().size;
        let sizes: Vec<String> = sizes.iter().map(|s| format!("{}", s >> 10)).collect();
        println!(
            "grow: rank {me}/{n} {}: heap KiB by step {}; {} KiB before freeing, {} after, {} allocated again; cap {} MiB; {} adds",
            if ok { "ok" } else { "FAILED" },
            sizes.join(" "),
            before >> 10,
            freed >> 10,
            again >> 10,
            world.heap_info().cap >> 20,
            adds.load(Ordering::Relaxed)
        );
        Ok(())
    })?;
    world.finalize()?;
    Ok(ok)
}

/// Whether this rank's copy of `object` is all zeros but the counter
/// word the adder may have bumped already.
fn zeros(world: &World, object: &Sym<u64>, what: &str) -> oneside::Result<bool> {
    let words = world.local_to_vec(object)?;
    let bad = words.iter().enumerate().filter(|&(i, &w)| i != 1 && w != 0).count();
    if bad > 0 {
        println!(
            "grow: rank {}: MISMATCH: a {what} object of {} words has {bad} non-zero words",
            world.rank(),
            words.len()
        );
    }
    Ok(bad == 0)
}

/// Puts a tagged word at both ends of every object on the right
/// neighbour, then reads them back from there.
fn ends(world: &World, objects: &[Sym<u64>], step: u64) -> oneside::Result<bool> {
    let (me, n) = (world.rank(), world.size());
    let right = (me + 1) % n;
    let tag = |i: usize, end: u64| (step << 40) | ((me as u64) << 20) | ((i as u64) << 1) | end;
    for (i, o) in objects.iter().enumerate() {
        let last = o.len() - 1;
        world.put_value(o, right, 0, tag(i, 0))?;
        if last > 1 {
            world.put_value(o, right, last, tag(i, 1))?;
        }
    }
    world.quiet()?;
    let mut ok = true;
    for (i, o) in objects.iter().enumerate() {
        let last = o.len() - 1;
        let got = world.get_value(o, right, 0)?;
        let end = if last > 1 {
            world.get_value(o, right, last)?
        } else {
            tag(i, 1)
        };
        if got != tag(i, 0) || end != tag(i, 1) {
            println!("grow: rank {me}: MISMATCH in object {i} on rank {right}: {got:#x} {end:#x}");
            ok = false;
        }
    }
    world.barrier()?;
    Ok(ok)
}

/// Asks for `extra` bytes past the cap; prints the error.
fn cap(extra: usize) -> oneside::Result<bool> {
    let world = oneside::init()?;
    let info = world.heap_info();
    let asked = info.cap + extra;
    match world.alloc::<u8>(asked) {
        Ok(_) => {
            println!(
                "grow: rank {}: MISMATCH: {asked} bytes were allocated past the cap",
                world.rank()
            );
            Ok(false)
        }
        Err(e) => {
            println!("grow: rank {} refused: {e}", world.rank());
            world.finalize()?;
            Ok(true)
        }
    }
}

/// Expects the simulated commit failure on every rank, then succeeds.
fn fault() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let me = world.rank();
    let size = world.heap_info().size;
    let failed = match world.alloc::<u8>(64 << 20) {
        Ok(_) => false,
        Err(e) => {
            println!("grow: rank {me} refused: {e}");
            true
        }
    };
    let unchanged = world.heap_info().size == size;
    let object = world.alloc::<u64>(8 << 17)?;
    world.put_value(&object, (me + 1) % world.size(), 0, 7)?;
    world.barrier()?;
    let arrived = world.local_to_vec(&object)?[0] == 7;
    println!("grow: rank {me} fault: failed {failed}, heap unchanged {unchanged}, then allocated {arrived}");
    world.finalize()?;
    Ok(failed && unchanged && arrived)
}
