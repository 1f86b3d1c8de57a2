//! Conjugate gradients for the 1-D Poisson problem, a course classic for
//! all-reduce: solve A x = b, where A = tridiag(−1, 2, −1) is the n×n
//! second-difference matrix (−u'' = f on (0, 1) with u = 0 at both ends,
//! b = h² f at the n interior points, h = 1/(n+1)).
//!
//! The rows are split into blocks, one per rank (the first `n % size` ranks
//! get one more). Each iteration needs:
//! * A p, for which a rank needs its neighbours' edge values of p: each
//!   rank puts its first value into its left neighbour's halo and its last
//!   into its right neighbour's with `put_signal` (signal = the iteration
//!   number), and waits for its own two signals. One halo slot per side is
//!   enough: a rank sends iteration k + 1's edges only after the all-reduces
//!   of iteration k, which no member finishes before every member entered
//!   them, that is before every member read its iteration-k halo.
//! * the dot products p·Ap and r·r: each rank sums its block and
//!   `reduce_value(Sum)` adds the partial sums on every rank, so every rank
//!   sees the same α, β and stopping test and takes the same branch.
//!
//! The check, on every rank: the same CG code runs serially on the whole
//! vector (dot products in one loop, zero walls for A p). The iteration
//! counts must be equal, and each rank's block of x must match the serial
//! solution within 1e-9 × max|x| (the summation order of the dot products
//! differs, so the last bits may too). In exact arithmetic CG on an n×n
//! matrix ends in at most n steps; on this matrix the residual falls from
//! about 1e-4 to 1e-15 in step n, so the count (n for this right-hand
//! side) does not depend on rounding. Finally the true residual
//! ‖b − A x‖/‖b‖, computed with the same halo exchange, must be below
//! 1e-8. Rank 0 prints the figures; every rank exits 1 on a failed check.
//!
//! `cg [N]` (default 256 unknowns, at least one per rank).

use oneside::prelude::*;
use oneside::{Cmp, Max, SignalOp, Sum, Sym, World};
use std::process::ExitCode;

/// Relative residual ‖r‖/‖b‖ at which CG stops.
const TOLERANCE: f64 = 1e-10;
/// Largest accepted difference from the serial solution, relative to max|x|.
const SOLUTION_TOLERANCE: f64 = 1e-9;
/// Largest accepted true relative residual ‖b − A x‖/‖b‖.
const RESIDUAL_TOLERANCE: f64 = 1e-8;
/// Halo slots and signal words: the left neighbour's edge value, the right one's.
const FROM_LEFT: usize = 0;
const FROM_RIGHT: usize = 1;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cg: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The right-hand side b = h² f(x_i) at the n interior points.
fn rhs(n: usize) -> Vec<f64> {
    let h = 1.0 / (n + 1) as f64;
    (1..=n)
        .map(|i| {
            let x = i as f64 * h;
            h * h * (x.exp() * (3.0 * x).sin() + x)
        })
        .collect()
}

/// A p for a block of p, given the values just beyond its two ends.
fn apply(p: &[f64], left: f64, right: f64) -> Vec<f64> {
    (0..p.len())
        .map(|i| {
            let l = if i == 0 { left } else { p[i - 1] };
            let r = if i + 1 == p.len() { right } else { p[i + 1] };
            2.0 * p[i] - l - r
        })
        .collect()
}

/// Rank `r`'s first row and row count.
fn block(r: usize, size: usize, n: usize) -> (usize, usize) {
    let (q, extra) = (n / size, n % size);
    (r * q + r.min(extra), q + usize::from(r < extra))
}

/// Where CG's vectors live: the operations that differ between the serial
/// and the distributed solve.
trait Space {
    /// The dot product of two (distributed) vectors.
    fn dot(&self, a: &[f64], b: &[f64]) -> oneside::Result<f64>;
    /// The values of `p` just beyond this part's two ends, for round `round`.
    fn beyond(&self, p: &[f64], round: u64) -> oneside::Result<(f64, f64)>;
}

/// The whole vector on one rank: the walls are beyond both ends.
struct Serial;

impl Space for Serial {
    fn dot(&self, a: &[f64], b: &[f64]) -> oneside::Result<f64> {
        Ok(a.iter().zip(b).map(|(x, y)| x * y).sum())
    }
    fn beyond(&self, _: &[f64], _: u64) -> oneside::Result<(f64, f64)> {
        Ok((0.0, 0.0))
    }
}

/// This rank's block, its neighbours' edges arriving by `put_signal`.
struct Distributed<'w> {
    world: &'w World,
    halo: Sym<f64>,
    signals: Sym<u64>,
    left: Option<usize>,
    right: Option<usize>,
}

impl Space for Distributed<'_> {
    fn dot(&self, a: &[f64], b: &[f64]) -> oneside::Result<f64> {
        let mine = Serial.dot(a, b)?;
        self.world.reduce_value(self.world.team_world(), Sum, mine)
    }

    fn beyond(&self, p: &[f64], round: u64) -> oneside::Result<(f64, f64)> {
        let w = self.world;
        let (first, last) = (&p[..1], &p[p.len() - 1..]);
        if let Some(l) = self.left {
            w.put_signal(
                &self.halo,
                l,
                FROM_RIGHT,
                first,
                &self.signals,
                FROM_RIGHT,
                SignalOp::Set,
                round,
            )?;
        }
        if let Some(r) = self.right {
            w.put_signal(
                &self.halo,
                r,
                FROM_LEFT,
                last,
                &self.signals,
                FROM_LEFT,
                SignalOp::Set,
                round,
            )?;
        }
        let edge = |side: Option<usize>, slot: usize| -> oneside::Result<f64> {
            if side.is_none() {
                return Ok(0.0);
            }
            w.signal_wait_until(&self.signals, slot, Cmp::Ge(round))?;
            let mut v = [0.0];
            w.local_read(&self.halo, slot, &mut v)?;
            Ok(v[0])
        };
        Ok((edge(self.left, FROM_LEFT)?, edge(self.right, FROM_RIGHT)?))
    }
}

/// What a solve produced: the solution (this part of it) and the iteration
/// at which ‖r‖ ≤ TOLERANCE ‖b‖, if it got there within `max_iterations`.
struct Solution {
    x: Vec<f64>,
    iterations: Option<u64>,
}

/// Textbook CG from x = 0; `b` is this part of the right-hand side.
fn cg(space: &impl Space, b: &[f64], max_iterations: u64) -> oneside::Result<Solution> {
    let mut x = vec![0.0; b.len()];
    let mut r = b.to_vec();
    let mut p = r.clone();
    let mut rr = space.dot(&r, &r)?;
    let stop = TOLERANCE * rr.sqrt();
    for k in 1..=max_iterations {
        let (left, right) = space.beyond(&p, k)?;
        let ap = apply(&p, left, right);
        let alpha = rr / space.dot(&p, &ap)?;
        for i in 0..x.len() {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        let rr_next = space.dot(&r, &r)?;
        if rr_next.sqrt() <= stop {
            return Ok(Solution { x, iterations: Some(k) });
        }
        let beta = rr_next / rr;
        for i in 0..p.len() {
            p[i] = r[i] + beta * p[i];
        }
        rr = rr_next;
    }
    Ok(Solution { x, iterations: None })
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(256)
        .max(size);
    let max_iterations = 2 * n as u64;
    let b = rhs(n);
    let (first, len) = block(rank, size, n);
    let mine = &b[first..first + len];

    let space = Distributed {
        world: &world,
        halo: world.alloc::<f64>(2)?,
        signals: world.alloc::<u64>(2)?,
        left: rank.checked_sub(1),
        right: (rank + 1 < size).then_some(rank + 1),
    };
    let parallel = cg(&space, mine, max_iterations)?;
    // The true residual, with one more round of the halo exchange.
    let round = parallel.iterations.unwrap_or(max_iterations) + 1;
    let (left, right) = space.beyond(&parallel.x, round)?;
    let ax = apply(&parallel.x, left, right);
    let r: Vec<f64> = mine.iter().zip(&ax).map(|(b, ax)| b - ax).collect();
    let residual = (space.dot(&r, &r)? / space.dot(mine, mine)?).sqrt();

    let serial = cg(&Serial, &b, max_iterations)?;
    let scale = serial.x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let my_diff = parallel
        .x
        .iter()
        .zip(&serial.x[first..first + len])
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    // NaN (a broken solve) must fail the check, and Max would drop it.
    let my_diff = if my_diff.is_nan() { f64::INFINITY } else { my_diff };
    let diff = world.reduce_value(world.team_world(), Max, my_diff)?;

    let converged = parallel.iterations.is_some() && parallel.iterations == serial.iterations;
    let ok = converged && diff <= SOLUTION_TOLERANCE * scale && residual <= RESIDUAL_TOLERANCE;
    if rank == 0 {
        let count = |s: &Solution| {
            s.iterations
                .map_or(format!("no convergence within {max_iterations}"), |k| k.to_string())
        };
        let verdict = if ok { "ok" } else { "WRONG" };
        match converged {
            true => println!(
                "cg: {size} ranks, n={n}, converged in {} iterations, residual {residual:.1e}, max diff from serial {diff:.1e}: {verdict}",
                count(&parallel)
            ),
            false => println!(
                "cg: {size} ranks, n={n}, iterations {} but serial {}, residual {residual:.1e}, max diff from serial {diff:.1e}: {verdict}",
                count(&parallel),
                count(&serial)
            ),
        }
    }
    world.finalize()?;
    Ok(ok)
}
