//! This rank's memory segment: a header page (magic, token, heap size),
//! followed by the symmetric heap, whose first bytes are the team area
//! (`team::layout`).
//!
//! With same-host peers the segment is a 0600 file in `/dev/shm` that peers
//! map; it is unlinked as soon as every peer has mapped it (after the first
//! barrier of `init`). Otherwise it is anonymous memory.
//!
//! When the program's global data is symmetric (the C API), the segment
//! ends with a copy of it that is also mapped over the original pages
//! (`globals`); the heap allocator does not hand out those bytes.
//!
//! The segment is written by other processes at any time, so nothing here
//! hands out Rust references into it: only raw pointers and atomics.

use crate::error::{Error, Result};
use crate::globals::{self, DataRange};
use crate::syscall::cvt;
use memmap2::{MmapMut, MmapOptions};
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
    map: MmapMut,
    base: *mut u8,
    /// Set while this process still has to unlink the backing file.
    owned_path: Option<String>,
    /// Bytes at the end that hold the program's global data.
    data_len: usize,
}

// SAFETY: a Segment owns a MAP_SHARED mapping that other processes write
// concurrently anyway; through it this process only copies with raw
// pointers, uses atomics, or hands out `&mut` to the local copy under the
// `&mut Sym` borrow of `World::local_slice_mut` (see its docs). No method
// changes `base`, `map` or `data_len` after construction; unmapping and
// unlinking happen in `Drop`, which needs the only handle.
unsafe impl Send for Segment {}
// SAFETY: as above: shared access is through raw pointers and atomics only.
unsafe impl Sync for Segment {}

/// The address range of a mapped segment, without ownership: what the TCP
/// progress thread needs to apply requests to this rank's memory.
#[derive(Clone, Copy)]
pub struct RawSegment {
    base: *mut u8,
    len: usize,
    data_len: usize,
}

// SAFETY: a RawSegment is only a pointer and a length into a MAP_SHARED
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

    /// Bytes addressable by offset: the heap, then any global data.
    #[inline]
    pub fn heap_len(self) -> usize {
        self.len - HEADER_BYTES
    }

    /// Heap offsets the heap proper spans; the global data starts here.
    #[inline]
    pub fn alloc_len(self) -> usize {
        self.heap_len() - self.data_len
    }

    /// Bytes of global data at the end (heap offsets `alloc_len()..heap_len()`).
    #[inline]
    pub fn data_len(self) -> usize {
        self.data_len
    }

    /// The heap's committed extent: offsets below it have memory. The
    /// whole heap, until it grows (issue 67).
    #[inline]
    pub fn committed(self) -> usize {
        self.alloc_len()
    }
}

impl Segment {
    /// Private to this process (singleton or no same-host peers). With
    /// global `data` it is a memfd, so the data can be mapped twice.
    pub fn anonymous(rank: usize, heap_bytes: usize, data: Option<DataRange>) -> Result<Segment> {
        let Some(range) = data else {
            let map = MmapOptions::new()
                .len(HEADER_BYTES + heap_bytes)
                .map_anon()
                .map_err(|source| create_err(rank, "allocate", "<anonymous>", source))?;
            return Ok(Segment::from_map(map, None, 0));
        };
        // SAFETY: memfd_create takes a NUL-terminated name and flags.
        let fd = cvt(unsafe { libc::memfd_create(c"oneside-heap".as_ptr(), libc::MFD_CLOEXEC) })
            .map_err(|source| create_err(rank, "create", "<memfd>", source))?;
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        let bytes = HEADER_BYTES + heap_bytes + range.len;
        let map = file
            .set_len(bytes as u64)
            .and_then(|()| map_file(&file, bytes))
            .map_err(|source| create_err(rank, "size and map", "<memfd>", source))?;
        let segment = Segment::from_map(map, None, range.len);
        segment.adopt(rank, &file, range)?;
        Ok(segment)
    }

    /// Creates `/dev/shm/oneside-<job>-<rank>` (mode 0600, must not exist)
    /// and maps it; with global `data`, adopts it into the file's tail.
    pub fn create_shared(
        rank: usize,
        job_id: &str,
        heap_bytes: usize,
        data: Option<DataRange>,
    ) -> Result<(Segment, ShmCard)> {
        let path = format!("/dev/shm/{}{job_id}-{rank}", crate::protocol::env::SHM_PREFIX);
        let data_len = data.map_or(0, |r| r.len);
        let bytes = (HEADER_BYTES + heap_bytes + data_len) as u64;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| create_err(rank, "create", &path, source))?;
        // From here on, an error must not leave the file behind.
        let mapped = file
            .set_len(bytes)
            .and_then(|()| map_file(&file, bytes as usize))
            .map_err(|source| {
                let _ = std::fs::remove_file(&path);
                create_err(rank, "size and map", &path, source)
            });
        let segment = Segment::from_map(mapped?, Some(path.clone()), data_len);
        if let Some(range) = data {
            segment.adopt(rank, &file, range)?;
        }
        let token = u64::from_le_bytes(crate::protocol::auth::random_bytes());
        // SAFETY: the header lies inside the mapping we just created, is
        // 8-byte aligned (page-aligned base) and nobody else maps it yet.
        unsafe {
            segment.base.cast::<u64>().add(1).write(token);
            segment.base.cast::<u64>().add(2).write(heap_bytes as u64);
            segment.magic().store(MAGIC, Ordering::Release);
        }
        Ok((segment, ShmCard { path, token, bytes }))
    }

    /// Copies the program's global data into this segment's tail and maps
    /// the tail over it (`globals`).
    fn adopt(&self, rank: usize, file: &File, range: DataRange) -> Result<()> {
        let offset = self.map.len() - range.len;
        // SAFETY: the tail is the last `range.len` bytes of our writable
        // mapping of `file`, page aligned because the header, the heap and
        // the range are page multiples; init runs before this rank starts
        // any thread of its own.
        unsafe { globals::adopt(rank, range, file.as_raw_fd(), offset, self.base.add(offset)) }
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
        let map = map_file(&file, len as usize).map_err(|e| format!("mmap: {e}"))?;
        let segment = Segment::from_map(map, None, 0);
        // SAFETY: the mapping is at least HEADER_BYTES long (checked size), page aligned.
        let token = unsafe { segment.base.cast::<u64>().add(1).read_volatile() };
        if segment.magic().load(Ordering::Acquire) != MAGIC || token != card.token {
            return Err("it is not the segment this peer announced (token mismatch)".into());
        }
        Ok(segment)
    }

    fn from_map(mut map: MmapMut, owned_path: Option<String>, data_len: usize) -> Segment {
        let base = map.as_mut_ptr();
        Segment {
            map,
            base,
            owned_path,
            data_len,
        }
    }

    /// The mapping's address range, for the progress engine.
    #[inline]
    pub fn raw(&self) -> RawSegment {
        RawSegment {
            base: self.base,
            len: self.map.len(),
            data_len: self.data_len,
        }
    }

    /// Start of the symmetric heap in this mapping.
    #[inline]
    pub fn heap_base(&self) -> *mut u8 {
        self.raw().heap_base()
    }

    /// Bytes addressable by offset in this mapping: heap, then global data.
    #[inline]
    pub fn heap_len(&self) -> usize {
        self.raw().heap_len()
    }

    /// Bytes the heap allocator may hand out: all but the global data.
    #[inline]
    pub fn alloc_len(&self) -> usize {
        self.heap_len() - self.data_len
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

fn map_file(file: &File, len: usize) -> std::io::Result<MmapMut> {
    // SAFETY: the file lives in /dev/shm and is shared with peer processes
    // on purpose; we never create Rust references into the mapping, only raw
    // pointers and atomics (see the crate's memory model).
    unsafe { MmapOptions::new().len(len).map_mut(file) }
}

fn create_err(rank: usize, what: &'static str, path: &str, source: std::io::Error) -> Error {
    Error::SegmentCreate {
        rank,
        what,
        path: path.to_string(),
        source,
    }
}
