//! The race checker's eyes in a C program built by `oshcc --check-races`
//! with Clang and without OpenMP: `-fsanitize=address
//! -fsanitize-recover=address`, with ASan's stack, globals and
//! use-after-return parts off, and `-asan-opt-globals=0` so that a
//! global's constant-index accesses are checked too. Clang then checks
//! one shadow byte inline before every load and store, and calls
//! `__asan_report_load8_noabort(addr)` only where it is not zero. The
//! library keeps that shadow (`oneside::race::shadow`) marked exactly over
//! what the checker watches, so the calls that come are the accesses to
//! symmetric memory and to pending non-blocking buffers, and a loop over
//! private memory makes none. These are ASan's entry points, linked
//! instead of its runtime; each passes the access to
//! `oneside::race::access` as the ThreadSanitizer entries do (`tsan`),
//! with its return address as the place.
//!
//! ASan sees a C atomic as a plain access, so a program with OpenMP is
//! built with `-fsanitize=thread` instead, whose atomics order threads;
//! so is one built by GCC, whose ASan has no way to check a global's
//! constant-index accesses (`oshcc`'s `races.rs`).

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]
#![allow(clippy::missing_safety_doc, non_snake_case)]

use crate::tsan::{access, trampoline, READ, SIZED, WRITE};
use oneside::race::shadow;

/// The program's first call, from each instrumented object's constructor,
/// before any instrumented access: maps the shadow.
#[no_mangle]
pub extern "C" fn __asan_init() {
    if let Err(e) = shadow::map() {
        let why = match e.raw_os_error() {
            Some(libc::ENOMEM) => {
                "the address-space limit (ulimit -v) leaves no room for its 16 TiB of reserved, unbacked address space"
            }
            Some(libc::EEXIST) => "something else already lies in that address range (AddressSanitizer's own runtime?)",
            _ => "the kernel refused the mapping",
        };
        eprintln!(
            "oneside: this program, built by `oshcc --check-races` with Clang, could not map the race checker's shadow memory: {why} ({e}).\n  \
             Raise the limit, or build it with ONESIDE_RACE_INSTRUMENT=thread oshcc --check-races, or without --check-races."
        );
        std::process::exit(1);
    }
}

/// The compiler's check that its instrumentation matches the runtime's.
#[no_mangle]
pub extern "C" fn __asan_version_mismatch_check_v8() {}

/// Before a call that does not return: ASan unpoisons the stack, which
/// the checker never marks.
#[no_mangle]
pub extern "C" fn __asan_handle_no_return() {}

/// C++ dynamic initialization order and allocas: parts of ASan that are
/// off in this build, declared in case a compiler emits them anyway.
#[no_mangle]
pub extern "C" fn __asan_before_dynamic_init(_module: *const libc::c_char) {}
#[no_mangle]
pub extern "C" fn __asan_after_dynamic_init() {}
#[no_mangle]
pub extern "C" fn __asan_alloca_poison(_addr: usize, _size: usize) {}
#[no_mangle]
pub extern "C" fn __asan_allocas_unpoison(_top: usize, _bottom: usize) {}

/// An access the compiler checks by a call (a function with very many
/// accesses, an odd size): `N` bytes (`SIZED`: the call's second
/// argument), passed on only where the shadow is marked.
extern "C" fn checked<const N: usize, const KIND: u8>(
    addr: usize,
    size: usize,
    _: usize,
    _: usize,
    _: usize,
    pc: usize,
) {
    let len = if N == SIZED { size } else { N };
    if shadow::marked(addr, len) {
        oneside::race::access(addr, len, KIND, pc);
    }
}

/// Clang's `memcpy`, `memmove` and `memset` in instrumented code: the
/// ranges checked, then the call.
extern "C" fn memcpy(dst: usize, src: usize, n: usize, _: usize, _: usize, pc: usize) -> usize {
    checked::<SIZED, READ>(src, n, 0, 0, 0, pc);
    checked::<SIZED, WRITE>(dst, n, 0, 0, 0, pc);
    // SAFETY: the program's own memcpy, with its own arguments.
    unsafe { libc::memcpy(dst as *mut libc::c_void, src as *const libc::c_void, n) as usize }
}

extern "C" fn memmove(dst: usize, src: usize, n: usize, _: usize, _: usize, pc: usize) -> usize {
    checked::<SIZED, READ>(src, n, 0, 0, 0, pc);
    checked::<SIZED, WRITE>(dst, n, 0, 0, 0, pc);
    // SAFETY: as in `memcpy`.
    unsafe { libc::memmove(dst as *mut libc::c_void, src as *const libc::c_void, n) as usize }
}

extern "C" fn memset(dst: usize, c: usize, n: usize, _: usize, _: usize, pc: usize) -> usize {
    checked::<SIZED, WRITE>(dst, n, 0, 0, 0, pc);
    // SAFETY: as in `memcpy`.
    unsafe { libc::memset(dst as *mut libc::c_void, c as libc::c_int, n) as usize }
}

trampoline! {
    __asan_report_load1_noabort => access::<1, READ>;
    __asan_report_load2_noabort => access::<2, READ>;
    __asan_report_load4_noabort => access::<4, READ>;
    __asan_report_load8_noabort => access::<8, READ>;
    __asan_report_load16_noabort => access::<16, READ>;
    // An access of an unusual size or alignment (a `long double`'s 10
    // bytes, an unaligned 8): Clang checks its first and last byte apart
    // and reports the byte whose check failed, with the access's size, so
    // the address may be either end. Only that byte is passed on (the
    // other end, if marked, comes in its own call): taking the size from
    // it would claim bytes past the object.
    __asan_report_load_n_noabort => access::<1, READ>;
    __asan_report_store1_noabort => access::<1, WRITE>;
    __asan_report_store2_noabort => access::<2, WRITE>;
    __asan_report_store4_noabort => access::<4, WRITE>;
    __asan_report_store8_noabort => access::<8, WRITE>;
    __asan_report_store16_noabort => access::<16, WRITE>;
    __asan_report_store_n_noabort => access::<1, WRITE>;
    __asan_load1_noabort => checked::<1, READ>;
    __asan_load2_noabort => checked::<2, READ>;
    __asan_load4_noabort => checked::<4, READ>;
    __asan_load8_noabort => checked::<8, READ>;
    __asan_load16_noabort => checked::<16, READ>;
    __asan_loadN_noabort => checked::<SIZED, READ>;
    __asan_store1_noabort => checked::<1, WRITE>;
    __asan_store2_noabort => checked::<2, WRITE>;
    __asan_store4_noabort => checked::<4, WRITE>;
    __asan_store8_noabort => checked::<8, WRITE>;
    __asan_store16_noabort => checked::<16, WRITE>;
    __asan_storeN_noabort => checked::<SIZED, WRITE>;
    __asan_memcpy => memcpy;
    __asan_memmove => memmove;
    __asan_memset => memset;
}
