//! One build of each library per profile: every package selection that
//! CI's scripts and the benchmarks build with must resolve `oneside`, and
//! every crate under it or beside it, with the same features, so that Cargo
//! compiles each library once and every later command finds it fresh
//! (Cargo.toml says why a selection can differ). Two ways to break that,
//! both checked here:
//!
//! - a selection that resolves differently: each one below is asked of
//!   Cargo (`--message-format=json`, in this test's target directory and
//!   profile), and no library may come out of one selection with a hash
//!   (`lib<name>-<hash>.rlib`) that the others do not build. Once the
//!   workspace is built each ask is a no-op; a selection that resolved
//!   differently builds its libraries again, and fails;
//! - a script that builds `oneside-shmem` alone: the scripts are read for a
//!   `cargo` command selecting `-p oneside-shmem` without `-p rlaunch`.
//!
//! Before this rule CI built oneside four ways in release and four in
//! debug, 55-75 s each, and rlaunch's tests twice in debug (proptest
//! resolved two ways, 25 s).

mod common;

use common::{cargo, repo_file};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The selections CI's scripts build with (tests/*/run.sh, tests/vm/,
/// tests/common/capi.rs, bench/), by shape; `cargo test --workspace` is the
/// README's. Features of rlaunch alone (`--features harness-tests`) reach no
/// library and are left out.
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

/// Each library's builds in one selection: package and library name, to
/// the hashes of its `lib<name>-<hash>.rlib` or `.rmeta` files.
type Builds = BTreeMap<String, BTreeSet<String>>;

/// The libraries Cargo reports for `args`.
fn library_builds(args: &[&str]) -> Builds {
    let out = cargo(&[args, &["--quiet", "--message-format=json"]].concat())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    artifacts(&String::from_utf8_lossy(&out.stdout))
}

/// The libraries in Cargo's JSON messages (one a line): for each
/// `compiler-artifact`, its `package_id` and every `/deps/lib<name>-<hash>`
/// `.rlib` or `.rmeta` of its `filenames` (where a library is itself
/// selected, `--lib`, Cargo names its rlib without the hash, at the
/// profile's top, and its rmeta with it).
fn artifacts(json: &str) -> Builds {
    let mut builds = Builds::new();
    for line in json.lines().filter(|l| l.contains("\"reason\":\"compiler-artifact\"")) {
        let Some(package) = string_after(line, "\"package_id\":\"") else {
            continue;
        };
        for (at, _) in line.match_indices("/deps/lib") {
            let file = string_after(&line[at..], "/deps/").unwrap_or_default();
            let Some((stem, ext)) = file.rsplit_once('.') else {
                continue;
            };
            let Some((name, hash)) = stem.rsplit_once('-') else {
                continue;
            };
            if matches!(ext, "rlib" | "rmeta") && !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()) {
                builds
                    .entry(format!("{package} {name}"))
                    .or_default()
                    .insert(hash.to_string());
            }
        }
    }
    builds
}

/// The text from after `key` to the next `"`.
fn string_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.find(key)? + key.len();
    text[start..].split('"').next()
}

#[test]
fn every_selection_of_ci_shares_one_build_of_each_library() {
    let seen: Vec<(String, Builds)> = SELECTIONS
        .iter()
        .map(|args| (format!("cargo {}", args.join(" ")), library_builds(args)))
        .collect();
    let oneside = |builds: &Builds| builds.iter().any(|(key, _)| key.ends_with(" liboneside"));
    assert!(
        seen.iter().all(|(_, builds)| oneside(builds)),
        "a selection reported no build of oneside: is the JSON read right?"
    );
    // A library may be built more than one way inside one selection (a
    // build script's dependency and the program's, resolved apart); no
    // selection may add a way the others do not share.
    let mut union = Builds::new();
    for (_, builds) in &seen {
        for (key, hashes) in builds {
            union.entry(key.clone()).or_default().extend(hashes.iter().cloned());
        }
    }
    let mut twice = Vec::new();
    for (key, all) in &union {
        let most = seen
            .iter()
            .filter_map(|(_, b)| b.get(key))
            .map(BTreeSet::len)
            .max()
            .unwrap_or(0);
        if all.len() > most {
            let by: String = seen
                .iter()
                .filter_map(|(cmd, b)| b.get(key).map(|h| format!("\n    {cmd}: {h:?}")))
                .collect();
            twice.push(format!("  {key}:{by}"));
        }
    }
    assert!(
        twice.is_empty(),
        "built more than one way, by the package selection:\n{}\n\
         A selection resolves these crates with other features: see Cargo.toml's \
         note on features and the guide's testing chapter",
        twice.join("\n")
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
    let json = r#"{"reason":"compiler-artifact","package_id":"path+file:///w#oneside@0.1.0","filenames":["/t/debug/deps/liboneside-0123abcd.rlib","/t/debug/deps/liboneside-0123abcd.rmeta"]}
{"reason":"compiler-artifact","package_id":"path+file:///w/capi#oneside-shmem@0.1.0","filenames":["/t/debug/liboneside_shmem.rlib","/t/debug/deps/liboneside_shmem-4567ef.rmeta","/t/debug/deps/liboneside_shmem.so"]}
{"reason":"compiler-artifact","package_id":"registry+https://x#num-traits@0.2.19","filenames":["/t/debug/deps/libnum_traits-89ab.rlib"]}
{"reason":"build-script-executed","package_id":"registry+https://x#libc@0.2.1","filenames":["/t/debug/deps/liblibc-ffff.rlib"]}"#;
    let builds = artifacts(json);
    let keys: Vec<&str> = builds.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "path+file:///w#oneside@0.1.0 liboneside",
            "path+file:///w/capi#oneside-shmem@0.1.0 liboneside_shmem",
            "registry+https://x#num-traits@0.2.19 libnum_traits"
        ]
    );
    assert_eq!(
        builds["path+file:///w#oneside@0.1.0 liboneside"],
        BTreeSet::from(["0123abcd".to_string()])
    );
    assert_eq!(
        builds["path+file:///w/capi#oneside-shmem@0.1.0 liboneside_shmem"],
        BTreeSet::from(["4567ef".to_string()])
    );
    assert!(is_alone("cargo build --release -p oneside-shmem --quiet"));
    assert!(!is_alone("cargo build --release -p oneside-shmem -p rlaunch --quiet"));
    assert!(!is_alone(r#"  cargo test --release -p rlaunch "$@" --no-run"#));
    assert!(
        !is_alone("# then cargo build -p oneside-shmem, which is not run"),
        "a comment"
    );
}
