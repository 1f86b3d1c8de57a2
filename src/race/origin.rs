//! One PE's own operations on another PE's bytes, in the order it issued
//! them. OpenSHMEM completes a put, a non-blocking get and a non-fetching
//! atomic only at the next quiet, and orders one PE's puts only by a
//! fence. So, with no quiet between them:
//!
//! * a get (or fetching atomic) of bytes a pending put writes may read
//!   them before the put lands;
//! * a put to bytes a pending put also writes, with no fence between, may
//!   land first;
//! * a put to bytes a pending non-blocking get reads may land before the
//!   get reads them.
//!
//! Each is a race found at once, at the PE that made both, as `nbi` finds
//! a buffer reused too early. Two atomics are never one. An acquire (a
//! wait or test that returned true, a fetching atomic, a lock) forgets
//! every pending operation: what it saw may be another PE's answer to
//! one, which then has landed. That can hide a race, never invent one.

use super::check::Kind;
use super::{ops, site};
use crate::words::who;
use std::sync::Mutex;

/// An operation not yet completed by a quiet.
struct Pending {
    target: u32,
    /// The context that issued it (`Channel::race_id`).
    ctx: usize,
    lo: u64,
    hi: u64,
    /// A put or non-fetching atomic (else a non-blocking get).
    writes: bool,
    atomic: bool,
    /// A fence came after it: later puts land after it.
    fenced: bool,
    op: u8,
    site: u64,
}

impl Pending {
    /// Whether `other` can join this entry: the same kind of operation
    /// from the same place, on touching bytes of the same target. A run
    /// of puts from one loop stays one entry, so the list stays short.
    fn joins(&self, other: &Pending) -> bool {
        self.target == other.target
            && self.ctx == other.ctx
            && (self.writes, self.atomic, self.fenced, self.op, self.site)
                == (other.writes, other.atomic, other.fenced, other.op, other.site)
            && self.lo <= other.hi
            && other.lo <= self.hi
    }
}

static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// Pending operations kept; past it the oldest are forgotten (a race may
/// then be missed, never invented). Each operation looks at every one.
const MOST: usize = 1024;

/// This PE issued `kind` (`op`, from raw site `raw`) on `target`'s bytes
/// `[offset, offset + len)`; `done_at_return`: complete when its call
/// returned (a blocking get, a fetching atomic).
pub(super) fn issued(
    raw: u64,
    (target, ctx): (usize, usize),
    (offset, len): (usize, usize),
    (kind, op): (Kind, u8),
    done_at_return: bool,
) {
    let (lo, hi) = (offset as u64, (offset + len) as u64);
    let writes = matches!(kind, Kind::Write | Kind::Atomic(_));
    let atomic = kind.atomic().is_some();
    let target = target as u32;
    let mut pending = crate::sync::lock(&PENDING);
    let clash = pending
        .iter()
        .rev()
        .find(|p| {
            p.target == target
                && lo < p.hi
                && p.lo < hi
                && !(atomic && p.atomic)
                && match (p.writes, writes) {
                    // A pending put, then a get: may read before it lands.
                    (true, false) => true,
                    // Two puts: ordered by a fence of their context
                    // between them only.
                    (true, true) => !(p.fenced && p.ctx == ctx),
                    // A pending get, then a put: may land before it reads.
                    (false, true) => true,
                    (false, false) => false,
                }
        })
        .map(|p| (p.op, p.site, p.writes, p.lo.max(lo), p.hi.min(hi)));
    if !done_at_return {
        let new = Pending {
            target,
            ctx,
            lo,
            hi,
            writes,
            atomic,
            fenced: false,
            op,
            site: raw,
        };
        match pending.iter_mut().rev().find(|p| p.joins(&new)) {
            Some(p) => {
                p.lo = p.lo.min(lo);
                p.hi = p.hi.max(hi);
            }
            None => {
                if pending.len() >= MOST {
                    pending.remove(0);
                }
                pending.push(new);
            }
        }
    }
    drop(pending);
    if let Some(first) = clash {
        report((op, raw, writes), first, target);
    }
}

/// A fence on context `ctx` (`race::ALL`: every one): its pending puts
/// are ordered before its later ones. Entries that differed only in that
/// now join.
pub(super) fn fenced(ctx: usize) {
    let mut pending = crate::sync::lock(&PENDING);
    if pending.is_empty() {
        return;
    }
    for p in pending.iter_mut().filter(|p| ctx == super::ALL || p.ctx == ctx) {
        p.fenced = true;
    }
    pending.sort_by_key(|p| (p.target, p.site, p.op, p.writes, p.atomic, p.lo));
    let mut joined: Vec<Pending> = Vec::with_capacity(pending.len());
    for p in pending.drain(..) {
        match joined.last_mut().filter(|last| last.joins(&p)) {
            Some(last) => last.hi = last.hi.max(p.hi),
            None => joined.push(p),
        }
    }
    *pending = joined;
}

/// A quiet, or an acquire (see the module's header): nothing is pending.
pub(super) fn completed() {
    crate::sync::lock(&PENDING).clear();
}

/// A quiet on context `ctx` (`race::ALL`: every one): its operations are
/// complete; another context's are not (OpenSHMEM's `shmem_quiet` is the
/// default context's).
pub(super) fn completed_on(ctx: usize) {
    match ctx {
        super::ALL => completed(),
        ctx => crate::sync::lock(&PENDING).retain(|p| p.ctx != ctx),
    }
}

fn report(
    (op, raw, writes): (u8, u64, bool),
    (first_op, first_raw, first_writes, lo, hi): (u8, u64, bool, u64, u64),
    target: u32,
) {
    let Some(s) = super::state() else { return };
    let (later, first) = (site::code(raw), site::code(first_raw));
    if !super::report::first_at_once(s, (later, op), (first, first_op)) {
        return;
    }
    let me = who(&(s.rank as usize));
    let them = who(&(target as usize));
    let what = match (first_writes, writes) {
        (true, false) => "may read them before the first lands",
        (true, true) => "may land before the first",
        _ => "may land before the first reads them",
    };
    let fix = match (first_writes, writes) {
        (true, true) => "no fence or quiet orders them: call shmem_fence (or shmem_quiet) between them",
        _ => "no quiet completes the first before the second: call shmem_quiet between them",
    };
    let text = format!(
        "oneside: data race on {them}: {me} issues two operations on {} of {them}'s memory with nothing completing the first, and the second {what}\n  {me} {} with {}{}, not completed\n  {me} then {} with {}{}\n  {fix}",
        super::report::object(&s.memory, lo, hi - lo),
        verb(first_writes),
        ops::words(first_op),
        crate::site::phrase(&site::describe(first)),
        verb(writes),
        ops::words(op),
        crate::site::phrase(&site::describe(later)),
    );
    super::report::said_at_once(s, &text);
}

fn verb(writes: bool) -> &'static str {
    match writes {
        true => "writes them",
        false => "reads them",
    }
}
