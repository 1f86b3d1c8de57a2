//! Point-to-point synchronization: the `wait_until` and `test` families
//! (single, `_all`, `_any`, `_some` and their `_vector` forms), the
//! deprecated `shmem_<type>_wait`, and the signal calls.
//!
//! Every form is one generic evaluation over the active elements (those
//! whose `status` entry is 0, or all when `status` is NULL): a wait polls
//! it through `World::poll_until` (which keeps this rank's own transfers
//! moving and backs off), a test evaluates it once.

use crate::convert::{cmp, sym};
use crate::state::{ok, world};
use libc::c_int;
use oneside::{Cmp, Pod};
use std::sync::atomic::{fence, AtomicUsize, Ordering};

static NEXT_START: AtomicUsize = AtomicUsize::new(0);

/// Which elements must satisfy their comparison.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Need {
    All,
    Any,
    Some,
}

/// Element `i`'s comparison value: one for all, or `values[i]`.
#[derive(Clone, Copy)]
pub enum Values<T> {
    One(T),
    Each(*const T),
}

/// The outcome of one evaluation: `None` while not done; otherwise the
/// return value of the C call (an index, a count, or 1).
///
/// # Safety
/// `ivars` must be `n` elements of this rank's symmetric memory (`sync`
/// checks it); `status`, when not null, and the array of `values`, when
/// `Values::Each`, must be local buffers of `n` elements (crate docs); for
/// `Need::Some`, `indices` must be a local buffer of `n` entries to write.
#[allow(clippy::too_many_arguments)]
unsafe fn evaluate<T: Pod + PartialOrd>(
    api: &'static str,
    ivars: *const T,
    n: usize,
    status: *const c_int,
    op: c_int,
    values: Values<T>,
    need: Need,
    indices: *mut usize,
    start: usize,
) -> Option<usize> {
    let mut found = 0;
    let mut active = 0;
    for k in 0..n {
        let i = (start + k) % n;
        // SAFETY: the caller's arrays hold `n` elements.
        if !status.is_null() && unsafe { *status.add(i) } != 0 {
            continue;
        }
        active += 1;
        let value = match values {
            Values::One(v) => v,
            // SAFETY: as above.
            Values::Each(vs) => unsafe { *vs.add(i) },
        };
        // SAFETY: `ivars` was checked to be symmetric memory of `n`
        // elements; a volatile read forms no reference.
        let now = unsafe { ivars.add(i).read_volatile() };
        if cmp::<T>(api, op, value).holds(now) {
            match need {
                Need::Any => return Some(i),
                Need::Some => {
                    // SAFETY: the caller's index array holds `n` entries.
                    unsafe { indices.add(found).write(i) };
                    found += 1;
                }
                Need::All => found += 1,
            }
        } else if need == Need::All {
            return None;
        }
    }
    match need {
        Need::All => Some(1),
        Need::Any => (active == 0).then_some(usize::MAX),
        Need::Some => (found > 0 || active == 0).then_some(found),
    }
}

/// Waits (`wait == true`) or tests; returns what the C call returns.
///
/// # Safety
/// As `evaluate`'s, except that `ivars` is checked here.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sync<T: Pod + PartialOrd>(
    api: &'static str,
    ivars: *const T,
    n: usize,
    status: *const c_int,
    op: c_int,
    values: Values<T>,
    need: Need,
    indices: *mut usize,
    wait: bool,
) -> Option<usize> {
    let w = world(api);
    if n > 0 {
        sym(api, w, ivars, n);
    }
    // A bad operator is an error before any wait, not a hang.
    cmp::<T>(api, op, first(values));
    // The any-forms start one element further each call, so that repeated
    // calls find every ready element, not only the first; the some-forms
    // list indices in order.
    let start = match need {
        Need::Any => NEXT_START.fetch_add(1, Ordering::Relaxed),
        Need::All | Need::Some => 0,
    };
    let once = || {
        // SAFETY: forwarded from this function's contract.
        let outcome = unsafe { evaluate(api, ivars, n, status, op, values, need, indices, start) };
        if outcome.is_some() {
            fence(Ordering::Acquire);
        }
        outcome
    };
    let compared = match values {
        Values::One(v) => Some(cmp::<T>(api, op, v)),
        Values::Each(_) => None,
    };
    match wait {
        true => Some(ok(api, w.poll_until_elements(ivars, n, compared, once))),
        // A test that finds nothing drives progress once and looks again,
        // so a loop of tests moves data as a wait does (and yields the core
        // where ranks outnumber cores, as a wait does).
        false => ok(api, w.test_elements(ivars, n, compared, once)),
    }
}

/// A value to validate the comparison operator against.
fn first<T: Pod>(values: Values<T>) -> T {
    match values {
        Values::One(v) => v,
        Values::Each(_) => T::zeroed(),
    }
}

macro_rules! sync_family {
    ($n:ident, $t:ty, $c:literal) => {
        paste::paste! {
            export! {
                /// # Safety
                /// None for its arguments: `ivar` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait_until>](ivar: *mut $t, op: c_int, value: $t) {
                    sync(stringify!([<shmem_ $n _wait_until>]), ivar, 1, std::ptr::null(), op, Values::One(value), Need::All, std::ptr::null_mut(), true);
                }
            }
            export! {
                /// # Safety
                /// None for its arguments: `ivar` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _test>](ivar: *mut $t, op: c_int, value: $t) -> c_int {
                    sync(stringify!([<shmem_ $n _test>]), ivar, 1, std::ptr::null(), op, Values::One(value), Need::All, std::ptr::null_mut(), false).is_some() as c_int
                }
            }
            export! {
                /// # Safety
                /// `status` must be null or a local buffer of `n` ints (crate docs);
                /// `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait_until_all>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, value: $t) {
                    sync(stringify!([<shmem_ $n _wait_until_all>]), ivars, n, status, op, Values::One(value), Need::All, std::ptr::null_mut(), true);
                }
            }
            export! {
                /// # Safety
                /// `status` must be null or a local buffer of `n` ints (crate docs);
                /// `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait_until_any>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, value: $t) -> usize {
                    sync(stringify!([<shmem_ $n _wait_until_any>]), ivars, n, status, op, Values::One(value), Need::Any, std::ptr::null_mut(), true).unwrap_or(usize::MAX)
                }
            }
            export! {
                /// # Safety
                /// `indices` must be a local buffer of `n` entries to write and `status`
                /// null or a local buffer of `n` ints (crate docs); `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait_until_some>](ivars: *mut $t, n: usize, indices: *mut usize, status: *const c_int, op: c_int, value: $t) -> usize {
                    sync(stringify!([<shmem_ $n _wait_until_some>]), ivars, n, status, op, Values::One(value), Need::Some, indices, true).unwrap_or(0)
                }
            }
            export! {
                /// # Safety
                /// `values` must be a local buffer of `n` elements and `status` null or a
                /// local buffer of `n` ints (crate docs); `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait_until_all_vector>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, values: *const $t) {
                    sync(stringify!([<shmem_ $n _wait_until_all_vector>]), ivars, n, status, op, Values::Each(values), Need::All, std::ptr::null_mut(), true);
                }
            }
            export! {
                /// # Safety
                /// `values` must be a local buffer of `n` elements and `status` null or a
                /// local buffer of `n` ints (crate docs); `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait_until_any_vector>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, values: *const $t) -> usize {
                    sync(stringify!([<shmem_ $n _wait_until_any_vector>]), ivars, n, status, op, Values::Each(values), Need::Any, std::ptr::null_mut(), true).unwrap_or(usize::MAX)
                }
            }
            export! {
                /// # Safety
                /// `indices` must be a local buffer of `n` entries to write, `values` one
                /// of `n` elements and `status` null or one of `n` ints (crate docs);
                /// `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait_until_some_vector>](ivars: *mut $t, n: usize, indices: *mut usize, status: *const c_int, op: c_int, values: *const $t) -> usize {
                    sync(stringify!([<shmem_ $n _wait_until_some_vector>]), ivars, n, status, op, Values::Each(values), Need::Some, indices, true).unwrap_or(0)
                }
            }
            export! {
                /// # Safety
                /// `status` must be null or a local buffer of `n` ints (crate docs);
                /// `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _test_all>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, value: $t) -> c_int {
                    sync(stringify!([<shmem_ $n _test_all>]), ivars, n, status, op, Values::One(value), Need::All, std::ptr::null_mut(), false).is_some() as c_int
                }
            }
            export! {
                /// # Safety
                /// `status` must be null or a local buffer of `n` ints (crate docs);
                /// `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _test_any>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, value: $t) -> usize {
                    sync(stringify!([<shmem_ $n _test_any>]), ivars, n, status, op, Values::One(value), Need::Any, std::ptr::null_mut(), false).unwrap_or(usize::MAX)
                }
            }
            export! {
                /// # Safety
                /// `indices` must be a local buffer of `n` entries to write and `status`
                /// null or a local buffer of `n` ints (crate docs); `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _test_some>](ivars: *mut $t, n: usize, indices: *mut usize, status: *const c_int, op: c_int, value: $t) -> usize {
                    sync(stringify!([<shmem_ $n _test_some>]), ivars, n, status, op, Values::One(value), Need::Some, indices, false).unwrap_or(0)
                }
            }
            export! {
                /// # Safety
                /// `values` must be a local buffer of `n` elements and `status` null or a
                /// local buffer of `n` ints (crate docs); `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _test_all_vector>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, values: *const $t) -> c_int {
                    sync(stringify!([<shmem_ $n _test_all_vector>]), ivars, n, status, op, Values::Each(values), Need::All, std::ptr::null_mut(), false).is_some() as c_int
                }
            }
            export! {
                /// # Safety
                /// `values` must be a local buffer of `n` elements and `status` null or a
                /// local buffer of `n` ints (crate docs); `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _test_any_vector>](ivars: *mut $t, n: usize, status: *const c_int, op: c_int, values: *const $t) -> usize {
                    sync(stringify!([<shmem_ $n _test_any_vector>]), ivars, n, status, op, Values::Each(values), Need::Any, std::ptr::null_mut(), false).unwrap_or(usize::MAX)
                }
            }
            export! {
                /// # Safety
                /// `indices` must be a local buffer of `n` entries to write, `values` one
                /// of `n` elements and `status` null or one of `n` ints (crate docs);
                /// `ivars` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _test_some_vector>](ivars: *mut $t, n: usize, indices: *mut usize, status: *const c_int, op: c_int, values: *const $t) -> usize {
                    sync(stringify!([<shmem_ $n _test_some_vector>]), ivars, n, status, op, Values::Each(values), Need::Some, indices, false).unwrap_or(0)
                }
            }
        }
    };
}

macro_rules! deprecated_wait {
    ($n:ident, $t:ty, $c:literal) => {
        paste::paste! {
            export! {
                /// Deprecated: `shmem_<type>_wait_until` with `SHMEM_CMP_NE`.
                ///
                /// # Safety
                /// None for its arguments: `ivar` is checked.
                pub unsafe extern "C" fn [<shmem_ $n _wait>](ivar: *mut $t, value: $t) {
                    sync(stringify!([<shmem_ $n _wait>]), ivar, 1, std::ptr::null(), 1, Values::One(value), Need::All, std::ptr::null_mut(), true);
                }
            }
        }
    };
}

for_sync_types!(sync_family);
for_deprecated_wait_types!(deprecated_wait);

export! {
    /// `shmem_wait(long *, long)`: until the value differs.
    ///
    /// # Safety
    /// None for its arguments: `ivar` is checked.
    pub unsafe extern "C" fn shmem_wait(ivar: *mut i64, value: i64) {
        sync(
            "shmem_wait",
            ivar,
            1,
            std::ptr::null(),
            1,
            Values::One(value),
            Need::All,
            std::ptr::null_mut(),
            true,
        );
    }
}

export! {
    /// `shmem_wait_until(long *, int, long)`, the untyped name of OpenSHMEM 1.0.
    ///
    /// # Safety
    /// None for its arguments: `ivar` is checked.
    pub unsafe extern "C" fn shmem_wait_until(ivar: *mut i64, op: c_int, value: i64) {
        sync(
            "shmem_wait_until",
            ivar,
            1,
            std::ptr::null(),
            op,
            Values::One(value),
            Need::All,
            std::ptr::null_mut(),
            true,
        );
    }
}

export! {
    /// # Safety
    /// None for its arguments: `sig_addr` is checked.
    pub unsafe extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
        const API: &str = "shmem_signal_fetch";
        let w = world(API);
        ok(API, w.signal_fetch(&sym(API, w, sig_addr, 1), 0))
    }
}

export! {
    /// # Safety
    /// None for its arguments: `sig_addr` is checked.
    pub unsafe extern "C" fn shmem_signal_wait_until(sig_addr: *mut u64, op: c_int, value: u64) -> u64 {
        const API: &str = "shmem_signal_wait_until";
        let w = world(API);
        let condition: Cmp<u64> = cmp(API, op, value);
        ok(API, w.signal_wait_until(&sym(API, w, sig_addr, 1), 0, condition))
    }
}
