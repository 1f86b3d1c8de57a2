//! The deprecated active-set collectives of OpenSHMEM 1.0-1.4, which name
//! their members as `PE_start, logPE_stride, PE_size` and bring a `pSync`
//! work array: `shmem_barrier`, `shmem_sync`, `shmem_broadcast32/64`,
//! `shmem_(f)collect32/64`, `shmem_alltoall(s)32/64` and the
//! `shmem_<type>_<op>_to_all` reductions. Older course material and the
//! OSU benchmarks use them.
//!
//! When the active set is the whole world (nearly always), they run the
//! world team's collectives. Any other set runs simple algorithms of its
//! own on one-sided puts and atomics: a dissemination barrier on counters
//! in `pSync` (each round adds 1 at its partner and takes 1 back when it
//! arrives, so `pSync` returns to `SHMEM_SYNC_VALUE` and back-to-back
//! calls cannot confuse rounds), puts into every member's destination
//! between two such barriers, and `coll::gather` for reductions.

use crate::coll::{self, Group};
use crate::convert::sym;
use crate::state::{fail, ok, world};
use libc::{c_int, c_long, c_void};
use oneside::prelude::*;
use oneside::{Pod, World};

/// `pSync` word that carries a `collect` offset from member to member.
const MAILBOX: usize = 63;

/// A strided set of world ranks with its `pSync` array.
pub struct ActiveSet {
    start: usize,
    stride: usize,
    size: usize,
    me: usize,
    psync: *mut i64,
}

/// The members of a call: the whole world, or another active set.
pub enum Members {
    World,
    Set(ActiveSet),
}

pub fn members(api: &'static str, start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) -> Members {
    let w = world(api);
    let (Ok(start), Ok(log), Ok(size)) = (usize::try_from(start), u32::try_from(log_stride), usize::try_from(size))
    else {
        fail(
            api,
            &format!("bad active set: PE_start {start}, logPE_stride {log_stride}, PE_size {size}"),
        );
    };
    let stride = 1usize.checked_shl(log).unwrap_or(usize::MAX);
    let last = (size.max(1) - 1).checked_mul(stride).and_then(|s| s.checked_add(start));
    if size == 0 || last.is_none_or(|l| l >= w.size()) {
        fail(
            api,
            &format!(
                "the active set (PE_start {start}, logPE_stride {log_stride}, PE_size {size}) does not fit in {} PEs",
                w.size()
            ),
        );
    }
    if start == 0 && size == w.size() {
        return Members::World;
    }
    let me = w
        .rank()
        .checked_sub(start)
        .filter(|d| d % stride == 0)
        .map(|d| d / stride);
    let Some(me) = me.filter(|&m| m < size) else {
        fail(api, &format!("PE {} is not in the active set it called with", w.rank()));
    };
    Members::Set(ActiveSet {
        start,
        stride,
        size,
        me,
        psync: psync.cast(),
    })
}

impl Group for ActiveSet {
    fn size(&self) -> usize {
        self.size
    }

    fn world_rank(&self, member: usize) -> usize {
        self.start + member * self.stride
    }

    fn sync(&self, api: &'static str, w: &World) {
        let rounds = self.size.next_power_of_two().trailing_zeros() as usize;
        let counters = sym(api, w, self.psync.cast_const(), rounds.max(1));
        for round in 0..rounds {
            let partner = self.world_rank((self.me + (1 << round)) % self.size);
            ok(api, w.atomic_add(&counters, partner, round, 1i64));
            ok(api, w.wait_until(&counters, round, |v: i64| v >= 1));
            ok(api, w.atomic_fetch_add(&counters, w.rank(), round, -1i64));
        }
    }
}

impl ActiveSet {
    /// Puts `n` elements from `source` to member `to`'s `dest` at element `at`.
    #[allow(clippy::too_many_arguments)]
    fn put<T: Pod>(
        &self,
        api: &'static str,
        w: &World,
        dest: *mut T,
        at: usize,
        source: *const T,
        n: usize,
        to: usize,
    ) {
        let d = sym(api, w, dest, at + n);
        // SAFETY: the caller's source holds `n` elements.
        let s = unsafe { crate::convert::src(source, n) };
        ok(api, w.put(&d, self.world_rank(to), at, s));
    }

    /// Ends a data movement: everything put is delivered, then all meet.
    fn finish(&self, api: &'static str, w: &World) {
        ok(api, w.quiet());
        self.sync(api, w);
    }
}

pub fn barrier(api: &'static str, members: Members, quiet: bool) {
    let w = world(api);
    match members {
        Members::World if quiet => ok(api, w.barrier()),
        Members::World => ok(api, w.sync_all()),
        Members::Set(set) => {
            if quiet {
                ok(api, w.quiet());
            }
            set.sync(api, w);
        }
    }
}

export! {
    /// # Safety
    /// None for its arguments: the active set is checked, and `psync` too
    /// where it is used (an active set other than the whole world).
    pub unsafe extern "C" fn shmem_barrier(start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
        const API: &str = "shmem_barrier";
        barrier(API, members(API, start, log_stride, size, psync), true);
    }
}

export! {
    /// # Safety
    /// None for its arguments: the active set is checked, and `psync` too
    /// where it is used (an active set other than the whole world).
    pub unsafe extern "C" fn shmem_sync(start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
        const API: &str = "shmem_sync";
        barrier(API, members(API, start, log_stride, size, psync), false);
    }
}

/// OpenSHMEM 1.4 broadcast: the root's `dest` is not written.
pub fn broadcast<T: Pod>(api: &'static str, members: Members, dest: *mut T, source: *const T, n: usize, root: c_int) {
    let w = world(api);
    match members {
        Members::World => coll::broadcast_to_others(api, w.team_world(), dest, source, n, root),
        Members::Set(set) => {
            let root = usize::try_from(root).ok().filter(|&r| r < set.size);
            let Some(root) = root else {
                fail(api, &"PE_root is not a member index of the active set");
            };
            set.sync(api, w);
            if set.me == root {
                for to in (0..set.size).filter(|&m| m != root) {
                    set.put(api, w, dest, 0, source, n, to);
                }
            }
            set.finish(api, w);
        }
    }
}

pub fn fcollect<T: Pod>(api: &'static str, members: Members, dest: *mut T, source: *const T, n: usize) {
    let w = world(api);
    match members {
        Members::World => coll::fcollect(api, w.team_world(), dest, source, n),
        Members::Set(set) => {
            set.sync(api, w);
            for to in 0..set.size {
                set.put(api, w, dest, set.me * n, source, n, to);
            }
            set.finish(api, w);
        }
    }
}

pub fn collect<T: Pod>(api: &'static str, members: Members, dest: *mut T, source: *const T, n: usize) {
    let w = world(api);
    match members {
        Members::World => coll::collect(api, w.team_world(), dest, source, n),
        Members::Set(set) => {
            set.sync(api, w);
            // The offsets pass from member to member through MAILBOX, as
            // offset + 1 so that 0 means "not yet".
            let mailbox = sym(api, w, set.psync.cast_const(), MAILBOX + 1);
            let at = match set.me {
                0 => 0,
                _ => {
                    ok(api, w.wait_until(&mailbox, MAILBOX, |v: i64| v >= 1));
                    ok(api, w.atomic_swap(&mailbox, w.rank(), MAILBOX, 0i64)) as usize - 1
                }
            };
            if set.me + 1 < set.size {
                let next = set.world_rank(set.me + 1);
                ok(api, w.atomic_set(&mailbox, next, MAILBOX, (at + n + 1) as i64));
            }
            for to in 0..set.size {
                set.put(api, w, dest, at, source, n, to);
            }
            set.finish(api, w);
        }
    }
}

pub fn alltoall<T: Pod>(api: &'static str, members: Members, dest: *mut T, source: *const T, n: usize) {
    let w = world(api);
    match members {
        Members::World => coll::alltoall(api, w.team_world(), dest, source, n),
        Members::Set(set) => {
            set.sync(api, w);
            for to in 0..set.size {
                set.put(api, w, dest, set.me * n, source.wrapping_add(to * n), n, to);
            }
            set.finish(api, w);
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn alltoalls<T: Pod>(
    api: &'static str,
    members: Members,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    n: usize,
) {
    let w = world(api);
    match members {
        Members::World => coll::alltoalls(api, w.team_world(), dest, source, dst, sst, n),
        Members::Set(set) => {
            let (dst, sst) = (dst.max(1) as usize, sst.max(1) as usize);
            set.sync(api, w);
            for to in 0..set.size {
                for k in 0..n {
                    let from = source.wrapping_add((to * n + k) * sst);
                    set.put(api, w, dest, (set.me * n + k) * dst, from, 1, to);
                }
            }
            set.finish(api, w);
        }
    }
}

/// The sized active-set calls, in 32- or 64-bit elements.
macro_rules! sized_active {
    ($bits:tt, $t:ty) => {
        paste::paste! {
            export! {
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs): on an
                /// active set other than the whole world, the root reads it without
                /// checking that it is symmetric. `dest`, `psync` and the active set are
                /// checked.
                pub unsafe extern "C" fn [<shmem_broadcast $bits>](dest: *mut c_void, source: *const c_void, nelems: usize, root: c_int, start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
                    const API: &str = stringify!([<shmem_broadcast $bits>]);
                    broadcast::<$t>(API, members(API, start, log_stride, size, psync), dest.cast(), source.cast(), nelems, root);
                }
            }
            export! {
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs): on an
                /// active set other than the whole world it is read without checking that
                /// it is symmetric. `dest`, `psync` and the active set are checked.
                pub unsafe extern "C" fn [<shmem_fcollect $bits>](dest: *mut c_void, source: *const c_void, nelems: usize, start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
                    const API: &str = stringify!([<shmem_fcollect $bits>]);
                    fcollect::<$t>(API, members(API, start, log_stride, size, psync), dest.cast(), source.cast(), nelems);
                }
            }
            export! {
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements (crate docs): on an
                /// active set other than the whole world it is read without checking that
                /// it is symmetric. `dest`, `psync` and the active set are checked.
                pub unsafe extern "C" fn [<shmem_collect $bits>](dest: *mut c_void, source: *const c_void, nelems: usize, start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
                    const API: &str = stringify!([<shmem_collect $bits>]);
                    collect::<$t>(API, members(API, start, log_stride, size, psync), dest.cast(), source.cast(), nelems);
                }
            }
            export! {
                /// # Safety
                /// `source` must be a local buffer of `nelems` elements for each member of
                /// the active set (crate docs): on a set other than the whole world it is
                /// read without checking that it is symmetric. `dest`, `psync` and the
                /// active set are checked.
                pub unsafe extern "C" fn [<shmem_alltoall $bits>](dest: *mut c_void, source: *const c_void, nelems: usize, start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
                    const API: &str = stringify!([<shmem_alltoall $bits>]);
                    alltoall::<$t>(API, members(API, start, log_stride, size, psync), dest.cast(), source.cast(), nelems);
                }
            }
            export! {
                /// # Safety
                /// `source + i * sst` must be a readable, aligned element for every `i`
                /// below `nelems` times the active set's size: on a set other than the
                /// whole world it is read without checking that it is symmetric. `dest`,
                /// `psync` and the active set are checked.
                pub unsafe extern "C" fn [<shmem_alltoalls $bits>](dest: *mut c_void, source: *const c_void, dst: isize, sst: isize, nelems: usize, start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
                    const API: &str = stringify!([<shmem_alltoalls $bits>]);
                    alltoalls::<$t>(API, members(API, start, log_stride, size, psync), dest.cast(), source.cast(), dst, sst, nelems);
                }
            }
        }
    };
}

sized_active!(32, u32);
sized_active!(64, u64);

/// A `_to_all` reduction with a Rust element type: the world team's
/// reduction, or a gathered one on another active set.
#[allow(clippy::too_many_arguments)]
pub fn to_all<T: oneside::Number, O: oneside::ReduceOp<T>>(
    api: &'static str,
    op: O,
    dest: *mut T,
    source: *const T,
    n: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    psync: *mut c_long,
) {
    let n = usize::try_from(n).unwrap_or(0);
    match members(api, start, log_stride, size, psync) {
        Members::World => coll::reduce(api, world(api).team_world(), op, dest, source, n),
        Members::Set(set) => {
            let mut combine = |acc: *mut u8, x: *const u8, n: usize| {
                for i in 0..n {
                    // SAFETY: `gather` passes buffers of `n` elements.
                    unsafe {
                        let a = acc.cast::<T>().add(i);
                        a.write_unaligned(O::combine(a.read_unaligned(), x.cast::<T>().add(i).read_unaligned()));
                    }
                }
            };
            coll::gather(
                api,
                &set,
                dest.cast(),
                source.cast(),
                n,
                std::mem::size_of::<T>(),
                &mut combine,
            );
        }
    }
}

/// A gathered `_to_all` reduction with a combiner (complex, `long double`).
#[allow(clippy::too_many_arguments)]
pub fn to_all_with(
    api: &'static str,
    dest: *mut u8,
    source: *const u8,
    n: c_int,
    elem: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    psync: *mut c_long,
    combine: &mut dyn FnMut(*mut u8, *const u8, usize),
) {
    let n = usize::try_from(n).unwrap_or(0);
    match members(api, start, log_stride, size, psync) {
        Members::World => coll::gather(api, world(api).team_world(), dest, source, n, elem, combine),
        Members::Set(set) => coll::gather(api, &set, dest, source, n, elem, combine),
    }
}

macro_rules! to_all_ops {
    ($n:ident, $t:ty, $($op:ident => $marker:ident),*) => {
        paste::paste! {$(
            export! {
                /// # Safety
                /// None for its arguments: `dest`, `source`, `psync` and the active set are
                /// checked (`pWrk` is not used).
                pub unsafe extern "C" fn [<shmem_ $n _ $op _to_all>](dest: *mut $t, source: *const $t, nreduce: c_int, start: c_int, log_stride: c_int, size: c_int, _pwrk: *mut $t, psync: *mut c_long) {
                    to_all(stringify!([<shmem_ $n _ $op _to_all>]), oneside::$marker, dest, source, nreduce, start, log_stride, size, psync);
                }
            }
        )*}
    };
}

macro_rules! int_to_all {
    ($n:ident, $t:ty, $c:literal) => {
        to_all_ops!($n, $t, and => And, or => Or, xor => Xor, min => Min, max => Max, sum => Sum, prod => Prod);
    };
}

macro_rules! float_to_all {
    ($n:ident, $t:ty, $c:literal) => {
        to_all_ops!($n, $t, min => Min, max => Max, sum => Sum, prod => Prod);
    };
}

macro_rules! complex_to_all {
    ($n:ident, $t:ty, $c:literal) => {
        paste::paste! {
            export! {
                /// # Safety
                /// None for its arguments: `dest`, `source`, `psync` and the active set are
                /// checked (`pWrk` is not used).
                pub unsafe extern "C" fn [<shmem_ $n _sum_to_all>](dest: *mut $t, source: *const $t, nreduce: c_int, start: c_int, log_stride: c_int, size: c_int, _pwrk: *mut $t, psync: *mut c_long) {
                    let mut c = coll::complex_combiner::<$t>(<$t as coll::Complex>::add);
                    to_all_with(stringify!([<shmem_ $n _sum_to_all>]), dest.cast(), source.cast(), nreduce, std::mem::size_of::<$t>(), start, log_stride, size, psync, &mut c);
                }
            }
            export! {
                /// # Safety
                /// None for its arguments: `dest`, `source`, `psync` and the active set are
                /// checked (`pWrk` is not used).
                pub unsafe extern "C" fn [<shmem_ $n _prod_to_all>](dest: *mut $t, source: *const $t, nreduce: c_int, start: c_int, log_stride: c_int, size: c_int, _pwrk: *mut $t, psync: *mut c_long) {
                    let mut c = coll::complex_combiner::<$t>(<$t as coll::Complex>::mul);
                    to_all_with(stringify!([<shmem_ $n _prod_to_all>]), dest.cast(), source.cast(), nreduce, std::mem::size_of::<$t>(), start, log_stride, size, psync, &mut c);
                }
            }
        }
    };
}

for_to_all_int_types!(int_to_all);
for_to_all_float_types!(float_to_all);
for_complex_types!(complex_to_all);

/// The `_to_all` reduction `shmem.h` uses for `long double`.
///
/// # Safety
/// `size` must be the size of the element `combine` works on, and
/// `combine` must combine `n` elements of two buffers of `n * size` bytes,
/// touching nothing else (it runs on this library's private buffers).
/// `dest` and `source`, of `nreduce * size` bytes, `psync` and the active
/// set are checked.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn oneside_to_all_with(
    dest: *mut c_void,
    source: *const c_void,
    nreduce: c_int,
    size: usize,
    start: c_int,
    log_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
    combine: coll::Combiner,
) {
    // SAFETY: the header's combiners handle exactly `n` elements.
    let mut c = |acc: *mut u8, x: *const u8, n: usize| unsafe { combine(acc.cast(), x.cast(), n) };
    to_all_with(
        "shmem_longdouble_to_all",
        dest.cast(),
        source.cast(),
        nreduce,
        size,
        start,
        log_stride,
        pe_size,
        psync,
        &mut c,
    );
}
