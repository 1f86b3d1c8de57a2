//! Figures for the rest of the one-sided model, with the method of
//! `measure.rs`, and the OSU OpenSHMEM benchmarks' shapes where they have
//! one (`osu_oshm_atomics`, `osu_oshm_put_nb`), so the peer's numbers line up:
//!
//! * atomic latency: one fetch-add, compare-and-swap, or non-fetching add
//!   (+ quiet every window) from rank 0 on a word of rank 1, time / op
//! * add rate: windows of non-fetching adds, each closed by a quiet; ops/s
//! * put-with-signal latency: rank 0 puts data with a signal to rank 1,
//!   which waits for the signal and answers the same way; half the round
//!   trip, so it includes the signal being seen at the target
//! * non-blocking put bandwidth: windows of 32 `put_nbi`, then one quiet
//! * line round trip: ranks 0 and 1 bouncing one word of rank 1's heap
//!   with atomic stores and loads, half the round trip: on shared memory,
//!   the floor for an atomic on a line another core last wrote

use crate::measure::{measure, Bench};
use oneside::prelude::*;
use oneside::{Cmp, SignalOp};

/// Puts in one non-blocking window.
pub const NBI_WINDOW: usize = 32;

impl Bench<'_> {
    /// Fetch-add latency from rank 0 on rank 1's word, microseconds.
    pub fn fetch_add_latency(&self) -> oneside::Result<Option<f64>> {
        self.on_rank0(|| {
            let (n, seconds) = measure(self.smoke, 10_000_000, |n| {
                for _ in 0..n {
                    self.world.atomic_fetch_add(&self.words, 1, 0, 1u64)?;
                }
                Ok(())
            })?;
            Ok(seconds * 1e6 / n as f64)
        })
    }

    /// Compare-and-swap latency from rank 0 on rank 1's word, microseconds.
    pub fn compare_swap_latency(&self) -> oneside::Result<Option<f64>> {
        self.on_rank0(|| {
            let (n, seconds) = measure(self.smoke, 10_000_000, |n| {
                for i in 0..n as u64 {
                    self.world.atomic_compare_swap(&self.words, 1, 1, i, i + 1)?;
                }
                Ok(())
            })?;
            Ok(seconds * 1e6 / n as f64)
        })
    }

    /// Non-fetching add from rank 0 on rank 1's word: (latency in
    /// microseconds per add, adds per second), windows closed by a quiet.
    pub fn add_rate(&self) -> oneside::Result<Option<(f64, f64)>> {
        let rate = self.on_rank0(|| {
            let (windows, seconds) = measure(self.smoke, 1_000_000, |n| {
                for _ in 0..n {
                    for _ in 0..crate::measure::WINDOW {
                        self.world.atomic_add(&self.words, 1, 2, 1u64)?;
                    }
                    self.world.quiet()?;
                }
                Ok(())
            })?;
            Ok((windows * crate::measure::WINDOW) as f64 / seconds)
        })?;
        Ok(rate.map(|r| (1e6 / r, r)))
    }

    /// Put-with-signal ping-pong between ranks 0 and 1: half the round trip, microseconds.
    pub fn put_signal_latency(&self, size: usize) -> oneside::Result<Option<f64>> {
        let rank = self.world.rank();
        let src = vec![5u8; size];
        let proposal = match (rank, self.smoke) {
            (0, true) => Some(2),
            (0, false) => Some(64),
            _ => None,
        };
        let mut n = self.shared_iterations(proposal)?;
        let mut round = 0u64;
        let mut pingpong = |iterations: usize| -> oneside::Result<()> {
            for _ in 0..iterations {
                round += 1;
                if rank == 0 {
                    self.world
                        .put_signal(&self.buffer, 1, 0, &src, &self.signals, 0, SignalOp::Set, round)?;
                    self.world.signal_wait_until(&self.signals, 1, Cmp::Ge(round))?;
                } else if rank == 1 {
                    self.world.signal_wait_until(&self.signals, 0, Cmp::Ge(round))?;
                    self.world
                        .put_signal(&self.buffer, 0, 0, &src, &self.signals, 1, SignalOp::Set, round)?;
                }
            }
            Ok(())
        };
        // Calibrate on rank 0's timing of a probe, shared so both loop alike.
        if !self.smoke {
            let start = std::time::Instant::now();
            pingpong(n)?;
            let per = start.elapsed().as_secs_f64() / n as f64;
            let proposal = (rank == 0)
                .then(|| ((crate::measure::BATCH_TARGET.as_secs_f64() / per.max(1e-9)) as usize).clamp(64, 1_000_000));
            n = self.shared_iterations(proposal)?;
        }
        let seconds = crate::measure::timed(n, &mut pingpong)?;
        self.world.barrier()?;
        Ok((rank == 0).then_some(seconds * 1e6 / n as f64 / 2.0))
    }

    /// Windows of `NBI_WINDOW` puts to rank 1, non-blocking or blocking,
    /// each window closed by one quiet; MB/s. Both forms measured the same
    /// way give the same-run comparison of `put_nbi` with `put`.
    pub fn put_window_bandwidth(&self, size: usize, nonblocking: bool) -> oneside::Result<Option<f64>> {
        let src = vec![6u8; size];
        self.on_rank0(|| {
            let (windows, seconds) = measure(self.smoke, 100_000, |n| {
                for _ in 0..n {
                    for _ in 0..NBI_WINDOW {
                        match nonblocking {
                            true => self.world.put_nbi(&self.buffer, 1, 0, &src)?,
                            false => self.world.put(&self.buffer, 1, 0, &src)?,
                        }
                    }
                    self.world.quiet()?;
                }
                Ok(())
            })?;
            Ok((size * NBI_WINDOW * windows) as f64 / seconds / 1e6)
        })
    }

    /// Ranks 0 and 1 bounce one word of rank 1's heap with atomic stores
    /// and loads: half the round trip, microseconds. On shared memory this
    /// is one cache line moving between two cores, the floor under any
    /// atomic on a line the other side last wrote.
    pub fn line_round_trip(&self) -> oneside::Result<Option<f64>> {
        let rank = self.world.rank();
        let n = self.shared_iterations((rank == 0).then_some(if self.smoke { 2 } else { 20_000 }))?;
        let mut base = 0u64;
        let mut bounce = |iterations: usize| -> oneside::Result<()> {
            for i in 0..iterations as u64 {
                let (ping, pong) = (base + 2 * i + 1, base + 2 * i + 2);
                if rank == 0 {
                    self.world.atomic_set(&self.words, 1, 3, ping)?;
                    while self.world.atomic_fetch(&self.words, 1, 3)? != pong {
                        std::hint::spin_loop();
                    }
                } else if rank == 1 {
                    while self.world.atomic_fetch(&self.words, 1, 3)? != ping {
                        std::hint::spin_loop();
                    }
                    self.world.atomic_set(&self.words, 1, 3, pong)?;
                }
            }
            base += 2 * iterations as u64;
            Ok(())
        };
        let seconds = crate::measure::timed(n, &mut bounce)?;
        self.world.barrier()?;
        Ok((rank == 0).then_some(seconds * 1e6 / n as f64 / 2.0))
    }
}
