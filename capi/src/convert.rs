//! From C arguments to the Rust API's: PE numbers, buffers, and symmetric
//! addresses; and the macro that defines a call with its `shmem_ctx_` twin.

use crate::state::{fail, ok};
use oneside::{Pod, Sym, World};

/// A PE number as a rank; a negative one becomes a rank no job has, so the
/// call reports it.
#[inline(always)]
pub fn pe(pe: libc::c_int) -> usize {
    // A negative PE wraps past every rank (so it fails every check), and
    // an error says it as written (`PE -1`, words::Who).
    pe as isize as usize
}

/// `n` elements at `ptr` (which may be null when `n` is 0).
///
/// # Safety
/// `ptr` must be valid for `n` reads for the returned lifetime.
#[inline(always)]
pub unsafe fn src<'a, T>(ptr: *const T, n: usize) -> &'a [T] {
    match n {
        0 => &[],
        // SAFETY: forwarded from this function's contract.
        _ => unsafe { std::slice::from_raw_parts(ptr, n) },
    }
}

/// `n` writable elements at `ptr` (which may be null when `n` is 0).
///
/// # Safety
/// `ptr` must be valid for `n` writes for the returned lifetime and not
/// aliased by another live reference.
#[inline(always)]
pub unsafe fn dst<'a, T>(ptr: *mut T, n: usize) -> &'a mut [T] {
    match n {
        0 => &mut [],
        // SAFETY: forwarded from this function's contract.
        _ => unsafe { std::slice::from_raw_parts_mut(ptr, n) },
    }
}

/// The symmetric object of `n` elements at `addr`, or the end of the job.
#[inline(always)]
pub fn sym<T: Pod>(api: &'static str, world: &World, addr: *const T, n: usize) -> Sym<T> {
    // SAFETY: the C API never makes local slices or frees through these
    // handles (shmem_free goes through the allocation's own offset).
    ok(api, unsafe { world.sym_at(api, addr, n) })
}

/// A comparison operator (`SHMEM_CMP_*`) and value as a `Cmp`.
#[inline]
pub fn cmp<T>(api: &'static str, op: libc::c_int, value: T) -> oneside::Cmp<T> {
    use oneside::Cmp;
    match op {
        0 => Cmp::Eq(value),
        1 => Cmp::Ne(value),
        2 => Cmp::Gt(value),
        3 => Cmp::Ge(value),
        4 => Cmp::Lt(value),
        5 => Cmp::Le(value),
        other => fail(
            api,
            &format!("unknown comparison {other} (use SHMEM_CMP_EQ, _NE, _GT, _GE, _LT or _LE)"),
        ),
    }
}

/// A signal operator (`SHMEM_SIGNAL_SET`, `SHMEM_SIGNAL_ADD`).
#[inline]
pub fn signal_op(api: &'static str, op: libc::c_int) -> oneside::SignalOp {
    match op {
        0 => oneside::SignalOp::Set,
        1 => oneside::SignalOp::Add,
        other => fail(
            api,
            &format!("unknown signal operator {other} (use SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD)"),
        ),
    }
}

/// Defines an exported call and its `shmem_ctx_` form, which takes a
/// context first; both have the same body, which names the context `$ctx`
/// (a null one, the default context, in the plain form). The context form
/// first turns the PE argument `$pe`, numbered in the context's team, into
/// a world rank. The attributes (the docs, with their `# Safety` section)
/// go on both; the context form's safety section gains the context's
/// condition.
macro_rules! with_ctx {
    ($(#[$attr:meta])* $name:ident, $ctx_name:ident, ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?, $pe:ident, $ctx:ident, $body:block) => {
        export! {
            $(#[$attr])*
            pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                let $ctx: $crate::ctx::ShmemCtx = std::ptr::null_mut();
                $body
            }
        }

        export! {
            $(#[$attr])*
            ///
            /// `ctx` must be a live context (crate docs).
            pub unsafe extern "C" fn $ctx_name($ctx: $crate::ctx::ShmemCtx, $($arg: $ty),*) $(-> $ret)? {
                let $pe = $crate::ctx::world_pe($ctx, $pe);
                $body
            }
        }
    };
}
