//! Distributed matrix-vector product y = A x, a course classic for
//! all-gather: A is n×n, and both the rows of A and the vector x are split
//! into blocks of ⌈n/size⌉ (the last ranks get fewer, perhaps none). Each
//! rank generates its rows of A and its block of x, gathers the whole of x
//! with `fcollect` (which takes equal blocks, so the last block is padded
//! with zeros), and multiplies its rows. Then `collect` (whose blocks may
//! differ) concatenates every rank's piece of y on every rank.
//!
//! The check: A and x hold small integers (|A_ij| ≤ 5, |x_j| ≤ 4), so every
//! product and sum is exact in f64 and the result is the same in any order.
//! Every rank recomputes y = A x serially from the same formulas and
//! compares the gathered y element for element; it also checks that the
//! gathered x is the generated one, and that `collect` gathered n elements.
//! Rank 0 prints the verdict; every rank exits 1 when a check fails.
//!
//! `matvec [N]` (default 300).

use oneside::Sum;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("matvec: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A small integer in −range..=range that looks random in (i, j): no
/// period, so a block in the wrong place gives a wrong result.
fn entry(i: usize, j: usize, salt: u64, range: u64) -> f64 {
    let mut z = ((i as u64) << 32 | j as u64) ^ salt;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % (2 * range + 1)) as f64 - range as f64
}

/// Element (i, j) of A: an integer in −5..=5.
fn a(i: usize, j: usize) -> f64 {
    entry(i, j, 0xa, 5)
}

/// Element j of x: an integer in −4..=4.
fn x(j: usize) -> f64 {
    entry(0, j, 0x0c, 4)
}

/// Rows (and elements of x) `lo..hi` of rank `r`, in blocks of `block`.
fn rows(r: usize, block: usize, n: usize) -> (usize, usize) {
    ((r * block).min(n), ((r + 1) * block).min(n))
}

/// Row i of A times `xs` (which may be longer than n: padding).
fn row_times(i: usize, n: usize, xs: &[f64]) -> f64 {
    (0..n).map(|j| a(i, j) * xs[j]).sum()
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let team = world.team_world();
    let (rank, size) = (world.rank(), world.size());
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(300);
    let block = n.div_ceil(size);
    let (lo, hi) = rows(rank, block, n);

    // Gather x: our block (zero-padded to `block`) from every rank.
    let x_block = world.alloc::<f64>(block)?;
    let x_all = world.alloc::<f64>(block * size)?;
    let mine: Vec<f64> = (lo..hi).map(x).collect();
    world.local_write(&x_block, 0, &mine)?;
    world.fcollect(team, &x_all, &x_block, block)?;
    let xs = world.local_to_vec(&x_all)?;

    // Our rows of y, then every rank's rows on every rank.
    let y_block = world.alloc::<f64>(block)?;
    let y_all = world.alloc::<f64>(n)?;
    let y_mine: Vec<f64> = (lo..hi).map(|i| row_times(i, n, &xs)).collect();
    world.local_write(&y_block, 0, &y_mine)?;
    let gathered = world.collect(team, &y_all, &y_block, hi - lo)?;
    let y = world.local_to_vec(&y_all)?;

    // The check, against the serial product.
    let mut problems = Vec::new();
    if let Some(j) = (0..n).find(|&j| xs[j] != x(j)) {
        problems.push(format!("gathered x[{j}] = {}, expected {}", xs[j], x(j)));
    }
    if gathered != n {
        problems.push(format!("collect gathered {gathered} elements of y, expected {n}"));
    }
    let serial: Vec<f64> = (0..n).map(|i| (0..n).map(|j| a(i, j) * x(j)).sum()).collect();
    let differ: Vec<usize> = (0..n).filter(|&i| y[i] != serial[i]).collect();
    if let Some(&i) = differ.first() {
        problems.push(format!(
            "{} elements of y differ from serial, the first y[{i}] = {}, expected {}",
            differ.len(),
            y[i],
            serial[i]
        ));
    }
    for problem in &problems {
        eprintln!("matvec: rank {rank}: {problem}");
    }
    let wrong_ranks = world.reduce_value(team, Sum, u64::from(!problems.is_empty()))?;
    let ok = wrong_ranks == 0;
    if rank == 0 {
        let verdict = match ok {
            true => "y equal to serial: ok".to_string(),
            false => format!("wrong on {wrong_ranks} rank(s): WRONG"),
        };
        println!("matvec: {size} ranks, {n}x{n} matrix, x in blocks of {block}: {verdict}");
    }
    world.finalize()?;
    Ok(ok)
}
