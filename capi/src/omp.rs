//! OpenMP's orderings, for the race checker (`oneside::race::threads`).
//! GCC compiles OpenMP constructs into calls to libgomp (`GOMP_parallel`,
//! `GOMP_barrier`, `GOMP_task`, ...); a program linked with this library
//! before libgomp (as `oshcc` links it: `-fopenmp` puts libgomp last)
//! calls these instead, which tell the checker who forked, waited or
//! locked, then call libgomp's own, found once (`next`).
//! With the checker off each is that call and nothing more.
//!
//! Clang's OpenMP runtime (libomp, `__kmpc_*`) is told through its tools
//! interface instead (`ompt`).

use oneside::race::threads;
use std::ffi::{c_int, c_uint, c_void};

type Body = unsafe extern "C" fn(*mut c_void);
type Copy = unsafe extern "C" fn(*mut c_void, *mut c_void);

/// libgomp's `$name`, of C type `$ty`.
macro_rules! gomp {
    ($name:ident: $ty:ty) => {
        real!($name: $ty, c"libgomp.so.1")
    };
}

/// Entries that order a team's threads: a release on a sync word before
/// libgomp's call, an acquire on it after (a barrier's two halves; a
/// lock's release or acquire alone is either, and the other half only
/// adds order). The word: the team's, or the address synchronized on.
macro_rules! ordering {
    ($($name:ident($($arg:ident: $t:ty),*) $(-> $ret:ty)? => $key:expr;)*) => {$(
        /// libgomp's own, with the checker told of the ordering.
        ///
        /// # Safety
        ///
        /// libgomp's contract for the same call.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $t),*) $(-> $ret)? {
            let key: usize = $key;
            threads::publish(key);
            let real = gomp!($name: unsafe extern "C" fn($($t),*) $(-> $ret)?);
            // SAFETY: libgomp's own, with the program's arguments.
            let result = unsafe { real($($arg),*) };
            threads::acquire(key);
            result
        }
    )*};
}

/// The words of the unnamed critical section, `omp atomic`'s lock and
/// `ordered`: addresses of this library's own.
static CRITICAL: u8 = 0;
static ATOMIC: u8 = 0;
static ORDERED: u8 = 0;

fn at<T>(x: &'static T) -> usize {
    x as *const T as usize
}

ordering! {
    GOMP_barrier() => threads::TEAM;
    GOMP_barrier_cancel() -> bool => threads::TEAM;
    GOMP_loop_end() => threads::TEAM;
    GOMP_loop_end_cancel() -> bool => threads::TEAM;
    GOMP_sections_end() => threads::TEAM;
    GOMP_sections_end_cancel() -> bool => threads::TEAM;
    GOMP_taskwait() => threads::TEAM;
    GOMP_taskgroup_end() => threads::TEAM;
    GOMP_single_copy_start() -> *mut c_void => threads::TEAM;
    GOMP_single_copy_end(data: *mut c_void) => threads::TEAM;
    GOMP_critical_start() => at(&CRITICAL);
    GOMP_critical_end() => at(&CRITICAL);
    GOMP_critical_name_start(name: *mut *mut c_void) => name as usize;
    GOMP_critical_name_end(name: *mut *mut c_void) => name as usize;
    GOMP_atomic_start() => at(&ATOMIC);
    GOMP_atomic_end() => at(&ATOMIC);
    GOMP_ordered_start() => at(&ORDERED);
    GOMP_ordered_end() => at(&ORDERED);
    omp_set_lock(lock: *mut c_void) => lock as usize;
    omp_unset_lock(lock: *mut c_void) => lock as usize;
    omp_test_lock(lock: *mut c_void) -> c_int => lock as usize;
    omp_set_nest_lock(lock: *mut c_void) => lock as usize;
    omp_unset_nest_lock(lock: *mut c_void) => lock as usize;
    omp_test_nest_lock(lock: *mut c_void) -> c_int => lock as usize;
}

/// A `sections` construct: each section begins in the view the thread had
/// at the construct (sections are unordered with each other).
///
/// # Safety
///
/// libgomp's contract for the same call.
#[no_mangle]
pub unsafe extern "C" fn GOMP_sections_start(count: c_uint) -> c_uint {
    threads::sections_began();
    let real = gomp!(GOMP_sections_start: unsafe extern "C" fn(c_uint) -> c_uint);
    // SAFETY: libgomp's own, with the program's argument.
    unsafe { real(count) }
}

/// The next section, begun afresh.
///
/// # Safety
///
/// libgomp's contract for the same call.
#[no_mangle]
pub unsafe extern "C" fn GOMP_sections_next() -> c_uint {
    threads::next_section();
    let real = gomp!(GOMP_sections_next: unsafe extern "C" fn() -> c_uint);
    // SAFETY: as above.
    let next = unsafe { real() };
    threads::section_given(next != 0);
    next
}

/// Entries whose orderings the checker does not model (a taskloop's tasks,
/// a doacross loop's waits): views are off until the team ends.
macro_rules! unmodeled {
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        /// libgomp's own, after views are turned off.
        ///
        /// # Safety
        ///
        /// libgomp's contract for the same call.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $t),*) {
            threads::unmodeled();
            let real = gomp!($name: unsafe extern "C" fn($($t),*));
            // SAFETY: libgomp's own, with the program's arguments.
            unsafe { real($($arg),*) }
        }
    )*};
}

unmodeled! {
    GOMP_taskloop(f: Body, d: *mut c_void, c: Option<Copy>, size: i64, align: i64, flags: c_uint, n: u64, prio: c_int, start: i64, end: i64, step: i64);
    GOMP_taskloop_ull(f: Body, d: *mut c_void, c: Option<Copy>, size: i64, align: i64, flags: c_uint, n: u64, prio: c_int, start: u64, end: u64, step: u64);
    GOMP_doacross_post(counts: *mut i64);
    GOMP_doacross_ull_post(counts: *mut u64);
}

/// What a team's threads run instead of the program's body: the body, in
/// the view the forking thread had.
#[repr(C)]
struct Region {
    body: Body,
    data: *mut c_void,
    stamp: u64,
}

/// # Safety
///
/// `region` is a [`Region`] that outlives the call.
unsafe extern "C" fn region(region: *mut c_void) {
    // SAFETY: `fork` passes its `Region`, which outlives the team.
    let r = unsafe { &*(region as *const Region) };
    let prev = threads::entered(r.stamp);
    // SAFETY: the program's own body and data, as it gave them.
    unsafe { (r.body)(r.data) };
    threads::left(prev);
}

/// Runs `start` (libgomp's fork, given a body and its data) with the
/// program's `body` and `data` wrapped in a [`Region`].
fn fork(body: Body, data: *mut c_void, start: impl FnOnce(Body, *mut c_void)) {
    let stamp = threads::forked();
    if stamp == threads::OFF {
        return start(body, data);
    }
    let prev = threads::view();
    let mut r = Region { body, data, stamp };
    start(region, (&mut r as *mut Region).cast());
    threads::joined(stamp, prev);
}

/// The forks: `GOMP_parallel` and its combined forms, each `(body, data,
/// threads, ...)`.
macro_rules! forks {
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        /// libgomp's fork, its threads in the forking thread's view.
        ///
        /// # Safety
        ///
        /// libgomp's contract for the same call.
        #[no_mangle]
        pub unsafe extern "C" fn $name(body: Body, data: *mut c_void, $($arg: $t),*) {
            let real = gomp!($name: unsafe extern "C" fn(Body, *mut c_void, $($t),*));
            // SAFETY: libgomp's fork, with the program's arguments or a
            // `Region` around its body.
            fork(body, data, |b, d| unsafe { real(b, d, $($arg),*) });
        }
    )*};
}

forks! {
    GOMP_parallel(threads: c_uint, flags: c_uint);
    GOMP_parallel_sections(threads: c_uint, count: c_uint, flags: c_uint);
    GOMP_parallel_loop_static(threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_dynamic(threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_guided(threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_nonmonotonic_dynamic(threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_nonmonotonic_guided(threads: c_uint, start: i64, end: i64, incr: i64, chunk: i64, flags: c_uint);
    GOMP_parallel_loop_runtime(threads: c_uint, start: i64, end: i64, incr: i64, flags: c_uint);
    GOMP_parallel_loop_nonmonotonic_runtime(threads: c_uint, start: i64, end: i64, incr: i64, flags: c_uint);
    GOMP_parallel_loop_maybe_nonmonotonic_runtime(threads: c_uint, start: i64, end: i64, incr: i64, flags: c_uint);
}

/// What a task carries ahead of the program's data: the program's body,
/// copy function and data, where its copy of the data begins, and the
/// creating thread's view.
#[repr(C)]
struct Head {
    body: Body,
    copy: Option<Copy>,
    data: *mut c_void,
    offset: usize,
    stamp: u64,
}

/// # Safety
///
/// `arg` is a [`Head`] followed by the program's data at its `offset`.
unsafe extern "C" fn task(arg: *mut c_void) {
    // SAFETY: libgomp passes the `Head` `GOMP_task` made, or its copy.
    let (body, offset, stamp) = unsafe {
        let h = &*(arg as *const Head);
        (h.body, h.offset, h.stamp)
    };
    threads::task_began(stamp);
    // SAFETY: the program's data follows at `offset`, as its body expects.
    unsafe { body(arg.cast::<u8>().add(offset).cast()) };
    threads::publish(threads::TEAM);
}

/// # Safety
///
/// `from` is a [`Head`]; `to` has room for it and the program's data.
unsafe extern "C" fn copy_task(to: *mut c_void, from: *mut c_void) {
    // SAFETY: `from` is the `Head` `GOMP_task` made, whose `copy` is set;
    // `to` has room for the head and the program's data after it.
    unsafe {
        let h = &*(from as *const Head);
        (to as *mut Head).write(Head { ..*h });
        if let Some(copy) = h.copy {
            copy(to.cast::<u8>().add(h.offset).cast(), h.data);
        }
    }
}

/// Flags of a task whose data libgomp only copies and passes to its body
/// (untied, final, mergeable, depend, priority, if): others (detach,
/// reductions) are passed as they are and views end with the team.
const PLAIN_TASK: c_uint = 0x1f | 1 << 10;

/// A task: its body begins in its creator's view and publishes its own
/// at its end, for a taskwait or barrier to acquire.
///
/// # Safety
///
/// libgomp's contract for the same call.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn GOMP_task(
    body: Body,
    data: *mut c_void,
    copy: Option<Copy>,
    size: i64,
    align: i64,
    if_clause: bool,
    flags: c_uint,
    depend: *mut *mut c_void,
    priority: c_int,
    detach: *mut c_void,
) {
    type Real = unsafe extern "C" fn(
        Body,
        *mut c_void,
        Option<Copy>,
        i64,
        i64,
        bool,
        c_uint,
        *mut *mut c_void,
        c_int,
        *mut c_void,
    );
    let real = gomp!(GOMP_task: Real);
    let stamp = threads::task_created();
    // The buffer that carries a `Head` before the program's data, aligned
    // as the data asks (and as a `Head` needs).
    let wrapped = (stamp != threads::OFF && flags & !PLAIN_TASK == 0 && size >= 0 && align >= 1)
        .then(|| {
            let align = (align as usize).max(std::mem::align_of::<Head>());
            let offset = std::mem::size_of::<Head>().next_multiple_of(align);
            std::alloc::Layout::from_size_align(offset + size as usize, align)
                .ok()
                .map(|layout| (layout, offset))
        })
        .flatten();
    let Some((layout, offset)) = wrapped else {
        if stamp != threads::OFF {
            threads::unmodeled();
        }
        // SAFETY: the program's own call.
        return unsafe {
            real(
                body, data, copy, size, align, if_clause, flags, depend, priority, detach,
            )
        };
    };
    // SAFETY: a non-zero size (the head); written below before use.
    let buffer = unsafe { std::alloc::alloc(layout) };
    if buffer.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `buffer` holds the head and `size` bytes after `offset`;
    // without a copy function libgomp copies (or passes) those bytes, so
    // they are the program's data.
    unsafe {
        (buffer as *mut Head).write(Head {
            body,
            copy,
            data,
            offset,
            stamp,
        });
        if copy.is_none() && size > 0 {
            std::ptr::copy_nonoverlapping(data.cast::<u8>(), buffer.add(offset), size as usize);
        }
        let copier = copy.map(|_| copy_task as Copy);
        real(
            task,
            buffer.cast(),
            copier,
            layout.size() as i64,
            layout.align() as i64,
            if_clause,
            flags,
            depend,
            priority,
            detach,
        );
        std::alloc::dealloc(buffer, layout);
    }
}
