//! Atomics through the provider. At start, the `fi_*atomicvalid` calls
//! say which (width, operation) pairs the provider does itself
//! ([`Support::probe`]). An atomic it does is one `fi_atomic`
//! (non-fetching, its operand in the bounce buffer), `fi_fetch_atomic` or `fi_compare_atomic`; one it does not
//! is a compare-and-swap loop on the same word, which is still atomic with
//! the provider's other atomics. A provider without compare-and-swap at a
//! width it cannot otherwise serve is refused at start, never given a
//! wrong answer.
//!
//! Some providers get some forms wrong ([`Quirks`]); those are issued in a
//! form that works, or refused with a clear error, by provider name.

use super::fabric::Object;
use super::sys::*;
use crate::transport::amo::{AmoOp, Width};
use crate::transport::fault::Fault;
use std::ffi::c_int;

/// The forms an atomic is issued in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `fi_atomic`: no result.
    Write,
    /// `fi_fetch_atomic`: the old value.
    Fetch,
    /// `fi_compare_atomic`: compare-and-swap, the old value.
    Compare,
}

/// libfabric's operation for one of ours, and the form it takes.
pub fn fi_op(op: AmoOp, fetch: bool) -> (c_int, Form) {
    let form = if fetch { Form::Fetch } else { Form::Write };
    match op {
        AmoOp::Fetch => (FI_ATOMIC_READ, Form::Fetch),
        AmoOp::Set => (FI_ATOMIC_WRITE, form),
        AmoOp::Swap => (FI_ATOMIC_WRITE, Form::Fetch),
        AmoOp::CompareSwap => (FI_CSWAP, Form::Compare),
        AmoOp::Add => (FI_SUM, form),
        AmoOp::And => (FI_BAND, form),
        AmoOp::Or => (FI_BOR, form),
        AmoOp::Xor => (FI_BXOR, form),
    }
}

pub fn datatype(width: Width) -> c_int {
    match width {
        Width::W32 => FI_UINT32,
        Width::W64 => FI_UINT64,
    }
}

/// What a provider is known to get wrong, found by running the exact
/// atomic tests (`examples/atomic_hammer`, tests-sos) over Debian's
/// libfabric 1.17.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// `fi_atomic` lands a wrong value at a peer (shm: the target applies
    /// an operand that is not ours), while `fi_fetch_atomic` is exact:
    /// every atomic takes the fetching form and drops the result.
    pub write_as_fetch: bool,
    /// A fetching or compare atomic crashes the provider inside
    /// `fi_cq_read` (udp;ofi_rxd, ofiwg/libfabric#11814): refused with
    /// this text instead.
    pub no_fetch: Option<&'static str>,
}

impl Quirks {
    /// The quirks of the provider named `provider` (e.g. "udp;ofi_rxd").
    pub fn of(provider: &str) -> Quirks {
        let core = provider.split(';').next().unwrap_or(provider);
        let layered = provider.split(';').nth(1);
        Quirks {
            write_as_fetch: core == "shm",
            no_fetch: (layered == Some("ofi_rxd")).then_some(
                "udp;ofi_rxd crashes in fetching atomics (ofiwg/libfabric#11814); \
                 use --ofi-provider 'tcp;ofi_rxm' for programs with fetching atomics, swaps or locks",
            ),
        }
    }
}

/// Which (width, op, fetch) the provider does natively.
#[derive(Debug, Clone)]
pub struct Support {
    /// Indexed by [`Support::slot`].
    native: [bool; 32],
}

impl Support {
    fn slot(width: Width, op: AmoOp, fetch: bool) -> usize {
        (usize::from(width == Width::W64) << 4) | (usize::from(op.code()) << 1) | usize::from(fetch)
    }

    /// Asks the endpoint about every pair; refuses a provider that could
    /// not do some atomic either natively or by a compare-and-swap loop.
    pub fn probe(ep: &Object<fid_ep>) -> Result<Support, Fault> {
        let mut native = [false; 32];
        for width in [Width::W32, Width::W64] {
            for op in AmoOp::ALL {
                for fetch in [false, true] {
                    let (fop, form) = fi_op(op, fetch);
                    let mut count = 0usize;
                    // SAFETY: the *valid calls through the live endpoint's
                    // atomic ops, with an out-parameter for the count.
                    let rc = unsafe {
                        let ops = &*(*ep.raw).atomic;
                        let valid = match form {
                            Form::Write => ops.writevalid,
                            Form::Fetch => ops.readwritevalid,
                            Form::Compare => ops.compwritevalid,
                        };
                        valid(ep.raw, datatype(width), fop, &mut count)
                    };
                    native[Self::slot(width, op, fetch)] = rc == 0 && count >= 1;
                }
            }
            if !native[Self::slot(width, AmoOp::CompareSwap, true)] {
                let missing: Vec<String> = AmoOp::ALL
                    .iter()
                    .flat_map(|&op| [(op, false), (op, true)])
                    .filter(|&(op, fetch)| !native[Self::slot(width, op, fetch)])
                    .map(|(op, fetch)| format!("{op:?}{}", if fetch { " (fetching)" } else { "" }))
                    .collect();
                if !missing.is_empty() {
                    return Err(format!(
                        "the provider cannot do {}-bit {} and has no compare-and-swap to do them with",
                        width.bytes() * 8,
                        missing.join(", ")
                    )
                    .into());
                }
            }
        }
        Ok(Support { native })
    }

    /// Whether the provider does this atomic itself.
    pub fn native(&self, width: Width, op: AmoOp, fetch: bool) -> bool {
        self.native[Self::slot(width, op, fetch)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_follow_the_provider_name() {
        assert_eq!(Quirks::of("tcp;ofi_rxm"), Quirks::default());
        assert!(Quirks::of("shm").write_as_fetch);
        assert!(Quirks::of("udp;ofi_rxd").no_fetch.is_some());
        assert!(!Quirks::of("udp;ofi_rxd").write_as_fetch);
        assert_eq!(Quirks::of("verbs;ofi_rxm"), Quirks::default());
    }
}
