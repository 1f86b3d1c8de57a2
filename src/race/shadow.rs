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
//! flag) marking does nothing. x86_64 Linux only: ASan's layout is
//! another elsewhere, and `oshcc` then builds with `-fsanitize=thread`.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

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

/// Maps the shadow (idempotent): address space only, whose pages read as
/// zero until marked. Fails when something already lies there.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub fn map() -> std::io::Result<()> {
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
    if let Some((at, n)) = bytes(lo, len) {
        // SAFETY: the shadow of any user address lies in the mapping `map`
        // made, readable and writable; other threads only read it.
        unsafe { at.write_bytes(MARK, n) };
    }
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
}
