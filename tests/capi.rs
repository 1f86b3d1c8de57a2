//! The OpenSHMEM C API end to end: builds the `oneside-shmem` crate (shmem.h,
//! liboneside_shmem, oshcc), compiles the C programs in `tests/c/` with
//! `target/<profile>/oshcc -std=c11 -Wall -Werror`, and runs them under
//! `target/<profile>/oshrun -np 2` and `-np 4`, over shared memory and TCP
//! (`ONESIDE_TRANSPORT`). Each program checks itself and prints `<name> ok`
//! from PE 0; on a mismatch it says what it checked and calls
//! `shmem_global_exit(1)`.

mod common;
use common::capi::*;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Compiles NAME.c and expects `NAME ok` alone at 2 and 4 PEs on every transport.
fn runs_clean(name: &str) {
    let exe = compile(name);
    for transport in transports_for_c() {
        for n in [2, 4] {
            let out = oshrun(n, transport, &exe, &[]);
            assert_eq!(out.code, Some(0), "{name} -np {n} over {transport}: {out:?}");
            assert_eq!(
                out.stdout,
                format!("{name} ok\n"),
                "{name} -np {n} over {transport}: {out:?}"
            );
        }
    }
}

#[test]
fn ring_puts_into_symmetric_globals() {
    runs_clean("ring");
}

#[test]
fn heap_allocation_rma_and_addressing() {
    runs_clean("heap");
}

#[test]
fn inline_direct_paths_agree_with_the_library() {
    runs_clean("direct");
}

#[test]
fn atomics_and_locks() {
    runs_clean("atomics");
}

#[test]
fn collectives_teams_and_active_sets() {
    runs_clean("coll");
}

#[test]
fn put_signal_and_point_to_point_waits() {
    runs_clean("signal_wait");
}

/// Progress at the origin: operations of a PE that sleeps without another
/// call arrive within 50 ms, and `shmem_barrier_all` completes the calling
/// thread's private contexts (`tests/c/progress.c`, 2 PEs).
#[test]
fn operations_leave_an_origin_that_makes_no_further_call() {
    let exe = compile("progress");
    for transport in transports_for_c() {
        let out = oshrun(2, transport, &exe, &[]);
        assert_eq!(out.code, Some(0), "over {transport}: {out:?}");
        assert_eq!(out.stdout, "progress ok\n", "over {transport}: {out:?}");
    }
}

/// Floods of non-blocking operations complete on every link, whatever the
/// pattern (`tests/c/flood.c`, which checks every result): one origin to
/// one target, all to one, and every link both ways. Over TCP a flood of
/// 10^6 one-word gets died after 10 s, until the links kept a window of
/// owed answers and read while they waited to send
/// (`src/transport/tcp/owed.rs`). Ten million gets and puts over shm and
/// TCP.
#[test]
fn floods_of_non_blocking_operations_of_every_kind_complete() {
    let exe = compile("flood");
    for transport in transports_for_c() {
        // ofi's rxm path is some ten times slower: a tenth of each flood.
        let scale = if transport == "ofi" { 10 } else { 1 };
        let runs = [
            (2, "get", "one", 10_000_000),
            (2, "put", "one", 10_000_000),
            (2, "add", "one", 1_000_000),
            (2, "signal", "both", 1_000_000),
            (2, "fadd", "one", 100_000),
            (4, "get", "all", 1_000_000),
            (4, "put", "both", 1_000_000),
            (4, "mixed", "both", 300_000),
        ];
        for (n, kind, pattern, count) in runs {
            let count = (count / scale).to_string();
            let count = count.as_str();
            let out = oshrun(n, transport, &exe, &[kind, pattern, count]);
            let what = format!("flood {kind} {pattern} {count} at {n} PEs over {transport}");
            assert_eq!(out.code, Some(0), "{what}: {out:?}");
            assert_eq!(out.stdout, "flood ok\n", "{what}: {out:?}");
        }
    }
}

/// Programs written for other OpenSHMEMs build with -Werror and run: the
/// deprecated `<mpp/shmem.h>`, `<mpp/shmemx.h>` and `<shmemx.h>` exist, and
/// the standard routines are functions a program may `#define`, `#undef`
/// and take the address of (`tests/c/names.c`). With the inline paths as
/// macros, a suite's own `#define shmem_int64_p` was 24 "redefined" errors.
#[test]
fn programs_for_other_openshmems_build_unchanged() {
    runs_clean("names");
}

/// A loop of tests on a node whose PEs outnumber its cores yields the core
/// as a wait does: a token ring passed with `shmem_long_test` at 4 PEs on
/// 2 cores took 2-2.6 ms a hop, against 1-2 µs with `wait_until`
/// (`tests/c/test_ring.c`, which measures both in the same run). Bound:
/// the goal's 2x.
#[test]
fn a_loop_of_tests_hands_the_core_on_as_a_wait_does() {
    let exe = compile("test_ring");
    for transport in transports_for_c() {
        // Beside the other tests on two cores the figures are noisy: every
        // run stays far from the 1000x of before, and one of three meets
        // the goal.
        let mut ratios = Vec::new();
        for _ in 0..3 {
            // 5000 laps: a loop of tests that began at the first lap, not
            // at the last success, napped once the rings passed 20 ms.
            let out = oshrun_with(4, transport, &["--oversubscribe"], &exe, &["5000"]);
            assert_eq!(out.code, Some(0), "over {transport}: {out:?}");
            let ratio: f64 = out
                .stdout
                .rsplit("ratio ")
                .next()
                .and_then(|r| r.trim().parse().ok())
                .unwrap_or_else(|| panic!("no ratio over {transport}: {out:?}"));
            assert!(
                ratio <= 20.0,
                "a hop by tests costs {ratio}x a hop by waits over {transport}: {out:?}"
            );
            ratios.push(ratio);
            if ratio <= 2.0 {
                break;
            }
        }
        assert!(
            ratios.iter().any(|&r| r <= 2.0),
            "a hop by tests against a hop by waits over {transport}: {ratios:?}"
        );
    }
}

/// Messages a student reads say what went wrong, where, and what to do,
/// once each (`tests/c/messages.c`): a call before `shmem_init` names the
/// program's line and the fix (it named `capi/src/setup.rs:350:9`), a
/// negative PE is said as written (it was `PE 18446744073709551615`), and
/// a profile counts frees apart from allocations.
#[test]
fn messages_say_what_went_wrong_where_and_what_to_do() {
    let exe = compile("messages");
    let out = oshrun(2, "shm", &exe, &["early"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("oneside: shmem_my_pe at ")
            && out.stderr.contains("messages.c:13:")
            && out
                .stderr
                .contains("called before shmem_init (or after shmem_finalize); call shmem_init first"),
        "{out:?}"
    );
    let out = oshrun(2, "shm", &exe, &["negative"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(": put targets PE -1, but the job has 2 PEs"),
        "{out:?}"
    );
    let dir = scratch().join("messages-profile");
    let _ = std::fs::remove_dir_all(&dir);
    let profile = format!("--profile={}", dir.display());
    let out = oshrun_with(2, "shm", &[&profile], &exe, &["frees"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let json = std::fs::read_to_string(dir.join("profile.json")).expect("profile.json");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    for rank in value["ops"].as_array().unwrap() {
        assert_eq!(rank["ops"]["alloc"]["calls"], 3, "{rank}");
        assert_eq!(rank["ops"]["free"]["calls"], 2, "{rank}");
    }
}

/// `shmem_barrier_all` completes every context the PE created, shared ones
/// too, on every transport (`tests/c/shared_ctx.c`); over TCP a shared
/// context's put was missing after the barrier in 19 of 50 rounds.
#[test]
fn barrier_all_completes_shared_contexts_too() {
    runs_clean("shared_ctx");
}

/// OpenSHMEM 1.6: multi-init, ibput/ibget, signal_set/add, pe_quiet,
/// sessions and the clarified rules (`tests/c/spec16.c`).
#[test]
fn openshmem_1_6_routines_and_rules() {
    runs_clean("spec16");
}

#[test]
fn an_erroneous_call_ends_the_job_at_once_with_one_line_naming_it() {
    let exe = compile("error");
    for transport in transports_for_c() {
        for (n, mode) in [(2, "pe"), (4, "pe"), (2, "stack"), (4, "stack")] {
            let start = Instant::now();
            let out = oshrun(n, transport, &exe, &[mode]);
            let took = start.elapsed();
            let what = format!("error {mode} -np {n} over {transport} ({took:?}): {out:?}");
            assert!(out.code.is_some_and(|c| c != 0), "{what}");
            assert!(took < Duration::from_secs(10), "{what}");
            let naming: Vec<&str> = out.stderr.lines().filter(|l| l.contains("shmem_long_p")).collect();
            assert_eq!(naming.len(), 1, "one line names the call: {what}");
            // One shape: `oneside: <call> at <file>:<line>: PE <n>: <what>; <what to do>`.
            let (line, said) = match mode {
                "pe" => (
                    18,
                    format!(
                        "PE 1: put targets PE 99, but the job has {n} PEs (0 to {}); use a target from 0 to {} (shmem_n_pes() - 1)",
                        n - 1,
                        n - 1
                    ),
                ),
                _ => (16, "PE 1: address 0x".to_string()),
            };
            let at = format!("tests/c/error.c:{line}:");
            assert!(naming[0].starts_with("oneside: shmem_long_p at "), "{what}");
            assert!(naming[0].contains(&at), "{at}: {what}");
            assert!(naming[0].contains(&format!(": {said}")), "{said}: {what}");
            assert!(!out.stderr.contains("panicked"), "{what}");
            assert!(!out.stdout.contains("passed the barrier"), "{what}");
        }
    }
}

#[test]
fn without_line_tables_an_error_names_the_function_and_says_to_build_with_g() {
    build_capi();
    let exe = scratch().join("error-no-g");
    let built = Command::new(tool("oshcc"))
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(repo_file("tests/c/error.c"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let out = oshrun(2, "shm", &exe, &["pe"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(
            "oneside: shmem_long_p in main (build with -g for its file:line): PE 1: put targets PE 99, but the job has 2 PEs (0 to 1)"
        ),
        "{out:?}"
    );
}

#[test]
fn a_program_run_without_oshrun_is_one_pe() {
    let exe = compile("singleton");
    let child = Command::new(&exe)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "singleton ok: 0 of 1\n", "{out:?}");
}

#[test]
fn oshcc_adds_the_include_dir_and_links_only_when_linking() {
    build_capi();
    let show = |args: &[&str]| {
        let out = Command::new(tool("oshcc")).args(args).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let include = Path::new(&repo_file("capi")).canonicalize().unwrap().join("include");
    let libdir = target_dir().canonicalize().unwrap();
    let link = show(&["-show", "x.c", "-o", "x"]);
    assert!(link.starts_with("cc x.c -o x "), "{link}");
    assert!(link.contains(&format!("-I{}", include.display())), "{link}");
    assert!(link.contains(&format!("-L{}", libdir.display())), "{link}");
    assert!(link.trim_end().ends_with("-loneside_shmem"), "{link}");
    let compile_only = show(&["-show", "-c", "x.c"]);
    assert!(!compile_only.contains("-loneside_shmem"), "{compile_only}");
    // A compiler's failure is oshcc's exit status; a missing compiler is one line.
    let missing = Command::new(tool("oshcc"))
        .arg(scratch().join("missing.c"))
        .output()
        .unwrap();
    assert!(!missing.status.success());
    let out = Command::new(tool("oshcc"))
        .arg("x.c")
        .env("ONESIDE_CC", "/nonexistent/cc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/nonexistent/cc"),
        "{out:?}"
    );
}

/// `oshc++` is a symlink to oshcc (Cargo cannot name a binary `oshc++`); the
/// header compiles as C++ and the program runs.
#[test]
fn oshcxx_through_a_symlink_compiles_cxx() {
    build_capi();
    let link = scratch().join("oshc++");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(tool("oshcc"), &link).unwrap();
    let out = Command::new(&link).args(["-show", "x.cc"]).output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.starts_with("c++ x.cc "), "{line}");
    assert!(
        line.contains(&format!("-L{}", target_dir().canonicalize().unwrap().display())),
        "{line}"
    );
    let exe = scratch().join("ring_cxx");
    let out = Command::new(&link)
        .args(["-x", "c++", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(repo_file("tests/c/ring.c"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oshc++ ring.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = oshrun(2, "shm", &exe, &[]);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "ring ok\n"), "{out:?}");
}

/// The profiling interface: a tool library (`tests/c/profiler.c`) that
/// defines `shmem_putmem`, `shmem_long_p`, `shmem_long_atomic_fetch_add`,
/// `shmem_barrier_all` and `shmem_pcontrol` on top of their `pshmem_`
/// names sees every call of a program compiled with plain oshcc, counted
/// exactly, when preloaded and when linked ahead of the library; the
/// calls shmem.h would inline (all targets mapped over shm) included.
#[test]
fn a_preloaded_or_linked_ahead_tool_counts_every_call() {
    let dir = scratch().join("profiler");
    std::fs::create_dir_all(&dir).unwrap();
    let tool_lib = dir.join("libprofiler.so");
    let oshcc = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(tool("oshcc"))
            .args(["-std=c11", "-Wall", "-Werror"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "oshcc {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    build_capi();
    let source = |name: &str| repo_file(&format!("tests/c/{name}.c"));
    oshcc(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-o".as_ref(),
        tool_lib.as_os_str(),
        source("profiler").as_ref(),
    ]);
    let plain = compile("profiled");
    let linked = dir.join("profiled_linked");
    let libdir = format!("-L{}", dir.display());
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    oshcc(&[
        "-o".as_ref(),
        linked.as_os_str(),
        source("profiled").as_ref(),
        libdir.as_ref(),
        rpath.as_ref(),
        "-lprofiler".as_ref(),
    ]);
    for transport in transports_for_c() {
        for n in [2, 4] {
            let expected: Vec<String> = (0..n)
                .map(|pe| {
                    format!(
                        "profiler: PE {pe}: putmem 3, long_p 5, long_atomic_fetch_add 7, barrier_all 4, pcontrol 2 (level 1)"
                    )
                })
                .collect();
            for (how, exe, preload) in [("preloaded", &plain, true), ("linked ahead", &linked, false)] {
                let mut command = common::launcher(tool("oshrun"));
                command
                    .args(["-np", &n.to_string(), "--timeout", "90"])
                    .arg(exe)
                    .env("ONESIDE_TRANSPORT", transport)
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                if preload {
                    command.env("LD_PRELOAD", &tool_lib);
                }
                let out = finish(command.spawn().unwrap());
                let what = format!("{how}, -np {n} over {transport}: {out:?}");
                assert_eq!(out.code, Some(0), "{what}");
                let mut lines: Vec<String> = out.stdout.lines().map(str::to_string).collect();
                lines.sort();
                assert_eq!(lines, expected, "{what}");
            }
        }
    }
}

/// Every routine the library exports has its profiling name, and pshmem.h
/// declares them (compiled and linked by a C program that calls some).
#[test]
fn every_routine_has_a_pshmem_name() {
    build_capi();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(tool("liboneside_shmem.so"))
        .output()
        .expect("nm runs");
    assert!(out.status.success());
    let symbols: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let routines: Vec<&String> = symbols
        .iter()
        .filter(|s| {
            s.starts_with("shmem_") || ["start_pes", "_my_pe", "_num_pes", "shmalloc", "shfree"].contains(&s.as_str())
        })
        .collect();
    assert!(routines.len() > 1500, "{} routines", routines.len());
    let missing: Vec<&&String> = routines
        .iter()
        .filter(|r| !symbols.contains(&format!("p{r}")))
        .collect();
    assert!(missing.is_empty(), "no pshmem_ name for {missing:?}");
    let header = std::fs::read_to_string(repo_file("capi/include/pshmem.h")).unwrap();
    for routine in [
        "shmem_putmem",
        "shmem_ctx_long_atomic_fetch_add",
        "shmem_pcontrol",
        "shmem_team_split_2d",
    ] {
        assert!(
            header.contains(&format!(" p{routine}(")),
            "pshmem.h declares p{routine}"
        );
    }
}

/// The library, a C program, a Rust example and rlaunch list no fabric
/// library as `NEEDED`: libibverbs (and libfabric) are opened at run time.
#[test]
fn no_fabric_library_is_linked_they_are_opened_at_run_time() {
    build_capi();
    let files = [
        tool("liboneside_shmem.so"),
        compile("singleton"),
        PathBuf::from(example("hello_put")),
        rlaunch_path(),
    ];
    for file in files {
        let out = Command::new("readelf")
            .arg("-d")
            .arg(&file)
            .output()
            .expect("readelf runs");
        assert!(out.status.success(), "readelf -d {}: {out:?}", file.display());
        let dynamic = String::from_utf8_lossy(&out.stdout);
        let needed: Vec<&str> = dynamic.lines().filter(|l| l.contains("(NEEDED)")).collect();
        assert!(
            !needed.is_empty(),
            "{} lists no NEEDED at all:\n{dynamic}",
            file.display()
        );
        for line in needed {
            assert!(
                !line.contains("libibverbs") && !line.contains("libfabric"),
                "{} links a fabric library: {line}",
                file.display()
            );
        }
    }
}

/// `oshrun --profile`: the runtime's own profile of a C program sees every
/// call, those shmem.h would inline included, and its matrix is exact.
#[test]
fn the_runtimes_profile_of_a_c_program_is_exact() {
    let exe = compile("profiled");
    for transport in transports_for_c() {
        for n in [2, 4] {
            let dir = scratch().join(format!("profile-{transport}-{n}"));
            let profile = format!("--profile={}", dir.display());
            let out = oshrun_with(n, transport, &[&profile], &exe, &[]);
            assert_eq!(out.code, Some(0), "{out:?}");
            let json = std::fs::read_to_string(dir.join("profile.json")).expect("profile.json");
            assert_eq!(
                json_matrix(&json, "matrix_bytes"),
                known_traffic(n, false),
                "{transport} at {n}: {json}"
            );
            assert!(json.contains("\"histogram_log2_ns\":["), "{json}");
            // The program's 4 barriers per PE, and nothing it did not call:
            // init's barrier and SHMEM_TEAM_SHARED's collectives (a reduce
            // among them) are init/finalize's, 3 calls per PE.
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            for pe in value["ops"].as_array().unwrap() {
                let ops = &pe["ops"];
                assert_eq!(ops["barrier"]["calls"], 4, "{transport} at {n}: {pe}");
                assert_eq!(ops["init_finalize"]["calls"], 3, "{transport} at {n}: {pe}");
                for absent in ["reduce", "sync", "broadcast", "collect", "fcollect"] {
                    assert!(ops[absent].is_null(), "{absent}, never called: {pe}");
                }
            }
            let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
            assert!(summary.contains("init/finalize: "), "{summary}");
            assert!(!summary.contains("reduce"), "{summary}");
            let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
            assert!(html.contains("<p id=\"runtime-own\">init/finalize: "), "{html}");
            assert!(
                html.contains("<svg class=\"histogram\""),
                "pcontrol(2) records histograms: {html}"
            );
        }
    }
}

#[test]
fn hang_reports_name_the_c_call_and_its_source_line() {
    let exe = compile("hang");
    for transport in transports_for_c() {
        // PEs 1-2 finalize while PE 0 waits: a deadlock, ended at once.
        let out = oshrun_with(3, transport, &["--hang-timeout", "20"], &exe, &["wait"]);
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(
            out.stderr.contains("rlaunch: deadlock: ranks 1-2 in finalize"),
            "{out:?}"
        );
        let waiting = report_line(&out, 0);
        assert!(waiting.contains("shmem_long_wait_until at "), "{waiting}");
        assert!(waiting.contains("hang.c:21"), "{waiting}");
        assert!(
            waiting.contains("waits for the global 'flag' (now 0) to become == 1"),
            "named from the symbol table: {waiting}"
        );
        assert!(waiting.contains("(ranks 1-2 in finalize)"), "{waiting}");
        assert!(
            report_line(&out, 1).contains("in finalize from shmem_finalize"),
            "{out:?}"
        );

        // An element of a heap object: named by the line that allocated it.
        let out = oshrun_with(2, transport, &["--hang-timeout", "2"], &exe, &["heap"]);
        assert_eq!(out.code, Some(124), "{transport}: {out:?}");
        let waiting = report_line(&out, 0);
        assert!(waiting.contains("hang.c:28"), "{waiting}");
        assert!(
            waiting.contains("waits for its element [2] of the 32-byte object allocated at ")
                && waiting.contains("hang.c:26:")
                && waiting.contains("(heap offset "),
            "{waiting}"
        );

        let out = oshrun_with(2, transport, &["--hang-timeout", "2"], &exe, &["cycle"]);
        assert_eq!(out.code, Some(124), "{transport}: {out:?}");
        assert!(out.stderr.contains("no rank can go on: rank 0 waits for a value rank 1 could write, rank 1 waits for a value rank 0 could write"), "{out:?}");

        // A loop of tests is shown as the wait it is, not as computing.
        let out = oshrun_with(2, transport, &["--hang-timeout", "2"], &exe, &["poll"]);
        assert_eq!(out.code, Some(124), "{transport}: {out:?}");
        let polling = report_line(&out, 0);
        assert!(
            polling.contains("shmem_long_test at ") && polling.contains("hang.c:41"),
            "{polling}"
        );
        assert!(
            polling.contains(
                "waits for the global 'flag' (now 0) to become == 1, polled by a loop of tests that each find it false"
            ),
            "{polling}"
        );
        assert!(report_line(&out, 1).contains("shmem_barrier_all at "), "{out:?}");

        let out = oshrun(3, transport, &exe, &["die"]);
        assert_eq!(out.code, Some(128 + 9), "{transport}: {out:?}");
        for rank in 0..2 {
            let line = report_line(&out, rank);
            assert!(
                line.contains("shmem_barrier_all at ") && line.contains("hang.c:36"),
                "{line}"
            );
            assert!(line.contains("rank 2, which was killed by signal 9"), "{line}");
        }
    }
}

#[test]
fn debug_mode_finds_c_programs_mistakes_at_their_source_lines() {
    let exe = compile("misuse");
    for transport in transports_for_c() {
        let out = oshrun_with(3, transport, &["--debug"], &exe, &["mismatch"]);
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("collectives do not match"), "{out:?}");
        // The call and its place are said once, at the front.
        for line in out.stderr.lines().filter(|l| l.starts_with("oneside: ")) {
            let call = line["oneside: ".len()..].split(' ').next().unwrap_or_default();
            assert_eq!(line.matches(&format!("{call} at ")).count(), 1, "{line}");
        }
        assert!(out.stderr.contains("as the "), "{out:?}");
        assert!(
            out.stderr.contains(" collective call on the team since init"),
            "{out:?}"
        );
        assert!(
            out.stderr.contains("broadcast(root 0, 4 elements of 8 bytes) at "),
            "{out:?}"
        );
        assert!(out.stderr.contains("reduce(4 elements of 8 bytes) at "), "{out:?}");
        assert!(
            out.stderr.contains("misuse.c:25") && out.stderr.contains("misuse.c:27"),
            "{out:?}"
        );

        let out = oshrun_with(3, transport, &["--debug"], &exe, &["reuse"]);
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("shmem_long_broadcast at "), "{out:?}");
        assert!(out.stderr.contains("previous collective, reduce at "), "{out:?}");

        let out = oshrun_with(3, transport, &["--debug"], &exe, &["bounds"]);
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("shmem_long_put at "), "{out:?}");
        assert!(out.stderr.contains("misuse.c:35"), "{out:?}");
        assert!(out.stderr.contains("runs past the end of its object"), "{out:?}");

        let out = oshrun_with(3, transport, &["--debug"], &exe, &["global"]);
        assert_eq!(out.code, Some(1), "{transport}: {out:?}");
        assert!(out.stderr.contains("shmem_long_put at "), "{out:?}");
        assert!(out.stderr.contains("misuse.c:38"), "{out:?}");
        assert!(
            out.stderr.contains(
                "from byte 24 of the global 'x' (32 bytes) runs past its end by 24 bytes, into the global 'after_x'"
            ),
            "{out:?}"
        );

        let out = oshrun_with(3, transport, &["--debug"], &exe, &["fine"]);
        assert_eq!(out.code, Some(0), "{transport}: {out:?}");
        let out = oshrun(3, transport, &exe, &["bounds"]);
        assert_eq!(out.code, Some(0), "without --debug the overrun goes unseen: {out:?}");
    }
}

/// The ```c blocks of a Markdown page, with the line each starts on.
fn c_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) if info.trim() == "c" => open = Some((n + 2, String::new())),
            (Some(_), Some(_)) => blocks.extend(open.take()),
            (Some((_, code)), None) => {
                code.push_str(line);
                code.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// Every C block of the user guide and README compiles with oshcc (and
/// links, when it has a `main`), so the documentation cannot drift from
/// shmem.h.
#[test]
fn every_c_block_of_the_guide_compiles() {
    build_capi();
    let mut compiled = 0;
    for page in guide_pages() {
        let name = page.file_stem().unwrap().to_string_lossy().into_owned();
        for (line, code) in c_blocks(&std::fs::read_to_string(&page).unwrap()) {
            let source = scratch().join(format!("guide-{name}-{line}.c"));
            std::fs::write(&source, &code).unwrap();
            let links = code.contains("main(");
            let mut command = Command::new(tool("oshcc"));
            command.args(["-std=c11", "-Wall", "-Werror", "-o"]);
            command.arg(source.with_extension(if links { "" } else { "o" }));
            if !links {
                command.arg("-c");
            }
            let out = command.arg(&source).output().expect("oshcc starts");
            assert!(
                out.status.success(),
                "{}:{line}: the C block does not compile:\n{}",
                page.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            compiled += 1;
        }
    }
    assert!(compiled >= 3, "only {compiled} C blocks found");
}

/// A failed `shmem_malloc` returns NULL and keeps a note: a program that
/// writes through the NULL dies of SIGSEGV with the note (what was asked,
/// the heap, `SHMEM_SYMMETRIC_SIZE`) before rlaunch's line; one that
/// checks goes on, silent, unless under `--debug`, which prints it at once.
#[test]
fn a_failed_malloc_is_named_when_the_program_crashes_on_its_null() {
    let exe = compile("unchecked_malloc");
    let note = "shmem_malloc: PE 0: returned NULL: asked for 1099511627776 bytes, the largest free block is";
    let out = oshrun(2, "shm", &exe, &[]);
    assert_eq!(out.code, Some(128 + 11), "{out:?}");
    assert!(out.stderr.contains(note), "{out:?}");
    assert!(out.stderr.contains("SHMEM_SYMMETRIC_SIZE"), "{out:?}");
    assert!(out.stderr.contains("(SIGSEGV)"), "{out:?}");
    // The crash report follows the note, naming the line that used the NULL.
    let crash = out
        .stderr
        .find("died of SIGSEGV (address 0x0 is not mapped) in main at ");
    assert!(crash.is_some_and(|at| at > out.stderr.find(note).unwrap()), "{out:?}");
    assert!(out.stderr.contains("tests/c/unchecked_malloc.c:16:"), "{out:?}");
    let out = oshrun(2, "shm", &exe, &["check"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "unchecked_malloc: NULL, as the specification says\n");
    assert!(!out.stderr.contains("returned NULL"), "{out:?}");
    let out = oshrun_with(2, "shm", &["--debug"], &exe, &["check"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stderr.contains(note), "{out:?}");
}

/// A PE that dies of a fault says which, why and where, with its frames,
/// and rlaunch's line names the frame too (`tests/c/crash.c`).
#[test]
fn a_crash_says_where_and_why() {
    let exe = compile("crash");
    let cases = [
        ("segv", 11, "SIGSEGV (address 0x0 is not mapped) in store at ", 14),
        ("fpe", 8, "SIGFPE (integer division by zero) in main at ", 34),
        ("abort", 6, "SIGABRT (the program called abort) in main at ", 36),
        ("thread", 11, "SIGSEGV (address 0x0 is not mapped) in store at ", 14),
    ];
    for transport in transports_for_c() {
        for (mode, signal, cause, line) in cases {
            let start = Instant::now();
            let out = oshrun(2, transport, &exe, &[mode]);
            let what = format!("crash {mode} over {transport}: {out:?}");
            assert_eq!(out.code, Some(128 + signal), "{what}");
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            let said = out
                .stderr
                .lines()
                .find(|l| l.starts_with("oneside: PE 1 (pid "))
                .unwrap_or("");
            assert!(said.contains(&format!("died of {cause}")), "{what}");
            assert!(said.contains(&format!("tests/c/crash.c:{line}:")), "{what}");
            assert!(
                out.stderr.contains("oneside: PE 1's frames, innermost first:\n  #0 "),
                "{what}"
            );
            let rlaunch = out
                .stderr
                .lines()
                .find(|l| l.starts_with("rlaunch: rank 1 "))
                .unwrap_or("");
            assert!(
                rlaunch.contains("(SIG") && rlaunch.contains(&format!("crash.c:{line}:")),
                "{what}"
            );
            if mode == "segv" {
                let frames = ["#0 store at ", "#1 fill at ", "#2 main at "];
                assert!(frames.iter().all(|f| out.stderr.contains(f)), "{what}");
            }
        }
    }
}

/// The heap grows with no size set: 256 MiB per PE in pieces from 8 bytes
/// to 64 MiB at 1, 2 and 4 PEs, written and checked at both ends of every
/// piece, typed traffic into the first and last parts, all freed (the
/// heap gives its memory back) and allocated again (zeroed again). A cap
/// holds: past it every PE gets NULL, and the program goes on
/// (`tests/c/heap_grows.c`).
#[test]
fn the_heap_grows_with_no_size_set_and_a_cap_holds() {
    let exe = compile("heap_grows");
    for transport in transports_for_c() {
        for n in [1, 2, 4] {
            // A NIC that registers the heap keeps its memory when freed.
            let kept: &[&str] = match nic_keeps_heap(transport) {
                true => &["kept"],
                false => &[],
            };
            let out = oshrun(n, transport, &exe, kept);
            assert_eq!(out.code, Some(0), "{n} PEs over {transport}: {out:?}");
            assert!(
                out.stdout.starts_with("heap_grows: ok: 256 MiB per PE in "),
                "{n} PEs over {transport}: {out:?}"
            );
        }
        let out = oshrun_with(2, transport, &["--heap-size", "32M"], &exe, &["cap"]);
        assert_eq!(out.code, Some(0), "{out:?}");
        assert_eq!(out.stdout, "heap_grows: the cap held\n", "{out:?}");
    }
}
