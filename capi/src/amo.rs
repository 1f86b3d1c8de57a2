//! Atomic memory operations: every OpenSHMEM 1.5 name for each AMO type
//! table, their `_nbi` fetching forms, `shmem_ctx_` forms, and the
//! deprecated names (`shmem_long_finc`, `shmem_int_cswap`, ...).
//!
//! A fetching `_nbi` atomic is done at once here and its result stored,
//! which completes it earlier than the next quiet, as the spec allows.

use crate::convert::{pe, sym};
use crate::ctx::{endpoint, ShmemCtx};
use crate::state::ok;
use libc::c_int;
use oneside::prelude::*;
use oneside::{AnyEndpoint, AtomicElem, AtomicInt, Sym};

#[inline(always)]
fn on<T: oneside::Pod, R>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *const T,
    op: impl FnOnce(&AnyEndpoint<'static>, &Sym<T>) -> Result<R, oneside::Error>,
) -> R {
    let e = endpoint(api, ctx);
    ok(api, op(&e, &sym(api, e.world(), dest, 1)))
}

pub fn fetch<T: AtomicElem>(ctx: ShmemCtx, api: &'static str, dest: *const T, target: c_int) -> T {
    on(ctx, api, dest, |w, s| w.atomic_fetch(s, pe(target), 0))
}

pub fn set<T: AtomicElem>(ctx: ShmemCtx, api: &'static str, dest: *mut T, value: T, target: c_int) {
    on(ctx, api, dest, |w, s| w.atomic_set(s, pe(target), 0, value))
}

pub fn swap<T: AtomicElem>(ctx: ShmemCtx, api: &'static str, dest: *mut T, value: T, target: c_int) -> T {
    on(ctx, api, dest, |w, s| w.atomic_swap(s, pe(target), 0, value))
}

pub fn compare_swap<T: AtomicInt>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    cond: T,
    value: T,
    target: c_int,
) -> T {
    on(ctx, api, dest, |w, s| {
        w.atomic_compare_swap(s, pe(target), 0, cond, value)
    })
}

pub fn fetch_inc<T: AtomicInt>(ctx: ShmemCtx, api: &'static str, dest: *mut T, target: c_int) -> T {
    on(ctx, api, dest, |w, s| w.atomic_fetch_inc(s, pe(target), 0))
}

pub fn inc<T: AtomicInt>(ctx: ShmemCtx, api: &'static str, dest: *mut T, target: c_int) {
    on(ctx, api, dest, |w, s| w.atomic_inc(s, pe(target), 0))
}

/// Stores a fetched value for an `_nbi` form.
///
/// # Safety
/// `fetch` must be valid for one write.
#[inline(always)]
pub unsafe fn deliver<T>(fetch: *mut T, value: T) {
    // The program may not read it before the next quiet (race checker).
    oneside::race::nbi_buffer(
        std::panic::Location::caller(),
        fetch as usize,
        std::mem::size_of::<T>(),
        oneside::race::Use::Writes,
        oneside::race::ops::ATOMIC,
    );
    // SAFETY: forwarded from this function's contract.
    unsafe { fetch.write_unaligned(value) }
}

/// The read-modify-write operations with a value: fetching, plain and
/// fetching-nbi forms of `$op` from the Rust API's `$fetching`/`$plain`.
macro_rules! rmw_family {
    ($n:ident, $t:ty, $op:ident, $fetching:ident, $plain:ident) => {
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked, its alignment too.
                [<shmem_ $n _atomic_fetch_ $op>], [<shmem_ctx_ $n _atomic_fetch_ $op>],
                (dest: *mut $t, value: $t, pe: c_int) -> $t, pe, ctx, {
                on(ctx, stringify!([<shmem_ $n _atomic_fetch_ $op>]), dest, |w, s| w.$fetching(s, $crate::convert::pe(pe), 0, value))
            });
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked, its alignment too.
                [<shmem_ $n _atomic_ $op>], [<shmem_ctx_ $n _atomic_ $op>],
                (dest: *mut $t, value: $t, pe: c_int), pe, ctx, {
                on(ctx, stringify!([<shmem_ $n _atomic_ $op>]), dest, |w, s| w.$plain(s, $crate::convert::pe(pe), 0, value))
            });
            with_ctx!(
                /// # Safety
                /// `fetch` must be valid for one write of the element type (it need not be
                /// aligned; the old value is stored there before the call returns); `dest`
                /// is checked.
                [<shmem_ $n _atomic_fetch_ $op _nbi>], [<shmem_ctx_ $n _atomic_fetch_ $op _nbi>],
                (fetch: *mut $t, dest: *mut $t, value: $t, pe: c_int), pe, ctx, {
                let old = on(ctx, stringify!([<shmem_ $n _atomic_fetch_ $op _nbi>]), dest, |w, s| w.$fetching(s, $crate::convert::pe(pe), 0, value));
                deliver(fetch, old)
            });
        }
    };
}

/// fetch, set, swap: the extended AMO types.
macro_rules! extended_amo {
    ($n:ident, $t:ty, $c:literal) => {
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `source` is checked, its alignment too.
                [<shmem_ $n _atomic_fetch>], [<shmem_ctx_ $n _atomic_fetch>], (source: *const $t, pe: c_int) -> $t, pe, ctx, {
                fetch(ctx, stringify!([<shmem_ $n _atomic_fetch>]), source, pe)
            });
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked, its alignment too.
                [<shmem_ $n _atomic_set>], [<shmem_ctx_ $n _atomic_set>], (dest: *mut $t, value: $t, pe: c_int), pe, ctx, {
                set(ctx, stringify!([<shmem_ $n _atomic_set>]), dest, value, pe)
            });
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked, its alignment too.
                [<shmem_ $n _atomic_swap>], [<shmem_ctx_ $n _atomic_swap>], (dest: *mut $t, value: $t, pe: c_int) -> $t, pe, ctx, {
                swap(ctx, stringify!([<shmem_ $n _atomic_swap>]), dest, value, pe)
            });
            with_ctx!(
                /// # Safety
                /// `fetch_to` must be valid for one write of the element type (it need not
                /// be aligned; the value is stored there before the call returns);
                /// `source` is checked.
                [<shmem_ $n _atomic_fetch_nbi>], [<shmem_ctx_ $n _atomic_fetch_nbi>],
                (fetch_to: *mut $t, source: *const $t, pe: c_int), pe, ctx, {
                deliver(fetch_to, fetch(ctx, stringify!([<shmem_ $n _atomic_fetch_nbi>]), source, pe))
            });
            with_ctx!(
                /// # Safety
                /// `fetch_to` must be valid for one write of the element type (it need not
                /// be aligned; the old value is stored there before the call returns);
                /// `dest` is checked.
                [<shmem_ $n _atomic_swap_nbi>], [<shmem_ctx_ $n _atomic_swap_nbi>],
                (fetch_to: *mut $t, dest: *mut $t, value: $t, pe: c_int), pe, ctx, {
                deliver(fetch_to, swap(ctx, stringify!([<shmem_ $n _atomic_swap_nbi>]), dest, value, pe))
            });
            export! {
                /// Deprecated name of `shmem_<type>_atomic_fetch`.
                ///
                /// # Safety
                /// None for its arguments: `source` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _fetch>](source: *const $t, pe: c_int) -> $t {
                    fetch(std::ptr::null_mut(), stringify!([<shmem_ $n _fetch>]), source, pe)
                }
            }
            export! {
                /// Deprecated name of `shmem_<type>_atomic_set`.
                ///
                /// # Safety
                /// None for its arguments: `dest` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _set>](dest: *mut $t, value: $t, pe: c_int) {
                    set(std::ptr::null_mut(), stringify!([<shmem_ $n _set>]), dest, value, pe)
                }
            }
            export! {
                /// Deprecated name of `shmem_<type>_atomic_swap`.
                ///
                /// # Safety
                /// None for its arguments: `dest` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _swap>](dest: *mut $t, value: $t, pe: c_int) -> $t {
                    swap(std::ptr::null_mut(), stringify!([<shmem_ $n _swap>]), dest, value, pe)
                }
            }
        }
    };
}

/// compare_swap, fetch_inc, inc, fetch_add, add: the standard AMO types.
macro_rules! standard_amo {
    ($n:ident, $t:ty, $c:literal) => {
        rmw_family!($n, $t, add, atomic_fetch_add, atomic_add);
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked, its alignment too.
                [<shmem_ $n _atomic_compare_swap>], [<shmem_ctx_ $n _atomic_compare_swap>],
                (dest: *mut $t, cond: $t, value: $t, pe: c_int) -> $t, pe, ctx, {
                compare_swap(ctx, stringify!([<shmem_ $n _atomic_compare_swap>]), dest, cond, value, pe)
            });
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked, its alignment too.
                [<shmem_ $n _atomic_fetch_inc>], [<shmem_ctx_ $n _atomic_fetch_inc>],
                (dest: *mut $t, pe: c_int) -> $t, pe, ctx, {
                fetch_inc(ctx, stringify!([<shmem_ $n _atomic_fetch_inc>]), dest, pe)
            });
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked, its alignment too.
                [<shmem_ $n _atomic_inc>], [<shmem_ctx_ $n _atomic_inc>], (dest: *mut $t, pe: c_int), pe, ctx, {
                inc(ctx, stringify!([<shmem_ $n _atomic_inc>]), dest, pe)
            });
            with_ctx!(
                /// # Safety
                /// `fetch_to` must be valid for one write of the element type (it need not
                /// be aligned; the old value is stored there before the call returns);
                /// `dest` is checked.
                [<shmem_ $n _atomic_compare_swap_nbi>], [<shmem_ctx_ $n _atomic_compare_swap_nbi>],
                (fetch_to: *mut $t, dest: *mut $t, cond: $t, value: $t, pe: c_int), pe, ctx, {
                deliver(fetch_to, compare_swap(ctx, stringify!([<shmem_ $n _atomic_compare_swap_nbi>]), dest, cond, value, pe))
            });
            with_ctx!(
                /// # Safety
                /// `fetch_to` must be valid for one write of the element type (it need not
                /// be aligned; the old value is stored there before the call returns);
                /// `dest` is checked.
                [<shmem_ $n _atomic_fetch_inc_nbi>], [<shmem_ctx_ $n _atomic_fetch_inc_nbi>],
                (fetch_to: *mut $t, dest: *mut $t, pe: c_int), pe, ctx, {
                deliver(fetch_to, fetch_inc(ctx, stringify!([<shmem_ $n _atomic_fetch_inc_nbi>]), dest, pe))
            });
            export! {
                /// Deprecated name of `shmem_<type>_atomic_compare_swap`.
                ///
                /// # Safety
                /// None for its arguments: `dest` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _cswap>](dest: *mut $t, cond: $t, value: $t, pe: c_int) -> $t {
                    compare_swap(std::ptr::null_mut(), stringify!([<shmem_ $n _cswap>]), dest, cond, value, pe)
                }
            }
            export! {
                /// Deprecated name of `shmem_<type>_atomic_fetch_inc`.
                ///
                /// # Safety
                /// None for its arguments: `dest` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _finc>](dest: *mut $t, pe: c_int) -> $t {
                    fetch_inc(std::ptr::null_mut(), stringify!([<shmem_ $n _finc>]), dest, pe)
                }
            }
            export! {
                /// Deprecated name of `shmem_<type>_atomic_inc`.
                ///
                /// # Safety
                /// None for its arguments: `dest` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _inc>](dest: *mut $t, pe: c_int) {
                    inc(std::ptr::null_mut(), stringify!([<shmem_ $n _inc>]), dest, pe)
                }
            }
            export! {
                /// Deprecated name of `shmem_<type>_atomic_fetch_add`.
                ///
                /// # Safety
                /// None for its arguments: `dest` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _fadd>](dest: *mut $t, value: $t, pe: c_int) -> $t {
                    on(std::ptr::null_mut(), stringify!([<shmem_ $n _fadd>]), dest, |w, s| w.atomic_fetch_add(s, $crate::convert::pe(pe), 0, value))
                }
            }
            export! {
                /// Deprecated name of `shmem_<type>_atomic_add`.
                ///
                /// # Safety
                /// None for its arguments: `dest` is checked, its alignment too.
                pub unsafe extern "C" fn [<shmem_ $n _add>](dest: *mut $t, value: $t, pe: c_int) {
                    on(std::ptr::null_mut(), stringify!([<shmem_ $n _add>]), dest, |w, s| w.atomic_add(s, $crate::convert::pe(pe), 0, value))
                }
            }
        }
    };
}

/// and, or, xor: the bitwise AMO types.
macro_rules! bitwise_amo {
    ($n:ident, $t:ty, $c:literal) => {
        rmw_family!($n, $t, and, atomic_fetch_and, atomic_and);
        rmw_family!($n, $t, or, atomic_fetch_or, atomic_or);
        rmw_family!($n, $t, xor, atomic_fetch_xor, atomic_xor);
    };
}

for_extended_amo_types!(extended_amo);
for_amo_types!(standard_amo);
for_bitwise_amo_types!(bitwise_amo);

export! {
    /// `shmem_swap(long *, long, int)`, the untyped name of OpenSHMEM 1.0.
    ///
    /// # Safety
    /// None for its arguments: `dest` is checked, its alignment too.
    pub unsafe extern "C" fn shmem_swap(dest: *mut i64, value: i64, pe: c_int) -> i64 {
        swap(std::ptr::null_mut(), "shmem_swap", dest, value, pe)
    }
}
