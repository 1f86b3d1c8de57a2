//! PMI-1 as Flux's simple server speaks it, on `PMI_FD` or on a port.

use super::*;

/// Serves one process as Flux's simple PMI-1 server does: version 2 is
/// refused with `rc=-1`, then PMI-1 lines on the same connection. With
/// `port`, the process must first say `initack` and learns rank and size.
fn serve_v1(s: UnixStream, rank: usize, kvs: Arc<Kvs>, port: bool) -> Vec<String> {
    let mut log = Vec::new();
    let mut reader = std::io::BufReader::new(s.try_clone().unwrap());
    let mut out = s;
    let mut pending = Vec::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
            return log;
        }
        log.push(line.clone());
        let f = |k: &str| field(line.trim_end(), k).map(str::to_string);
        let reply = match f("cmd").as_deref() {
            Some("init") if f("pmi_version").as_deref() == Some("2") => "cmd=response_to_init rc=-1\n".to_string(),
            Some("init") => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".into(),
            Some("initack") => {
                assert!(port, "initack only with PMI_PORT");
                assert_eq!(f("pmiid"), Some(rank.to_string()));
                format!(
                    "cmd=initack\ncmd=set size={}\ncmd=set rank={rank}\ncmd=set debug=0\n",
                    kvs.size
                )
            }
            Some("get_maxes") => "cmd=maxes kvsname_max=64 keylen_max=64 vallen_max=1024\n".into(),
            Some("get_my_kvsname") => format!("cmd=my_kvsname kvsname={}\n", kvs.jobid),
            Some("put") => {
                assert_eq!(f("kvsname"), Some(kvs.jobid.clone()));
                pending.push((f("key").unwrap(), f("value").unwrap()));
                "cmd=put_result rc=0\n".into()
            }
            Some("barrier_in") => {
                kvs.fence(&mut pending);
                "cmd=barrier_out\n".into()
            }
            Some("get") => match kvs.get(&f("key").unwrap()) {
                Some(v) => format!("cmd=get_result rc=0 value={v}\n"),
                None => "cmd=get_result rc=-1\n".into(),
            },
            Some("finalize") => "cmd=finalize_ack\n".into(),
            Some("abort") => return log,
            other => panic!("a PMI-1 server has no {other:?}"),
        };
        out.write_all(reply.as_bytes()).unwrap();
        if line.starts_with("cmd=finalize") {
            return log;
        }
    }
}

/// `size` processes wire up through a Flux-like PMI-1 server (on PMI_FD,
/// or on a port with `initack`); returns every process's cards and logs.
fn wire_up_over_pmi1(size: usize, port: bool) -> Vec<Vec<String>> {
    use crate::bootstrap::under_pmi;
    use crate::protocol::wire::table_entries;
    let jobid = format!("flux-{}-{}", std::process::id(), port as u8);
    let kvs = Kvs::new(size, &jobid);
    let card = |rank: usize| vec![rank as u8 + 1; 700 + rank];
    let wired = Arc::new(std::sync::Barrier::new(size));
    let (ranks, servers): (Vec<_>, Vec<_>) = (0..size)
        .map(|rank| {
            let (client, server) = UnixStream::pair().unwrap();
            let kvs = kvs.clone();
            let server = thread::spawn(move || serve_v1(server, rank, kvs, port));
            let wired = wired.clone();
            let task = thread::spawn(move || {
                let told = match port {
                    true => Told {
                        id: Some(rank),
                        ..Told::default()
                    },
                    false => Told {
                        rank: Some(rank),
                        size: Some(size),
                        ..Told::default()
                    },
                };
                let wire =
                    Wire::connect(PmiSocket::Fd(client), told, LONG, MpiHere::Absent, "PMI_FD=flux".into()).unwrap();
                assert_eq!((wire.rank(), wire.size()), (rank, size));
                let (env, job) = under_pmi::launch_env(Pmi::wire(wire)).unwrap();
                let (table, mut link) = job.exchange_cards(&env, card(rank)).unwrap();
                let cards: Vec<Vec<u8>> = table_entries(&table).unwrap().iter().map(|c| c.to_vec()).collect();
                assert_eq!(cards, (0..size).map(card).collect::<Vec<_>>(), "rank {rank}'s cards");
                wired.wait();
                link.remove_card_table();
                link.send_finalized("at test.rs:1:1", Vec::new()).unwrap();
            });
            (task, server)
        })
        .unzip();
    ranks.into_iter().for_each(|t| t.join().unwrap());
    servers.into_iter().map(|s| s.join().unwrap()).collect()
}

#[test]
fn a_server_that_refuses_version_2_is_spoken_to_in_pmi1() {
    let logs = wire_up_over_pmi1(3, false);
    for log in &logs {
        assert_eq!(log[0], "cmd=init pmi_version=2 pmi_subversion=0\n");
        assert_eq!(log[1], "cmd=init pmi_version=1 pmi_subversion=1\n");
        assert!(log.iter().any(|l| l == "cmd=get_my_kvsname\n"), "{log:?}");
        assert!(log.iter().any(|l| l == "cmd=barrier_in\n"));
        assert_eq!(log.last().unwrap(), "cmd=finalize\n");
        assert!(log.iter().all(|l| l.len() <= 1100), "values are chunked");
    }
}

#[test]
fn on_a_port_pmi1_learns_rank_and_size_from_initack() {
    let logs = wire_up_over_pmi1(2, true);
    assert_eq!(logs[1][1], "cmd=initack pmiid=1\n");
    assert_eq!(logs[1][2], "cmd=init pmi_version=1 pmi_subversion=1\n");
}

#[test]
fn beside_an_initialized_mpi_the_pmi1_session_is_joined_without_a_second_init() {
    let (client, server) = UnixStream::pair().unwrap();
    let kvs = Kvs::new(1, "kvs_mpich_0");
    let server = thread::spawn(move || serve_v1(server, 0, kvs, false));
    let told = Told {
        rank: Some(0),
        size: Some(1),
        ..Told::default()
    };
    let wire = Wire::connect(
        PmiSocket::Fd(client),
        told,
        LONG,
        MpiHere::Active,
        "PMI_FD=mpich".into(),
    )
    .unwrap();
    assert_eq!((wire.rank(), wire.size(), wire.jobid()), (0, 1, "kvs_mpich_0"));
    let mut pmi = Pmi::wire(wire);
    assert_eq!(pmi.allgather(b"card").unwrap(), [b"card".to_vec()]);
    pmi.farewell().unwrap();
    let log = server.join().unwrap();
    assert_eq!(log[0], "cmd=get_my_kvsname\n");
    assert!(
        !log.iter()
            .any(|l| l.starts_with("cmd=init") || l.starts_with("cmd=finalize")),
        "{log:?}"
    );
}

#[test]
fn under_srun_an_mpi_not_yet_initialized_keeps_the_one_init() {
    let (client, _server) = UnixStream::pair().unwrap();
    let told = Told {
        rank: Some(0),
        size: Some(2),
        id: None,
        jobid: Some("7.0".into()),
    };
    let err = Wire::connect(PmiSocket::Fd(client), told, SHORT, MpiHere::Later, "PMI_FD=9".into())
        .err()
        .unwrap();
    assert!(err.to_string().contains("call MPI_Init before shmem_init"), "{err}");
}
