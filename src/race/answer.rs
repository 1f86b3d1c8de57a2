//! A put-with-signal's source reused after a wait: race-free only if what
//! the wait saw answers the signal (a ping answered by a pong, whose
//! sender waited for the ping, so the ping's data had left the source).
//! This PE alone cannot tell: the wait saw a value, not who wrote it after
//! what. So the access is kept as a *question* and judged at the phase's
//! end, when this PE has every write to its memory with its writer's
//! number and every writer's first acquire (`check::Syncs`): the wait
//! answered the signal when one of the writes it observed was made after
//! its writer's first acquire of the phase. A write made with no acquire
//! before it cannot have followed the ping's arrival, so the source was
//! still in use. A wait that observed nothing of this phase (its value
//! came earlier, or it was not a wait) is taken as an answer: a missing
//! order is never invented.

use super::check::{Access, Kind, Syncs};
use std::sync::Mutex;

/// A load or store of a put-with-signal's pending source, after an
/// acquire that may have answered the signal.
#[derive(Clone, Debug)]
pub(super) struct Question {
    /// The phase of the acquire, and its number in it.
    pub phase: u64,
    pub acquire: u32,
    /// The access's and the operation's site codes, and the operation.
    pub access: u64,
    pub op_site: u64,
    pub op: u8,
    /// The report, should the answer be no.
    pub text: String,
}

static ASKED: Mutex<Vec<Question>> = Mutex::new(Vec::new());

/// Keeps `q` (once per pair of sites) until its phase is judged.
pub(super) fn ask(q: Question) {
    let mut asked = crate::sync::lock(&ASKED);
    if !asked.iter().any(|a| (a.access, a.op_site) == (q.access, q.op_site)) {
        asked.push(q);
    }
}

/// Whether a wait numbered `acquire`, by this PE (`me`), saw a write
/// that its writer made after an acquire of its own: `all` is the phase's
/// accesses to this PE's memory.
fn answered(me: u32, acquire: u32, all: &[Access], syncs: &dyn Fn(u32) -> Syncs) -> bool {
    let seen: Vec<&Access> = all
        .iter()
        .filter(|a| a.pe == me && a.kind == Kind::Observe && a.seq == acquire)
        .collect();
    let writes = |o: &&Access| {
        all.iter()
            .filter(|w| w.pe != me && matches!(w.kind, Kind::Write | Kind::Atomic(_)))
            .filter(|w| w.offset < o.offset + o.len && o.offset < w.offset + w.len)
            .map(|w| (w.pe, w.seq))
            .collect::<Vec<_>>()
    };
    let writers: Vec<(u32, u32)> = seen.iter().flat_map(writes).collect();
    writers.is_empty() || writers.iter().any(|&(pe, seq)| seq >= syncs(pe).first_acquire())
}

/// Takes the questions of phase `number` (and any left from before it),
/// and returns those whose answer is no: races, for `report` to say.
pub(super) fn judge(me: u32, number: u64, all: &[Access], syncs: &dyn Fn(u32) -> Syncs) -> Vec<Question> {
    let mine: Vec<Question> = {
        let mut asked = crate::sync::lock(&ASKED);
        let (mine, rest) = std::mem::take(&mut *asked).into_iter().partition(|q| q.phase <= number);
        *asked = rest;
        mine
    };
    mine.into_iter()
        .filter(|q| q.phase == number && !answered(me, q.acquire, all, syncs))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pe: u32, offset: u64, kind: Kind, seq: u32) -> Access {
        Access {
            offset,
            len: 8,
            kind,
            op: 0,
            done_at_return: false,
            seq,
            site: 0,
            pe,
        }
    }

    #[test]
    fn a_pong_sent_before_any_wait_is_no_answer() {
        // PE 0 waited (its acquire 1) and saw bytes 64..72, which PE 1 wrote.
        let all = [at(0, 64, Kind::Observe, 1), at(1, 64, Kind::Write, 0)];
        let no_acquire = |_| Syncs::NONE;
        assert!(!answered(0, 1, &all, &no_acquire), "PE 1 wrote before any acquire");
        let waited = |_| Syncs {
            released: 0,
            issued: 0,
            acquired: 0,
            ..Syncs::NONE
        };
        assert!(answered(0, 1, &all, &waited), "PE 1 wrote after its first acquire");
        assert!(
            answered(0, 2, &all, &no_acquire),
            "nothing seen by acquire 2: taken as answered"
        );
        let elsewhere = [at(0, 64, Kind::Observe, 1), at(1, 128, Kind::Write, 0)];
        assert!(answered(0, 1, &elsewhere, &no_acquire), "no write of the seen bytes");
    }
}
