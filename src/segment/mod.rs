//! This rank's memory segment: a header page (magic, token, reservation,
//! committed extent), the symmetric heap's reservation, whose first bytes
//! are the team area (`team::layout`), and the program's global data, if
//! symmetric.
//!
//! The segment is one file, in `/dev/shm` when same-host peers map it
//! (unlinked as soon as every peer has mapped it, after the first barrier
//! of `init`), otherwise a memfd. The file is as long as the whole
//! reservation but sparse: only committed bytes have memory (`commit`),
//! and the heap's share grows inside collective allocations and shrinks
//! again when large blocks are freed (`heap::extent`). Every process maps
//! the whole file once, so nobody remaps when the heap grows: a peer's
//! mapping already covers every offset.
//!
//! When the program's global data is symmetric (the C API), the segment
//! ends with a copy of it that is also mapped over the original pages
//! (`globals`), at heap offset `alloc_len()` (the reservation's end); the
//! heap allocator does not hand out those bytes.
//!
//! The segment is written by other processes at any time, so nothing here
//! hands out Rust references into it: only raw pointers and atomics.

mod commit;
pub mod mapping;
pub mod room;

pub use commit::Shortfall;

use crate::error::{Error, Result};
use crate::globals::{self, DataRange};
use crate::syscall::cvt;
use mapping::{Mapping, HEAP_ALIGN};
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes before the heap: one page, so the heap is page aligned.
pub const HEADER_BYTES: usize = 4096;
const MAGIC: u64 = u64::from_le_bytes(*b"1sideSEG");
/// Byte offset in the header of the word peers add 1 to when the ofi
/// transport wires connections in rank order (`transport::ofi::wireup`);
/// after magic, token and heap size.
pub const WIREUP_WORD: usize = 24;
/// Byte offset in the header of the heap's committed extent: heap offsets
/// below it have memory (`Segment::committed`).
const COMMITTED_WORD: usize = 32;
/// Byte offset in the header of the first of [`CHECK_SLOTS`] words in which
/// peers check that they write this segment directly
/// (`transport::ofi::completion`); rank `r` uses slot `r % CHECK_SLOTS`.
pub const CHECK_WORDS: usize = 64;
pub const CHECK_SLOTS: usize = (HEADER_BYTES - CHECK_WORDS) / 8;

/// What a same-host peer needs to map this segment; part of the rank's card.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShmCard {
    pub path: String,
    pub token: u64,
    pub bytes: u64,
}

/// A mapped segment: this rank's own, or a peer's.
pub struct Segment {
    map: Mapping,
    base: *mut u8,
    /// This rank's own segment's file (`None` for a peer's), for commits.
    file: Option<File>,
    /// Whether the file is in `/dev/shm` (which bounds commits too).
    in_dev_shm: bool,
    /// Set while this process still has to unlink the backing file.
    owned_path: Option<String>,
    /// Heap offsets the reservation spans: the global data starts here.
    reserve: usize,
    /// Bytes at the end that hold the program's global data.
    data_len: usize,
}

// SAFETY: a Segment owns a MAP_SHARED mapping that other processes write
// concurrently anyway; through it this process only copies with raw
// pointers, uses atomics, or hands out `&mut` to the local copy under the
// `&mut Sym` borrow of `World::local_slice_mut` (see its docs). No method
// changes `base`, `map` or the lengths after construction; commits change
// only the file's blocks and the header's atomic word; unmapping and
// unlinking happen in `Drop`, which needs the only handle.
unsafe impl Send for Segment {}
// SAFETY: as above: shared access is through raw pointers and atomics only.
unsafe impl Sync for Segment {}

/// The address range of a mapped segment, without ownership: what the TCP
/// progress thread needs to apply requests to this rank's memory, and what
/// a NIC registers.
#[derive(Clone, Copy)]
pub struct RawSegment {
    base: *mut u8,
    len: usize,
    reserve: usize,
}

// SAFETY: a RawSegment is only a pointer and lengths into a MAP_SHARED
// mapping that other processes write concurrently anyway; all accesses are
// raw-pointer copies or atomics. Its holder (the progress engine) is stopped
// and joined before the owning `Segment` is unmapped (see `World`).
unsafe impl Send for RawSegment {}

impl RawSegment {
    /// Start of the symmetric heap.
    #[inline]
    pub fn heap_base(self) -> *mut u8 {
        // SAFETY: every segment is at least HEADER_BYTES long.
        unsafe { self.base.add(HEADER_BYTES) }
    }

    /// Heap offsets the mapping spans: the reservation, then any global data.
    #[inline]
    pub fn heap_len(self) -> usize {
        self.len - HEADER_BYTES
    }

    /// Heap offsets the reservation spans; the global data starts here.
    #[inline]
    pub fn alloc_len(self) -> usize {
        self.reserve
    }

    /// Bytes of global data at the end (heap offsets `alloc_len()..heap_len()`).
    #[inline]
    pub fn data_len(self) -> usize {
        self.heap_len() - self.reserve
    }

    /// The heap's committed extent: offsets below it have memory (but for
    /// ranges freed and given back, which no live object covers).
    #[inline]
    pub fn committed(self) -> usize {
        // SAFETY: the header lies in the mapping, the word is 8-byte
        // aligned, and it is only accessed atomically.
        let word = unsafe { AtomicU64::from_ptr(self.base.add(COMMITTED_WORD).cast()) };
        word.load(Ordering::Acquire) as usize
    }

    /// Whether `[at, at + len)` is memory a peer may reach: committed heap
    /// or global data.
    #[inline]
    pub fn reachable(self, at: usize, len: usize) -> bool {
        let Some(end) = at.checked_add(len) else {
            return false;
        };
        end <= self.committed() || (at >= self.reserve && end <= self.heap_len())
    }
}

impl Segment {
    /// This rank's segment: in `/dev/shm/oneside-<job>-<rank>` (mode 0600,
    /// must not exist) when `job_id` is given and same-host peers will map
    /// it, else a memfd. Heap offsets `[0, reserve)` are reserved and
    /// `[0, initial)` committed; with global `data`, it is adopted into
    /// the tail.
    pub fn create(
        rank: usize,
        job_id: Option<&str>,
        (reserve, initial): (usize, usize),
        data: Option<DataRange>,
    ) -> Result<(Segment, Option<ShmCard>)> {
        let data_len = data.map_or(0, |r| r.len);
        let bytes = HEADER_BYTES + reserve + data_len;
        let (file, path) = match job_id {
            Some(job_id) => {
                let path = format!("/dev/shm/{}{job_id}-{rank}", crate::protocol::env::SHM_PREFIX);
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(|source| create_err(rank, "create", &path, source))?;
                (file, Some(path))
            }
            None => {
                // SAFETY: memfd_create takes a NUL-terminated name and flags.
                let fd = cvt(unsafe { libc::memfd_create(c"oneside-heap".as_ptr(), libc::MFD_CLOEXEC) })
                    .map_err(|source| create_err(rank, "create", "<memfd>", source))?;
                // SAFETY: fd is a fresh descriptor that nothing else owns.
                (unsafe { File::from_raw_fd(fd) }, None)
            }
        };
        let shown = path.clone().unwrap_or_else(|| "<memfd>".into());
        // From here on, an error must not leave the file behind.
        let remove = |e: Error| {
            if let Some(path) = &path {
                let _ = std::fs::remove_file(path);
            }
            e
        };
        let map = file
            .set_len(bytes as u64)
            .and_then(|()| mapping::map(&file, bytes, HEAP_ALIGN))
            .map_err(|source| remove(create_err(rank, "size and map", &shown, source)))?;
        let mut segment = Segment::from_map(map, path.clone(), (reserve, data_len));
        segment.in_dev_shm = path.is_some();
        segment.file = Some(file);
        segment.commit_at_start(rank, initial).map_err(remove)?;
        if let Some(range) = data {
            let fd = segment.file.as_ref().map_or(-1, |f| f.as_raw_fd());
            segment.adopt(rank, fd, range).map_err(remove)?;
        }
        let token = u64::from_le_bytes(crate::protocol::auth::random_bytes());
        // SAFETY: the header lies inside the mapping we just created, is
        // 8-byte aligned (page-aligned base) and nobody else maps it yet.
        unsafe {
            segment.base.cast::<u64>().add(1).write(token);
            segment.base.cast::<u64>().add(2).write(reserve as u64);
            segment.magic().store(MAGIC, Ordering::Release);
        }
        let card = path.map(|path| ShmCard {
            path,
            token,
            bytes: bytes as u64,
        });
        Ok((segment, card))
    }

    /// Copies the program's global data into this segment's tail and maps
    /// the tail over it (`globals`).
    fn adopt(&self, rank: usize, fd: i32, range: DataRange) -> Result<()> {
        let offset = self.map.len - range.len;
        // SAFETY: the tail is the last `range.len` bytes of our writable
        // mapping of `fd`, page aligned because the header, the heap and
        // the range are page multiples; init runs before this rank starts
        // any thread of its own.
        unsafe { globals::adopt(rank, range, fd, offset, self.base.add(offset)) }
    }

    /// Maps a same-host peer's segment described by `card`, checking it is the right one.
    pub fn open_peer(card: &ShmCard) -> std::result::Result<Segment, String> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&card.path)
            .map_err(|e| format!("open: {e}"))?;
        let len = file.metadata().map_err(|e| format!("stat: {e}"))?.len();
        if len != card.bytes {
            return Err(format!("size is {len} bytes, the card says {}", card.bytes));
        }
        let map = mapping::map(&file, len as usize, 4096).map_err(|e| format!("mmap: {e}"))?;
        let mut segment = Segment::from_map(map, None, (0, 0));
        // SAFETY: the mapping is at least HEADER_BYTES long (checked size), page aligned.
        let (token, reserve) = unsafe {
            let words = segment.base.cast::<u64>();
            (words.add(1).read_volatile(), words.add(2).read_volatile() as usize)
        };
        if segment.magic().load(Ordering::Acquire) != MAGIC || token != card.token {
            return Err("it is not the segment this peer announced (token mismatch)".into());
        }
        segment.reserve = reserve.min(len as usize - HEADER_BYTES);
        segment.data_len = len as usize - HEADER_BYTES - segment.reserve;
        Ok(segment)
    }

    fn from_map(map: Mapping, owned_path: Option<String>, (reserve, data_len): (usize, usize)) -> Segment {
        let base = map.ptr;
        Segment {
            map,
            base,
            file: None,
            in_dev_shm: false,
            owned_path,
            reserve,
            data_len,
        }
    }

    /// The mapping's address range, for the progress engine and NICs.
    #[inline]
    pub fn raw(&self) -> RawSegment {
        RawSegment {
            base: self.base,
            len: self.map.len,
            reserve: self.reserve,
        }
    }

    /// Start of the symmetric heap in this mapping.
    #[inline]
    pub fn heap_base(&self) -> *mut u8 {
        self.raw().heap_base()
    }

    /// Heap offsets the allocator may hand out: the reservation.
    #[inline]
    pub fn alloc_len(&self) -> usize {
        self.reserve
    }

    /// The heap's committed extent (see [`RawSegment::committed`]).
    #[inline]
    pub fn committed(&self) -> usize {
        self.raw().committed()
    }

    fn magic(&self) -> &AtomicU64 {
        // SAFETY: offset 0 of a page-aligned mapping, accessed only atomically.
        unsafe { AtomicU64::from_ptr(self.base.cast()) }
    }

    /// Removes the backing file; the mapping stays valid. Idempotent.
    pub fn unlink(&mut self) {
        if let Some(path) = self.owned_path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        self.unlink();
    }
}

fn create_err(rank: usize, what: &'static str, path: &str, source: std::io::Error) -> Error {
    Error::SegmentCreate {
        rank,
        what,
        path: path.to_string(),
        source,
    }
}
