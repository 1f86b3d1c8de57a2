//! Where an access was made, as a number that can cross to another PE: a
//! Rust caller's `Location` or a C return address, each as an offset in
//! the loaded object (executable or library) that holds it, with that
//! object's place in the load order. Every PE of a job runs the same
//! program, so a PE reading another's site finds the same object at the
//! same place in its own load order; only a report turns it into words
//! (`describe`), never the hot path.
//!
//! A C call's site is the first return address outside this library
//! (`crate::site::c_caller_pc`).

use crate::site::{loaded_objects as objects, LoadedObject as Object};
use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const RUST: u64 = 1 << 62;
const C: u64 = 2 << 62;
const OFFSET: u64 = (1 << 48) - 1;

static OBJECTS: Mutex<Vec<Object>> = Mutex::new(Vec::new());

/// The object holding `addr` and its place, refreshing the list once on
/// a miss (a library loaded since).
fn locate(addr: usize) -> Option<(usize, Object)> {
    let mut known = crate::sync::lock(&OBJECTS);
    let find = |list: &[Object]| {
        list.iter()
            .enumerate()
            .find(|(_, o)| o.lo <= addr && addr < o.hi)
            .map(|(i, o)| (i, o.clone()))
    };
    if let Some(found) = find(&known) {
        return Some(found);
    }
    *known = objects();
    find(&known)
}

fn encode(tag: u64, addr: usize) -> u64 {
    match locate(addr) {
        Some((index, o)) => tag | ((index as u64 & 0x3fff) << 48) | ((addr - o.bias) as u64 & OFFSET),
        None => 0,
    }
}

/// Caches the codes of the sites seen, so each is located once.
static CODES: Mutex<Option<HashMap<u64, u64>>> = Mutex::new(None);

/// A Rust caller's site as the hot path keeps it (its `Location`'s address).
#[inline]
pub(crate) fn raw_rust(at: &'static Location<'static>) -> u64 {
    RUST | at as *const Location<'static> as u64
}

/// A C program's site as the hot path keeps it: a return address into it.
#[inline]
pub(crate) fn raw_c(pc: usize) -> u64 {
    match pc {
        0 => 0,
        pc => C | pc as u64,
    }
}

/// The last sites coded, by a hash of the raw site: a sequence lock each
/// (odd while written), the raw site and its code, read without a lock.
struct Recent {
    seq: AtomicU64,
    raw: AtomicU64,
    code: AtomicU64,
}

static RECENT: [Recent; 64] = [const {
    Recent {
        seq: AtomicU64::new(0),
        raw: AtomicU64::new(0),
        code: AtomicU64::new(0),
    }
}; 64];

/// A kept site as a code another PE can read (0 when unknown).
pub(crate) fn code(raw: u64) -> u64 {
    if raw == 0 {
        return 0;
    }
    let recent = &RECENT[((raw ^ (raw >> 6) ^ (raw >> 17)) % 64) as usize];
    let seq = recent.seq.load(Ordering::Acquire);
    if seq.is_multiple_of(2) && recent.raw.load(Ordering::Relaxed) == raw {
        let code = recent.code.load(Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Acquire);
        if recent.seq.load(Ordering::Relaxed) == seq && code != 0 {
            return code;
        }
    }
    let code = coded(raw);
    // Cached when no other thread writes this entry now; else not.
    if seq.is_multiple_of(2)
        && recent
            .seq
            .compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    {
        recent.raw.store(raw, Ordering::Relaxed);
        recent.code.store(code, Ordering::Relaxed);
        recent.seq.store(seq + 2, Ordering::Release);
    }
    code
}

fn coded(raw: u64) -> u64 {
    let mut codes = crate::sync::lock(&CODES);
    let codes = codes.get_or_insert_with(HashMap::new);
    *codes
        .entry(raw)
        .or_insert_with(|| encode(raw & (3 << 62), (raw & !(3 << 62)) as usize))
}

/// The return address of this thread's C caller (`crate::site`'s).
pub(crate) fn c_caller_pc() -> usize {
    crate::site::c_caller_pc()
}

/// Sites already put in words, by code.
static WORDS: Mutex<Option<HashMap<u64, String>>> = Mutex::new(None);

/// A site in words: `file:line:col` for Rust, `file:line` (or the
/// function) for C; empty when unknown.
pub(crate) fn describe(code: u64) -> String {
    if code == 0 {
        return String::new();
    }
    if let Some(known) = crate::sync::lock(&WORDS).get_or_insert_with(HashMap::new).get(&code) {
        return known.clone();
    }
    let words = resolve(code).unwrap_or_default();
    crate::sync::lock(&WORDS)
        .get_or_insert_with(HashMap::new)
        .insert(code, words.clone());
    words
}

fn resolve(code: u64) -> Option<String> {
    let index = ((code >> 48) & 0x3fff) as usize;
    let offset = (code & OFFSET) as usize;
    let object = {
        let mut known = crate::sync::lock(&OBJECTS);
        if known.len() <= index {
            *known = objects();
        }
        known.get(index)?.clone()
    };
    let addr = object.bias + offset;
    if addr < object.lo || addr >= object.hi {
        return None;
    }
    match code & (3 << 62) {
        RUST => {
            // SAFETY: every PE runs the same program, so the same object
            // holds a `Location` at the same offset here (checked to lie
            // inside the object); `Location`s live for the whole run.
            let at = unsafe { &*(addr as *const Location<'static>) };
            Some(format!("{}:{}:{}", at.file(), at.line(), at.column()))
        }
        C => Some(c_words(&object, addr)),
        _ => None,
    }
}

/// A C return address in words: the call's line from `addr2line` (the
/// program's debug information), else its function from the symbol table.
/// A call inlined from `shmem.h` (its direct paths) is named by the line
/// that called the inline function.
fn c_words(object: &Object, addr: usize) -> String {
    let file = match object.path.as_str() {
        "" => std::fs::read_link("/proc/self/exe")
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        path => path.to_string(),
    };
    // The call is the instruction before the return address.
    let vaddr = addr - 1 - object.bias;
    let out = std::process::Command::new("addr2line")
        .args(["-f", "-i", "-C", "-e", &file, &format!("{vaddr:#x}")])
        .stderr(std::process::Stdio::null())
        .output();
    let lines: Vec<String> = match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    pick(&lines).unwrap_or_else(|| {
        let name = file.rsplit_once('/').map_or(file.as_str(), |(_, n)| n);
        format!("in {name} at {vaddr:#x}")
    })
}

/// The place in `addr2line -f -i` output (function and `file:line`
/// lines, innermost inlined frame first): the first frame outside the
/// OpenSHMEM headers, as `file:line`, or its function without line tables.
fn pick(lines: &[String]) -> Option<String> {
    let frames: Vec<(&str, &str)> = lines
        .chunks(2)
        .filter_map(|c| Some((c.first()?.as_str(), c.get(1)?.as_str())))
        .collect();
    let header = |at: &str| ["/shmem.h:", "/pshmem.h:", "/shmemx.h:"].iter().any(|h| at.contains(h));
    let (function, at) = frames.iter().find(|(_, at)| !header(at)).or(frames.last())?;
    if at.starts_with("??") {
        return (*function != "??").then(|| format!("in {function} (build with -g for its file:line)"));
    }
    let at = at.split(" (discriminator").next().unwrap_or(at);
    let at = at.rsplit_once('/').map_or(at, |(_, name)| name);
    // Line 0: the optimizer merged this call with another (two branches'
    // identical calls made one), so no single line is the call's.
    if let Some(file) = at.strip_suffix(":?") {
        return Some(format!(
            "{file}, in {function} (the optimizer merged this call with another: build with -O0 for its line)"
        ));
    }
    Some(at.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_site_round_trips_through_its_code() {
        let at = Location::caller();
        let code = code(raw_rust(at));
        assert_ne!(code, 0);
        assert_eq!(describe(code), format!("{}:{}:{}", at.file(), at.line(), at.column()));
    }

    #[test]
    fn a_call_inlined_from_shmem_h_is_named_by_its_caller() {
        let out: Vec<String> = [
            "oneside_direct_double_put",
            "/x/include/shmem.h:2300",
            "main",
            "/tmp/heat.c:17 (discriminator 2)",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(pick(&out).as_deref(), Some("heat.c:17"));
        let merged: Vec<String> = ["main", "/tmp/put.c:?"].map(String::from).to_vec();
        assert_eq!(
            pick(&merged).as_deref(),
            Some("put.c, in main (the optimizer merged this call with another: build with -O0 for its line)")
        );
        let plain: Vec<String> = ["main", "??:0"].map(String::from).to_vec();
        assert_eq!(
            pick(&plain).as_deref(),
            Some("in main (build with -g for its file:line)")
        );
    }

    #[test]
    fn no_site_is_no_words() {
        assert_eq!(describe(0), "");
        assert_eq!(code(raw_c(0)), 0);
    }
}
