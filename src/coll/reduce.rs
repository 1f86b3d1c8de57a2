//! `reduce`: every member gets the combination of all members' sources
//! (OpenSHMEM's reduce, MPI's allreduce).
//!
//! Algorithms (chosen in `plan`):
//! * **exchange**: each member sends its source to every other member's
//!   scratch and combines all contributions itself, in member order, so
//!   every member computes bit-identical floats. One step per chunk; small
//!   messages, and any size between two members.
//! * **scatter-gather, mapped**: one node. Member i combines part i of the
//!   vector by reading every member's source in place, writes it into its
//!   own destination, and then every member copies the other parts from
//!   their owners' destinations. No intermediate copies.
//! * **scatter-gather, remote**: in rounds, an exchange sends each member
//!   its part of every source, and each member pushes its combined part into
//!   every destination. Traffic per member stays at about twice the vector.
//! * **recursive doubling** (`reduce_doubling`): small messages on teams of
//!   one rank per node, a power of two of them.
//! * **node-aware**: each node's leader combines its node's sources in
//!   place, the leaders combine across nodes (exchange), and each node
//!   copies the result from its leader.

use super::exchange::Bytes;
use super::ops::{self, Number, ReduceOp};
use super::plan::{self, ReduceAlgo};
use super::{Coll, Members};
use crate::debug::Signature;
use crate::error::Result;
use crate::sym::Sym;
use crate::team::Team;
use crate::world::World;
use std::mem::size_of;

impl World {
    /// Combines the first `n` elements of `src` of every member of `team`
    /// with `op`, and writes the result into the first `n` elements of `dst`
    /// on every member (`shmem_<type>_<op>_reduce`). `dst` may be `src`.
    ///
    /// ```no_run
    /// use oneside::Sum;
    /// let world = oneside::init()?;
    /// let x = world.alloc::<f64>(3)?;
    /// world.local_write(&x, 0, &[1.0, 2.0, world.rank() as f64])?;
    /// world.reduce(world.team_world(), Sum, &x, &x, 3)?; // in place
    /// # Ok::<(), oneside::Error>(())
    /// ```
    #[track_caller]
    pub fn reduce<T: Number, O: ReduceOp<T>>(
        &self,
        team: &Team,
        _op: O,
        dst: &Sym<T>,
        src: &Sym<T>,
        n: usize,
    ) -> Result<()> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "reduce")?;
            let (dst_off, src_off) = c.same_or_disjoint(dst, src, n, n)?;
            let bytes = n * size_of::<T>();
            c.agree(Signature::of::<T>("reduce", None, n), Some((dst_off, bytes)))?;
            match plan::reduce(&c, bytes, size_of::<T>()) {
                ReduceAlgo::Exchange => c.reduce_exchange::<T, O>(c.own(src_off).cast(), c.own(dst_off).cast(), n),
                ReduceAlgo::Doubling => c.reduce_doubling::<T, O>(c.own(src_off).cast(), c.own(dst_off).cast(), n),
                ReduceAlgo::MappedScatterGather => c.reduce_mapped::<T, O>(src_off, dst_off, n),
                ReduceAlgo::RemoteScatterGather => c.reduce_remote::<T, O>(src_off, dst_off, n),
                ReduceAlgo::NodeAware => c.reduce_nodes::<T, O>(src_off, dst_off, n),
            }
        })
    }

    /// Reduces private values in place across `team`: on return every
    /// member's `values` hold the combination of all members' `values`.
    /// Needs no symmetric object; every member passes the same length.
    #[track_caller]
    pub fn reduce_values<T: Number, O: ReduceOp<T>>(&self, team: &Team, _op: O, values: &mut [T]) -> Result<()> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "reduce_values")?;
            c.agree(Signature::of::<T>("reduce_values", None, values.len()), None)?;
            let ptr = values.as_mut_ptr();
            match plan::reduce(&c, size_of_val(values), size_of::<T>()) {
                ReduceAlgo::Doubling => c.reduce_doubling::<T, O>(ptr, ptr, values.len()),
                _ => c.reduce_exchange::<T, O>(ptr, ptr, values.len()),
            }
        })
    }

    /// [`reduce_values`](World::reduce_values) of one value.
    #[track_caller]
    pub fn reduce_value<T: Number, O: ReduceOp<T>>(&self, team: &Team, op: O, value: T) -> Result<T> {
        crate::error::located_call(|| {
            let mut values = [value];
            self.reduce_values(team, op, &mut values)?;
            Ok(values[0])
        })
    }
}

impl Coll<'_> {
    /// Exchange in chunks. `src` and `dst` are this rank's (heap or
    /// private) and may be equal.
    pub(super) fn reduce_exchange<T: Number, O: ReduceOp<T>>(
        &self,
        src: *const T,
        dst: *mut T,
        n: usize,
    ) -> Result<()> {
        self.reduce_among::<T, O>(Members::All(self.n()), self.me(), src, dst, n, 1)
    }

    /// The exchange among `members` (this rank is `members[at]`), from step
    /// `first`: one round per chunk, at least one.
    pub(super) fn reduce_among<T: Number, O: ReduceOp<T>>(
        &self,
        members: Members,
        at: usize,
        src: *const T,
        dst: *mut T,
        n: usize,
        first: u64,
    ) -> Result<()> {
        let chunk = (self.exchange_capacity_among(members.len()) / size_of::<T>()).max(1);
        // Combine straight into the destination unless it is the source
        // (then through a buffer, as our own contribution is read last).
        let in_place = std::ptr::eq(src, dst.cast_const());
        let mut acc: Vec<T> = Vec::with_capacity(if in_place { chunk.min(n) } else { 0 });
        let mut done = 0;
        let mut step = first;
        while done < n || step == first {
            let len = chunk.min(n - done);
            // SAFETY: done + len <= n, inside the caller's `n`-element source.
            let mine = unsafe { src.add(done) };
            let inbox = self.exchange_among(members, at, step, |_| Bytes {
                ptr: mine.cast(),
                len: len * size_of::<T>(),
            })?;
            // `acc` has room for a chunk.
            let target = if in_place {
                acc.as_mut_ptr()
            } else {
                // SAFETY: `dst` holds n elements and done < n.
                unsafe { dst.add(done) }
            };
            let contributions = (0..members.len()).map(|i| match members.get(i) {
                member if member == self.me() => mine,
                member => inbox.from(member).cast(),
            });
            // SAFETY: each contribution holds `len` elements: our own
            // source, or a region of the exchange that the member filled;
            // `target` has room for `len` and overlaps neither.
            unsafe { ops::combine_into::<T, O>(target, contributions, len) };
            if in_place {
                // SAFETY: `dst` holds n elements; our source chunk was read above.
                unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dst.add(done), len) };
            }
            done += len;
            step += 1;
        }
        Ok(())
    }

    /// Scatter-gather on one node, reading sources and results in place.
    fn reduce_mapped<T: Number, O: ReduceOp<T>>(&self, src_off: usize, dst_off: usize, n: usize) -> Result<()> {
        let (m, me) = (self.n(), self.me());
        let bases = (0..m).map(|i| self.peer_base(i)).collect::<Result<Vec<_>>>()?;
        let parts = Parts::new(n, m, size_of::<T>());
        self.notify_all(1)?;
        self.wait_all(1)?;
        let (lo, hi) = parts.range(me);
        // SAFETY: every member's source holds n elements at `src_off`, and
        // no member writes its source or our part of our destination
        // before step 2; we write only our own part.
        unsafe {
            let sources: Vec<*const T> = bases.iter().map(|b| b.add(src_off).cast::<T>().cast_const()).collect();
            combine_blocks::<T, O>(&sources, self.own(dst_off).cast(), lo, hi);
        }
        self.notify_all(2)?;
        self.wait_all(2)?;
        for k in 1..m {
            let owner = (me + k) % m;
            let (lo, hi) = parts.range(owner);
            let at = dst_off + lo * size_of::<T>();
            // SAFETY: the owner finished its part before step 2 and does
            // not touch it again before step 3.
            unsafe { std::ptr::copy_nonoverlapping(bases[owner].add(at), self.own(at), (hi - lo) * size_of::<T>()) };
        }
        self.notify_all(3)?;
        self.wait_all(3)?;
        Ok(())
    }

    /// Scatter-gather across nodes: exchange parts, push combined parts.
    fn reduce_remote<T: Number, O: ReduceOp<T>>(&self, src_off: usize, dst_off: usize, n: usize) -> Result<()> {
        let (m, me) = (self.n(), self.me());
        let part = (self.exchange_capacity() / size_of::<T>()).max(1);
        let window = part * m;
        let mut acc: Vec<T> = Vec::with_capacity(part);
        let src: *const T = self.own(src_off).cast();
        let mut step = 1;
        let mut start = 0;
        while start < n {
            let slice = |i: usize| {
                let lo = (start + i * part).min(n);
                (lo, (lo + part).min(n))
            };
            let inbox = self.exchange(step, |j| {
                let (lo, hi) = slice(j);
                Bytes {
                    // SAFETY: lo <= hi <= n, inside our source.
                    ptr: unsafe { src.add(lo) }.cast(),
                    len: (hi - lo) * size_of::<T>(),
                }
            })?;
            let (lo, hi) = slice(me);
            let contributions = (0..m).map(|member| match member == me {
                // SAFETY: inside our source, as above.
                true => unsafe { src.add(lo) },
                false => inbox.from(member).cast(),
            });
            acc.clear();
            // SAFETY: every contribution holds hi - lo elements, and `acc`
            // has room for a part.
            unsafe {
                ops::combine_into::<T, O>(acc.as_mut_ptr(), contributions, hi - lo);
                acc.set_len(hi - lo);
            }
            let at = dst_off + lo * size_of::<T>();
            let result = bytemuck::cast_slice::<T, u8>(&acc);
            for k in 1..m {
                let to = (me + k) % m;
                self.put(to, at, result)?;
                self.notify(to, step + 1)?;
            }
            // SAFETY: our part of our destination; its source bytes were
            // read above and sent to nobody else.
            unsafe { std::ptr::copy_nonoverlapping(result.as_ptr(), self.own(at), result.len()) };
            step += 2;
            start += window;
        }
        // Every member's last notification follows all its parts.
        self.wait_all(step - 1)
    }

    /// Node-aware: combine on each node, across leaders, then fan out.
    fn reduce_nodes<T: Number, O: ReduceOp<T>>(&self, src_off: usize, dst_off: usize, n: usize) -> Result<()> {
        let nodes = &self.t.nodes;
        let local = &nodes.groups[nodes.mine];
        let leader = local[0];
        let leaders = &nodes.leaders;
        let per_round = self.exchange_capacity_among(leaders.len()) / size_of::<T>();
        let rounds = n.div_ceil(per_round.max(1)).max(1);
        let push = plan::fan_out_by_push(n * size_of::<T>());
        if self.me() != leader {
            self.notify(leader, 1)?;
            self.skip_exchanges(rounds as u64);
            self.wait(leader, 3)?;
            if push {
                return Ok(());
            }
            let base = self.peer_base(leader)?;
            // SAFETY: the leader wrote its destination before step 3 and
            // keeps it until we notify step 4.
            unsafe { std::ptr::copy(base.add(dst_off), self.own(dst_off), n * size_of::<T>()) };
            return self.notify(leader, 4);
        }
        for &member in &local[1..] {
            self.wait(member, 1)?;
        }
        let sources = local
            .iter()
            // SAFETY: every member's source holds n elements at src_off.
            .map(|&i| Ok(unsafe { self.peer_base(i)?.add(src_off).cast::<T>().cast_const() }))
            .collect::<Result<Vec<_>>>()?;
        let mut acc: Vec<T> = Vec::with_capacity(n);
        // SAFETY: the node's sources stay put until we notify step 3
        // (members wait for it); `acc` has room for n elements.
        unsafe {
            combine_blocks::<T, O>(&sources, acc.as_mut_ptr(), 0, n);
            acc.set_len(n);
        }
        let ptr = acc.as_mut_ptr();
        self.reduce_among::<T, O>(Members::Some(leaders), nodes.mine, ptr, ptr, n, 10)?;
        // SAFETY: our destination holds n elements; the members' reads of
        // our source ended above.
        unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), self.own(dst_off).cast::<T>(), n) };
        for &member in &local[1..] {
            if push {
                let base = self.peer_base(member)?;
                // SAFETY: the member is inside this reduction (it notified
                // step 1) and we have read its source, so its checked
                // destination is ours to fill.
                unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), base.add(dst_off).cast::<T>(), n) };
            }
            self.notify(member, 3)?;
        }
        if push {
            return Ok(());
        }
        for &member in &local[1..] {
            self.wait(member, 4)?;
        }
        Ok(())
    }
}

/// `dst[i] = sources[0][i] op sources[1][i] op ...` for `lo <= i < hi`, in
/// cache-sized blocks (so a source that is also `dst` is read before written).
///
/// # Safety
/// Every source must be valid for reads and `dst` for writes over
/// `[lo, hi)`, with nothing else writing them meanwhile.
unsafe fn combine_blocks<T: Number, O: ReduceOp<T>>(sources: &[*const T], dst: *mut T, lo: usize, hi: usize) {
    const BLOCK_BYTES: usize = 4096;
    let block = (BLOCK_BYTES / size_of::<T>()).max(1);
    let mut acc: Vec<T> = Vec::with_capacity(block);
    let mut at = lo;
    while at < hi {
        let len = block.min(hi - at);
        // SAFETY: forwarded from the caller's contract; at + len <= hi,
        // and `acc` has room for a block.
        unsafe {
            ops::combine_into::<T, O>(acc.as_mut_ptr(), sources.iter().map(|s| s.add(at)), len);
            std::ptr::copy_nonoverlapping(acc.as_ptr(), dst.add(at), len);
        }
        at += len;
    }
}

/// How a vector of n elements splits into one part per member, on cache-line boundaries.
pub(super) struct Parts {
    n: usize,
    per: usize,
}

impl Parts {
    pub fn new(n: usize, members: usize, elem: usize) -> Parts {
        let line = (64 / elem).max(1);
        let per = n.div_ceil(members).next_multiple_of(line);
        Parts { n, per }
    }

    /// Member i's part, [lo, hi).
    pub fn range(&self, i: usize) -> (usize, usize) {
        let lo = (i * self.per).min(self.n);
        (lo, (lo + self.per).min(self.n))
    }
}
