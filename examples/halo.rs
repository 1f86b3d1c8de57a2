//! Halo exchange for a 1-D heat equation (Jacobi stencil), a course classic
//! for point-to-point synchronization: N cells are split into blocks, one
//! per rank, between two fixed walls (1.0 on the left, 0.0 on the right).
//! Step s computes `u' = u + ALPHA (left − 2u + right)` from step s − 1, so a
//! rank needs its neighbours' edge cells each step. They come with
//! `put_signal`: the edge value into a halo slot of the neighbour, then the
//! neighbour's signal word for that side set to s. The neighbour waits with
//! `signal_wait_until(.., Ge(s))`; there is no barrier per step.
//!
//! Reuse: the slots are double-buffered by step parity, so the step s + 1
//! value lands beside the step s one. A sender can be at most one step ahead:
//! before it sends step s + 2 into the parity slot of step s, it must finish
//! step s + 1, which needs the neighbour's step s + 1 edge, which the
//! neighbour sends only after it has read the step s slot. So no ack is
//! needed, and Ge (not Eq) lets a neighbour's early step s + 1 signal count.
//!
//! The check: rank 0 gathers every block with `get` and compares it
//! bitwise with a serial run (same operations in the same order).
//!
//! `halo [CELLS [STEPS]]` (default 256 cells, 200 steps).

use oneside::prelude::*;
use oneside::{Cmp, SignalOp};
use std::process::ExitCode;

const ALPHA: f64 = 0.25;
const LEFT_WALL: f64 = 1.0;
const RIGHT_WALL: f64 = 0.0;
/// Halo slots: the left neighbour's edge at FROM_LEFT + parity, the right one's at FROM_RIGHT + parity.
const FROM_LEFT: usize = 0;
const FROM_RIGHT: usize = 2;
/// Signal words, one per side.
const SIG_LEFT: usize = 0;
const SIG_RIGHT: usize = 1;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("halo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The starting temperatures: a hot block in the second quarter.
fn initial(cells: usize) -> Vec<f64> {
    (0..cells)
        .map(|i| if (cells / 4..cells / 2).contains(&i) { 2.0 } else { 0.0 })
        .collect()
}

/// One Jacobi step of `u` (a block) given the values beyond its two ends.
fn step(u: &[f64], left: f64, right: f64) -> Vec<f64> {
    (0..u.len())
        .map(|i| {
            let l = if i == 0 { left } else { u[i - 1] };
            let r = if i + 1 == u.len() { right } else { u[i + 1] };
            u[i] + ALPHA * (l - 2.0 * u[i] + r)
        })
        .collect()
}

/// Rank `r`'s first cell and cell count: the first `cells % size` ranks get one more.
fn block(r: usize, size: usize, cells: usize) -> (usize, usize) {
    let (q, extra) = (cells / size, cells % size);
    (r * q + r.min(extra), q + usize::from(r < extra))
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let arg = |i: usize| std::env::args().nth(i).and_then(|a| a.parse::<usize>().ok());
    let cells = arg(1).unwrap_or(256).max(size);
    let steps = arg(2).unwrap_or(200) as u64;

    let halo = world.alloc::<f64>(4)?;
    let signals = world.alloc::<u64>(2)?;
    let longest = block(0, size, cells).1;
    let field = world.alloc::<f64>(longest)?;

    let (first, len) = block(rank, size, cells);
    let mut u = initial(cells)[first..first + len].to_vec();
    let left = rank.checked_sub(1);
    let right = (rank + 1 < size).then_some(rank + 1);
    for s in 1..=steps {
        let parity = (s % 2) as usize;
        // Send step s - 1's edges: our first cell is the left neighbour's
        // right halo, our last the right neighbour's left halo.
        if let Some(l) = left {
            world.put_signal(
                &halo,
                l,
                FROM_RIGHT + parity,
                &u[..1],
                &signals,
                SIG_RIGHT,
                SignalOp::Set,
                s,
            )?;
        }
        if let Some(r) = right {
            world.put_signal(
                &halo,
                r,
                FROM_LEFT + parity,
                &u[len - 1..],
                &signals,
                SIG_LEFT,
                SignalOp::Set,
                s,
            )?;
        }
        let edge = |side: Option<usize>, sig: usize, slot: usize, wall: f64| -> oneside::Result<f64> {
            if side.is_none() {
                return Ok(wall);
            }
            world.signal_wait_until(&signals, sig, Cmp::Ge(s))?;
            let mut v = [0.0];
            world.local_read(&halo, slot + parity, &mut v)?;
            Ok(v[0])
        };
        let from_left = edge(left, SIG_LEFT, FROM_LEFT, LEFT_WALL)?;
        let from_right = edge(right, SIG_RIGHT, FROM_RIGHT, RIGHT_WALL)?;
        u = step(&u, from_left, from_right);
    }
    world.local_write(&field, 0, &u)?;
    world.barrier()?;

    let mut ok = true;
    if rank == 0 {
        let mut got = Vec::with_capacity(cells);
        for r in 0..size {
            let (_, len) = block(r, size, cells);
            let mut part = vec![0.0; len];
            world.get(&field, r, 0, &mut part)?;
            got.extend(part);
        }
        let serial = (0..steps).fold(initial(cells), |u, _| step(&u, LEFT_WALL, RIGHT_WALL));
        let differ = got
            .iter()
            .zip(&serial)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        ok = differ == 0;
        let verdict = match ok {
            true => "bitwise equal to serial: ok".to_string(),
            false => format!("{differ} cells differ from serial: WRONG"),
        };
        println!("halo: {cells} cells, {steps} steps over {size} ranks: {verdict}");
    }
    world.finalize()?;
    Ok(ok)
}
