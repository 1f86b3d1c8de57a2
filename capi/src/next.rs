//! The next definition of a C function this library defines in front of
//! another library's: libgomp's entry points (`omp`), libc's threads,
//! locks and one-time initializations (`pthread`, `locks`, `once`). Each
//! is found once, with `dlsym(RTLD_NEXT)`, and kept; `real!(name: type,
//! library)` gives it as its C type, `libc_real!(name: type)` libc's. Where
//! nothing follows (a program that asked only for this library's), the
//! library named is loaded and searched; a function found nowhere ends
//! the process with a message naming it.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The address of `name` after this library's, or in `library`, cached
/// in `cache`.
pub(crate) fn resolve(name: &CStr, cache: &AtomicUsize, library: &CStr) -> usize {
    let cached = cache.load(Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: dlsym and dlopen with NUL-terminated names; RTLD_NEXT finds
    // the definition after this library's.
    let found = unsafe {
        let next = libc::dlsym(libc::RTLD_NEXT, name.as_ptr());
        match next.is_null() {
            false => next,
            true => {
                let lib = libc::dlopen(library.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
                match lib.is_null() {
                    true => next,
                    false => libc::dlsym(lib, name.as_ptr()),
                }
            }
        }
    };
    if found.is_null() {
        let how = match library.to_bytes().starts_with(b"libgomp") {
            true => " (oshcc -fopenmp)",
            false => "",
        };
        eprintln!(
            "oneside: {} is not in {}: link the program with it{how}",
            name.to_string_lossy(),
            library.to_string_lossy()
        );
        std::process::abort();
    }
    cache.store(found as usize, Relaxed);
    found as usize
}

/// `$name`'s next definition, of C type `$ty`, else `$library`'s.
macro_rules! real {
    ($name:ident: $ty:ty, $library:expr) => {{
        static CACHE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let address = $crate::next::resolve(
            // SAFETY: the literal ends with its only NUL.
            unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
            &CACHE,
            $library,
        );
        // SAFETY: `address` is `$name`, whose C signature is `$ty`.
        unsafe { std::mem::transmute::<usize, $ty>(address) }
    }};
}

/// libc's `$name`, of C type `$ty` (`real!` in libc).
macro_rules! libc_real {
    ($name:ident: $ty:ty) => {
        real!($name: $ty, c"libc.so.6")
    };
}
