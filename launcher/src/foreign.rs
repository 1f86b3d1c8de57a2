//! A program built against another OpenSHMEM: Debian's `openmpi-bin` puts
//! Open MPI's `oshcc` first in `PATH`, and a program it built calls Open
//! MPI's OpenSHMEM, which rlaunch cannot start. rlaunch (and `oshrun`) warn
//! before launching it, naming the library and the launcher it needs.

use std::io::Read;
use std::path::Path;

/// Where dynamic executables keep their library names (`.dynstr`): near the
/// front. Reading this much covers it without reading a large binary whole.
const SCAN_BYTES: u64 = 4 << 20;

/// Other OpenSHMEM libraries, and what each belongs to.
const OTHERS: [(&[u8], &str); 3] = [
    (
        b"\0liboshmem.so",
        "Open MPI's OpenSHMEM (liboshmem.so); run it with Open MPI's oshrun",
    ),
    (
        b"\0libsma.so",
        "Sandia OpenSHMEM or Cray SHMEM (libsma.so); run it with that library's oshrun",
    ),
    (b"\0liboshmpi.so", "OSHMPI (liboshmpi.so); run it with its MPI's mpirun"),
];

/// The warning for `program`, if it names another OpenSHMEM library and
/// not oneside's.
pub fn warning(program: &Path) -> Option<String> {
    let mut head = Vec::new();
    std::fs::File::open(program)
        .ok()?
        .take(SCAN_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    warning_for(&head).map(|what| {
        format!(
            "warning: {} is linked against {what}, or rebuild it with oneside's oshcc \
             (by its full path: Open MPI installs an oshcc of its own in /usr/bin)",
            program.display()
        )
    })
}

fn warning_for(bytes: &[u8]) -> Option<&'static str> {
    if !bytes.starts_with(b"\x7fELF") || contains(bytes, b"liboneside_shmem") {
        return None;
    }
    OTHERS
        .iter()
        .find(|(name, _)| contains(bytes, name))
        .map(|(_, what)| *what)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_openshmems_are_named_and_oneside_is_not() {
        let elf = |names: &[u8]| [b"\x7fELF\x02\x01".as_slice(), b"\0libc.so.6", names, b"\0"].concat();
        assert!(warning_for(&elf(b"\0liboshmem.so.40")).unwrap().contains("Open MPI"));
        assert!(warning_for(&elf(b"\0libsma.so.0")).unwrap().contains("Sandia"));
        assert_eq!(warning_for(&elf(b"\0liboneside_shmem.so.0.1")), None);
        assert_eq!(warning_for(&elf(b"")), None);
        assert_eq!(warning_for(b"#!/bin/sh\n\0liboshmem.so"), None, "scripts are not ELF");
    }

    #[test]
    fn a_real_program_of_oneside_gets_no_warning() {
        assert_eq!(warning(&std::env::current_exe().unwrap()), None);
        assert_eq!(warning(Path::new("/nonexistent")), None);
    }
}
