//! A Rust program that is also an MPI program: MPI and oneside initialized
//! and finalized in the orders its arguments name, the rank checked to be
//! the `MPI_COMM_WORLD` rank, a ring of puts, and an `MPI_Allreduce` of
//! what arrived that must agree with oneside's own sum.
//!
//! ```text
//! ONESIDE_TEST_LIBMPI=libmpich.so.12 mpiexec.hydra -n 4 hybrid_mpi mpi-first mpi-last
//! ONESIDE_TEST_LIBMPI=libmpi.so.40 mpirun -np 4 hybrid_mpi shmem-first shmem-last
//! ONESIDE_TEST_LIBMPI=libmpi.so.40 mpiexec.hydra -n 2 hybrid_mpi shmem-first mpi-last open-mpi-late
//! ```
//!
//! `open-mpi-late` opens the MPI library only after `oneside::init`, as a
//! program that loads MPI later would (a Python program importing mpi4py
//! after shmem4py): init cannot see it, so the mismatch of an MPI that
//! cannot join the launcher's job is caught at finalize.
//!
//! The MPI library is opened at run time (with `RTLD_GLOBAL`, as a program
//! linked against it would have it) so the example builds without MPI; a
//! Rust program using the `mpi` crate looks the same to oneside. Prints
//! "hybrid ok" on rank 0 when every check held.

use oneside::prelude::*;
use std::ffi::{c_int, c_void, CString};
use std::process::ExitCode;

type Init = unsafe extern "C" fn(*mut c_int, *mut c_void) -> c_int;
type Finalize = unsafe extern "C" fn() -> c_int;
type CommQuery = unsafe extern "C" fn(usize, *mut c_int) -> c_int;
type Allreduce = unsafe extern "C" fn(*const c_void, *mut c_void, c_int, usize, usize, usize) -> c_int;

/// The few MPI calls this program makes, with its MPI's handles.
struct Mpi {
    init: Init,
    finalize: Finalize,
    rank: CommQuery,
    size: CommQuery,
    allreduce: Allreduce,
    world: usize,
    long: usize,
    sum: usize,
}

impl Mpi {
    fn open() -> Result<Mpi, String> {
        let name = std::env::var("ONESIDE_TEST_LIBMPI")
            .map_err(|_| "set ONESIDE_TEST_LIBMPI to the MPI library".to_string())?;
        let file = CString::new(name.clone()).map_err(|e| e.to_string())?;
        // SAFETY: dlopen with a C string; the library stays open for good.
        let lib = unsafe { libc::dlopen(file.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if lib.is_null() {
            return Err(format!("cannot open {name}"));
        }
        let sym = |s: &str| -> Result<*mut c_void, String> {
            let c = CString::new(s).unwrap();
            // SAFETY: dlsym on a live handle.
            let p = unsafe { libc::dlsym(lib, c.as_ptr()) };
            (!p.is_null()).then_some(p).ok_or_else(|| format!("{name} has no {s}"))
        };
        // Open MPI's handles are addresses of its objects; MPICH's are integers.
        let (world, long, sum) = match sym("ompi_mpi_comm_world") {
            Ok(w) => (
                w as usize,
                sym("ompi_mpi_long")? as usize,
                sym("ompi_mpi_op_sum")? as usize,
            ),
            Err(_) => (0x4400_0000, 0x4c00_0807, 0x5800_0003),
        };
        // SAFETY: each pointer is the named MPI function, whose C signature
        // the type spells (handles travel as one register either way).
        unsafe {
            Ok(Mpi {
                init: std::mem::transmute::<*mut c_void, Init>(sym("MPI_Init")?),
                finalize: std::mem::transmute::<*mut c_void, Finalize>(sym("MPI_Finalize")?),
                rank: std::mem::transmute::<*mut c_void, CommQuery>(sym("MPI_Comm_rank")?),
                size: std::mem::transmute::<*mut c_void, CommQuery>(sym("MPI_Comm_size")?),
                allreduce: std::mem::transmute::<*mut c_void, Allreduce>(sym("MPI_Allreduce")?),
                world,
                long,
                sum,
            })
        }
    }

    fn world_rank_size(&self) -> (usize, usize) {
        let (mut r, mut s) = (0, 0);
        // SAFETY: valid out-pointers and MPI's own world handle.
        unsafe {
            (self.rank)(self.world, &mut r);
            (self.size)(self.world, &mut s);
        }
        (r as usize, s as usize)
    }

    fn sum(&self, value: i64) -> i64 {
        let mut total: i64 = 0;
        // SAFETY: one long in, one long out, MPI's own handles.
        unsafe {
            (self.allreduce)(
                (&value as *const i64).cast(),
                (&mut total as *mut i64).cast(),
                1,
                self.long,
                self.sum,
                self.world,
            )
        };
        total
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hybrid_mpi: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().collect();
    let shmem_first = args.get(1).is_some_and(|a| a == "shmem-first");
    let mpi_last = args.get(2).is_some_and(|a| a == "mpi-last");
    let open_late = args.get(3).is_some_and(|a| a == "open-mpi-late");
    let mut mpi = match open_late {
        true => None,
        false => Some(Mpi::open()?),
    };
    let mut world = None;
    if shmem_first {
        world = Some(oneside::init().map_err(|e| e.to_string())?);
    }
    let mpi = match mpi.take() {
        Some(mpi) => mpi,
        None => Mpi::open()?,
    };
    // SAFETY: MPI_Init(NULL, NULL) is allowed by MPI-2 and later.
    unsafe { (mpi.init)(std::ptr::null_mut(), std::ptr::null_mut()) };
    let world = match world {
        Some(w) => w,
        None => oneside::init().map_err(|e| e.to_string())?,
    };
    let (rank, size) = (world.rank(), world.size());
    let mut ok = mpi.world_rank_size() == (rank, size);
    if !ok {
        eprintln!("rank {rank} of {size} is MPI rank {:?}", mpi.world_rank_size());
    }
    let inbox = world.alloc::<i64>(1).map_err(|e| e.to_string())?;
    world
        .put(&inbox, (rank + 1) % size, 0, &[100 + rank as i64])
        .map_err(|e| e.to_string())?;
    world.barrier().map_err(|e| e.to_string())?;
    let got = world.local_to_vec(&inbox).map_err(|e| e.to_string())?[0];
    let want: i64 = (0..size as i64).map(|p| 100 + p).sum();
    let total = mpi.sum(got);
    if total != want {
        eprintln!("rank {rank}: MPI_Allreduce of what arrived is {total}, want {want}");
        ok = false;
    }
    let all_ok = mpi.sum(i64::from(!ok)) == 0;
    // SAFETY: MPI_Finalize once, after every MPI call.
    let mpi_finalize = || unsafe { (mpi.finalize)() };
    if mpi_last {
        world.finalize().map_err(|e| e.to_string())?;
        mpi_finalize();
    } else {
        mpi_finalize();
        world.finalize().map_err(|e| e.to_string())?;
    }
    if rank == 0 && all_ok {
        println!("hybrid ok");
    }
    Ok(all_ok)
}
