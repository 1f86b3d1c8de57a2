//! One build of `oneside` per profile: every package selection that CI's
//! scripts and the benchmarks build with must resolve oneside, and the
//! crates under it, with the same features, so that Cargo compiles it once
//! and every later command finds it fresh (Cargo.toml says why a selection
//! can differ). Two ways to break that, both checked here:
//!
//! - a selection that resolves differently: each one below is asked of
//!   Cargo (`--message-format=json`, in this test's target directory and
//!   profile), and the `liboneside-<hash>.rlib` each reports must be the
//!   same file. Once the workspace is built each ask is a no-op; a selection
//!   that resolved differently would build oneside again, and fail;
//! - a script that builds `oneside-shmem` alone: the scripts are read for a
//!   `cargo` command selecting `-p oneside-shmem` without `-p rlaunch`.
//!
//! Before this rule CI built oneside four ways in release and four in
//! debug, 55-75 s each.

mod common;

use common::{repo_file, target_dir};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

/// The selections CI's scripts build with (tests/*/run.sh, tests/vm/,
/// tests/common/capi.rs, bench/), by shape; `cargo test --workspace` is the
/// README's. Features of rlaunch alone (`--features ofi-tests`) do not reach
/// oneside and are left out.
const SELECTIONS: &[&[&str]] = &[
    &["test", "--workspace", "--no-run"],
    &["test", "-p", "rlaunch", "--no-run"],
    &["build", "--workspace", "--bins", "--examples"],
    &["build", "--workspace", "--lib", "--bins", "--examples"],
    &["build", "--bins", "--examples"],
    &["build", "-p", "oneside-shmem", "-p", "rlaunch"],
    &[
        "build",
        "-p",
        "oneside-shmem",
        "-p",
        "rlaunch",
        "-p",
        "oneside",
        "--examples",
    ],
    &["build", "-p", "rlaunch"],
];

/// The hashes of every build of oneside Cargo reports for `args`.
fn oneside_builds(args: &[&str]) -> BTreeSet<String> {
    let dir = target_dir();
    let profile = dir.file_name().unwrap().to_string_lossy().into_owned();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(args)
        .args(["--quiet", "--message-format=json", "--manifest-path"])
        .arg(repo_file("Cargo.toml"))
        .arg("--target-dir")
        .arg(dir.parent().unwrap());
    if profile != "debug" {
        command.args(["--profile", &profile]);
    }
    let out = command.stdin(Stdio::null()).output().expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    build_hashes(&String::from_utf8_lossy(&out.stdout))
}

/// The `<hash>` of each `/liboneside-<hash>.rlib` or `.rmeta` named in
/// `text` (where oneside's lib is itself selected, `--lib`, Cargo names the
/// rlib without its hash, at the profile's top, and the rmeta with it).
fn build_hashes(text: &str) -> BTreeSet<String> {
    const NAME: &str = "/liboneside-";
    text.match_indices(NAME)
        .filter_map(|(at, _)| {
            let rest = &text[at + NAME.len()..];
            let (hash, ext) = rest.split_once('.')?;
            let ext_ok = ext.starts_with("rlib\"") || ext.starts_with("rmeta\"");
            (ext_ok && !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit())).then(|| hash.to_string())
        })
        .collect()
}

#[test]
fn every_selection_of_ci_shares_one_build_of_oneside() {
    let mut seen: Vec<(String, BTreeSet<String>)> = Vec::new();
    for args in SELECTIONS {
        seen.push((format!("cargo {}", args.join(" ")), oneside_builds(args)));
    }
    let all: BTreeSet<&String> = seen.iter().flat_map(|(_, hashes)| hashes).collect();
    let table: String = seen
        .iter()
        .map(|(cmd, hashes)| format!("\n  {cmd}: {hashes:?}"))
        .collect();
    assert!(
        all.len() == 1 && seen.iter().all(|(_, hashes)| hashes.len() == 1),
        "oneside is built more than one way (liboneside-<hash>.rlib per selection):{table}\n\
         A selection resolves oneside's dependencies with other features: see Cargo.toml's \
         note on features and the guide's testing chapter"
    );
}

/// Every `cargo build` or `cargo test` command of a shell script that selects
/// oneside-shmem also selects rlaunch. (The C API tests' helper builds
/// through `Command`, and its selection is one of `SELECTIONS`.)
#[test]
fn no_script_builds_the_c_library_alone() {
    let mut offenders = Vec::new();
    let mut read = 0;
    for dir in ["tests", "bench", ".ci", "dist"] {
        walk(Path::new(&repo_file(dir)), &mut |path| {
            let Ok(text) = std::fs::read_to_string(path) else {
                return;
            };
            read += 1;
            for (n, line) in text.lines().enumerate() {
                if is_alone(line) {
                    offenders.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        });
    }
    assert!(read > 10, "read only {read} files: is the tree where this test thinks?");
    assert!(
        offenders.is_empty(),
        "build oneside-shmem with `-p rlaunch` beside it (Cargo.toml):\n{}",
        offenders.join("\n")
    );
}

/// A `cargo build|test` command line (not a comment) that selects
/// oneside-shmem and not rlaunch.
fn is_alone(line: &str) -> bool {
    let command = !line.trim_start().starts_with('#') && (line.contains("cargo build") || line.contains("cargo test"));
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
        .collect();
    let selects = |name: &str| words.windows(2).any(|w| w[0] == "-p" && w[1] == name);
    command && selects("oneside-shmem") && !selects("rlaunch")
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, visit);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("sh")) || path.ends_with("run") {
            visit(&path);
        }
    }
}

#[test]
fn the_checks_see_what_they_look_for() {
    let json = r#"{"filenames":["/t/debug/deps/liboneside-0123abcd.rlib","/t/debug/deps/liboneside-0123abcd.rmeta"]}
{"filenames":["/t/debug/deps/liboneside_shmem-99.rlib","/t/debug/liboneside.rlib","/t/debug/deps/liboneside-4567ef.rmeta"]}
{"filenames":["/t/debug/deps/liboneside-89ab.d"]}"#;
    let both = BTreeSet::from(["0123abcd".to_string(), "4567ef".to_string()]);
    assert_eq!(build_hashes(json), both);
    assert!(is_alone("cargo build --release -p oneside-shmem --quiet"));
    assert!(!is_alone("cargo build --release -p oneside-shmem -p rlaunch --quiet"));
    assert!(!is_alone(r#"  cargo test --release -p rlaunch "$@" --no-run"#));
    assert!(
        !is_alone("# then cargo build -p oneside-shmem, which is not run"),
        "a comment"
    );
}
