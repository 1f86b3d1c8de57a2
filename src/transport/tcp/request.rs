//! The TCP data path's request format: a fixed 24-byte little-endian header,
//! followed by the payload for a put or the compare operand of an atomic.
//! Binary rather than postcard, because it is on the hot path and has
//! exactly four shapes.
//!
//! ```text
//! op:u32  len:u32  offset:u64  arg:u64
//! PUT     bytes    heap offset  -          + `len` payload bytes
//! GET     bytes    heap offset  -          → `len` bytes back
//! QUIET   0        0            token      → 8-byte token back, after every earlier request
//! ATOMIC  code     heap offset  operand    + 8-byte compare; → 8-byte old value if fetching
//! ```
//!
//! An atomic's `code` packs the operation (bits 0–7), the width in bytes
//! (bits 8–15) and whether the old value is wanted (bit 16).

pub const HEADER_BYTES: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Put { offset: u64, len: u32 },
    Get { offset: u64, len: u32 },
    Quiet { token: u64 },
    Atomic { offset: u64, code: u32, operand: u64 },
}

/// Bytes that follow an atomic's header: its compare operand.
pub const ATOMIC_TAIL: usize = 8;

const PUT: u32 = 1;
const GET: u32 = 2;
const QUIET: u32 = 4;
const ATOMIC: u32 = 5;

/// Packs an atomic's operation, width and fetch flag into a request code.
pub fn atomic_code(amo: &crate::transport::amo::Amo) -> u32 {
    u32::from(amo.op.code()) | (amo.width.bytes() as u32) << 8 | u32::from(amo.fetch) << 16
}

/// Unpacks a request code into an atomic (operands filled in by the caller); `None` if invalid.
pub fn atomic_from_code(code: u32, operand: u64, compare: u64) -> Option<crate::transport::amo::Amo> {
    use crate::transport::amo::{Amo, AmoOp, Width};
    let width = match (code >> 8) & 0xff {
        4 => Width::W32,
        8 => Width::W64,
        _ => return None,
    };
    Some(Amo {
        op: AmoOp::from_code((code & 0xff) as u8)?,
        width,
        operand,
        compare,
        fetch: code & (1 << 16) != 0,
    })
}

impl Request {
    pub fn encode(self) -> [u8; HEADER_BYTES] {
        let (op, len, offset, arg) = match self {
            Request::Put { offset, len } => (PUT, len, offset, 0),
            Request::Get { offset, len } => (GET, len, offset, 0),
            Request::Quiet { token } => (QUIET, 0, 0, token),
            Request::Atomic { offset, code, operand } => (ATOMIC, code, offset, operand),
        };
        let mut header = [0u8; HEADER_BYTES];
        header[0..4].copy_from_slice(&op.to_le_bytes());
        header[4..8].copy_from_slice(&len.to_le_bytes());
        header[8..16].copy_from_slice(&offset.to_le_bytes());
        header[16..24].copy_from_slice(&arg.to_le_bytes());
        header
    }

    /// `None` for an unknown operation.
    pub fn decode(header: &[u8; HEADER_BYTES]) -> Option<Request> {
        let word = |range: std::ops::Range<usize>| u64::from_le_bytes(header[range].try_into().expect("8 bytes"));
        let op = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
        let (offset, arg) = (word(8..16), word(16..24));
        match op {
            PUT => Some(Request::Put { offset, len }),
            GET => Some(Request::Get { offset, len }),
            QUIET => Some(Request::Quiet { token: arg }),
            ATOMIC => Some(Request::Atomic {
                offset,
                code: len,
                operand: arg,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_unknown_ops_are_refused() {
        for r in [
            Request::Put {
                offset: 1 << 40,
                len: 7,
            },
            Request::Get {
                offset: 64,
                len: u32::MAX,
            },
            Request::Quiet { token: 5 },
            Request::Atomic {
                offset: 8,
                code: 0x1_0803,
                operand: 42,
            },
        ] {
            assert_eq!(Request::decode(&r.encode()), Some(r));
        }
        let mut bad = Request::Quiet { token: 0 }.encode();
        bad[0] = 9;
        assert_eq!(Request::decode(&bad), None);
    }

    #[test]
    fn atomic_codes_round_trip_and_bad_widths_are_refused() {
        use crate::transport::amo::{Amo, AmoOp, Width};
        let amo = Amo {
            op: AmoOp::CompareSwap,
            width: Width::W32,
            operand: 7,
            compare: 3,
            fetch: true,
        };
        assert_eq!(atomic_from_code(atomic_code(&amo), 7, 3), Some(amo));
        assert_eq!(atomic_from_code(0x0203, 0, 0), None, "2-byte atomics do not exist");
        assert_eq!(atomic_from_code(0x0809, 0, 0), None, "nor does operation 9");
    }
}
