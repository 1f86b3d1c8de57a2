//! Collectives on teams: the machinery every algorithm shares.
//!
//! A collective call is a sequence of *steps*. In a step, a member sends
//! data (a put) and then a *notification*: it stores a step number into its
//! own flag word in the receiver's team slot (`team::layout`). A receiver
//! waits until the sender's flag reaches that number. Step numbers are
//! `(call << STEP_BITS) | step`, where `call` counts the collectives this
//! rank has run on the team, so they only grow between a sender and a
//! receiver, flags never need resetting, and a sender that is already a
//! step or a call ahead never confuses a slower receiver.
//!
//! Every collective has two families of algorithms (chosen in `plan`):
//! * **mapped**: every member's heap is mapped here (one node). Members read
//!   each other's source objects directly: no intermediate copies.
//! * **remote**: some member is behind TCP or verbs. Data is pushed with
//!   puts into destination objects (which OpenSHMEM requires to be ready on
//!   entry) or into the team slot's scratch.
//!
//! Small messages of either family go through the *exchange* (`exchange`):
//! every member sends to every other member's scratch in the same step, so
//! a member cannot start step `s + 2` before all others finished reading
//! step `s`, and two scratch halves (by step parity) suffice.

mod agree;
mod alltoall;
mod broadcast;
mod collect;
mod collect_nodes;
mod exchange;
mod gather_nodes;
pub(crate) mod ops;
mod plan;
mod reduce;
mod reduce_doubling;
mod scan;
mod sync;

use crate::error::{Error, Result};
use crate::links::primitives::Access;
use crate::links::Channel;
use crate::links::FlagWait;
use crate::sym::{Pod, Sym};
use crate::sync::InCollective;
use crate::team::layout::Layout;
use crate::team::Team;
use crate::watch::Waiting;
use crate::world::World;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of a step number that number steps within one call.
const STEP_BITS: u32 = 24;

/// A list of member numbers taking part in an algorithm: the whole team,
/// or a subset (node leaders, heads). A copyable view, so the common case
/// allocates nothing.
#[derive(Clone, Copy)]
pub(crate) enum Members<'m> {
    /// Members `0..n`.
    All(usize),
    /// These members, in this order.
    Some(&'m [usize]),
}

impl Members<'_> {
    #[inline]
    pub fn len(self) -> usize {
        match self {
            Members::All(n) => n,
            Members::Some(list) => list.len(),
        }
    }

    /// The `i`th member.
    #[inline]
    pub fn get(self, i: usize) -> usize {
        match self {
            Members::All(_) => i,
            Members::Some(list) => list[i],
        }
    }

    /// Where member `member` stands in the list, if it is in it.
    #[inline]
    pub fn position(self, member: usize) -> Option<usize> {
        match self {
            Members::All(n) => (member < n).then_some(member),
            Members::Some(list) => list.iter().position(|&m| m == member),
        }
    }
}

/// One collective call in progress on one rank.
pub(crate) struct Coll<'a> {
    pub w: &'a World,
    pub t: &'a Team,
    pub op: &'static str,
    call: u64,
    layout: Layout,
    /// Where the program called it, and its destination in this rank's
    /// heap if it has one (`agree`): written down for the race checker
    /// when the call ends.
    at: &'static std::panic::Location<'static>,
    dst: std::cell::Cell<Option<(usize, usize)>>,
    /// Under `--debug`, a sync's digest, which its notifications leave
    /// beside the flag (`agree`).
    check_note: std::cell::Cell<Option<u64>>,
    _entered: InCollective<'a>,
    _span: Option<crate::profile::Span>,
    _call: Option<crate::watch::CallGuard>,
}

impl Drop for Coll<'_> {
    fn drop(&mut self) {
        if let Some(dst) = self.dst.get().filter(|_| crate::race::on()) {
            crate::race::collective_wrote(self.at, dst);
        }
    }
}

impl<'a> Coll<'a> {
    /// Starts a call of `op` on `team`.
    #[track_caller]
    pub fn begin(w: &'a World, t: &'a Team, op: &'static str) -> Result<Coll<'a>> {
        let at = std::panic::Location::caller();
        crate::error::located_call(|| {
            let call_guard = crate::watch::call(op);
            let span = crate::profile::span(crate::profile::Family::of_collective(op));
            let entered = w.collective.enter(w.rank, op)?;
            w.check_team(op, t)?;
            let call = t.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            // A world sync ends a race-checking phase instead.
            if crate::race::on() && !(op == "team_sync" && t.slot == 0) {
                crate::race::collective();
            }
            Ok(Coll {
                w,
                t,
                op,
                call,
                layout: w.team_layout(),
                at,
                dst: std::cell::Cell::new(None),
                check_note: std::cell::Cell::new(None),
                _entered: entered,
                _span: span,
                _call: call_guard,
            })
        })
    }

    /// Number of members.
    #[inline]
    pub fn n(&self) -> usize {
        self.t.n_pes()
    }

    /// This rank's member number.
    #[inline]
    pub fn me(&self) -> usize {
        self.t.my_pe()
    }

    /// World rank of member `i`.
    #[inline]
    pub fn rank(&self, i: usize) -> usize {
        self.t.rank_of(i)
    }

    fn value(&self, step: u64) -> u64 {
        assert!(step < 1 << STEP_BITS, "a collective of more than 2^24 steps");
        (self.call << STEP_BITS) | step
    }

    /// Heap offset of this team's scratch (the same on every member).
    #[inline]
    pub fn scratch(&self) -> usize {
        self.layout.scratch(self.t.slot)
    }

    /// Tells member `to` that this rank reached `step`: after every earlier
    /// put of this rank to `to`, and after a sync's digest under `--debug`. The furthest step signalled is kept for
    /// the farewell (`World::slot_reached`): a member waiting for a step
    /// at or below it waits for one on its way.
    #[track_caller]
    pub fn notify(&self, to: usize, step: u64) -> Result<()> {
        crate::error::located(|| {
            let flag = self.layout.flag(self.t.slot, self.me());
            let value = self.value(step);
            if let Some(digest) = self.check_note.get() {
                let note = self.layout.check_note(self.t.slot, self.me());
                self.w.links.coll_copy_in(self.rank(to), note, &digest.to_ne_bytes())?;
            }
            self.w.links.flag_store(self.rank(to), flag, value)?;
            self.w.slot_reached[self.t.slot].fetch_max(value, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        })
    }

    /// Puts `src` at heap offset `offset` of member `to`.
    #[track_caller]
    pub fn put(&self, to: usize, offset: usize, src: &[u8]) -> Result<()> {
        crate::error::located(|| {
            crate::profile::collective_bytes(self.rank(to), src.len());
            self.w.links.coll_copy_in(self.rank(to), offset, src)
        })
    }

    /// Puts `len` bytes from this rank's heap offset `from` to heap offset
    /// `offset` of member `to` (forwarding what arrived here).
    #[track_caller]
    pub fn forward(&self, to: usize, offset: usize, from: usize, len: usize) -> Result<()> {
        crate::error::located(|| {
            // SAFETY: callers pass ranges inside the heap that no other rank
            // writes during this step (data that already arrived, or this
            // rank's own source).
            let src = unsafe { std::slice::from_raw_parts(self.w.own.heap_base().add(from), len) };
            self.put(to, offset, src)
        })
    }

    /// Waits until member `from` has reached `step`.
    #[track_caller]
    pub fn wait(&self, from: usize, step: u64) -> Result<()> {
        crate::error::located(|| {
            let target = self.value(step);
            let flag = self.own_flag(from);
            if flag.load(Ordering::Acquire) >= target {
                return Ok(());
            }
            let ready = || (flag.load(Ordering::Acquire) >= target).then_some(());
            let waiting = Waiting::Step {
                op: self.op,
                rank: self.rank(from),
                slot: self.t.slot,
                value: target,
                call: self.call,
                step,
            };
            match self.w.links.flag_wait(self.rank(from)) {
                FlagWait::Tcp => self.w.poll_until_tcp(waiting, ready),
                FlagWait::Futex => self.w.sleep_until_flag(waiting, flag, target),
                FlagWait::Poll => self.w.poll_until_for(waiting, ready),
            }
        })
    }

    /// Heap offset of the note member `from` leaves beside its flag for
    /// exchange half `half` (`Layout::note`).
    #[inline]
    pub fn note_offset(&self, from: usize, half: usize) -> usize {
        self.layout.note(self.t.slot, from, half)
    }

    fn own_flag(&self, from: usize) -> &AtomicU64 {
        let offset = self.layout.flag(self.t.slot, from);
        // SAFETY: the flag lies in the team area of our own heap, 8-byte
        // aligned, and is only ever accessed atomically.
        unsafe { AtomicU64::from_ptr(self.w.own.heap_base().add(offset).cast()) }
    }

    /// The base of member `i`'s heap, which the algorithm needs mapped
    /// here. Node grouping comes from host names, so a host that aliases
    /// another's name without sharing its memory is an error, not a crash.
    #[track_caller]
    pub fn peer_base(&self, i: usize) -> Result<*mut u8> {
        crate::error::located(|| match self.w.links.access(Channel::Default, self.rank(i))? {
            Access::Mapped(base) => Ok(base),
            Access::Tcp(_) | Access::Rdma => Err(self.bad(format!(
                "rank {} shares this rank's host name, but its memory is not mapped here",
                self.rank(i)
            ))),
        })
    }

    /// A pointer into this rank's own heap.
    #[inline]
    pub fn own(&self, offset: usize) -> *mut u8 {
        // SAFETY: callers pass offsets of checked objects or of the team area.
        unsafe { self.w.own.heap_base().add(offset) }
    }

    /// Notifies every other member of `step`.
    #[track_caller]
    pub fn notify_all(&self, step: u64) -> Result<()> {
        crate::error::located(|| {
            let (n, me) = (self.n(), self.me());
            for k in 1..n {
                self.notify((me + k) % n, step)?;
            }
            Ok(())
        })
    }

    /// Waits until every other member has reached `step`.
    #[track_caller]
    pub fn wait_all(&self, step: u64) -> Result<()> {
        crate::error::located(|| {
            let (n, me) = (self.n(), self.me());
            for k in 1..n {
                self.wait((me + n - k) % n, step)?;
            }
            Ok(())
        })
    }

    /// Checks a destination of `dst_n` and a source of `src_n` elements:
    /// in bounds, and either the same object or disjoint. Returns their
    /// heap offsets.
    pub fn same_or_disjoint<T: Pod>(
        &self,
        dst: &Sym<T>,
        src: &Sym<T>,
        dst_n: usize,
        src_n: usize,
    ) -> Result<(usize, usize)> {
        let (dst_off, src_off) = self.objects(dst, src, dst_n, src_n)?;
        let size = std::mem::size_of::<T>();
        let overlap = dst_off < src_off + src_n * size && src_off < dst_off + dst_n * size;
        if overlap && dst_off != src_off {
            return Err(self.bad(format!(
                "the destination (heap offset {dst_off}, {dst_n} elements) partly overlaps the source (offset {src_off}, {src_n} elements); pass the same object, or disjoint ones"
            )));
        }
        Ok((dst_off, src_off))
    }

    /// Like `same_or_disjoint`, but the two must not overlap at all.
    pub fn disjoint<T: Pod>(&self, dst: &Sym<T>, src: &Sym<T>, dst_n: usize, src_n: usize) -> Result<(usize, usize)> {
        let (dst_off, src_off) = self.objects(dst, src, dst_n, src_n)?;
        let size = std::mem::size_of::<T>();
        if dst_n > 0 && src_n > 0 && dst_off < src_off + src_n * size && src_off < dst_off + dst_n * size {
            return Err(self.bad(format!(
                "the destination (heap offset {dst_off}, {dst_n} elements) overlaps the source (offset {src_off}, {src_n} elements); {} needs disjoint objects",
                self.op
            )));
        }
        Ok((dst_off, src_off))
    }

    fn objects<T: Pod>(&self, dst: &Sym<T>, src: &Sym<T>, dst_n: usize, src_n: usize) -> Result<(usize, usize)> {
        let dst_off = self.w.checked_offset(self.op, dst, self.w.rank, 0, dst_n)?;
        let src_off = self.w.checked_offset(self.op, src, self.w.rank, 0, src_n)?;
        Ok((dst_off, src_off))
    }

    /// Checks that `root` is a member number.
    #[track_caller]
    pub fn check_root(&self, root: usize) -> Result<()> {
        crate::error::located(|| match root < self.n() {
            true => Ok(()),
            false => Err(self.bad(format!(
                "root {root} is not a member: the team has members 0..{}",
                self.n()
            ))),
        })
    }

    /// An argument error of this call, with the numbers.
    #[cold]
    pub fn bad(&self, detail: String) -> Error {
        Error::BadCollective {
            rank: self.w.rank,
            op: self.op,
            detail,
        }
    }
}
