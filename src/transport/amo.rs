//! What every transport knows of an atomic: an operation on one aligned
//! 32- or 64-bit word, its operands as raw bits, and whether the old value is
//! wanted. [`apply`] carries one out with CPU atomics; shared memory and the
//! TCP progress engine both use it, so their atomics on a word are atomic
//! with respect to each other.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// How a signal word is updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalOp {
    /// Store the value.
    Set,
    /// Add the value.
    Add,
}

/// The operations a transport implements on a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmoOp {
    /// Read the word.
    Fetch,
    /// Store `operand`.
    Set,
    /// Store `operand`, return the old value.
    Swap,
    /// Store `operand` if the word equals `compare`; return the old value.
    CompareSwap,
    /// Wrapping add of `operand`.
    Add,
    And,
    Or,
    Xor,
}

impl AmoOp {
    pub(crate) const ALL: [AmoOp; 8] = [
        AmoOp::Fetch,
        AmoOp::Set,
        AmoOp::Swap,
        AmoOp::CompareSwap,
        AmoOp::Add,
        AmoOp::And,
        AmoOp::Or,
        AmoOp::Xor,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<AmoOp> {
        AmoOp::ALL.get(usize::from(code)).copied()
    }

    /// The new value of a word holding `old`, for the read-modify-write
    /// forms (what a compare-and-swap loop computes).
    pub fn combine(self, old: u64, operand: u64, compare: u64) -> u64 {
        match self {
            AmoOp::Fetch => old,
            AmoOp::Set | AmoOp::Swap => operand,
            AmoOp::CompareSwap if old == compare => operand,
            AmoOp::CompareSwap => old,
            AmoOp::Add => old.wrapping_add(operand),
            AmoOp::And => old & operand,
            AmoOp::Or => old | operand,
            AmoOp::Xor => old ^ operand,
        }
    }
}

/// Word width of an atomic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    W32,
    W64,
}

impl Width {
    pub fn bytes(self) -> usize {
        match self {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    /// Keeps only the bits of a value of this width.
    pub fn truncate(self, value: u64) -> u64 {
        match self {
            Width::W32 => value & 0xffff_ffff,
            Width::W64 => value,
        }
    }
}

/// One atomic, as it travels to a transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amo {
    pub op: AmoOp,
    pub width: Width,
    pub operand: u64,
    pub compare: u64,
    /// Whether the caller waits for the old value. A non-fetching atomic may
    /// complete later, at the next quiet.
    pub fetch: bool,
}

/// Applies `amo` to the word at `ptr` with a CPU atomic and returns its old value.
///
/// # Safety
/// `ptr` must be valid for reads and writes of `amo.width` bytes, aligned to
/// that width, and every concurrent access to the word must be atomic.
pub unsafe fn apply(ptr: *mut u8, amo: Amo) -> u64 {
    // Sequentially consistent, as OpenSHMEM atomics order with each other;
    // the Release half also publishes any data stored before a signal.
    const ORD: Ordering = Ordering::SeqCst;
    // One body for both widths: `$word` is the atomic, `$v`/`$c` the operands.
    macro_rules! on_word {
        ($word:expr, $v:expr, $c:expr) => {{
            let (word, v, c) = ($word, $v, $c);
            match amo.op {
                AmoOp::Fetch => word.load(ORD),
                AmoOp::Set => {
                    word.store(v, ORD);
                    0
                }
                AmoOp::Swap => word.swap(v, ORD),
                AmoOp::CompareSwap => word.compare_exchange(c, v, ORD, ORD).unwrap_or_else(|old| old),
                AmoOp::Add => word.fetch_add(v, ORD),
                AmoOp::And => word.fetch_and(v, ORD),
                AmoOp::Or => word.fetch_or(v, ORD),
                AmoOp::Xor => word.fetch_xor(v, ORD),
            }
        }};
    }
    match amo.width {
        Width::W64 => on_word!(
            // SAFETY: the caller's contract: valid, aligned to the width,
            // and only ever accessed atomically.
            unsafe { AtomicU64::from_ptr(ptr.cast()) },
            amo.operand,
            amo.compare
        ),
        Width::W32 => u64::from(on_word!(
            // SAFETY: as for the 64-bit word.
            unsafe { AtomicU32::from_ptr(ptr.cast()) },
            amo.operand as u32,
            amo.compare as u32
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for op in AmoOp::ALL {
            assert_eq!(AmoOp::from_code(op.code()), Some(op));
        }
        assert_eq!(AmoOp::from_code(8), None);
    }

    #[test]
    fn cpu_atomics_agree_with_combine_and_spare_the_neighbour() {
        for op in AmoOp::ALL {
            for width in [Width::W32, Width::W64] {
                let mut words = [0x1111_2222_3333_4444u64, 0x5555_6666_7777_8888];
                let (operand, compare) = (0x0f0f_0000_ffff_0001u64, 0x3333_4444);
                let before = words;
                let amo = Amo {
                    op,
                    width,
                    operand: width.truncate(operand),
                    compare,
                    fetch: true,
                };
                // SAFETY: a private, aligned array accessed by this thread only.
                let old = unsafe { apply(words.as_mut_ptr().cast(), amo) };
                let expect_old = width.truncate(before[0]);
                if op != AmoOp::Set {
                    assert_eq!(old, expect_old, "{op:?} {width:?}");
                }
                let new = width.truncate(op.combine(expect_old, amo.operand, compare));
                let mask = width.truncate(u64::MAX);
                assert_eq!(words[0] & mask, new, "{op:?} {width:?}");
                assert_eq!(
                    words[0] & !mask,
                    before[0] & !mask,
                    "{op:?} {width:?} clobbered its neighbour"
                );
                assert_eq!(words[1], before[1]);
            }
        }
    }
}
