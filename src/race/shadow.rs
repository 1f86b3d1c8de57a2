//! The filter a C program built by `oshcc --check-races` checks inline:
//! AddressSanitizer's shadow memory, one byte for each 8 bytes of the
//! address space at `(addr >> 3) + OFFSET`. GCC and Clang compile
//! `-fsanitize=address` into a load of that byte and a compare before
//! every load and store, and a call (`__asan_report_load8_noabort`) only
//! where it is not zero. The checker keeps it zero everywhere except over
//! what it watches: the symmetric heap's allocations, the symmetric
//! global data and the buffers of pending non-blocking operations
//! (*marked*, a negative byte, which every access size reports). So a loop
//! over private memory costs a load and a branch per access, never a call;
//! each call that does come is judged exactly, as before (`race::access`).
//!
//! The shadow is mapped by the program's `__asan_init`, before its first
//! instrumented access; without it (Rust programs, C built without the
//! flag) marking does nothing. A large range is marked by mapping a small
//! file of marked bytes over its shadow, again and again, rather than by
//! writing it (`MAPPED_MIN`). x86_64 Linux only: ASan's layout is
//! another elsewhere, and `oshcc` then builds with `-fsanitize=thread`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::OnceLock;

/// ASan's shadow offset, and the two ranges of shadow its x86_64 layout
/// has (for low memory, and for high memory); the gap between is never
/// read, since the shadow of the shadow is not.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
const OFFSET: usize = 0x7fff_8000;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
const RANGES: [(usize, usize); 2] = [(0x7fff_8000, 0x8fff_7000), (0x0200_8fff_7000, 0x1000_7fff_8000)];

/// A marked byte: negative, so an access of any size and alignment in its
/// 8 bytes fails ASan's compare.
const MARK: u8 = 0xff;

static MAPPED: AtomicBool = AtomicBool::new(false);

/// Maps the shadow (idempotent, and one caller at a time: two threads'
/// first calls would both map it, and the second find the first's
/// mapping in its way): address space only, whose pages read as zero
/// until marked. Fails when something already lies there.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub fn map() -> std::io::Result<()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = crate::sync::lock(&ONE);
    if MAPPED.load(Relaxed) {
        return Ok(());
    }
    for (lo, hi) in RANGES {
        // SAFETY: a new private anonymous mapping at an address nothing
        // else in the process uses (MAP_FIXED_NOREPLACE fails otherwise).
        let at = unsafe {
            libc::mmap(
                lo as *mut libc::c_void,
                hi - lo,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        if at as usize != lo {
            // An older kernel without MAP_FIXED_NOREPLACE took it as a hint.
            // SAFETY: unmaps the mapping just made, which nothing uses.
            unsafe { libc::munmap(at, hi - lo) };
            return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
        }
    }
    MAPPED.store(true, Relaxed);
    Ok(())
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub fn map() -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// The shadow bytes of `[lo, lo + len)`: every granule it touches.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn bytes(lo: usize, len: usize) -> Option<(*mut u8, usize)> {
    if !MAPPED.load(Relaxed) || len == 0 {
        return None;
    }
    let first = lo >> 3;
    let last = (lo + len - 1) >> 3;
    Some(((first + OFFSET) as *mut u8, last - first + 1))
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn bytes(_: usize, _: usize) -> Option<(*mut u8, usize)> {
    None
}

/// Marks `[lo, lo + len)`: the program's accesses there come to the checker.
pub(crate) fn mark(lo: usize, len: usize) {
    let Some((at, n)) = bytes(lo, len) else { return };
    let (start, end) = (at as usize, at as usize + n);
    let (inner_lo, inner_hi) = (start.next_multiple_of(PAGE), end & !(PAGE - 1));
    let ends = match inner_hi >= inner_lo + MAPPED_MIN && map_marked(inner_lo, inner_hi - inner_lo) {
        true => [(start, inner_lo - start), (inner_hi, end - inner_hi)],
        false => [(start, n), (end, 0)],
    };
    for (at, n) in ends {
        // SAFETY: the shadow of any user address lies in the mapping `map`
        // made, readable and writable; other threads only read it.
        unsafe { (at as *mut u8).write_bytes(MARK, n) };
    }
}

/// Shadow pages: the unit a file's pages are mapped in.
const PAGE: usize = 4096;

/// Shadow ranges this long or longer are marked by `map_marked`. Writing
/// the shadow of ISx's 1 GiB key buffer (128 MiB) made the kernel clear
/// 32768 pages that the program never reads: its checked run held 1.2x
/// the memory of its plain one (1.01x mapped), and a checked
/// `shmem_malloc` of 1 GiB took 300 ms against 240 unchecked (235 mapped).
const MAPPED_MIN: usize = 64 << 10;

/// The length of the file of marked bytes, and of each mapping of it.
const CHUNK: usize = 2 << 20;

/// A memfd of `CHUNK` marked bytes, made on first use; `None` when it
/// could not be (marking then writes).
fn marked_file() -> Option<&'static OwnedFd> {
    static FILE: OnceLock<Option<OwnedFd>> = OnceLock::new();
    FILE.get_or_init(|| {
        use crate::syscall::cvt;
        // SAFETY: a NUL-terminated name and flags; the descriptor it
        // returns is owned by nothing else.
        let fd = unsafe {
            OwnedFd::from_raw_fd(cvt(libc::memfd_create(c"oneside-shadow".as_ptr(), libc::MFD_CLOEXEC)).ok()?)
        };
        // SAFETY: a descriptor this function owns.
        cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), CHUNK as libc::off_t) }).ok()?;
        // SAFETY: a new shared mapping of the whole file, written and
        // unmapped here.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CHUNK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: `p` is the CHUNK bytes just mapped, which nothing else uses.
        unsafe {
            (p as *mut u8).write_bytes(MARK, CHUNK);
            libc::munmap(p, CHUNK);
        }
        Some(fd)
    })
    .as_ref()
}

/// Marks the page-aligned shadow range `[lo, lo + len)` by mapping the
/// file of marked bytes over it, privately: a page the program only reads
/// is one of the file's, one it writes (`unmark`) becomes its own. False
/// when there is no file (the caller then writes it all); where a mapping
/// fails, the rest is made anonymous again and written.
fn map_marked(lo: usize, len: usize) -> bool {
    let Some(fd) = marked_file() else { return false };
    let mut at = lo;
    while at < lo + len {
        let n = CHUNK.min(lo + len - at);
        // SAFETY: `[at, at + n)` lies in the shadow `map` made, which only
        // the checker maps; MAP_FIXED replaces those pages.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                n,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let rest = lo + len - at;
            // SAFETY: as above, an anonymous mapping again, as `map` made
            // it, and marked by writing where that succeeds (a failed
            // MAP_FIXED may have left a hole, which nothing can mend).
            unsafe {
                let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED;
                let again = libc::mmap(
                    at as *mut libc::c_void,
                    rest,
                    libc::PROT_READ | libc::PROT_WRITE,
                    flags,
                    -1,
                    0,
                );
                if again != libc::MAP_FAILED {
                    (at as *mut u8).write_bytes(MARK, rest);
                }
            }
            return true;
        }
        at += n;
    }
    true
}

/// Unmarks `[lo, lo + len)` except where `keep` says a part stays watched
/// (`keep(lo, len)` is called for each granule's range still marked).
pub(crate) fn unmark(lo: usize, len: usize, keep: impl Fn(usize, usize) -> bool) {
    let Some((at, n)) = bytes(lo, len) else { return };
    let first = lo & !7;
    for i in 0..n {
        if !keep(first + 8 * i, 8) {
            // SAFETY: as in `mark`.
            unsafe { at.add(i).write(0) };
        }
    }
}

/// Whether any of `[addr, addr + len)` is marked: for the entries a
/// compiler calls instead of checking inline (`__asan_load8_noabort`).
#[inline]
pub fn marked(addr: usize, len: usize) -> bool {
    match bytes(addr, len) {
        // SAFETY: as in `mark`, read only.
        Some((at, n)) => (0..n).any(|i| unsafe { at.add(i).read() } != 0),
        None => false,
    }
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn marks_whole_granules_and_unmarks_what_is_not_kept() {
        map().expect("the shadow maps in a test process");
        let buf = [0u64; 8];
        let at = buf.as_ptr() as usize;
        assert!(!marked(at, 64));
        mark(at + 9, 2);
        assert!(marked(at + 8, 1) && marked(at + 15, 1), "the whole granule");
        assert!(!marked(at, 8) && !marked(at + 16, 8));
        mark(at + 32, 16);
        unmark(at, 64, |lo, _| lo == ((at + 40) & !7));
        assert!(!marked(at + 8, 8) && !marked(at + 32, 8));
        assert!(marked(at + 40, 8), "kept");
        unmark(at, 64, |_, _| false);
        assert!(!marked(at, 64));
    }

    #[test]
    fn a_large_range_is_marked_by_mapping_and_stays_exact_at_its_ends() {
        map().expect("the shadow maps in a test process");
        // 2 MiB and a bit, at an odd offset: its shadow's interior is
        // mapped from the file, its ends written.
        let buf = vec![0u8; (2 << 20) + 4096];
        let at = buf.as_ptr() as usize;
        let (lo, len) = (at + 1000, (2 << 20) + 8);
        assert!(!marked(lo, len));
        mark(lo, len);
        assert!(marked_file().is_some(), "the file of marked bytes was made");
        for probe in [lo, lo + 4096 * 8, lo + len / 2, lo + len - 1] {
            assert!(marked(probe, 1), "{probe:#x} is marked");
        }
        assert!(
            !marked(at, 992) && !marked((lo + len + 7) & !7, 8),
            "nothing past either end"
        );
        unmark(lo + 65536, 4096, |_, _| false);
        assert!(!marked(lo + 65536, 4096) && marked(lo + 65536 - 8, 8) && marked(lo + 65536 + 4096, 8));
        unmark(lo, len, |_, _| false);
        assert!(!marked(at, buf.len()));
    }
}
