//! Team collectives of OpenSHMEM 1.5 (and the 1.6 scans): `team_sync`,
//! broadcast, collect, fcollect, alltoall(s) in typed and `mem` forms,
//! and every typed reduction, on the Rust API's team collectives.
//!
//! Complex reductions, and `long double` ones (through the `oneside_*_with`
//! entry points that `shmem.h`'s inline functions call with a C combiner),
//! have no Rust element type; they go through `gather`: every member reads
//! every member's source and combines them in member order.

use crate::convert::sym;
use crate::state::{fail, ok, world};
use crate::teams::{team_handle, ShmemTeam};
use crate::types::{ComplexD, ComplexF};
use libc::{c_int, c_void};
use oneside::prelude::*;
use oneside::{Pod, ReduceOp, Team, World};

export! {
    /// # Safety
    /// `team` must be a live team (crate docs).
    pub unsafe extern "C" fn shmem_team_sync(team: ShmemTeam) -> c_int {
        const API: &str = "shmem_team_sync";
        ok(API, world(API).team_sync(team_handle(API, team)));
        0
    }
}

fn root(api: &'static str, root: c_int) -> usize {
    usize::try_from(root).unwrap_or_else(|_| fail(api, &format!("root PE {root} is negative")))
}

pub fn broadcast<T: Pod>(api: &'static str, team: &Team, dest: *mut T, source: *const T, n: usize, pe_root: c_int) {
    let w = world(api);
    let (d, s) = (sym(api, w, dest, n), sym(api, w, source, n));
    ok(api, w.broadcast(team, &d, &s, n, root(api, pe_root)));
}

/// OpenSHMEM 1.4's broadcast: the root's `dest` is not written.
pub fn broadcast_to_others<T: Pod>(
    api: &'static str,
    team: &Team,
    dest: *mut T,
    source: *const T,
    n: usize,
    pe_root: c_int,
) {
    let w = world(api);
    let (d, s) = (sym(api, w, dest, n), sym(api, w, source, n));
    ok(api, w.broadcast_to_others(team, &d, &s, n, root(api, pe_root)));
}

/// Whether `[a, a + a_len)` and `[b, b + b_len)` (in elements) overlap.
fn overlap<T>(a: *const T, a_len: usize, b: *const T, b_len: usize) -> bool {
    let size = std::mem::size_of::<T>();
    let (a, b) = (a as usize, b as usize);
    a_len > 0 && b_len > 0 && a < b + b_len * size && b < a + a_len * size
}

/// Overlapping objects are outside the specification, yet some programs
/// pass a destination that runs into the source. Sandia OpenSHMEM writes
/// on regardless, so this does too, rather than refusing the call: every
/// member puts `parts(member)` (index in `dest`, elements) to each member,
/// between a sync and a barrier. The source is read before the sync.
fn by_puts<T: Pod>(
    api: &'static str,
    team: &Team,
    dest: *mut T,
    dest_len: usize,
    parts: impl Fn(usize) -> Vec<(usize, Vec<T>)>,
) {
    let w = world(api);
    let into = sym(api, w, dest, dest_len);
    let all: Vec<_> = (0..team.n_pes()).map(parts).collect();
    ok(api, w.team_sync(team));
    for (member, blocks) in all.iter().enumerate() {
        let rank = Team::world_rank(team, member).expect("a member index below n_pes");
        for (at, data) in blocks {
            ok(api, w.put(&into, rank, *at, data));
        }
    }
    ok(api, w.team_barrier(team));
}

pub fn fcollect<T: Pod>(api: &'static str, team: &Team, dest: *mut T, source: *const T, n: usize) {
    let w = world(api);
    let npes = team.n_pes();
    if overlap(dest, n * npes, source, n) {
        // SAFETY: the caller's source holds `n` elements.
        let mine = unsafe { crate::convert::src(source, n) }.to_vec();
        return by_puts(api, team, dest, n * npes, |_| vec![(team.my_pe() * n, mine.clone())]);
    }
    let (d, s) = (sym(api, w, dest, n * team.n_pes()), sym(api, w, source, n));
    ok(api, w.fcollect(team, &d, &s, n));
}

pub fn collect<T: Pod>(api: &'static str, team: &Team, dest: *mut T, source: *const T, n: usize) {
    let w = world(api);
    // The destination's extent is the sum of every member's count.
    let mut counts = vec![0u64; team.n_pes()];
    counts[team.my_pe()] = n as u64;
    ok(api, w.reduce_values(team, oneside::Sum, &mut counts));
    let total = counts.iter().sum::<u64>() as usize;
    let size = std::mem::size_of::<T>();
    let (d, s) = (dest as usize, source as usize);
    if d < s + n * size && s < d + total * size {
        let at = counts[..team.my_pe()].iter().sum::<u64>() as usize;
        // SAFETY: the caller's source holds `n` elements.
        let mine = unsafe { crate::convert::src(source, n) }.to_vec();
        return by_puts(api, team, dest, total, |_| vec![(at, mine.clone())]);
    }
    ok(
        api,
        w.collect(team, &sym(api, w, dest, total), &sym(api, w, source, n), n),
    );
}

pub fn alltoall<T: Pod>(api: &'static str, team: &Team, dest: *mut T, source: *const T, n: usize) {
    let w = world(api);
    let all = n * team.n_pes();
    if overlap(dest, all, source, all) {
        let me = team.my_pe();
        // SAFETY: the caller's source holds `all` elements.
        let mine = unsafe { crate::convert::src(source, all) };
        return by_puts(api, team, dest, all, |to| {
            vec![(me * n, mine[to * n..(to + 1) * n].to_vec())]
        });
    }
    ok(
        api,
        w.alltoall(team, &sym(api, w, dest, all), &sym(api, w, source, all), n),
    );
}

pub fn alltoalls<T: Pod>(
    api: &'static str,
    team: &Team,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    n: usize,
) {
    let stride = |s: isize| usize::try_from(s).unwrap_or_else(|_| fail(api, &format!("stride {s} is negative")));
    let (dst, sst) = (stride(dst), stride(sst));
    let w = world(api);
    let span = |s: usize| match n * team.n_pes() {
        0 => 0,
        count => (count - 1) * s + 1,
    };
    if overlap(dest, span(dst), source, span(sst)) {
        let me = team.my_pe();
        let element = |i: usize| {
            // SAFETY: the caller's source holds `span(sst)` elements.
            unsafe { source.add(i * sst).read_unaligned() }
        };
        return by_puts(api, team, dest, span(dst), |to| {
            (0..n)
                .map(|k| ((me * n + k) * dst, vec![element(to * n + k)]))
                .collect()
        });
    }
    let (d, s) = (sym(api, w, dest, span(dst)), sym(api, w, source, span(sst)));
    ok(api, w.alltoalls(team, &d, &s, dst, sst, n));
}

macro_rules! data_coll {
    ($n:tt, $t:ty, $c:literal) => {
        paste::paste! {
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs); `dest` and `source` are
                /// checked.
                pub unsafe extern "C" fn [<shmem_ $n _broadcast>](team: ShmemTeam, dest: *mut $t, source: *const $t, nelems: usize, pe_root: c_int) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _broadcast>]);
                    broadcast(API, team_handle(API, team), dest, source, nelems, pe_root);
                    0
                }
            }
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs). `dest` and `source` are
                /// checked, but where they overlap (which the specification forbids and
                /// this library accepts) `source` is read first, so it must then be a local
                /// buffer of `nelems` elements.
                pub unsafe extern "C" fn [<shmem_ $n _collect>](team: ShmemTeam, dest: *mut $t, source: *const $t, nelems: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _collect>]);
                    collect(API, team_handle(API, team), dest, source, nelems);
                    0
                }
            }
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs). `dest` and `source` are
                /// checked, but where they overlap (which the specification forbids and
                /// this library accepts) `source` is read first, so it must then be a local
                /// buffer of `nelems` elements.
                pub unsafe extern "C" fn [<shmem_ $n _fcollect>](team: ShmemTeam, dest: *mut $t, source: *const $t, nelems: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _fcollect>]);
                    fcollect(API, team_handle(API, team), dest, source, nelems);
                    0
                }
            }
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs). `dest` and `source` are
                /// checked, but where they overlap (which the specification forbids and
                /// this library accepts) `source` is read first, so it must then be a local
                /// buffer of `nelems` elements for each member of the team.
                pub unsafe extern "C" fn [<shmem_ $n _alltoall>](team: ShmemTeam, dest: *mut $t, source: *const $t, nelems: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _alltoall>]);
                    alltoall(API, team_handle(API, team), dest, source, nelems);
                    0
                }
            }
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs). `dest` and `source` are
                /// checked, but where they overlap (which the specification forbids and
                /// this library accepts) `source` is read first, so it must then hold every
                /// element the call reads, `source + i * sst` for `i` below `nelems` times
                /// the team's size.
                pub unsafe extern "C" fn [<shmem_ $n _alltoalls>](team: ShmemTeam, dest: *mut $t, source: *const $t, dst: isize, sst: isize, nelems: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _alltoalls>]);
                    alltoalls(API, team_handle(API, team), dest, source, dst, sst, nelems);
                    0
                }
            }
        }
    };
}

for_rma_types!(data_coll);

/// The `mem` forms (`shmem_broadcastmem`): the byte form of each call.
macro_rules! mem_coll {
    ($($name:ident => $generic:ident($($arg:ident: $ty:ty),*);)*) => {$(
        export! {
            /// The byte form of the typed call.
            ///
            /// # Safety
            /// As the typed call's: `team` must be a live team (crate docs);
            /// `dest` and `source` are checked, but where they overlap (which
            /// the specification forbids and this library accepts) the
            /// collect, fcollect and alltoall forms read `source` first, so
            /// it must then hold every byte the call reads.
            pub unsafe extern "C" fn $name(team: ShmemTeam, dest: *mut c_void, source: *const c_void, $($arg: $ty),*) -> c_int {
                const API: &str = stringify!($name);
                $generic::<u8>(API, team_handle(API, team), dest.cast(), source.cast(), $($arg),*);
                0
            }
        }
    )*};
}

mem_coll! {
    shmem_broadcastmem => broadcast(nelems: usize, pe_root: c_int);
    shmem_collectmem => collect(nelems: usize);
    shmem_fcollectmem => fcollect(nelems: usize);
    shmem_alltoallmem => alltoall(nelems: usize);
    shmem_alltoallsmem => alltoalls(dst: isize, sst: isize, nelems: usize);
}

pub fn reduce<T: oneside::Number, O: ReduceOp<T>>(
    api: &'static str,
    team: &Team,
    op: O,
    dest: *mut T,
    source: *const T,
    n: usize,
) {
    let w = world(api);
    ok(
        api,
        w.reduce(team, op, &sym(api, w, dest, n), &sym(api, w, source, n), n),
    );
}

macro_rules! reduce_ops {
    ($n:ident, $t:ty, $($op:ident => $marker:ident),*) => {
        paste::paste! {$(
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs); `dest` and `source` are
                /// checked.
                pub unsafe extern "C" fn [<shmem_ $n _ $op _reduce>](team: ShmemTeam, dest: *mut $t, source: *const $t, nreduce: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _ $op _reduce>]);
                    reduce(API, team_handle(API, team), oneside::$marker, dest, source, nreduce);
                    0
                }
            }
        )*}
    };
}

macro_rules! bitwise_reduce {
    ($n:ident, $t:ty, $c:literal) => {
        reduce_ops!($n, $t, and => And, or => Or, xor => Xor);
    };
}

macro_rules! arith_reduce {
    ($n:ident, $t:ty, $c:literal) => {
        reduce_ops!($n, $t, min => Min, max => Max, sum => Sum, prod => Prod);
        paste::paste! {
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs); `dest` and `source` are
                /// checked.
                pub unsafe extern "C" fn [<shmem_ $n _sum_inscan>](team: ShmemTeam, dest: *mut $t, source: *const $t, nelems: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _sum_inscan>]);
                    let w = world(API);
                    ok(API, w.inscan(team_handle(API, team), oneside::Sum, &sym(API, w, dest, nelems), &sym(API, w, source, nelems), nelems));
                    0
                }
            }
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs); `dest` and `source` are
                /// checked.
                pub unsafe extern "C" fn [<shmem_ $n _sum_exscan>](team: ShmemTeam, dest: *mut $t, source: *const $t, nelems: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _sum_exscan>]);
                    let w = world(API);
                    ok(API, w.exscan(team_handle(API, team), oneside::Sum, &sym(API, w, dest, nelems), &sym(API, w, source, nelems), nelems));
                    0
                }
            }
        }
    };
}

for_bitwise_reduce_types!(bitwise_reduce);
for_arith_reduce_types!(arith_reduce);

/// Who takes part in a gathered reduction, and how they meet.
pub trait Group {
    fn size(&self) -> usize;
    fn world_rank(&self, member: usize) -> usize;
    fn sync(&self, api: &'static str, w: &World);
}

impl Group for Team {
    fn size(&self) -> usize {
        self.n_pes()
    }
    fn world_rank(&self, member: usize) -> usize {
        Team::world_rank(self, member).expect("a member index below n_pes")
    }
    fn sync(&self, api: &'static str, w: &World) {
        ok(api, w.team_sync(self));
    }
}

/// Reduces `n` elements of `size` bytes by reading every member's source:
/// after a sync (every source is ready), member by member in order into a
/// private accumulator; after another sync (no one still reads a source
/// that `dest` may alias), into `dest`.
pub fn gather(
    api: &'static str,
    group: &dyn Group,
    dest: *mut u8,
    source: *const u8,
    n: usize,
    size: usize,
    combine: &mut dyn FnMut(*mut u8, *const u8, usize),
) {
    let w = world(api);
    let bytes = n * size;
    let from = sym(api, w, source, bytes);
    sym(api, w, dest.cast_const(), bytes);
    group.sync(api, w);
    let mut acc = vec![0u8; bytes];
    let mut next = vec![0u8; bytes];
    for member in 0..group.size() {
        let into = match member {
            0 => &mut acc,
            _ => &mut next,
        };
        ok(api, w.get(&from, group.world_rank(member), 0, into));
        if member > 0 {
            combine(acc.as_mut_ptr(), next.as_ptr(), n);
        }
    }
    group.sync(api, w);
    // SAFETY: `dest` was checked to hold `bytes` bytes of this rank's memory.
    unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dest, bytes) };
}

/// A C combiner from `shmem.h`: `acc[i] = acc[i] op x[i]` for `n` elements.
pub type Combiner = unsafe extern "C" fn(acc: *mut c_void, x: *const c_void, n: usize);

/// The team reduction `shmem.h` uses for `long double`.
///
/// # Safety
/// `team` must be a live team (crate docs); `size` must be the size of the
/// element `combine` works on, and `combine` must combine `n` elements of
/// two buffers of `n * size` bytes, touching nothing else (it runs on this
/// library's private buffers). `dest` and `source`, of `nreduce * size`
/// bytes, are checked.
#[no_mangle]
pub unsafe extern "C" fn oneside_reduce_with(
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    nreduce: usize,
    size: usize,
    combine: Combiner,
) -> c_int {
    const API: &str = "shmem_longdouble_reduce";
    // SAFETY: the header's combiners handle exactly `n` elements.
    let mut c = |acc: *mut u8, x: *const u8, n: usize| unsafe { combine(acc.cast(), x.cast(), n) };
    gather(
        API,
        team_handle(API, team),
        dest.cast(),
        source.cast(),
        nreduce,
        size,
        &mut c,
    );
    0
}

/// Element-wise complex arithmetic on `[re, im]` pairs.
pub trait Complex: Pod {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
}

macro_rules! complex {
    ($t:ty) => {
        impl Complex for $t {
            fn add(a: Self, b: Self) -> Self {
                [a[0] + b[0], a[1] + b[1]]
            }
            fn mul(a: Self, b: Self) -> Self {
                [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]]
            }
        }
    };
}
complex!(ComplexF);
complex!(ComplexD);

/// Combines complex arrays with `f`.
pub fn complex_combiner<T: Complex>(f: fn(T, T) -> T) -> impl FnMut(*mut u8, *const u8, usize) {
    move |acc, x, n| {
        for i in 0..n {
            // SAFETY: `gather` passes buffers of `n` elements.
            unsafe {
                let a = acc.cast::<T>().add(i);
                a.write_unaligned(f(a.read_unaligned(), x.cast::<T>().add(i).read_unaligned()));
            }
        }
    }
}

macro_rules! complex_reduce {
    ($n:ident, $t:ty, $c:literal) => {
        paste::paste! {
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs); `dest` and `source` are
                /// checked.
                pub unsafe extern "C" fn [<shmem_ $n _sum_reduce>](team: ShmemTeam, dest: *mut $t, source: *const $t, nreduce: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _sum_reduce>]);
                    let mut c = complex_combiner::<$t>(<$t as Complex>::add);
                    gather(API, team_handle(API, team), dest.cast(), source.cast(), nreduce, std::mem::size_of::<$t>(), &mut c);
                    0
                }
            }
            export! {
                /// # Safety
                /// `team` must be a live team (crate docs); `dest` and `source` are
                /// checked.
                pub unsafe extern "C" fn [<shmem_ $n _prod_reduce>](team: ShmemTeam, dest: *mut $t, source: *const $t, nreduce: usize) -> c_int {
                    const API: &str = stringify!([<shmem_ $n _prod_reduce>]);
                    let mut c = complex_combiner::<$t>(<$t as Complex>::mul);
                    gather(API, team_handle(API, team), dest.cast(), source.cast(), nreduce, std::mem::size_of::<$t>(), &mut c);
                    0
                }
            }
        }
    };
}

for_complex_types!(complex_reduce);
