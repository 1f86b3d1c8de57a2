//! Starting processes for a job: what a rank's environment and CPU share
//! are (the spawner starts ranks with them), and the ssh connections to
//! the proxies on other hosts and srun steps, started here.
//!
//! Every process rlaunch starts gets its own process group (so teardown can
//! signal it and anything it started, and a terminal's Ctrl-C reaches only
//! rlaunch) and dies with its parent (`PR_SET_PDEATHSIG`), so not even a
//! SIGKILLed rlaunch or proxy leaves orphans.

use crate::cli::Bind;
use crate::plan::{LaunchPlan, Placement};
use oneside::protocol::env as vars;
use oneside::syscall::cvt;
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub struct JobContext {
    pub bootstrap_addr: String,
    pub secret_hex: String,
    pub job_id: String,
    /// rlaunch's PMI-1 server for the program's own MPI (`simple_pmi`).
    pub mpi_pmi_addr: String,
    /// The ranks' `PMI_ID`s there.
    pub mpi_pmi_ids: super::simple_pmi::Ids,
}

/// The complete environment rlaunch sets for one rank.
pub fn rank_env(plan: &LaunchPlan, placement: &Placement, job: &JobContext) -> Vec<(String, String)> {
    let host = &plan.hosts[placement.host];
    let mut env = vec![
        (vars::RANK, placement.rank.to_string()),
        (vars::SIZE, plan.ranks.len().to_string()),
        (vars::LOCAL_RANK, placement.local_rank.to_string()),
        (vars::LOCAL_SIZE, placement.local_size.to_string()),
        (vars::HOST, host.host.clone()),
        (vars::BOOTSTRAP_ADDR, job.bootstrap_addr.clone()),
        (vars::JOB_SECRET, job.secret_hex.clone()),
        (vars::JOB_ID, job.job_id.clone()),
        (vars::BOOTSTRAP_TIMEOUT, plan.bootstrap_timeout.as_secs().to_string()),
        (vars::TRANSPORT, plan.transport.name().to_string()),
        // For the program's MPI, as Hydra's -pmi-port sets them; oneside
        // itself uses the variables above.
        ("PMI_PORT", job.mpi_pmi_addr.clone()),
        ("PMI_ID", job.mpi_pmi_ids.of(placement.rank).to_string()),
    ];
    if let Some(size) = &plan.heap_size {
        env.push((vars::HEAP_SIZE, size.clone()));
    }
    let mut env: Vec<(String, String)> = env.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    env.extend(quiet_fabric_libraries(|name| std::env::var_os(name).is_some()));
    env.extend(plan.env.iter().cloned());
    env
}

/// Variables that keep libraries loaded with libfabric from taking over
/// the rank's signals: Debian's libfabric links PSM and PSM2, whose
/// constructors install SIGTERM, SIGINT and SIGSEGV handlers that print a
/// backtrace and exit, so a program's own handlers (and rlaunch's orderly
/// teardown) stop working. Open MPI sets the same two. Each is set only
/// where the user has not set it (`is_set`).
fn quiet_fabric_libraries(is_set: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    ["IPATH_NO_BACKTRACE", "HFI_NO_BACKTRACE"]
        .into_iter()
        .filter(|name| !is_set(name))
        .map(|name| (name.to_string(), "1".to_string()))
        .collect()
}

/// A rank's place among the ranks of its host, for `--bind-to core`: it
/// gets the `index`th of `of` equal, disjoint shares of the CPUs the
/// spawning process (rlaunch, or the proxy on another host) may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuShare {
    pub index: usize,
    pub of: usize,
}

impl CpuShare {
    /// The share of `placement`'s rank under the plan's `--bind-to`.
    pub fn for_rank(plan: &LaunchPlan, placement: &Placement) -> Option<CpuShare> {
        (plan.bind == Bind::Core).then_some(CpuShare {
            index: placement.local_rank,
            of: placement.local_size,
        })
    }

    /// This share of `allowed`: a block of `allowed.len() / of` CPUs, or
    /// `None` when the host's ranks outnumber its CPUs (then nobody is
    /// pinned, and waits yield instead of spinning).
    pub fn cpus(self, allowed: &[usize]) -> Option<&[usize]> {
        let each = allowed.len() / self.of.max(1);
        (each > 0 && self.index < self.of).then(|| &allowed[self.index * each..(self.index + 1) * each])
    }
}

/// The CPUs a rank with `share` is pinned to, if any.
pub fn pin_cpus(share: Option<CpuShare>) -> Option<Vec<usize>> {
    let allowed = crate::cpus::allowed_cpus();
    share?.cpus(&allowed).map(<[usize]>::to_vec)
}

/// The CPU set a rank with `share` is pinned to, if any.
fn pin_set(share: Option<CpuShare>) -> Option<libc::cpu_set_t> {
    let cpus = pin_cpus(share)?;
    // SAFETY: as in `allowed_cpus`; CPU_SET takes indices below CPU_SETSIZE,
    // which every index from sched_getaffinity is.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in &cpus {
            libc::CPU_SET(c, &mut set);
        }
        Some(set)
    }
}

/// Spawns `program` with piped stdout and stderr, in its own process group,
/// dying with this process, pinned to its CPU share if it has one. Call it
/// on the main thread: the parent-death signal fires when the *thread* that
/// forked exits, not the process.
pub fn spawn_process(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
    stdin: Stdio,
    share: Option<CpuShare>,
) -> std::io::Result<Child> {
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().cloned())
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    let pin = pin_set(share);
    if pin.is_some() {
        command.env(vars::BOUND, "1");
    }
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (setpgid, prctl, getppid,
    // sched_setaffinity, _exit) and `cvt`, which only reads errno.
    unsafe {
        let parent = libc::getpid();
        command.pre_exec(move || {
            if let Some(set) = &pin {
                cvt(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set))?;
            }
            cvt(libc::setpgid(0, 0))?;
            cvt(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong))?;
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Sends `signal` to the process group led by `pid`.
pub fn signal_group(pid: i32, signal: i32) {
    if pid > 0 {
        // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
        // names the process group the child created at spawn.
        unsafe { libc::kill(-pid, signal) };
    }
}

#[cfg(test)]
mod tests {
    use super::{quiet_fabric_libraries, CpuShare};

    #[test]
    fn psm_backtraces_are_off_unless_the_user_chose() {
        let names = |env: Vec<(String, String)>| env.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>();
        assert_eq!(
            names(quiet_fabric_libraries(|_| false)),
            ["IPATH_NO_BACKTRACE=1", "HFI_NO_BACKTRACE=1"]
        );
        assert_eq!(
            names(quiet_fabric_libraries(|name| name == "HFI_NO_BACKTRACE")),
            ["IPATH_NO_BACKTRACE=1"]
        );
    }

    #[test]
    fn cpu_shares_are_equal_disjoint_blocks() {
        let allowed = [0, 1, 2, 3, 4, 5, 6, 7];
        let share = |index, of| CpuShare { index, of }.cpus(&allowed);
        assert_eq!(share(0, 2), Some(&[0, 1, 2, 3][..]));
        assert_eq!(share(1, 2), Some(&[4, 5, 6, 7][..]));
        assert_eq!(share(2, 3), Some(&[4, 5][..]));
        assert_eq!(share(0, 1), Some(&allowed[..]));
        assert_eq!(share(0, 9), None, "more ranks than CPUs: nobody is pinned");
        assert_eq!(CpuShare { index: 1, of: 2 }.cpus(&[3, 9]), Some(&[9][..]));
    }
}
