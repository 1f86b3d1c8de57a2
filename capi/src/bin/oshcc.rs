//! `oshcc`, the OpenSHMEM compiler wrapper (like Sandia OpenSHMEM's and Open
//! MPI's): runs the C compiler with the user's arguments, then
//! `-I<include dir>` and, when the command links, `-L<libdir>
//! -Wl,-rpath,<libdir> -loneside_shmem`.
//!
//! - compiler: `$ONESIDE_CC`, else `cc`. Plain `$CC` is never read: configure
//!   scripts run with `CC=oshcc`, and reading it would make oshcc call itself.
//!   Under a name ending in `c++` or `cxx` (a symlink `oshc++ -> oshcc`):
//!   `$ONESIDE_CXX`, else `c++`.
//! - where the headers and the library are ([`Layout`]): installed
//!   (`<prefix>/bin/oshcc` next to `<prefix>/include/shmem.h`), they are
//!   `<prefix>/include` and `<prefix>/lib`, found from this executable's
//!   resolved path, so a prefix can move. In a build tree, they are this
//!   crate's `include/` and the executable's own directory
//!   (`target/<profile>/`), where Cargo puts `liboneside_shmem.so`.
//!   `$ONESIDE_SHMEM_INCLUDE` overrides the include dir.
//! - the rpath is the absolute libdir of the prefix oshcc ran from, as Open
//!   MPI's wrappers do: a program keeps the library it was compiled against.
//! - `-show` (`--show`, `-showme`, `--showme`) prints the command instead of
//!   running it; `--version` prints oneside's version and transports before
//!   the compiler's.
//! - a linking command whose library is missing fails with the command
//!   that builds it, instead of the linker's `cannot find -loneside_shmem`.
//! - `--check-races` builds for the race checker (`rlaunch --check-races`),
//!   with a sanitizer's instrumentation and without its runtime (`races`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[path = "oshcc/races.rs"]
mod races;
use races::{race_plan, CHECK_RACES};

const SHOW_FLAGS: [&str; 4] = ["-show", "--show", "-showme", "--showme"];

/// Whether the wrapper was started under a C++ name (`oshc++`, `oshcxx`).
fn is_cxx(argv0: &str) -> bool {
    let name = argv0.rsplit('/').next().unwrap_or(argv0);
    name.ends_with("c++") || name.ends_with("cxx")
}

/// Whether the compiler will link: no compile-only flag, and some input
/// (an argument that is not an option), so `oshcc --version` stays as is.
fn links(args: &[String]) -> bool {
    let stops_early = args
        .iter()
        .any(|a| matches!(a.as_str(), "-c" | "-E" | "-S" | "-M" | "-MM"));
    let has_input = args.iter().any(|a| a == "-" || !a.starts_with('-'));
    !stops_early && has_input
}

/// The full command line (compiler first) for the user's `args`.
fn plan(args: &[String], compiler: &str, include: &str, libdir: &str) -> Vec<String> {
    let mut line = vec![compiler.to_string()];
    line.extend(args.iter().filter(|a| !SHOW_FLAGS.contains(&a.as_str())).cloned());
    line.push(format!("-I{include}"));
    if links(&line[1..]) {
        line.push(format!("-L{libdir}"));
        line.push(format!("-Wl,-rpath,{libdir}"));
        line.push("-loneside_shmem".to_string());
    }
    line
}

/// One argument as a shell would need it, for `-show`.
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// A non-empty environment variable.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where the headers and the library are, seen from oshcc's directory.
struct Layout {
    include: PathBuf,
    libdir: PathBuf,
    /// `Some(prefix)` when installed; `None` in a Cargo build tree.
    prefix: Option<PathBuf>,
}

impl Layout {
    fn of(exe_dir: &Path) -> Layout {
        let prefix = exe_dir.parent().filter(|prefix| {
            exe_dir.file_name().is_some_and(|n| n == "bin") && prefix.join("include/shmem.h").is_file()
        });
        match prefix {
            Some(prefix) => Layout {
                include: prefix.join("include"),
                libdir: prefix.join("lib"),
                prefix: Some(prefix.to_path_buf()),
            },
            None => Layout {
                include: concat!(env!("CARGO_MANIFEST_DIR"), "/include").into(),
                libdir: build_tree_libdir(exe_dir),
                prefix: None,
            },
        }
    }

    /// Why the library cannot be linked, with what to do, if it is missing.
    fn missing_library(&self) -> Option<String> {
        if has_library(&self.libdir) {
            return None;
        }
        let lib = self.libdir.join("liboneside_shmem.so");
        Some(match &self.prefix {
            Some(prefix) => format!(
                "{} is missing: the installation in {} is incomplete; install it again with `make install PREFIX={}`",
                lib.display(),
                prefix.display(),
                prefix.display()
            ),
            None => {
                let release = self.libdir.file_name().is_some_and(|n| n == "release");
                let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new("."));
                format!(
                    "{} is not built yet: run `cargo build{} -p oneside-shmem` in {}",
                    lib.display(),
                    if release { " --release" } else { "" },
                    repo.display()
                )
            }
        })
    }
}

/// Whether `dir` holds the library, shared or static.
fn has_library(dir: &Path) -> bool {
    ["liboneside_shmem.so", "liboneside_shmem.a"]
        .iter()
        .any(|file| dir.join(file).exists())
}

/// The library's directory in a Cargo build tree: oshcc's own. `cargo
/// build --bins` (the README's quick start) builds the library in every
/// crate type, since it is oshcc's own package's, but copies up only what
/// it was asked for, leaving the `.so` and `.a` in `deps/` (and an older
/// copy, if any, in place): oshcc then copies them up itself (a hard
/// link, as Cargo does), next to the soname's link the build script made,
/// so programs link and run against the library just built.
fn build_tree_libdir(exe_dir: &Path) -> PathBuf {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    for file in ["liboneside_shmem.so", "liboneside_shmem.a"] {
        let (from, to) = (exe_dir.join("deps").join(file), exe_dir.join(file));
        let Some(built) = modified(&from) else { continue };
        if modified(&to).is_some_and(|up| up >= built) {
            continue;
        }
        // Beside it first, then renamed over it: a program linking at the
        // same moment sees the old file or the new, never none.
        let staged = exe_dir.join(format!("{file}.oshcc-{}", std::process::id()));
        let _ = std::fs::remove_file(&staged);
        if std::fs::hard_link(&from, &staged).is_ok() || std::fs::copy(&from, &staged).is_ok() {
            let _ = std::fs::rename(&staged, &to);
        }
    }
    exe_dir.to_path_buf()
}

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let argv0 = argv.next().unwrap_or_else(|| "oshcc".into());
    let args: Vec<String> = argv.collect();
    let me = argv0.rsplit('/').next().unwrap_or("oshcc").to_string();
    let compiler = if is_cxx(&argv0) {
        var("ONESIDE_CXX").unwrap_or_else(|| "c++".into())
    } else {
        var("ONESIDE_CC").unwrap_or_else(|| "cc".into())
    };
    let exe_dir = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .ok()
        .and_then(|exe| exe.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    let layout = Layout::of(&exe_dir);
    let include = var("ONESIDE_SHMEM_INCLUDE").unwrap_or_else(|| layout.include.to_string_lossy().into_owned());
    let libdir = layout.libdir.to_string_lossy().into_owned();
    let races = args.iter().any(|a| a == CHECK_RACES);
    let args: Vec<String> = args.into_iter().filter(|a| a != CHECK_RACES).collect();
    let tmp = std::env::temp_dir().join(format!("oshcc-{}", std::process::id()));
    let commands = match races {
        true => match race_plan(
            &args,
            &compiler,
            (&include, &libdir),
            &tmp,
            var("ONESIDE_RACE_INSTRUMENT").as_deref(),
        ) {
            Ok(commands) => commands,
            Err(why) => {
                eprintln!("{me}: error: {why}");
                return ExitCode::from(1);
            }
        },
        false => vec![plan(&args, &compiler, &include, &libdir)],
    };
    if args.iter().any(|a| SHOW_FLAGS.contains(&a.as_str())) {
        let shown: Vec<String> = commands
            .iter()
            .map(|line| line.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "))
            .collect();
        println!("{}", shown.join(" && "));
        return ExitCode::SUCCESS;
    }
    let line = commands.last().cloned().unwrap_or_default();
    if args.iter().any(|a| a == "--version") {
        println!(
            "{me} (oneside) {}, transports: {}",
            env!("CARGO_PKG_VERSION"),
            oneside::transports_built_in()
        );
    }
    if links(&line[1..]) {
        if let Some(why) = layout.missing_library() {
            eprintln!("{me}: error: {why}");
            return ExitCode::from(1);
        }
    }
    if commands.len() > 1 {
        if let Err(e) = std::fs::create_dir_all(&tmp) {
            eprintln!("{me}: cannot make {}: {e}", tmp.display());
            return ExitCode::from(1);
        }
    }
    let mut code = ExitCode::SUCCESS;
    for line in &commands {
        match Command::new(&line[0]).args(&line[1..]).status() {
            Ok(status) if status.success() => {}
            // A compiler killed by a signal has no code: report it as failure.
            Ok(status) => {
                code = ExitCode::from(status.code().map_or(1, |c| c.clamp(1, 255) as u8));
                break;
            }
            Err(e) => {
                eprintln!("{me}: cannot run the compiler '{compiler}': {e} (set ONESIDE_CC or ONESIDE_CXX)");
                code = ExitCode::from(1);
                break;
            }
        }
    }
    if commands.len() > 1 {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(line: &str) -> String {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        plan(&args, "cc", "/inc", "/lib").join(" ")
    }

    #[test]
    fn linking_commands_get_the_library_after_the_user_arguments() {
        assert_eq!(
            plan_of("-O2 ring.c -o ring"),
            "cc -O2 ring.c -o ring -I/inc -L/lib -Wl,-rpath,/lib -loneside_shmem"
        );
        assert_eq!(
            plan_of("a.o b.o"),
            "cc a.o b.o -I/inc -L/lib -Wl,-rpath,/lib -loneside_shmem"
        );
    }

    #[test]
    fn compile_only_and_preprocess_only_commands_get_only_the_include_dir() {
        for flag in ["-c", "-E", "-S", "-M", "-MM"] {
            assert_eq!(plan_of(&format!("{flag} x.c")), format!("cc {flag} x.c -I/inc"));
        }
        // -MD and -MMD write dependencies as a side effect of a normal build.
        assert!(plan_of("-MMD x.c").ends_with("-loneside_shmem"));
    }

    #[test]
    fn commands_without_input_do_not_link() {
        assert_eq!(plan_of("--version"), "cc --version -I/inc");
        assert_eq!(plan_of("-v"), "cc -v -I/inc");
        assert!(plan_of("-x c -").ends_with("-loneside_shmem"));
    }

    #[test]
    fn show_flags_are_removed_from_the_command() {
        assert_eq!(
            plan_of("-show x.c"),
            "cc x.c -I/inc -L/lib -Wl,-rpath,/lib -loneside_shmem"
        );
        assert_eq!(plan_of("--showme -c x.c"), "cc -c x.c -I/inc");
    }

    #[test]
    fn the_cxx_names_are_recognised() {
        assert!(is_cxx("/usr/bin/oshc++") && is_cxx("oshcxx"));
        assert!(!is_cxx("./target/debug/oshcc"));
        assert_eq!(quote("-DX=a b"), "'-DX=a b'");
        assert_eq!(quote("-Wl,-rpath,/x"), "-Wl,-rpath,/x");
    }

    #[test]
    fn an_installed_prefix_is_found_from_bin_and_a_build_tree_is_not() {
        let prefix = std::env::temp_dir().join(format!("oshcc-layout-{}", std::process::id()));
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(prefix.join("include")).unwrap();
        let tree = Layout::of(&prefix.join("bin"));
        assert!(tree.prefix.is_none() && tree.libdir == prefix.join("bin"));
        assert!(tree.missing_library().unwrap().contains("cargo build -p oneside-shmem"));
        std::fs::write(prefix.join("include/shmem.h"), "").unwrap();
        let installed = Layout::of(&prefix.join("bin"));
        assert_eq!(installed.libdir, prefix.join("lib"));
        assert_eq!(installed.include, prefix.join("include"));
        assert!(installed.missing_library().unwrap().contains("make install"));
        std::fs::create_dir_all(prefix.join("lib")).unwrap();
        std::fs::write(prefix.join("lib/liboneside_shmem.so"), "").unwrap();
        assert!(installed.missing_library().is_none());
        std::fs::remove_dir_all(&prefix).unwrap();
    }
}
