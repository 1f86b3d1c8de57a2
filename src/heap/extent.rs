//! Which heap offsets have memory: the committed extent (everything below
//! it, in whole [`GRANULE`]s as it grows) less the holes given back when
//! large blocks were freed.
//!
//! Like the allocator it is a pure function of the collective calls, so
//! every rank plans the same growth at the same allocation, and every
//! rank knows, without asking, whether an allocation needs the vote that
//! makes a growth symmetric (`World::alloc_offset`). Whether a rank really
//! gives pages back is its own affair (a rank whose NIC registered the
//! memory does not: the plan then only records a hole, and committing it
//! again costs nothing).

/// A growth step is a multiple of this, and at least 1/[`STEP_FRACTION`]
/// of the extent (so many small allocations grow the heap a few times,
/// not once each).
pub const GRANULE: usize = 2 << 20;
pub const STEP_FRACTION: usize = 16;
/// A free range gives its whole pages back when they come to this much.
pub const RELEASE_MIN: usize = 2 << 20;
const PAGE: usize = 4096;

/// The memory a new block needs before it may be handed out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Growth {
    /// Ranges to commit (page aligned): holes under the block, then the
    /// step past the extent.
    pub ranges: Vec<(usize, usize)>,
    /// The extent after the growth.
    pub extent: usize,
}

impl Growth {
    pub fn bytes(&self) -> usize {
        self.ranges.iter().map(|r| r.1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

#[derive(Debug)]
pub struct Extent {
    extent: usize,
    /// Given-back ranges below the extent: sorted, disjoint, page aligned.
    holes: Vec<(usize, usize)>,
    /// The reservation: the extent never passes it.
    limit: usize,
}

impl Extent {
    /// An extent of `committed` bytes in a reservation of `limit`.
    pub fn new(committed: usize, limit: usize) -> Extent {
        Extent {
            extent: committed,
            holes: Vec::new(),
            limit,
        }
    }

    /// Heap offsets below this have memory, but for holes.
    pub fn extent(&self) -> usize {
        self.extent
    }

    /// What the block `[start, start + len)` needs committed.
    pub fn needs(&self, start: usize, len: usize) -> Growth {
        let end = start + len;
        let (lo, hi) = (start / PAGE * PAGE, end.next_multiple_of(PAGE));
        let mut ranges: Vec<(usize, usize)> = self
            .holes
            .iter()
            .filter(|&&(h, n)| h < hi && h + n > lo)
            .map(|&(h, n)| {
                let (a, b) = (h.max(lo), (h + n).min(hi));
                (a, b - a)
            })
            .collect();
        let mut extent = self.extent;
        if end > self.extent {
            let step = (end - self.extent).max(self.extent / STEP_FRACTION);
            extent = (self.extent + step)
                .next_multiple_of(GRANULE)
                .min(self.limit)
                .max(end.next_multiple_of(PAGE));
            ranges.push((self.extent, extent - self.extent));
        }
        Growth { ranges, extent }
    }

    /// Records a growth that every rank committed.
    pub fn grow(&mut self, growth: &Growth) {
        for &(start, len) in &growth.ranges {
            self.fill(start, len);
        }
        self.extent = self.extent.max(growth.extent);
    }

    /// The free range `[start, start + len)` (after merging): the whole
    /// pages to give back, if they come to [`RELEASE_MIN`] and are not
    /// given back already; recorded as given back. A range that reaches
    /// the extent lowers it, but keeps one growth step's worth past the
    /// range's start, so that a loop that allocates and frees at the top
    /// of the heap does not grow it each time.
    pub fn release(&mut self, start: usize, len: usize) -> Option<(usize, usize)> {
        let lo = start.next_multiple_of(PAGE);
        if start + len >= self.extent {
            let keep = (lo + (lo / STEP_FRACTION).max(GRANULE)).next_multiple_of(GRANULE);
            if self.extent < keep + RELEASE_MIN {
                return None;
            }
            let given = (keep, self.extent - keep);
            self.holes.retain(|&(h, _)| h < keep);
            if let Some(last) = self.holes.last_mut() {
                last.1 = last.1.min(keep - last.0);
            }
            self.extent = keep;
            return Some(given);
        }
        let hi = (start + len) / PAGE * PAGE;
        if hi <= lo || hi - lo < RELEASE_MIN {
            return None;
        }
        let already: usize = self
            .holes
            .iter()
            .filter(|&&(h, n)| h >= lo && h + n <= hi)
            .map(|h| h.1)
            .sum();
        if already == hi - lo {
            return None;
        }
        self.holes.retain(|&(h, n)| h + n <= lo || h >= hi);
        let at = self.holes.partition_point(|&(h, _)| h < lo);
        self.holes.insert(at, (lo, hi - lo));
        Some((lo, hi - lo))
    }

    /// Takes `[start, start + len)` out of the holes.
    fn fill(&mut self, start: usize, len: usize) {
        let end = start + len;
        let mut kept = Vec::with_capacity(self.holes.len() + 1);
        for &(h, n) in &self.holes {
            let he = h + n;
            if he <= start || h >= end {
                kept.push((h, n));
                continue;
            }
            if h < start {
                kept.push((h, start - h));
            }
            if he > end {
                kept.push((end, he - end));
            }
        }
        self.holes = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn a_block_past_the_extent_grows_it_in_whole_granules() {
        let mut e = Extent::new(GRANULE, 1 << 40);
        assert!(e.needs(0, GRANULE).is_empty(), "inside the extent");
        let g = e.needs(GRANULE - 64, 128);
        assert_eq!(g.ranges, vec![(GRANULE, GRANULE)]);
        e.grow(&g);
        assert_eq!(e.extent(), 2 * GRANULE);
        let g = e.needs(2 * GRANULE, 1 << 30);
        assert_eq!(g.extent, 2 * GRANULE + (1 << 30), "a large block grows by itself");
        assert_eq!(g.bytes(), 1 << 30);
    }

    #[test]
    fn small_steps_grow_by_a_fraction_of_the_extent() {
        let e = Extent::new(1 << 30, 1 << 40);
        let g = e.needs((1 << 30) - 8, 64);
        assert_eq!(g.extent, (1 << 30) + (1 << 30) / STEP_FRACTION);
    }

    #[test]
    fn the_reservation_bounds_the_step_but_not_the_block() {
        let e = Extent::new(GRANULE, 3 * MIB);
        assert_eq!(e.needs(GRANULE, 4096).extent, 3 * MIB);
    }

    #[test]
    fn freed_ranges_are_given_back_and_committed_again_when_reused() {
        let mut e = Extent::new(64 * MIB, 1 << 40);
        assert_eq!(e.release(100, MIB), None, "too small");
        assert_eq!(e.release(MIB + 100, 8 * MIB), Some((MIB + 4096, 8 * MIB - 4096)));
        assert_eq!(e.release(MIB + 100, 8 * MIB), None, "given back already");
        let g = e.needs(2 * MIB, 64);
        assert_eq!(g.ranges, vec![(2 * MIB, 4096)], "only the page under the block");
        assert_eq!(g.extent, 64 * MIB);
        e.grow(&g);
        assert_eq!(
            e.needs(2 * MIB, 64),
            Growth {
                ranges: vec![],
                extent: 64 * MIB
            }
        );
        assert_eq!(
            e.needs(3 * MIB, 64).ranges,
            vec![(3 * MIB, 4096)],
            "the rest is still a hole"
        );
    }

    #[test]
    fn a_free_range_at_the_top_lowers_the_extent_but_keeps_a_step() {
        let mut e = Extent::new(64 * MIB, 1 << 40);
        assert_eq!(e.release(8 * MIB, (1 << 40) - 8 * MIB), Some((10 * MIB, 54 * MIB)));
        assert_eq!(e.extent(), 10 * MIB);
        assert!(
            e.needs(8 * MIB, MIB).is_empty(),
            "a block the size of a step fits without growing"
        );
        assert_eq!(
            e.release(8 * MIB, (1 << 40) - 8 * MIB),
            None,
            "nothing more to give back"
        );
        let g = e.needs(8 * MIB, 4 * MIB);
        assert_eq!(g.ranges, vec![(10 * MIB, 2 * MIB)]);
    }

    #[test]
    fn allocating_and_freeing_at_the_top_does_not_grow_each_time() {
        let mut e = Extent::new(4 * MIB, 1 << 40);
        for _ in 0..3 {
            let g = e.needs(3 * MIB, MIB);
            assert!(g.is_empty(), "{g:?}");
            assert_eq!(e.release(3 * MIB, (1 << 40) - 3 * MIB), None);
        }
    }
}
