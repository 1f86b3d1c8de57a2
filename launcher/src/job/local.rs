//! Ranks on this host: spawned directly; their output and exits go through
//! one [`Watcher`] loop for all of them.

use super::children::{ChildEvent, Watcher};
use super::output;
use super::spawn::{self, CpuShare, JobContext};
use super::{Control, JobEvent, RankProcess};
use crate::error::LaunchError;
use crate::plan::{LaunchPlan, Placement};
use crossbeam::channel::Sender;
use std::process::Stdio;

/// The loop that prints local ranks' lines (tagged under `--tag-output`)
/// and reports their exits to the supervisor.
pub fn watcher(plan: &LaunchPlan, events: &Sender<JobEvent>) -> Result<Watcher, LaunchError> {
    let (tag_output, events) = (plan.tag_output, events.clone());
    Watcher::start(move |event| match event {
        ChildEvent::Line { rank, stream, line } => {
            output::print_line(stream, output::tag(tag_output, rank as usize).as_deref(), line)
        }
        ChildEvent::Exited { rank, ending, .. } => {
            let _ = events.send(JobEvent::Exited {
                rank: rank as usize,
                ending,
            });
        }
    })
    .map_err(|source| LaunchError::Watch { source })
}

/// Starts one rank here. Must run on the main thread (see `spawn_process`).
pub fn start_rank(
    plan: &LaunchPlan,
    placement: &Placement,
    job: &JobContext,
    watcher: &Watcher,
) -> Result<RankProcess, LaunchError> {
    let rank = placement.rank;
    let host = plan.hosts[placement.host].host.clone();
    let env = spawn::rank_env(plan, placement, job);
    let stdin = if rank == 0 { Stdio::piped() } else { Stdio::null() };
    let spawn_error = |source| LaunchError::Spawn {
        rank,
        host: host.clone(),
        program: plan.program.display().to_string(),
        source,
    };
    let mut child = spawn::spawn_process(
        &plan.program,
        &plan.args,
        &env,
        None,
        stdin,
        CpuShare::for_rank(plan, placement),
    )
    .map_err(spawn_error)?;
    if let Some(stdin) = child.stdin.take() {
        output::forward_stdin(stdin);
    }
    let pid = child.id() as i32;
    if let Err(source) = watcher.watch(rank as u32, child) {
        spawn::signal_group(pid, libc::SIGKILL);
        return Err(LaunchError::Watch { source });
    }
    Ok(RankProcess {
        rank,
        host,
        pid,
        control: Control::Local,
    })
}
