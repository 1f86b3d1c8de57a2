//! The measurements, OSU-style, with the same method as `bench/mpi_rma.c`:
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
//! Iteration counts are calibrated, since one op costs nanoseconds on
//! shared memory and milliseconds on some networks: the count doubles until
//! a batch lasts [`BATCH_TARGET`] (up to a cap). Each figure is then the
//! median of [`BATCHES`] timed batches, after a warm-up batch.

use oneside::prelude::*;
use oneside::{Cmp, Sym, World};
use std::time::{Duration, Instant};

pub const WINDOW: usize = 64;
pub const BATCHES: usize = 7;
/// A calibrated batch lasts at least this long.
pub const BATCH_TARGET: Duration = Duration::from_millis(10);

/// Sizes of the sweep, 8 B to `max` by powers of two.
pub fn sizes(max: usize) -> Vec<usize> {
    std::iter::successors(Some(8usize), |s| Some(s * 2))
        .take_while(|&s| s <= max)
        .collect()
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

/// How many iterations of `run` make a batch last `BATCH_TARGET` (at most `cap`).
pub fn calibrate(cap: usize, run: &mut impl FnMut(usize) -> oneside::Result<()>) -> oneside::Result<usize> {
    let mut n = 1;
    loop {
        let start = Instant::now();
        run(n)?;
        if start.elapsed() >= BATCH_TARGET || n >= cap {
            return Ok(n);
        }
        n = (n * 2).min(cap);
    }
}

/// Runs `n` iterations once to warm up, then `BATCHES` times; median seconds per batch.
pub fn timed(n: usize, run: &mut impl FnMut(usize) -> oneside::Result<()>) -> oneside::Result<f64> {
    run(n)?;
    let mut samples = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let start = Instant::now();
        run(n)?;
        samples.push(start.elapsed().as_secs_f64());
    }
    Ok(median(samples))
}

/// Calibrates (or uses the smoke count), then times: (iterations, median seconds).
pub fn measure(
    smoke: bool,
    cap: usize,
    mut run: impl FnMut(usize) -> oneside::Result<()>,
) -> oneside::Result<(usize, f64)> {
    let n = if smoke { 2 } else { calibrate(cap, &mut run)? };
    Ok((n, timed(n, &mut run)?))
}

/// What the ranks other than rank 0 do while it measures a one-sided
/// figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Target {
    /// Wait in a barrier (inside oneside, as an MPI target waits in MPI).
    #[default]
    Waiting,
    /// `--testing-target`: loop on `test` of a word, as a program polls
    /// with `shmem_test`.
    Testing,
    /// `--busy-target`: compute outside oneside (reading only a local word
    /// between chunks of arithmetic), so their progress thread serves.
    Computing,
}

pub struct Bench<'w> {
    pub world: &'w World,
    /// Target buffer of every put and get: `max` bytes on every rank.
    pub buffer: Sym<u8>,
    /// Slots 0 and 1: each direction of the bi-directional figure; slot 2:
    /// an iteration count rank 0 shares with everyone.
    pub rates: Sym<f64>,
    /// Words for the atomics (rank 1's are the targets).
    pub words: Sym<u64>,
    /// Signal words of the put-with-signal ping-pong: 0 for rank 1, 1 for rank 0.
    pub signals: Sym<u64>,
    pub smoke: bool,
    /// What the other ranks do while rank 0 measures.
    pub target: Target,
    /// The word rank 0 sets to end a computing or testing target's loop,
    /// and the last value it set.
    pub done: Sym<u64>,
    pub measured: std::cell::Cell<u64>,
}

impl Bench<'_> {
    /// Put + quiet latency from rank 0 to rank 1, in microseconds.
    pub fn put_latency(&self, size: usize) -> oneside::Result<Option<f64>> {
        let src = vec![1u8; size];
        self.on_rank0(|| {
            let (n, seconds) = measure(self.smoke, 1_000_000, |n| {
                for _ in 0..n {
                    self.world.put(&self.buffer, 1, 0, &src)?;
                    self.world.quiet()?;
                }
                Ok(())
            })?;
            Ok(seconds * 1e6 / n as f64)
        })
    }

    /// Get latency from rank 1 to rank 0, in microseconds.
    pub fn get_latency(&self, size: usize) -> oneside::Result<Option<f64>> {
        let mut dst = vec![0u8; size];
        self.on_rank0(|| {
            let (n, seconds) = measure(self.smoke, 1_000_000, |n| {
                for _ in 0..n {
                    self.world.get(&self.buffer, 1, 0, &mut dst)?;
                }
                Ok(())
            })?;
            Ok(seconds * 1e6 / n as f64)
        })
    }

    /// Put bandwidth from rank 0 to rank 1, MB/s (10^6 bytes per second).
    pub fn put_bandwidth(&self, size: usize) -> oneside::Result<Option<f64>> {
        self.on_rank0(|| {
            let (windows, seconds) = measure(self.smoke, 100_000, self.stream(size, 1))?;
            Ok((size * WINDOW * windows) as f64 / seconds / 1e6)
        })
    }

    /// Ranks 0 and 1 stream at each other at once; the sum of both, MB/s.
    /// Rank 0 calibrates alone and shares the count, so both loops match.
    pub fn put_bibandwidth(&self, size: usize) -> oneside::Result<Option<f64>> {
        let rank = self.world.rank();
        let proposal = match (rank, self.smoke) {
            (0, true) => Some(2),
            (0, false) => Some(calibrate(100_000, &mut self.stream(size, 1))?),
            _ => None,
        };
        let windows = self.shared_count(proposal)?;
        if rank < 2 {
            let seconds = timed(windows, &mut self.stream(size, 1 - rank))?;
            let mine = (size * WINDOW * windows) as f64 / seconds / 1e6;
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
        self.on_rank0(|| {
            let (windows, seconds) = measure(self.smoke, 1_000_000, |n| {
                for i in 0..n {
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
        self.on_rank0(|| {
            let (windows, seconds) = measure(self.smoke, 100_000, |n| {
                for _ in 0..n * WINDOW {
                    dst.copy_from_slice(std::hint::black_box(&src));
                    std::hint::black_box(&mut dst);
                }
                Ok(())
            })?;
            Ok((size * WINDOW * windows) as f64 / seconds / 1e6)
        })
    }

    /// Barrier latency over every rank of the job, in microseconds. Every
    /// rank must run the same count: all run a 64-barrier probe, and rank 0
    /// sizes the real batches from its own timing of it.
    pub fn barrier_latency(&self) -> oneside::Result<Option<f64>> {
        const PROBE: usize = 64;
        let mut run = |n: usize| {
            for _ in 0..n {
                self.world.barrier()?;
            }
            Ok(())
        };
        let start = Instant::now();
        run(PROBE)?;
        let per_barrier = start.elapsed().as_secs_f64() / PROBE as f64;
        let proposal = (self.world.rank() == 0).then(|| match self.smoke {
            true => 2,
            false => ((BATCH_TARGET.as_secs_f64() / per_barrier.max(1e-9)) as usize).clamp(PROBE, 1_000_000),
        });
        let n = self.shared_count(proposal)?;
        let seconds = timed(n, &mut run)?;
        Ok((self.world.rank() == 0).then_some(seconds * 1e6 / n as f64))
    }

    /// Rank 0's `proposal` (a count), delivered to every rank.
    pub fn shared_iterations(&self, proposal: Option<usize>) -> oneside::Result<usize> {
        self.shared_count(proposal)
    }

    /// Rank 0's `proposal` (a count), delivered to every rank.
    fn shared_count(&self, proposal: Option<usize>) -> oneside::Result<usize> {
        if let Some(count) = proposal {
            for peer in 0..self.world.size() {
                self.world.put_value(&self.rates, peer, 2, count as f64)?;
            }
        }
        self.world.barrier()?;
        Ok(self.world.get_value(&self.rates, self.world.rank(), 2)? as usize)
    }

    /// A loop of `n` windows of puts to `target`, each closed by a quiet.
    fn stream(&self, size: usize, target: usize) -> impl FnMut(usize) -> oneside::Result<()> + '_ {
        let src = vec![2u8; size];
        move |n| {
            for _ in 0..n {
                for _ in 0..WINDOW {
                    self.world.put(&self.buffer, target, 0, &src)?;
                }
                self.world.quiet()?;
            }
            Ok(())
        }
    }

    /// Rank 0 measures while the others wait in a barrier (or test, or
    /// compute: `target`); one-sided ops need nothing from the target.
    pub fn on_rank0(&self, measure: impl FnOnce() -> oneside::Result<f64>) -> oneside::Result<Option<f64>> {
        let round = self.measured.get() + 1;
        self.measured.set(round);
        let result = match (self.world.rank(), self.target) {
            (0, Target::Waiting) => Some(measure()?),
            (0, _) => {
                let result = measure()?;
                for target in 1..self.world.size() {
                    self.world.put_value(&self.done, target, 0, round)?;
                }
                self.world.quiet()?;
                Some(result)
            }
            (_, Target::Computing) => {
                self.compute_until(round)?;
                None
            }
            (_, Target::Testing) => {
                while !self.world.test(&self.done, 0, Cmp::Ge(round))? {}
                None
            }
            (_, Target::Waiting) => None,
        };
        self.world.barrier()?;
        Ok(result)
    }

    /// Computes (about 10 µs of arithmetic between looks) until rank 0
    /// has set `done` to `round`, calling nothing of oneside that could
    /// serve a peer: a local read is a copy.
    fn compute_until(&self, round: u64) -> oneside::Result<()> {
        let mut x = 1u64;
        let mut seen = [0u64];
        loop {
            for _ in 0..20_000 {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
            self.world.local_read(&self.done, 0, &mut seen)?;
            if seen[0] >= round {
                return Ok(());
            }
        }
    }
}
