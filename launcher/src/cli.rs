//! Command-line arguments, as the user typed them. Turning them into a
//! [`LaunchPlan`](crate::plan::LaunchPlan) is `plan`'s job.

use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use oneside::TransportChoice;
use std::ffi::OsString;
use std::path::PathBuf;

/// The default directory of `--profile`.
pub const PROFILE_DIR: &str = "oneside-profile";

/// The default directory of `--trace`.
pub const TRACE_DIR: &str = "oneside-trace";

/// Start a oneside job: place ranks on hosts, wire them up, forward their
/// output, and tear everything down on exit, failure or Ctrl-C.
#[derive(Debug, Parser)]
#[command(name = "rlaunch", version, max_term_width = 100)]
pub struct Args {
    /// Number of ranks (default: every slot of the hosts, or 1).
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub ranks: Option<usize>,

    /// Hostfile (Open MPI `host slots=N`, MPICH `host:N`, or one host per line).
    #[arg(short = 'f', long = "hostfile", visible_alias = "machinefile", value_name = "FILE")]
    pub hostfile: Option<PathBuf>,

    /// Comma-separated hosts, e.g. `-H a,b:2`.
    #[arg(short = 'H', long = "host", value_name = "HOSTS")]
    pub hosts: Option<String>,

    /// Allow more ranks than slots (then ranks share CPUs and are not
    /// bound). Without a hostfile or -H, this host has one slot per CPU
    /// rlaunch may use, as with a hostfile: one rule either way.
    #[arg(long, env = "RLAUNCH_OVERSUBSCRIBE", value_parser = clap::builder::FalseyValueParser::new())]
    pub oversubscribe: bool,

    /// Print the rank → host map and exit.
    #[arg(long)]
    pub dry_run: bool,

    /// Check every host (ssh, rlaunch and the program there, connecting back,
    /// transports, memlock) and print one row per host.
    #[arg(long)]
    pub check: bool,

    /// Prefix every output line with `[rank]`.
    #[arg(long)]
    pub tag_output: bool,

    /// Forward an environment variable: `-x VAR` or `-x VAR=value` (repeatable).
    #[arg(short = 'x', value_name = "VAR[=VALUE]")]
    pub env: Vec<String>,

    /// Kill the job after SECS seconds and exit with status 124.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

    /// When every rank has been blocked inside oneside for SECS seconds with
    /// no progress, print where each one is (its call, source location and
    /// what it waits for, cycles and dead ranks named) and end the job with
    /// status 124. The same report is printed when --timeout fires, when a
    /// rank dies while others wait, and on SIGQUIT (Ctrl-\\), which does not
    /// end the job.
    #[arg(long, value_name = "SECS", env = "ONESIDE_HANG_TIMEOUT")]
    pub hang_timeout: Option<f64>,

    /// Checking mode: collectives and allocations must match on every
    /// member (same call, root, count and type, in the same order), a
    /// broadcast, collect or alltoall must not write a destination the
    /// team's previous collective used without a barrier between, and (C)
    /// every transfer must stay inside one allocated object. A mistake is
    /// an error naming the rank, the call and its source line. Slower.
    #[arg(long, env = "ONESIDE_DEBUG", value_parser = clap::builder::FalseyValueParser::new())]
    pub debug: bool,

    /// Race checker: two PEs' accesses to the same bytes, one of them a
    /// write, that no barrier, quiet and flag, lock or wait orders, are
    /// each reported once with both source lines; the job then exits with
    /// status 66. `abort` ends the job at the first race. C programs see
    /// their own loads and stores when built with `oshcc --check-races`.
    #[arg(
        long,
        value_name = "WHAT",
        env = "ONESIDE_CHECK_RACES",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "report",
        value_parser = ["report", "abort", "1", "0", "off"]
    )]
    pub check_races: Option<String>,

    /// Profile the job: every rank counts its calls, bytes and blocked
    /// time; rlaunch then writes DIR/profile.json, DIR/summary.txt (also
    /// printed) and DIR/report.html. DIR must be reachable from every host.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = PROFILE_DIR,
        env = "ONESIDE_PROFILE"
    )]
    pub profile: Option<PathBuf>,

    /// Record a timeline: every blocking call, collective, wait, get and
    /// quiet of every rank, the last ONESIDE_TRACE_EVENTS (65536) per
    /// thread; rlaunch writes DIR/trace.json (Chrome trace events, for
    /// Perfetto). DIR must be reachable from every host.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = TRACE_DIR,
        env = "ONESIDE_TRACE"
    )]
    pub trace: Option<PathBuf>,

    /// Transport between ranks.
    #[arg(long, value_parser = TransportParser, default_value = "auto", env = "ONESIDE_TRANSPORT")]
    pub transport: TransportChoice,

    /// Pin each rank to its share of the host's CPUs (`core`, when every
    /// rank of the host gets at least one), or leave placement to the kernel.
    #[arg(long, value_enum, default_value_t = Bind::Core, value_name = "WHAT")]
    pub bind_to: Bind,

    /// RDMA device for the verbs transport, e.g. mlx5_0 (default: the first).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// RDMA port of that device (default 1).
    #[arg(long, value_name = "N")]
    pub port: Option<u8>,

    /// GID index (default: the RoCE v2 IPv4 GID, else the first valid one).
    #[arg(long, value_name = "N")]
    pub gid_index: Option<u8>,

    /// libfabric provider for the ofi transport, e.g. "tcp;ofi_rxm", shm,
    /// cxi (default: libfabric's first that offers RMA and atomics).
    #[arg(long, value_name = "NAME", env = "ONESIDE_OFI_PROVIDER")]
    pub ofi_provider: Option<String>,

    /// Symmetric heap size per rank, e.g. 64M (default 64M).
    #[arg(long, value_name = "SIZE")]
    pub heap_size: Option<String>,

    /// Command that reaches other hosts (rlaunch adds BatchMode and ConnectTimeout).
    #[arg(long, value_name = "CMD", default_value = "ssh", env = "RLAUNCH_SSH")]
    pub ssh: String,

    /// How rlaunch --proxy starts on other hosts (default: srun inside a
    /// Slurm allocation, ssh elsewhere).
    #[arg(long, value_name = "AGENT", value_enum)]
    pub launch_agent: Option<LaunchAgent>,

    /// Address ranks on other hosts connect back to (default: the one that routes to them).
    #[arg(long, value_name = "IP", conflicts_with = "iface")]
    pub bootstrap_addr: Option<std::net::IpAddr>,

    /// Network interface whose address ranks on other hosts connect back to.
    #[arg(long, value_name = "NAME")]
    pub iface: Option<String>,

    /// Seconds each bootstrap stage may take before the job is aborted.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub bootstrap_timeout: u64,

    /// The program to run on every rank.
    #[arg(required_unless_present = "check")]
    pub program: Option<String>,

    /// Arguments passed to the program.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// `--bind-to`: how ranks are pinned to CPUs (Open MPI's option of that name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Bind {
    /// Each rank of a host gets an equal, disjoint share of the CPUs the
    /// launcher (or proxy) may use there, when there is at least one each.
    Core,
    /// No pinning.
    None,
}

/// What starts the per-host proxy on another host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LaunchAgent {
    /// One ssh connection per host.
    Ssh,
    /// One `srun` step per host, inside the Slurm allocation.
    Srun,
}

/// `--transport`'s parser: the names, help lines and values come from
/// oneside's one list of transports (`TransportChoice::ALL`).
#[derive(Clone, Copy)]
pub struct TransportParser;

impl clap::builder::TypedValueParser for TransportParser {
    type Value = TransportChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<TransportChoice, clap::Error> {
        let name = value.to_str().unwrap_or("");
        TransportChoice::from_name(name).ok_or_else(|| {
            let mut e = clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd);
            let arg = arg.map_or("--transport".to_string(), |a| a.to_string());
            e.insert(
                clap::error::ContextKind::InvalidArg,
                clap::error::ContextValue::String(arg),
            );
            e.insert(
                clap::error::ContextKind::InvalidValue,
                clap::error::ContextValue::String(name.to_string()),
            );
            let names = TransportChoice::ALL.iter().map(|c| c.name().to_string()).collect();
            e.insert(
                clap::error::ContextKind::ValidValue,
                clap::error::ContextValue::Strings(names),
            );
            e
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let values = TransportChoice::ALL
            .iter()
            .map(|c| clap::builder::PossibleValue::new(c.name()).help(c.help()));
        Some(Box::new(values))
    }
}

/// The command-line definition, whose `--version` also names the
/// transports built in. The parser, `--help` and the man pages all use it.
pub fn command() -> clap::Command {
    let version = format!(
        "{} (oneside; transports: {})",
        env!("CARGO_PKG_VERSION"),
        oneside::transports_built_in()
    );
    // clap keeps &'static str; this runs once per process.
    Args::command().version(&*Box::leak(version.into_boxed_str()))
}

/// Parses the process arguments, accepting mpirun's single-dash `-np N`.
pub fn parse<I: IntoIterator<Item = OsString>>(argv: I) -> Result<Args, clap::Error> {
    let matches = command().try_get_matches_from(rewrite_np(argv.into_iter().collect()))?;
    Args::from_arg_matches(&matches)
}

/// Rewrites Open MPI's `-np N` and `-np=N` (which clap cannot take: a short
/// option has one letter) to `-n N`, among rlaunch's own options only: the
/// rewrite stops at the program name, so `oshrun -np 2 ./prog -np 3` still
/// passes `-np 3` to the program, and everything after the program name is
/// the program's, even `-n 3` or `-x B`. An option's value (`-x A=1`,
/// `--transport tcp`) is not mistaken for the program name.
fn rewrite_np(argv: Vec<OsString>) -> Vec<OsString> {
    let command = Args::command();
    // Whether `option`, written without an attached value, takes the next argument.
    let takes_next = |option: &str| {
        command.get_arguments().any(|arg| {
            let named = match option.strip_prefix("--") {
                Some(long) => arg.get_long() == Some(long) || arg.get_all_aliases().is_some_and(|a| a.contains(&long)),
                None => option.len() == 2 && arg.get_short().is_some_and(|s| option.ends_with(s)),
            };
            // An option whose value must be attached (`--profile=DIR`,
            // `--check-races=abort`) takes nothing from the next argument.
            named && arg.get_action().takes_values() && !arg.is_require_equals_set()
        })
    };
    let mut out = Vec::with_capacity(argv.len());
    let mut rest = argv.into_iter();
    out.extend(rest.next()); // argv[0]
    while let Some(arg) = rest.next() {
        let text = arg.to_string_lossy().into_owned();
        if text == "-np" {
            out.push("-n".into());
            out.extend(rest.next());
        } else if let Some(value) = text.strip_prefix("-np=") {
            out.extend(["-n".into(), value.into()]);
        } else if text == "--" || text == "-" || !text.starts_with('-') {
            // The program: the rest is its own. A `--` before it keeps clap
            // from taking the program's `-x B` or `-n 3` as rlaunch's.
            if text != "--" {
                out.push("--".into());
            }
            out.push(arg);
            out.extend(rest);
            break;
        } else {
            out.push(arg);
            if !text.contains('=') && takes_next(&text) {
                out.extend(rest.next());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Args {
        parse(line.split_whitespace().map(OsString::from)).unwrap()
    }

    #[test]
    fn mpirun_spellings_are_accepted() {
        let a = args("rlaunch -np 4 --machinefile h ./prog -np 2");
        assert_eq!(a.ranks, Some(4));
        assert_eq!(a.hostfile, Some(PathBuf::from("h")));
        assert_eq!(a.program.as_deref(), Some("./prog"));
        assert_eq!(a.args, vec!["-np", "2"], "the program's own -np is left alone");
    }

    #[test]
    fn an_option_whose_value_must_be_attached_does_not_take_the_next_argument() {
        let a = args("rlaunch --profile -n 2 prog");
        assert_eq!((a.ranks, a.program.as_deref()), (Some(2), Some("prog")));
        assert!(a.profile.is_some());
        let a = args("rlaunch --check-races -np 2 prog");
        assert_eq!((a.ranks, a.check_races.as_deref()), (Some(2), Some("report")));
        let a = args("rlaunch --check-races=abort -n 2 prog");
        assert_eq!((a.ranks, a.check_races.as_deref()), (Some(2), Some("abort")));
    }

    #[test]
    fn np_is_rewritten_before_the_program_only() {
        let a = args("oshrun -np 2 ./prog -np 3");
        assert_eq!((a.ranks, a.program.as_deref()), (Some(2), Some("./prog")));
        assert_eq!(a.args, vec!["-np", "3"]);
        let a = args("oshrun -np=4 prog -np=5");
        assert_eq!((a.ranks, a.args), (Some(4), vec!["-np=5".to_string()]));
        // Option values are not the program: -np after them is still rlaunch's.
        let a = args("oshrun -x A=1 --transport tcp --timeout 5 -np 3 prog -x B");
        assert_eq!(
            (a.ranks, a.transport, a.timeout),
            (Some(3), TransportChoice::Tcp, Some(5.0))
        );
        assert_eq!(
            (a.env, a.args),
            (vec!["A=1".to_string()], vec!["-x".to_string(), "B".to_string()])
        );
        let a = args("oshrun --machinefile=h --tag-output -np 2 -- prog -np 1");
        assert_eq!((a.ranks, a.hostfile), (Some(2), Some(PathBuf::from("h"))));
        assert_eq!(a.args, vec!["-np", "1"]);
        let a = args("oshrun -n 2 prog -n 3 --tag-output");
        assert_eq!((a.ranks, a.tag_output), (Some(2), false));
        assert_eq!(a.args, vec!["-n", "3", "--tag-output"]);
    }

    #[test]
    fn program_arguments_may_look_like_options() {
        let a = args("rlaunch -n 2 -x A=1 -x B --tag-output prog --size 8 -v");
        assert_eq!(a.env, vec!["A=1", "B"]);
        assert!(a.tag_output);
        assert_eq!(a.args, vec!["--size", "8", "-v"]);
    }

    #[test]
    fn a_missing_program_is_an_error_except_for_check() {
        assert!(parse(["rlaunch", "-n", "2"].map(OsString::from)).is_err());
        assert!(
            parse(["rlaunch", "--check", "-H", "a,b"].map(OsString::from))
                .unwrap()
                .check
        );
    }
}
