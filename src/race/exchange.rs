//! How a phase's accesses reach the PE whose memory they touched: at the
//! barrier that ends the phase, each PE puts its records of every other
//! PE's memory into that PE's checking area, then the barrier completes
//! and orders them, then each PE reads what it was sent. The area has a
//! slot per sending PE and phase parity: a PE writes phase k's records
//! only after barrier k-1, which the reader of phase k-2's passed only
//! after reading them, so a slot is never written while it is read.

use super::check::{Access, Kind, Syncs};
use super::Memory;
use crate::links::{Channel, Links};

const HEADER: usize = 64;
const RECORD: usize = 32;
/// The checking area's bytes at most, whatever the job's size (4 MiB).
const AREA_MOST: usize = 4 << 20;

/// Records per slot in a job of `size` PEs: 1022 up to 64 PEs, fewer
/// beyond so that the area stays within 4 MiB, never under 62. More are
/// merged, then cut (and the report says so).
pub(crate) fn cap(size: usize) -> usize {
    (AREA_MOST / (2 * size.max(1)) / RECORD)
        .saturating_sub(2)
        .clamp(62, 1022)
}

/// A slot's bytes in a job of `size` PEs.
fn slot_bytes(size: usize) -> usize {
    HEADER + cap(size) * RECORD
}

/// The checking area's bytes for a job of `size` PEs.
pub(crate) fn area_bytes(size: usize) -> usize {
    2 * size * slot_bytes(size)
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
    area + ((phase as usize % 2) * size + from) * slot_bytes(size)
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
    for (from, seq) in header.syncs.handed {
        out.extend_from_slice(&from.to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
    }
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
        count: u32_at(8).min(((bytes.len() - HEADER) / RECORD) as u32),
        squeezed: u32_at(12) != 0,
        syncs: Syncs {
            released: u32_at(16),
            issued: u32_at(20),
            acquired: u32_at(24),
            handed: std::array::from_fn(|i| (u32_at(40 + 8 * i), u32_at(44 + 8 * i))),
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

/// Gives each record the smallest sequence number that compares with its
/// PE's synchronizations (`syncs`) as its own does: the checker compares a
/// record's number only with those three, so records that differ in
/// nothing else become one without losing anything.
pub(crate) fn canonical(records: &mut [Access], syncs: Syncs) {
    let class = |seq: u32| {
        let handed = syncs.handed.iter().map(|&(_, h)| seq >= h);
        let taken = handed.enumerate().fold(0u8, |bits, (i, t)| bits | (u8::from(t) << i));
        (seq >= syncs.acquired, seq < syncs.released, seq < syncs.issued, taken)
    };
    let mut least: Vec<((bool, bool, bool, u8), u32)> = Vec::new();
    for a in records.iter() {
        let c = class(a.seq);
        match least.iter_mut().find(|(k, _)| *k == c) {
            Some((_, seq)) => *seq = (*seq).min(a.seq),
            None => least.push((c, a.seq)),
        }
    }
    for a in records.iter_mut() {
        let c = class(a.seq);
        a.seq = least.iter().find(|(k, _)| *k == c).map_or(a.seq, |(_, seq)| *seq);
    }
}

/// Makes `records` fit a slot of `cap`: records of one place, kind,
/// operation and sequence number that touch or overlap become one, then
/// the rest is cut. Merging is exact; a cut record can only hide a race,
/// never invent one. Returns whether any was cut.
pub(crate) fn squeeze(records: &mut Vec<Access>, cap: usize) -> bool {
    records.sort_unstable_by_key(|a| (a.site, a.kind.code(), a.op, a.seq, a.done_at_return, a.offset));
    let mut merged: Vec<Access> = Vec::with_capacity(records.len().min(cap));
    for a in records.drain(..) {
        match merged.last_mut() {
            Some(m)
                if (m.site, m.kind, m.op, m.seq, m.done_at_return)
                    == (a.site, a.kind, a.op, a.seq, a.done_at_return)
                    && a.offset <= m.offset + m.len =>
            {
                let end = (m.offset + m.len).max(a.offset + a.len);
                m.len = end - m.offset;
            }
            _ => merged.push(a),
        }
    }
    let cut = merged.len() > cap;
    merged.truncate(cap);
    *records = merged;
    cut
}

/// Puts this PE's records of `target`'s memory into its slot there.
pub(crate) fn send(links: &Links, m: &Memory, target: usize, header: &Header, records: &[Access]) -> crate::Result<()> {
    let bytes = encode(header, records);
    let at = slot_offset(m.area, m.size, header.phase, m.rank);
    links.copy_in(Channel::Default, target, at, &bytes)
}

/// Reads what PE `from` sent this PE for `phase`, from this PE's own area.
pub(crate) fn receive(m: &Memory, phase: u64, from: usize) -> Option<(Header, Vec<Access>)> {
    let at = slot_offset(m.area, m.size, phase, from);
    // SAFETY: the slot lies in this PE's checking area, allocated at
    // start inside its heap; the barrier before this read completed every
    // put into it, and none comes until the next barrier.
    let bytes = unsafe { std::slice::from_raw_parts((m.heap_base + at) as *const u8, slot_bytes(m.size)) };
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
                handed: [(0, 2), (5, 3), (super::super::order::NO_PE, u32::MAX)],
            },
            began_at: 99,
        };
        let records = [put(64), put(128)];
        let mut bytes = encode(&header, &records);
        bytes.resize(slot_bytes(2), 0);
        assert_eq!(decode(&bytes, 7, 1), Some((header, records.to_vec())));
        assert_eq!(decode(&bytes, 8, 1), None, "another phase's slot is not read");
    }

    #[test]
    fn touching_records_of_one_place_merge_and_the_rest_is_cut() {
        let mut touching: Vec<Access> = (0..500).map(|i| put(i * 8)).collect();
        assert!(!squeeze(&mut touching, 62));
        assert_eq!(touching.len(), 1);
        assert_eq!((touching[0].offset, touching[0].len), (0, 500 * 8));
        // Apart, they never merge (a merged gap would be bytes nobody
        // touched): the slot keeps what fits.
        let mut apart: Vec<Access> = (0..500).map(|i| put(i * 16)).collect();
        assert!(squeeze(&mut apart, 62));
        assert_eq!(apart.len(), 62);
    }

    #[test]
    fn sequence_numbers_that_compare_alike_become_one() {
        let syncs = Syncs {
            released: 10,
            issued: 12,
            acquired: 3,
            ..Syncs::NONE
        };
        let mut records: Vec<Access> = [0, 1, 2, 3, 5, 9, 10, 11, 12]
            .iter()
            .enumerate()
            .map(|(i, &seq)| Access {
                seq,
                ..put(i as u64 * 8)
            })
            .collect();
        canonical(&mut records, syncs);
        let seqs: Vec<u32> = records.iter().map(|a| a.seq).collect();
        assert_eq!(seqs, [0, 0, 0, 3, 3, 3, 10, 10, 12]);
        assert!(!squeeze(&mut records, 62));
        assert_eq!(records.len(), 4, "{records:?}");
    }

    #[test]
    fn the_area_stays_within_bounds_at_every_size() {
        assert_eq!(cap(2), 1022);
        assert_eq!(cap(64), 1022);
        assert_eq!(cap(4096), 62);
        assert!(area_bytes(512) <= AREA_MOST + 2 * 512 * HEADER);
    }
}
