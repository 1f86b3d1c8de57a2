//! PMI-2's half of the wire client: length-framed `cmd=<name>;key=value;`
//! messages, as Slurm 22.05's `mpi/pmi2` plugin parses them and Hydra
//! answers them: `fullinit` (rank and size), `job-getid` (the job id),
//! and the checked exchange every request goes through.

use super::message::{self, check_value, rc_name, Reply};
use super::{env_err, Told, Wire};
use crate::error::Result;

/// The largest payload a 6-digit length header can describe.
const MAX_MESSAGE: usize = 999_999;

/// `fullinit` (rank and size), then `job-getid`.
pub(super) fn fullinit(wire: &mut Wire, told: &Told) -> Result<()> {
    // Hydra wants `pmirank` even on PMI_PORT, where PMI_ID is the rank.
    let who = match told.rank.or(told.id) {
        Some(rank) => format!("pmirank={rank};"),
        None => return Err(env_err(None, "neither PMI_RANK nor PMI_ID is set".into())),
    };
    let jobid = told
        .jobid
        .as_ref()
        .map(|j| format!("pmijobid={j};"))
        .unwrap_or_default();
    if let Some(j) = &told.jobid {
        check_value(j).map_err(|d| wire.fail("fullinit", format!("PMI_JOBID={j:?}: {d}")))?;
    }
    let reply = request(wire, "fullinit", &format!("cmd=fullinit;{jobid}{who}threaded=FALSE;"))?;
    let number = |k: &str| reply.get(k).and_then(|v| v.parse::<usize>().ok());
    let (Some(rank), Some(size)) = (number("rank"), number("size")) else {
        return Err(wire.fail("fullinit", "the reply has no rank and size"));
    };
    if told.rank.is_some_and(|r| r != rank) || told.size.is_some_and(|s| s != size) {
        return Err(wire.fail(
            "fullinit",
            format!(
                "the server says rank {rank} of {size}, but PMI_RANK={} and PMI_SIZE={}",
                show(told.rank),
                show(told.size)
            ),
        ));
    }
    wire.set_rank_size(rank, size);
    let reply = request(wire, "job-getid", "cmd=job-getid;")?;
    let jobid = reply.get("jobid").unwrap_or_default().to_string();
    check_value(&jobid)
        .ok()
        .filter(|_| !jobid.is_empty())
        .ok_or_else(|| wire.fail("job-getid", format!("the job id {jobid:?} is not usable")))?;
    wire.set_jobid(jobid);
    Ok(())
}

/// Sends `payload` and checks the reply: `<cmd>-response` with `rc=0`.
pub(super) fn request(wire: &mut Wire, step: &'static str, payload: &str) -> Result<Reply> {
    if payload.len() > MAX_MESSAGE {
        return Err(wire.fail(step, format!("a {}-byte message is too long for PMI-2", payload.len())));
    }
    wire.send(step, &frame(payload))?;
    let reply = match message::read_reply(wire.conn()) {
        Ok(reply) => reply.map_err(|d| wire.fail(step, d))?,
        Err(e) => return Err(wire.io_fail(step, e)),
    };
    let expected = format!("{step}-response");
    if reply.cmd != expected {
        return Err(wire.fail(step, format!("expected {expected}, got {}", reply.cmd)));
    }
    match reply.get("rc") {
        Some("0") => Ok(reply),
        Some(rc) => {
            let errmsg = reply.get("errmsg").map(|m| format!(": {m}")).unwrap_or_default();
            Err(wire.fail(step, format!("the server answered rc={rc} ({}){errmsg}", rc_name(rc))))
        }
        None => Err(wire.fail(step, format!("{} has no rc", reply.cmd))),
    }
}

/// The value of a `found=TRUE` reply.
pub(super) fn found(wire: &Wire, step: &'static str, key: &str, mut reply: Reply) -> Result<Option<String>> {
    match reply.get("found") {
        Some(f) if f.eq_ignore_ascii_case("TRUE") => match reply.fields.iter().position(|(k, _)| k == "value") {
            Some(i) => Ok(Some(reply.fields.swap_remove(i).1)),
            None => Err(wire.fail(step, format!("reply for {key} says found=TRUE but has no value"))),
        },
        Some(f) if f.eq_ignore_ascii_case("FALSE") => Ok(None),
        other => Err(wire.fail(step, format!("reply for {key} has found={other:?}"))),
    }
}

/// A PMI-2 frame: the payload's length, left-justified in 6 characters.
pub(super) fn frame(payload: &str) -> String {
    format!("{:<6}{payload}", payload.len())
}

fn show(v: Option<usize>) -> String {
    v.map_or_else(|| "(unset)".into(), |v| v.to_string())
}
