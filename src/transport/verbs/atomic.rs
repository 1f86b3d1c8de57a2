//! Atomics and signals through the NIC. When the job uses verbs, every
//! atomic of every rank goes through here, to peers on other hosts, peers on
//! this host and this rank itself alike: a NIC's atomics are atomic only
//! with respect to the same NIC's atomics, never with a CPU's.
//!
//! * 64-bit add and fetch are one FETCH_AND_ADD (fetch adds 0); 64-bit
//!   compare-and-swap is one CMP_AND_SWP.
//! * Swap, set, and, or, xor (64-bit) are a compare-and-swap loop.
//! * A 32-bit operand lives in half of an aligned 64-bit word, which is what
//!   the NIC operates on: a compare-and-swap loop replaces only that half, so
//!   the neighbouring 32-bit word is never clobbered. An add to the *high*
//!   half is one FETCH_AND_ADD of `operand << 32` (a carry out of bit 63 is
//!   discarded); the low half cannot do that, its carry would reach the
//!   neighbour.
//!
//! Results land in 8 bytes of the peer's staging ring, in host byte order.
//! A fetching atomic waits for its completion; a non-fetching FETCH_AND_ADD
//! is only posted and completes at quiet. Loops wait at every step.

use super::work::{Op, Remote, Source, Wr};
use super::{Fault, Verbs};
use crate::transport::amo::SignalOp;
use crate::transport::amo::{Amo, AmoOp, Width};

const LOW_32: u64 = 0xffff_ffff;

impl Verbs {
    /// Applies `amo` to the word at heap `offset` of `peer` (aligned to its
    /// width, checked by the caller); returns the old value, zero-extended,
    /// when `amo.fetch` (otherwise possibly 0).
    pub fn amo(&mut self, peer: usize, offset: usize, amo: Amo) -> Result<u64, Fault> {
        match amo.width {
            Width::W64 => self.amo64(peer, offset, amo),
            Width::W32 => self.amo32(peer, offset, amo),
        }
    }

    /// Updates the 64-bit signal word at heap `offset` of `peer`, after the
    /// data already posted to it on this queue pair, without waiting: an add
    /// is a FETCH_AND_ADD (ATOMICs keep order after WRITEs); a set is an
    /// aligned 8-byte RDMA WRITE (WRITEs keep order on RC), fenced by `post`
    /// if a READ or ATOMIC is outstanding, which it could overtake. A set is
    /// a plain write: it is not atomic with NIC atomics on the same word.
    pub fn signal_word(&mut self, peer: usize, offset: usize, op: SignalOp, value: u64) -> Result<(), Fault> {
        let (remote, _) = self.remote(peer, offset, "signal")?;
        match op {
            SignalOp::Add => self.atomic(peer, Op::SignalAdd, remote, (value, 0), false).map(drop),
            SignalOp::Set => self.write_word(peer, Op::SignalSet, remote, value),
        }
    }

    fn amo64(&mut self, peer: usize, offset: usize, amo: Amo) -> Result<u64, Fault> {
        let (remote, _) = self.remote(peer, offset, "atomic")?;
        match amo.op {
            AmoOp::Add => self.atomic(peer, Op::FetchAdd, remote, (amo.operand, 0), amo.fetch),
            AmoOp::Fetch => self.atomic(peer, Op::FetchAdd, remote, (0, 0), true),
            AmoOp::CompareSwap => self.atomic(peer, Op::CompareSwap, remote, (amo.compare, amo.operand), true),
            op => self.cas_loop(peer, remote, |old| op.combine(old, amo.operand, amo.compare)),
        }
    }

    fn amo32(&mut self, peer: usize, offset: usize, amo: Amo) -> Result<u64, Fault> {
        let (word, _) = self.remote(peer, offset & !7, "atomic")?;
        // The bit position of this half in the 64-bit word as the NIC sees
        // it, in host byte order (as rxe and hardware NICs apply atomics).
        let high = (offset & 4 != 0) == cfg!(target_endian = "little");
        let shift = if high { 32 } else { 0 };
        let old = match amo.op {
            AmoOp::Fetch => self.atomic(peer, Op::FetchAdd, word, (0, 0), true)?,
            AmoOp::Add if high => {
                let added = (amo.operand & LOW_32) << 32;
                self.atomic(peer, Op::FetchAdd, word, (added, 0), amo.fetch)?
            }
            op => self.cas_loop(peer, word, |old| {
                let half = (old >> shift) & LOW_32;
                let new = op.combine(half, amo.operand, amo.compare) & LOW_32;
                (old & !(LOW_32 << shift)) | (new << shift)
            })?,
        };
        Ok((old >> shift) & LOW_32)
    }

    /// Replaces the 64-bit word at `remote` by `update(old)` with a
    /// compare-and-swap loop; returns `old`.
    ///
    /// The first CMP_AND_SWP guesses the word is 0: when right it is the
    /// whole operation, and when wrong it still returns the current value,
    /// as a FETCH_AND_ADD of 0 would. A failed step that saw a value the
    /// update would not change ends the loop too: the operation took effect
    /// at that (atomic) read, as a failed compare-and-swap does.
    fn cas_loop(&mut self, peer: usize, remote: Remote, update: impl Fn(u64) -> u64) -> Result<u64, Fault> {
        let mut guess = 0;
        loop {
            let seen = self.atomic(peer, Op::CompareSwap, remote, (guess, update(guess)), true)?;
            if seen == guess || update(seen) == seen {
                return Ok(seen);
            }
            guess = seen;
        }
    }

    /// Posts one ATOMIC (`op` is FetchAdd, CompareSwap or SignalAdd) with
    /// operands (compare or add, swap), its result landing in staging. With
    /// `wait`, returns the word's old value; otherwise 0 at once.
    fn atomic(&mut self, peer: usize, op: Op, remote: Remote, operands: (u64, u64), wait: bool) -> Result<u64, Fault> {
        let at = self.reserve(peer, 8)?;
        let wr = Wr {
            compare_add: operands.0,
            swap: operands.1,
            ..Wr::new(op, remote, Source::Staged { at, len: 8 })
        };
        self.post(peer, wr)?;
        if !wait {
            return Ok(0);
        }
        let seq = self.peer(peer).posted;
        self.wait_for(peer, seq)?;
        let mut result = [0; 8];
        result.copy_from_slice(&self.staging[at..at + 8]);
        Ok(u64::from_ne_bytes(result))
    }
}
