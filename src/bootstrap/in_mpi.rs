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

use std::ffi::{c_int, c_void, CStr, CString};

/// MPICH's `MPI_COMM_WORLD`.
const MPICH_COMM_WORLD: usize = 0x4400_0000;

type Query = unsafe extern "C" fn(*mut c_int) -> c_int;
type CommQuery = unsafe extern "C" fn(usize, *mut c_int) -> c_int;

/// A symbol of the process's MPI: in the global scope (a program that links
/// MPI), else in an MPI library loaded with `RTLD_LOCAL`. Python loads
/// extension modules so: mpi4py's `libmpi` is in no global scope, yet it is
/// this process's MPI, and it shares `PMI_FD` with us.
pub(super) fn symbol(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym on the default scope with a C string.
    let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    match global.is_null() {
        true => local_symbol(name),
        false => global,
    }
}

/// Whether a loaded object's path names an MPI library: Open MPI's, MPICH's
/// and its derivatives' `libmpi.so.*`, `libmpich.so.*`, the MPI ABI's
/// `libmpi_abi.so.*` and Cray's `libmpi_cray.so.*` (not the Fortran or C++
/// layers beside them, `libmpi_mpifh`, `libmpicxx`).
fn is_mpi_library(path: &[u8]) -> bool {
    let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    ["libmpi.so", "libmpich.so", "libmpi_abi.so", "libmpi_cray.so"]
        .iter()
        .any(|stem| base.starts_with(stem.as_bytes()))
}

/// `name` in the first MPI library the process has loaded, wherever its
/// scope; null when there is none or it lacks `name`.
fn local_symbol(name: &CStr) -> *mut c_void {
    /// `dl_iterate_phdr`'s callback: keeps the first MPI library's path.
    ///
    /// # Safety
    /// Only for `dl_iterate_phdr`: `info` must point to a valid
    /// `dl_phdr_info` for the call, and `data` to the `Option<CString>`
    /// passed to it, not otherwise borrowed.
    unsafe extern "C" fn first_mpi(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the call, and
        // `data` is the Option<CString> passed in below.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Option<CString>>()) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: the loader's names are NUL-terminated strings.
        let path = unsafe { CStr::from_ptr(info.dlpi_name) };
        match is_mpi_library(path.to_bytes()) {
            true => {
                *found = Some(path.to_owned());
                1
            }
            false => 0,
        }
    }
    let mut found: Option<CString> = None;
    // SAFETY: the callback only reads what it is given and writes through
    // `data`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first_mpi), (&mut found as *mut Option<CString>).cast()) };
    let Some(path) = found else {
        return std::ptr::null_mut();
    };
    // SAFETY: RTLD_NOLOAD only returns a handle of a loaded object (loading
    // nothing, running no constructor); the dlclose returns the reference it
    // took. The symbol stays valid: whoever loaded the library still holds it.
    unsafe {
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if handle.is_null() {
            return std::ptr::null_mut();
        }
        let symbol = libc::dlsym(handle, name.as_ptr());
        libc::dlclose(handle);
        symbol
    }
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

#[cfg(test)]
mod tests {
    use super::is_mpi_library;

    #[test]
    fn mpi_libraries_are_known_by_their_names_and_their_layers_are_not() {
        for path in [
            "/venv/lib/libmpi.so.12",
            "/usr/lib/x86_64-linux-gnu/libmpich.so.12",
            "libmpi.so.40",
            "/opt/mpich/lib/libmpi_abi.so.1",
            "/opt/cray/pe/lib64/libmpi_cray.so.12",
        ] {
            assert!(is_mpi_library(path.as_bytes()), "{path}");
        }
        for path in [
            "/usr/lib/libmpi_mpifh.so.40",
            "/usr/lib/libmpicxx.so.12",
            "/lib/libm.so.6",
            "",
            "/x/libmpi.a",
        ] {
            assert!(!is_mpi_library(path.as_bytes()), "{path}");
        }
    }
}
