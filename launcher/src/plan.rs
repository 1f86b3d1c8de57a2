//! Args → `LaunchPlan`: which host every rank runs on, with what program,
//! environment and limits. Pure, apart from reading the hostfile, resolving
//! the program and reading forwarded variables.

use crate::alloc;
use crate::cli::{Args, Bind, LaunchAgent};
use crate::error::LaunchError;
use crate::hostfile::{self, HostEntry};
use oneside::TransportChoice;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where one rank runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub rank: usize,
    /// Index into [`LaunchPlan::hosts`].
    pub host: usize,
    pub local_rank: usize,
    pub local_size: usize,
}

/// How rlaunch starts a host's ranks: a closed set, decided once per host
/// when the plan is made ([`LaunchPlan::agents`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// This machine: fork and exec directly.
    Local,
    /// Another machine: one ssh connection running `rlaunch --proxy`.
    Ssh,
    /// Other machines of a Slurm allocation: one `srun` step runs a proxy
    /// on each of them.
    Srun,
}

impl Agent {
    /// This host's ranks start here; another host's through the launch agent.
    fn for_host(host: &str, launch_agent: LaunchAgent) -> Agent {
        match (hostfile::is_this_machine(host), launch_agent) {
            (true, _) => Agent::Local,
            (false, LaunchAgent::Ssh) => Agent::Ssh,
            (false, LaunchAgent::Srun) => Agent::Srun,
        }
    }

    pub fn is_local(self) -> bool {
        self == Agent::Local
    }
}

/// Everything needed to start the job.
#[derive(Debug)]
pub struct LaunchPlan {
    /// The program, resolved to an absolute path (empty for `--check` without one).
    pub program: PathBuf,
    /// The program as the user typed it.
    pub program_text: Option<String>,
    pub args: Vec<String>,
    pub hosts: Vec<HostEntry>,
    /// How each host's ranks start, in the order of `hosts`.
    pub agents: Vec<Agent>,
    pub ranks: Vec<Placement>,
    /// Variables set for every rank, after the launcher's own.
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    /// `--hang-timeout`: how long every rank must be blocked before the job
    /// is reported hung and ended.
    pub hang_timeout: Option<Duration>,
    /// `--profile`: the directory, absolute, where ranks write their profiles.
    pub profile: Option<PathBuf>,
    /// `--trace`: the directory, absolute, where ranks write their timelines.
    pub trace: Option<PathBuf>,
    pub tag_output: bool,
    pub transport: TransportChoice,
    pub bind: Bind,
    pub heap_size: Option<String>,
    pub bootstrap_timeout: Duration,
    /// The command reaching other hosts, split into words (never empty).
    pub ssh: Vec<String>,
    pub bootstrap_addr: Option<std::net::IpAddr>,
    pub iface: Option<String>,
    /// Where the hosts came from when no hostfile named them: a batch
    /// allocation, described for `--dry-run`.
    pub allocation: Option<String>,
}

impl LaunchPlan {
    pub fn from_args(args: Args) -> Result<LaunchPlan, LaunchError> {
        let batch = match (&args.hostfile, &args.hosts) {
            (None, None) => alloc::from_process_env()?,
            _ => None,
        };
        let (hosts, source_name, explicit) = match (&args.hostfile, &args.hosts, &batch) {
            (Some(path), _, _) => (hostfile::read_hostfile(path)?, path.display().to_string(), true),
            (None, Some(list), _) => (hostfile::parse_host_list(list)?, "-H".to_string(), true),
            (None, None, Some(batch)) => (batch.hosts.clone(), batch.describe(), true),
            (None, None, None) => (Vec::new(), String::new(), false),
        };
        let n = match args.ranks {
            Some(0) => return Err(LaunchError::ZeroRanks),
            Some(n) => n,
            None => match &batch {
                Some(batch) => batch.ntasks,
                None if explicit => hosts.iter().map(|h| h.slots).sum(),
                None => 1,
            },
        };
        let in_slurm = std::env::var_os("SLURM_JOB_ID").is_some() || std::env::var_os("SLURM_JOBID").is_some();
        let launch_agent = args.launch_agent.unwrap_or(match in_slurm {
            true => LaunchAgent::Srun,
            false => LaunchAgent::Ssh,
        });
        // One rule with or without a hostfile: a host's slots are what its
        // line says, and this host without one has one slot per CPU
        // rlaunch may use (Open MPI's rule; `--oversubscribe` allows more).
        let (hosts, source_name) = match explicit {
            true => (hosts, source_name),
            false => (vec![local_host()], LOCAL_SOURCE.to_string()),
        };
        let ranks = place(&hosts, n, args.oversubscribe, &source_name)?;
        let agents = hosts.iter().map(|h| Agent::for_host(&h.host, launch_agent)).collect();
        let mut env: Vec<(String, String)> = args.env.iter().map(|spec| forward(spec)).collect::<Result<_, _>>()?;
        let rdma = [
            ("ONESIDE_VERBS_DEVICE", args.device.clone()),
            ("ONESIDE_VERBS_PORT", args.port.map(|p| p.to_string())),
            ("ONESIDE_VERBS_GID_INDEX", args.gid_index.map(|g| g.to_string())),
            ("ONESIDE_OFI_PROVIDER", args.ofi_provider.clone()),
        ];
        env.extend(
            rdma.into_iter()
                .filter_map(|(var, value)| value.map(|v| (var.to_string(), v))),
        );
        let absolute = |dir: &Option<PathBuf>| match dir {
            Some(dir) => std::path::absolute(dir)
                .map(Some)
                .map_err(|source| LaunchError::Profile {
                    dir: dir.clone(),
                    source,
                }),
            None => Ok(None),
        };
        let (profile, trace) = (absolute(&args.profile)?, absolute(&args.trace)?);
        for (var, dir) in [("ONESIDE_PROFILE", &profile), ("ONESIDE_TRACE", &trace)] {
            if let Some(dir) = dir {
                env.push((var.into(), dir.display().to_string()));
            }
        }
        // Hang reports are on unless the user forwards ONESIDE_WATCH=0.
        if !env.iter().any(|(var, _)| var == "ONESIDE_WATCH") {
            env.push(("ONESIDE_WATCH".into(), "1".into()));
        }
        if args.debug {
            env.push(("ONESIDE_DEBUG".into(), "1".into()));
        }
        match args.check_races.as_deref() {
            None | Some("0" | "off") => {}
            Some(what) => env.push(("ONESIDE_CHECK_RACES".into(), what.into())),
        }
        let seconds = |value: Option<f64>, flag: &str| match value {
            Some(secs) if secs.is_finite() && secs > 0.0 => Ok(Some(Duration::from_secs_f64(secs))),
            Some(_) => Err(LaunchError::Program {
                program: args.program.clone().unwrap_or_default(),
                reason: format!("{flag} must be a positive number of seconds"),
            }),
            None => Ok(None),
        };
        let timeout = seconds(args.timeout, "--timeout")?;
        let hang_timeout = seconds(args.hang_timeout, "--hang-timeout")?;
        let program = match (&args.program, args.check) {
            (Some(program), false) => resolve_program(program)?,
            // The doctor checks the program on every host itself.
            _ => PathBuf::new(),
        };
        Ok(LaunchPlan {
            program,
            program_text: args.program,
            args: args.args,
            hosts,
            agents,
            ranks,
            env,
            timeout,
            hang_timeout,
            profile,
            trace,
            tag_output: args.tag_output,
            transport: args.transport,
            bind: args.bind_to,
            heap_size: args.heap_size,
            bootstrap_timeout: Duration::from_secs(args.bootstrap_timeout.max(1)),
            ssh: split_command(&args.ssh)?,
            bootstrap_addr: args.bootstrap_addr,
            iface: args.iface,
            allocation: batch.map(|b| b.describe()),
        })
    }
}

/// Where a job without hostfile, -H or allocation finds its slots.
const LOCAL_SOURCE: &str = "this host (no hostfile or -H: one slot per CPU rlaunch may use)";

/// This host, with one slot per CPU this process may run on.
fn local_host() -> HostEntry {
    HostEntry {
        user: None,
        host: "localhost".into(),
        slots: crate::cpus::allowed_cpus().len().max(1),
        max_slots: None,
        origin: "one slot per CPU".into(),
    }
}

/// Fills each host's slots in order (mpirun's `--map-by slot`); with
/// `oversubscribe`, further ranks go round-robin over hosts below max_slots.
pub fn place(
    hosts: &[HostEntry],
    n: usize,
    oversubscribe: bool,
    source_name: &str,
) -> Result<Vec<Placement>, LaunchError> {
    let slots: usize = hosts.iter().map(|h| h.slots).sum();
    if n > slots && !oversubscribe {
        let list: Vec<String> = hosts.iter().map(|h| format!("{}:{}", h.host, h.slots)).collect();
        let example = match source_name {
            LOCAL_SOURCE => format!("-H localhost:{n}"),
            _ => "e.g. 'host slots=N' or 'host:N'".to_string(),
        };
        return Err(LaunchError::NotEnoughSlots {
            requested: n,
            slots,
            source_name: source_name.to_string(),
            hosts: list.join(", "),
            example,
        });
    }
    let mut per_host = vec![0usize; hosts.len()];
    let mut order = Vec::with_capacity(n);
    for (i, host) in hosts.iter().enumerate() {
        for _ in 0..host.slots.min(n - order.len()) {
            order.push(i);
            per_host[i] += 1;
        }
    }
    while order.len() < n {
        let before = order.len();
        for (i, host) in hosts.iter().enumerate() {
            if order.len() < n && host.max_slots.is_none_or(|max| per_host[i] < max) {
                order.push(i);
                per_host[i] += 1;
            }
        }
        if order.len() == before {
            return Err(LaunchError::OverMaxSlots {
                requested: n,
                limit: before,
            });
        }
    }
    order.sort_by_key(|&host| host); // ranks on one host get consecutive numbers
    let mut seen = vec![0usize; hosts.len()];
    Ok(order
        .into_iter()
        .enumerate()
        .map(|(rank, host)| {
            seen[host] += 1;
            Placement {
                rank,
                host,
                local_rank: seen[host] - 1,
                local_size: per_host[host],
            }
        })
        .collect())
}

fn forward(spec: &str) -> Result<(String, String), LaunchError> {
    let bad = |reason: &str| LaunchError::BadEnvForward {
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    let (name, value) = match spec.split_once('=') {
        Some((name, value)) => (name, value.to_string()),
        None => (
            spec,
            std::env::var(spec).map_err(|_| bad("this variable is not set in rlaunch's environment"))?,
        ),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad("not a valid variable name"));
    }
    Ok((name.to_string(), value))
}

/// Splits `--ssh` into words (whitespace-separated; no shell quoting).
fn split_command(command: &str) -> Result<Vec<String>, LaunchError> {
    let words: Vec<String> = command.split_whitespace().map(String::from).collect();
    if words.is_empty() {
        return Err(LaunchError::BadSsh {
            command: command.to_string(),
            reason: "the command is empty".into(),
        });
    }
    Ok(words)
}

/// Finds the program as a shell would, and checks it can be executed.
pub fn resolve_program(program: &str) -> Result<PathBuf, LaunchError> {
    let fail = |reason: String| LaunchError::Program {
        program: program.to_string(),
        reason,
    };
    if program.contains('/') {
        let path = Path::new(program);
        let meta = std::fs::metadata(path).map_err(|e| fail(format!("{e}")))?;
        if !meta.is_file() {
            return Err(fail("it is not a regular file".into()));
        }
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(fail("it is not executable (chmod +x?)".into()));
        }
        return std::path::absolute(path).map_err(|e| fail(e.to_string()));
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| fail("no such executable in PATH (give a path such as ./prog)".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(spec: &str) -> Vec<HostEntry> {
        hostfile::parse_host_list(spec).unwrap()
    }

    fn map(placements: &[Placement]) -> Vec<(usize, usize, usize)> {
        placements
            .iter()
            .map(|p| (p.host, p.local_rank, p.local_size))
            .collect()
    }

    #[test]
    fn slots_fill_in_host_order() {
        let p = place(&hosts("a:2,b:2"), 3, false, "-H").unwrap();
        assert_eq!(map(&p), vec![(0, 0, 2), (0, 1, 2), (1, 0, 1)]);
    }

    #[test]
    fn too_many_ranks_needs_oversubscribe() {
        let err = place(&hosts("a:2,b"), 4, false, "hosts").unwrap_err().to_string();
        assert!(
            err.contains("requested 4 ranks but hosts provides only 3 slot(s) (a:2, b:1)"),
            "{err}"
        );
        assert!(err.contains("--oversubscribe"), "{err}");
        let p = place(&hosts("a:2,b"), 5, true, "hosts").unwrap();
        assert_eq!(map(&p), vec![(0, 0, 3), (0, 1, 3), (0, 2, 3), (1, 0, 2), (1, 1, 2)]);
    }

    #[test]
    fn max_slots_is_a_hard_limit() {
        let mut h = hosts("a:1,b:1");
        h[0].max_slots = Some(1);
        let p = place(&h, 3, true, "hosts").unwrap();
        assert_eq!(map(&p), vec![(0, 0, 1), (1, 0, 2), (1, 1, 2)]);
        h[1].max_slots = Some(1);
        assert!(matches!(
            place(&h, 3, true, "hosts"),
            Err(LaunchError::OverMaxSlots { requested: 3, limit: 2 })
        ));
    }

    #[test]
    fn environment_forwarding() {
        assert_eq!(forward("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        std::env::set_var("RLAUNCH_PLAN_TEST", "yes");
        assert_eq!(forward("RLAUNCH_PLAN_TEST").unwrap().1, "yes");
        assert!(forward("RLAUNCH_SURELY_UNSET_VAR").is_err());
        assert!(forward("BAD-NAME=1").is_err());
    }

    #[test]
    fn programs_are_checked_before_launch() {
        assert!(resolve_program("sh").unwrap().ends_with("sh"));
        let missing = resolve_program("./no-such-program").unwrap_err().to_string();
        assert!(missing.starts_with("cannot run './no-such-program'"), "{missing}");
        let plain = std::env::temp_dir().join(format!("rlaunch-plan-test-{}", std::process::id()));
        std::fs::write(&plain, "data").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let not_exec = resolve_program(plain.to_str().unwrap()).unwrap_err().to_string();
        std::fs::remove_file(&plain).unwrap();
        assert!(not_exec.contains("not executable"), "{not_exec}");
        let dir = resolve_program("/").unwrap_err().to_string();
        assert!(dir.contains("not a regular file"), "{dir}");
        assert!(resolve_program("no-such-program-anywhere").is_err());
    }
}
