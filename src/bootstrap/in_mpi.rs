//! The program's own MPI library, found in the process at run time (no
//! build of oneside links against MPI): whether MPI is linked, initialized
//! or finalized, and which rank of how many `MPI_COMM_WORLD` says this
//! process is. oneside promises that a PE number equals the process's
//! `MPI_COMM_WORLD` rank; [`super::mpi_agree`] holds it to that, and
//! [`super::mpi_library`] says which MPI this is.
//!
//! `MPI_Initialized` and `MPI_Finalized` take an `int *` in every MPI. The
//! communicator handle differs: a pointer to `ompi_mpi_comm_world` in Open
//! MPI, the integer `0x44000000` in MPICH and its derivatives (Intel MPI,
//! MVAPICH, Cray MPICH); both travel in one argument register.

use std::ffi::{c_int, c_void, CStr};

/// MPICH's `MPI_COMM_WORLD`.
const MPICH_COMM_WORLD: usize = 0x4400_0000;

type Query = unsafe extern "C" fn(*mut c_int) -> c_int;
type CommQuery = unsafe extern "C" fn(usize, *mut c_int) -> c_int;

/// A symbol of the whole process (the program and what it linked).
pub(super) fn symbol(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym on the default scope with a C string.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// Calls `MPI_Initialized` or `MPI_Finalized`; `None` without MPI.
fn ask(name: &CStr) -> Option<bool> {
    let f = symbol(name);
    if f.is_null() {
        return None;
    }
    // SAFETY: both functions are `int f(int *flag)` in every MPI and may be
    // called at any time, even before MPI_Init and after MPI_Finalize.
    let f: Query = unsafe { std::mem::transmute::<*mut c_void, Query>(f) };
    let mut flag: c_int = 0;
    // SAFETY: a valid out-pointer.
    (unsafe { f(&mut flag) } == 0).then_some(flag != 0)
}

/// True when the process has an MPI library in it.
pub(crate) fn linked() -> bool {
    !symbol(c"MPI_Init").is_null()
}

/// True when MPI is initialized and not yet finalized.
pub(crate) fn active() -> bool {
    ask(c"MPI_Initialized") == Some(true) && ask(c"MPI_Finalized") == Some(false)
}

/// True when MPI has been finalized.
pub(crate) fn finalized() -> bool {
    ask(c"MPI_Finalized") == Some(true)
}

/// `MPI_COMM_WORLD`'s rank and size for this process, while MPI is active.
pub(crate) fn world() -> Option<(usize, usize)> {
    if !active() {
        return None;
    }
    let ompi = open_mpi_world();
    let comm = match ompi.is_null() {
        true => MPICH_COMM_WORLD,
        false => ompi as usize,
    };
    let (rank_fn, size_fn) = (symbol(c"MPI_Comm_rank"), symbol(c"MPI_Comm_size"));
    if rank_fn.is_null() || size_fn.is_null() {
        return None;
    }
    // SAFETY: `int MPI_Comm_rank(MPI_Comm, int *)` and `MPI_Comm_size`,
    // with the MPI's own world handle (see the module docs).
    let (rank_fn, size_fn) = unsafe {
        (
            std::mem::transmute::<*mut c_void, CommQuery>(rank_fn),
            std::mem::transmute::<*mut c_void, CommQuery>(size_fn),
        )
    };
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: as above, valid out-pointers.
    let ok = unsafe { rank_fn(comm, &mut rank) == 0 && size_fn(comm, &mut size) == 0 };
    (ok && rank >= 0 && size > 0).then_some((rank as usize, size as usize))
}

/// Open MPI's `MPI_COMM_WORLD`, or null in any other MPI.
fn open_mpi_world() -> *mut c_void {
    symbol(c"ompi_mpi_comm_world")
}
