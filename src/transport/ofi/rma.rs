//! The operations of the ofi transport: puts, gets, atomics, signals and
//! collective flags, each posted through the endpoint's ops tables (the
//! inline `fi_write`, `fi_read`, `fi_atomic`, `fi_fetch_atomic` and
//! `fi_compare_atomic` of libfabric's headers).

use super::atomics::{datatype, fi_op, Form};
use super::{Ofi, BOUNCE_PUT};
use crate::segment::HEADER_BYTES;
use crate::transport::amo::SignalOp;
use crate::transport::amo::{Amo, AmoOp, Width};
use crate::transport::fault::Fault;
use std::ffi::c_void;

impl Ofi {
    /// Writes `src` at heap `offset` of `peer`; returns when `src` may be
    /// reused (copied to the bounce buffer, or completed).
    /// An empty put posts nothing: shm never completes a 0-byte `fi_write`
    /// (a collective's empty share at 3 ranks stalled there).
    pub fn put(&mut self, peer: usize, offset: usize, src: &[u8]) -> Result<(), Fault> {
        if src.is_empty() {
            return Ok(());
        }
        let (addr, remote, key) = self.target(peer, HEADER_BYTES + offset);
        if src.len() <= BOUNCE_PUT.min(self.msg_max) {
            let staged = self.stage(peer, "put", src)?;
            // SAFETY: the staged copy stays untouched until every operation
            // has completed (`wait_all` frees the bounce buffer only then).
            return self.post(peer, "put", |me| unsafe {
                ((*(*me.ep.raw).rma).write)(
                    me.ep.raw,
                    staged,
                    src.len(),
                    std::ptr::null_mut(),
                    addr,
                    remote,
                    key,
                    std::ptr::null_mut(),
                )
            });
        }
        for (i, chunk) in src.chunks(self.msg_max).enumerate() {
            let at = remote + (i * self.msg_max) as u64;
            // SAFETY: `chunk` stays borrowed until the wait below completes the write.
            self.post(peer, "put", |me| unsafe {
                ((*(*me.ep.raw).rma).write)(
                    me.ep.raw,
                    chunk.as_ptr().cast(),
                    chunk.len(),
                    std::ptr::null_mut(),
                    addr,
                    at,
                    key,
                    std::ptr::null_mut(),
                )
            })?;
        }
        self.wait_all(peer, "put")
    }

    /// Reads heap `offset` of `peer` into `dst`; returns with the data.
    pub fn get(&mut self, peer: usize, offset: usize, dst: &mut [u8]) -> Result<(), Fault> {
        // SAFETY: `dst` is exclusively borrowed until the wait returns.
        unsafe { self.get_nbi(peer, offset, dst.as_mut_ptr(), dst.len()) }?;
        self.wait_all(peer, "get")
    }

    /// Starts reading `len` bytes at heap `offset` of `peer` into `dst`.
    ///
    /// # Safety
    /// `dst` must stay valid for `len` bytes of writes, untouched, until the
    /// next `quiet` returns (or any call of this transport fails).
    pub unsafe fn get_nbi(&mut self, peer: usize, offset: usize, dst: *mut u8, len: usize) -> Result<(), Fault> {
        // SAFETY: this function's contract.
        unsafe { self.read_segment(peer, HEADER_BYTES + offset, dst, len) }
    }

    /// Starts reading `len` bytes at byte `at` of `peer`'s segment (its
    /// header included) into `dst`.
    ///
    /// # Safety
    /// As for [`Ofi::get_nbi`].
    pub(super) unsafe fn read_segment(
        &mut self,
        peer: usize,
        at: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), Fault> {
        let (addr, remote, key) = self.target(peer, at);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(self.msg_max);
            let into = dst.wrapping_add(done);
            let at = remote + done as u64;
            // SAFETY: the destination is valid until quiet (this function's contract).
            self.post(peer, "get", |me| unsafe {
                ((*(*me.ep.raw).rma).read)(
                    me.ep.raw,
                    into.cast(),
                    n,
                    std::ptr::null_mut(),
                    addr,
                    at,
                    key,
                    std::ptr::null_mut(),
                )
            })?;
            done += n;
        }
        Ok(())
    }

    /// Applies `amo` to the word at heap `offset` of `peer`; returns the old
    /// value when `amo.fetch` (otherwise 0; it completes at quiet).
    pub fn amo(&mut self, peer: usize, offset: usize, amo: Amo) -> Result<u64, Fault> {
        self.amo_at(peer, HEADER_BYTES + offset, amo)
    }

    /// Adds `value` to the 64-bit word at byte `at` of `peer`'s segment;
    /// it completes at quiet.
    pub(super) fn add_segment_word(&mut self, peer: usize, at: usize, value: u64) -> Result<(), Fault> {
        let add = Amo {
            op: AmoOp::Add,
            width: Width::W64,
            operand: value,
            compare: 0,
            fetch: false,
        };
        self.amo_at(peer, at, add).map(drop)
    }

    /// [`Ofi::amo`] on byte `at` of the segment (its header included).
    fn amo_at(&mut self, peer: usize, at: usize, amo: Amo) -> Result<u64, Fault> {
        if self.atomics.native(amo.width, amo.op, amo.fetch) {
            return self.native_amo(peer, at, amo);
        }
        // A compare-and-swap loop; `probe` made sure compare-and-swap is native.
        let mut old = self.native_amo(
            peer,
            at,
            Amo {
                op: AmoOp::Fetch,
                fetch: true,
                ..amo
            },
        )?;
        loop {
            let new = amo.op.combine(old, amo.operand, amo.compare) & mask(amo.width);
            let swap = Amo {
                op: AmoOp::CompareSwap,
                operand: new,
                compare: old,
                fetch: true,
                ..amo
            };
            let seen = self.native_amo(peer, at, swap)?;
            if seen == old {
                return Ok(if amo.fetch { old } else { 0 });
            }
            old = seen;
        }
    }

    fn native_amo(&mut self, peer: usize, at: usize, amo: Amo) -> Result<u64, Fault> {
        let (addr, remote, key) = self.target(peer, at);
        let (op, asked) = fi_op(amo.op, amo.fetch);
        let form = match asked {
            Form::Write if self.quirks.write_as_fetch => Form::Fetch,
            form => form,
        };
        if let (Some(why), Form::Fetch | Form::Compare) = (self.quirks.no_fetch, form) {
            return Err(Fault::with(peer, "atomic", why));
        }
        let dt = datatype(amo.width);
        let operand = Word::new(amo.width, amo.operand);
        let compare = Word::new(amo.width, amo.compare);
        let mut result = Word::new(amo.width, 0);
        let name = "atomic";
        match form {
            Form::Write => {
                let staged = self.stage(peer, name, &amo.operand.to_ne_bytes()[..amo.width.bytes()])?;
                // SAFETY: the staged operand stays untouched until every
                // operation has completed (as for a put).
                self.post(peer, name, |me| unsafe {
                    ((*(*me.ep.raw).atomic).write)(
                        me.ep.raw,
                        staged,
                        1,
                        std::ptr::null_mut(),
                        addr,
                        remote,
                        key,
                        dt,
                        op,
                        std::ptr::null_mut(),
                    )
                })
            }
            // SAFETY: operand and result live on this frame until the wait below.
            Form::Fetch => self.post(peer, name, |me| unsafe {
                ((*(*me.ep.raw).atomic).readwrite)(
                    me.ep.raw,
                    operand.ptr(),
                    1,
                    std::ptr::null_mut(),
                    result.ptr_mut(),
                    std::ptr::null_mut(),
                    addr,
                    remote,
                    key,
                    dt,
                    op,
                    std::ptr::null_mut(),
                )
            }),
            // SAFETY: as for Fetch, with the compare operand too.
            Form::Compare => self.post(peer, name, |me| unsafe {
                ((*(*me.ep.raw).atomic).compwrite)(
                    me.ep.raw,
                    operand.ptr(),
                    1,
                    std::ptr::null_mut(),
                    compare.ptr(),
                    std::ptr::null_mut(),
                    result.ptr_mut(),
                    std::ptr::null_mut(),
                    addr,
                    remote,
                    key,
                    dt,
                    op,
                    std::ptr::null_mut(),
                )
            }),
        }?;
        if form == Form::Write {
            return Ok(0);
        }
        self.wait_all(peer, name)?;
        Ok(if asked == Form::Write { 0 } else { result.value() })
    }

    /// Updates the 64-bit signal word at heap `offset` of `peer` after
    /// everything posted before it has completed (so after its data).
    pub fn signal_word(&mut self, peer: usize, offset: usize, op: SignalOp, value: u64) -> Result<(), Fault> {
        self.wait_all(peer, "signal")?;
        let op = match op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        };
        let amo = Amo {
            op,
            width: Width::W64,
            operand: value,
            compare: 0,
            fetch: false,
        };
        self.amo(peer, offset, amo).map(drop)
    }

    /// Stores `value` into the collective step flag at heap `offset` of
    /// `peer`, after the data posted before it.
    pub fn flag(&mut self, peer: usize, offset: usize, value: u64) -> Result<(), Fault> {
        self.signal_word(peer, offset, SignalOp::Set, value)
    }
}

fn mask(width: Width) -> u64 {
    match width {
        Width::W32 => u64::from(u32::MAX),
        Width::W64 => u64::MAX,
    }
}

/// An operand or result of one atomic, in the width the provider reads.
enum Word {
    W32(u32),
    W64(u64),
}

impl Word {
    fn new(width: Width, value: u64) -> Word {
        match width {
            Width::W32 => Word::W32(value as u32),
            Width::W64 => Word::W64(value),
        }
    }
    fn ptr(&self) -> *const c_void {
        match self {
            Word::W32(v) => (v as *const u32).cast(),
            Word::W64(v) => (v as *const u64).cast(),
        }
    }
    fn ptr_mut(&mut self) -> *mut c_void {
        match self {
            Word::W32(v) => (v as *mut u32).cast(),
            Word::W64(v) => (v as *mut u64).cast(),
        }
    }
    fn value(&self) -> u64 {
        match self {
            Word::W32(v) => u64::from(*v),
            Word::W64(v) => *v,
        }
    }
}
