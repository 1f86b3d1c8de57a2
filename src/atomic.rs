//! Remote atomics on symmetric elements (OpenSHMEM's AMOs).
//!
//! [`AtomicElem`] types (`i32`, `u32`, `i64`, `u64`, `f32`, `f64`) have
//! fetch, set and swap; [`AtomicInt`] types (the integers) have everything
//! else: compare-and-swap, add, increment, and, or, xor, each in a fetching
//! form that returns the old value and a non-fetching form that may
//! complete later, at the next [`quiet`](World::quiet). An operation a type
//! does not support does not compile.
//!
//! Every call is one `amo` transport primitive. All atomics on one element
//! are atomic with respect to each other whichever rank issues them and
//! whichever path it uses (see the crate docs' memory model).

use crate::ctx::Endpoint;
use crate::error::Result;
use crate::links::Channel;
use crate::profile::{self, Family};
use crate::sym::{Pod, Sym};
use crate::transport::amo::{Amo, AmoOp, Width};
use crate::world::World;

mod sealed {
    pub trait Sealed {}
}

/// Element types with atomic fetch, set and swap.
pub trait AtomicElem: Pod + sealed::Sealed {
    #[doc(hidden)]
    const WIDTH: Width;
    #[doc(hidden)]
    fn to_bits(self) -> u64;
    #[doc(hidden)]
    fn from_bits(bits: u64) -> Self;
}

/// Integer element types: every atomic operation.
pub trait AtomicInt: AtomicElem + PartialEq {
    #[doc(hidden)]
    const ONE: Self;
}

macro_rules! atomic_int {
    ($($t:ty => $bits:ty, $width:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicElem for $t {
            const WIDTH: Width = $width;
            #[inline]
            fn to_bits(self) -> u64 {
                u64::from(self as $bits)
            }
            #[inline]
            fn from_bits(bits: u64) -> Self {
                bits as $bits as $t
            }
        }
        impl AtomicInt for $t {
            const ONE: Self = 1;
        }
    )*};
}

atomic_int! {
    i32 => u32, Width::W32;
    u32 => u32, Width::W32;
    i64 => u64, Width::W64;
    u64 => u64, Width::W64;
}

macro_rules! atomic_float {
    ($($t:ty => $bits:ty, $width:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicElem for $t {
            const WIDTH: Width = $width;
            #[inline]
            fn to_bits(self) -> u64 {
                u64::from(<$t>::to_bits(self))
            }
            #[inline]
            fn from_bits(bits: u64) -> Self {
                <$t>::from_bits(bits as $bits)
            }
        }
    )*};
}

atomic_float! {
    f32 => u32, Width::W32;
    f64 => u64, Width::W64;
}

impl World {
    /// Applies one atomic to `target`'s element `index` of `sym` on
    /// `stream`, after the usual checks.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    #[track_caller]
    pub(crate) fn atomic_on<T: AtomicElem>(
        &self,
        channel: Channel<'_>,
        name: &'static str,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        op: AmoOp,
        operands: (T, T),
        fetch: bool,
    ) -> Result<T> {
        if crate::hooks::any() {
            let at = std::panic::Location::caller();
            return self.hooked_atomic(at, channel, name, sym, target, index, op, operands, fetch);
        }
        self.uncounted_atomic(channel, name, sym, target, index, op, operands, fetch, None)
    }

    /// [`atomic_on`](World::atomic_on) with a hook on (`hooks`), out of
    /// line: noted for the race checker, counted when profiling. A
    /// profiling branch inside the inlined path (`profile::leaf!`) cost a
    /// non-fetching add on shared memory a third of its rate with
    /// profiling off.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn hooked_atomic<T: AtomicElem>(
        &self,
        at: &'static std::panic::Location<'static>,
        channel: Channel<'_>,
        name: &'static str,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        op: AmoOp,
        operands: (T, T),
        fetch: bool,
    ) -> Result<T> {
        // The program's call, for the race checker's record.
        let races = crate::race::on().then_some(at);
        if !profile::active() {
            return self.uncounted_atomic(channel, name, sym, target, index, op, operands, fetch, races);
        }
        match profile::count_leaf(Family::Atomic, Some(target), std::mem::size_of::<T>()) {
            false => self.uncounted_atomic(channel, name, sym, target, index, op, operands, fetch, races),
            true => profile::timed_leaf(Family::Atomic, || {
                self.uncounted_atomic(channel, name, sym, target, index, op, operands, fetch, races)
            }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn uncounted_atomic<T: AtomicElem>(
        &self,
        channel: Channel<'_>,
        name: &'static str,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        op: AmoOp,
        (operand, compare): (T, T),
        fetch: bool,
        races: Option<&'static std::panic::Location<'static>>,
    ) -> Result<T> {
        let offset = self.checked_offset(name, sym, target, index, 1)?;
        if let Some(at) = races {
            let at = crate::site::outermost_or(at);
            let tag = crate::race::domain_tag::<T>(channel.domain());
            let reads_only = matches!(op, AmoOp::Fetch);
            crate::race::atomic(
                at,
                target,
                (offset, std::mem::size_of::<T>()),
                (tag, reads_only),
                (fetch, channel.race_id()),
            );
        }
        let amo = Amo {
            op,
            width: T::WIDTH,
            operand: operand.to_bits(),
            compare: compare.to_bits(),
            fetch,
        };
        self.links.amo(channel, name, target, offset, amo).map(T::from_bits)
    }
}

/// The fetching and non-fetching forms of one read-modify-write operation.
macro_rules! rmw {
    ($($op:ident: $fetching:ident, $plain:ident, $doc:literal;)*) => {$(
        #[doc = concat!("Atomically ", $doc, " `target`'s element and returns its old value.")]
        #[track_caller]
        fn $fetching<T: AtomicInt>(&self, sym: &Sym<T>, target: usize, index: usize, value: T) -> Result<T> {
            let operands = (value, T::zeroed());
            self.world().atomic_on(self.channel(), stringify!($fetching), sym, target, index, AmoOp::$op, operands, true)
        }

        #[doc = concat!("Atomically ", $doc, " `target`'s element; may complete at the next quiet.")]
        #[track_caller]
        fn $plain<T: AtomicInt>(&self, sym: &Sym<T>, target: usize, index: usize, value: T) -> Result<()> {
            let operands = (value, T::zeroed());
            self.world().atomic_on(self.channel(), stringify!($plain), sym, target, index, AmoOp::$op, operands, false).map(drop)
        }
    )*};
}

/// Remote atomics on an [`Endpoint`]: the [`World`] (its default context)
/// or a [`Ctx`](crate::Ctx). Written once, for both.
pub trait Atomics: Endpoint {
    /// Atomically reads `target`'s element.
    #[track_caller]
    fn atomic_fetch<T: AtomicElem>(&self, sym: &Sym<T>, target: usize, index: usize) -> Result<T> {
        let zero = T::zeroed();
        self.world().atomic_on(
            self.channel(),
            "atomic_fetch",
            sym,
            target,
            index,
            AmoOp::Fetch,
            (zero, zero),
            true,
        )
    }

    /// Atomically stores `value` into `target`'s element (complete at quiet).
    #[track_caller]
    fn atomic_set<T: AtomicElem>(&self, sym: &Sym<T>, target: usize, index: usize, value: T) -> Result<()> {
        let operands = (value, T::zeroed());
        self.world()
            .atomic_on(
                self.channel(),
                "atomic_set",
                sym,
                target,
                index,
                AmoOp::Set,
                operands,
                false,
            )
            .map(drop)
    }

    /// Atomically stores `value` and returns the element's old value.
    #[track_caller]
    fn atomic_swap<T: AtomicElem>(&self, sym: &Sym<T>, target: usize, index: usize, value: T) -> Result<T> {
        let operands = (value, T::zeroed());
        self.world().atomic_on(
            self.channel(),
            "atomic_swap",
            sym,
            target,
            index,
            AmoOp::Swap,
            operands,
            true,
        )
    }

    /// Stores `value` if the element equals `expected`; returns the old value
    /// (equal to `expected` exactly when the swap happened).
    #[track_caller]
    fn atomic_compare_swap<T: AtomicInt>(
        &self,
        sym: &Sym<T>,
        target: usize,
        index: usize,
        expected: T,
        value: T,
    ) -> Result<T> {
        let operands = (value, expected);
        let op = AmoOp::CompareSwap;
        self.world().atomic_on(
            self.channel(),
            "atomic_compare_swap",
            sym,
            target,
            index,
            op,
            operands,
            true,
        )
    }

    /// Atomically increments `target`'s element and returns its old value.
    #[track_caller]
    fn atomic_fetch_inc<T: AtomicInt>(&self, sym: &Sym<T>, target: usize, index: usize) -> Result<T> {
        let operands = (T::ONE, T::zeroed());
        self.world().atomic_on(
            self.channel(),
            "atomic_fetch_inc",
            sym,
            target,
            index,
            AmoOp::Add,
            operands,
            true,
        )
    }

    /// Atomically increments `target`'s element; may complete at the next quiet.
    #[track_caller]
    fn atomic_inc<T: AtomicInt>(&self, sym: &Sym<T>, target: usize, index: usize) -> Result<()> {
        let operands = (T::ONE, T::zeroed());
        self.world()
            .atomic_on(
                self.channel(),
                "atomic_inc",
                sym,
                target,
                index,
                AmoOp::Add,
                operands,
                false,
            )
            .map(drop)
    }

    rmw! {
        Add: atomic_fetch_add, atomic_add, "adds `value` (wrapping) to";
        And: atomic_fetch_and, atomic_and, "ANDs `value` into";
        Or: atomic_fetch_or, atomic_or, "ORs `value` into";
        Xor: atomic_fetch_xor, atomic_xor, "XORs `value` into";
    }
}

impl Atomics for World {}
impl Atomics for crate::Ctx<'_> {}
impl Atomics for crate::ctx::AnyEndpoint<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_32_bit_values_stay_in_their_half() {
        assert_eq!((-1i32).to_bits(), 0xffff_ffff);
        assert_eq!(<i32 as AtomicElem>::from_bits(0xffff_ffff), -1);
        assert_eq!((-2i64).to_bits(), u64::MAX - 1);
        assert_eq!(<f64 as AtomicElem>::from_bits(2.5f64.to_bits()), 2.5);
        assert_eq!(AtomicElem::to_bits(1.5f32), u64::from(1.5f32.to_bits()));
        assert_eq!(<u32 as AtomicElem>::WIDTH, Width::W32);
    }
}
