//! Shared objects opened at run time (`dlopen`), for the libraries no build
//! of oneside links against: libibverbs (`transport::verbs::library`),
//! libfabric (`transport::ofi::library`) and libpmix
//! (`bootstrap::pmi::pmix`). Each resolves its table of entry points once,
//! on first use, into a `Loaded` static; the handle is never closed, so
//! every resolved pointer stays valid for the life of the process.
//!
//! Hand-rolled rather than the `libloading` crate, because what these
//! libraries need is the part libloading leaves out. Its `Library` closes
//! the object when dropped and its `Symbol<'lib, T>` borrows the
//! `Library`, so that no pointer outlives the handle; here the handle is
//! opened for good and each pointer is copied into a `'static` table of
//! plain `unsafe extern "C" fn` fields, called from any thread, which with
//! libloading means leaking every `Library` and copying each function out
//! of its `Symbol`, past the lifetime that is the crate's reason to be. The
//! flags, `RTLD_NOW | RTLD_LOCAL` (a missing symbol fails the open, not a
//! later call; the library's symbols stay out of the global namespace, in
//! which the program's MPI may have its own libfabric or libpmix), need
//! libloading's `os::unix::Library::open` anyway (its `new` is
//! `RTLD_LAZY | RTLD_LOCAL`); and the unsafe promise that `F` is the
//! function's C type is the caller's with either. What remains is
//! `dlopen`, `dlsym` and `dlerror` on Linux, whose `dlerror` is per
//! thread: a few dozen lines, against a dependency.

use std::ffi::{c_void, CStr, CString};
use std::sync::OnceLock;

/// An opened shared object, kept open for good.
pub struct Dynlib {
    handle: *mut c_void,
    /// The file asked for, for messages.
    pub file: String,
}

impl Dynlib {
    /// Opens `file` (a soname the loader searches for, or a path).
    pub fn open(file: &str) -> Result<Dynlib, String> {
        let name = CString::new(file).map_err(|_| format!("{file:?} holds a NUL byte"))?;
        // SAFETY: dlopen with a valid C string. Running the library's
        // initializers is what linking against it would do too.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dl_error());
        }
        Ok(Dynlib {
            handle,
            file: file.to_string(),
        })
    }

    /// The function `name`, as the function pointer type `F`.
    ///
    /// # Safety
    /// `F` must be an `unsafe extern "C" fn` type with the C signature of
    /// the library's function `name`.
    pub unsafe fn function<F: Copy>(&self, name: &CStr) -> Result<F, String> {
        const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
        // SAFETY: `handle` is a live dlopen handle and `name` a C string.
        let address = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        if address.is_null() {
            return Err(format!(
                "{} has no {}: {}",
                self.file,
                name.to_string_lossy(),
                dl_error()
            ));
        }
        // SAFETY: a non-null address of the function `name`, whose type the
        // caller vouches `F` is; both are one pointer wide (checked above).
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
    }
}

// SAFETY: a dlopen handle may be used from any thread; it is only read.
unsafe impl Send for Dynlib {}
// SAFETY: as above.
unsafe impl Sync for Dynlib {}

/// The loader's last error message.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated message.
    let message = unsafe { libc::dlerror() };
    match message.is_null() {
        true => "no detail from the loader".into(),
        // SAFETY: non-null: a NUL-terminated string valid until the next dl call.
        false => unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned(),
    }
}

/// A library's table of entry points, opened and resolved on first use by
/// the first caller of `get`; every later call gets the same answer,
/// failure included (the text of why, said once for every caller).
pub struct Loaded<T>(OnceLock<Result<T, String>>);

impl<T> Loaded<T> {
    pub const fn new() -> Loaded<T> {
        Loaded(OnceLock::new())
    }

    /// The table, opened by `open` if no call has yet; or why it cannot be.
    pub fn get<E: std::fmt::Display>(
        &'static self,
        open: impl FnOnce() -> Result<T, E>,
    ) -> Result<&'static T, &'static str> {
        self.0
            .get_or_init(|| open().map_err(|why| why.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }
}
