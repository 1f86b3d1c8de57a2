//! A shared mapping of a segment file at an address aligned to
//! [`HEAP_ALIGN`], unmapped on drop.
//!
//! `shmem_align` and `World::alloc_aligned` must give every rank the same
//! offset, aligned on every rank. The allocator aligns offsets against
//! the heap's base, so the bases must agree modulo the alignment: every
//! rank maps its own segment at a multiple of `HEAP_ALIGN`, and the
//! allocator aligns against the base modulo it, which is then the same
//! everywhere (the kernel's own choice of address agreed only by chance,
//! and shmem_align's 8 MiB alignment in tests-sos showed one rank out of
//! two getting another offset).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// The largest alignment an allocation may ask for: 1 GiB.
pub const HEAP_ALIGN: usize = 1 << 30;

/// A `MAP_SHARED` mapping of a whole file.
pub struct Mapping {
    pub ptr: *mut u8,
    pub len: usize,
}

/// Maps `len` bytes of `file` read-write and shared, at a multiple of
/// `align` (a power of two, at least a page).
pub fn map(file: &File, len: usize, align: usize) -> io::Result<Mapping> {
    let span = len
        .checked_add(align)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: an anonymous, inaccessible reservation at an address of the
    // kernel's choice; nothing is mapped over by it.
    let hole = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if hole == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let start = (hole as usize).next_multiple_of(align);
    // SAFETY: [start, start + len) lies inside the reservation just made,
    // which this process owns and nothing else uses; MAP_FIXED replaces it.
    let got = unsafe {
        libc::mmap(
            start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            file.as_raw_fd(),
            0,
        )
    };
    let before = start - hole as usize;
    let after = span - before - len;
    // SAFETY: the slack before and after the mapping is the rest of our own
    // reservation (or, on failure, the whole of it).
    unsafe {
        if got == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            libc::munmap(hole, span);
            return Err(e);
        }
        if before > 0 {
            libc::munmap(hole, before);
        }
        if after > 0 {
            libc::munmap((start + len) as *mut libc::c_void, after);
        }
    }
    Ok(Mapping {
        ptr: start as *mut u8,
        len,
    })
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, made by `map`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_is_aligned_and_shares_the_file() {
        let file = tempfile_in_dev_shm();
        file.set_len(3 << 20).unwrap();
        let a = map(&file, 3 << 20, HEAP_ALIGN).unwrap();
        let b = map(&file, 3 << 20, 4096).unwrap();
        assert_eq!(a.ptr as usize % HEAP_ALIGN, 0);
        // SAFETY: both map the same 3 MiB file; one byte written, then read.
        unsafe {
            a.ptr.add(1 << 20).write_volatile(7);
            assert_eq!(b.ptr.add(1 << 20).read_volatile(), 7);
        }
    }

    fn tempfile_in_dev_shm() -> File {
        let path = format!("/dev/shm/oneside-mapping-test-{}", std::process::id());
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
