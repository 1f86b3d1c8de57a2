//! Where a Python program called the C API through shmem4py: the first
//! Python frame outside the binding's own package, as `file:line in
//! function`, read from the interpreter of this process when there is one.
//! libpython's entry points are resolved once, at run time, from the
//! process itself (`dlsym(RTLD_DEFAULT)`), so nothing links Python; a
//! program that is not Python gets `None`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

type Obj = *mut c_void;

/// The few entry points of CPython's stable API this needs (3.9 and later).
struct Api {
    is_initialized: unsafe extern "C" fn() -> c_int,
    gil_ensure: unsafe extern "C" fn() -> c_int,
    gil_release: unsafe extern "C" fn(c_int),
    current_frame: unsafe extern "C" fn() -> Obj,
    line_number: unsafe extern "C" fn(Obj) -> c_int,
    code: unsafe extern "C" fn(Obj) -> Obj,
    back: unsafe extern "C" fn(Obj) -> Obj,
    attr: unsafe extern "C" fn(Obj, *const c_char) -> Obj,
    utf8: unsafe extern "C" fn(Obj) -> *const c_char,
    dec_ref: unsafe extern "C" fn(Obj),
}

/// The interpreter's API, if this process has one.
fn api() -> Option<&'static Api> {
    static API: OnceLock<Option<Api>> = OnceLock::new();
    API.get_or_init(|| {
        let sym = |name: &CStr| {
            // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT looks
            // through the process's global symbols.
            let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            (!f.is_null()).then_some(f)
        };
        // SAFETY: each symbol is CPython's function of that name, whose C
        // signature the field's type declares.
        unsafe {
            Some(Api {
                is_initialized: fn_ptr(sym(c"Py_IsInitialized")?),
                gil_ensure: fn_ptr(sym(c"PyGILState_Ensure")?),
                gil_release: fn_ptr(sym(c"PyGILState_Release")?),
                current_frame: fn_ptr(sym(c"PyEval_GetFrame")?),
                line_number: fn_ptr(sym(c"PyFrame_GetLineNumber")?),
                code: fn_ptr(sym(c"PyFrame_GetCode")?),
                back: fn_ptr(sym(c"PyFrame_GetBack")?),
                attr: fn_ptr(sym(c"PyObject_GetAttrString")?),
                utf8: fn_ptr(sym(c"PyUnicode_AsUTF8")?),
                dec_ref: fn_ptr(sym(c"Py_DecRef")?),
            })
        }
    })
    .as_ref()
}

/// Whether this process's Python interpreter is shutting down: a
/// `shmem_finalize` then comes from shmem4py's exit hook (`Py_AtExit`),
/// which runs before the process's exit status is known. False outside
/// Python.
pub fn finalizing() -> bool {
    static IS_FINALIZING: OnceLock<Option<unsafe extern "C" fn() -> c_int>> = OnceLock::new();
    let f = IS_FINALIZING.get_or_init(|| {
        [c"Py_IsFinalizing", c"_Py_IsFinalizing"].iter().find_map(|name| {
            // SAFETY: dlsym with a NUL-terminated name.
            let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            // SAFETY: CPython's (_)Py_IsFinalizing takes nothing and returns an int.
            (!f.is_null()).then(|| unsafe { fn_ptr::<unsafe extern "C" fn() -> c_int>(f) })
        })
    });
    // SAFETY: the interpreter's own function, callable at any time.
    f.is_some_and(|f| unsafe { f() } != 0)
}

/// A function pointer of type `F` from a symbol's address.
///
/// # Safety
/// `F` is the type of the function at `address`.
unsafe fn fn_ptr<F: Copy>(address: *mut c_void) -> F {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    // SAFETY: F is a function pointer type of pointer size (checked above),
    // the caller's contract says the function at `address` has it.
    unsafe { std::mem::transmute_copy(&address) }
}

/// `file:line in function` of the Python code that made the current C
/// API call, skipping shmem4py's own frames; `None` outside Python.
pub fn caller() -> Option<String> {
    let api = api()?;
    // SAFETY: CPython's API used as documented: the GIL is taken (this
    // thread may hold it already; PyGILState_Ensure allows that) before
    // any frame is read and released after; every new reference taken is
    // released; borrowed ones are not.
    unsafe {
        if (api.is_initialized)() == 0 {
            return None;
        }
        let gil = (api.gil_ensure)();
        let mut found = None;
        let mut frame = (api.current_frame)();
        let mut owned = false;
        for _ in 0..64 {
            if frame.is_null() {
                break;
            }
            let code = (api.code)(frame);
            let text = |name: &CStr| {
                let value = (api.attr)(code, name.as_ptr());
                if value.is_null() {
                    return String::new();
                }
                let utf8 = (api.utf8)(value);
                let s = match utf8.is_null() {
                    true => String::new(),
                    false => CStr::from_ptr(utf8).to_string_lossy().into_owned(),
                };
                (api.dec_ref)(value);
                s
            };
            let (file, function) = (text(c"co_filename"), text(c"co_name"));
            (api.dec_ref)(code);
            if !file.is_empty() && !file.contains("/shmem4py/") {
                found = Some(format!("{file}:{} in {function}", (api.line_number)(frame)));
            }
            let back = match found {
                Some(_) => std::ptr::null_mut(),
                None => (api.back)(frame),
            };
            if owned {
                (api.dec_ref)(frame);
            }
            frame = back;
            owned = true;
        }
        if owned && !frame.is_null() {
            (api.dec_ref)(frame);
        }
        (api.gil_release)(gil);
        found
    }
}
