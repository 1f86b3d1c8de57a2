//! Collective latencies on the world team, OSU style: each call is timed
//! alone, with a sync between calls, and the figure is the mean over
//! iterations averaged over ranks (as `osu_oshm_*` and `osu_allreduce`
//! report it). Sizes are bytes: the array for broadcast and reduce, each
//! rank's block for fcollect and collect, each destination's block for
//! alltoall.

use crate::measure::sizes;
use crate::report::Figure;
use oneside::{Result, Sum, World};
use std::time::Instant;

/// How many calls each size runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Counts {
    /// Ours: 2000 calls up to 8 KiB (10000 barriers), 400 up to 128 KiB,
    /// 60 above; steadier medians on a quiet machine.
    Steady,
    /// OSU's (and `bench/mpi_coll.c`'s): 1000 up to 8 KiB and for the
    /// barrier, 100 above. Under load, a figure's window is then as long as
    /// the peers', so a time slice of the busy process is as likely to land
    /// in it.
    Osu,
    /// 4 calls per size (`--smoke`).
    Smoke,
}

/// Calls at `bytes` (0: the barrier).
fn iterations(bytes: usize, counts: Counts) -> usize {
    match (counts, bytes) {
        (Counts::Smoke, _) => 4,
        (Counts::Osu, 0..=8192) => 1000,
        (Counts::Osu, _) => 100,
        (Counts::Steady, 0) => 10000,
        (Counts::Steady, 1..=8192) => 2000,
        (Counts::Steady, 8193..=131072) => 400,
        (Counts::Steady, _) => 60,
    }
}

/// Runs `op` `n` times after a warm-up, with a team sync before each call;
/// returns this rank's mean seconds per call averaged over every rank.
fn time(world: &World, n: usize, mut op: impl FnMut() -> Result<()>) -> Result<f64> {
    let team = world.team_world();
    for _ in 0..n.min(50) {
        op()?;
    }
    let mut total = 0.0;
    for _ in 0..n {
        world.team_sync(team)?;
        let start = Instant::now();
        op()?;
        total += start.elapsed().as_secs_f64();
    }
    let mean = world.reduce_value(team, Sum, total / n as f64)?;
    Ok(mean / world.size() as f64)
}

/// Every collective over the size sweep up to `max` bytes.
pub fn collectives(world: &World, max: usize, counts: Counts) -> Result<Vec<Figure>> {
    let team = world.team_world();
    let ranks = world.size();
    let mut figures = Vec::new();
    let mut keep = |metric: &str, bytes: usize, seconds: f64| {
        figures.push(Figure {
            metric: metric.to_string(),
            bytes,
            value: seconds * 1e6,
            unit: "us",
        })
    };
    let n = iterations(0, counts);
    keep("coll_barrier_lat", 0, time(world, n, || world.barrier())?);
    let sweep = match counts == Counts::Smoke {
        true => vec![8, 4096, 65536.min(max)],
        false => sizes(max),
    };
    let src = world.alloc::<u8>(max * ranks)?;
    let dst = world.alloc::<u8>(max * ranks)?;
    let f64s = (world.alloc::<f64>(max / 8)?, world.alloc::<f64>(max / 8)?);
    let i64s = (world.alloc::<i64>(max / 8)?, world.alloc::<i64>(max / 8)?);
    let f32s = (world.alloc::<f32>(max / 4)?, world.alloc::<f32>(max / 4)?);
    for &bytes in &sweep {
        let n = iterations(bytes, counts);
        keep(
            "bcast_lat",
            bytes,
            time(world, n, || world.broadcast(team, &dst, &src, bytes, 0))?,
        );
        let e = bytes / 8;
        keep(
            "reduce_f64_sum_lat",
            bytes,
            time(world, n, || world.reduce(team, Sum, &f64s.1, &f64s.0, e))?,
        );
        keep(
            "reduce_i64_sum_lat",
            bytes,
            time(world, n, || world.reduce(team, Sum, &i64s.1, &i64s.0, e))?,
        );
        // What OSU's osu_oshm_reduce measures (shmem_float_sum_to_all).
        keep(
            "reduce_f32_sum_lat",
            bytes,
            time(world, n, || world.reduce(team, Sum, &f32s.1, &f32s.0, bytes / 4))?,
        );
        keep(
            "fcollect_lat",
            bytes,
            time(world, n, || world.fcollect(team, &dst, &src, bytes))?,
        );
        keep(
            "collect_lat",
            bytes,
            time(world, n, || world.collect(team, &dst, &src, bytes).map(drop))?,
        );
        keep(
            "alltoall_lat",
            bytes,
            time(world, n, || world.alltoall(team, &dst, &src, bytes))?,
        );
    }
    world.free(f32s.1)?;
    world.free(f32s.0)?;
    world.free(i64s.1)?;
    world.free(i64s.0)?;
    world.free(f64s.1)?;
    world.free(f64s.0)?;
    world.free(dst)?;
    world.free(src)?;
    Ok(figures)
}

/// The human-readable table: one row per size, one column per collective.
pub fn table(ranks: usize, figures: &[Figure]) -> String {
    const COLUMNS: [&str; 7] = [
        "bcast_lat",
        "reduce_f64_sum_lat",
        "reduce_i64_sum_lat",
        "reduce_f32_sum_lat",
        "fcollect_lat",
        "collect_lat",
        "alltoall_lat",
    ];
    let mut out = format!("# oneside collectives on the world team of {ranks} ranks, microseconds per call\n");
    if let Some(barrier) = figures.iter().find(|f| f.metric == "coll_barrier_lat") {
        out += &format!("barrier {:.3}\n", barrier.value);
    }
    out += &format!(
        "{:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
        "bytes", "bcast", "reduce f64", "reduce i64", "reduce f32", "fcollect", "collect", "alltoall"
    );
    let mut sizes: Vec<usize> = figures
        .iter()
        .filter(|f| f.metric == "bcast_lat")
        .map(|f| f.bytes)
        .collect();
    sizes.dedup();
    for size in sizes {
        out += &format!("{size:>9}");
        for column in COLUMNS {
            let value = figures.iter().find(|f| f.metric == column && f.bytes == size);
            out += &value.map_or(format!(" {:>10}", "-"), |f| format!(" {:>10.3}", f.value));
        }
        out.push('\n');
    }
    out
}
