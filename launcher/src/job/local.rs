//! Ranks on this host: spawned directly, output forwarded to the terminal,
//! exits reported to the supervisor by a waiter thread.

use super::output::{self, Stream};
use super::report::Ending;
use super::spawn::{self, CpuShare, JobContext};
use super::{Control, JobEvent, RankProcess};
use crate::error::LaunchError;
use crate::plan::{LaunchPlan, Placement};
use crossbeam::channel::Sender;
use std::process::Stdio;
use std::thread::JoinHandle;

/// Starts one rank here. Must run on the main thread (see `spawn_process`).
pub fn start_rank(
    plan: &LaunchPlan,
    placement: &Placement,
    job: &JobContext,
    events: &Sender<JobEvent>,
    readers: &mut Vec<JoinHandle<()>>,
) -> Result<RankProcess, LaunchError> {
    let rank = placement.rank;
    let host = plan.hosts[placement.host].host.clone();
    let env = spawn::rank_env(plan, placement, job);
    let stdin = if rank == 0 { Stdio::piped() } else { Stdio::null() };
    let mut child = spawn::spawn_process(
        &plan.program,
        &plan.args,
        &env,
        None,
        stdin,
        CpuShare::for_rank(plan, placement),
    )
    .map_err(|source| LaunchError::Spawn {
        rank,
        host: host.clone(),
        program: plan.program.display().to_string(),
        source,
    })?;
    let tag = output::tag(plan.tag_output, rank);
    if let Some(stdout) = child.stdout.take() {
        let tag = tag.clone();
        readers.push(output::forward_lines(stdout, move |line| {
            output::print_line(Stream::Stdout, tag.as_deref(), line)
        }));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(output::forward_lines(stderr, move |line| {
            output::print_line(Stream::Stderr, tag.as_deref(), line)
        }));
    }
    if let Some(stdin) = child.stdin.take() {
        output::forward_stdin(stdin);
    }
    let pid = child.id() as i32;
    let events = events.clone();
    std::thread::spawn(move || {
        let ending = child.wait().map(Ending::from_status).unwrap_or(Ending::Code(255));
        let _ = events.send(JobEvent::Exited { rank, ending });
    });
    Ok(RankProcess {
        rank,
        host,
        pid,
        control: Control::Local,
    })
}
