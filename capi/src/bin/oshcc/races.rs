//! `oshcc --check-races`: the build the race checker sees a C program's
//! loads and stores through. Sources are compiled with a sanitizer's
//! instrumentation, whose calls the library answers, and linked without
//! that sanitizer's runtime. GCC puts that runtime first on any link line
//! that has the flag, so a command that compiles and links is run as one
//! compile per source, into a temporary directory, then the link.

use super::{links, plan};
use std::path::Path;

/// The flag that asks for the race checker's build.
pub(crate) const CHECK_RACES: &str = "--check-races";

/// Whether `arg` names a C or C++ source file.
fn is_source(arg: &str) -> bool {
    !arg.starts_with('-')
        && [".c", ".cc", ".cpp", ".cxx", ".C", ".c++", ".i"]
            .iter()
            .any(|ext| arg.ends_with(ext))
}

/// How a program's loads and stores reach the race checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eyes {
    /// `-fsanitize=address`: an inline check of the library's shadow,
    /// a call only for watched memory (`capi/src/asan.rs`).
    Address,
    /// `-fsanitize=thread`: a call at every access, and C atomics seen as
    /// atomics, which an OpenMP team's threads need (`capi/src/tsan.rs`).
    Thread,
}

/// Whether `compiler` is Clang (by its name: `clang`, `clang-14`, a path).
fn is_clang(compiler: &str) -> bool {
    compiler.rsplit('/').next().unwrap_or(compiler).contains("clang")
}

/// Whether the library keeps an ASan shadow on this target (`oneside::race::shadow`).
const SHADOW: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));

/// The instrumentation for `args` with `compiler`: `$ONESIDE_RACE_INSTRUMENT`
/// (`address` or `thread`) when set; else AddressSanitizer's with Clang
/// and no threads (OpenMP's, or `-pthread`'s), ThreadSanitizer's
/// otherwise: a program's threads are told apart only where their
/// atomics are seen. GCC's AddressSanitizer
/// leaves out an access to a global at a constant index (`data[3]`,
/// `flag = 0`), which it can tell is in bounds, and has no option to keep
/// it (Clang's is `-asan-opt-globals=0`), so GCC always gets ThreadSanitizer's.
fn eyes(args: &[String], compiler: &str, asked: Option<&str>) -> Result<Eyes, String> {
    let threads = args
        .iter()
        .any(|a| a == "-fopenmp" || a.starts_with("-fopenmp=") || a == "-qopenmp" || a == "-openmp" || a == "-pthread");
    match asked {
        Some("thread") => Ok(Eyes::Thread),
        Some("address") if !SHADOW => Err("ONESIDE_RACE_INSTRUMENT=address needs x86_64 Linux".into()),
        Some("address") if !is_clang(compiler) => Err(format!(
            "ONESIDE_RACE_INSTRUMENT=address needs Clang (ONESIDE_CC=clang): {compiler}'s AddressSanitizer does not check a global's accesses at constant indices, so races on them would go unseen"
        )),
        Some("address") if threads => {
            Err("ONESIDE_RACE_INSTRUMENT=address cannot see the threads' atomics (-fopenmp, -pthread): build with thread".into())
        }
        Some("address") => Ok(Eyes::Address),
        Some(other) => Err(format!("ONESIDE_RACE_INSTRUMENT={other}: use address or thread")),
        None if SHADOW && is_clang(compiler) && !threads => Ok(Eyes::Address),
        None => Ok(Eyes::Thread),
    }
}

/// The compile flags for `eyes` (Clang's, for `Address`). Loops over
/// symmetric memory are kept as one access per place and iteration: an
/// unrolled loop's copies of one access are places of their own, each
/// touching every n-th element, and such strided runs cannot be joined
/// into one entry, so a phase would keep an entry per element (heat.c
/// 150x slower). GCC unrolls only when asked (`-fno-unroll-loops` undoes
/// a `-funroll-loops`); Clang unrolls by itself, so its build turns off
/// runtime unrolling and the vectorizer's interleaving alone, which keeps
/// the constant-count unrolling that loops over private memory profit
/// from (`-fno-unroll-loops` made PRK Stencil 2x slower).
///
/// GCC's `-Wtsan` warns that ThreadSanitizer does not model
/// `atomic_thread_fence`, which shmem.h's inline quiet uses; here it is
/// oneside's own entry that answers, so the warning (an error under
/// `-Werror`) is turned off.
fn flags(eyes: Eyes, compiler: &str) -> Vec<String> {
    let flags: &[&str] = match eyes {
        Eyes::Thread if !is_clang(compiler) => &["-fsanitize=thread", "-fno-unroll-loops", "-Wno-tsan"],
        Eyes::Thread => &["-fsanitize=thread", "-fno-unroll-loops"],
        Eyes::Address => &[
            "-mllvm",
            "-unroll-runtime=false",
            "-mllvm",
            "-interleave-loops=false",
            "-fsanitize=address",
            "-fsanitize-recover=address",
            "-fsanitize-address-use-after-return=never",
            "-mllvm",
            "-asan-stack=0",
            "-mllvm",
            "-asan-globals=0",
            "-mllvm",
            "-asan-opt-globals=0",
        ],
    };
    flags.iter().map(|f| f.to_string()).collect()
}

/// The commands for `--check-races` (`args` without it): compile-only
/// commands get the instrumentation's flags (`eyes`); a command that also
/// links becomes a compile of each source into `tmp/` with them, then the
/// plain link of those objects (the compiler would add the sanitizer's
/// own runtime to a link that has them).
pub(crate) fn race_plan(
    args: &[String],
    compiler: &str,
    (include, libdir): (&str, &str),
    tmp: &Path,
    asked: Option<&str>,
) -> Result<Vec<Vec<String>>, String> {
    let sanitize = flags(eyes(args, compiler, asked)?, compiler);
    if !links(args) {
        let mut line = plan(args, compiler, include, libdir);
        line.extend(sanitize);
        return Ok(vec![line]);
    }
    let mut compile_flags = Vec::new();
    let mut skip_next = false;
    for a in args {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        match a.as_str() {
            "-o" => skip_next = true,
            a if is_source(a) || a.starts_with("-l") || a.starts_with("-Wl,") || a.starts_with("-L") => {}
            a if !a.starts_with('-') && [".o", ".a", ".so"].iter().any(|e| a.ends_with(e)) => {}
            a => compile_flags.push(a.to_string()),
        }
    }
    let mut commands = Vec::new();
    let mut link_args = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if !is_source(a) || args.get(i.wrapping_sub(1)).is_some_and(|p| p == "-o") {
            link_args.push(a.clone());
            continue;
        }
        let object = tmp.join(format!("{i}.o")).to_string_lossy().into_owned();
        let mut line = vec![compiler.to_string()];
        line.extend(compile_flags.iter().cloned());
        line.extend(["-c".into(), a.clone(), "-o".into(), object.clone()]);
        line.extend(sanitize.iter().cloned());
        line.push(format!("-I{include}"));
        commands.push(line);
        link_args.push(object);
    }
    commands.push(plan(&link_args, compiler, include, libdir));
    Ok(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_races_compiles_each_source_with_tsan_then_links_without_it() {
        let args: Vec<String> = "-O2 -g heat.c util.c -o heat -lm"
            .split_whitespace()
            .map(String::from)
            .collect();
        let lines: Vec<String> = race_plan(&args, "cc", ("/inc", "/lib"), Path::new("/t"), Some("thread"))
            .unwrap()
            .iter()
            .map(|l| l.join(" "))
            .collect();
        assert_eq!(
            lines,
            [
                "cc -O2 -g -c heat.c -o /t/2.o -fsanitize=thread -fno-unroll-loops -Wno-tsan -I/inc",
                "cc -O2 -g -c util.c -o /t/3.o -fsanitize=thread -fno-unroll-loops -Wno-tsan -I/inc",
                "cc -O2 -g /t/2.o /t/3.o -o heat -lm -I/inc -L/lib -Wl,-rpath,/lib -loneside_shmem",
            ]
        );
        let compile: Vec<String> = "-c heat.c".split_whitespace().map(String::from).collect();
        assert_eq!(
            race_plan(&compile, "cc", ("/inc", "/lib"), Path::new("/t"), Some("thread")).unwrap()[0].join(" "),
            "cc -c heat.c -I/inc -fsanitize=thread -fno-unroll-loops -Wno-tsan"
        );
    }

    #[test]
    fn clang_without_threads_gets_asan_and_the_rest_tsan() {
        let of = |line: &str| line.split_whitespace().map(String::from).collect::<Vec<_>>();
        let x = of("-c x.c");
        assert_eq!(eyes(&of("-fopenmp -c x.c"), "clang", None), Ok(Eyes::Thread));
        assert_eq!(eyes(&of("-fopenmp=libomp -c x.c"), "clang", None), Ok(Eyes::Thread));
        assert_eq!(eyes(&of("-pthread -c x.c"), "clang", None), Ok(Eyes::Thread));
        assert_eq!(eyes(&x, "cc", None), Ok(Eyes::Thread));
        assert_eq!(eyes(&x, "gcc-12", Some("thread")), Ok(Eyes::Thread));
        assert!(eyes(&x, "gcc", Some("address"))
            .unwrap_err()
            .contains("constant indices"));
        assert!(eyes(&x, "clang", Some("memory")).is_err());
        if SHADOW {
            assert_eq!(eyes(&x, "/usr/bin/clang-14", None), Ok(Eyes::Address));
            assert_eq!(eyes(&of("-fopenmp-simd -c x.c"), "clang", None), Ok(Eyes::Address));
            assert_eq!(eyes(&x, "clang", Some("thread")), Ok(Eyes::Thread));
            let clang = race_plan(&x, "clang", ("/inc", "/lib"), Path::new("/t"), None).unwrap();
            assert!(
                clang[0]
                    .join(" ")
                    .contains("-fsanitize=address -fsanitize-recover=address"),
                "{clang:?}"
            );
            assert!(clang[0].join(" ").contains("-mllvm -asan-opt-globals=0"), "{clang:?}");
            assert!(clang[0].join(" ").contains("-mllvm -unroll-runtime=false"), "{clang:?}");
            assert!(!clang[0].join(" ").contains("-fno-unroll-loops"), "{clang:?}");
        }
    }
}
