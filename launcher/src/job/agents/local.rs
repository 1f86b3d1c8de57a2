//! The local agent: ranks on this host, started by the spawner process;
//! their output and exits go through one [`Watcher`] loop for all of them.

use super::super::children::{ChildEvent, Watcher};
use super::super::output;
use super::super::spawn::{self, CpuShare, JobContext};
use super::super::{JobEvent, RankProcess};
use super::Reach;
use crate::error::LaunchError;
use crate::plan::{LaunchPlan, Placement};
use crate::spawner::Spawner;
use crossbeam::channel::Sender;

/// The loop that prints local ranks' lines (tagged under `--tag-output`)
/// and reports their exits to the supervisor.
pub fn watcher(plan: &LaunchPlan, events: &Sender<JobEvent>) -> Result<Watcher, LaunchError> {
    let (tag_output, events) = (plan.tag_output, events.clone());
    Watcher::start(move |event| match event {
        ChildEvent::Line { rank, stream, line } => {
            output::print_line(stream, output::tag(tag_output, rank as usize).as_deref(), line)
        }
        ChildEvent::Exited { rank, ending, .. } => {
            ending.let_the_crash_report_arrive();
            let _ = events.send(JobEvent::Exited {
                rank: rank as usize,
                ending,
            });
        }
    })
    .map_err(|source| LaunchError::Watch { source })
}

/// Starts one rank here, through the spawner.
pub fn start_rank(
    plan: &LaunchPlan,
    placement: &Placement,
    job: &JobContext,
    (spawner, watcher): (&Spawner, &Watcher),
) -> Result<RankProcess, LaunchError> {
    let rank = placement.rank;
    let host = plan.hosts[placement.host].host.clone();
    let env = spawn::rank_env(plan, placement, job);
    let spawn_error = |source| LaunchError::Spawn {
        rank,
        host: host.clone(),
        program: plan.program.display().to_string(),
        source,
    };
    let cpus = spawn::pin_cpus(CpuShare::for_rank(plan, placement));
    let mut child = spawner
        .spawn(&plan.program, &plan.args, &env, None, rank == 0, cpus.as_deref())
        .map_err(spawn_error)?;
    if let Some(stdin) = child.stdin.take() {
        output::forward_stdin(stdin);
    }
    let pid = child.pid;
    if let Err(source) = watcher.watch(rank as u32, child) {
        spawn::signal_group(pid, libc::SIGKILL);
        return Err(LaunchError::Watch { source });
    }
    Ok(RankProcess {
        rank,
        host,
        pid,
        control: Reach::here(),
    })
}
