//! The symmetric-heap allocator: first fit over byte offsets.
//!
//! It is deterministic, so when every rank makes the same sequence of
//! collective `alloc`/`free` calls, every rank gets the same offsets. That is
//! what makes an object "symmetric": one offset names it on every rank.

/// Every object starts on its own cache line.
pub const ALIGN: usize = 64;

/// Free ranges of the heap, sorted by offset, never adjacent.
#[derive(Debug)]
pub struct Allocator {
    size: usize,
    free: Vec<(usize, usize)>,
    live: Vec<(usize, usize)>,
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
            size,
            free: vec![(0, size)],
            live: Vec::new(),
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Reserves `bytes` (rounded up to [`ALIGN`]); returns the offset.
    pub fn alloc(&mut self, bytes: usize) -> Result<usize, Exhausted> {
        let rounded = bytes.max(1).checked_next_multiple_of(ALIGN);
        let fit = rounded.and_then(|need| self.free.iter().position(|&(_, len)| len >= need));
        let (Some(need), Some(i)) = (rounded, fit) else {
            return Err(Exhausted {
                requested: bytes,
                largest_free: self.free.iter().map(|&(_, len)| len).max().unwrap_or(0),
            });
        };
        let (offset, len) = self.free[i];
        if len == need {
            self.free.remove(i);
        } else {
            self.free[i] = (offset + need, len - need);
        }
        let at = self.live.partition_point(|&(o, _)| o < offset);
        self.live.insert(at, (offset, need));
        Ok(offset)
    }

    /// Returns a block to the free list. `false` if `offset` is not live.
    pub fn free(&mut self, offset: usize) -> bool {
        let Ok(i) = self.live.binary_search_by_key(&offset, |&(o, _)| o) else {
            return false;
        };
        let (_, len) = self.live.remove(i);
        let at = self.free.partition_point(|&(o, _)| o < offset);
        self.free.insert(at, (offset, len));
        // Merge with the right neighbour, then the left one.
        if at + 1 < self.free.len() && self.free[at].0 + self.free[at].1 == self.free[at + 1].0 {
            self.free[at].1 += self.free.remove(at + 1).1;
        }
        if at > 0 && self.free[at - 1].0 + self.free[at - 1].1 == self.free[at].0 {
            self.free[at - 1].1 += self.free.remove(at).1;
        }
        true
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
        assert_eq!(a.alloc(256), Ok(0));
    }
}
