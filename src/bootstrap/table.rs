//! A host's card table file: every rank's transport card, written once per
//! host by the rank the launcher picks, then read by the host's other
//! ranks. So the launcher sends the O(N) table once per host, not once per
//! rank, and what a host holds about the job is one shared file.
//!
//! The writer renames a finished temporary file into place, so a reader
//! never sees half a table; it removes the file after the wire-up barrier,
//! when every reader has read it (the launcher sweeps it after a crash).
//! Readers map the file rather than copy it: the host's ranks then share
//! its pages instead of each zeroing and filling its own.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::ops::Deref;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Writes `table` at `path`, readable by this user only.
pub fn publish(path: &str, table: &[u8]) -> io::Result<PathBuf> {
    let path = PathBuf::from(path);
    let partial = path.with_extension("partial");
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut file| file.write_all(table))
        .and_then(|()| std::fs::rename(&partial, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    Ok(path)
}

/// A card table: received inline, or mapped from the host's file.
pub enum TableBytes {
    Inline(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Deref for TableBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            TableBytes::Inline(bytes) => bytes,
            TableBytes::Mapped(map) => map,
        }
    }
}

impl AsRef<[u8]> for TableBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// Maps the table another rank of this host published.
pub fn read(path: &str) -> io::Result<TableBytes> {
    let file = File::open(Path::new(path))?;
    // SAFETY: the writer renamed the finished file into place and never
    // writes it again, and removing it leaves the mapping intact; only
    // another process of this user truncating it could break the mapping.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(TableBytes::Mapped(map))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_published_table_reads_back_whole() {
        let path = format!("/dev/shm/oneside-test-table-{}", std::process::id());
        let table = vec![7u8; 100_000];
        let written = super::publish(&path, &table).unwrap();
        assert_eq!(&*super::read(&path).unwrap(), &table[..]);
        assert!(super::publish(&path, &table).is_ok(), "a rename replaces");
        std::fs::remove_file(written).unwrap();
        assert!(super::read(&path).is_err());
    }
}
