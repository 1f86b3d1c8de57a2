//! The crash report's words: the frames of the thread that faulted, from
//! a backtrace taken in the signal handler, with the program's own frame
//! picked out for the first line and for rlaunch.

use crate::protocol::wire::Msg;
use std::io::Write;

/// Prints the report for a fault `cause` on this thread, and tells rlaunch
/// the program's frame.
/// `pc` is where the fault happened (0 when unknown).
pub(super) fn describe(rank: usize, noun: &str, signal: i32, cause: &str, pc: usize) {
    let text = std::backtrace::Backtrace::force_capture().to_string();
    let mut frames = program_frames(crate::site::frames(&text));
    // The symbolizer looks one byte before each frame's address (a return
    // address), which for the faulting frame can be another function.
    if let Some(first) = frames.first_mut().filter(|(name, _)| name == "<unknown>") {
        first.0 = symbol_at(pc);
    }
    let at = frames
        .iter()
        .find(|(name, at)| is_programs(name, at.as_deref()))
        .or(frames.first());
    let at = at.map(|(name, place)| match place {
        Some(place) => format!("in {name} at {place}"),
        None if name.starts_with("<unknown>") => format!("in {name}"),
        None => format!("in {name} (build with -g for its file:line)"),
    });
    let mut out = format!(
        "oneside: {noun} {rank} (pid {}) died of {cause}{}\n",
        std::process::id(),
        at.as_deref().map(|at| format!(" {at}")).unwrap_or_default()
    );
    if !frames.is_empty() {
        out.push_str(&format!("oneside: {noun} {rank}'s frames, innermost first:\n"));
        for (i, (name, place)) in frames.iter().enumerate() {
            out.push_str(&format!(
                "  #{i} {name}{}\n",
                place.as_deref().map(|p| format!(" at {p}")).unwrap_or_default()
            ));
        }
    }
    let _ = std::io::stderr().write_all(out.as_bytes());
    if let Some(at) = at {
        crate::watch::tell_launcher_now(&Msg::Crashed {
            rank: rank as u32,
            signal,
            at,
        });
    }
}

/// The name of the symbol holding `pc`, from the dynamic linker (exported
/// symbols only, demangled when Rust's); otherwise the file and offset,
/// with the command that names them.
fn symbol_at(pc: usize) -> String {
    // SAFETY: a zeroed Dl_info is valid output; dladdr only reads `pc`.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: see above.
    if pc == 0 || unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } == 0 {
        return format!("<unknown> (pc {pc:#x})");
    }
    if !info.dli_sname.is_null() {
        // SAFETY: dladdr gives a NUL-terminated name.
        return demangle(&unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }.to_string_lossy());
    }
    // SAFETY: dladdr gives a NUL-terminated file name when it succeeds.
    let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let offset = pc - info.dli_fbase as usize;
    format!("<unknown> at {file}+{offset:#x} (`addr2line -fe {file} {offset:#x}` names it)")
}

/// A Rust symbol in the legacy mangling (`_ZN6faults13write_through17h…E`)
/// as a path (`faults::write_through`); other names unchanged.
fn demangle(name: &str) -> String {
    let Some(mut rest) = name.strip_prefix("_ZN") else {
        return name.to_string();
    };
    let mut parts = Vec::new();
    while let Some(digits) = rest.find(|c: char| !c.is_ascii_digit()).filter(|&d| d > 0) {
        let Ok(len) = rest[..digits].parse::<usize>() else {
            break;
        };
        let Some(part) = rest.get(digits..digits + len) else {
            break;
        };
        parts.push(part);
        rest = &rest[digits + len..];
    }
    if parts.last().is_some_and(|p| p.len() == 17 && p.starts_with('h')) {
        parts.pop();
    }
    match parts.is_empty() {
        true => name.to_string(),
        false => parts
            .join("::")
            .replace("$LT$", "<")
            .replace("$GT$", ">")
            .replace("$u20$", " ")
            .replace("$C$", ",")
            .replace("..", "::"),
    }
}

/// The frames from the one that faulted outwards: those of the handler and
/// the signal trampoline dropped at the front, those that start the
/// program dropped at the back, at most [`super::MAX_FRAMES`].
fn program_frames(frames: Vec<(String, Option<String>)>) -> Vec<(String, Option<String>)> {
    let handler = frames.iter().rposition(|(name, _)| name.contains("crash::on_fault"));
    let start = match handler {
        // The next frame is the kernel's return trampoline.
        Some(i) => i + 2,
        None => 0,
    };
    let mut kept = Vec::new();
    for (name, place) in frames.into_iter().skip(start) {
        if is_start_up(&name) {
            break;
        }
        kept.push((name.clone(), place));
        if name == "main" || kept.len() == super::MAX_FRAMES {
            break;
        }
    }
    kept
}

/// Frames of the C library or the Rust runtime that start `main`.
fn is_start_up(name: &str) -> bool {
    [
        "__libc_start",
        "std::rt::lang_start",
        "std::sys::backtrace::__rust_begin_short_backtrace",
        "_start",
        "start_thread",
        "clone",
        "core::ops::function::FnOnce::call_once",
        "std::sys::pal::unix::thread::Thread::new::thread_start",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Whether a frame is the program's own, with a line: not Rust's standard
/// library, a crate's, or this library's (the frame to name first).
fn is_programs(name: &str, place: Option<&str>) -> bool {
    // This library's frames, and the C library's (whose debug
    // information may be installed): `__GI_raise`, `abort`.
    let library = [
        "oneside::",
        "<oneside::",
        "shmem_",
        "pshmem_",
        "oneside_direct_",
        "__",
        "raise",
        "abort",
    ];
    place.is_some_and(|p| !p.starts_with("/rustc/") && !p.contains("/.cargo/registry/"))
        && !library.iter().any(|l| name.starts_with(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, at: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), at.map(str::to_string))
    }

    #[test]
    fn the_handler_and_start_up_frames_are_dropped() {
        let frames = vec![
            frame(
                "std::backtrace::Backtrace::force_capture",
                Some("/rustc/x/library/std/src/backtrace.rs:1:1"),
            ),
            frame("oneside::crash::report::describe", None),
            frame("oneside::crash::on_fault", None),
            frame("<unknown>", None),
            frame("fill", Some("./isx.c:30:5")),
            frame("main", Some("./isx.c:42:5")),
            frame("__libc_start_call_main", None),
        ];
        let kept = program_frames(frames);
        assert_eq!(
            kept,
            vec![frame("fill", Some("./isx.c:30:5")), frame("main", Some("./isx.c:42:5"))]
        );
    }

    #[test]
    fn a_rust_program_stops_at_its_runtime() {
        let frames = vec![
            frame("oneside::crash::on_fault", None),
            frame("__restore_rt", None),
            frame("faults::main", Some("examples/faults.rs:10:5")),
            frame(
                "core::ops::function::FnOnce::call_once",
                Some("/rustc/x/library/core/src/ops/function.rs:250:5"),
            ),
            frame("std::rt::lang_start::{{closure}}", None),
        ];
        assert_eq!(
            program_frames(frames),
            vec![frame("faults::main", Some("examples/faults.rs:10:5"))]
        );
    }

    #[test]
    fn rust_symbols_are_demangled() {
        assert_eq!(
            demangle("_ZN6faults13write_through17h39e81d20f3cf4a4aE"),
            "faults::write_through"
        );
        assert_eq!(demangle("main"), "main");
    }

    #[test]
    fn the_named_frame_is_the_programs_own() {
        assert!(is_programs("main", Some("./isx.c:42:5")));
        assert!(!is_programs(
            "core::ptr::write",
            Some("/rustc/abc/library/core/src/ptr/mod.rs:1:1")
        ));
        assert!(!is_programs("pshmem_long_p", Some("capi/src/rma.rs:1:1")));
        assert!(!is_programs("main", None));
        assert!(!is_programs("__GI_abort", Some("./stdlib/abort.c:79:7")));
    }
}
