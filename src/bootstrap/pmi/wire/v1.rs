//! PMI-1's half of the wire client: newline-ended `cmd=<name> key=value`
//! lines, as MPICH's `simple_pmi` sends them and Hydra's and Flux's simple
//! servers answer them.
//!
//! * Handshake: with `PMI_PORT`, `cmd=initack pmiid=<PMI_ID>` first, which
//!   the server answers with `initack` and `set size=`, `set rank=` and
//!   `set debug=` lines; with `PMI_FD`, rank and size are `PMI_RANK` and
//!   `PMI_SIZE`. Then `init pmi_version=1`, `get_maxes` (the value limit)
//!   and `get_my_kvsname`, whose name is the job id.
//! * `put` / `get` in that KVS, `barrier_in` / `barrier_out` as the fence,
//!   `finalize` / `finalize_ack`, and `abort`, which has no answer.

use super::{env_err, field, Told, Wire, INIT_V1};
use crate::error::Result;

/// Values may not hold spaces in PMI-1's line format.
fn check_v1_value(wire: &Wire, key: &str, value: &str) -> Result<()> {
    match value.contains([' ', '=']) {
        true => Err(wire.fail(
            "put",
            format!("value of {key} holds a space or '=', which PMI-1 cannot carry"),
        )),
        false => Ok(()),
    }
}

/// The PMI-1 handshake, after the server refused version 2 with `refusal`.
pub(super) fn init(wire: &mut Wire, told: &Told, refusal: &str) -> Result<()> {
    let (mut rank, mut size) = (told.rank, told.size);
    if let Some(id) = told.id {
        let answer = wire.line_request("initack", &format!("cmd=initack pmiid={id}\n"))?;
        if field(&answer, "cmd") != Some("initack") {
            return Err(wire.fail("initack", format!("expected initack, got {answer:?}")));
        }
        // size, rank and debug, in that order; read all three.
        for _ in 0..3 {
            let line = wire.read_line("initack")?;
            if field(&line, "cmd") != Some("set") {
                return Err(wire.fail("initack", format!("expected a set line, got {line:?}")));
            }
            let number = |k: &str| field(&line, k).and_then(|v| v.parse::<usize>().ok());
            size = number("size").or(size);
            rank = number("rank").or(rank);
        }
    }
    let answer = wire.init_line(INIT_V1)?;
    if field(&answer, "rc") != Some("0") {
        return Err(wire.fail(
            "init",
            format!("the server refused both PMI-2 ({refusal:?}) and PMI-1 ({answer:?})"),
        ));
    }
    let (Some(rank), Some(size)) = (rank, size) else {
        return Err(env_err(
            None,
            "PMI_RANK and PMI_SIZE must be set for PMI-1 on PMI_FD".into(),
        ));
    };
    let maxes = wire.line_request("get_maxes", "cmd=get_maxes\n")?;
    let vallen = field(&maxes, "vallen_max").and_then(|v| v.parse::<usize>().ok());
    if vallen.is_some_and(|v| v < super::super::CHUNK) {
        return Err(wire.fail(
            "get_maxes",
            format!(
                "the server takes values of at most {} characters; oneside needs {}",
                vallen.unwrap_or(0),
                super::super::CHUNK
            ),
        ));
    }
    let kvs = kvsname(wire)?;
    wire.set_identity(rank, size, kvs);
    Ok(())
}

/// Joins the PMI-1 session the process's MPI began on this connection: no
/// second `init` (Slurm's agent refuses one), rank and size from
/// `PMI_RANK` and `PMI_SIZE`, the KVS name asked again.
pub(super) fn join(wire: &mut Wire, told: &Told) -> Result<()> {
    let (Some(rank), Some(size)) = (told.rank, told.size) else {
        return Err(env_err(
            None,
            "PMI_RANK and PMI_SIZE must be set to share MPI's PMI_FD".into(),
        ));
    };
    let kvs = kvsname(wire)?;
    wire.set_identity(rank, size, kvs);
    Ok(())
}

/// The job's KVS name, which is also its id.
fn kvsname(wire: &mut Wire) -> Result<String> {
    let answer = wire.line_request("get_my_kvsname", "cmd=get_my_kvsname\n")?;
    match field(&answer, "kvsname").filter(|k| !k.is_empty()) {
        Some(kvs) => Ok(kvs.to_string()),
        None => Err(wire.fail("get_my_kvsname", format!("no kvsname in {answer:?}"))),
    }
}

/// Checks a reply's command and `rc`.
fn expect(wire: &Wire, step: &'static str, answer: &str, cmd: &str) -> Result<()> {
    if field(answer, "cmd") != Some(cmd) {
        return Err(wire.fail(step, format!("expected {cmd}, got {answer:?}")));
    }
    match field(answer, "rc") {
        None | Some("0") => Ok(()),
        Some(rc) => {
            let msg = field(answer, "msg").unwrap_or("no message");
            Err(wire.fail(step, format!("the server answered rc={rc} ({msg})")))
        }
    }
}

pub(super) fn put(wire: &mut Wire, key: &str, value: &str) -> Result<()> {
    check_v1_value(wire, key, value)?;
    let line = format!("cmd=put kvsname={} key={key} value={value}\n", wire.jobid());
    let answer = wire.line_request("put", &line)?;
    expect(wire, "put", &answer, "put_result")
}

pub(super) fn barrier(wire: &mut Wire) -> Result<()> {
    let answer = wire.line_request("barrier", "cmd=barrier_in\n")?;
    expect(wire, "barrier", &answer, "barrier_out")
}

/// `Ok(None)` when the server has no such key (any `rc` but 0).
pub(super) fn get(wire: &mut Wire, key: &str) -> Result<Option<String>> {
    let line = format!("cmd=get kvsname={} key={key}\n", wire.jobid());
    let answer = wire.line_request("get", &line)?;
    if field(&answer, "cmd") != Some("get_result") {
        return Err(wire.fail("get", format!("expected get_result, got {answer:?}")));
    }
    match field(&answer, "rc") {
        Some("0") => Ok(Some(field(&answer, "value").unwrap_or_default().to_string())),
        _ => Ok(None),
    }
}

pub(super) fn finalize(wire: &mut Wire) -> Result<()> {
    let answer = wire.line_request("finalize", "cmd=finalize\n")?;
    expect(wire, "finalize", &answer, "finalize_ack")
}
