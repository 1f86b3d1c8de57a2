//! Remote memory access: put, get, p, g, iput, iget, ibput, ibget, their
//! `_nbi` forms, `put_signal` and the lone signal updates, typed (`shmem_long_put`), sized (`shmem_put64`) and
//! untyped (`shmem_putmem`), each with its `shmem_ctx_` form. Every family
//! is one generic function here over the Rust API, instantiated per type.

use crate::convert::{dst, pe, signal_op, src, sym};
use crate::ctx::{endpoint, ShmemCtx};
use crate::state::ok;
use libc::c_int;
use oneside::prelude::*;
use oneside::{Pod, SignalOp};

/// Puts `n` elements from `source` to the symmetric `dest` on `target`.
///
/// # Safety
/// `source` must be a local buffer of `n` elements and `ctx` a live
/// context (crate docs); `dest` is checked.
#[inline(always)]
pub unsafe fn put<T: Pod>(ctx: ShmemCtx, api: &'static str, dest: *mut T, source: *const T, n: usize, target: c_int) {
    let e = endpoint(api, ctx);
    let w = e.world();
    // SAFETY: the caller's buffer holds `n` elements (the C API's contract).
    ok(
        api,
        e.put(&sym(api, w, dest, n), pe(target), 0, unsafe { src(source, n) }),
    );
}

/// Gets `n` elements from the symmetric `source` on `target` into `dest`.
///
/// # Safety
/// `dest` must be a local buffer of `n` elements to write, which nothing
/// else reads or writes during the call, and `ctx` a live context (crate
/// docs); `source` is checked.
#[inline(always)]
pub unsafe fn get<T: Pod>(ctx: ShmemCtx, api: &'static str, dest: *mut T, source: *const T, n: usize, target: c_int) {
    let e = endpoint(api, ctx);
    let w = e.world();
    // SAFETY: as in `put`.
    ok(
        api,
        e.get(&sym(api, w, source, n), pe(target), 0, unsafe { dst(dest, n) }),
    );
}

/// `put`, returning before it completes.
///
/// # Safety
/// As `put`'s, and `source` must stay valid and unchanged until the next
/// quiet on `ctx` (or `shmem_barrier_all`), which may still read it.
#[inline(always)]
pub unsafe fn put_nbi<T: Pod>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    source: *const T,
    n: usize,
    target: c_int,
) {
    let e = endpoint(api, ctx);
    let w = e.world();
    // SAFETY: as in `put`; a null source is allowed when `n` is 0 (the
    // empty slice then points nowhere, validly).
    let source = unsafe { src(source, n) };
    // SAFETY: the caller leaves the source unchanged until the next quiet
    // (the C API's contract for non-blocking puts).
    ok(api, unsafe {
        e.put_nbi_from(&sym(api, w, dest, n), pe(target), 0, source.as_ptr(), n)
    });
}

/// `get`, returning before it completes.
///
/// # Safety
/// `dest` must be valid for `n` writes of `T` until the next quiet on
/// `ctx` (or `shmem_barrier_all`), which is when the data has arrived, and
/// the program must neither read nor write it before then; `ctx` must be a
/// live context (crate docs); `source` is checked.
#[inline(always)]
pub unsafe fn get_nbi<T: Pod>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    source: *const T,
    n: usize,
    target: c_int,
) {
    let e = endpoint(api, ctx);
    let w = e.world();
    // SAFETY: the C API's contract: `dest` stays valid and untouched until
    // the next quiet.
    ok(api, unsafe {
        e.get_nbi(&sym(api, w, source, n), pe(target), 0, dest, n)
    });
}

/// Puts one `value` to the symmetric `dest` on `target`.
///
/// # Safety
/// `ctx` must be a live context (crate docs); `dest` is checked.
#[inline(always)]
pub unsafe fn p<T: Pod>(ctx: ShmemCtx, api: &'static str, dest: *mut T, value: T, target: c_int) {
    let e = endpoint(api, ctx);
    let w = e.world();
    ok(api, e.put_value(&sym(api, w, dest, 1), pe(target), 0, value));
}

/// The element at the symmetric `source` on `target`.
///
/// # Safety
/// `ctx` must be a live context (crate docs); `source` is checked.
#[inline(always)]
pub unsafe fn g<T: Pod>(ctx: ShmemCtx, api: &'static str, source: *const T, target: c_int) -> T {
    let e = endpoint(api, ctx);
    let w = e.world();
    ok(api, e.get_value(&sym(api, w, source, 1), pe(target), 0))
}

/// Strided put: element `i` of `source` (stride `sst`) to element `i` of
/// `dest` (stride `tst`), strides in elements.
///
/// # Safety
/// For every `i < n`, `source + i * sst` must be readable as a `T` (it
/// need not be aligned) and inside the same allocation as `source`;
/// `ctx` must be a live context (crate docs). Each `dest` element is
/// checked.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn iput<T: Pod>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    source: *const T,
    tst: isize,
    sst: isize,
    n: usize,
    target: c_int,
) {
    let e = endpoint(api, ctx);
    let w = e.world();
    for i in 0..n as isize {
        let to = dest.wrapping_offset(i * tst);
        // SAFETY: the caller's buffer holds element i at stride sst.
        let value = unsafe { source.offset(i * sst).read_unaligned() };
        ok(api, e.put_value(&sym(api, w, to, 1), pe(target), 0, value));
    }
}

/// Strided get, the mirror of `iput`.
///
/// # Safety
/// For every `i < n`, `dest + i * tst` must be writable as a `T` (it need
/// not be aligned), inside the same allocation as `dest` and not accessed
/// by anyone else during the call; `ctx` must be a live context (crate
/// docs). Each `source` element is checked.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn iget<T: Pod>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    source: *const T,
    tst: isize,
    sst: isize,
    n: usize,
    target: c_int,
) {
    let e = endpoint(api, ctx);
    let w = e.world();
    for i in 0..n as isize {
        let from = source.wrapping_offset(i * sst);
        let value = ok(api, e.get_value(&sym(api, w, from, 1), pe(target), 0));
        // SAFETY: the caller's buffer holds element i at stride tst.
        unsafe { dest.offset(i * tst).write_unaligned(value) };
    }
}

/// Blocked strided put (OpenSHMEM 1.6): block `b` of `bsize` elements
/// from `source + b * sst` to `dest + b * tst` (strides in elements, either
/// sign; a stride of 0 with one block is one put).
///
/// # Safety
/// For every `b < nblocks`, the `bsize` elements at `source + b * sst`
/// must be a local buffer (crate docs); `ctx` must be a live context.
/// Each `dest` block is checked.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn ibput<T: Pod>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    source: *const T,
    tst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    target: c_int,
) {
    let e = endpoint(api, ctx);
    let w = e.world();
    for b in 0..nblocks as isize {
        let to = dest.wrapping_offset(b * tst);
        // SAFETY: the caller's buffer holds block b at stride sst.
        let from = unsafe { src(source.wrapping_offset(b * sst), bsize) };
        ok(api, e.put(&sym(api, w, to, bsize), pe(target), 0, from));
    }
}

/// Blocked strided get, the mirror of `ibput`.
///
/// # Safety
/// For every `b < nblocks`, the `bsize` elements at `dest + b * tst` must
/// be a local buffer to write (crate docs); `ctx` must be a live context.
/// Each `source` block is checked.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn ibget<T: Pod>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    source: *const T,
    tst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    target: c_int,
) {
    let e = endpoint(api, ctx);
    let w = e.world();
    for b in 0..nblocks as isize {
        let from = source.wrapping_offset(b * sst);
        // SAFETY: the caller's buffer holds block b at stride tst.
        let to = unsafe { dst(dest.wrapping_offset(b * tst), bsize) };
        ok(api, e.get(&sym(api, w, from, bsize), pe(target), 0, to));
    }
}

/// `signal_set` / `signal_add` (OpenSHMEM 1.6): the signal word alone.
#[inline(always)]
pub fn signal_update(ctx: ShmemCtx, api: &'static str, sig_addr: *mut u64, signal: u64, op: SignalOp, target: c_int) {
    let e = endpoint(api, ctx);
    let w = e.world();
    let word = sym(api, w, sig_addr, 1);
    let done = match op {
        SignalOp::Set => e.signal_set(&word, pe(target), 0, signal),
        SignalOp::Add => e.signal_add(&word, pe(target), 0, signal),
    };
    ok(api, done);
}

/// Puts `n` elements, then updates the signal word `sig_addr` on `target`
/// with `signal` by `sig_op`; with `nbi`, returns before either completes.
///
/// # Safety
/// `source` must be a local buffer of `n` elements and `ctx` a live
/// context (crate docs); with `nbi`, `source` must also stay valid and
/// unchanged until the next quiet on `ctx`. `dest`, `sig_addr` and
/// `sig_op` are checked.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn put_signal<T: Pod>(
    ctx: ShmemCtx,
    api: &'static str,
    dest: *mut T,
    source: *const T,
    n: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    target: c_int,
    nbi: bool,
) {
    let e = endpoint(api, ctx);
    let w = e.world();
    let (data, sig) = (sym(api, w, dest, n), sym(api, w, sig_addr, 1));
    // SAFETY: as in `put`.
    let from = unsafe { src(source, n) };
    let op = signal_op(api, sig_op);
    let done = match nbi {
        false => e.put_signal(&data, pe(target), 0, from, &sig, 0, op, signal),
        true => e.put_signal_nbi(&data, pe(target), 0, from, &sig, 0, op, signal),
    };
    ok(api, done);
}

/// The calls that move arrays of one element type `$t`, named by `$n`.
macro_rules! array_rma {
    ($n:tt, $t:ty, $c:literal) => {
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs);
                /// `dest` is checked.
                [<shmem_ $n _put>], [<shmem_ctx_ $n _put>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                put(ctx, stringify!([<shmem_ $n _put>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `dest` must be a local buffer of `nelems` elements to write (crate
                /// docs); `source` is checked.
                [<shmem_ $n _get>], [<shmem_ctx_ $n _get>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                get(ctx, stringify!([<shmem_ $n _get>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs) that
                /// stays valid and unchanged until the next quiet of the context (or
                /// `shmem_barrier_all`); `dest` is checked.
                [<shmem_ $n _put_nbi>], [<shmem_ctx_ $n _put_nbi>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                put_nbi(ctx, stringify!([<shmem_ $n _put_nbi>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `dest` must be valid for `nelems` writes until the next quiet of the
                /// context (or `shmem_barrier_all`), and the program must not read or
                /// write it before then; `source` is checked.
                [<shmem_ $n _get_nbi>], [<shmem_ctx_ $n _get_nbi>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                get_nbi(ctx, stringify!([<shmem_ $n _get_nbi>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs);
                /// `dest`, `sig_addr` and `sig_op` are checked.
                [<shmem_ $n _put_signal>], [<shmem_ctx_ $n _put_signal>],
                (dest: *mut $t, source: *const $t, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int), pe, ctx, {
                put_signal(ctx, stringify!([<shmem_ $n _put_signal>]), dest, source, nelems, sig_addr, signal, sig_op, pe, false)
            });
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs) that
                /// stays valid and unchanged until the next quiet of the context (or
                /// `shmem_barrier_all`); `dest`, `sig_addr` and `sig_op` are checked.
                [<shmem_ $n _put_signal_nbi>], [<shmem_ctx_ $n _put_signal_nbi>],
                (dest: *mut $t, source: *const $t, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int), pe, ctx, {
                put_signal(ctx, stringify!([<shmem_ $n _put_signal_nbi>]), dest, source, nelems, sig_addr, signal, sig_op, pe, true)
            });
        }
    };
}

/// Strided calls (`iput`, `iget`), which have no `mem` form.
macro_rules! strided_rma {
    (mem, $t:ty, $c:literal) => {};
    ($n:tt, $t:ty, $c:literal) => {
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// `source + i * sst` must be a readable element (not necessarily aligned)
                /// of the same array as `source` for every `i < nelems`; each `dest`
                /// element is checked.
                [<shmem_ $n _iput>], [<shmem_ctx_ $n _iput>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, nelems: usize, pe: c_int), pe, ctx, {
                iput(ctx, stringify!([<shmem_ $n _iput>]), dest, source, tst, sst, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `dest + i * tst` must be a writable element (not necessarily aligned) of
                /// the same array as `dest`, which no one else accesses during the call,
                /// for every `i < nelems`; each `source` element is checked.
                [<shmem_ $n _iget>], [<shmem_ctx_ $n _iget>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, nelems: usize, pe: c_int), pe, ctx, {
                iget(ctx, stringify!([<shmem_ $n _iget>]), dest, source, tst, sst, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// The `bsize` elements at `source + b * sst` must be a local buffer (crate
                /// docs) for every `b < nblocks`; each `dest` block is checked.
                [<shmem_ $n _ibput>], [<shmem_ctx_ $n _ibput>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int), pe, ctx, {
                ibput(ctx, stringify!([<shmem_ $n _ibput>]), dest, source, tst, sst, bsize, nblocks, pe)
            });
            with_ctx!(
                /// # Safety
                /// The `bsize` elements at `dest + b * tst` must be a local buffer to write
                /// (crate docs) for every `b < nblocks`; each `source` block is checked.
                [<shmem_ $n _ibget>], [<shmem_ctx_ $n _ibget>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int), pe, ctx, {
                ibget(ctx, stringify!([<shmem_ $n _ibget>]), dest, source, tst, sst, bsize, nblocks, pe)
            });
        }
    };
}

/// Single elements by value (`p`, `g`).
macro_rules! scalar_rma {
    ($n:ident, $t:ty, $c:literal) => {
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `dest` is checked.
                [<shmem_ $n _p>], [<shmem_ctx_ $n _p>], (dest: *mut $t, value: $t, pe: c_int), pe, ctx, {
                p(ctx, stringify!([<shmem_ $n _p>]), dest, value, pe)
            });
            with_ctx!(
                /// # Safety
                /// None for its own arguments: `source` is checked.
                [<shmem_ $n _g>], [<shmem_ctx_ $n _g>], (source: *const $t, pe: c_int) -> $t, pe, ctx, {
                g(ctx, stringify!([<shmem_ $n _g>]), source, pe)
            });
        }
    };
}

/// The typed names (`shmem_long_put`) of the array calls.
macro_rules! typed_rma {
    ($n:ident, $t:ty, $c:literal) => {
        array_rma!($n, $t, $c);
        strided_rma!($n, $t, $c);
    };
}

/// The sized names (`shmem_put64`, `shmem_putmem`): the type name is fused
/// to the operation, so they get their own spelling here.
macro_rules! sized_rma {
    ($bits:tt, $t:ty, $c:literal) => {
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs);
                /// `dest` is checked.
                [<shmem_put $bits>], [<shmem_ctx_put $bits>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                put(ctx, stringify!([<shmem_put $bits>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `dest` must be a local buffer of `nelems` elements to write (crate
                /// docs); `source` is checked.
                [<shmem_get $bits>], [<shmem_ctx_get $bits>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                get(ctx, stringify!([<shmem_get $bits>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs) that
                /// stays valid and unchanged until the next quiet of the context (or
                /// `shmem_barrier_all`); `dest` is checked.
                [<shmem_put $bits _nbi>], [<shmem_ctx_put $bits _nbi>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                put_nbi(ctx, stringify!([<shmem_put $bits _nbi>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `dest` must be valid for `nelems` writes until the next quiet of the
                /// context (or `shmem_barrier_all`), and the program must not read or
                /// write it before then; `source` is checked.
                [<shmem_get $bits _nbi>], [<shmem_ctx_get $bits _nbi>],
                (dest: *mut $t, source: *const $t, nelems: usize, pe: c_int), pe, ctx, {
                get_nbi(ctx, stringify!([<shmem_get $bits _nbi>]), dest, source, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs);
                /// `dest`, `sig_addr` and `sig_op` are checked.
                [<shmem_put $bits _signal>], [<shmem_ctx_put $bits _signal>],
                (dest: *mut $t, source: *const $t, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int), pe, ctx, {
                put_signal(ctx, stringify!([<shmem_put $bits _signal>]), dest, source, nelems, sig_addr, signal, sig_op, pe, false)
            });
            with_ctx!(
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs) that
                /// stays valid and unchanged until the next quiet of the context (or
                /// `shmem_barrier_all`); `dest`, `sig_addr` and `sig_op` are checked.
                [<shmem_put $bits _signal_nbi>], [<shmem_ctx_put $bits _signal_nbi>],
                (dest: *mut $t, source: *const $t, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int), pe, ctx, {
                put_signal(ctx, stringify!([<shmem_put $bits _signal_nbi>]), dest, source, nelems, sig_addr, signal, sig_op, pe, true)
            });
        }
        sized_strided!($bits, $t);
    };
}

macro_rules! sized_strided {
    (mem, $t:ty) => {};
    ($bits:tt, $t:ty) => {
        paste::paste! {
            with_ctx!(
                /// # Safety
                /// `source + i * sst` must be a readable element (not necessarily aligned)
                /// of the same array as `source` for every `i < nelems`; each `dest`
                /// element is checked.
                [<shmem_iput $bits>], [<shmem_ctx_iput $bits>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, nelems: usize, pe: c_int), pe, ctx, {
                iput(ctx, stringify!([<shmem_iput $bits>]), dest, source, tst, sst, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// `dest + i * tst` must be a writable element (not necessarily aligned) of
                /// the same array as `dest`, which no one else accesses during the call,
                /// for every `i < nelems`; each `source` element is checked.
                [<shmem_iget $bits>], [<shmem_ctx_iget $bits>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, nelems: usize, pe: c_int), pe, ctx, {
                iget(ctx, stringify!([<shmem_iget $bits>]), dest, source, tst, sst, nelems, pe)
            });
            with_ctx!(
                /// # Safety
                /// The `bsize` elements at `source + b * sst` must be a local buffer (crate
                /// docs) for every `b < nblocks`; each `dest` block is checked.
                [<shmem_ibput $bits>], [<shmem_ctx_ibput $bits>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int), pe, ctx, {
                ibput(ctx, stringify!([<shmem_ibput $bits>]), dest, source, tst, sst, bsize, nblocks, pe)
            });
            with_ctx!(
                /// # Safety
                /// The `bsize` elements at `dest + b * tst` must be a local buffer to write
                /// (crate docs) for every `b < nblocks`; each `source` block is checked.
                [<shmem_ibget $bits>], [<shmem_ctx_ibget $bits>],
                (dest: *mut $t, source: *const $t, tst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int), pe, ctx, {
                ibget(ctx, stringify!([<shmem_ibget $bits>]), dest, source, tst, sst, bsize, nblocks, pe)
            });
        }
    };
}

with_ctx!(
    /// # Safety
    /// None for its own arguments: `sig_addr` is checked.
    shmem_signal_set, shmem_ctx_signal_set, (sig_addr: *mut u64, signal: u64, pe: c_int), pe, ctx, {
    signal_update(ctx, "shmem_signal_set", sig_addr, signal, SignalOp::Set, pe)
});
with_ctx!(
    /// # Safety
    /// None for its own arguments: `sig_addr` is checked.
    shmem_signal_add, shmem_ctx_signal_add, (sig_addr: *mut u64, signal: u64, pe: c_int), pe, ctx, {
    signal_update(ctx, "shmem_signal_add", sig_addr, signal, SignalOp::Add, pe)
});

for_rma_types!(typed_rma);
for_scalar_rma_types!(scalar_rma);
for_sizes!(sized_rma);
