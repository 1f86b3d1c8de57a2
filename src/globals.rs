//! Symmetric global data: the executable's `.data` and `.bss`, made
//! remotely accessible as OpenSHMEM requires (`static long x;
//! shmem_long_p(&x, 1, pe)`).
//!
//! At `init`, the writable part of the executable's data segment (after
//! its RELRO prefix) is copied into the tail of this rank's memory segment,
//! and the segment's file is then mapped over the original pages with
//! `MAP_FIXED`. From then on the program's globals *are* shared memory:
//! the same physical pages appear at their usual addresses and at
//! `heap + allocator bytes` in the segment, so every transport reaches them
//! by offset exactly like heap objects (shm peers map the whole file, the
//! TCP engine reaches the global data past the reservation, and a NIC
//! registers it as a part of its own, `transport::parts`).
//!
//! Every rank runs the same executable, so the range has the same length
//! everywhere and `offset = heap_bytes + (address - start)` names the same
//! variable on every rank, whether or not the executable is position
//! independent.

use crate::error::{Error, Result};

/// A page-aligned address range of the executable's writable data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRange {
    pub start: usize,
    pub len: usize,
}

impl DataRange {
    /// Whether `[addr, addr + bytes)` lies inside the range.
    #[inline]
    pub fn contains(self, addr: usize, bytes: usize) -> bool {
        addr >= self.start && addr.saturating_add(bytes) <= self.start + self.len
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page).unwrap_or(4096).max(4096)
}

/// The executable's writable, non-RELRO data, page aligned; `None` when it
/// has none (or the program headers cannot be read).
pub fn executable_data() -> Option<DataRange> {
    struct Found {
        range: Option<DataRange>,
    }
    /// `dl_iterate_phdr`'s callback: records the first object's (the
    /// executable's) data range in `data` and stops the walk.
    ///
    /// # Safety
    /// Only for `dl_iterate_phdr`: `info` must point to a valid
    /// `dl_phdr_info` for the call, and `data` to the `Found` passed to it,
    /// not otherwise borrowed.
    unsafe extern "C" fn first_object(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> i32 {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of
        // the call, and `data` is the `Found` we passed in below.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Found>()) };
        let headers = match info.dlpi_phdr.is_null() {
            true => &[][..],
            // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
            false => unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) },
        };
        let bias = info.dlpi_addr as usize;
        let page = page_size();
        let relro_end = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_GNU_RELRO)
            .map(|h| (bias + h.p_vaddr as usize + h.p_memsz as usize).next_multiple_of(page))
            .max()
            .unwrap_or(0);
        found.range = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_W != 0)
            .map(|h| {
                let start = (bias + h.p_vaddr as usize).max(relro_end) / page * page;
                let end = (bias + h.p_vaddr as usize + h.p_memsz as usize).next_multiple_of(page);
                DataRange {
                    start,
                    len: end.saturating_sub(start),
                }
            })
            .filter(|r| r.len > 0)
            .max_by_key(|r| r.len);
        1 // the first object is the executable: stop
    }
    let mut found = Found { range: None };
    // SAFETY: the callback only reads the headers it is given and writes
    // through `data`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first_object), (&mut found as *mut Found).cast()) };
    found.range
}

/// Moves `range` into shared memory: copies its bytes to `tail` (the
/// segment's last `range.len` bytes, mapped from `fd` at `file_offset`),
/// then maps that part of the file over the range.
///
/// # Safety
/// `range` must be this process's writable data range and `tail` a
/// writable mapping of `fd` at `file_offset` of at least `range.len`
/// bytes. No other thread may write the range during the call: a write
/// between the copy and the remap would be lost.
pub unsafe fn adopt(rank: usize, range: DataRange, fd: i32, file_offset: usize, tail: *mut u8) -> Result<()> {
    // SAFETY: the caller guarantees both ranges are valid and disjoint.
    unsafe { std::ptr::copy_nonoverlapping(range.start as *const u8, tail, range.len) };
    // SAFETY: MAP_FIXED replaces the pages of the data range with the
    // file's pages, which hold the same bytes; the caller guarantees no
    // one writes the range meanwhile.
    let mapped = unsafe {
        libc::mmap(
            range.start as *mut libc::c_void,
            range.len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd,
            file_offset as libc::off_t,
        )
    };
    if mapped == libc::MAP_FAILED || mapped as usize != range.start {
        return Err(Error::SegmentCreate {
            rank,
            what: "share the program's global data through",
            path: format!("the data segment at {:#x} (+{} bytes)", range.start, range.len),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    static mut PROBE: u64 = 7;

    #[test]
    fn the_test_binarys_globals_are_inside_the_range() {
        let range = executable_data().expect("a Rust test binary has writable data");
        let addr = &raw const PROBE as usize;
        assert!(range.contains(addr, 8), "{addr:#x} not in {range:?}");
        assert_eq!(range.start % 4096, 0);
        assert_eq!(range.len % 4096, 0);
    }
}
