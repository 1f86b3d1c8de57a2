//! The note a failed `shmem_malloc`, `shmem_calloc`, `shmem_align` or
//! `shmem_realloc` leaves. The specification has them return NULL, and
//! many programs never check (ISx writes through the NULL): the PE then
//! dies of SIGSEGV with nothing said about the heap.
//!
//! The heap grows as the program allocates, so a NULL means one of two
//! things, each the same on every PE: the cap (`SHMEM_SYMMETRIC_SIZE`)
//! leaves no room, or a host had no memory for the growth. The failed
//! call keeps one line saying which, and what to do. Under
//! `rlaunch --debug` (`ONESIDE_DEBUG=1`) it is printed at once. Under
//! Python (shmem4py, which raises `MemoryError` with no word of the heap)
//! PE 0 prints it at once, with the Python line that asked; the others
//! say nothing, since their line would be the same. Otherwise it is
//! printed only if the process then dies of a fault, first in oneside's
//! crash report (the frames follow). A program that checks for NULL and
//! goes on prints nothing.

/// What C programs that do not check are told; Python's binding raises
/// `MemoryError` instead, so its line leaves it out.
const SIGSEGV: &str = "; a program that uses the NULL dies of SIGSEGV";

/// The line for a failed `api` on PE `pe` that the heap's cap (`capped`)
/// or reservation of `cap` bytes leaves no room for.
pub fn full(api: &str, pe: usize, requested: usize, largest_free: usize, (cap, capped): (usize, bool)) -> String {
    let advice = match capped {
        true => "Check the result, or raise the cap SHMEM_SYMMETRIC_SIZE (or unset it: the heap then grows as far as memory allows)",
        false => "Check the result; this is the address space reserved for each PE's heap in a job of this size (set SHMEM_SYMMETRIC_SIZE above it to reserve more)",
    };
    let what = if capped { "cap" } else { "reservation" };
    format!(
        "oneside: {api}: PE {pe}: returned NULL: asked for {requested} bytes, the largest free block is \
         {largest_free} bytes of the symmetric heap's {cap}-byte {what}{SIGSEGV}. {advice}\n"
    )
}

/// The line for a failed `api` whose growth a host refused (`e` is the
/// `HeapGrowth` error, which says which PE and which limit).
pub fn cannot_grow(api: &str, e: &oneside::Error) -> String {
    format!("oneside: {api}: returned NULL: {}{SIGSEGV}\n", e.kind())
}

/// Keeps `line` for a crash report, or prints it now when `checking`, or
/// from PE 0 under Python.
pub fn keep(line: &str, pe: usize, checking: bool) {
    if checking {
        crate::state::say(line);
        return;
    }
    match crate::python::caller() {
        Some(at) if pe == 0 => crate::state::say(&format!("{} (at {at})", line.trim_end().replace(SIGSEGV, ""))),
        Some(_) => {}
        None => oneside::keep_crash_note(line),
    }
}
