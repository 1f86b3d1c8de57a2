//! The one check of a libc call's result. `cvt` turns the -1 (any
//! negative value) that a system call returns on failure into the error it
//! left in `errno` (`io::Error::last_os_error`) and any other value into
//! `Ok`; `cvt_null` does the same for a library call that fails with a null
//! pointer and `errno` set (libibverbs' constructors).
//!
//! Functions rather than mio's `syscall!` macro, which makes the call
//! inside an `unsafe` block of its own: here the call stays at its site, in
//! that site's `unsafe` block under the `// SAFETY:` comment that says why
//! its arguments are sound (the workspace lints
//! `clippy::undocumented_unsafe_blocks`, and CI denies warnings). A macro's
//! one comment would have to vouch for arguments it never sees, at every
//! expansion; `cvt` needs no `unsafe` at all. Both only compare and read
//! `errno`: no allocation, no lock, so they serve between `fork` and `exec`
//! too (rlaunch's `pre_exec` closures).
//!
//! A leaf: it names nothing else of the crate (`tests/circles.rs` keeps it
//! in the bottom set). rlaunch uses it as `oneside::syscall`.

use std::io;

/// The integer types libc calls return, whose negative values mean failure
/// (`c_int`, `c_long`, `ssize_t`).
pub trait SysResult: Copy {
    /// Whether the call failed.
    fn failed(self) -> bool;
}

macro_rules! negative_fails {
    ($($t:ty),*) => {$(
        impl SysResult for $t {
            #[inline]
            fn failed(self) -> bool {
                self < 0
            }
        }
    )*};
}
negative_fails!(i32, i64, isize);

/// `Ok(res)`, or the call's `errno` when `res` is negative.
#[inline]
pub fn cvt<T: SysResult>(res: T) -> io::Result<T> {
    match res.failed() {
        true => Err(io::Error::last_os_error()),
        false => Ok(res),
    }
}

/// `Ok(ptr)`, or the call's `errno` when `ptr` is null.
#[inline]
pub fn cvt_null<T>(ptr: *mut T) -> io::Result<*mut T> {
    match ptr.is_null() {
        true => Err(io::Error::last_os_error()),
        false => Ok(ptr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_result_is_the_calls_errno_and_any_other_is_ok() {
        // SAFETY: close(-1) touches no memory; it fails with EBADF.
        let closed = cvt(unsafe { libc::close(-1) });
        assert_eq!(closed.unwrap_err().raw_os_error(), Some(libc::EBADF));
        // SAFETY: getpid takes nothing and cannot fail.
        assert!(cvt(unsafe { libc::getpid() }).is_ok_and(|pid| pid > 0));
        assert_eq!(cvt(0isize).ok(), Some(0));
        assert_eq!(cvt(7i64).ok(), Some(7));
    }

    #[test]
    fn a_null_pointer_is_the_calls_errno() {
        // SAFETY: malloc of an impossible size returns null with ENOMEM.
        let got = cvt_null(unsafe { libc::malloc(usize::MAX) });
        assert_eq!(got.unwrap_err().raw_os_error(), Some(libc::ENOMEM));
        let mut x = 1u8;
        assert!(cvt_null(&raw mut x).is_ok());
    }
}
