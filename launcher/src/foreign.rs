//! A program built against another OpenSHMEM: Debian's `openmpi-bin` puts
//! Open MPI's `oshcc` first in `PATH`, and a program it built calls Open
//! MPI's OpenSHMEM, which rlaunch cannot start. rlaunch (and `oshrun`) warn
//! before launching it, naming the library and the launcher it needs.

use std::path::Path;

use crate::elf_needed;

/// Other OpenSHMEM libraries, by the start of the name a program needs, and
/// what each belongs to.
const OTHERS: [(&str, &str); 3] = [
    (
        "liboshmem.so",
        "Open MPI's OpenSHMEM (liboshmem.so); run it with Open MPI's oshrun",
    ),
    (
        "libsma.so",
        "Sandia OpenSHMEM or Cray SHMEM (libsma.so); run it with that library's oshrun",
    ),
    ("liboshmpi.so", "OSHMPI (liboshmpi.so); run it with its MPI's mpirun"),
];

/// The warning for `program`, if it needs another OpenSHMEM library and
/// not oneside's. Only its ELF headers are read (`elf_needed`): before,
/// scanning its first 4 MiB for the names cost 0.7 s per launch in a debug
/// build of rlaunch.
pub fn warning(program: &Path) -> Option<String> {
    warning_for(&elf_needed::needed(program)).map(|what| {
        format!(
            "warning: {} is linked against {what}, or rebuild it with oneside's oshcc \
             (by its full path: Open MPI installs an oshcc of its own in /usr/bin)",
            program.display()
        )
    })
}

fn warning_for(needed: &[String]) -> Option<&'static str> {
    if needed.iter().any(|lib| lib.starts_with("liboneside_shmem")) {
        return None;
    }
    OTHERS
        .iter()
        .find(|(name, _)| needed.iter().any(|lib| lib.starts_with(name)))
        .map(|(_, what)| *what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_openshmems_are_named_and_oneside_is_not() {
        let needs = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert!(warning_for(&needs(&["libc.so.6", "liboshmem.so.40"]))
            .unwrap()
            .contains("Open MPI"));
        assert!(warning_for(&needs(&["libsma.so.0"])).unwrap().contains("Sandia"));
        assert!(warning_for(&needs(&["liboshmpi.so"])).unwrap().contains("OSHMPI"));
        assert_eq!(warning_for(&needs(&["liboneside_shmem.so.0.1", "libc.so.6"])), None);
        assert_eq!(warning_for(&needs(&["libc.so.6"])), None);
        assert_eq!(warning_for(&[]), None, "static programs and scripts");
    }

    #[test]
    fn a_real_program_of_oneside_gets_no_warning() {
        assert_eq!(warning(&std::env::current_exe().unwrap()), None);
        assert_eq!(warning(Path::new("/nonexistent")), None);
    }
}
