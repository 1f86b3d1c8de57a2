//! The checking mode (`rlaunch --debug`, `ONESIDE_DEBUG=1`): checks too
//! costly for production, each an error that names the rank, the call and
//! where the program made it, instead of a hang or a wrong answer.
//!
//! * **Collectives match.** Each collective writes its signature (the call
//!   and its number on the team, root, element count and size, source
//!   location) to a ring of records in its own heap, then reads the
//!   previous member's record of the same call and compares. Every member
//!   checking its neighbour checks them all. A barrier or sync compares
//!   after it (`coll::agree`): it cannot hang or write anything whatever
//!   the others called, and by then every record is there, so it never
//!   waits for one; mostly it reads none, but the digest the previous
//!   member left beside its flag (`Signature::digest`). Allocations and
//!   frees are collectives (their barrier carries the size), so they are
//!   matched the same way.
//! * **A destination is not reused too early.** A broadcast, collect or
//!   alltoall writes every member's destination; if the team's previous
//!   collective used the same bytes as its destination and no barrier or
//!   sync came between, some member may still be in that collective.
//!
//! With the mode off, `World::debug` is `None` and a collective pays one
//! branch.

use crate::error::{Error, Result};
use crate::team::layout::MAX_TEAMS;
use std::sync::Mutex;

/// Records kept per team: a member can be this many calls ahead.
const RING: usize = 16;
/// Bytes per record: 8 words, then the source location's text.
pub(crate) const RECORD: usize = 128;
const WORDS: usize = 8;
/// The bytes of a record's words, before its text.
pub(crate) const RECORD_WORDS: usize = WORDS * 8;
/// The word that holds a C place's site code (0: the place is text).
const SITE: usize = 5;
/// Heap bytes the checking mode takes (allocated at start, on every rank).
pub(crate) const AREA_BYTES: usize = MAX_TEAMS * RING * RECORD;

thread_local! {
    /// An allocation or free whose barrier is about to run: the barrier's
    /// signature then carries it (`outer`, `take_outer`).
    static OUTER: std::cell::Cell<Option<(&'static str, usize)>> = const { std::cell::Cell::new(None) };
}

/// Marks this thread's next barrier as allocation `op` of `bytes`, so
/// members compare allocations, not just barriers.
pub(crate) fn outer(op: &'static str, bytes: usize) {
    OUTER.with(|o| o.set(Some((op, bytes))));
}

/// The signature a barrier carries: an allocation's, if one is pending.
pub(crate) fn barrier_signature() -> Signature {
    match OUTER.with(|o| o.take()) {
        Some((op, bytes)) => Signature {
            op,
            root: None,
            count: bytes,
            size: 1,
        },
        None => Signature {
            op: "team_sync",
            root: None,
            count: 0,
            size: 0,
        },
    }
}

/// Whether `ONESIDE_DEBUG` asks for the checks.
pub(crate) fn requested() -> bool {
    std::env::var_os("ONESIDE_DEBUG").is_some_and(|v| !v.is_empty() && v != "0")
}

/// One collective call, as members compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    pub op: &'static str,
    pub root: Option<usize>,
    pub count: usize,
    pub size: usize,
}

/// The names a signature's `op` is stored as (its index).
const OPS: [&str; 13] = [
    "team_sync",
    "broadcast",
    "reduce",
    "reduce_values",
    "collect",
    "fcollect",
    "alltoall",
    "alltoalls",
    "inscan",
    "exscan",
    "alloc",
    "free",
    "?",
];

impl Signature {
    /// A collective of `count` elements of `T`.
    pub fn of<T>(op: &'static str, root: Option<usize>, count: usize) -> Signature {
        Signature {
            op,
            root,
            count,
            size: std::mem::size_of::<T>(),
        }
    }

    fn words(&self, call: u64, site: u64) -> [u64; WORDS] {
        let op = OPS.iter().position(|&o| o == self.op).unwrap_or(OPS.len() - 1);
        let root = self.root.map_or(u64::MAX, |r| r as u64);
        [call, op as u64, root, self.count as u64, self.size as u64, site, 0, 0]
    }

    /// The call and this signature in one word, which a sync leaves beside
    /// its flag (`Layout::check_note`): the call number's low 24 bits over
    /// 40 bits of a hash of the rest. Equal digests are taken as equal
    /// calls; any other word sends the receiver to the sender's record.
    pub fn digest(&self, call: u64) -> u64 {
        let words = self.words(call, 0);
        let hash = words[1..SITE]
            .iter()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, w| (h ^ w).wrapping_mul(0x0100_0000_01b3));
        ((call & 0xff_ffff) << 40) | (hash >> 24)
    }

    fn from_words(w: &[u64; WORDS]) -> Signature {
        Signature {
            op: OPS.get(w[1] as usize).copied().unwrap_or("?"),
            root: (w[2] != u64::MAX).then_some(w[2] as usize),
            count: w[3] as usize,
            size: w[4] as usize,
        }
    }

    /// `broadcast(root 0, 4 elements of 8 bytes)`.
    fn describe(&self) -> String {
        let root = self.root.map_or(String::new(), |r| format!("root {r}, "));
        match self.op {
            "alloc" | "free" => format!("{}({} bytes)", self.op, self.count),
            "team_sync" => "a barrier or sync".to_string(),
            op => format!("{op}({root}{} elements of {} bytes)", self.count, self.size),
        }
    }
}

/// Where a collective was called, as its record carries it: a Rust
/// caller's words, or a C caller's site code (`race::site`), which another
/// rank can read too. A C place is put in words only for a message: doing
/// it at the first collective cost a short program a tenth of a second
/// (the library's debug information, decompressed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    Words(String),
    Code(u64),
}

impl Place {
    /// The place in words (`file:line`), or "" when unknown.
    pub fn words(&self) -> String {
        match self {
            Place::Words(words) => words.clone(),
            Place::Code(code) => crate::race::site::describe(*code),
        }
    }
}

/// A team's previous collective, for the destination check.
#[derive(Debug, Clone)]
struct Previous {
    op: &'static str,
    at: Place,
    dst: (usize, usize),
}

/// The checking mode's state in a `World`.
pub(crate) struct Checks {
    /// Heap offset of this rank's records.
    area: usize,
    previous: Mutex<[Option<Previous>; MAX_TEAMS]>,
    /// Whether any team has a previous collective: a barrier with none
    /// takes no lock.
    any_previous: std::sync::atomic::AtomicBool,
}

impl Checks {
    pub fn new(area: usize) -> Checks {
        Checks {
            area,
            previous: Mutex::new(std::array::from_fn(|_| None)),
            any_previous: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Heap offset of the record of call `call` on team slot `slot`.
    pub fn record(&self, slot: usize, call: u64) -> usize {
        self.area + (slot * RING + (call as usize % RING)) * RECORD
    }

    /// Encodes this rank's record of `sig` for call `call`, made at `at`
    /// (a C site's code in a word, other places as text); the call number
    /// comes last in memory order (see `store`).
    pub fn encode(sig: &Signature, call: u64, at: &Place) -> ([u64; WORDS], [u8; RECORD - WORDS * 8]) {
        let mut text = [0u8; RECORD - WORDS * 8];
        let site = match at {
            Place::Code(code) => *code,
            Place::Words(words) => {
                let n = words.len().min(text.len());
                text[..n].copy_from_slice(&words.as_bytes()[..n]);
                0
            }
        };
        (sig.words(call, site), text)
    }

    /// Whether a record (its words read) has a place in words after them.
    pub fn has_text(bytes: &[u8; RECORD]) -> bool {
        bytes[SITE * 8..SITE * 8 + 8] == [0; 8]
    }

    /// Decodes a record read from a member: its call number, signature and location.
    pub fn decode(bytes: &[u8; RECORD]) -> (u64, Signature, Place) {
        let words: [u64; WORDS] =
            std::array::from_fn(|i| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes")));
        let at = match words[SITE] {
            0 => {
                let text = &bytes[WORDS * 8..];
                let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                Place::Words(String::from_utf8_lossy(&text[..end]).into_owned())
            }
            code => Place::Code(code),
        };
        (words[0], Signature::from_words(&words), at)
    }

    /// Checks `op`'s destination `dst` (heap offset, bytes) against the
    /// team's previous collective, and remembers it; a barrier, sync,
    /// allocation or free forgets. An error names the call as the program
    /// made it (`name`: `shmem_long_broadcast`, `broadcast`).
    pub fn destination(
        &self,
        rank: usize,
        slot: usize,
        (op, name): (&'static str, &str),
        at: &Place,
        dst: Option<(usize, usize)>,
    ) -> Result<()> {
        let sync = matches!(op, "team_sync" | "alloc" | "free");
        if sync && !self.any_previous.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let mut previous = crate::sync::lock(&self.previous);
        if sync {
            match slot {
                0 => previous.iter_mut().for_each(|p| *p = None),
                s => previous[s] = None,
            }
            return Ok(());
        }
        let Some((offset, len)) = dst.filter(|&(_, len)| len > 0) else {
            return Ok(());
        };
        let writes_others = matches!(op, "broadcast" | "collect" | "fcollect" | "alltoall" | "alltoalls");
        if let Some(p) = previous[slot].as_ref().filter(|_| writes_others) {
            let (p_off, p_len) = p.dst;
            if offset < p_off + p_len && p_off < offset + len {
                return Err(Error::Check {
                    rank,
                    call: name.to_string(),
                    at: at.words(),
                    detail: format!(
                        "its destination (heap offset {offset}, {len} bytes) is the destination of the team's previous collective, {} at {}, which some member may still be in: {op} writes every member's destination, so put a barrier or sync between the two (OpenSHMEM: the destination must be ready on every PE)",
                        p.op,
                        p.at.words()
                    ),
                });
            }
        }
        self.any_previous.store(true, std::sync::atomic::Ordering::Relaxed);
        previous[slot] = Some(Previous {
            op,
            at: at.clone(),
            dst: (offset, len),
        });
        Ok(())
    }
}

/// The error for two members' different calls, on `rank`, whose call the
/// program made as `name`.
pub(crate) fn mismatch(
    (rank, name): (usize, &str),
    call: u64,
    (mine, at): (&Signature, &Place),
    other: usize,
    (theirs, their_at): (&Signature, &Place),
) -> Error {
    let (at, their_at) = (at.words(), their_at.words());
    Error::Check {
        rank,
        call: name.to_string(),
        at: at.clone(),
        detail: format!(
            "collectives do not match: as the {} collective call on the team since init, this rank called {}{}, but rank {other} called {}{}; every member must make the same collective calls, with the same root, count and type, in the same order",
            crate::words::ordinal(call),
            mine.describe(),
            crate::site::phrase(&at),
            theirs.describe(),
            crate::site::phrase(&their_at)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips() {
        let sig = Signature {
            op: "broadcast",
            root: Some(2),
            count: 4,
            size: 8,
        };
        for at in [Place::Words("x.rs:3:5".to_string()), Place::Code(0x8000_0000_0000_1234)] {
            let (words, text) = Checks::encode(&sig, 7, &at);
            let mut bytes = [0u8; RECORD];
            for (i, w) in words.iter().enumerate() {
                bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
            }
            bytes[WORDS * 8..].copy_from_slice(&text);
            assert_eq!(Checks::decode(&bytes), (7, sig.clone(), at));
        }
    }

    #[test]
    fn digests_tell_calls_and_signatures_apart() {
        let sync = Signature::of::<u8>("team_sync", None, 0);
        let alloc = |bytes| Signature {
            op: "alloc",
            root: None,
            count: bytes,
            size: 1,
        };
        assert_eq!(sync.digest(5), sync.clone().digest(5));
        assert_ne!(sync.digest(5), sync.digest(6));
        assert_ne!(sync.digest(5), alloc(64).digest(5));
        assert_ne!(alloc(64).digest(5), alloc(128).digest(5));
        assert_eq!(sync.digest(5) >> 40, 5);
    }

    #[test]
    fn reusing_a_destination_without_a_sync_is_an_error_and_a_sync_clears_it() {
        let checks = Checks::new(0);
        let call = |op| (op, op);
        let at = |words: &str| Place::Words(words.to_string());
        checks
            .destination(1, 0, call("reduce"), &at("a.rs:1"), Some((64, 8)))
            .unwrap();
        let e = checks
            .destination(
                1,
                0,
                ("broadcast", "shmem_long_broadcast"),
                &at("a.rs:2"),
                Some((64, 8)),
            )
            .unwrap_err();
        assert!(e.to_string().contains("reduce at a.rs:1"), "{e}");
        assert!(e.to_string().contains("shmem_long_broadcast at a.rs:2"), "{e}");
        checks
            .destination(1, 0, call("team_sync"), &at("a.rs:3"), None)
            .unwrap();
        checks
            .destination(1, 0, call("broadcast"), &at("a.rs:4"), Some((64, 8)))
            .unwrap();
        checks
            .destination(1, 0, call("reduce"), &at("a.rs:5"), Some((64, 8)))
            .unwrap();
        checks
            .destination(1, 0, call("reduce"), &at("a.rs:6"), Some((64, 8)))
            .unwrap();
    }
}
