//! `broadcast`: the root's source into every member's destination
//! (OpenSHMEM 1.5 semantics: the root's destination too), and
//! `broadcast_to_others`, 1.4's form, which leaves the root's destination
//! alone and sends straight from its source.
//!
//! One algorithm, node-aware by construction. Each node has a *head*: the
//! root on the root's node, the lowest member elsewhere. The heads form a
//! binomial tree rooted at the root and push the data down it into each
//! other's destinations (⌈log2 nodes⌉ hops), or for small data among up
//! to four heads the root sends to each itself (one hop). Then, within each node, the
//! head writes small data (`plan::fan_out_by_push`) into its members'
//! destinations and notifies them: one hop, and the head waits for nobody.
//! Larger data the members copy from their head's destination in place
//! (the root's source, on the root's node), in parallel, and tell the head
//! they are done. Nobody reads the root's destination, so the root fills
//! it after telling its members to start, alongside their copies (at 2
//! ranks this halved every broadcast from 8 KiB to 1 MiB). OpenSHMEM
//! requires every member's destination to be ready when any member enters.

use super::{plan, Coll};
use crate::debug::Signature;
use crate::error::Result;
use crate::sym::{Pod, Sym};
use crate::team::Team;
use crate::world::World;
use std::mem::size_of;

impl World {
    /// Copies the first `n` elements of `src` on member `root` of `team`
    /// into the first `n` elements of `dst` on every member, the root
    /// included (`shmem_broadcast`). `dst` may be `src`.
    ///
    /// As OpenSHMEM requires of every collective with a destination, `dst`
    /// must be ready to receive on every member when any member enters:
    /// data from another host may land in it before this rank calls. On one
    /// host each member writes only its own destination.
    #[track_caller]
    pub fn broadcast<T: Pod>(&self, team: &Team, dst: &Sym<T>, src: &Sym<T>, n: usize, root: usize) -> Result<()> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "broadcast")?;
            c.check_root(root)?;
            let (dst_off, src_off) = c.same_or_disjoint(dst, src, n, n)?;
            c.agree(
                Signature::of::<T>("broadcast", Some(root), n),
                Some((dst_off, n * size_of::<T>())),
            )?;
            c.broadcast_bytes(src_off, dst_off, n * size_of::<T>(), root, true)
        })
    }

    /// As [`World::broadcast`], but the root's `dst` is left alone: the
    /// other members receive straight from the root's `src`. This is
    /// OpenSHMEM 1.4's `shmem_broadcast32/64`, which saves the root a copy.
    #[track_caller]
    pub fn broadcast_to_others<T: Pod>(
        &self,
        team: &Team,
        dst: &Sym<T>,
        src: &Sym<T>,
        n: usize,
        root: usize,
    ) -> Result<()> {
        crate::error::located_call(|| {
            let c = Coll::begin(self, team, "broadcast")?;
            c.check_root(root)?;
            let (dst_off, src_off) = c.same_or_disjoint(dst, src, n, n)?;
            c.agree(
                Signature::of::<T>("broadcast", Some(root), n),
                Some((dst_off, n * size_of::<T>())),
            )?;
            c.broadcast_bytes(src_off, dst_off, n * size_of::<T>(), root, false)
        })
    }
}

impl Coll<'_> {
    /// Broadcasts `bytes` at `from` of the root's heap to `offset` on every
    /// other member, and on the root too if `root_too`. Every member reads
    /// or receives the root's `from`, so the root's own copy (made after it
    /// has told its node's members to start) overlaps theirs instead of
    /// coming before them.
    pub(super) fn broadcast_bytes(
        &self,
        from: usize,
        offset: usize,
        bytes: usize,
        root: usize,
        root_too: bool,
    ) -> Result<()> {
        let own_copy = || {
            if root_too && self.me() == root && from != offset {
                // SAFETY: the root's source and destination are checked and
                // disjoint (`same_or_disjoint`), and only the root writes
                // its destination.
                unsafe { std::ptr::copy_nonoverlapping(self.own(from), self.own(offset), bytes) };
            }
        };
        let nodes = &self.t.nodes;
        let heads: Vec<usize> = nodes
            .groups
            .iter()
            .map(|g| if g.contains(&root) { root } else { g[0] })
            .collect();
        let head = heads[nodes.mine];
        if self.me() == head && heads.len() > 1 {
            match plan::broadcast_flat(heads.len(), bytes) {
                true => self.flat(&heads, root, from, offset, bytes)?,
                false => self.binomial(&heads, root, from, offset, bytes)?,
            }
        }
        let local = &nodes.groups[nodes.mine];
        if local.len() == 1 {
            own_copy();
            return Ok(());
        }
        let push = plan::fan_out_by_push(bytes);
        if self.me() == head {
            let held = if head == root { from } else { offset };
            for &member in local.iter().filter(|&&m| m != head) {
                if push && bytes > 0 {
                    let base = self.peer_base(member)?;
                    // SAFETY: the member's destination is checked, and ready
                    // for the data before any member enters (the spec's
                    // rule, as for the heads' tree above); ours holds the data.
                    unsafe { std::ptr::copy_nonoverlapping(self.own(held), base.add(offset), bytes) };
                }
                self.notify(member, 2)?;
            }
            own_copy();
            if !push {
                for &member in local.iter().filter(|&&m| m != head) {
                    self.wait(member, 3)?;
                }
            }
            return Ok(());
        }
        self.wait(head, 2)?;
        if push {
            return Ok(());
        }
        let base = self.peer_base(head)?;
        let held = if head == root { from } else { offset };
        // SAFETY: the head's destination (the root's source) holds the data
        // from step 2 until we notify step 3; ours is checked and written
        // only by us.
        unsafe { std::ptr::copy_nonoverlapping(base.add(held), self.own(offset), bytes) };
        self.notify(head, 3)
    }

    /// The root's step 1 for a few heads and little data
    /// (`plan::broadcast_flat`): it pushes into every other head's
    /// destination itself, from `from`; the others wait for it.
    fn flat(&self, heads: &[usize], root: usize, from: usize, offset: usize, bytes: usize) -> Result<()> {
        if self.me() != root {
            return self.wait(root, 1);
        }
        // The heads after the root's place, then those before it, as the
        // tree numbers them.
        let root_at = heads.iter().position(|&x| x == root).expect("the root is a head");
        for v in 1..heads.len() {
            self.push_down(heads[(root_at + v) % heads.len()], from, offset, bytes)?;
        }
        Ok(())
    }

    /// A binomial tree among `heads` rooted at `root`, pushing into
    /// destinations (step 1); the root sends from `from`.
    fn binomial(&self, heads: &[usize], root: usize, from: usize, offset: usize, bytes: usize) -> Result<()> {
        let h = heads.len();
        let at = heads.iter().position(|&x| x == self.me()).expect("this rank is a head");
        let root_at = heads.iter().position(|&x| x == root).expect("the root is a head");
        let member = |virtual_rank: usize| heads[(virtual_rank + root_at) % h];
        let me = (at + h - root_at) % h;
        let mut mask = 1;
        while mask < h {
            if me & mask != 0 {
                self.wait(member(me - mask), 1)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if me + mask < h {
                let held = if self.me() == root { from } else { offset };
                self.push_down(member(me + mask), held, offset, bytes)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// Step 1 from this head to `child`: the `bytes` it holds at `held`
    /// into the child's destination at `offset`, then the flag.
    fn push_down(&self, child: usize, held: usize, offset: usize, bytes: usize) -> Result<()> {
        if bytes > 0 {
            self.forward(child, offset, held, bytes)?;
        }
        self.notify(child, 1)
    }
}
