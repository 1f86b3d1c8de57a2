//! The shared libraries an ELF executable asks for by name (its `DT_NEEDED`
//! entries), read from the file's headers with a few positioned reads: the
//! program headers, the dynamic section and the names themselves. Nothing
//! else of the file is read, so the cost does not grow with its size (a
//! debug build of a Rust program is tens of MiB). 32- and 64-bit, either
//! byte order. Anything that is not a dynamic ELF file gives no names.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
/// Bounds on what a header may ask us to read: no real file comes near.
const MAX_PROGRAM_HEADERS: u64 = 4096;
const MAX_DYNAMIC_BYTES: u64 = 1 << 20;
const MAX_NAME: usize = 4096;

/// The names in `program`'s `DT_NEEDED` entries, in order; empty when it is
/// not a dynamically linked ELF file or cannot be read.
pub fn needed(program: &Path) -> Vec<String> {
    File::open(program)
        .ok()
        .and_then(|file| Elf::open(&file).and_then(|elf| elf.needed()))
        .unwrap_or_default()
}

/// One open file and how to read its header fields.
struct Elf<'f> {
    file: &'f File,
    wide: bool,
    big_endian: bool,
}

/// A loadable segment: where its bytes lie in the file and in memory.
struct Segment {
    vaddr: u64,
    offset: u64,
    filesz: u64,
}

impl<'f> Elf<'f> {
    fn open(file: &'f File) -> Option<Self> {
        let mut ident = [0u8; 6];
        file.read_exact_at(&mut ident, 0).ok()?;
        if &ident[..4] != b"\x7fELF" {
            return None;
        }
        let wide = match ident[4] {
            1 => false,
            2 => true,
            _ => return None,
        };
        let big_endian = match ident[5] {
            1 => false,
            2 => true,
            _ => return None,
        };
        Some(Elf { file, wide, big_endian })
    }

    /// An unsigned field of `len` bytes (2, 4 or 8) at `at` in `bytes`.
    fn field(&self, bytes: &[u8], at: usize, len: usize) -> Option<u64> {
        let raw = bytes.get(at..at + len)?;
        let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
        Some(if self.big_endian {
            raw.iter().fold(0, fold)
        } else {
            raw.iter().rev().fold(0, fold)
        })
    }

    /// An address-sized field (4 or 8 bytes).
    fn word(&self, bytes: &[u8], at: usize) -> Option<u64> {
        self.field(bytes, at, if self.wide { 8 } else { 4 })
    }

    fn read(&self, offset: u64, len: u64) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; usize::try_from(len).ok()?];
        self.file.read_exact_at(&mut buf, offset).ok()?;
        Some(buf)
    }

    fn needed(&self) -> Option<Vec<String>> {
        // e_phoff, e_phentsize and e_phnum, where each class keeps them.
        let header = self.read(0, if self.wide { 64 } else { 52 })?;
        let (phoff, phentsize, phnum) = if self.wide {
            (
                self.word(&header, 0x20)?,
                self.field(&header, 0x36, 2)?,
                self.field(&header, 0x38, 2)?,
            )
        } else {
            (
                self.word(&header, 0x1c)?,
                self.field(&header, 0x2a, 2)?,
                self.field(&header, 0x2c, 2)?,
            )
        };
        if phnum > MAX_PROGRAM_HEADERS || phentsize < if self.wide { 56 } else { 32 } {
            return None;
        }
        let table = self.read(phoff, phentsize * phnum)?;
        let mut loads = Vec::new();
        let mut dynamic = None;
        for entry in table.chunks_exact(usize::try_from(phentsize).ok()?) {
            let kind = self.field(entry, 0, 4)?;
            // p_offset, p_vaddr and p_filesz, where each class keeps them.
            let (offset, vaddr, filesz) = if self.wide {
                (self.word(entry, 8)?, self.word(entry, 16)?, self.word(entry, 32)?)
            } else {
                (self.word(entry, 4)?, self.word(entry, 8)?, self.word(entry, 16)?)
            };
            match u32::try_from(kind).ok()? {
                PT_LOAD => loads.push(Segment { vaddr, offset, filesz }),
                PT_DYNAMIC => dynamic = Some((offset, filesz)),
                _ => {}
            }
        }
        let Some((offset, size)) = dynamic else {
            return Some(Vec::new()); // statically linked
        };
        let dynamic = self.read(offset, size.min(MAX_DYNAMIC_BYTES))?;
        let entry_len = if self.wide { 16 } else { 8 };
        let mut names = Vec::new();
        let mut strtab = None;
        for entry in dynamic.chunks_exact(entry_len) {
            let (tag, value) = (self.word(entry, 0)?, self.word(entry, entry_len / 2)?);
            match tag {
                DT_NULL => break,
                DT_NEEDED => names.push(value),
                DT_STRTAB => strtab = Some(value),
                _ => {}
            }
        }
        // DT_STRTAB is an address: find the file offset that holds it.
        let strtab = strtab?;
        let base = loads
            .iter()
            .find(|s| s.vaddr <= strtab && strtab < s.vaddr.saturating_add(s.filesz))
            .map(|s| strtab - s.vaddr + s.offset)?;
        names.into_iter().map(|at| self.name(base.checked_add(at)?)).collect()
    }

    /// The NUL-terminated name at `offset`.
    fn name(&self, offset: u64) -> Option<String> {
        let mut buf = vec![0u8; MAX_NAME];
        let got = self.file.read_at(&mut buf, offset).ok()?;
        let end = buf[..got].iter().position(|&b| b == 0)?;
        String::from_utf8(buf[..end].to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_needs_libc_and_nothing_of_openshmem() {
        let names = needed(&std::env::current_exe().unwrap());
        assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
        assert!(!names.iter().any(|n| n.contains("shmem")), "{names:?}");
    }

    #[test]
    fn a_system_program_is_read_too() {
        let sh = needed(Path::new("/bin/sh"));
        assert!(sh.iter().any(|n| n.starts_with("libc.so")), "{sh:?}");
    }

    /// A minimal dynamic ELF file of either class and byte order: a header,
    /// a loadable segment over the whole file (at address 0x1000), and a
    /// dynamic section naming `libs`.
    fn synthetic(wide: bool, big_endian: bool, libs: &[&str]) -> Vec<u8> {
        let put = |buf: &mut Vec<u8>, at: usize, len: usize, value: u64| {
            let bytes = value.to_be_bytes();
            let mut field = bytes[8 - len..].to_vec();
            if !big_endian {
                field.reverse();
            }
            buf[at..at + len].copy_from_slice(&field);
        };
        let (word, header, phentsize) = if wide { (8, 64, 56) } else { (4, 52, 32) };
        let phoff = header;
        let dynoff = phoff + 2 * phentsize;
        let entries = libs.len() + 2; // the names, DT_STRTAB, DT_NULL
        let stroff = dynoff + entries * 2 * word;
        let mut strtab = vec![0u8]; // offset 0 is the empty name
        let mut at = Vec::new();
        for lib in libs {
            at.push(strtab.len() as u64);
            strtab.extend_from_slice(lib.as_bytes());
            strtab.push(0);
        }
        let total = stroff + strtab.len();
        let mut f = vec![0u8; total];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = if wide { 2 } else { 1 };
        f[5] = if big_endian { 2 } else { 1 };
        let vaddr = 0x1000u64;
        if wide {
            put(&mut f, 0x20, 8, phoff as u64);
            put(&mut f, 0x36, 2, phentsize as u64);
            put(&mut f, 0x38, 2, 2);
        } else {
            put(&mut f, 0x1c, 4, phoff as u64);
            put(&mut f, 0x2a, 2, phentsize as u64);
            put(&mut f, 0x2c, 2, 2);
        }
        let (o_off, o_vaddr, o_filesz) = if wide { (8, 16, 32) } else { (4, 8, 16) };
        for (i, (kind, offset, size)) in [(PT_LOAD, 0, total), (PT_DYNAMIC, dynoff, stroff - dynoff)]
            .into_iter()
            .enumerate()
        {
            let ph = phoff + i * phentsize;
            put(&mut f, ph, 4, u64::from(kind));
            put(&mut f, ph + o_off, word, offset as u64);
            put(&mut f, ph + o_vaddr, word, vaddr + offset as u64);
            put(&mut f, ph + o_filesz, word, size as u64);
        }
        let tags = at
            .iter()
            .map(|&a| (DT_NEEDED, a))
            .chain([(DT_STRTAB, vaddr + stroff as u64), (DT_NULL, 0)]);
        for (i, (tag, value)) in tags.enumerate() {
            put(&mut f, dynoff + i * 2 * word, word, tag);
            put(&mut f, dynoff + i * 2 * word + word, word, value);
        }
        f[stroff..].copy_from_slice(&strtab);
        f
    }

    #[test]
    fn both_classes_and_both_byte_orders_are_read() {
        let dir = std::env::temp_dir().join(format!("elf-needed-{}-classes", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("prog");
        let libs = ["liboshmem.so.40", "libc.so.6"];
        for wide in [false, true] {
            for big_endian in [false, true] {
                std::fs::write(&file, synthetic(wide, big_endian, &libs)).unwrap();
                assert_eq!(needed(&file), libs, "wide {wide}, big-endian {big_endian}");
                // Cut short inside the names: nothing, rather than a guess.
                let whole = synthetic(wide, big_endian, &libs);
                std::fs::write(&file, &whole[..whole.len() - 4]).unwrap();
                assert!(
                    needed(&file).is_empty(),
                    "wide {wide}, big-endian {big_endian}, cut short"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn what_is_not_elf_gives_no_names() {
        assert!(needed(Path::new("/nonexistent")).is_empty());
        let dir = std::env::temp_dir().join(format!("elf-needed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("script");
        std::fs::write(&script, "#!/bin/sh\n\0liboshmem.so\0").unwrap();
        assert!(needed(&script).is_empty());
        // A header that claims more than the file holds gives nothing either.
        let mut short = b"\x7fELF\x02\x01".to_vec();
        short.resize(64, 0xff);
        std::fs::write(&script, &short).unwrap();
        assert!(needed(&script).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
