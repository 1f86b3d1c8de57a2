//! The job's card table, read where it lies: every rank's [`Card`](super::Card) as the
//! launcher all-gathered it, kept as the bytes received (or the host's
//! mapped file) and read on use.
//!
//! A rank of an N-rank job used to decode all N cards at init, each with
//! its own strings on the heap, then drop them: N allocations and frees a
//! rank, N² for the job, 12% of a 2048-rank start on one host. Here a
//! card is looked at through a [`CardView`] that borrows its strings from
//! the table (no copy, no UTF-8 check), and the one part a peer keeps, its
//! shared-memory card, is decoded when that peer is first mapped
//! ([`super::shm::PeerSegment`]).

use super::fault::Fault;
use super::{OfiCard, VerbsCard};
use serde::Deserialize;
use std::collections::HashMap;

/// Every rank's card, indexed by rank.
pub struct CardTable {
    bytes: Box<dyn AsRef<[u8]> + Send + Sync>,
    /// Where each card lies in `bytes`: offset and length.
    spans: Vec<(u32, u32)>,
}

/// One card, its strings borrowed from the table. It reads the bytes a
/// [`Card`](super::Card) was encoded to (postcard writes a `String` and a byte slice
/// alike), field for field; a unit test holds the two together.
#[derive(Debug, Deserialize)]
pub struct CardView<'a> {
    #[serde(borrow)]
    pub host: &'a [u8],
    pub heap_bytes: u64,
    #[serde(borrow)]
    pub shm: Option<ShmView<'a>>,
    #[serde(borrow)]
    pub tcp: Option<&'a [u8]>,
    pub verbs: Option<VerbsCard>,
    pub ofi: Option<OfiCard>,
}

/// A peer's shared-memory card, borrowed (see [`crate::segment::ShmCard`]).
#[derive(Debug, Deserialize)]
pub struct ShmView<'a> {
    #[serde(borrow)]
    pub path: &'a [u8],
    pub token: u64,
    pub bytes: u64,
}

impl ShmView<'_> {
    /// The owned card, to map the segment with.
    pub fn to_card(&self) -> crate::segment::ShmCard {
        crate::segment::ShmCard {
            path: String::from_utf8_lossy(self.path).into_owned(),
            token: self.token,
            bytes: self.bytes,
        }
    }
}

impl CardView<'_> {
    /// The host name, for messages.
    pub fn host_name(&self) -> String {
        String::from_utf8_lossy(self.host).into_owned()
    }
}

/// A value per host name, for a pass over the table's cards: ranks come
/// in blocks by host, so the last host is kept aside and the map is looked
/// at only when the host changes.
pub struct ByHost<'a, V> {
    map: HashMap<&'a [u8], V>,
    last: Option<(&'a [u8], V)>,
}

impl<V> Default for ByHost<'_, V> {
    fn default() -> Self {
        ByHost {
            map: HashMap::new(),
            last: None,
        }
    }
}

impl<'a, V: Copy> ByHost<'a, V> {
    /// The value of `host`, if it has one.
    pub fn get(&mut self, host: &'a [u8]) -> Option<V> {
        match self.last {
            Some((last, value)) if last == host => Some(value),
            _ => {
                let value = *self.map.get(host)?;
                self.last = Some((host, value));
                Some(value)
            }
        }
    }

    /// The value of `host`, given `value` if it had none.
    pub fn get_or_insert(&mut self, host: &'a [u8], value: V) -> V {
        match self.get(host) {
            Some(had) => had,
            None => {
                self.set(host, value);
                value
            }
        }
    }

    /// Gives `host` the value `value`.
    pub fn set(&mut self, host: &'a [u8], value: V) {
        self.map.insert(host, value);
        self.last = Some((host, value));
    }
}

impl CardTable {
    /// Finds the cards in an encoded table (`protocol::wire::encode_table`):
    /// one walk over their lengths, no card decoded. A span is two `u32`s,
    /// so a table is at most 4 GiB (40 million cards of ~100 bytes); a
    /// larger one is refused, never wrapped.
    pub fn new(bytes: Box<dyn AsRef<[u8]> + Send + Sync>) -> Result<CardTable, Fault> {
        let all = (*bytes).as_ref();
        if u32::try_from(all.len()).is_err() {
            let detail = format!("{} bytes, above the 4 GiB a card table may hold", all.len());
            return Err(Fault::setup("read the card table", detail));
        }
        let entries: Vec<&[u8]> =
            postcard::from_bytes(all).map_err(|e| Fault::setup("read the card table", format!("undecodable: {e}")))?;
        let base = all.as_ptr() as usize;
        let spans = entries
            .iter()
            .map(|entry| ((entry.as_ptr() as usize - base) as u32, entry.len() as u32))
            .collect();
        Ok(CardTable { bytes, spans })
    }

    /// A table of no cards: a singleton's, which has no peer to read.
    pub fn empty() -> CardTable {
        CardTable {
            bytes: Box::new(Vec::new()),
            spans: Vec::new(),
        }
    }

    /// A table of these cards, encoded as the launcher does.
    #[cfg(test)]
    pub fn from_cards(cards: &[super::Card]) -> CardTable {
        let encoded: Vec<Vec<u8>> = cards
            .iter()
            .map(|card| postcard::to_stdvec(card).expect("postcard encoding into a Vec cannot fail"))
            .collect();
        let table = postcard::to_stdvec(&encoded).expect("postcard encoding into a Vec cannot fail");
        CardTable::new(Box::new(table)).expect("a table just encoded decodes")
    }

    /// How many cards: the job's size.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// `peer`'s card as encoded.
    pub fn raw(&self, peer: usize) -> &[u8] {
        let (at, len) = self.spans[peer];
        &(*self.bytes).as_ref()[at as usize..(at + len) as usize]
    }

    /// `peer`'s card, its strings borrowed from the table.
    pub fn view(&self, peer: usize) -> Result<CardView<'_>, postcard::Error> {
        postcard::from_bytes(self.raw(peer))
    }
}

#[cfg(test)]
mod tests {
    use super::CardTable;
    use crate::segment::ShmCard;
    use crate::transport::{Card, OfiCard};

    fn card(host: &str, shm: bool, tcp: bool, ofi: bool) -> Card {
        Card {
            host: host.into(),
            heap_bytes: 1 << 20,
            shm: shm.then(|| ShmCard {
                path: format!("/dev/shm/seg-{host}"),
                token: 77,
                bytes: 4096,
            }),
            tcp: tcp.then(|| "198.18.0.1:4000".into()),
            verbs: None,
            ofi: ofi.then(|| OfiCard {
                provider: "tcp;ofi_rxm".into(),
                name: vec![1, 2, 3],
                addr: 5,
                key: 9,
                first: 1 << 16,
                data_key: Some(3),
                grows: true,
            }),
        }
    }

    #[test]
    fn a_view_reads_every_field_of_the_card_it_was_encoded_from() {
        let cards = [
            card("a", true, false, false),
            card("bb", false, true, true),
            card("", true, true, false),
        ];
        let table = CardTable::from_cards(&cards);
        assert_eq!(table.len(), 3);
        for (peer, card) in cards.iter().enumerate() {
            let view = table.view(peer).unwrap();
            assert_eq!(view.host, card.host.as_bytes());
            assert_eq!(view.heap_bytes, card.heap_bytes);
            assert_eq!(view.shm.as_ref().map(|s| s.to_card()), card.shm);
            assert_eq!(view.tcp, card.tcp.as_deref().map(str::as_bytes));
            assert_eq!(
                view.ofi
                    .as_ref()
                    .map(|o| (&o.provider, &o.name, o.addr, o.key, o.first, o.data_key, o.grows)),
                card.ofi
                    .as_ref()
                    .map(|o| (&o.provider, &o.name, o.addr, o.key, o.first, o.data_key, o.grows))
            );
            assert_eq!(table.raw(peer), postcard::to_stdvec(card).unwrap());
        }
    }

    #[test]
    fn by_host_keeps_the_first_value_of_each_host_in_any_order() {
        let mut first = super::ByHost::default();
        let hosts: [&[u8]; 6] = [b"a", b"a", b"b", b"a", b"b", b"c"];
        let got: Vec<usize> = hosts
            .iter()
            .enumerate()
            .map(|(r, h)| first.get_or_insert(h, r))
            .collect();
        assert_eq!(got, [0, 0, 2, 0, 2, 5]);
        first.set(b"a", 9);
        assert_eq!(
            (first.get(b"b"), first.get(b"a"), first.get(b"z")),
            (Some(2), Some(9), None)
        );
    }

    #[test]
    fn a_cut_table_or_card_is_an_error() {
        let table = CardTable::from_cards(&[card("a", true, true, false)]);
        let bytes = table.raw(0).to_vec();
        let whole = postcard::to_stdvec(&vec![bytes.clone()]).unwrap();
        assert!(CardTable::new(Box::new(whole[..whole.len() - 1].to_vec())).is_err());
        let cut = postcard::to_stdvec(&vec![bytes[..bytes.len() - 1].to_vec()]).unwrap();
        let table = CardTable::new(Box::new(cut)).unwrap();
        assert!(table.view(0).is_err(), "a card cut short does not decode");
    }
}
