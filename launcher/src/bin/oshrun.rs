//! `oshrun`: `rlaunch` under the name OpenSHMEM users type (`oshrun -np 4
//! ./prog`), as Open MPI's `oshrun` is its `mpirun`. It replaces itself
//! (exec) with the `rlaunch` next to it, so there is one launcher binary and
//! one set of options; `argv[0]` stays `oshrun` for clap's usage lines.
//!
//! (A second `[[bin]]` on `src/main.rs` would work too, but Cargo then warns
//! on every build that one file belongs to two targets, and links the
//! launcher twice.)

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| "oshrun".into());
    let rlaunch = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .map(|exe| exe.with_file_name("rlaunch"));
    let error = match rlaunch {
        // exec returns only on failure.
        Ok(rlaunch) => format!(
            "cannot run {}: {}",
            rlaunch.display(),
            Command::new(&rlaunch).arg0(&argv0).args(args).exec()
        ),
        Err(e) => format!("cannot find its own executable: {e}"),
    };
    eprintln!("oshrun: error: {error} (oshrun runs the rlaunch installed next to it)");
    ExitCode::from(1)
}
