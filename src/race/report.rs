//! A phase's end at one PE, and the reports of what it found: the records
//! of other PEs' memory sent off, then, once the barrier is passed, the
//! phase judged and each race put in words once, with both places, the
//! object (a global's name or a heap object's allocation), and what was
//! missing between them.

use super::check::{self, Access, Kind, Syncs};
use super::exchange::{self, Header};
use super::{log, ops, reach, site, Races};
use crate::error::Result;
use crate::links::{Channel, Links};
use crate::words::who;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;

/// Races a phase reports at most (the rest of that phase's are dropped).
const MOST: usize = 64;

/// What a PE keeps of a phase to judge it after the barrier.
pub(crate) struct Phase {
    number: u64,
    mine: Syncs,
    local: Vec<Access>,
    /// Where this PE's barrier that began the phase was called.
    began_at: u64,
    lost: u64,
    /// This PE's loads and stores of the phase before, made late (`log`).
    late: Vec<Access>,
}

/// A judged phase, kept while an OpenMP team runs, for the loads and
/// stores its threads make late (`threads`).
pub(crate) struct Kept {
    number: u64,
    all: Vec<Access>,
    peers: Peers,
}

/// What each PE said of its phase: this PE's synchronizations and the
/// site of the barrier that began it, and the other PEs' headers.
struct Peers {
    me: u32,
    mine: Syncs,
    began_at: u64,
    headers: HashMap<u32, Header>,
}

impl Peers {
    fn syncs(&self, pe: u32) -> Syncs {
        match pe == self.me {
            true => self.mine,
            false => self.headers.get(&pe).map_or(Syncs::NONE, |h| h.syncs),
        }
    }

    /// Where `pe`'s barrier that began the phase was called.
    fn began(&self, pe: u32) -> u64 {
        match pe == self.me {
            true => self.began_at,
            false => self.headers.get(&pe).map_or(0, |h| h.began_at),
        }
    }
}

/// An access as it is judged: its site a code, its PE this one.
fn judged(s: &Races, entry: &log::Entry) -> Access {
    let mut a = entry.access;
    a.site = site::code(a.site);
    a.pe = s.rank;
    a
}

/// The races said already, so each is said once.
#[derive(Default)]
pub(crate) struct Reported {
    said: std::sync::Mutex<HashSet<(u64, u8, u64, u8)>>,
    /// The same by places in words: two loads on one line (`x[0] + x[1]`)
    /// are two sites but one place for the reader.
    said_at: std::sync::Mutex<HashSet<(String, u8, String, u8)>>,
    loss: std::sync::atomic::AtomicBool,
}

impl Reported {
    /// Whether the note on accesses not kept was printed already (and
    /// from now on, it was).
    pub fn noted_loss(&self) -> bool {
        self.loss.swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the race between these two places is new: each a site
    /// and a code saying what was done there (a `Kind`'s code).
    pub fn first(&self, x: (u64, u8), y: (u64, u8)) -> bool {
        let key = match x <= y {
            true => (x.0, x.1, y.0, y.1),
            false => (y.0, y.1, x.0, x.1),
        };
        if !crate::sync::lock(&self.said).insert(key) {
            return false;
        }
        let (a, b) = (site::describe(key.0), site::describe(key.2));
        if a.is_empty() || b.is_empty() {
            return true;
        }
        let words = match (&a, key.1) <= (&b, key.3) {
            true => (a, key.1, b, key.3),
            false => (b, key.3, a, key.1),
        };
        crate::sync::lock(&self.said_at).insert(words)
    }
}

/// The phase's end at this PE (`race::phase_ends`); `team_runs`: an
/// OpenMP team runs (`threads::active`).
pub(super) fn phase_ends(s: &Races, links: &Links, at: u64, team_runs: bool) -> Result<Option<Phase>> {
    let mut drained = log::drain(s.phase.load(std::sync::atomic::Ordering::Relaxed));
    let last = s
        .released
        .load(std::sync::atomic::Ordering::Relaxed)
        .max(s.issued.load(std::sync::atomic::Ordering::Relaxed));
    let carried = reach::settle(&mut drained.entries, last, log::me, team_runs);
    let (number, mine, began_at) = s.next_phase(site::code(at));
    log::carry(carried);
    let mut local = Vec::new();
    let mut sent: BTreeMap<u32, Vec<Access>> = BTreeMap::new();
    let late = drained.late.iter().map(|e| judged(s, e)).collect();
    for entry in drained.entries {
        let a = judged(s, &entry);
        match entry.target {
            log::LOCAL => local.push(a),
            t if t == s.rank => local.push(a),
            t => sent.entry(t).or_default().push(a),
        }
    }
    for (target, mut records) in sent {
        exchange::canonical(&mut records, mine);
        let squeezed = exchange::squeeze(&mut records, exchange::cap(s.memory.size));
        let header = Header {
            phase: number,
            count: records.len() as u32,
            squeezed,
            syncs: mine,
            began_at,
        };
        exchange::send(links, &s.memory, target as usize, &header, &records)?;
    }
    links.quiet_on(Channel::Default)?;
    Ok(Some(Phase {
        number,
        mine,
        local,
        began_at,
        lost: drained.lost,
        late,
    }))
}

/// Judges `phase` at this PE; `keep`: an OpenMP team runs, whose threads
/// may still make loads of this phase (`threads`), so it is kept.
pub(super) fn judge(s: &Races, phase: Phase, keep: bool) -> Result<()> {
    let me = s.rank;
    let mut all = phase.local;
    let mut headers: HashMap<u32, Header> = HashMap::new();
    for from in (0..s.memory.size).filter(|&f| f != me as usize) {
        if let Some((header, records)) = exchange::receive(&s.memory, phase.number, from) {
            headers.insert(from as u32, header);
            all.extend(records);
        }
    }
    let peers = Peers {
        me,
        mine: phase.mine,
        began_at: phase.began_at,
        headers,
    };
    if super::debugging() {
        eprintln!(
            "phase {} at {me}: mine {:?} headers {:?}\n  {:?}",
            phase.number, phase.mine, peers.headers, all
        );
    }
    judge_late(s, phase.number, phase.late)?;
    for q in super::answer::judge(me, phase.number, &all, &|pe| peers.syncs(pe)) {
        if first_at_once(s, (q.access, 1), (q.op_site, q.op)) {
            say(&q.text);
            s.count(&q.text)?;
        }
    }
    for (a, b) in check::races(me, &mut all, |pe| peers.syncs(pe), MOST) {
        tell(s, (&a, &b), &peers, phase.number)?;
    }
    let squeezed = peers.headers.values().any(|h| h.squeezed);
    *crate::sync::lock(&s.kept) = keep.then_some(Kept {
        number: phase.number,
        all,
        peers,
    });
    if (phase.lost > 0 || squeezed) && !s.report.noted_loss() {
        say(&format!(
            "oneside: --check-races on {}: in phase {} (after {} world barriers), more accesses than the checker keeps for one phase were made to this {}'s memory; races among those not kept may be missed (this note is printed once)",
            who(&(me as usize)),
            phase.number,
            phase.number,
            crate::words::noun(),
        ));
    }
    Ok(())
}

/// Judges the loads and stores a team's threads made in the phase before
/// `number` after it had ended for their PE, with that phase's kept
/// accesses.
fn judge_late(s: &Races, number: u64, late: Vec<Access>) -> Result<()> {
    let kept = crate::sync::lock(&s.kept).take();
    let Some(mut kept) = kept.filter(|k| k.number + 1 == number && !late.is_empty()) else {
        return Ok(());
    };
    kept.all.extend(late);
    let peers = &kept.peers;
    for (a, b) in check::races(s.rank, &mut kept.all, |pe| peers.syncs(pe), MOST) {
        tell(s, (&a, &b), peers, kept.number)?;
    }
    Ok(())
}

/// Reports the race between `a` and `b` in phase `phase`, once.
fn tell(s: &Races, (a, b): (&Access, &Access), peers: &Peers, phase: u64) -> Result<()> {
    if !s.report.first((a.site, a.kind.code()), (b.site, b.kind.code())) {
        return Ok(());
    }
    let other = if a.pe == s.rank { b.pe } else { a.pe };
    let text = race_words(&s.memory, s.rank, (a, b), (peers.began(other), phase));
    say(&text);
    s.count(&text)
}

/// Whether a race one PE finds alone, at once (`nbi`, `origin`), between
/// operation `op` at site `x` and `other` at site `y`, is new. Its codes
/// lie apart from the phase reports' `Kind` codes (an atomic's space).
pub(super) fn first_at_once(s: &Races, (x, op): (u64, u8), (y, other): (u64, u8)) -> bool {
    let code = |op: u8| Kind::Atomic(op).code();
    s.report.first((x, code(op)), (y, code(other)))
}

/// Says a race found at once and counts it; in abort mode it ends this
/// PE, as a failed call would (the hooks that find these return nothing).
pub(super) fn said_at_once(s: &Races, text: &str) {
    say(text);
    if s.count(text).is_err() {
        std::process::exit(66);
    }
}

/// Writes a report to standard error in one write.
pub(super) fn say(text: &str) {
    let mut line = text.to_string();
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// What `a` does, in words: `PE 1 writes 8 bytes with a put at heat.c:30`.
fn one(a: &Access) -> String {
    let verb = match a.kind {
        Kind::Read => "reads",
        Kind::Write => "writes",
        Kind::Atomic(_) => "updates atomically",
        Kind::AtomicRead(_) => "reads atomically",
        Kind::Observe => "waits on",
    };
    let at = crate::site::phrase(&site::describe(a.site));
    format!(
        "{} {verb} {} with {}{at}",
        who(&(a.pe as usize)),
        bytes(a.len),
        ops::words(a.op)
    )
}

fn bytes(n: u64) -> String {
    match n {
        1 => "1 byte".to_string(),
        n => format!("{n} bytes"),
    }
}

/// The object holding heap offset `offset` of this PE's memory, in words.
pub(super) fn object(m: &super::Memory, offset: u64, len: u64) -> String {
    let offset = offset as usize;
    let heap_len = m.heap_len;
    let found = match (offset < heap_len, m.data) {
        (true, _) => crate::watch::objects::object_at(offset),
        (false, Some((start, _))) => crate::watch::symbols::global_at(start + (offset - heap_len))
            .map(|(name, at, size)| (format!("the global '{name}'"), at, size)),
        (false, None) => None,
    };
    match found {
        Some((what, at, size)) => format!("{what} (its bytes {at} to {} of {size})", at + len as usize - 1),
        None => format!("symmetric memory at heap offset {offset}"),
    }
}

/// The phases init begins: 1 (its barrier), or 2 where the C library's
/// init ends with one more (`race::init_ended`).
pub(super) static INIT_PHASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A race in words; `began`: where the other PE's barrier that began the
/// phase was called, and the phase's number (1: the barrier in init).
fn race_words(m: &super::Memory, me: u32, (a, b): (&Access, &Access), (began, phase): (u64, u64)) -> String {
    let offset = a.offset.max(b.offset);
    let len = (a.offset + a.len).min(b.offset + b.len) - offset;
    let other = if a.pe == me { b.pe } else { a.pe };
    let last = match site::describe(began).as_str() {
        "" => format!(
            "{}'s last synchronization with {} was its start (no barrier yet)",
            who(&(other as usize)),
            who(&(me as usize))
        ),
        at => format!(
            "{}'s last synchronization with {} was {} at {at}",
            who(&(other as usize)),
            who(&(me as usize)),
            match (
                phase <= INIT_PHASES.load(std::sync::atomic::Ordering::Relaxed),
                crate::words::speaks_of_pes()
            ) {
                (true, true) => "shmem_init",
                (true, false) => "init",
                _ => "the barrier",
            }
        ),
    };
    format!(
        "oneside: data race on {}: {} and {} touch {}, and nothing orders them\n  {}\n  {}\n{}  no barrier, quiet+flag, lock or wait orders them; {last}",
        who(&(me as usize)),
        who(&(a.pe as usize)),
        who(&(b.pe as usize)),
        object(m, offset, len),
        one(a),
        one(b),
        apart(a, b),
    )
}

/// Why two atomics race, when both are: they are atomic with each other
/// only when of one type, on contexts of one team (`race::domain_tag`).
fn apart(a: &Access, b: &Access) -> &'static str {
    match a.kind.atomic().is_some() && b.kind.atomic().is_some() {
        true => {
            "  two atomics are atomic with each other only when they are of one type and made on contexts of one team\n"
        }
        false => "",
    }
}
