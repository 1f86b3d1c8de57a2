//! The open-file limit, for `rlaunch`, its proxies and the ranks alike: a
//! job of thousands of ranks needs thousands of descriptors in the launcher
//! (each local rank's pipes, pidfd and bootstrap link) and in a rank (a TCP
//! connection per remote peer it talks to). Each process raises its own
//! soft `RLIMIT_NOFILE` to the hard limit, as Open MPI's and Slurm's
//! daemons do, and the launcher checks its need before starting anything.

/// The soft and hard `RLIMIT_NOFILE` after raising the soft limit as far as
/// the hard one allows (`RLIM_INFINITY` reads as `u64::MAX`).
pub fn raise_open_files() -> (u64, u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return (0, 0);
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we pass; raising the soft limit
        // up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        }
    }
    (limit.rlim_cur, limit.rlim_max)
}
