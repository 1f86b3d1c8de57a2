//! The C API's test tools: build `oneside-shmem` (shmem.h,
//! liboneside_shmem, oshcc) into the test's target directory, compile a
//! program of `tests/c/` with it, and run it under `oshrun`.

use super::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `cargo build -p oneside-shmem -p rlaunch` into this test's target
/// directory and profile, once per test binary (the crate is not a
/// dependency of rlaunch, so Cargo has not built it for us). With rlaunch
/// beside it, Cargo resolves oneside's dependencies as for the tests and
/// reuses their oneside; alone, it would build oneside once more
/// (Cargo.toml).
pub fn build_capi() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let out = cargo(&["build", "-p", "oneside-shmem", "-p", "rlaunch"])
            .output()
            .map_err(|e| format!("cargo: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cargo build -p oneside-shmem failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    });
    if let Err(e) = built {
        panic!("{e}");
    }
}

pub fn tool(name: &str) -> PathBuf {
    target_dir().join(name)
}

/// A fresh scratch directory for this test binary's executables.
pub fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oneside-capi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles `tests/c/NAME.c` with oshcc, once per test binary (tests run
/// side by side: a second compile would rewrite the executable while the
/// first test runs it); returns the executable.
pub fn compile(name: &str) -> PathBuf {
    static COMPILED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    let exe = scratch().join(name);
    if compiled.iter().any(|done| done == name) {
        return exe;
    }
    build_capi();
    let out = Command::new(tool("oshcc"))
        .args(["-std=c11", "-Wall", "-Werror", "-g", "-o"])
        .arg(&exe)
        .arg(repo_file(&format!("tests/c/{name}.c")))
        .output()
        .expect("oshcc starts");
    assert!(
        out.status.success(),
        "oshcc {name}.c failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    compiled.push(name.to_string());
    exe
}

/// The transports to run over: shm and tcp (or what ONESIDE_TEST_TRANSPORTS says).
pub fn transports_for_c() -> Vec<&'static str> {
    transports()
        .into_iter()
        .map(|(t, _)| if t == "auto" { "shm" } else { t })
        .collect()
}

/// Runs `oshrun -np N EXE ARGS` with `ONESIDE_TRANSPORT=transport`.
pub fn oshrun(n: usize, transport: &str, exe: &Path, args: &[&str]) -> Outcome {
    oshrun_with(n, transport, &[], exe, args)
}

/// [`oshrun`] with launcher `options` before the program.
pub fn oshrun_with(n: usize, transport: &str, options: &[&str], exe: &Path, args: &[&str]) -> Outcome {
    let mut command = super::launcher(tool("oshrun"));
    command
        .args(["-np", &n.to_string(), "--timeout", "90"])
        .args(options)
        .arg(exe)
        .args(args)
        .env("ONESIDE_TRANSPORT", transport);
    finish(super::start_piped(command))
}
