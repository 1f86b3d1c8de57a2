//! The symmetric-heap allocator: first fit over byte offsets.
//!
//! It is deterministic, so when every rank makes the same sequence of
//! collective `alloc`/`free` calls, every rank gets the same offsets. That is
//! what makes an object "symmetric": one offset names it on every rank.
//! Which offsets have memory is `extent`'s bookkeeping, as deterministic.

pub mod extent;
pub mod reserve;

/// Every object starts on its own cache line.
pub const ALIGN: usize = 64;

/// Free ranges of the heap, sorted by offset, never adjacent.
#[derive(Debug)]
pub struct Allocator {
    free: Vec<(usize, usize)>,
    /// Live blocks: offset, bytes reserved, bytes asked for.
    live: Vec<(usize, usize, usize)>,
    /// Bytes the live blocks reserve.
    used: usize,
}

/// Why an allocation failed.
#[derive(Debug, PartialEq, Eq)]
pub struct Exhausted {
    pub requested: usize,
    pub largest_free: usize,
}

impl Allocator {
    pub fn new(size: usize) -> Allocator {
        Allocator {
            free: vec![(0, size)],
            live: Vec::new(),
            used: 0,
        }
    }

    /// Bytes the live blocks reserve (with their rounding).
    pub fn used(&self) -> usize {
        self.used
    }

    /// Reserves `bytes` (rounded up to [`ALIGN`]); returns the offset.
    pub fn alloc(&mut self, bytes: usize) -> Result<usize, Exhausted> {
        self.alloc_aligned(bytes, ALIGN, 0)
    }

    /// Reserves `bytes` so that `base + offset` is a multiple of `align`
    /// (a power of two; at least [`ALIGN`] is used); returns the offset.
    pub fn alloc_aligned(&mut self, bytes: usize, align: usize, base: usize) -> Result<usize, Exhausted> {
        let align = align.max(ALIGN);
        let rounded = bytes.max(1).checked_next_multiple_of(ALIGN);
        let start_in = |offset: usize| (base + offset).next_multiple_of(align) - base;
        let fit = rounded.and_then(|need| {
            self.free.iter().position(|&(offset, len)| {
                let gap = start_in(offset) - offset;
                gap.checked_add(need).is_some_and(|n| n <= len)
            })
        });
        let (Some(need), Some(i)) = (rounded, fit) else {
            return Err(Exhausted {
                requested: bytes,
                largest_free: self.free.iter().map(|&(_, len)| len).max().unwrap_or(0),
            });
        };
        let (offset, len) = self.free[i];
        let start = start_in(offset);
        let (gap, rest) = (start - offset, len - (start - offset) - need);
        self.free.remove(i);
        if rest > 0 {
            self.free.insert(i, (start + need, rest));
        }
        if gap > 0 {
            self.free.insert(i, (offset, gap));
        }
        let at = self.live.partition_point(|&(o, _, _)| o < start);
        self.live.insert(at, (start, need, bytes));
        self.used += need;
        Ok(start)
    }

    /// The bytes reserved for the live block at `offset`.
    pub fn block(&self, offset: usize) -> Option<usize> {
        let i = self.live.binary_search_by_key(&offset, |&(o, _, _)| o).ok()?;
        Some(self.live[i].1)
    }

    /// The live object holding `[offset, offset + bytes)` within the bytes
    /// it was allocated with (not its rounding), as (start, bytes), if one
    /// holds all of it.
    pub fn holding(&self, offset: usize, bytes: usize) -> Option<(usize, usize)> {
        let i = self.live.partition_point(|&(o, _, _)| o <= offset).checked_sub(1)?;
        let (start, _, asked) = self.live[i];
        (offset.saturating_add(bytes) <= start + asked).then_some((start, asked))
    }

    /// Returns a block to the free list. `false` if `offset` is not live.
    pub fn free(&mut self, offset: usize) -> bool {
        self.free_merged(offset).is_some()
    }

    /// Returns a block to the free list; the free range (offset, bytes)
    /// that now holds it, merged with its free neighbours. `None` if
    /// `offset` is not live.
    pub fn free_merged(&mut self, offset: usize) -> Option<(usize, usize)> {
        let i = self.live.binary_search_by_key(&offset, |&(o, _, _)| o).ok()?;
        let (_, len, _) = self.live.remove(i);
        self.used -= len;
        let at = self.free.partition_point(|&(o, _)| o < offset);
        self.free.insert(at, (offset, len));
        // Merge with the right neighbour, then the left one.
        if at + 1 < self.free.len() && self.free[at].0 + self.free[at].1 == self.free[at + 1].0 {
            self.free[at].1 += self.free.remove(at + 1).1;
        }
        if at > 0 && self.free[at - 1].0 + self.free[at - 1].1 == self.free[at].0 {
            self.free[at - 1].1 += self.free.remove(at).1;
            return Some(self.free[at - 1]);
        }
        Some(self.free[at])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_deterministic() {
        let run = || {
            let mut a = Allocator::new(4096);
            let x = a.alloc(1).unwrap();
            let y = a.alloc(100).unwrap();
            let z = a.alloc(64).unwrap();
            (x, y, z)
        };
        assert_eq!(run(), (0, 64, 192));
        assert_eq!(run(), run());
    }

    #[test]
    fn exhaustion_reports_the_largest_free_block() {
        let mut a = Allocator::new(256);
        a.alloc(128).unwrap();
        assert_eq!(
            a.alloc(200),
            Err(Exhausted {
                requested: 200,
                largest_free: 128
            })
        );
        assert_eq!(a.alloc(usize::MAX).unwrap_err().requested, usize::MAX);
    }

    #[test]
    fn aligned_allocations_leave_the_gap_free() {
        let mut a = Allocator::new(1 << 16);
        assert_eq!(a.alloc(64), Ok(0));
        assert_eq!(a.alloc_aligned(100, 4096, 0), Ok(4096));
        assert_eq!(a.block(4096), Some(128));
        assert_eq!(a.alloc(64), Ok(64), "the gap before the aligned block is reused");
        assert_eq!(a.alloc_aligned(8, 256, 64), Ok(192), "aligned against the base");
        assert!(a.free(4096));
        assert_eq!(a.block(4096), None);
    }

    #[test]
    fn freed_blocks_coalesce_and_are_reused() {
        let mut a = Allocator::new(256);
        let x = a.alloc(64).unwrap();
        let y = a.alloc(64).unwrap();
        let z = a.alloc(64).unwrap();
        assert!(a.free(y));
        assert!(!a.free(y), "double free is refused");
        assert!(a.free(x));
        assert!(a.free(z));
        assert_eq!(a.free, vec![(0, 256)]);
        assert_eq!(a.used(), 0);
        let x = a.alloc(64).unwrap();
        a.alloc(64).unwrap();
        assert_eq!(a.used(), 128);
        assert_eq!(a.free_merged(x), Some((0, 64)));
        assert_eq!(a.free_merged(64), Some((0, 256)), "merged with both neighbours");
        assert_eq!(a.alloc(256), Ok(0));
    }
}
