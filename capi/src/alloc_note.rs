//! The note a failed `shmem_malloc`, `shmem_calloc` or `shmem_align`
//! leaves. The specification has them return NULL, and many programs
//! never check (ISx asks for 1 GiB and writes through the NULL): the PE
//! then dies of SIGSEGV with nothing said about the heap.
//!
//! So the failed call keeps one line (what was asked, the heap's size,
//! and how to raise it). Under `rlaunch --debug` (`ONESIDE_DEBUG=1`) it
//! is printed at once. Otherwise it is printed only if the process then
//! dies of a fault, first in oneside's crash report (the frames follow).
//! A program that checks for NULL and goes on prints nothing.

/// The line for a failed `api` of `requested` bytes on PE `pe`.
pub fn text(api: &str, pe: usize, requested: usize, largest_free: usize, heap_size: usize) -> String {
    format!(
        "oneside: {api}: PE {pe}: returned NULL: asked for {requested} bytes, the largest free block is \
         {largest_free} bytes of a {heap_size}-byte symmetric heap; a program that uses the NULL dies of \
         SIGSEGV. Check the result, or raise the heap with SHMEM_SYMMETRIC_SIZE (e.g. =2G)\n"
    )
}

/// Keeps `line` for a crash report, or prints it now when `checking`.
pub fn keep(line: &str, checking: bool) {
    match checking {
        true => eprint!("{line}"),
        false => oneside::keep_crash_note(line),
    }
}
