//! The heap's growth, as the links see it: a range the heap grew by is
//! registered with the NIC on every rank, and every rank learns every
//! peer's key for it, or, if any rank could not register it, no rank
//! keeps it (`transport::parts`).
//!
//! The World calls [`Links::grown`] on every rank, in the same order,
//! inside the collective allocation, once the range is committed
//! everywhere. Each rank registers, then sends through the World's
//! allgather a byte saying whether it could and then its key, or why
//! not. All ranks then judge the same bytes alike: with every key, each
//! publishes the part (readers on other threads find it from then on);
//! without, each deregisters its own and returns the same
//! `Error::HeapRegistration`, naming the lowest rank that failed, so the
//! allocation fails symmetrically.
//!
//! Memory is never given back on a transport that registers it (the
//! World's `heap_releases`), so there is no `released`: a registration
//! lives as long as the links, which the World drops before the segment.

use super::{Exchange, Links};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Test-only: `RANK:N` makes rank `RANK` refuse the `N`th range the heap
/// grows by (counting from 1), as a failed registration would.
pub(crate) const TEST_REFUSE_GROWTH: &str = "ONESIDE_TEST_REFUSE_GROWTH";

/// The room a rank's bytes have in the World's exchange.
const BLOB_BYTES: usize = 255;
/// Of a reason sent with a refusal.
const REASON_BYTES: usize = 200;

/// Ranges this process was asked to register, for [`TEST_REFUSE_GROWTH`].
static GROWTHS: AtomicUsize = AtomicUsize::new(0);

impl Links {
    /// Whether this rank's transports register memory (verbs, or ofi with
    /// a provider that needs registered memory), so that a grown heap
    /// range must be registered and its keys exchanged. The same on every
    /// rank of a job: wire-up refuses cards that differ.
    pub(crate) fn registers_memory(&self) -> bool {
        self.rdma.as_ref().is_some_and(|rdma| rdma.registers_memory())
    }

    /// The heap grew: heap offsets `[start, start + len)` are now committed
    /// on every rank. Registers the range and learns every peer's key for
    /// it. `exchange` is the World's allgather (this rank's bytes in, every
    /// rank's out, index = rank), called exactly once. If registration
    /// failed on any rank, every rank unregisters its own and returns
    /// `Error::HeapRegistration` naming that rank.
    pub(crate) fn grown(&self, start: usize, len: usize, exchange: &mut Exchange<'_>) -> Result<()> {
        let Some(rdma) = self.rdma.as_ref().filter(|rdma| rdma.registers_memory()) else {
            return Ok(());
        };
        let nth = GROWTHS.fetch_add(1, Ordering::Relaxed) + 1;
        let registered = match refused_for_test(self.rank, nth) {
            Some(why) => Err(why),
            None => rdma.register_part(start, len),
        };
        let mine = blob(registered.as_ref().map(|(_, key)| key.as_slice()));
        let index = registered.as_ref().ok().map(|&(index, _)| index);
        let undo = || {
            if let Some(index) = index {
                rdma.abandon_part(index);
            }
        };
        let all = exchange(&mine).inspect_err(|_| undo())?;
        let refusal = |failed: usize, detail: String| Error::HeapRegistration {
            rank: self.rank,
            failed,
            start,
            len,
            detail,
        };
        if all.len() != self.size {
            undo();
            let detail = format!("the exchange gave {} ranks' keys for {}", all.len(), self.size);
            return Err(refusal(self.rank, detail));
        }
        if let Some((failed, why)) = first_refusal(&all) {
            undo();
            return Err(refusal(failed, why));
        }
        let index = index.expect("this rank's bytes said it registered the range");
        let keys: Vec<Vec<u8>> = all.into_iter().map(|mut b| b.split_off(1)).collect();
        rdma.publish_part(index, &keys).map_err(|(failed, why)| {
            undo();
            refusal(failed, why)
        })
    }
}

/// The bytes a rank sends: 1 and its key, or 0 and why it has none.
fn blob(registered: std::result::Result<&[u8], &String>) -> Vec<u8> {
    match registered {
        Ok(key) => [&[1], key].concat(),
        Err(why) => {
            let mut end = why.len().min(REASON_BYTES).min(BLOB_BYTES - 1);
            while !why.is_char_boundary(end) {
                end -= 1;
            }
            [&[0], &why.as_bytes()[..end]].concat()
        }
    }
}

/// The lowest rank whose bytes say it has no key, and why.
fn first_refusal(all: &[Vec<u8>]) -> Option<(usize, String)> {
    all.iter()
        .enumerate()
        .find_map(|(rank, bytes)| match bytes.split_first() {
            Some((1, _)) => None,
            Some((0, why)) => Some((rank, String::from_utf8_lossy(why).into_owned())),
            _ => Some((rank, format!("it sent {} bytes that are no answer", bytes.len()))),
        })
}

/// The refusal [`TEST_REFUSE_GROWTH`] asks of rank `rank` for its `nth` range.
fn refused_for_test(rank: usize, nth: usize) -> Option<String> {
    let wanted = std::env::var(TEST_REFUSE_GROWTH).ok()?;
    let (who, which) = wanted.split_once(':')?;
    (who.trim().parse() == Ok(rank) && which.trim().parse() == Ok(nth))
        .then(|| format!("refused on purpose ({TEST_REFUSE_GROWTH}={wanted})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_lowest_rank_and_its_reason() {
        let key = blob(Ok(&[7, 0, 0, 0]));
        let no = blob(Err(&"cannot register 4096 bytes of memory".to_string()));
        assert_eq!(first_refusal(&[key.clone(), key.clone()]), None);
        let all = [key.clone(), no.clone(), Vec::new(), no];
        assert_eq!(
            first_refusal(&all),
            Some((1, "cannot register 4096 bytes of memory".to_string()))
        );
        let garbled = [key, Vec::new()];
        assert!(first_refusal(&garbled).is_some_and(|(rank, why)| rank == 1 && why.contains("0 bytes")));
    }

    #[test]
    fn a_long_reason_is_cut_to_fit_the_exchange() {
        let why = "é".repeat(300);
        let bytes = blob(Err(&why));
        assert!(bytes.len() <= BLOB_BYTES && bytes[0] == 0);
        assert!(std::str::from_utf8(&bytes[1..]).is_ok());
    }
}
