//! `rlaunch --dry-run`: the plan as a table, one line per rank, with the
//! binding each rank will really get (this host's CPUs counted here, as
//! the spawner counts them).

use crate::cpus::allowed_cpus;
use crate::job::spawn::CpuShare;
use crate::plan::{Agent, LaunchPlan, Placement};

/// The table: where the hosts came from, then one line per rank.
pub fn describe(plan: &LaunchPlan) -> String {
    let mut out = String::new();
    if let Some(allocation) = &plan.allocation {
        out += &format!("hosts from the {allocation}\n");
    }
    if plan.ranks.iter().any(|p| plan.agents[p.host] == Agent::Srun) {
        out += "other hosts started with srun\n";
    }
    let here = allowed_cpus();
    for p in &plan.ranks {
        let host = &plan.hosts[p.host];
        out += &format!(
            "rank {} -> {} (local rank {} of {}, {}, {})\n",
            p.rank,
            host.login(),
            p.local_rank,
            p.local_size,
            host.origin,
            binding(plan, p, &here)
        );
    }
    out
}

/// The binding rank `p` will get; `here`, the CPUs rlaunch may use.
fn binding(plan: &LaunchPlan, p: &Placement, here: &[usize]) -> String {
    match (CpuShare::for_rank(plan, p), plan.agents[p.host]) {
        (None, _) => "not bound (--bind-to none)".to_string(),
        (Some(share), Agent::Local) => match share.cpus(here) {
            Some(cpus) => format!("bound to CPU {}", cpu_list(cpus)),
            None => format!(
                "not bound: this host's {} ranks outnumber the {} CPU(s) rlaunch may use",
                p.local_size,
                here.len()
            ),
        },
        (Some(_), _) => {
            "bound to its share of that host's CPUs, counted there (none if its ranks outnumber them)".to_string()
        }
    }
}

/// `0-3,8` for CPUs 0, 1, 2, 3 and 8 (the kernel's list format, as
/// `/proc/<pid>/status` writes `Cpus_allowed_list`).
pub fn cpu_list(cpus: &[usize]) -> String {
    crate::words::number_runs(cpus, ",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_the_kernel_writes_them() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 8]), "0-3,8");
        assert_eq!(cpu_list(&[1]), "1");
        assert_eq!(cpu_list(&[]), "");
    }
}
