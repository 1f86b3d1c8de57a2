//! Point-to-point synchronization: waiting on and testing this rank's own
//! symmetric elements until remote puts, signals or atomics change them
//! (OpenSHMEM's `wait_until`/`test` families, with the `_all`, `_any` and
//! `_some` forms over a set of indices).
//!
//! Elements are read with volatile loads (no reference into the shared
//! heap) and an Acquire fence after the condition holds, so data a sender
//! ordered before the awaited update (by `quiet`, `fence` or a signal) is
//! visible when the wait returns. Before it starts polling, a wait pushes
//! out this rank's own batched TCP puts, which a peer may need in order to
//! answer.

use crate::backoff::{self, Backoff};
use crate::error::Result;
use crate::sym::{Pod, Sym};
use crate::watch::Waiting;
use crate::world::World;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// A comparison against a value, as in OpenSHMEM's `SHMEM_CMP_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp<T> {
    Eq(T),
    Ne(T),
    Gt(T),
    Ge(T),
    Lt(T),
    Le(T),
}

impl<T: PartialOrd + Copy> Cmp<T> {
    /// Whether `value` satisfies the comparison.
    #[inline]
    pub fn holds(&self, value: T) -> bool {
        match *self {
            Cmp::Eq(v) => value == v,
            Cmp::Ne(v) => value != v,
            Cmp::Gt(v) => value > v,
            Cmp::Ge(v) => value >= v,
            Cmp::Lt(v) => value < v,
            Cmp::Le(v) => value <= v,
        }
    }
}

impl<T: Pod> Cmp<T> {
    /// The comparison's symbol and its operand's bits (zero-extended), as
    /// hang reports print them.
    pub(crate) fn watched(&self) -> (&'static str, u64) {
        let (op, v) = match self {
            Cmp::Eq(v) => ("==", v),
            Cmp::Ne(v) => ("!=", v),
            Cmp::Gt(v) => (">", v),
            Cmp::Ge(v) => (">=", v),
            Cmp::Lt(v) => ("<", v),
            Cmp::Le(v) => ("<=", v),
        };
        let mut bits = [0u8; 8];
        let n = std::mem::size_of::<T>().min(8);
        // SAFETY: `v` is a Pod of at least `n` bytes; `bits` holds 8.
        unsafe { std::ptr::copy_nonoverlapping((v as *const T).cast::<u8>(), bits.as_mut_ptr(), n) };
        (op, u64::from_le_bytes(bits))
    }
}

/// What [`World::wait_until`] waits for: a comparison, as the other waits
/// take (`Cmp::Ge(1)`), or any predicate on the element (`|v| v % 2 == 1`).
pub trait Until<T> {
    /// Whether `value` is what the wait waits for.
    fn reached(&mut self, value: T) -> bool;
    /// The comparison's symbol and operand bits, for hang reports, when
    /// the condition is a comparison.
    fn comparison(&self) -> Option<(&'static str, u64)> {
        None
    }
}

impl<T: Pod + PartialOrd> Until<T> for Cmp<T> {
    fn reached(&mut self, value: T) -> bool {
        self.holds(value)
    }
    fn comparison(&self) -> Option<(&'static str, u64)> {
        Some(self.watched())
    }
}

impl<T, F: FnMut(T) -> bool> Until<T> for F {
    fn reached(&mut self, value: T) -> bool {
        self(value)
    }
}

impl World {
    /// Waits until this rank's own element `index` of `sym` satisfies
    /// `until`, and returns it (OpenSHMEM's `shmem_wait_until`): a
    /// comparison, `wait_until(&flag, 0, Cmp::Ge(1))`, or any predicate,
    /// `wait_until(&flag, 0, |v| v % 2 == 1)`.
    #[track_caller]
    pub fn wait_until<T: Pod>(&self, sym: &Sym<T>, index: usize, mut until: impl Until<T>) -> Result<T> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("wait_until");
            let cmp = until.comparison();
            self.wait_element("wait_until", sym, index, cmp, move |v| until.reached(v))
        })
    }

    /// [`wait_until`](Self::wait_until) under the name `op`; `cmp` is the
    /// comparison `done` makes, when it is one, for hang reports.
    pub(crate) fn wait_element<T: Pod>(
        &self,
        op: &'static str,
        sym: &Sym<T>,
        index: usize,
        cmp: Option<(&'static str, u64)>,
        mut done: impl FnMut(T) -> bool,
    ) -> Result<T> {
        let ptr = self.local_ptr(op, sym, index, 1)?.cast::<T>();
        let waiting = self.waiting_on(ptr.cast(), std::mem::size_of::<T>(), 1, cmp);
        let value = self.poll_until_for(waiting, || {
            // SAFETY: `local_ptr` checked the element lies in our heap; heap
            // objects are 64-byte aligned and Pod sizes are multiples of
            // their alignment, so `ptr` is aligned. A volatile read never
            // forms a reference to the shared element.
            let value = unsafe { ptr.read_volatile() };
            done(value).then(|| {
                fence(Ordering::Acquire);
                value
            })
        })?;
        if crate::race::on() {
            crate::race::acquire(Some((sym.byte_offset(index), std::mem::size_of::<T>())));
        }
        Ok(value)
    }

    /// What a wait on `count` elements of `size` bytes from `ptr` (in this
    /// rank's heap) waits for, as hang reports say it.
    pub(crate) fn waiting_on(
        &self,
        ptr: *const u8,
        size: usize,
        count: usize,
        cmp: Option<(&'static str, u64)>,
    ) -> Waiting {
        let offset = (ptr as usize).wrapping_sub(self.own.heap_base() as usize);
        let global = self.data.is_some_and(|d| d.contains(ptr as usize, size));
        // The watchdog reads the element: only ever one of our heap or
        // of the program's symmetric globals.
        if (offset.saturating_add(size) > self.own.alloc_len() && !global) || count == 0 {
            return Waiting::Condition;
        }
        Waiting::Words {
            addr: ptr as usize,
            offset,
            global,
            size: size.min(8) as u8,
            count,
            cmp,
        }
    }

    /// Whether this rank's own element `index` satisfies `cmp` now. A test
    /// that finds it false drives this rank's progress once (see
    /// [`progress`](Self::progress)) and looks again, so a loop of tests
    /// moves data as a wait does.
    #[track_caller]
    pub fn test<T: Pod + PartialOrd>(&self, sym: &Sym<T>, index: usize, cmp: Cmp<T>) -> Result<bool> {
        // Placed by hand, not by `located`, which cost a test in a polling
        // loop a few ns: only an argument error has the program's place.
        let at = std::panic::Location::caller();
        let ptr = self
            .local_ptr("test", sym, index, 1)
            .map_err(|e| e.located_at(at))?
            .cast::<T>();
        let waiting = || self.waiting_on(ptr.cast(), std::mem::size_of::<T>(), 1, Some(cmp.watched()));
        let found = self
            .tested("test", waiting, || self.holds(ptr, cmp).then_some(true))
            .map(|found| found.unwrap_or(false))?;
        if found && crate::race::on() {
            crate::race::acquire(Some((sym.byte_offset(index), std::mem::size_of::<T>())));
        }
        Ok(found)
    }

    /// Serves what this rank's peers sent it and completes what its
    /// transports can, once, without waiting: its TCP engine's arrived
    /// requests, the NIC transport's completions. Every wait does this
    /// between its polls; a program that polls memory itself (a loop of
    /// tests, or its own flag reads) may call it in its loop.
    #[track_caller]
    pub fn progress(&self) -> Result<()> {
        self.links.poll_links()
    }

    /// Tells the race checker a wait or test saw each of `ptrs`.
    fn observed_all<T: Pod>(&self, ptrs: &[*const T]) {
        if crate::race::on() {
            for &p in ptrs {
                let len = std::mem::size_of::<T>();
                crate::race::observed(self.offset_of(p as usize, len), len);
            }
        }
    }

    /// A test's one look: sends this rank's batches, evaluates `look`, and
    /// if it finds nothing drives progress once and looks again. A loop of
    /// tests that still find nothing passes its time as a wait does
    /// (`backoff::Streak`: yielding at once where ranks outnumber cores),
    /// from its first failed test since the last that found its condition: a token ring polled with tests at 4 ranks on 2 cores took
    /// 2-2.6 ms a hop, the rank holding the token waiting for a polling
    /// peer's time slice to end, against 1-2 µs with `wait_until`. The loop
    /// is shown to hang reports as the wait it is
    /// (`watch::tested_in_vain`), named `name` unless a C entry point names
    /// it; `waiting` says what it looks for.
    fn tested<R>(
        &self,
        name: &'static str,
        waiting: impl FnOnce() -> Waiting,
        mut look: impl FnMut() -> Option<R>,
    ) -> Result<Option<R>> {
        self.links.send_batches()?;
        let found = match look() {
            Some(found) => Some(found),
            None => {
                self.progress()?;
                look()
            }
        };
        match found {
            Some(_) => {
                backoff::test_found();
                crate::watch::tested_true();
                if crate::race::on() {
                    crate::race::acquire(None);
                }
            }
            None => {
                let streak = backoff::failed_test();
                crate::watch::tested_in_vain(name, waiting, streak);
                backoff::pause_test(streak, self.spin_waits, self.links.waits_keep_polling());
            }
        }
        Ok(found)
    }

    /// One test of `count` elements of this rank's heap from `first`, each
    /// compared with `cmp` (`None`: each with its own value), for bindings
    /// that evaluate their tests themselves, as the C API does: `look`
    /// evaluates the condition, as in [`poll_until_elements`]. As a test of
    /// this crate's, it drives progress once when `look` finds nothing and
    /// looks again, yields the core where ranks may not spin, and shows a
    /// loop of tests to hang reports.
    ///
    /// [`poll_until_elements`]: Self::poll_until_elements
    pub fn test_elements<T: Pod, R>(
        &self,
        first: *const T,
        count: usize,
        cmp: Option<Cmp<T>>,
        look: impl FnMut() -> Option<R>,
    ) -> Result<Option<R>> {
        let found = self.tested("test", || self.waiting_on_elements(first, count, cmp), look)?;
        if found.is_some() && crate::race::on() {
            let len = count * std::mem::size_of::<T>();
            crate::race::observed(self.offset_of(first as usize, len), len);
        }
        Ok(found)
    }

    /// Waits until every element at `indices` satisfies `cmp`.
    #[track_caller]
    pub fn wait_until_all<T, I>(&self, sym: &Sym<T>, indices: I, cmp: Cmp<T>) -> Result<()>
    where
        T: Pod + PartialOrd,
        I: IntoIterator<Item = usize>,
    {
        crate::error::located_call(|| {
            let _call = crate::watch::call("wait_until_all");
            let ptrs = self.element_ptrs("wait_until_all", sym, indices)?;
            let waiting = self.waiting_on_all(&ptrs, cmp);
            self.poll_until_for(waiting, || ptrs.iter().all(|&p| self.holds(p, cmp)).then_some(()))?;
            self.observed_all(&ptrs);
            Ok(())
        })
    }

    /// Waits until some element at `indices` satisfies `cmp`, and returns
    /// its index. `None` when `indices` is empty (nothing to wait for).
    #[track_caller]
    pub fn wait_until_any<T, I>(&self, sym: &Sym<T>, indices: I, cmp: Cmp<T>) -> Result<Option<usize>>
    where
        T: Pod + PartialOrd,
        I: IntoIterator<Item = usize>,
    {
        crate::error::located_call(|| {
            let _call = crate::watch::call("wait_until_any");
            let (ptrs, list) = self.indexed_ptrs("wait_until_any", sym, indices)?;
            if list.is_empty() {
                return Ok(None);
            }
            let waiting = self.waiting_on_all(&ptrs, cmp);
            let found = self.poll_until_for(waiting, || {
                ptrs.iter().position(|&p| self.holds(p, cmp)).map(|i| Some(list[i]))
            })?;
            self.observed_all(&ptrs);
            Ok(found)
        })
    }

    /// Waits until at least one element at `indices` satisfies `cmp`, and
    /// returns every index that does. Empty when `indices` is empty.
    #[track_caller]
    pub fn wait_until_some<T, I>(&self, sym: &Sym<T>, indices: I, cmp: Cmp<T>) -> Result<Vec<usize>>
    where
        T: Pod + PartialOrd,
        I: IntoIterator<Item = usize>,
    {
        crate::error::located_call(|| {
            let _call = crate::watch::call("wait_until_some");
            let (ptrs, list) = self.indexed_ptrs("wait_until_some", sym, indices)?;
            if list.is_empty() {
                return Ok(Vec::new());
            }
            let waiting = self.waiting_on_all(&ptrs, cmp);
            self.poll_until_for(waiting, || {
                let hits: Vec<usize> = (0..ptrs.len())
                    .filter(|&i| self.holds(ptrs[i], cmp))
                    .map(|i| list[i])
                    .collect();
                (!hits.is_empty()).then_some(hits)
            })
            .inspect(|_| self.observed_all(&ptrs))
        })
    }

    /// Whether every element at `indices` satisfies `cmp` now.
    #[track_caller]
    pub fn test_all<T, I>(&self, sym: &Sym<T>, indices: I, cmp: Cmp<T>) -> Result<bool>
    where
        T: Pod + PartialOrd,
        I: IntoIterator<Item = usize>,
    {
        crate::error::located(|| {
            let ptrs = self.element_ptrs("test_all", sym, indices)?;
            let waiting = || self.waiting_on_all(&ptrs, cmp);
            let all = self.tested("test_all", waiting, || {
                ptrs.iter().all(|&p| self.holds(p, cmp)).then_some(())
            })?;
            if all.is_some() {
                self.observed_all(&ptrs);
            }
            Ok(all.is_some())
        })
    }

    /// The first index among `indices` whose element satisfies `cmp` now.
    #[track_caller]
    pub fn test_any<T, I>(&self, sym: &Sym<T>, indices: I, cmp: Cmp<T>) -> Result<Option<usize>>
    where
        T: Pod + PartialOrd,
        I: IntoIterator<Item = usize>,
    {
        crate::error::located(|| {
            let (ptrs, list) = self.indexed_ptrs("test_any", sym, indices)?;
            let waiting = || self.waiting_on_all(&ptrs, cmp);
            let found = self.tested("test_any", waiting, || {
                ptrs.iter().position(|&p| self.holds(p, cmp)).map(|i| list[i])
            })?;
            if found.is_some() {
                self.observed_all(&ptrs);
            }
            Ok(found)
        })
    }

    /// Every index among `indices` whose element satisfies `cmp` now.
    #[track_caller]
    pub fn test_some<T, I>(&self, sym: &Sym<T>, indices: I, cmp: Cmp<T>) -> Result<Vec<usize>>
    where
        T: Pod + PartialOrd,
        I: IntoIterator<Item = usize>,
    {
        crate::error::located(|| {
            let (ptrs, list) = self.indexed_ptrs("test_some", sym, indices)?;
            let some = || -> Vec<usize> {
                (0..ptrs.len())
                    .filter(|&i| self.holds(ptrs[i], cmp))
                    .map(|i| list[i])
                    .collect()
            };
            let waiting = || self.waiting_on_all(&ptrs, cmp);
            let found = self.tested("test_some", waiting, || Some(some()).filter(|found| !found.is_empty()))?;
            if found.is_some() {
                self.observed_all(&ptrs);
            }
            Ok(found.unwrap_or_default())
        })
    }

    /// What a typed wait on the elements at `ptrs` waits for.
    /// What a wait on `count` elements from `first`, each compared with
    /// `cmp`, waits for (bindings' waits and tests).
    fn waiting_on_elements<T: Pod>(&self, first: *const T, count: usize, cmp: Option<Cmp<T>>) -> Waiting {
        self.waiting_on(first.cast(), std::mem::size_of::<T>(), count, cmp.map(|c| c.watched()))
    }

    fn waiting_on_all<T: Pod>(&self, ptrs: &[*const T], cmp: Cmp<T>) -> Waiting {
        let first = ptrs.first().map_or(std::ptr::null(), |p| p.cast::<u8>());
        self.waiting_on(first, std::mem::size_of::<T>(), ptrs.len(), Some(cmp.watched()))
    }

    /// Reads the element at `ptr` (checked by the caller) and compares.
    #[inline]
    fn holds<T: Pod + PartialOrd>(&self, ptr: *const T, cmp: Cmp<T>) -> bool {
        // SAFETY: callers pass pointers from `local_ptr`: in our heap and
        // aligned (see `wait_until`); read without forming a reference.
        let value = unsafe { ptr.read_volatile() };
        let hit = cmp.holds(value);
        if hit {
            fence(Ordering::Acquire);
        }
        hit
    }

    fn element_ptrs<T: Pod>(
        &self,
        op: &'static str,
        sym: &Sym<T>,
        indices: impl IntoIterator<Item = usize>,
    ) -> Result<Vec<*const T>> {
        Ok(self.indexed_ptrs(op, sym, indices)?.0)
    }

    /// Checks every index before any wait starts, so a bad one is an error, not a hang.
    fn indexed_ptrs<T: Pod>(
        &self,
        op: &'static str,
        sym: &Sym<T>,
        indices: impl IntoIterator<Item = usize>,
    ) -> Result<(Vec<*const T>, Vec<usize>)> {
        let list: Vec<usize> = indices.into_iter().collect();
        let ptrs = list
            .iter()
            .map(|&i| self.local_ptr(op, sym, i, 1).map(|p| p.cast::<T>().cast_const()))
            .collect::<Result<Vec<_>>>()?;
        Ok((ptrs, list))
    }

    /// Like [`poll_until`](Self::poll_until), for a condition that only a
    /// peer behind TCP can make true: a rank that may not spin sleeps until
    /// its engine has news (`Backoff::pause_or_sleep`) instead of yielding
    /// in a loop. It serves what arrived before it looks, since only that
    /// can make `ready` true (`poll_until` looks first: its conditions are
    /// mostly set over shared memory).
    pub(crate) fn poll_until_tcp<R>(&self, waiting: Waiting, mut ready: impl FnMut() -> Option<R>) -> Result<R> {
        let Some(driver) = self.links.engine_driver() else {
            return self.poll_until_for(waiting, ready);
        };
        self.links.send_batches()?;
        if let Some(result) = ready() {
            return Ok(result);
        }
        let _blocked = crate::watch::blocked(waiting);
        let mut driving = Some(driver.start_driving());
        let mut backoff = Backoff::new(self.spin_waits).keep_polling(self.links.waits_keep_polling());
        loop {
            self.links.check_links()?;
            if let Some(result) = ready() {
                drop(driving);
                return Ok(result);
            }
            backoff.pause_or_sleep(|| driver.sleep_until_news(None));
            if backoff.napping() {
                driving = None;
            }
        }
    }

    /// Waits until `flag`, a word of this rank's team area that same-host
    /// peers store to and then wake (`flag_store`), reaches `target`:
    /// blocking on a futex, for hosts whose ranks outnumber their cores.
    pub(crate) fn sleep_until_flag(&self, waiting: Waiting, flag: &AtomicU64, target: u64) -> Result<()> {
        self.links.send_batches()?;
        let _blocked = crate::watch::blocked(waiting);
        let mut backoff = Backoff::new(false);
        loop {
            self.links.check_links()?;
            let seen = flag.load(Ordering::Acquire);
            if seen >= target {
                return Ok(());
            }
            backoff.pause_or_block(|timeout| crate::futex::wait(flag, seen, timeout));
        }
    }

    /// Polls `ready` with the shared back-off until it yields a value,
    /// sending this rank's pending batches first and checking its links
    /// while it waits: the loop under every wait, for conditions the
    /// typed waits do not cover (bindings' per-element comparisons).
    /// `ready` should read local memory only.
    ///
    /// A rank with a TCP progress engine serves its peers' requests itself
    /// while it waits, until the wait turns into naps (see
    /// `transport::tcp::engine`).
    #[track_caller]
    pub fn poll_until<R>(&self, ready: impl FnMut() -> Option<R>) -> Result<R> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("poll_until");
            let found = self.poll_until_for(Waiting::Condition, ready)?;
            // The program's own wait: what it waited for may be a flag.
            if crate::race::on() {
                crate::race::acquire(None);
            }
            Ok(found)
        })
    }

    /// [`poll_until`](Self::poll_until) for a wait on `count` elements of
    /// this rank's heap from `first`, each compared with `cmp` (`None`:
    /// each with its own value), so that a hang report can say which
    /// elements and what for: for bindings that evaluate their waits
    /// themselves, as the C API does. `first` is read (by the watchdog) only
    /// when it lies in this rank's heap.
    #[track_caller]
    pub fn poll_until_elements<T: Pod, R>(
        &self,
        first: *const T,
        count: usize,
        cmp: Option<Cmp<T>>,
        ready: impl FnMut() -> Option<R>,
    ) -> Result<R> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("poll_until");
            let found = self.poll_until_for(self.waiting_on_elements(first, count, cmp), ready)?;
            if crate::race::on() {
                let len = count * std::mem::size_of::<T>();
                crate::race::observed(self.offset_of(first as usize, len), len);
            }
            Ok(found)
        })
    }

    /// [`poll_until`](Self::poll_until), saying what it waits for
    /// (`waiting`) to hang reports once the condition is seen false.
    pub(crate) fn poll_until_for<R>(&self, waiting: Waiting, mut ready: impl FnMut() -> Option<R>) -> Result<R> {
        let _span = crate::profile::span(crate::profile::Family::Wait);
        self.links.send_batches()?;
        if let Some(result) = ready() {
            return Ok(result);
        }
        let _blocked = crate::watch::blocked(waiting);
        let driver = self.links.engine_driver();
        let mut driving = driver.map(|driver| driver.start_driving());
        let mut backoff = Backoff::new(self.spin_waits).keep_polling(self.links.waits_keep_polling());
        loop {
            self.links.check_links()?;
            backoff.pause();
            if backoff.napping() {
                driving = None;
            }
            if let Some(result) = ready() {
                drop(driving);
                return Ok(result);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cmp;

    #[test]
    fn comparisons_mean_what_they_say() {
        let cases = [
            (Cmp::Eq(3), [false, true, false]),
            (Cmp::Ne(3), [true, false, true]),
            (Cmp::Gt(3), [false, false, true]),
            (Cmp::Ge(3), [false, true, true]),
            (Cmp::Lt(3), [true, false, false]),
            (Cmp::Le(3), [true, true, false]),
        ];
        for (cmp, expect) in cases {
            let got = [2, 3, 4].map(|v| cmp.holds(v));
            assert_eq!(got, expect, "{cmp:?}");
        }
        assert!(!Cmp::Eq(f64::NAN).holds(f64::NAN));
    }
}
