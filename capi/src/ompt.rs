//! Clang's OpenMP runtime (libomp, `__kmpc_*`) told to the race checker
//! (`oneside::race::threads`) through OMPT, the OpenMP tools interface,
//! as LLVM's Archer tells ThreadSanitizer. libomp calls
//! `ompt_start_tool` when it starts; this library's answers only while the
//! checker is asked for (`ONESIDE_CHECK_RACES`), and otherwise hands on to
//! the next library's, if any (another tool), else leaves libomp's tools
//! interface off. The callbacks are the same orderings
//! `omp` gives libgomp's entry points (GCC's OpenMP, which has no OMPT):
//! - a fork (`parallel_begin`) and each thread's part of it
//!   (`implicit_task`), the join (`parallel_end`);
//! - barriers, taskwaits and taskgroups (`sync_region`): a release on the
//!   team's word at the start, an acquire at the end;
//! - locks, critical sections, `ordered` and a locked atomic
//!   (`mutex_acquired`, `mutex_released`), on the address waited on;
//! - tasks (`task_create`, `task_schedule`): a task begins in its
//!   creator's view and publishes its own when it completes; a task with
//!   dependences also acquires what the team published;
//! - a `sections` construct (`work`, `dispatch`): each section a strand,
//!   where libomp tells each (not libomp 14: there a thread's sections
//!   are its own strand);
//! - a taskloop or a doacross loop, not modeled: views end with the team.
//!
//! libomp ends a worker's implicit task late, when the worker is woken
//! for the next team; its release to the join is the barrier's start.
//!
//! The data libomp keeps for the tool: a parallel region's holds its fork
//! stamp; an implicit task's the thread's view before it (even: `prev + 1`
//! shifted left); an explicit task's its creator's stamp (odd: `stamp << 2
//! | dependences << 1 | 1`).

// Each callback's safety is OMPT's contract: libomp calls it, with its
// own data for the region or task.
#![allow(clippy::missing_safety_doc)]

use oneside::race::threads;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// libomp's `ompt_data_t`: a word for the tool.
#[repr(C)]
pub union Data {
    value: u64,
    ptr: *mut c_void,
}

type Lookup = unsafe extern "C" fn(*const c_char) -> Option<unsafe extern "C" fn()>;
type SetCallback = unsafe extern "C" fn(c_int, unsafe extern "C" fn()) -> c_int;
type Initialize = unsafe extern "C" fn(Lookup, c_int, *mut Data) -> c_int;
type Finalize = unsafe extern "C" fn(*mut Data);

/// libomp's `ompt_start_tool_result_t`.
#[repr(C)]
pub struct StartToolResult {
    initialize: Initialize,
    finalize: Finalize,
    tool_data: Data,
}

// SAFETY: read by libomp only, never written after it is built.
unsafe impl Sync for StartToolResult {}

static TOOL: StartToolResult = StartToolResult {
    initialize,
    finalize,
    tool_data: Data { value: 0 },
};

/// OMPT's constants (omp-tools.h, OpenMP 5.1).
mod omp_tools {
    pub const SCOPE_BEGIN: u32 = 1;
    pub const SCOPE_END: u32 = 2;
    pub const TASK_INITIAL: i32 = 1;
    pub const TASK_COMPLETE: u32 = 1;
    pub const WORK_SECTIONS: u32 = 2;
    pub const WORK_TASKLOOP: u32 = 7;
    pub const DISPATCH_SECTION: u32 = 2;
    pub const DEPENDENCE_SOURCE: u32 = 7;
    pub const DEPENDENCE_SINK: u32 = 8;
    /// Barriers of every kind (1-4, 8-10), taskwait (5), taskgroup (6);
    /// not a reduction (7), whose own locks and atomics are told.
    pub fn orders_team(kind: u32) -> bool {
        matches!(kind, 1..=6 | 8..=10)
    }
}

/// Called by libomp as it starts: the tool, while the race checker is
/// asked for.
///
/// # Safety
///
/// OMPT's contract: called by the OpenMP runtime.
#[no_mangle]
pub unsafe extern "C" fn ompt_start_tool(omp_version: c_uint, runtime: *const c_char) -> *const StartToolResult {
    if threads::requested() {
        return &TOOL;
    }
    // The checker off, the turn of a tool whose library comes after this
    // one (a profiler linked after it), as Archer hands on: libomp asks
    // only the first `ompt_start_tool`, then OMP_TOOL_LIBRARIES'.
    type Start = unsafe extern "C" fn(c_uint, *const c_char) -> *const StartToolResult;
    // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT finds the
    // definition after this library's.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, c"ompt_start_tool".as_ptr()) };
    match next.is_null() || next as usize == ompt_start_tool as Start as usize {
        true => std::ptr::null(),
        // SAFETY: another library's `ompt_start_tool`, whose C type is
        // OMPT's; it is called as libomp would have called it.
        false => unsafe { std::mem::transmute::<*mut c_void, Start>(next)(omp_version, runtime) },
    }
}

/// Registers the callbacks; keeps the tool whether or not each is
/// supported (an unsupported one leaves its ordering unseen, as with a
/// construct not modeled).
unsafe extern "C" fn initialize(lookup: Lookup, _device: c_int, _data: *mut Data) -> c_int {
    // SAFETY: libomp's lookup, with a NUL-terminated name.
    let Some(set) = (unsafe { lookup(c"ompt_set_callback".as_ptr()) }) else {
        return 0;
    };
    // SAFETY: `ompt_set_callback` has this type (omp-tools.h).
    let set: SetCallback = unsafe { std::mem::transmute::<unsafe extern "C" fn(), SetCallback>(set) };
    macro_rules! register {
        ($($event:literal => $f:ident: $ty:ty;)*) => {$(
            // SAFETY: `$f` has the C type OMPT gives event `$event`; OMPT
            // passes callbacks as `void (*)(void)` and calls them as theirs.
            unsafe { set($event, std::mem::transmute::<$ty, unsafe extern "C" fn()>($f)) };
        )*};
    }
    type Mutex = unsafe extern "C" fn(u32, u64, *const c_void);
    // SAFETY: as below; `ompt_set_sometimes` (3) or better: supported.
    let sections = unsafe {
        set(
            32,
            std::mem::transmute::<unsafe extern "C" fn(*mut Data, *mut Data, u32, u64), unsafe extern "C" fn()>(
                dispatch,
            ),
        )
    };
    DISPATCH.store(sections >= 3, Relaxed);
    register! {
        3 => parallel_begin: unsafe extern "C" fn(*mut Data, *const c_void, *mut Data, c_uint, c_int, *const c_void);
        4 => parallel_end: unsafe extern "C" fn(*mut Data, *mut Data, c_int, *const c_void);
        5 => task_create: unsafe extern "C" fn(*mut Data, *const c_void, *mut Data, c_int, c_int, *const c_void);
        6 => task_schedule: unsafe extern "C" fn(*mut Data, u32, *mut Data);
        7 => implicit_task: unsafe extern "C" fn(u32, *mut Data, *mut Data, c_uint, c_uint, c_int);
        17 => mutex_released: Mutex;
        18 => dependences: unsafe extern "C" fn(*mut Data, *const Dependence, c_int);
        20 => work: unsafe extern "C" fn(u32, u32, *mut Data, *mut Data, u64, *const c_void);
        23 => sync_region: unsafe extern "C" fn(u32, u32, *mut Data, *mut Data, *const c_void);
        27 => mutex_acquired: Mutex;
    }
    1
}

unsafe extern "C" fn finalize(_data: *mut Data) {}

/// A fork, on the forking thread: its threads' stamp.
unsafe extern "C" fn parallel_begin(
    _task: *mut Data,
    _frame: *const c_void,
    parallel: *mut Data,
    _asked: c_uint,
    _flags: c_int,
    _code: *const c_void,
) {
    // SAFETY: libomp's data for the new region, the tool's to write.
    unsafe { (*parallel).value = threads::forked() };
}

/// The join, on the forking thread, whose view its implicit task's end
/// gave back.
unsafe extern "C" fn parallel_end(parallel: *mut Data, _task: *mut Data, _flags: c_int, _code: *const c_void) {
    // SAFETY: the region's data, written at its fork.
    let stamp = unsafe { (*parallel).value };
    threads::joined(stamp, threads::view());
}

/// A thread's part of a team begins or ends (the initial task is none).
unsafe extern "C" fn implicit_task(
    endpoint: u32,
    parallel: *mut Data,
    task: *mut Data,
    _threads: c_uint,
    _index: c_uint,
    flags: c_int,
) {
    if flags & omp_tools::TASK_INITIAL != 0 || task.is_null() {
        return;
    }
    match endpoint {
        omp_tools::SCOPE_BEGIN if !parallel.is_null() => {
            // SAFETY: the region's data, written at its fork (which
            // happens before its threads begin).
            let prev = threads::entered(unsafe { (*parallel).value });
            // SAFETY: the task's data, the tool's to write.
            unsafe { (*task).value = prev.wrapping_add(1) << 1 };
        }
        // SAFETY: the task's data, written at its beginning.
        omp_tools::SCOPE_END => threads::left((unsafe { (*task).value } >> 1).wrapping_sub(1)),
        _ => {}
    }
}

/// A barrier, taskwait or taskgroup: a release as it begins, an acquire
/// as it ends.
unsafe extern "C" fn sync_region(kind: u32, endpoint: u32, _p: *mut Data, _t: *mut Data, _code: *const c_void) {
    match endpoint {
        _ if !omp_tools::orders_team(kind) => {}
        omp_tools::SCOPE_BEGIN => threads::publish(threads::TEAM),
        omp_tools::SCOPE_END => threads::acquire(threads::TEAM),
        _ => {}
    }
}

unsafe extern "C" fn mutex_acquired(_kind: u32, wait: u64, _code: *const c_void) {
    threads::acquire(wait as usize);
}

unsafe extern "C" fn mutex_released(_kind: u32, wait: u64, _code: *const c_void) {
    threads::publish(wait as usize);
}

/// An explicit task is created: its creator's stamp, and whether it waits
/// for others.
unsafe extern "C" fn task_create(
    _task: *mut Data,
    _frame: *const c_void,
    new: *mut Data,
    flags: c_int,
    dependences: c_int,
    _code: *const c_void,
) {
    if flags & omp_tools::TASK_INITIAL != 0 || new.is_null() {
        return;
    }
    let stamp = threads::task_created();
    let value = match stamp {
        threads::OFF => 0,
        s => s << 2 | u64::from(dependences != 0) << 1 | 1,
    };
    // SAFETY: the new task's data, the tool's to write.
    unsafe { (*new).value = value };
}

/// A thread leaves `prior` (completed, or paused) for `next`: a completed
/// explicit task publishes; an explicit task begins in its creator's view.
unsafe extern "C" fn task_schedule(prior: *mut Data, status: u32, next: *mut Data) {
    // SAFETY: the tasks' data, written when they were created or began
    // (an implicit task's is even).
    let explicit = |d: *mut Data| (!d.is_null()).then(|| unsafe { (*d).value }).filter(|v| v & 1 == 1);
    if status == omp_tools::TASK_COMPLETE && explicit(prior).is_some() {
        threads::publish(threads::TEAM);
    }
    if let Some(v) = explicit(next) {
        threads::task_began(v >> 2);
        if v & 2 != 0 {
            threads::acquire(threads::TEAM);
        }
    }
}

/// libomp's `ompt_dependence_t`: the variable and the dependence's type.
#[repr(C)]
pub struct Dependence {
    variable: Data,
    kind: u32,
}

/// A doacross loop's waits and posts are not modeled.
unsafe extern "C" fn dependences(_task: *mut Data, deps: *const Dependence, count: c_int) {
    if deps.is_null() || count <= 0 {
        return;
    }
    // SAFETY: libomp passes `count` dependences at `deps`.
    let deps = unsafe { std::slice::from_raw_parts(deps, count as usize) };
    if deps
        .iter()
        .any(|d| d.kind == omp_tools::DEPENDENCE_SOURCE || d.kind == omp_tools::DEPENDENCE_SINK)
    {
        threads::unmodeled();
    }
}

/// Whether libomp tells each section it gives a thread (`dispatch`, from
/// OpenMP 5.1; not libomp 14's). Without it the sections a thread runs
/// are one strand, its own: a race between two of them is missed, never
/// invented.
static DISPATCH: AtomicBool = AtomicBool::new(false);

/// A worksharing construct: a `sections` construct's strands (where
/// sections are told), or a taskloop (not modeled).
unsafe extern "C" fn work(kind: u32, endpoint: u32, _p: *mut Data, _t: *mut Data, _count: u64, _code: *const c_void) {
    let sections = DISPATCH.load(Relaxed);
    match (kind, endpoint) {
        (omp_tools::WORK_SECTIONS, omp_tools::SCOPE_BEGIN) if sections => threads::sections_began(),
        (omp_tools::WORK_SECTIONS, omp_tools::SCOPE_END) if sections => {
            threads::next_section();
            threads::section_given(false);
        }
        (omp_tools::WORK_TASKLOOP, omp_tools::SCOPE_BEGIN) => threads::unmodeled(),
        _ => {}
    }
}

/// A section is given to the calling thread: it begins afresh.
unsafe extern "C" fn dispatch(_p: *mut Data, _t: *mut Data, kind: u32, _instance: u64) {
    if kind == omp_tools::DISPATCH_SECTION {
        threads::next_section();
    }
}
