//! How messages name a process of the job: "rank" for Rust programs,
//! "PE" for programs that use the C API (OpenSHMEM's word, also what
//! shmem4py users read), and job sizes written for people ("the job has 2
//! PEs (0 to 1)") rather than as Rust ranges.
//!
//! The C API switches the vocabulary once, at its first call
//! ([`speak_of_pes`]); everything that formats a message reads it.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

static PES: AtomicBool = AtomicBool::new(false);

/// Messages from now on call processes "PE", as OpenSHMEM does: the C API
/// calls this before anything can fail.
#[doc(hidden)]
pub fn speak_of_pes() {
    PES.store(true, Ordering::Relaxed);
}

/// Whether the C API is in use (it switched the vocabulary).
pub(crate) fn speaks_of_pes() -> bool {
    pes()
}

fn pes() -> bool {
    PES.load(Ordering::Relaxed)
}

/// "rank" or "PE".
pub(crate) fn noun() -> &'static str {
    noun_in(pes())
}

fn noun_in(pes: bool) -> &'static str {
    match pes {
        true => "PE",
        false => "rank",
    }
}

/// The call that allocates symmetric memory, in the caller's language.
pub(crate) fn heap_call() -> &'static str {
    match pes() {
        true => "shmem_malloc",
        false => "World::alloc",
    }
}

/// One process by number: `rank 3` or `PE 3`.
pub(crate) struct Who(usize);

/// [`Who`] of a field (thiserror hands fields over by reference).
pub(crate) fn who(rank: &usize) -> Who {
    Who(*rank)
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A negative number from C (PE -1) arrives wrapped to a huge one:
        // it is said as the program wrote it.
        match isize::try_from(self.0) {
            Ok(_) => write!(f, "{} {}", noun(), self.0),
            Err(_) => write!(f, "{} {}", noun(), self.0 as isize),
        }
    }
}

/// The size of a job in words: "2 PEs (0 to 1)", "1 rank (0)", "no ranks".
pub(crate) fn members(size: &usize) -> String {
    members_in(*size, pes())
}

fn members_in(size: usize, pes: bool) -> String {
    let noun = noun_in(pes);
    match size {
        0 => format!("no {noun}s"),
        1 => format!("1 {noun} (0)"),
        n => format!("{n} {noun}s (0 to {})", n - 1),
    }
}

/// What a caller may pass as a target, as the caller's language says it:
/// "0 to shmem_n_pes()-1" in C, "0 to world.size()-1" in Rust.
pub(crate) fn valid_targets(size: &usize) -> String {
    valid_targets_in(*size, pes())
}

fn valid_targets_in(size: usize, pes: bool) -> String {
    let count = match pes {
        true => "shmem_n_pes()",
        false => "World::size()",
    };
    format!("0 to {} ({count} - 1)", size.saturating_sub(1))
}

/// A size for people: "512 bytes", "64 KiB", "1.5 GiB" (binary units,
/// one decimal when it is not whole).
pub(crate) fn bytes(n: &usize) -> String {
    let n = *n as f64;
    let units = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    match units.iter().find(|&&(_, shift)| n >= (1u64 << shift) as f64) {
        None => format!("{n} bytes"),
        Some(&(unit, shift)) => {
            let v = n / (1u64 << shift) as f64;
            match v.fract() == 0.0 {
                true => format!("{v} {unit}"),
                false => format!("{v:.1} {unit}"),
            }
        }
    }
}

/// How to raise the heap's cap, in the caller's words.
pub(crate) fn heap_cap_setting() -> &'static str {
    match pes() {
        true => "SHMEM_SYMMETRIC_SIZE (or ONESIDE_HEAP_SIZE, rlaunch --heap-size)",
        false => "ONESIDE_HEAP_SIZE (or rlaunch --heap-size)",
    }
}

/// `n` as an ordinal: "1st", "2nd", "3rd", "11th", "40008th".
pub(crate) fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ordinals_read_as_english() {
        let said: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 103, 111, 40008]
            .map(super::ordinal)
            .into();
        assert_eq!(
            said,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "103rd", "111th", "40008th"]
        );
    }

    use super::*;

    #[test]
    fn byte_counts_read_in_binary_units() {
        let said: Vec<String> = [512, 65536, 1536 << 20, 1 << 30, 3 << 40].iter().map(bytes).collect();
        assert_eq!(said, ["512 bytes", "64 KiB", "1.5 GiB", "1 GiB", "3 TiB"]);
    }

    #[test]
    fn sizes_read_as_words_in_either_vocabulary() {
        assert_eq!(members_in(2, false), "2 ranks (0 to 1)");
        assert_eq!(members_in(1, false), "1 rank (0)");
        assert_eq!(members_in(0, true), "no PEs");
        assert_eq!(members_in(2, true), "2 PEs (0 to 1)");
        assert_eq!(valid_targets_in(4, false), "0 to 3 (World::size() - 1)");
        assert_eq!(valid_targets_in(2, true), "0 to 1 (shmem_n_pes() - 1)");
        assert_eq!(valid_targets_in(1, true), "0 to 0 (shmem_n_pes() - 1)");
    }
}
