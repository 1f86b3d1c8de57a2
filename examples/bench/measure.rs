//! The measurements, OSU-style. Iteration counts depend only on the message
//! size, so every rank agrees on them without talking; `bench/mpi_rma.c`
//! uses the same formulas, sizes and medians, so the two are comparable.
//!
//! * latency: one op (put + quiet, or get) per iteration, time / iterations
//! * bandwidth: a window of puts, then one quiet
//! * bi-directional bandwidth: ranks 0 and 1 each run the bandwidth loop at
//!   the other at once; the sum of both directions
//! * message rate: windows of 8-byte puts, messages per second
//! * barrier: back-to-back barriers, time / iterations
//! * copy: one core's memcpy between private buffers, the bound for put
//!   bandwidth on shared memory
//!
//! Each figure is the median of `BATCHES` timed batches, after a warm-up batch.

use oneside::{Sym, World};
use std::time::Instant;

pub const WINDOW: usize = 64;
pub const BATCHES: usize = 7;

/// Sizes of the sweep, 8 B to `max` by powers of two.
pub fn sizes(max: usize) -> Vec<usize> {
    std::iter::successors(Some(8usize), |s| Some(s * 2))
        .take_while(|&s| s <= max)
        .collect()
}

/// Latency iterations per batch: about 64 MiB of traffic, 100..100 000 ops.
pub fn latency_iters(size: usize, smoke: bool) -> usize {
    if smoke {
        return 5;
    }
    ((64 << 20) / size).clamp(100, 100_000)
}

/// Bandwidth windows per batch: about 256 MiB of traffic, 2..2000 windows.
pub fn window_iters(size: usize, smoke: bool) -> usize {
    if smoke {
        return 1;
    }
    ((256 << 20) / (size * WINDOW)).clamp(2, 2000)
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

/// Runs `batch` once to warm up, then `BATCHES` times; median seconds per batch.
fn timed(mut batch: impl FnMut() -> oneside::Result<()>) -> oneside::Result<f64> {
    batch()?;
    let mut samples = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let start = Instant::now();
        batch()?;
        samples.push(start.elapsed().as_secs_f64());
    }
    Ok(median(samples))
}

pub struct Bench<'w> {
    pub world: &'w World,
    /// Target buffer of every put and get: `max` bytes on every rank.
    pub buffer: Sym<u8>,
    /// Slot r holds rank r's half of the bi-directional figure.
    pub rates: Sym<f64>,
    pub smoke: bool,
}

impl Bench<'_> {
    /// Put + quiet latency from rank 0 to rank 1, in microseconds.
    pub fn put_latency(&self, size: usize) -> oneside::Result<Option<f64>> {
        let src = vec![1u8; size];
        let iters = latency_iters(size, self.smoke);
        self.on_rank0(|| {
            let seconds = timed(|| {
                for _ in 0..iters {
                    self.world.put(&self.buffer, 1, 0, &src)?;
                    self.world.quiet()?;
                }
                Ok(())
            })?;
            Ok(seconds * 1e6 / iters as f64)
        })
    }

    /// Get latency from rank 1 to rank 0, in microseconds.
    pub fn get_latency(&self, size: usize) -> oneside::Result<Option<f64>> {
        let mut dst = vec![0u8; size];
        let iters = latency_iters(size, self.smoke);
        self.on_rank0(|| {
            let seconds = timed(|| {
                for _ in 0..iters {
                    self.world.get(&self.buffer, 1, 0, &mut dst)?;
                }
                Ok(())
            })?;
            Ok(seconds * 1e6 / iters as f64)
        })
    }

    /// Put bandwidth from rank 0 to rank 1, MB/s (10^6 bytes per second).
    pub fn put_bandwidth(&self, size: usize) -> oneside::Result<Option<f64>> {
        self.on_rank0(|| self.stream(size, 1))
    }

    /// Ranks 0 and 1 stream at each other at once; the sum of both, MB/s.
    pub fn put_bibandwidth(&self, size: usize) -> oneside::Result<Option<f64>> {
        let rank = self.world.rank();
        if rank < 2 {
            let mine = self.stream(size, 1 - rank)?;
            self.world.put_value(&self.rates, 0, rank, mine)?;
        }
        self.world.barrier()?;
        if rank != 0 {
            return Ok(None);
        }
        let both = self.world.local_to_vec(&self.rates)?;
        Ok(Some(both[0] + both[1]))
    }

    /// 8-byte puts in windows, each window closed by a quiet; messages per second.
    pub fn message_rate(&self) -> oneside::Result<Option<f64>> {
        let windows = if self.smoke { 1 } else { 5000 };
        self.on_rank0(|| {
            let seconds = timed(|| {
                for i in 0..windows {
                    for j in 0..WINDOW {
                        self.world
                            .put(&self.buffer, 1, 8 * (j % 8), &(i as u64).to_le_bytes())?;
                    }
                    self.world.quiet()?;
                }
                Ok(())
            })?;
            Ok((windows * WINDOW) as f64 / seconds)
        })
    }

    /// The physical limit of a shared-memory put: one core copying between
    /// two private buffers, in windows like `put_bandwidth`, MB/s.
    pub fn copy_bandwidth(&self, size: usize) -> oneside::Result<Option<f64>> {
        let src = vec![3u8; size];
        let mut dst = vec![0u8; size];
        let windows = window_iters(size, self.smoke);
        self.on_rank0(|| {
            let seconds = timed(|| {
                for _ in 0..windows * WINDOW {
                    dst.copy_from_slice(std::hint::black_box(&src));
                    std::hint::black_box(&mut dst);
                }
                Ok(())
            })?;
            Ok((size * WINDOW * windows) as f64 / seconds / 1e6)
        })
    }

    /// Barrier latency over every rank of the job, in microseconds.
    pub fn barrier_latency(&self) -> oneside::Result<Option<f64>> {
        let iters = if self.smoke { 5 } else { 20_000 };
        let seconds = timed(|| {
            for _ in 0..iters {
                self.world.barrier()?;
            }
            Ok(())
        })?;
        Ok((self.world.rank() == 0).then_some(seconds * 1e6 / iters as f64))
    }

    /// One direction's bandwidth to `target`, MB/s.
    fn stream(&self, size: usize, target: usize) -> oneside::Result<f64> {
        let src = vec![2u8; size];
        let windows = window_iters(size, self.smoke);
        let seconds = timed(|| {
            for _ in 0..windows {
                for _ in 0..WINDOW {
                    self.world.put(&self.buffer, target, 0, &src)?;
                }
                self.world.quiet()?;
            }
            Ok(())
        })?;
        Ok((size * WINDOW * windows) as f64 / seconds / 1e6)
    }

    /// Rank 0 measures while the others wait in a barrier; one-sided ops
    /// need nothing from the target.
    fn on_rank0(&self, measure: impl FnOnce() -> oneside::Result<f64>) -> oneside::Result<Option<f64>> {
        let result = if self.world.rank() == 0 { Some(measure()?) } else { None };
        self.world.barrier()?;
        Ok(result)
    }
}
