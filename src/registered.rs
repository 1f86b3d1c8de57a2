//! Tests only: the heap growth's registration, driven before the heap
//! grows by itself. With `ONESIDE_TEST_FIRST_PART` the NIC registers only
//! the heap's first bytes at start (`transport::parts`), and a test program
//! registers the rest, range by range, through [`World::register_grown`]:
//! the same `Links::grown` a growing allocation calls, with an allgather
//! of its own (in the first part, so it needs no range it registers).

use crate::error::Result;
use crate::world::World;

/// Each rank's bytes in the exchange, with their length first.
const ROOM: usize = 256;

impl World {
    /// Registers heap offsets `[start, start + len)` with the NIC on every
    /// rank, as a growth of the heap does (collective: every rank calls it
    /// with the same range). Fails on every rank alike if any rank cannot
    /// register them. For tests of the transports' registration in parts.
    #[doc(hidden)]
    #[track_caller]
    pub fn register_grown(&self, start: usize, len: usize) -> Result<()> {
        crate::error::located_call(|| {
            self.links
                .grown(start, len, &mut |mine| self.gather_for_registration(mine))
        })
    }

    /// Whether this rank's NIC registers its heap in parts, so that a
    /// range the heap grows by is registered as it comes.
    #[doc(hidden)]
    pub fn registers_memory(&self) -> bool {
        self.links.registers_memory()
    }

    /// An allgather of up to 255 bytes per rank (index = rank).
    fn gather_for_registration(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut padded = [0u8; ROOM];
        padded[0] = mine.len().min(ROOM - 1) as u8;
        padded[1..=mine.len().min(ROOM - 1)].copy_from_slice(&mine[..mine.len().min(ROOM - 1)]);
        let src = self.alloc::<u8>(ROOM)?;
        let dst = self.alloc::<u8>(ROOM * self.size)?;
        self.local_write(&src, 0, &padded)?;
        let gathered = self
            .fcollect(&self.world_team, &dst, &src, ROOM)
            .and_then(|()| self.local_to_vec(&dst));
        // A free starts with a barrier: every rank has read its copy.
        self.free(src)?;
        self.free(dst)?;
        let all = gathered?;
        Ok(all.chunks(ROOM).map(|c| c[1..=usize::from(c[0])].to_vec()).collect())
    }
}
