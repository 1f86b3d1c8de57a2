//! Wiring up through `under_pmi`: who reads the cards, with and without the
//! server's process mapping.

use super::*;

/// Four tasks of a step through `under_pmi`, with the server's process
/// mapping (`mapping`) or without it (every task then on this one host).
/// Returns each task's local rank and size, and the server logs.
fn wire_up_under_pmi(mapping: Option<&'static str>) -> (Vec<(usize, usize)>, Vec<Vec<String>>) {
    use crate::bootstrap::under_pmi;
    use crate::protocol::wire::table_entries;
    let jobid = format!("{}.{}", std::process::id(), mapping.is_some() as u8);
    let (clients, servers) = fake_job(
        4,
        &jobid,
        Quirks {
            mapping,
            ..Quirks::default()
        },
    );
    let card = |rank: usize| vec![rank as u8; 40 + rank];
    // The wire-up barrier, after which a table's writer removes it.
    let wired = Arc::new(std::sync::Barrier::new(4));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            let wired = wired.clone();
            thread::spawn(move || {
                let pmi = Pmi::wire(connect(stream, rank, 4, LONG).unwrap());
                let (env, job) = under_pmi::launch_env(pmi).unwrap();
                let (table, mut link) = job.exchange_cards(&env, card(rank)).unwrap();
                let cards: Vec<Vec<u8>> = table_entries(&table).unwrap().iter().map(|c| c.to_vec()).collect();
                assert_eq!(cards, (0..4).map(card).collect::<Vec<_>>(), "rank {rank}'s cards");
                wired.wait();
                link.remove_card_table();
                link.send_finalized("at test.rs:1:1", Vec::new()).unwrap();
                (env.local_rank, env.local_size, env.secret)
            })
        })
        .collect();
    let results: Vec<_> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(results.iter().all(|r| r.2 == results[0].2), "one secret for the job");
    let leftover = std::fs::read_dir("/dev/shm").unwrap().filter_map(|e| e.ok()).any(|e| {
        e.file_name()
            .to_string_lossy()
            .contains(&format!("oneside-p{}", jobid.replace('.', "x")))
    });
    assert!(!leftover, "the table files are removed");
    let logs = servers.into_iter().map(|s| s.join().unwrap()).collect();
    (results.iter().map(|r| (r.0, r.1)).collect(), logs)
}

/// How many cards a task read from the server (its count keys).
fn cards_fetched(log: &[String], epoch: u64) -> usize {
    let prefix = format!("key=oneside-{epoch}-");
    log.iter()
        .filter(|l| l.contains("cmd=kvs-get;") && l.contains(&prefix) && l.ends_with("-n;"))
        .count()
}

#[test]
fn under_a_process_mapping_only_each_nodes_first_task_reads_the_cards() {
    let (local, logs) = wire_up_under_pmi(Some("(vector,(0,2,2))"));
    assert_eq!(local, [(0, 2), (1, 2), (0, 2), (1, 2)]);
    let fetched: Vec<usize> = logs.iter().map(|log| cards_fetched(log, 0)).collect();
    assert_eq!(fetched, [3, 0, 3, 0], "the other tasks read their node's table file");
    for log in &logs {
        let gets = log.iter().filter(|l| l.contains("cmd=kvs-get;")).count();
        assert!(gets <= 1 + 2 * 3, "{gets} gets: {log:?}");
    }
}

#[test]
fn without_a_mapping_the_host_names_are_gathered_first() {
    let (local, logs) = wire_up_under_pmi(None);
    assert_eq!(local, [(0, 4), (1, 4), (2, 4), (3, 4)]);
    // Epoch 0 gathers host names (every task reads every other's); the
    // cards (epoch 1) are read by task 0 only.
    let fetched: Vec<usize> = logs.iter().map(|log| cards_fetched(log, 1)).collect();
    assert_eq!(fetched, [3, 0, 0, 0]);
}
