//! Put-with-signal: data, then an update of a 64-bit signal word at the
//! same target, ordered so that a target that sees the signal sees the data
//! (OpenSHMEM's `put_signal`, `signal_fetch`, `signal_wait_until`).
//!
//! A consumer waits on one word instead of a barrier: a halo exchange or a
//! pipeline stage puts its data with a signal, and the neighbour waits with
//! [`World::signal_wait_until`]. Two transport primitives: `copy_in`, then
//! `signal`, which each path orders after the data without an extra round
//! trip (shared memory: a Release atomic; TCP: one ordered stream; verbs:
//! RC ordering on the same queue pair).

use crate::ctx::Endpoint;
use crate::error::Result;
use crate::links::Channel;
use crate::profile::{self, Family};
use crate::sym::{Pod, Sym};
use crate::transport::amo::SignalOp;
use crate::wait::Cmp;
use crate::world::World;
use std::sync::atomic::{AtomicU64, Ordering};

/// Put-with-signal on an [`Endpoint`]: the [`World`] (its default
/// context) or a [`Ctx`](crate::Ctx).
pub trait Signals: Endpoint {
    /// Writes `src` into `target`'s copy of `sym` from `index`, then updates
    /// `target`'s signal word `signal[signal_index]` with `op` and `value`.
    ///
    /// Returns when `src` may be reused. Once `target` sees the signal
    /// (with [`signal_wait_until`](World::signal_wait_until) or a wait), it
    /// sees the data.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    fn put_signal<T: Pod>(
        &self,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        src: &[T],
        signal: &Sym<u64>,
        signal_index: usize,
        op: SignalOp,
        value: u64,
    ) -> Result<()> {
        crate::error::located(|| {
            let signal_at = (signal, signal_index, op, value);
            self.world().put_then_signal(
                self.channel(),
                "put_signal",
                (sym, target, index, src),
                signal_at,
                false,
            )
        })
    }

    /// The non-blocking form of [`put_signal`](Signals::put_signal): returns
    /// at once; both the data and the signal are complete at the next quiet.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    fn put_signal_nbi<T: Pod>(
        &self,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        src: &[T],
        signal: &Sym<u64>,
        signal_index: usize,
        op: SignalOp,
        value: u64,
    ) -> Result<()> {
        crate::error::located(|| {
            let signal_at = (signal, signal_index, op, value);
            self.world().put_then_signal(
                self.channel(),
                "put_signal_nbi",
                (sym, target, index, src),
                signal_at,
                true,
            )
        })
    }

    /// Sets `target`'s signal word `signal[index]` to `value`, atomically
    /// (OpenSHMEM 1.6's `signal_set`); ordered after this endpoint's
    /// earlier puts to `target` like a put-with-signal's update.
    #[track_caller]
    fn signal_set(&self, signal: &Sym<u64>, target: usize, index: usize, value: u64) -> Result<()> {
        crate::error::located(|| {
            self.world().update_signal(
                self.channel(),
                "signal_set",
                (signal, index, SignalOp::Set, value),
                target,
            )
        })
    }

    /// Adds `value` to `target`'s signal word `signal[index]`, atomically
    /// (OpenSHMEM 1.6's `signal_add`).
    #[track_caller]
    fn signal_add(&self, signal: &Sym<u64>, target: usize, index: usize, value: u64) -> Result<()> {
        crate::error::located(|| {
            self.world().update_signal(
                self.channel(),
                "signal_add",
                (signal, index, SignalOp::Add, value),
                target,
            )
        })
    }
}

impl Signals for World {}
impl Signals for crate::Ctx<'_> {}
impl Signals for crate::ctx::AnyEndpoint<'_> {}

/// A put's object, target, index and data.
type PutOf<'a, T> = (&'a Sym<T>, usize, usize, &'a [T]);
/// A signal's word, index, operation and value.
type SignalAt<'a> = (&'a Sym<u64>, usize, SignalOp, u64);

impl World {
    /// Both forms: check every argument, then the data, then the signal.
    fn put_then_signal<T: Pod>(
        &self,
        channel: Channel<'_>,
        name: &'static str,
        (sym, target, index, src): PutOf<'_, T>,
        (signal, signal_index, op, value): SignalAt<'_>,
        nbi: bool,
    ) -> Result<()> {
        profile::leaf!(Family::Signal, Some(target), std::mem::size_of_val(src) + 8, |races| {
            let offset = self.checked_offset(name, sym, target, index, src.len())?;
            let signal_offset = self.checked_offset(name, signal, target, signal_index, 1)?;
            if races {
                let at = crate::site::call_site();
                crate::race::put(
                    at,
                    target,
                    offset,
                    std::mem::size_of_val(src),
                    (crate::race::ops::PUT_SIGNAL, channel.race_id()),
                );
                if nbi {
                    let (addr, len) = (src.as_ptr() as usize, std::mem::size_of_val(src));
                    crate::race::nbi_buffer(at, addr, len, crate::race::Use::Reads, crate::race::ops::PUT_SIGNAL);
                }
                // The signal is written after the data, in order: a release.
                crate::race::release(false, channel.race_id());
                crate::race::atomic(
                    at,
                    target,
                    (signal_offset, 8),
                    (crate::race::domain_tag::<u64>(channel.domain()), false),
                    (false, channel.race_id()),
                );
            }
            match nbi {
                true => self
                    .links
                    .copy_in_nbi(channel, target, offset, bytemuck::cast_slice(src))?,
                false => self.links.copy_in(channel, target, offset, bytemuck::cast_slice(src))?,
            }
            self.links.signal(channel, target, signal_offset, op, value)
        })
    }

    /// A signal update alone: check, then `signal`.
    fn update_signal(
        &self,
        channel: Channel<'_>,
        name: &'static str,
        (signal, index, op, value): SignalAt<'_>,
        target: usize,
    ) -> Result<()> {
        profile::leaf!(Family::Signal, Some(target), 8, |races| {
            let offset = self.checked_offset(name, signal, target, index, 1)?;
            if races {
                crate::race::atomic(
                    crate::site::call_site(),
                    target,
                    (offset, 8),
                    (crate::race::domain_tag::<u64>(channel.domain()), false),
                    (false, channel.race_id()),
                );
            }
            self.links.signal(channel, target, offset, op, value)
        })
    }

    /// Atomically reads this rank's own signal word `signal[index]`.
    #[track_caller]
    pub fn signal_fetch(&self, signal: &Sym<u64>, index: usize) -> Result<u64> {
        crate::error::located(|| {
            let ptr = self.local_ptr("signal_fetch", signal, index, 1)?;
            // SAFETY: `local_ptr` checked the word lies in our heap; it is
            // 8-byte aligned (64-byte aligned objects of u64), and signal words
            // are only updated atomically.
            let value = unsafe { AtomicU64::from_ptr(ptr.cast()) }.load(Ordering::SeqCst);
            if crate::race::on() {
                let offset = self.checked_offset("signal_fetch", signal, self.rank, index, 1)?;
                crate::race::acquire(Some((offset, 8)));
            }
            Ok(value)
        })
    }

    /// Waits until this rank's own signal word `signal[index]` satisfies
    /// `cmp`, and returns its value.
    #[track_caller]
    pub fn signal_wait_until(&self, signal: &Sym<u64>, index: usize, cmp: Cmp<u64>) -> Result<u64> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("signal_wait_until");
            self.wait_element("signal_wait_until", signal, index, Some(cmp.watched()), |v| {
                cmp.holds(v)
            })
        })
    }
}
