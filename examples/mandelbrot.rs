//! Mandelbrot set with a work queue, a course classic for load balancing:
//! rows near the set cost far more than rows far from it, so instead of a
//! fixed split every rank takes the next row from a global counter on rank 0
//! (`atomic_fetch_inc`) until none are left. Each computed row (u16
//! iteration counts) is put straight into rank 0's image, and rank 0 learns
//! how many rows each rank did.
//!
//! The check: after a barrier rank 0 computes the whole image serially and
//! compares FNV-1a checksums of the iteration counts; the rows done must
//! add up to the height.
//!
//! `mandelbrot [WIDTH HEIGHT [MAX_ITER]] [--out FILE.pgm]` (default 160 120 200).

use oneside::prelude::*;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("mandelbrot: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Iteration counts of row `y` of a `width` × `height` view of [-2, 1] × [-1.2, 1.2].
fn row(y: usize, width: usize, height: usize, max_iter: u16) -> Vec<u16> {
    let ci = 1.2 - 2.4 * y as f64 / height as f64;
    (0..width)
        .map(|x| {
            let cr = -2.0 + 3.0 * x as f64 / width as f64;
            let (mut zr, mut zi) = (0.0f64, 0.0f64);
            let mut n = 0;
            while n < max_iter && zr * zr + zi * zi <= 4.0 {
                (zr, zi) = (zr * zr - zi * zi + cr, 2.0 * zr * zi + ci);
                n += 1;
            }
            n
        })
        .collect()
}

/// FNV-1a (64 bit) over the counts' little-endian bytes.
fn fnv1a(counts: &[u16]) -> u64 {
    counts
        .iter()
        .flat_map(|c| c.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// A binary PGM; 16-bit samples (big-endian) when `max_iter` needs them.
fn write_pgm(path: &str, image: &[u16], width: usize, height: usize, max_iter: u16) -> std::io::Result<()> {
    let mut bytes = format!("P5\n{width} {height}\n{max_iter}\n").into_bytes();
    for &c in image {
        match max_iter {
            0..=255 => bytes.push(c as u8),
            _ => bytes.extend_from_slice(&c.to_be_bytes()),
        }
    }
    std::fs::write(path, bytes)
}

fn run() -> oneside::Result<bool> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let out = match args.iter().position(|a| a == "--out") {
        Some(i) if i + 1 < args.len() => Some(args.drain(i..i + 2).nth(1).expect("two drained")),
        Some(_) => {
            eprintln!("mandelbrot: --out needs a file name");
            return Ok(false);
        }
        None => None,
    };
    let arg = |i: usize, default: usize| args.get(i).and_then(|a| a.parse::<usize>().ok()).unwrap_or(default);
    let (width, height) = (arg(0, 160).max(1), arg(1, 120).max(1));
    let max_iter = arg(2, 200).clamp(1, u16::MAX as usize) as u16;

    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let next_row = world.alloc::<u64>(1)?;
    let rows_done = world.alloc::<u64>(size)?;
    // Only rank 0's copy is used, but allocation is collective.
    let image = world.alloc::<u16>(width * height)?;

    let mut mine = 0u64;
    loop {
        let y = world.atomic_fetch_inc(&next_row, 0, 0)? as usize;
        if y >= height {
            break;
        }
        world.put(&image, 0, y * width, &row(y, width, height, max_iter))?;
        mine += 1;
    }
    world.put_value(&rows_done, 0, rank, mine)?;
    world.barrier()?;

    let mut ok = true;
    if rank == 0 {
        let got = world.local_to_vec(&image)?;
        let serial: Vec<u16> = (0..height).flat_map(|y| row(y, width, height, max_iter)).collect();
        let rows = world.local_to_vec(&rows_done)?;
        let (checksum, expected) = (fnv1a(&got), fnv1a(&serial));
        ok = checksum == expected && rows.iter().sum::<u64>() == height as u64;
        let verdict = if ok { "ok" } else { "WRONG" };
        let per_rank: Vec<String> = rows.iter().map(u64::to_string).collect();
        println!(
            "mandelbrot: {width}x{height}, rows per rank [{}], checksum {checksum:#018x}, serial {expected:#018x}: {verdict}",
            per_rank.join(" ")
        );
        if let Some(path) = out {
            if let Err(e) = write_pgm(&path, &got, width, height, max_iter) {
                eprintln!("mandelbrot: cannot write {path}: {e}");
                ok = false;
            }
        }
    }
    world.finalize()?;
    Ok(ok)
}
