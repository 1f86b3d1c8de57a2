//! The launcher's side of the card exchange: every rank registers its
//! transport card; once all have, the cards go out as one table, once per
//! host rather than once per rank.
//!
//! For each host (the host name ranks registered with) the lowest rank gets
//! the table inline and writes it to a file in `/dev/shm`; when it says it
//! has, the host's other ranks are told to read that file. A rank that
//! cannot read it, or a host whose writer failed, gets the table inline. So
//! the launcher sends O(hosts × N) bytes, not O(N²), and a node holds the
//! table once.

use oneside::protocol::wire::{card_table_path, encode_table, Msg};
use std::collections::BTreeMap;

/// Cards as they arrive, and what is owed to whom once all have.
pub struct CardExchange {
    job_id: String,
    cards: Vec<Option<Vec<u8>>>,
    hosts: Vec<String>,
    table: Option<Vec<u8>>,
    /// Per host writer (by rank): the host's other ranks and the file.
    writers: BTreeMap<usize, (Vec<usize>, String)>,
    outbox: Vec<(usize, Msg)>,
}

impl CardExchange {
    pub fn new(size: usize, job_id: &str) -> CardExchange {
        CardExchange {
            job_id: job_id.to_string(),
            cards: vec![None; size],
            hosts: vec![String::new(); size],
            table: None,
            writers: BTreeMap::new(),
            outbox: Vec::new(),
        }
    }

    pub fn size(&self) -> usize {
        self.cards.len()
    }

    /// Records `rank`'s card, or says why the registration is wrong.
    pub fn register(&mut self, rank: usize, size: usize, card: Vec<u8>, host: String) -> Result<(), String> {
        if size != self.size() || rank >= self.size() {
            return Err(format!(
                "registered with size {size}, but the job has {} ranks",
                self.size()
            ));
        }
        if self.cards[rank].is_some() {
            return Err("registered, but that rank is already registered".into());
        }
        self.cards[rank] = Some(card);
        self.hosts[rank] = host;
        Ok(())
    }

    /// Ranks that have not registered yet.
    pub fn missing(&self) -> Vec<usize> {
        (0..self.size()).filter(|&r| self.cards[r].is_none()).collect()
    }

    /// Whether the table has gone out.
    pub fn sent(&self) -> bool {
        self.table.is_some()
    }

    /// Once every rank has registered: the table to each host's writer,
    /// or inline to a rank alone on its host.
    pub fn send_when_complete(&mut self) {
        if self.sent() || self.cards.iter().any(Option::is_none) {
            return;
        }
        let cards: Vec<Vec<u8>> = self.cards.iter_mut().map(|c| c.take().unwrap_or_default()).collect();
        let table = encode_table(&cards);
        let mut by_host: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (rank, host) in self.hosts.iter().enumerate() {
            by_host.entry(host).or_default().push(rank);
        }
        for ranks in by_host.into_values() {
            let (writer, others) = (ranks[0], ranks[1..].to_vec());
            let publish = (!others.is_empty()).then(|| card_table_path(&self.job_id, writer));
            if let Some(path) = &publish {
                self.writers.insert(writer, (others, path.clone()));
            }
            self.outbox.push((
                writer,
                Msg::Cards {
                    table: table.clone(),
                    publish,
                },
            ));
        }
        self.hosts = Vec::new();
        self.table = Some(table);
    }

    /// A writer published its host's file: its host's ranks may read it.
    pub fn published(&mut self, writer: usize) {
        if let Some((others, path)) = self.writers.remove(&writer) {
            for rank in others {
                self.outbox.push((rank, Msg::CardsAt { path: path.clone() }));
            }
        }
    }

    /// A writer could not publish, or a rank could not read the file: the
    /// table goes inline instead.
    pub fn needs_cards(&mut self, rank: usize) {
        let Some(table) = &self.table else { return };
        let ranks = match self.writers.remove(&rank) {
            Some((others, _)) => others,
            None => vec![rank],
        };
        for rank in ranks {
            self.outbox.push((
                rank,
                Msg::Cards {
                    table: table.clone(),
                    publish: None,
                },
            ));
        }
    }

    /// Messages owed, by rank.
    pub fn take_outbox(&mut self) -> Vec<(usize, Msg)> {
        std::mem::take(&mut self.outbox)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oneside::protocol::wire::table_entries;

    fn registered(hosts: &[&str]) -> CardExchange {
        let mut table = CardExchange::new(hosts.len(), "j1");
        for (rank, host) in hosts.iter().enumerate() {
            table
                .register(rank, hosts.len(), vec![rank as u8], host.to_string())
                .unwrap();
        }
        table
    }

    #[test]
    fn one_writer_per_host_and_inline_for_a_rank_alone() {
        let mut table = registered(&["a", "b", "a", "c", "b"]);
        assert!(!table.sent());
        table.send_when_complete();
        let out = table.take_outbox();
        let writers: Vec<(usize, Option<String>)> = out
            .iter()
            .map(|(rank, msg)| match msg {
                Msg::Cards { table, publish } => {
                    assert_eq!(
                        table_entries(table).unwrap(),
                        [[0u8], [1], [2], [3], [4]].iter().map(|c| &c[..]).collect::<Vec<_>>()
                    );
                    (*rank, publish.clone())
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            writers,
            vec![
                (0, Some("/dev/shm/oneside-j1-cards-0".into())),
                (1, Some("/dev/shm/oneside-j1-cards-1".into())),
                (3, None)
            ]
        );
        table.published(1);
        assert_eq!(
            table.take_outbox(),
            vec![(
                4,
                Msg::CardsAt {
                    path: "/dev/shm/oneside-j1-cards-1".into()
                }
            )]
        );
        table.needs_cards(0);
        let inline: Vec<usize> = table.take_outbox().into_iter().map(|(rank, _)| rank).collect();
        assert_eq!(inline, vec![2], "a failed writer's host gets the table inline");
    }

    #[test]
    fn wrong_registrations_are_named() {
        let mut table = CardExchange::new(2, "j");
        assert!(table.register(2, 2, vec![], "a".into()).is_err());
        assert!(table.register(0, 3, vec![], "a".into()).unwrap_err().contains("size 3"));
        table.register(0, 2, vec![], "a".into()).unwrap();
        assert!(table.register(0, 2, vec![], "a".into()).is_err());
        assert_eq!(table.missing(), vec![1]);
    }
}
