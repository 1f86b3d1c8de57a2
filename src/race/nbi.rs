//! Buffers that a non-blocking operation still uses: the source of a
//! `put_nbi` (or of a non-blocking put-with-signal), which it may still
//! read, and the destination of a `get_nbi` or fetching atomic, which it
//! may still write, until the quiet that completes it. A C program's load
//! or store of such a buffer before that quiet is a race, reported at
//! once: no other PE is needed to see it.
//!
//! In an OpenMP team (`threads`) a quiet completes the buffer only for
//! the threads it happens before: the buffer is kept, marked with the
//! quiet's stamp, and another thread's access whose view is older races
//! with the operation too, until the team ends.

use super::{ops, site};
use crate::words::who;
use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// How the operation uses its local buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// A put's source: a store into it races.
    Reads,
    /// A get's destination: a load or a store races.
    Writes,
}

struct Pending {
    lo: usize,
    hi: usize,
    used: Use,
    op: u8,
    site: u64,
    /// The stamp of the quiet that completed it in a team (0: pending).
    done_at: u64,
    /// A put-with-signal's: the phase and number of the first acquire
    /// after it, which may have answered its signal (`answer`).
    answered: Option<(u64, u32)>,
}

static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());
/// How many buffers are pending.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// Sets [`COUNT`], and the hooks' filter (`log::WATCH_PENDING`).
fn counted(n: usize) {
    COUNT.store(n, Relaxed);
    super::log::watch(super::log::WATCH_PENDING, n != 0);
}

/// Notes that a non-blocking operation (`op`, made at `at`) uses `len`
/// bytes at `addr` until the next quiet.
#[doc(hidden)]
pub fn nbi_buffer(at: &'static Location<'static>, addr: usize, len: usize, used: Use, op: u8) {
    if !super::on() || len == 0 {
        return;
    }
    let site = super::api_site(at);
    // Another thread of the team touched the buffer just before, with
    // nothing ordering its access before this issue.
    if let Some(seen) = super::log::trailed(addr, addr + len, used == Use::Writes) {
        before_issue(&seen, (op, site), (addr, len), used);
    }
    let mut pending = crate::sync::lock(&PENDING);
    // Two pending operations on overlapping buffers, one of them writing
    // it (a get's destination): the order they use it in is not defined.
    let clash = pending
        .iter()
        .find(|p| {
            p.done_at == 0
                && p.answered.is_none()
                && addr < p.hi
                && p.lo < addr + len
                && (used == Use::Writes || p.used == Use::Writes)
        })
        .map(|p| (p.op, p.site));
    if let Some((other, other_site)) = clash {
        drop(pending);
        two_pending((op, site), (other, other_site), len);
        pending = crate::sync::lock(&PENDING);
    }
    pending.push(Pending {
        lo: addr,
        hi: addr + len,
        used,
        op,
        site,
        done_at: 0,
        answered: None,
    });
    super::shadow::mark(addr, len);
    counted(pending.len());
}

/// Keeps the pending buffers `keep` says, and unmarks the others' shadow
/// where nothing else watched lies (`shadow`).
fn retain(pending: &mut Vec<Pending>, keep: impl Fn(&Pending) -> bool) {
    let gone: Vec<(usize, usize)> = pending.iter().filter(|p| !keep(p)).map(|p| (p.lo, p.hi)).collect();
    pending.retain(|p| keep(p));
    for (lo, hi) in gone {
        super::shadow::unmark(lo, hi - lo, |g, n| {
            super::symmetric_range(g, n) || pending.iter().any(|p| g < p.hi && p.lo < g + n)
        });
    }
    counted(pending.len());
}

/// Every pending operation completed (a quiet), for the calling thread
/// and, outside a team (`team`: whether one runs), for all.
pub(super) fn completed(team: bool) {
    if COUNT.load(Relaxed) == 0 {
        return;
    }
    let mut pending = crate::sync::lock(&PENDING);
    match team {
        true => {
            let stamp = super::thread_stamp();
            for p in pending.iter_mut().filter(|p| p.done_at == 0) {
                p.done_at = stamp;
            }
        }
        false => retain(&mut pending, |_| false),
    }
    counted(pending.len());
}

/// The last team ended: its threads are all ordered after every quiet.
pub(super) fn team_ended() {
    if COUNT.load(Relaxed) != 0 {
        let mut pending = crate::sync::lock(&PENDING);
        retain(&mut pending, |p| p.done_at == 0);
    }
}

/// An acquire, number `n` of `phase`: what this PE waited for may answer
/// a put-with-signal it made, whose data arrived before its signal, so
/// such a put may no longer read its source (a ping answered by a pong).
/// Whether it did is known only at the phase's end (`answer`): until a
/// quiet, an access to the source becomes a question. A plain `put_nbi`
/// stays pending: only a quiet completes it.
///
/// A ping-pong loop with no quiet would keep every ping's source: past
/// [`ANSWERED`] such sources, the oldest are let go (a race on one may
/// then be missed, never invented).
pub(super) fn acquired(phase: u64, n: u32) {
    if COUNT.load(Relaxed) != 0 {
        let mut pending = crate::sync::lock(&PENDING);
        for p in pending.iter_mut() {
            if p.op == ops::PUT_SIGNAL && p.done_at == 0 && p.answered.is_none() {
                p.answered = Some((phase, n));
            }
        }
        let mut answers: Vec<(u64, u32)> = pending.iter().filter_map(|p| p.answered).collect();
        if answers.len() > ANSWERED {
            // The newest ANSWERED stay (those answered by one acquire go together).
            answers.sort_unstable();
            let cutoff = answers[answers.len() - ANSWERED - 1];
            retain(&mut pending, |p| p.answered.is_none_or(|a| a > cutoff));
        }
    }
}

/// The answered put-with-signal sources kept until a quiet (`acquired`).
const ANSWERED: usize = 64;

/// A C program's load (`kind` 0), store (1), atomic (2) or atomic load
/// (3) at `addr`, while a buffer is pending (the caller's filter is
/// `log::WATCH_PENDING`).
pub(super) fn touched(addr: usize, size: usize, kind: u8, pc: usize) {
    // A buffer a quiet completed races only with a team thread that the
    // quiet does not happen before.
    let view = super::log::view();
    let stamp = super::thread_stamp();
    let hit = {
        let pending = crate::sync::lock(&PENDING);
        pending
            .iter()
            .filter(|p| p.done_at == 0 || (view != super::log::FOLLOW && stamp < p.done_at))
            .find(|p| addr < p.hi && p.lo < addr + size && (matches!(kind, 1 | 2) || p.used == Use::Writes))
            .map(|p| (p.lo, p.hi, p.used, p.op, p.site, p.done_at != 0, p.answered))
    };
    let Some((lo, hi, used, op, op_site, other_thread, answered)) = hit else {
        return;
    };
    let Some(s) = super::state() else { return };
    let access = site::code(site::raw_c(pc));
    let op_site = site::code(op_site);
    if answered.is_none() && !super::report::first_at_once(s, (access, u8::from(matches!(kind, 1 | 2))), (op_site, op))
    {
        return;
    }
    let me = who(&(s.rank as usize));
    let (verb, what) = match kind {
        0 | 3 if other_thread => ("reads", "which another thread completed"),
        0 | 3 => ("reads", "before it has arrived"),
        _ => match used {
            Use::Reads => ("writes", "which it may still be reading"),
            Use::Writes => ("writes", "which it may still overwrite"),
        },
    };
    let text = format!(
        "oneside: data race on {me}: a {} at {} {verb} {} of the buffer of {}{}, {what}\n  {me} {verb} byte {} of that {}-byte buffer{}\n  {} made the operation{}\n  {}",
        match kind {
            0 => "load",
            1 => "store",
            _ => "atomic",
        },
        describe_or_unknown(access),
        verb_object(size),
        ops::words(op),
        crate::site::phrase(&site::describe(op_site)),
        addr.saturating_sub(lo),
        hi - lo,
        crate::site::phrase(&site::describe(access)),
        me,
        crate::site::phrase(&site::describe(op_site)),
        match other_thread {
            false if answered.is_some() => "no quiet completes the operation between them, and the wait before the access saw a value written before its writer waited for anything, so it was no answer to this signal: call shmem_quiet (or a barrier) first",
            false => "no quiet completes the operation between them: call shmem_quiet (or a barrier) first",
            true => "another thread's quiet completed it, but nothing orders that quiet before this thread's access: a barrier, join, taskwait, critical section, mutex or lock between them would",
        },
    );
    match answered {
        Some((phase, acquire)) => super::answer::ask(super::answer::Question {
            phase,
            acquire,
            access,
            op_site,
            op,
            text,
        }),
        None => super::report::said_at_once(s, &text),
    }
}

/// Another strand's access `seen`, made before the issue of `op` (at
/// `site`) on the buffer of `len` bytes at `addr`, and not ordered
/// before it.
fn before_issue(seen: &super::trail::Seen, (op, site): (u8, u64), (addr, len): (usize, usize), used: Use) {
    let Some(s) = super::state() else { return };
    let store = matches!(seen.kind, 1 | 2);
    let (access, op_site) = (site::code(site::raw_c(seen.pc)), site::code(site));
    if !super::report::first_at_once(s, (access, u8::from(store)), (op_site, op)) {
        return;
    }
    let me = who(&(s.rank as usize));
    let verb = if store { "writes" } else { "reads" };
    let lo = seen.lo.max(addr);
    let hi = seen.hi.min(addr + len);
    let text = format!(
        "oneside: data race on {me}: a {} at {} {verb} {} of the buffer of {}{}, which another thread issued after it with nothing ordering them\n  {me} {verb} byte {} of that {len}-byte buffer{}, on one thread\n  {me} then made the operation{}, on another thread (or section)\n  no barrier, join, taskwait, critical section, mutex or lock orders the access before the operation, which {}: order them, or give each thread its own buffer",
        if store { "store" } else { "load" },
        describe_or_unknown(access),
        verb_object(hi - lo),
        ops::words(op),
        crate::site::phrase(&site::describe(op_site)),
        lo - addr,
        crate::site::phrase(&site::describe(access)),
        crate::site::phrase(&site::describe(op_site)),
        match used {
            Use::Writes => "may overwrite the buffer while it is used",
            Use::Reads => "may send the buffer before or after that store",
        },
    );
    super::report::said_at_once(s, &text);
}

/// Two non-blocking operations pending on one buffer, one writing it.
fn two_pending((op, site): (u8, u64), (other, other_site): (u8, u64), len: usize) {
    let Some(s) = super::state() else { return };
    let (site, other_site) = (site::code(site), site::code(other_site));
    if !super::report::first_at_once(s, (site, op), (other_site, other)) {
        return;
    }
    let me = who(&(s.rank as usize));
    let text = format!(
        "oneside: data race on {me}: two non-blocking operations use one {len}-byte buffer, one of them writing it, and no quiet orders them\n  {me} starts {}{}\n  {me} started {}{}, not completed yet\n  no quiet completes the first operation between them: call shmem_quiet first",
        ops::words(op),
        crate::site::phrase(&site::describe(site)),
        ops::words(other),
        crate::site::phrase(&site::describe(other_site)),
    );
    super::report::said_at_once(s, &text);
}

fn describe_or_unknown(code: u64) -> String {
    match site::describe(code) {
        words if words.is_empty() => "an unknown place".to_string(),
        words => words,
    }
}

fn verb_object(size: usize) -> String {
    match size {
        1 => "1 byte".to_string(),
        n => format!("{n} bytes"),
    }
}
