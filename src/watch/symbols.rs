//! Names of the program's global variables, for hang reports: the data
//! objects (`STT_OBJECT`) of the executable's ELF symbol table, read from
//! `/proc/self/exe` once, when a report first needs one. A stripped
//! executable has none, and the report gives the address instead.

use std::sync::OnceLock;

/// One global: where it starts (relative to the executable's load base
/// when it is position independent), its size and its name.
#[derive(Debug, Clone, PartialEq)]
struct Global {
    start: u64,
    size: u64,
    name: String,
}

/// The executable's globals, sorted by start, and whether their values
/// are relative to its load base (`ET_DYN`).
struct Table {
    globals: Vec<Global>,
    relative: bool,
}

static TABLE: OnceLock<Option<Table>> = OnceLock::new();

/// The global variable holding `addr`, the byte offset of `addr` inside
/// it, and its size: `("inbox", 0, 8)`.
pub(crate) fn global_at(addr: usize) -> Option<(String, usize, usize)> {
    let table = TABLE
        .get_or_init(|| std::fs::read("/proc/self/exe").ok().and_then(|elf| read_table(&elf)))
        .as_ref()?;
    let key = match table.relative {
        true => (addr as u64).checked_sub(load_base(addr)?)?,
        false => addr as u64,
    };
    let i = table.globals.partition_point(|g| g.start <= key).checked_sub(1)?;
    let g = &table.globals[i];
    (key < g.start + g.size.max(1)).then(|| (g.name.clone(), (key - g.start) as usize, g.size as usize))
}

/// The load base of the object that holds `addr` (`dladdr`'s `dli_fbase`).
fn load_base(addr: usize) -> Option<u64> {
    // SAFETY: Dl_info is plain pointers, for which all-zero is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and writes `info`.
    match unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } {
        0 => None,
        _ => Some(info.dli_fbase as u64),
    }
}

/// Reads the data objects of a 64-bit little-endian ELF file's `.symtab`
/// (or `.dynsym` when it has none).
fn read_table(elf: &[u8]) -> Option<Table> {
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let relative = u16_at(elf, 0x10)? == 3; // ET_DYN
    let (shoff, shentsize, shnum) = (
        u64_at(elf, 0x28)? as usize,
        u16_at(elf, 0x3a)? as usize,
        u16_at(elf, 0x3c)?,
    );
    let section = |i: usize| -> Option<(u32, usize, usize, usize)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        Some((
            u32_at(elf, h + 4)?,
            u64_at(elf, h + 24)? as usize,
            u64_at(elf, h + 32)? as usize,
            u32_at(elf, h + 40)? as usize,
        ))
    };
    let sections: Vec<_> = (0..shnum as usize).filter_map(section).collect();
    const SYMTAB: u32 = 2;
    const DYNSYM: u32 = 11;
    let symtab = sections
        .iter()
        .find(|s| s.0 == SYMTAB)
        .or_else(|| sections.iter().find(|s| s.0 == DYNSYM))?;
    let (_, offset, size, link) = *symtab;
    let (_, strings, strings_len, _) = *sections.get(link)?;
    let strings = elf.get(strings..strings.checked_add(strings_len)?)?;
    let mut globals = Vec::new();
    for sym in elf.get(offset..offset.checked_add(size)?)?.chunks_exact(24) {
        const OBJECT: u8 = 1;
        if sym[4] & 0xf != OBJECT || u16_at(sym, 6)? == 0 {
            continue;
        }
        let name_at = u32_at(sym, 0)? as usize;
        let name = strings.get(name_at..)?.split(|&b| b == 0).next()?;
        if name.is_empty() {
            continue;
        }
        globals.push(Global {
            start: u64_at(sym, 8)?,
            size: u64_at(sym, 16)?,
            name: String::from_utf8_lossy(name).into_owned(),
        });
    }
    globals.sort_by_key(|g| g.start);
    Some(Table { globals, relative })
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    static NAMED_FOR_THE_TEST: [u64; 4] = [1, 2, 3, 4];

    #[test]
    fn this_test_binarys_own_global_is_found_by_any_of_its_bytes() {
        let start = std::ptr::addr_of!(NAMED_FOR_THE_TEST) as usize;
        let (name, offset, size) = global_at(start + 17).expect("the test binary has a symbol table");
        assert!(name.contains("NAMED_FOR_THE_TEST"), "{name}");
        assert_eq!((offset, size), (17, 32));
        assert_eq!(global_at(start).map(|g| g.1), Some(0));
    }

    #[test]
    fn what_is_not_elf_has_no_table() {
        assert!(read_table(b"#!/bin/sh\n").is_none());
        assert!(read_table(b"\x7fELF\x02\x01").is_none());
    }
}
