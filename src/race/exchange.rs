//! How a phase's accesses reach the PE whose memory they touched: at the
//! barrier that ends the phase, each PE puts its records of every other
//! PE's memory into that PE's checking area, then the barrier completes
//! and orders them, then each PE reads what it was sent. The area has a
//! slot per sending PE and phase parity: a PE writes phase k's records
//! only after barrier k-1, which the reader of phase k-2's passed only
//! after reading them, so a slot is never written while it is read.

use super::check::{Access, Kind, Syncs};
use crate::links::Channel;
use crate::world::World;

/// Records per slot; more are merged, then cut (and the report says so).
pub(crate) const CAP: usize = 62;
const HEADER: usize = 64;
const RECORD: usize = 32;
pub(crate) const SLOT: usize = HEADER + CAP * RECORD;

/// The checking area's bytes for a job of `size` PEs.
pub(crate) fn area_bytes(size: usize) -> usize {
    2 * size * SLOT
}

/// What a slot's header says besides its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub phase: u64,
    pub count: u32,
    /// Records merged or cut to fit.
    pub squeezed: bool,
    pub syncs: Syncs,
    /// Where the sender's previous phase ended (its last barrier).
    pub began_at: u64,
}

fn slot_offset(area: usize, size: usize, phase: u64, from: usize) -> usize {
    area + ((phase as usize % 2) * size + from) * SLOT
}

/// A slot's bytes: the header, then the records.
pub(crate) fn encode(header: &Header, records: &[Access]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + records.len() * RECORD);
    out.extend_from_slice(&header.phase.to_le_bytes());
    out.extend_from_slice(&header.count.to_le_bytes());
    out.extend_from_slice(&u32::from(header.squeezed).to_le_bytes());
    out.extend_from_slice(&header.syncs.released.to_le_bytes());
    out.extend_from_slice(&header.syncs.issued.to_le_bytes());
    out.extend_from_slice(&header.syncs.acquired.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&header.began_at.to_le_bytes());
    out.resize(HEADER, 0);
    for a in records {
        out.extend_from_slice(&a.offset.to_le_bytes());
        out.extend_from_slice(&(a.len.min(u64::from(u32::MAX)) as u32).to_le_bytes());
        out.extend_from_slice(&a.seq.to_le_bytes());
        out.extend_from_slice(&a.site.to_le_bytes());
        out.extend_from_slice(&[a.kind.code(), a.op, u8::from(a.done_at_return), 0]);
        out.extend_from_slice(&[0; 4]);
    }
    out
}

fn word<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes[at..at + N].try_into().expect("in the slot")
}

/// Reads a slot of PE `from`'s records (`None` for another phase's).
pub(crate) fn decode(bytes: &[u8], phase: u64, from: u32) -> Option<(Header, Vec<Access>)> {
    let u32_at = |at| u32::from_le_bytes(word(bytes, at));
    let header = Header {
        phase: u64::from_le_bytes(word(bytes, 0)),
        count: u32_at(8).min(CAP as u32),
        squeezed: u32_at(12) != 0,
        syncs: Syncs {
            released: u32_at(16),
            issued: u32_at(20),
            acquired: u32_at(24),
        },
        began_at: u64::from_le_bytes(word(bytes, 32)),
    };
    if header.phase != phase {
        return None;
    }
    let records = (0..header.count as usize)
        .map(|i| {
            let r = &bytes[HEADER + i * RECORD..][..RECORD];
            Access {
                offset: u64::from_le_bytes(word(r, 0)),
                len: u64::from(u32::from_le_bytes(word(r, 8))),
                seq: u32::from_le_bytes(word(r, 12)),
                site: u64::from_le_bytes(word(r, 16)),
                kind: Kind::from_code(r[24]),
                op: r[25],
                done_at_return: r[26] != 0,
                pe: from,
            }
        })
        .collect();
    Some((header, records))
}

/// Makes `records` fit a slot: neighbours of one kind, operation and
/// sequence number merged (the first's site kept), then the rest cut: a
/// cut record can only hide a race, never invent one. Returns whether
/// anything changed.
pub(crate) fn squeeze(records: &mut Vec<Access>) -> bool {
    if records.len() <= CAP {
        return false;
    }
    records.sort_unstable_by_key(|a| (a.kind.code(), a.op, a.seq, a.done_at_return, a.offset));
    let mut merged: Vec<Access> = Vec::with_capacity(CAP);
    for a in records.drain(..) {
        match merged.last_mut() {
            Some(m)
                if (m.kind, m.op, m.seq, m.done_at_return) == (a.kind, a.op, a.seq, a.done_at_return)
                    && a.offset <= m.offset + m.len + 4096 =>
            {
                let end = (m.offset + m.len).max(a.offset + a.len);
                m.len = end - m.offset;
            }
            _ => merged.push(a),
        }
    }
    merged.truncate(CAP);
    *records = merged;
    true
}

/// Puts this PE's records of `target`'s memory into its slot there.
pub(crate) fn send(w: &World, area: usize, target: usize, header: &Header, records: &[Access]) -> crate::Result<()> {
    let bytes = encode(header, records);
    let at = slot_offset(area, w.size, header.phase, w.rank);
    w.links.copy_in(Channel::Default, target, at, &bytes)
}

/// Reads what PE `from` sent this PE for `phase`, from this PE's own area.
pub(crate) fn receive(w: &World, area: usize, phase: u64, from: usize) -> Option<(Header, Vec<Access>)> {
    let at = slot_offset(area, w.size, phase, from);
    // SAFETY: the slot lies in this PE's checking area, allocated at
    // start inside its heap; the barrier before this read completed every
    // put into it, and none comes until the next barrier.
    let bytes = unsafe { std::slice::from_raw_parts(w.own.heap_base().add(at), SLOT) };
    decode(bytes, phase, from as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(offset: u64) -> Access {
        Access {
            offset,
            len: 8,
            kind: Kind::Write,
            op: 3,
            done_at_return: false,
            seq: 2,
            site: 0xabc,
            pe: 1,
        }
    }

    #[test]
    fn a_slot_round_trips() {
        let header = Header {
            phase: 7,
            count: 2,
            squeezed: false,
            syncs: Syncs {
                released: 3,
                issued: 4,
                acquired: 1,
            },
            began_at: 99,
        };
        let records = [put(64), put(128)];
        let mut bytes = encode(&header, &records);
        bytes.resize(SLOT, 0);
        assert_eq!(decode(&bytes, 7, 1), Some((header, records.to_vec())));
        assert_eq!(decode(&bytes, 8, 1), None, "another phase's slot is not read");
    }

    #[test]
    fn too_many_records_are_merged_to_fit() {
        let mut records: Vec<Access> = (0..500).map(|i| put(i * 16)).collect();
        assert!(squeeze(&mut records));
        assert_eq!(records.len(), 1);
        assert_eq!((records[0].offset, records[0].len), (0, 499 * 16 + 8));
        let mut few = vec![put(0)];
        assert!(!squeeze(&mut few));
    }
}
