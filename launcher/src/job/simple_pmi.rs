//! rlaunch's PMI-1 server, as Hydra serves MPICH with `-pmi-port`: every
//! rank gets `PMI_PORT` (this server) and `PMI_ID` (its rank), so the
//! program's own MPI (MPICH, Intel MPI, MVAPICH: any simple-PMI client)
//! wires up through rlaunch and sees the same ranks as OpenSHMEM, instead of
//! running as a singleton in every process. oneside itself never uses it
//! (it has rlaunch's own service). One TCP port serves ranks on every host,
//! so proxies relay nothing.
//!
//! The protocol is MPICH's `simple_pmi` (PMI-1): `initack pmiid=<id>`
//! (answered by `initack`, `set size`, `set rank`, `set debug`), `init`,
//! `get_maxes`, `get_appnum`, `get_my_kvsname`, `get_universe_size`,
//! `put`, `get` (`PMI_process_mapping` from the plan), `barrier_in` (across
//! every rank), `finalize` and `abort`. A version-2 `init` is refused, as
//! Flux refuses it, so a client falls back to PMI-1.
//!
//! Hydra's port takes any `pmiid` from anyone. Here a rank's `PMI_ID` is
//! not its rank but `key × size + rank`, with `key` drawn at random for
//! the job (an `int`, which is all simple-PMI clients send): a client
//! whose id does not carry the key, or claims a rank already claimed, is
//! hung up on, so a stranger at the port can neither read the job's keys,
//! nor write them, nor pass a rank's barrier for it. The port listens on
//! the bootstrap address only; every line, key, value and connection count
//! is bounded, and a connection that has not claimed its rank within
//! [`CLAIM_WITHIN`] is closed.

use crate::plan::LaunchPlan;
use oneside::protocol::pmi1::field;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};

const MAX_LINE: u64 = 4096;
/// How long a connection may take to claim its rank (`initack`).
pub const CLAIM_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);
const MAX_KEY: usize = 64;
const MAX_VALUE: usize = 1024;

/// The `PMI_ID`s of a job: `key × size + rank`, each fitting a C `int`.
#[derive(Debug, Clone, Copy)]
pub struct Ids {
    key: u64,
    size: usize,
}

impl Ids {
    /// A fresh random key for a job of `size` ranks.
    pub fn new(size: usize) -> Ids {
        let keys = (i32::MAX as u64 / size.max(1) as u64).saturating_sub(1).max(1);
        let draw = u64::from_le_bytes(oneside::protocol::auth::random_bytes::<8>());
        Ids {
            key: 1 + draw % keys,
            size: size.max(1),
        }
    }

    /// Rank `rank`'s `PMI_ID`.
    pub fn of(&self, rank: usize) -> u64 {
        self.key * self.size as u64 + rank as u64
    }

    /// The rank whose `PMI_ID` is `id`, if it is one of this job's.
    fn rank(&self, id: u64) -> Option<usize> {
        (id / self.size as u64 == self.key).then_some((id % self.size as u64) as usize)
    }
}

/// The job's key-value space and barrier, shared by every connection.
struct Space {
    /// The job's ids; their `size` is the job's.
    ids: Ids,
    kvsname: String,
    state: Mutex<State>,
    barrier_out: Condvar,
}

#[derive(Default)]
struct State {
    kvs: HashMap<String, String>,
    /// Ranks in the current barrier, and how many barriers have completed.
    waiting: usize,
    generation: u64,
    connections: usize,
    /// Ranks whose id a connection has presented.
    claimed: Vec<bool>,
}

/// Starts the server on `ip` for `plan`'s ranks, whose ids are `ids`;
/// returns its `host:port`.
pub fn start(ip: IpAddr, plan: &LaunchPlan, job_id: &str, ids: Ids) -> io::Result<String> {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0))?;
    let addr = listener.local_addr()?.to_string();
    let size = plan.ranks.len();
    let mut kvs = HashMap::new();
    let nodes: Vec<usize> = plan.ranks.iter().map(|p| p.host).collect();
    kvs.insert("PMI_process_mapping".to_string(), process_mapping(&nodes));
    let space = Arc::new(Space {
        ids,
        kvsname: format!("rlaunch_{job_id}"),
        state: Mutex::new(State {
            kvs,
            claimed: vec![false; size],
            ..State::default()
        }),
        barrier_out: Condvar::new(),
    });
    std::thread::Builder::new()
        .name("rlaunch-pmi".into())
        .spawn(move || accept(listener, space))?;
    Ok(addr)
}

fn accept(listener: TcpListener, space: Arc<Space>) {
    for stream in listener.incoming().flatten() {
        {
            let mut st = crate::sync::lock(&space.state);
            if st.connections >= 2 * space.ids.size + 16 {
                continue; // dropped: more clients than ranks can be
            }
            st.connections += 1;
        }
        let space = space.clone();
        let _ = std::thread::Builder::new()
            .name("rlaunch-pmi-client".into())
            .spawn(move || {
                let _ = serve(stream, &space);
                crate::sync::lock(&space.state).connections -= 1;
            });
    }
}

/// Answers one client until it finalizes or hangs up.
fn serve(stream: TcpStream, space: &Space) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(CLAIM_WITHIN))?;
    let mut out = stream.try_clone()?;
    let mut lines = BufReader::new(stream).take(MAX_LINE);
    let mut rank: Option<usize> = None;
    loop {
        lines.set_limit(MAX_LINE);
        let mut line = String::new();
        if lines.read_line(&mut line)? == 0 || !line.ends_with('\n') {
            return Ok(());
        }
        let claimed = rank.is_some();
        let reply = answer(line.trim_end(), space, &mut rank);
        let Some(reply) = reply else {
            return Ok(()); // abort, a line we do not serve, or a stranger: hang up
        };
        if !claimed && rank.is_some() {
            // A rank of the job: it may wait in barriers for as long as the job runs.
            lines.get_ref().get_ref().set_read_timeout(None)?;
        }
        out.write_all(reply.as_bytes())?;
        if line.starts_with("cmd=finalize") {
            return Ok(());
        }
    }
}

/// The reply to one request line; `None` to hang up.
fn answer(line: &str, space: &Space, rank: &mut Option<usize>) -> Option<String> {
    let number = |k: &str| field(line, k).and_then(|v| v.parse::<usize>().ok());
    let cmd = field(line, "cmd")?;
    if rank.is_none() && cmd != "initack" {
        return None; // nothing but a claim from a connection that has not made one
    }
    Some(match cmd {
        "initack" => {
            let id = space.ids.rank(number("pmiid")? as u64)?;
            let mut st = crate::sync::lock(&space.state);
            if rank.is_some() || std::mem::replace(&mut st.claimed[id], true) {
                return None; // a second claim, on this connection or another
            }
            *rank = Some(id);
            format!(
                "cmd=initack\ncmd=set size={}\ncmd=set rank={id}\ncmd=set debug=0\n",
                space.ids.size
            )
        }
        "init" if field(line, "pmi_version") == Some("1") => {
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".into()
        }
        "init" => "cmd=response_to_init rc=-1\n".into(),
        "get_maxes" => format!("cmd=maxes kvsname_max=256 keylen_max={MAX_KEY} vallen_max={MAX_VALUE}\n"),
        "get_appnum" => "cmd=appnum appnum=0\n".into(),
        "get_my_kvsname" => format!("cmd=my_kvsname kvsname={}\n", space.kvsname),
        "get_universe_size" => format!("cmd=universe_size size={}\n", space.ids.size),
        "put" => {
            let (key, value) = (field(line, "key")?, field(line, "value").unwrap_or(""));
            if rank.is_none() || key.len() > MAX_KEY || value.len() > MAX_VALUE {
                return Some("cmd=put_result rc=-1 msg=refused\n".into());
            }
            let mut st = crate::sync::lock(&space.state);
            st.kvs.insert(key.to_string(), value.to_string());
            "cmd=put_result rc=0 msg=success\n".into()
        }
        "get" => {
            let key = field(line, "key")?;
            let st = crate::sync::lock(&space.state);
            match st.kvs.get(key) {
                Some(v) => format!("cmd=get_result rc=0 msg=success value={v}\n"),
                None => format!("cmd=get_result rc=-1 msg=key_{key}_not_found\n"),
            }
        }
        "barrier_in" => {
            rank.as_ref()?;
            barrier(space);
            "cmd=barrier_out\n".into()
        }
        "finalize" => "cmd=finalize_ack\n".into(),
        _ => return None,
    })
}

/// Waits until every rank has entered this barrier.
fn barrier(space: &Space) {
    let mut st = crate::sync::lock(&space.state);
    let generation = st.generation;
    st.waiting += 1;
    if st.waiting == space.ids.size {
        st.waiting = 0;
        st.generation += 1;
        space.barrier_out.notify_all();
        return;
    }
    while st.generation == generation {
        st = crate::sync::wait(&space.barrier_out, st);
    }
}

/// `PMI_process_mapping` for ranks on `nodes` (each rank's node index):
/// one `(node,1,count)` block per run of consecutive ranks on one node.
fn process_mapping(nodes: &[usize]) -> String {
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    for &node in nodes {
        match blocks.last_mut() {
            Some((n, count)) if *n == node => *count += 1,
            _ => blocks.push((node, 1)),
        }
    }
    let parts: Vec<String> = blocks.iter().map(|(n, c)| format!("({n},1,{c})")).collect();
    format!("(vector,{})", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(size: usize) -> Space {
        Space {
            ids: Ids { key: 7, size },
            kvsname: "rlaunch_x".into(),
            state: Mutex::new(State {
                claimed: vec![false; size],
                ..State::default()
            }),
            barrier_out: Condvar::new(),
        }
    }

    /// Property-based fuzzing: any sequence of lines, random or near the
    /// protocol's, on one connection to a one-rank job never panics, and a
    /// connection that has not claimed the rank is never answered but for
    /// its claim. 100 000 cases (`ONESIDE_FUZZ_CASES`).
    #[test]
    fn any_request_lines_never_panic_and_strangers_get_nothing() {
        use proptest::prelude::*;
        const CMDS: [&str; 12] = [
            "initack",
            "init",
            "get_maxes",
            "get_appnum",
            "get_my_kvsname",
            "get_universe_size",
            "put",
            "get",
            "barrier_in",
            "finalize",
            "abort",
            "spawn",
        ];
        const KEYS: [&str; 5] = ["pmiid", "pmi_version", "kvsname", "key", "value"];
        let near = (
            0..CMDS.len(),
            prop::collection::vec((0..KEYS.len(), 0u64..20, any::<bool>()), 0..3),
        )
            .prop_map(|(cmd, fields)| {
                let mut line = format!("cmd={}", CMDS[cmd]);
                for (key, value, text) in fields {
                    match text {
                        true => line += &format!(" {}=v{value}", KEYS[key]),
                        false => line += &format!(" {}={value}", KEYS[key]),
                    }
                }
                line
            });
        let line = prop_oneof![any::<String>(), near, Just("cmd=initack pmiid=7".to_string())];
        crate::fuzz::fuzz(prop::collection::vec(line, 1..4), |lines| {
            let s = space(1);
            let mut rank = None;
            for line in &lines {
                let claimed = rank.is_some();
                let reply = answer(line, &s, &mut rank);
                if !claimed && rank.is_none() {
                    prop_assert!(reply.is_none(), "{line:?} answered to a stranger: {reply:?}");
                }
            }
            Ok(())
        });
    }

    #[test]
    fn ids_carry_the_key_and_fit_an_int() {
        for size in [1, 2, 3, 1000, 100_000] {
            let ids = Ids::new(size);
            for rank in [0, size / 2, size - 1] {
                let id = ids.of(rank);
                assert!(id <= i32::MAX as u64, "{id} for rank {rank} of {size}");
                assert_eq!(ids.rank(id), Some(rank));
            }
            assert_eq!(ids.rank(size as u64 - 1), None, "a bare rank is no id");
            assert_eq!(ids.rank(ids.of(0) + size as u64), None, "another key");
        }
    }

    #[test]
    fn a_rank_is_claimed_once_and_only_with_its_id() {
        let s = space(2);
        let (mut first, mut second, mut stranger) = (None, None, None);
        assert!(
            answer("cmd=initack pmiid=1", &s, &mut stranger).is_none(),
            "a bare rank"
        );
        assert!(answer("cmd=initack pmiid=abc", &s, &mut stranger).is_none());
        assert!(answer("cmd=initack pmiid=15", &s, &mut first).is_some());
        assert_eq!(first, Some(1));
        assert!(
            answer("cmd=initack pmiid=15", &s, &mut second).is_none(),
            "claimed already"
        );
        assert!(
            answer("cmd=initack pmiid=14", &s, &mut first).is_none(),
            "one rank a connection"
        );
        assert!(answer("cmd=initack pmiid=14", &s, &mut second).is_some());
        assert!(
            answer("cmd=barrier_in", &s, &mut stranger).is_none(),
            "no barrier for a stranger"
        );
    }

    #[test]
    fn mapping_is_one_block_per_run() {
        assert_eq!(process_mapping(&[0, 0, 1, 1]), "(vector,(0,1,2),(1,1,2))");
        assert_eq!(process_mapping(&[0, 1, 0]), "(vector,(0,1,1),(1,1,1),(0,1,1))");
    }

    #[test]
    fn a_session_as_mpich_runs_it() {
        let s = space(1);
        let mut rank = None;
        let mut ask = |l: &str| answer(l, &s, &mut rank);
        assert!(
            ask("cmd=put kvsname=rlaunch_x key=k value=v").is_none(),
            "before initack"
        );
        assert!(ask("cmd=get kvsname=rlaunch_x key=PMI_process_mapping").is_none());
        assert!(ask("cmd=initack pmiid=1").is_none(), "only ranks of the job");
        assert!(ask("cmd=initack pmiid=7")
            .unwrap()
            .contains("cmd=set size=1\ncmd=set rank=0\n"));
        assert_eq!(
            ask("cmd=init pmi_version=2 pmi_subversion=0").unwrap(),
            "cmd=response_to_init rc=-1\n"
        );
        assert!(ask("cmd=init pmi_version=1 pmi_subversion=1").unwrap().contains("rc=0"));
        assert!(ask("cmd=put kvsname=rlaunch_x key=k value=v").unwrap().contains("rc=0"));
        assert_eq!(ask("cmd=barrier_in").unwrap(), "cmd=barrier_out\n");
        assert_eq!(
            ask("cmd=get kvsname=rlaunch_x key=k").unwrap(),
            "cmd=get_result rc=0 msg=success value=v\n"
        );
        assert!(ask("cmd=get kvsname=rlaunch_x key=none").unwrap().contains("rc=-1"));
        assert!(
            ask(&format!("cmd=put kvsname=rlaunch_x key=k value={}", "v".repeat(2000)))
                .unwrap()
                .contains("rc=-1")
        );
        assert!(ask("cmd=spawn").is_none());
    }
}
