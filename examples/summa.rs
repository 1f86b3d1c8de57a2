//! SUMMA matrix multiplication, a course classic for teams: C = A B on a
//! q×q grid of ranks, q = ⌊√size⌋. World ranks 0..q² form the grid team
//! (`split_strided`); the others sit this part out. `split_2d` cuts the
//! grid into row teams and column teams. The N×N matrices are zero-padded
//! to q·b × q·b and cut into b×b blocks (b = ⌈N/q⌉); grid rank (i, j)
//! holds blocks A_ij and B_ij and computes C_ij = Σ_k A_ik B_kj. In step k,
//! the rank in column k of each row broadcasts its block of A along its
//! row team, the rank in row k of each column broadcasts its block of B
//! along its column team, and every rank adds their product to its C block.
//!
//! The panel buffers are reused in every step, and a collective's
//! destination must be ready on every member when any member enters (data
//! from another host may land before this rank calls): so each rank copies
//! the panels out, and syncs its row (or column) team before the next
//! broadcast into them.
//!
//! The check: A and B hold small integers, so every sum is exact in f64
//! and the order of the additions does not matter. An `fcollect` over the
//! world team gathers every rank's C block (the idle ranks send zeros), and
//! every rank, idle or not, compares the assembled C with C = A B computed
//! serially. Grid ranks also check their row and column teams' numbering
//! (`n_pes`, `my_pe`, `world_rank`, `translate_pe`). Rank 0 prints the
//! verdict; every rank exits 1 when a check fails.
//!
//! `summa [N]` (default 60).

use oneside::{Sum, Sym, Team, World};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("summa: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A small integer in −range..=range that looks random in (i, j): no
/// period, so a block in the wrong place gives a wrong product.
fn entry(i: usize, j: usize, salt: u64, range: u64) -> f64 {
    let mut z = ((i as u64) << 32 | j as u64) ^ salt;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % (2 * range + 1)) as f64 - range as f64
}

/// Element (i, j) of A: an integer in −3..=3.
fn a(i: usize, j: usize) -> f64 {
    entry(i, j, 0xa, 3)
}

/// Element (i, j) of B: an integer in −2..=2.
fn b(i: usize, j: usize) -> f64 {
    entry(i, j, 0xb, 2)
}

/// Block (bi, bj) of `f` as b×b row-major, zero beyond n.
fn block_of(f: fn(usize, usize) -> f64, bi: usize, bj: usize, bs: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; bs * bs];
    for r in 0..bs {
        for c in 0..bs {
            let (i, j) = (bi * bs + r, bj * bs + c);
            if i < n && j < n {
                out[r * bs + c] = f(i, j);
            }
        }
    }
    out
}

/// c += x y for b×b row-major blocks.
fn multiply_add(c: &mut [f64], x: &[f64], y: &[f64], bs: usize) {
    for r in 0..bs {
        for k in 0..bs {
            let xk = x[r * bs + k];
            for col in 0..bs {
                c[r * bs + col] += xk * y[k * bs + col];
            }
        }
    }
}

/// The symmetric blocks of a grid rank: its own blocks of A and B, and the
/// panels it receives in each step. Allocated on every rank (allocation is
/// collective over the world), used by the grid ranks.
struct Blocks {
    a_mine: Sym<f64>,
    b_mine: Sym<f64>,
    a_panel: Sym<f64>,
    b_panel: Sym<f64>,
}

/// This grid rank's block of C, and what is wrong with its teams.
fn summa(
    world: &World,
    grid: &Team,
    s: &Blocks,
    q: usize,
    bs: usize,
    n: usize,
) -> oneside::Result<(Vec<f64>, Vec<String>)> {
    let (row, col) = world.split_2d(grid, q)?;
    let (i, j) = (grid.my_pe() / q, grid.my_pe() % q);
    let mut wrong = Vec::new();
    if (row.n_pes(), row.my_pe(), col.n_pes(), col.my_pe()) != (q, j, q, i) {
        wrong.push(format!(
            "at grid ({i}, {j}): row team {} members, I am {}; column team {} members, I am {}",
            row.n_pes(),
            row.my_pe(),
            col.n_pes(),
            col.my_pe()
        ));
    }
    for k in 0..q {
        let (in_grid, world_rank) = (row.translate_pe(k, grid), col.world_rank(k));
        if in_grid != Some(i * q + k) || world_rank != Some(k * q + j) {
            wrong.push(format!(
                "at grid ({i}, {j}): row member {k} is grid member {in_grid:?}, column member {k} is world rank {world_rank:?}"
            ));
        }
    }

    let block = bs * bs;
    world.local_write(&s.a_mine, 0, &block_of(a, i, j, bs, n))?;
    world.local_write(&s.b_mine, 0, &block_of(b, i, j, bs, n))?;
    let mut c = vec![0.0; block];
    for k in 0..q {
        if k > 0 {
            // Every row member has copied out step k − 1's panel.
            world.team_sync(&row)?;
        }
        world.broadcast(&row, &s.a_panel, &s.a_mine, block, k)?;
        let a_k = world.local_to_vec(&s.a_panel)?;
        if k > 0 {
            world.team_sync(&col)?;
        }
        world.broadcast(&col, &s.b_panel, &s.b_mine, block, k)?;
        let b_k = world.local_to_vec(&s.b_panel)?;
        multiply_add(&mut c, &a_k, &b_k, bs);
    }
    world.team_destroy(row)?;
    world.team_destroy(col)?;
    Ok((c, wrong))
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(60);
    let q = (1..=size).take_while(|q| q * q <= size).last().unwrap_or(1);
    let bs = n.div_ceil(q);

    // The grid computes; the other ranks contribute a zero block below.
    let blocks = Blocks {
        a_mine: world.alloc(bs * bs)?,
        b_mine: world.alloc(bs * bs)?,
        a_panel: world.alloc(bs * bs)?,
        b_panel: world.alloc(bs * bs)?,
    };
    let (mut c, mut wrong) = (vec![0.0; bs * bs], Vec::new());
    if let Some(grid) = world.split_strided(world.team_world(), 0, 1, q * q)? {
        (c, wrong) = summa(&world, &grid, &blocks, q, bs, n)?;
        world.team_destroy(grid)?;
    }

    // Every rank's C block on every rank, then C assembled from the grid's.
    let c_block = world.alloc::<f64>(bs * bs)?;
    let c_blocks = world.alloc::<f64>(bs * bs * size)?;
    world.local_write(&c_block, 0, &c)?;
    world.fcollect(world.team_world(), &c_blocks, &c_block, bs * bs)?;
    let all = world.local_to_vec(&c_blocks)?;
    let got = |i: usize, j: usize| {
        let owner = (i / bs) * q + j / bs;
        all[owner * bs * bs + (i % bs) * bs + j % bs]
    };
    let serial = |i: usize, j: usize| (0..n).map(|k| a(i, k) * b(k, j)).sum::<f64>();
    let differ: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .filter(|&(i, j)| got(i, j) != serial(i, j))
        .collect();
    for problem in &wrong {
        eprintln!("summa: rank {rank}: {problem}");
    }
    // Each rank checks its own copy of C; rank 0 says what is wrong with its.
    if let (0, Some(&(i, j))) = (rank, differ.first()) {
        eprintln!(
            "summa: {} elements of C differ from serial, the first C[{i}][{j}] = {}, expected {}",
            differ.len(),
            got(i, j),
            serial(i, j)
        );
    }
    let bad = !wrong.is_empty() || !differ.is_empty();
    let wrong_ranks = world.reduce_value(world.team_world(), Sum, u64::from(bad))?;
    let ok = wrong_ranks == 0;
    if rank == 0 {
        let verdict = match ok {
            true => "C equal to serial: ok".to_string(),
            false => format!("wrong on {wrong_ranks} rank(s): WRONG"),
        };
        println!(
            "summa: {size} ranks, {q}x{q} grid ({} idle), {n}x{n} matrices in {bs}x{bs} blocks: {verdict}",
            size - q * q
        );
    }
    world.finalize()?;
    Ok(ok)
}
