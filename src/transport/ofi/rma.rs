//! The operations of the ofi transport: puts, gets, atomics, signals and
//! collective flags, each posted through the endpoint's ops tables (the
//! inline `fi_write`, `fi_read`, `fi_atomic`, `fi_fetch_atomic` and
//! `fi_compare_atomic` of libfabric's headers).

use super::atomics::{datatype, fi_op, Form};
use super::completion::READ_FLAGS;
use super::sys::{fi_ioc, fi_msg_atomic, fi_msg_rma, fi_rma_ioc, fi_rma_iov};
use super::{Ofi, BOUNCE_PUT};
use crate::segment::HEADER_BYTES;
use crate::transport::amo::SignalOp;
use crate::transport::amo::{Amo, AmoOp, Width};
use crate::transport::fault::Fault;
use std::ffi::c_void;

/// How many bytes of large non-blocking puts may be in flight before the
/// next waits for the oldest. Posting a whole window of 64 puts of
/// 64 KiB at once over tcp;ofi_rxm ran at 1.3 GB/s, a third of what
/// 4-6 in flight gave (4.0-4.6 GB/s; 8 in flight fell back to 1.3 now and
/// then); shm gained nothing from more than 4 either.
const NBI_IN_FLIGHT: usize = 256 << 10;

impl Ofi {
    /// Writes `src` at heap `offset` of `peer`; returns when `src` may be
    /// reused (copied to the bounce buffer, or completed).
    /// An empty put posts nothing: shm never completes a 0-byte `fi_write`
    /// (a collective's empty share at 3 ranks stalled there).
    pub fn put(&mut self, peer: usize, offset: usize, src: &[u8]) -> Result<(), Fault> {
        if src.is_empty() {
            return Ok(());
        }
        let at = HEADER_BYTES + offset;
        let flags = self.write_flags(peer);
        if src.len() <= BOUNCE_PUT.min(self.msg_max) {
            let staged = self.stage(peer, "put", src)?;
            // SAFETY: the staged copy stays untouched until every operation
            // has completed (`wait_all` frees the bounce buffer only then).
            return unsafe { self.post_write(peer, "put", staged, src.len(), at, flags) };
        }
        for (i, chunk) in src.chunks(self.msg_max).enumerate() {
            let at = at + i * self.msg_max;
            // SAFETY: `chunk` stays borrowed until the wait below completes the write.
            unsafe { self.post_write(peer, "put", chunk.as_ptr().cast(), chunk.len(), at, flags) }?;
        }
        self.wait_all(peer, "put")
    }

    /// Writes `len` bytes at `src` to heap `offset` of `peer`, completed
    /// at quiet: a put up to the bounce size is staged as by `put`; a
    /// larger one is posted from `src` itself and not waited for, as long
    /// as at most [`NBI_IN_FLIGHT`] bytes of such writes are in flight.
    ///
    /// # Safety
    /// `src` must stay valid for `len` bytes of reads, unchanged, until the
    /// next `quiet` returns (or any call of this transport fails).
    pub unsafe fn put_nbi(&mut self, peer: usize, offset: usize, src: *const u8, len: usize) -> Result<(), Fault> {
        if len <= BOUNCE_PUT.min(self.msg_max) {
            // SAFETY: this function's contract.
            return self.put(peer, offset, unsafe { std::slice::from_raw_parts(src, len) });
        }
        let at = HEADER_BYTES + offset;
        let flags = self.write_flags(peer);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(self.msg_max);
            let window = (NBI_IN_FLIGHT / n).max(1) as u64;
            if self.posted - self.completed >= window {
                self.wait_for(window - 1, peer, "put_nbi")?;
            }
            // SAFETY: the source stays unchanged until quiet (this function's contract).
            unsafe { self.post_write(peer, "put_nbi", src.wrapping_add(done).cast(), n, at + done, flags) }?;
            done += n;
        }
        Ok(())
    }

    /// Posts one `fi_writemsg` of `len` bytes at `src` to byte `at` of
    /// `peer`'s segment, asking for `flags`.
    ///
    /// # Safety
    /// `src` must stay valid and untouched until the write completes.
    pub(super) unsafe fn post_write(
        &mut self,
        peer: usize,
        op: &'static str,
        src: *const c_void,
        len: usize,
        at: usize,
        flags: u64,
    ) -> Result<(), Fault> {
        // SAFETY: this function's contract.
        unsafe { self.post_rma(peer, op, Rma::Write, src.cast_mut(), len, at, flags) }
    }

    /// Posts one `fi_readmsg` of `len` bytes at byte `at` of `peer`'s
    /// segment into `dst`, asking for `flags`.
    ///
    /// # Safety
    /// `dst` must stay valid for `len` bytes of writes, untouched, until
    /// the read completes.
    pub(super) unsafe fn post_read(
        &mut self,
        peer: usize,
        op: &'static str,
        dst: *mut u8,
        len: usize,
        at: usize,
        flags: u64,
    ) -> Result<(), Fault> {
        // SAFETY: this function's contract.
        unsafe { self.post_rma(peer, op, Rma::Read, dst.cast(), len, at, flags) }
    }

    /// `fi_writemsg`s or `fi_readmsg`s of the local `len` bytes at
    /// `local` and byte `at` of `peer`'s segment: one, or one for each
    /// part of the segment the bytes lie in (`memory`).
    ///
    /// # Safety
    /// As for `post_write` (from `local`) or `post_read` (into it).
    #[allow(clippy::too_many_arguments)]
    unsafe fn post_rma(
        &mut self,
        peer: usize,
        op: &'static str,
        kind: Rma,
        local: *mut c_void,
        len: usize,
        at: usize,
        flags: u64,
    ) -> Result<(), Fault> {
        let mut done = 0;
        loop {
            let target = self.target(peer, at + done, op)?;
            let n = (len - done).min(target.room);
            let iov = libc::iovec {
                iov_base: local.wrapping_byte_add(done),
                iov_len: n,
            };
            let rma = fi_rma_iov {
                addr: target.remote,
                len: n,
                key: target.key,
            };
            let msg = rma_msg(&iov, target.addr, &rma);
            // SAFETY: the message and what it points to live through the
            // call; the local buffer, by this function's contract.
            self.post(peer, op, |me| unsafe {
                let ops = &*(*me.ep.raw).rma;
                let call = match kind {
                    Rma::Write => ops.writemsg,
                    Rma::Read => ops.readmsg,
                };
                call(me.ep.raw, &msg, flags)
            })?;
            done += n;
            if done >= len {
                return Ok(());
            }
        }
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
        let mut done = 0;
        while done < len {
            let n = (len - done).min(self.msg_max);
            // SAFETY: the destination is valid until quiet (this function's contract).
            unsafe { self.post_read(peer, "get", dst.wrapping_add(done), n, at + done, READ_FLAGS) }?;
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
        let target = self.target(peer, at, "atomic")?;
        let (addr, remote, key) = (target.addr, target.remote, target.key);
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
            // SAFETY: operand, compare and result live on this frame until
            // the wait below; the message's parts through the call.
            Form::Fetch | Form::Compare => unsafe {
                let ioc = |word: &Word| fi_ioc {
                    addr: word.ptr().cast_mut(),
                    count: 1,
                };
                let source = ioc(&operand);
                let against = ioc(&compare);
                let mut into = fi_ioc {
                    addr: result.ptr_mut(),
                    count: 1,
                };
                let rma = fi_rma_ioc {
                    addr: remote,
                    count: 1,
                    key,
                };
                let msg = fi_msg_atomic {
                    msg_iov: &source,
                    desc: std::ptr::null_mut(),
                    iov_count: 1,
                    addr,
                    rma_iov: &rma,
                    rma_iov_count: 1,
                    datatype: dt,
                    op,
                    context: std::ptr::null_mut(),
                    data: 0,
                };
                let null = std::ptr::null_mut();
                self.post(peer, name, |me| match form {
                    Form::Compare => ((*(*me.ep.raw).atomic).compwritemsg)(
                        me.ep.raw, &msg, &against, null, 1, &mut into, null, 1, READ_FLAGS,
                    ),
                    _ => ((*(*me.ep.raw).atomic).readwritemsg)(me.ep.raw, &msg, &mut into, null, 1, READ_FLAGS),
                })
            },
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

/// Which way an RMA message moves its bytes.
#[derive(Clone, Copy)]
enum Rma {
    Write,
    Read,
}

/// A message of one local and one remote range, without context or data.
fn rma_msg(iov: &libc::iovec, addr: u64, rma: &fi_rma_iov) -> fi_msg_rma {
    fi_msg_rma {
        msg_iov: iov,
        desc: std::ptr::null_mut(),
        iov_count: 1,
        addr,
        rma_iov: rma,
        rma_iov_count: 1,
        context: std::ptr::null_mut(),
        data: 0,
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
