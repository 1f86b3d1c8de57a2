//! The transport primitives: the small closed set of operations every path
//! implements, and the one place that dispatches them on the path, as
//! methods of [`Links`].
//!
//! | primitive      | self / shm (CPU)          | TCP (progress engine)        | verbs (NIC)                     | ofi (libfabric provider)          |
//! |----------------|---------------------------|------------------------------|---------------------------------|-----------------------------------|
//! | `copy_in`      | memcpy                    | batched or `writev` request  | RDMA WRITE                      | `fi_write` from the bounce buffer |
//! | `copy_out`     | memcpy                    | request + reply              | RDMA READ, waited for           | `fi_read`, waited for             |
//! | `copy_out_nbi` | memcpy                    | request, reply read at quiet | RDMA READ, copied out at quiet  | `fi_read`, completed at quiet     |
//! | `amo`          | CPU atomic                | CPU atomic by the engine     | FETCH_ADD / CMP_SWP (+ CAS loop)| `fi_*atomic` (+ CAS loop)         |
//! | `signal`       | CPU atomic (Release)      | ordered request              | WRITE or FETCH_ADD after data   | `fi_atomic` after data completes  |
//! | `flag_store`   | Release store             | ordered atomic set           | 8-byte WRITE after data         | `fi_atomic` after data completes  |
//! | `fence`        | Release fence             | nothing: one ordered stream  | IBV_SEND_FENCE on next WR (*)   | completes what was posted         |
//! | `quiet`        | SeqCst fence              | acknowledgement per peer     | drain the completion queue      | count CQ entries up to posted     |
//! | `quiet_pes`    | SeqCst fence              | acknowledgement per named peer | drain the completion queue    | as `quiet`                        |
//!
//! (*) Or, to a rank whose data moves by CPU while its atomics take the NIC,
//! waiting for the atomics still in flight to it.
//!
//! Every family of the API (`rma`, `atomic`, `signal`, `nbi`, `wait`,
//! `lock`) is written on these; adding an operation never adds a `match` on
//! the path. Offsets are heap offsets that the caller has already checked.
//!
//! Atomics follow one rule (see the crate docs' memory model): when the job
//! uses verbs or ofi, every atomic goes through the NIC (the provider),
//! whatever the path for data, because a NIC's atomics are not atomic with
//! a CPU's. Both NIC transports sit behind `Access::Rdma` (`rdma::RdmaLink`).

use super::{Channel, Links};
use crate::error::{Error, Result};
use crate::sync::lock;
use crate::transport::amo::{self, Amo, AmoOp, SignalOp, Width};
use crate::transport::tcp::TcpPeer;
use crate::transport::{shm, Path};
use std::sync::atomic::{fence, Ordering};
use std::sync::Mutex;

/// Where a heap offset of a target lives.
pub(crate) enum Access<'w> {
    /// Mapped into this process: our own heap or a same-host peer's. The
    /// pointer is the heap's base.
    Mapped(*mut u8),
    /// Behind a TCP link to the peer's progress engine.
    Tcp(&'w Mutex<TcpPeer>),
    /// Reached by RDMA.
    Rdma,
}

impl Links {
    /// Where `target`'s heap is; maps a same-host peer on first access.
    #[inline(always)]
    pub(crate) fn access<'a>(&'a self, channel: Channel<'a>, target: usize) -> Result<Access<'a>> {
        Ok(match &self.paths[target] {
            Path::Local => Access::Mapped(self.own_heap.0),
            Path::Shm(segment) => Access::Mapped(segment.heap_base(&self.cards, self.rank, target)?),
            Path::Tcp(path) => Access::Tcp(match channel {
                Channel::Default => path.get_or_connect(|| self.dial_lazily(target))?,
                Channel::Ctx(links) => links.link(target),
            }),
            Path::Verbs | Path::Ofi => Access::Rdma,
        })
    }

    /// Writes `src` at heap offset `offset` of `target`; returns when `src` may be reused.
    #[inline(always)]
    pub(crate) fn copy_in(&self, channel: Channel<'_>, target: usize, offset: usize, src: &[u8]) -> Result<()> {
        match self.access(channel, target)? {
            // SAFETY: the caller checked that [offset, offset+len) lies in
            // the heap; `src` is private memory, so the ranges cannot overlap.
            Access::Mapped(base) => unsafe { shm::copy(src.as_ptr(), base.add(offset), src.len()) },
            Access::Tcp(link) => return self.copy_in_tcp(link, offset, src, false),
            Access::Rdma => return self.copy_in_rdma(channel.lane(), target, offset, src),
        }
        Ok(())
    }

    /// Like `copy_in`, but a TCP put of any size only joins the batch: it
    /// leaves at the next quiet, get or wait, so this returns at once.
    pub(crate) fn copy_in_nbi(&self, channel: Channel<'_>, target: usize, offset: usize, src: &[u8]) -> Result<()> {
        match self.access(channel, target)? {
            Access::Tcp(link) => self.copy_in_tcp(link, offset, src, true),
            Access::Mapped(_) | Access::Rdma => self.copy_in(channel, target, offset, src),
        }
    }

    /// Like `copy_in_nbi`, from a buffer that stays unchanged until quiet:
    /// over a NIC the put may then be posted from `src` and complete at
    /// quiet.
    ///
    /// # Safety
    /// `src` must stay valid for `len` bytes of reads, and nothing may
    /// write it, until this rank's next `quiet` returns.
    pub(crate) unsafe fn copy_in_nbi_from(
        &self,
        channel: Channel<'_>,
        target: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let route = self.access(channel, target)?;
        if len == 0 {
            return Ok(());
        }
        match route {
            Access::Rdma => {
                // SAFETY: forwarded from this function's contract.
                let posted = unsafe { self.rdma_link().put_nbi(channel.lane(), target, offset, src, len) };
                posted.map_err(|f| self.failed(f))
            }
            Access::Mapped(_) | Access::Tcp(_) => {
                // SAFETY: the caller's buffer holds `len` bytes (this function's contract).
                let src = unsafe { std::slice::from_raw_parts(src, len) };
                self.copy_in_nbi(channel, target, offset, src)
            }
        }
    }

    /// Reads heap offset `offset` of `target` into `dst`; returns with the data.
    #[inline(always)]
    pub(crate) fn copy_out(&self, channel: Channel<'_>, target: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        match self.access(channel, target)? {
            Access::Mapped(base) => {
                // SAFETY: as in `copy_in`, with the roles of the two ranges swapped.
                unsafe { shm::copy(base.add(offset), dst.as_mut_ptr(), dst.len()) };
                fence(Ordering::Acquire);
            }
            Access::Tcp(link) => return self.copy_out_tcp(link, offset, dst),
            Access::Rdma => return self.copy_out_rdma(channel.lane(), target, offset, dst),
        }
        Ok(())
    }

    /// Starts reading `len` bytes at `offset` of `target` into `dst`; the
    /// bytes are there after the next quiet.
    ///
    /// # Safety
    /// `dst` must stay valid for `len` bytes of writes, and nothing may read
    /// or write it, until this rank's next `quiet` returns.
    pub(crate) unsafe fn copy_out_nbi(
        &self,
        channel: Channel<'_>,
        target: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        match self.access(channel, target)? {
            Access::Mapped(base) => {
                // SAFETY: the source range was checked by the caller; `dst` is
                // the caller's, valid for `len` bytes.
                unsafe { shm::copy(base.add(offset), dst, len) };
                Ok(())
            }
            Access::Tcp(link) => lock(link)
                // SAFETY: forwarded from this function's contract.
                .get_nbi(offset, dst, len)
                .map_err(|f| self.failed(f.during("get_nbi"))),
            Access::Rdma => {
                // SAFETY: forwarded from this function's contract.
                let posted = unsafe { self.rdma_link().get_nbi(channel.lane(), target, offset, dst, len) };
                posted.map_err(|f| self.failed(f))
            }
        }
    }

    /// Applies an atomic to the word at `offset` of `target`; returns the
    /// old value when `amo.fetch` (otherwise 0, and it may complete at quiet).
    pub(crate) fn amo(
        &self,
        channel: Channel<'_>,
        op: &'static str,
        target: usize,
        offset: usize,
        amo: Amo,
    ) -> Result<u64> {
        if !offset.is_multiple_of(amo.width.bytes()) {
            return Err(Error::MisalignedAtomic {
                rank: self.rank,
                op,
                offset,
                width: amo.width.bytes(),
            });
        }
        if self.nic_atomics() {
            return self
                .rdma_link()
                .amo(channel.lane(), target, offset, amo)
                .map_err(|f| self.failed(f));
        }
        match self.access(channel, target)? {
            // SAFETY: the caller checked the word lies in the heap, and it
            // is aligned (checked above, heap bases are page aligned); every
            // atomic on it in this job is a CPU atomic (the rule above).
            Access::Mapped(base) => Ok(unsafe { amo::apply(base.add(offset), amo) }),
            Access::Tcp(link) => lock(link).amo(offset, amo).map_err(|f| self.failed(f.during(op))),
            Access::Rdma => unreachable!("a verbs path makes every atomic a NIC atomic"),
        }
    }

    /// Updates the 64-bit signal word at `offset` of `target`, ordered after
    /// every earlier `copy_in` to `target`: a rank that sees the signal sees
    /// that data.
    pub(crate) fn signal(
        &self,
        channel: Channel<'_>,
        target: usize,
        offset: usize,
        op: SignalOp,
        value: u64,
    ) -> Result<()> {
        if self.nic_atomics() {
            return self
                .rdma_link()
                .signal_word(channel.lane(), target, offset, op, value)
                .map_err(|f| self.failed(f));
        }
        let amo = signal_amo(op, value);
        // On shared memory the SeqCst store or add releases the data copied
        // before it; over TCP the engine applies requests in order. A
        // context's signal leaves at once: nothing else flushes its links.
        self.amo(channel, "signal", target, offset, amo)?;
        match (channel, self.access(channel, target)?) {
            (Channel::Ctx(_), Access::Tcp(link)) => lock(link).flush().map_err(|f| self.failed(f.during("signal"))),
            (Channel::Default, Access::Tcp(_)) | (_, Access::Mapped(_) | Access::Rdma) => Ok(()),
        }
    }

    /// A collective's own put on the default channel: like `copy_in`, but
    /// over TCP it does not make the next quiet ask `target` for an
    /// acknowledgement. Nothing needs one: the receiver waits for the flag
    /// that follows the data on the same connection, and no other rank
    /// reads that data before the receiver has synced with it.
    pub(crate) fn coll_copy_in(&self, target: usize, offset: usize, src: &[u8]) -> Result<()> {
        match self.access(Channel::Default, target)? {
            Access::Tcp(link) => lock(link)
                .untracked(|link| link.put_before_flag(offset, src))
                .map_err(|f| self.failed(f.during("collective"))),
            Access::Mapped(_) | Access::Rdma => self.copy_in(Channel::Default, target, offset, src),
        }
    }

    /// Stores `value` into the single-writer flag word at `offset` of
    /// `target` (a collective's step flag), ordered after every earlier
    /// `copy_in` to `target`. A store on mapped memory even in a verbs job:
    /// no NIC atomic ever touches these words. Over TCP, like
    /// `coll_copy_in`, it leaves no acknowledgement owed.
    pub(crate) fn flag_store(&self, target: usize, offset: usize, value: u64) -> Result<()> {
        match self.access(Channel::Default, target)? {
            Access::Mapped(base) => {
                // SAFETY: the caller passes an 8-byte aligned word of the
                // team area, inside the heap, only ever accessed atomically.
                let word = unsafe { std::sync::atomic::AtomicU64::from_ptr(base.add(offset).cast()) };
                word.store(value, Ordering::Release);
                if self.block_waits {
                    // SAFETY: `word` is that live, aligned flag.
                    unsafe { crate::futex::wake(word) };
                }
                Ok(())
            }
            Access::Rdma => self
                .rdma_link()
                .flag(0, target, offset, value)
                .map_err(|f| self.failed(f)),
            // The flag leaves at once, with the data batched before it: a
            // collective may end on a notification nobody waits for here.
            Access::Tcp(link) => lock(link)
                .untracked(|link| link.amo_now(offset, signal_amo(SignalOp::Set, value)))
                .map_err(|f| self.failed(f.during("collective"))),
        }
    }

    /// Orders the channel's earlier puts, signals and non-fetching atomics
    /// to each target before its later ones to the same target. Over TCP
    /// each of the channel's links is one ordered connection already.
    pub(crate) fn fence_on(&self, channel: Channel<'_>) -> Result<()> {
        fence(Ordering::Release);
        if let Some(rdma) = &self.rdma {
            rdma.fence(channel.lane()).map_err(|f| self.failed(f))?;
        }
        Ok(())
    }

    /// Completes the channel's earlier puts, non-blocking gets and
    /// non-fetching atomics at their targets.
    ///
    /// On shared memory a put is complete when its copy returns, and this
    /// orders those stores before anything this rank does next. Over RDMA it
    /// waits until every work request posted on the channel's lane has
    /// completed (a context sharing lane 0 waits for the default's too).
    /// Over TCP it asks every peer the
    /// channel wrote to since its last quiet for an acknowledgement (all at
    /// once), then waits for each.
    #[inline]
    pub(crate) fn quiet_on(&self, channel: Channel<'_>) -> Result<()> {
        fence(Ordering::SeqCst);
        if let Some(rdma) = &self.rdma {
            rdma.quiet(channel.lane()).map_err(|f| self.failed(f))?;
        }
        if self.tcp_peers.is_empty() {
            return Ok(());
        }
        self.quiet_tcp(channel)
    }

    /// Completes the channel's earlier puts, non-blocking gets and
    /// non-fetching atomics to the ranks in `targets` (OpenSHMEM 1.6's
    /// `pe_quiet`; ranks checked by the caller). Over TCP it asks only
    /// those peers for an acknowledgement; shared memory completes as
    /// `quiet_on` does (a fence), and RDMA drains the lane's one
    /// completion queue, which does not tell targets apart.
    pub(crate) fn quiet_pes_on(&self, channel: Channel<'_>, targets: &[usize]) -> Result<()> {
        fence(Ordering::SeqCst);
        if let Some(rdma) = &self.rdma {
            rdma.quiet(channel.lane()).map_err(|f| self.failed(f))?;
        }
        if self.tcp_peers.is_empty() {
            return Ok(());
        }
        let mut peers: Vec<usize> = targets
            .iter()
            .copied()
            .filter(|&t| matches!(self.paths[t], Path::Tcp(_)))
            .collect();
        peers.sort_unstable();
        peers.dedup();
        self.quiet_tcp_peers(channel, &peers)
    }

    /// The TCP branch of `copy_in`, out of line so the shared-memory path stays small.
    #[inline(never)]
    fn copy_in_tcp(&self, link: &Mutex<TcpPeer>, offset: usize, src: &[u8], nbi: bool) -> Result<()> {
        let mut link = lock(link);
        let sent = match nbi {
            true => link.put_nbi(offset, src),
            false => link.put(offset, src),
        };
        sent.map_err(|f| self.failed(f.during("put")))
    }

    /// The TCP branch of `copy_out`, out of line like `copy_in_tcp`.
    #[inline(never)]
    fn copy_out_tcp(&self, link: &Mutex<TcpPeer>, offset: usize, dst: &mut [u8]) -> Result<()> {
        lock(link).get(offset, dst).map_err(|f| self.failed(f.during("get")))
    }

    /// The RDMA branch of `copy_in`: an RDMA WRITE (inline or from staging).
    #[inline(never)]
    fn copy_in_rdma(&self, lane: usize, peer: usize, offset: usize, src: &[u8]) -> Result<()> {
        self.rdma_link()
            .put(lane, peer, offset, src)
            .map_err(|f| self.failed(f))
    }

    /// The RDMA branch of `copy_out`: an RDMA READ, waited for.
    #[inline(never)]
    fn copy_out_rdma(&self, lane: usize, peer: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.rdma_link()
            .get(lane, peer, offset, dst)
            .map_err(|f| self.failed(f))
    }

    /// Connects the default link to TCP peer `target` on its first use.
    #[cold]
    fn dial_lazily(&self, target: usize) -> Result<std::sync::Arc<Mutex<TcpPeer>>> {
        let connect = self
            .ctx_connect
            .as_ref()
            .expect("a world with TCP peers keeps their addresses");
        let addr = connect.addrs[target].ok_or_else(|| Error::Unreachable {
            rank: self.rank,
            peer: target,
            host: String::new(),
            detail: "its card has no progress engine address".into(),
        })?;
        crate::transport::dial_tcp(self.rank, target, addr, &connect.dial)
    }

    /// Asks every TCP peer written to for an acknowledgement (all at once),
    /// then waits for each. A peer's lock is held from its request to its
    /// answer, so that no other thread's request reads the answer; locks are
    /// taken in rank order, the only place more than one is held.
    #[inline(never)]
    fn quiet_tcp(&self, channel: Channel<'_>) -> Result<()> {
        self.quiet_tcp_peers(channel, &self.tcp_peers)
    }

    /// `quiet_tcp` for the TCP peers `peers`, in ascending rank order.
    fn quiet_tcp_peers(&self, channel: Channel<'_>, peers: &[usize]) -> Result<()> {
        let mut owed = Vec::new();
        for &peer in peers {
            let Some(link) = self.tcp_link(channel, peer) else {
                continue;
            };
            let mut link = lock(link);
            if link.start_quiet().map_err(|f| self.failed(f.during("quiet")))? {
                owed.push(link);
            }
        }
        for mut link in owed {
            link.finish_quiet().map_err(|f| self.failed(f.during("quiet")))?;
        }
        Ok(())
    }

    /// The stream's link to TCP peer `peer` (one of `tcp_peers`), if it
    /// is connected (a default link never used is not).
    fn tcp_link<'a>(&'a self, channel: Channel<'a>, peer: usize) -> Option<&'a Mutex<TcpPeer>> {
        match (channel, &self.paths[peer]) {
            (Channel::Default, Path::Tcp(path)) => path.get(),
            (Channel::Ctx(links), Path::Tcp(_)) => Some(links.link(peer)),
            (_, Path::Local | Path::Shm(_) | Path::Verbs | Path::Ofi) => unreachable!("tcp_peers lists only TCP paths"),
        }
    }

    /// One step of a local wait: serves TCP requests that have arrived for
    /// this rank (the one awaited is often among them), and turns a failed
    /// RDMA work request (a write that will never land, so a peer that will
    /// never answer) into an error instead of a wait without end.
    #[inline]
    pub(crate) fn check_links(&self) -> Result<()> {
        if let Some(engine) = &self.engine {
            engine.driver().drive();
        }
        self.check_rdma()
    }

    /// Whether this rank's long waits keep polling past the point where
    /// they would nap: its TCP engine's policy (a core of its own), or an
    /// ofi link that serves peers only from them
    /// (`ONESIDE_OFI_CQ_WAIT=none`).
    #[inline]
    pub(crate) fn waits_keep_polling(&self) -> bool {
        self.engine
            .as_ref()
            .is_some_and(|engine| engine.driver().keeps_polling())
            || self.rdma.as_ref().is_some_and(|rdma| rdma.waits_poll())
    }

    /// One step of a test that found nothing, or of a program's own poll
    /// (`World::progress`): as a wait's step, and the TCP engine's
    /// connections stay with this rank's threads while such steps follow
    /// each other (`Driver::drive_polled`), so a loop of tests serves what
    /// arrives as a wait would.
    #[inline]
    pub(crate) fn poll_links(&self) -> Result<()> {
        if let Some(engine) = &self.engine {
            engine.driver().drive_polled();
        }
        self.check_rdma()
    }

    /// Turns a failed RDMA work request into an error (see `check_links`).
    #[inline]
    fn check_rdma(&self) -> Result<()> {
        match &self.rdma {
            Some(rdma) => rdma.poll(0).map_err(|f| self.failed(f)),
            None => Ok(()),
        }
    }

    /// Pushes out every TCP peer's batch of small puts, the default
    /// context's and every live context's (before a local wait, which may
    /// depend on one of them).
    pub(crate) fn send_batches(&self) -> Result<()> {
        self.send_batch_of(Channel::Default)?;
        if let Some(connect) = &self.ctx_connect {
            for links in connect.live() {
                self.send_batch_of(Channel::Ctx(&links))?;
            }
        }
        Ok(())
    }

    /// Pushes out the channel's batch to every TCP peer.
    pub(crate) fn send_batch_of(&self, channel: Channel<'_>) -> Result<()> {
        for &peer in &self.tcp_peers {
            if let Some(link) = self.tcp_link(channel, peer) {
                lock(link).flush().map_err(|f| self.failed(f.during("put")))?;
            }
        }
        Ok(())
    }
}

/// A signal's update of its 64-bit word, as an atomic a transport applies.
fn signal_amo(op: SignalOp, value: u64) -> Amo {
    Amo {
        op: match op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        },
        width: Width::W64,
        operand: value,
        compare: 0,
        fetch: false,
    }
}

#[cfg(test)]
mod tests {
    use crate::links::Channel;
    use crate::transport::amo::{Amo, AmoOp, Width};
    use crate::Error;

    #[test]
    fn a_misaligned_atomic_is_an_error_with_the_numbers() {
        // Started without rlaunch, `init` gives a one-rank world.
        let world = crate::init().expect("a singleton world");
        let amo = Amo {
            op: AmoOp::Add,
            width: Width::W64,
            operand: 1,
            compare: 0,
            fetch: true,
        };
        let err = world
            .links
            .amo(Channel::Default, "atomic_fetch_add", 0, 12, amo)
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::MisalignedAtomic {
                    offset: 12,
                    width: 8,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("heap offset 12 is misaligned"), "{err}");
        let amo32 = Amo {
            width: Width::W32,
            ..amo
        };
        assert_eq!(
            world
                .links
                .amo(Channel::Default, "atomic_fetch_add", 0, 12, amo32)
                .unwrap(),
            0
        );
        assert_eq!(
            world
                .links
                .amo(Channel::Default, "atomic_fetch_add", 0, 12, amo32)
                .unwrap(),
            1
        );
    }
}
