//! The race checker (`rlaunch --check-races`) gives exactly the expected
//! verdict on the course's mistakes and on their race-free twins: in Rust
//! (examples/races.rs) at 2 and 4 ranks, and in C (tests/c/races.c, built
//! by `oshcc --check-races` with GCC, and with Clang in each of its two
//! instrumentations) at 2 PEs, over shm and
//! tcp (and ofi, under tests/ofi/run.sh). A racy case exits 66 with a
//! `data race` report whose two access lines each name a source line; a
//! race-free one exits 0 and reports nothing. `--check-races=abort` ends
//! the job at the first race. Races between a PE's OpenMP threads
//! (tests/c/races_omp.c) are judged likewise, built with GCC (libgomp)
//! and with Clang (libomp, seen through OMPT; Debian's libomp-dev), and so
//! are races between the POSIX threads a program starts
//! (tests/c/races_pthread.c), with both compilers.

mod common;
use common::capi::{build_capi, scratch, tool};
use common::*;
use std::process::Command;

const RUST_RACY: [&str; 8] = [
    "atomic-teams",
    "halo-early",
    "no-fence",
    "get-put",
    "atomic-mix",
    "two-puts",
    "put-get",
    "reduce-put",
];
const RUST_FREE: [&str; 11] = [
    "atomic-contexts",
    "halo",
    "quiet-flag",
    "fence-flag",
    "signal",
    "test-flag",
    "lock",
    "atomic",
    "owned",
    "put-quiet-get",
    "reduce-barrier-put",
];
const C_RACY: [&str; 19] = [
    "lock-late",
    "atomic-teams",
    "wide-early",
    "pong-unasked",
    "halo-early",
    "no-fence",
    "get-put",
    "atomic-mix",
    "nbi-reuse",
    "get-nbi-early",
    "signal-nbi-reuse",
    "get-nbi-twice",
    "fetch-nbi-early",
    "atomic-types",
    "put-get",
    "put-put",
    "ctx-put-get",
    "get-nbi-fence-put",
    "reduce-put",
];
const C_FREE: [&str; 18] = [
    "lock-order",
    "atomic-contexts",
    "wide-neighbour",
    "halo",
    "fence-flag",
    "quiet-flag",
    "signal",
    "atomic",
    "lock",
    "nbi-quiet",
    "get-nbi-quiet",
    "atomic-fetch-load",
    "ping-pong",
    "put-quiet-get",
    "put-fence-put",
    "ctx-quiet-get",
    "get-nbi-quiet-put",
    "reduce-barrier-put",
];

/// Checks one run's verdict; `file` is the source the reports must name.
fn verdict(out: &Outcome, racy: bool, file: &str, what: &str) {
    if !racy {
        assert_eq!(out.code, Some(0), "{what}: a race-free program failed: {out:?}");
        assert!(!out.stderr.contains("data race"), "{what}: a false report: {out:?}");
        return;
    }
    assert_eq!(out.code, Some(66), "{what}: no race found: {out:?}");
    let first = out
        .stderr
        .lines()
        .position(|l| l.contains("data race"))
        .unwrap_or_else(|| panic!("{what}: no report: {out:?}"));
    // Its next two lines are the two accesses, each placed in the program.
    let lines: Vec<&str> = out.stderr.lines().skip(first + 1).take(2).collect();
    let placed = lines.iter().filter(|l| l.contains(&format!(" at {file}:"))).count();
    assert_eq!(placed, 2, "{what}: the report names fewer than both places: {out:?}");
    assert!(
        out.stderr.contains("rlaunch: --check-races reported"),
        "{what}: {out:?}"
    );
}

#[test]
fn rust_programs_get_exactly_the_expected_verdict() {
    let program = example("races");
    for (transport, _) in transports() {
        for n in ["2", "4"] {
            for (cases, racy) in [(&RUST_RACY[..], true), (&RUST_FREE[..], false)] {
                for case in cases {
                    let out = rlaunch(&[
                        "-n",
                        n,
                        "--oversubscribe",
                        "--transport",
                        transport,
                        "--timeout",
                        "60",
                        "--check-races",
                        &program,
                        case,
                    ]);
                    verdict(
                        &out,
                        racy,
                        "examples/races.rs",
                        &format!("{case} over {transport} at {n}"),
                    );
                }
            }
        }
    }
}

/// Builds tests/c/races.c with `oshcc --check-races` and compiler `cc`,
/// once per test binary (tests run side by side, and a second build
/// would rewrite the executable while another test runs it).
fn compile_races(cc: &str) -> std::path::PathBuf {
    compile("races", cc, &[])
}

/// Builds tests/c/`name`.c so, with `flags` more. `cc` is the compiler,
/// or `clang+thread`: Clang with ThreadSanitizer's instrumentation instead
/// of AddressSanitizer's (`ONESIDE_RACE_INSTRUMENT`). Checks which
/// instrumentation oshcc chose: Clang without OpenMP gets ASan's, whose
/// inline checks call the library only for watched memory.
fn compile(name: &str, cc: &str, flags: &[&str]) -> std::path::PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let exe = scratch().join(format!("{name}-{cc}"));
    if built.iter().any(|done| *done == format!("{name}-{cc}")) {
        return exe;
    }
    let (compiler, instrument) = cc.split_once('+').unwrap_or((cc, ""));
    // Built on the host for a guest that cannot build (tests/vm/run-suite.sh).
    if let Some(dir) = std::env::var_os("ONESIDE_RACE_PREBUILT") {
        let exe = std::path::Path::new(&dir).join(format!("{name}-{cc}"));
        assert!(exe.exists(), "{} was not built on the host", exe.display());
        return exe;
    }
    build_capi();
    let out = Command::new(tool("oshcc"))
        .env("ONESIDE_CC", compiler)
        .env("ONESIDE_RACE_INSTRUMENT", instrument)
        .args(["--check-races", "-std=c11", "-Wall", "-Werror", "-g"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(repo_file(&format!("tests/c/{name}.c")))
        .output()
        .expect("oshcc starts");
    assert!(
        out.status.success(),
        "oshcc --check-races with {cc} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let image = std::fs::read(&exe).expect("the program was built");
    let asan = image.windows(11).any(|w| w == b"__asan_init");
    let threads = flags.contains(&"-fopenmp") || flags.contains(&"-pthread");
    let expected = compiler == "clang" && instrument.is_empty() && !threads;
    assert_eq!(
        asan, expected,
        "{cc} {flags:?}: AddressSanitizer's instrumentation expected: {expected}"
    );
    built.push(format!("{name}-{cc}"));
    exe
}

const OMP_RACY: [&str; 7] = [
    "master-read",
    "sections",
    "flag-volatile",
    "nbi-volatile",
    "nbi-read-first",
    "origin-sync",
    "origin-signal",
];
const OMP_FREE: [&str; 9] = [
    "master-barrier-read",
    "sections-end-read",
    "flag-critical",
    "flag-lock",
    "flag-atomic",
    "nbi-barrier",
    "nbi-read-first-barrier",
    "origin-sync-barrier",
    "origin-signal-barrier",
];

#[test]
fn openmp_threads_of_one_pe_get_exactly_the_expected_verdict() {
    let exe = compile("races_omp", "gcc", &["-fopenmp"]);
    judge_cases(&exe, (&OMP_RACY, &OMP_FREE), "races_omp.c", "gcc -fopenmp");
}

const PTHREAD_RACY: [&str; 4] = [
    "handed-volatile",
    "origin-volatile",
    "nbi-volatile",
    "handed-thrd-volatile",
];
const PTHREAD_FREE: [&str; 15] = [
    "handed-mutex",
    "handed-cond",
    "handed-sem",
    "handed-barrier",
    "handed-atomic",
    "handed-rwlock",
    "handed-spin",
    "handed-join",
    "origin-join",
    "nbi-join",
    "handed-once",
    "handed-callonce",
    "handed-mtx",
    "handed-cnd",
    "handed-thrd-join",
];

/// Threads the program starts itself (`capi/src/pthread.rs`), built with
/// both compilers (`-pthread` gives Clang's build ThreadSanitizer's
/// instrumentation, whose atomics tell the threads apart).
#[test]
fn posix_threads_of_one_pe_get_exactly_the_expected_verdict() {
    for cc in ["gcc", "clang"] {
        let exe = compile("races_pthread", cc, &["-pthread"]);
        judge_cases(
            &exe,
            (&PTHREAD_RACY, &PTHREAD_FREE),
            "races_pthread.c",
            &format!("{cc} -pthread"),
        );
    }
}

/// The same cases with Clang, whose OpenMP runtime (libomp) tells the
/// checker its orderings through OMPT (`capi/src/ompt.rs`).
#[test]
fn openmp_threads_under_clangs_libomp_get_exactly_the_expected_verdict() {
    let exe = compile("races_omp", "clang", &["-fopenmp"]);
    judge_cases(&exe, (&OMP_RACY, &OMP_FREE), "races_omp.c", "clang -fopenmp");
}

/// libomp asks only the first `ompt_start_tool` it finds. With the
/// checker off, oneside's hands on to another tool's linked after it
/// (tests/c/ompt_tool.c); with it on, oneside's is the tool.
#[test]
fn another_openmp_tool_linked_after_oneside_is_started_while_the_checker_is_off() {
    build_capi();
    let dir = scratch();
    let lib = dir.join("libothertool.so");
    let built = Command::new("clang")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(repo_file("tests/c/ompt_tool.c"))
        .output()
        .expect("clang starts");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let exe = dir.join("races_omp-tool");
    let oneside = tool("oshcc").parent().expect("the tools' directory").to_owned();
    let built = Command::new(tool("oshcc"))
        .env("ONESIDE_CC", "clang")
        .args(["-std=c11", "-g", "-fopenmp", "-o"])
        .arg(&exe)
        .arg(repo_file("tests/c/races_omp.c"))
        .arg(format!("-L{}", oneside.display()))
        .arg("-loneside_shmem")
        .arg(format!("-L{}", dir.display()))
        .arg("-lothertool")
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .output()
        .expect("oshcc starts");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let exe = exe.to_string_lossy();
    for (flags, started) in [(&[][..], true), (&["--check-races"][..], false)] {
        let args = [
            &["-n", "2", "--timeout", "60"][..],
            flags,
            &[&exe, "master-barrier-read"],
        ]
        .concat();
        let out = rlaunch(&args);
        assert_eq!(out.code, Some(0), "{flags:?}: {out:?}");
        assert_eq!(
            out.stderr.contains("another tool was started by LLVM OMP"),
            started,
            "{flags:?}: the other tool should be started only with the checker off: {out:?}"
        );
    }
}

#[test]
fn c_programs_built_with_gcc_and_clang_get_exactly_the_expected_verdict() {
    // The Soft-RoCE guest, where each run is emulated, builds with GCC
    // only (tests/vm/run-suite.sh): the builds differ in the program's
    // instrumentation, the transports in how the records travel.
    let builds = std::env::var("ONESIDE_RACE_BUILDS").unwrap_or_else(|_| "gcc,clang,clang+thread".into());
    for cc in builds.split(',') {
        // Clang's ThreadSanitizer pass leaves out an access of a size it
        // has no entry for, such as a long double's 10 bytes.
        let racy: Vec<&str> = C_RACY
            .iter()
            .copied()
            .filter(|&case| !(cc == "clang+thread" && case == "wide-early"))
            .collect();
        judge_cases(&compile_races(cc), (&racy, &C_FREE), "races.c", cc);
    }
}

/// Runs each of C program `exe`'s racy and race-free cases at 2 PEs over
/// each transport, and checks its verdict.
fn judge_cases(exe: &std::path::Path, (racy, free): (&[&str], &[&str]), file: &str, built: &str) {
    let exe = exe.to_string_lossy();
    for (transport, _) in transports() {
        let transport = if transport == "auto" { "shm" } else { transport };
        for (cases, racy) in [(racy, true), (free, false)] {
            for case in cases {
                let out = rlaunch(&[
                    "-n",
                    "2",
                    "--transport",
                    transport,
                    "--timeout",
                    "60",
                    "--check-races",
                    &exe,
                    case,
                ]);
                verdict(&out, racy, file, &format!("{case} ({built}) over {transport}"));
            }
        }
    }
}

/// Runs tests/c/races.c's `case`, built with GCC, at 2 PEs under
/// `--check-races`.
fn run_gcc_case(case: &str) -> Outcome {
    let exe = compile_races("gcc");
    rlaunch(&[
        "-n",
        "2",
        "--timeout",
        "60",
        "--check-races",
        &exe.to_string_lossy(),
        case,
    ])
}

#[test]
fn the_stencil_report_names_the_global_both_lines_and_the_last_barrier() {
    let out = run_gcc_case("halo-early");
    assert_eq!(out.code, Some(66), "{out:?}");
    assert!(out.stderr.contains("the global 'grid'"), "{out:?}");
    assert!(out.stderr.contains("writes 8 bytes with a put at races.c:"), "{out:?}");
    assert!(out.stderr.contains("with a load at races.c:"), "{out:?}");
    assert!(out.stderr.contains("last synchronization with PE"), "{out:?}");
    assert!(out.stderr.contains("was the barrier at races.c:"), "{out:?}");
}

#[test]
fn abort_ends_the_job_at_the_first_race() {
    let program = example("races");
    let out = rlaunch(&[
        "-n",
        "2",
        "--timeout",
        "60",
        "--check-races=abort",
        &program,
        "halo-early",
    ]);
    assert_ne!(out.code, Some(0), "{out:?}");
    assert_ne!(
        out.code,
        Some(66),
        "abort is a failed rank, not the end-of-job count: {out:?}"
    );
    assert!(out.stderr.contains("data race"), "{out:?}");
    assert!(out.stderr.contains("--check-races=abort"), "{out:?}");
}

#[test]
fn without_the_flag_a_racy_program_runs_as_before() {
    let program = example("races");
    let out = rlaunch(&["-n", "2", "--timeout", "60", &program, "halo-early"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stderr.contains("data race"), "{out:?}");
}

/// The guide's "Finding races" quotes real reports: each of its three C
/// programs, built and run as the chapter says, prints every report line
/// the chapter quotes for it.
#[test]
fn the_guide_quotes_the_reports_as_they_are() {
    build_capi();
    let page = std::fs::read_to_string(repo_file("docs/src/races.md")).unwrap();
    let blocks: Vec<&str> = page
        .split("```c\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    let outputs: Vec<&str> = page
        .split("```text\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 3, "three programs");
    assert_eq!(
        outputs.len(),
        5,
        "their three reports, tests/c/races.c's put-get and tests/c/races_omp.c's master-read"
    );
    // The report of a race between two OpenMP threads' PE and another PE.
    let omp = compile("races_omp", "gcc", &["-fopenmp"]);
    let run = rlaunch(&[
        "-n",
        "2",
        "--timeout",
        "60",
        "--check-races",
        &omp.to_string_lossy(),
        "master-read",
    ]);
    for line in outputs[4].lines().filter(|l| !l.is_empty()) {
        assert!(
            run.stderr.contains(line),
            "master-read: the guide quotes {line:?}, the run printed {run:?}"
        );
    }
    // The report of one PE's own put and get, from tests/c/races.c.
    let run = run_gcc_case("put-get");
    assert_eq!(run.code, Some(66), "put-get: {run:?}");
    for line in outputs[3].lines().filter(|l| !l.is_empty()) {
        assert!(
            run.stderr.contains(line),
            "put-get: the guide quotes {line:?}, the run printed {run:?}"
        );
    }
    let dir = scratch().join("guide-races");
    std::fs::create_dir_all(&dir).unwrap();
    for (code, quoted) in blocks.iter().zip(&outputs) {
        let name = ["heat", "reuse", "counter"]
            .into_iter()
            .find(|n| quoted.contains(&format!("{n}.c:")))
            .expect("a quoted report names its program");
        let source = dir.join(format!("{name}.c"));
        std::fs::write(&source, code).unwrap();
        let exe = dir.join(name);
        let out = Command::new(tool("oshcc"))
            .current_dir(&dir)
            .args(["--check-races", "-g", "-o"])
            .arg(&exe)
            .arg(format!("{name}.c"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let run = rlaunch(&["-n", "2", "--timeout", "60", "--check-races", &exe.to_string_lossy()]);
        assert_eq!(run.code, Some(66), "{name}: {run:?}");
        for line in quoted
            .lines()
            .filter(|l| l.starts_with("oneside:") || l.starts_with("  "))
        {
            assert!(
                run.stderr.contains(line),
                "{name}: the guide quotes {line:?}, the run printed {run:?}"
            );
        }
    }
}
