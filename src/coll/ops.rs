//! Reduction operations and the element types they apply to.
//!
//! An operation is a unit type (`Sum`, `Max`, `Xor`, ...) implementing
//! [`ReduceOp<T>`] for the element types where it applies, so a bitwise
//! reduction of floats is a compile error, not a run-time one:
//!
//! ```compile_fail
//! # let world = oneside::init()?;
//! let x = world.alloc::<f64>(4)?;
//! world.reduce(world.team_world(), oneside::Xor, &x, &x, 4)?; // f64 has no xor
//! # Ok::<(), oneside::Error>(())
//! ```

use crate::sym::Pod;

mod sealed {
    pub trait Sealed {}
}

/// An element type reductions apply to: every primitive integer and float.
pub trait Number: Pod + PartialOrd + sealed::Sealed {
    #[doc(hidden)]
    fn add(self, other: Self) -> Self;
    #[doc(hidden)]
    fn mul(self, other: Self) -> Self;
}

/// An integer element type: the bitwise reductions apply to these.
pub trait Integer: Number {
    #[doc(hidden)]
    fn and(self, other: Self) -> Self;
    #[doc(hidden)]
    fn or(self, other: Self) -> Self;
    #[doc(hidden)]
    fn xor(self, other: Self) -> Self;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Number for $t {
            #[inline(always)]
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            #[inline(always)]
            fn mul(self, other: Self) -> Self { self.wrapping_mul(other) }
        }
        impl Integer for $t {
            #[inline(always)]
            fn and(self, other: Self) -> Self { self & other }
            #[inline(always)]
            fn or(self, other: Self) -> Self { self | other }
            #[inline(always)]
            fn xor(self, other: Self) -> Self { self ^ other }
        }
    )*};
}
integers!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Number for $t {
            #[inline(always)]
            fn add(self, other: Self) -> Self { self + other }
            #[inline(always)]
            fn mul(self, other: Self) -> Self { self * other }
        }
    )*};
}
floats!(f32, f64);

/// A reduction operation on elements of type `T`. Integer sums and
/// products wrap on overflow.
pub trait ReduceOp<T>: Copy + sealed::Sealed {
    /// The operation's OpenSHMEM name (`sum`, `max`, ...).
    const NAME: &'static str;
    /// Combines two elements; `a` comes from the lower-numbered member.
    fn combine(a: T, b: T) -> T;
}

macro_rules! op {
    ($(#[$doc:meta])* $name:ident, $shmem:literal, $bound:ident, |$a:ident, $b:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl<T: $bound> ReduceOp<T> for $name {
            const NAME: &'static str = $shmem;
            #[inline(always)]
            fn combine($a: T, $b: T) -> T { $body }
        }
    };
}
op!(/// Sum (`shmem_*_sum_reduce`).
    Sum, "sum", Number, |a, b| a.add(b));
op!(/// Product (`shmem_*_prod_reduce`).
    Prod, "prod", Number, |a, b| a.mul(b));
op!(/// Minimum (`shmem_*_min_reduce`).
    Min, "min", Number, |a, b| if b < a { b } else { a });
op!(/// Maximum (`shmem_*_max_reduce`).
    Max, "max", Number, |a, b| if b > a { b } else { a });
op!(/// Bitwise and (`shmem_*_and_reduce`); integers only.
    And, "and", Integer, |a, b| a.and(b));
op!(/// Bitwise or (`shmem_*_or_reduce`); integers only.
    Or, "or", Integer, |a, b| a.or(b));
op!(/// Bitwise exclusive or (`shmem_*_xor_reduce`); integers only.
    Xor, "xor", Integer, |a, b| a.xor(b));

/// `acc[i] = O(acc[i], src[i])` for `i < n`.
///
/// # Safety
/// `acc` must be valid for `n` reads and writes and `src` for `n` reads,
/// both aligned for `T`. `src` may lie in memory another process maps, as
/// long as nothing writes it meanwhile; no reference to it is formed.
#[inline]
pub(crate) unsafe fn fold<T: Number, O: ReduceOp<T>>(acc: *mut T, src: *const T, n: usize) {
    for i in 0..n {
        // SAFETY: forwarded from the caller; i < n.
        unsafe { acc.add(i).write(O::combine(acc.add(i).read(), src.add(i).read())) };
    }
}

/// `target[i] = s0[i] O s1[i] O ...` for `i < n`, combining the sources
/// in the order given (so every member that combines the same sources gets
/// bit-identical floats). No sources: `target` is left alone.
///
/// # Safety
/// `target` must be valid for `n` writes and each source for `n` reads, all
/// aligned for `T`; `target` must not overlap any source. Sources may lie
/// in memory another process maps, as long as nothing writes it meanwhile.
#[inline]
pub(crate) unsafe fn combine_into<T: Number, O: ReduceOp<T>>(
    target: *mut T,
    mut sources: impl Iterator<Item = *const T>,
    n: usize,
) {
    let Some(first) = sources.next() else { return };
    // SAFETY: forwarded from the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(first, target, n);
        for source in sources {
            fold::<T, O>(target, source, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_mean_what_they_say() {
        assert_eq!(<Sum as ReduceOp<i32>>::combine(i32::MAX, 1), i32::MIN);
        assert_eq!(<Prod as ReduceOp<f64>>::combine(1.5, 2.0), 3.0);
        assert_eq!(<Min as ReduceOp<u8>>::combine(3, 2), 2);
        assert_eq!(<Max as ReduceOp<f32>>::combine(-1.0, 2.0), 2.0);
        assert_eq!(<Xor as ReduceOp<u64>>::combine(0b1100, 0b1010), 0b0110);
        assert_eq!(<And as ReduceOp<i8>>::combine(-1, 5), 5);
        assert_eq!(<Or as ReduceOp<u16>>::combine(1, 4), 5);
        assert_eq!(<Max as ReduceOp<i64>>::NAME, "max");
    }
}
