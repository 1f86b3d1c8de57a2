//! A rank's segment registered with its NIC in parts, and where a byte of
//! a peer's segment lies among them.
//!
//! Only committed memory may be registered: a NIC that pins what it
//! registers would fault in and pin the whole heap reservation, which is
//! far larger than the heap's memory. So the segment is registered in
//! parts: part 0 is the header and the heap committed at start, part 1
//! the program's global data (when it is symmetric, `globals`), and each
//! later part a range the heap grew by (`Links::grown`). Parts are
//! symmetric, the same heap offsets on every rank, so one list of parts
//! serves every peer, with each peer's key for each part.
//!
//! A lookup takes no lock. Part 0 (the runtime's areas: the collectives'
//! flags and scratch) is one compare; then the part a reader last found
//! for that peer, with the peer's key, kept by the reader ([`Hint`]): one
//! compare more, for every operation on an object after the first. The
//! rest is out of line: the data part by its bounds, and a grown part by
//! binary search of a fixed-capacity array ([`MAX_GROWN`] parts). A grown
//! part's span is written, then published by the count (Release) before
//! its registration's keys are exchanged; the keys are set once, when
//! every rank has registered (a `OnceLock`). A reader that finds a part
//! whose keys are not set yet (its allocation has not returned), or never
//! will be (the growth failed), is told that the range is not registered.
//! Spans are appended in order of start and never change, so no reader
//! sees a torn list.
//!
//! Coordinates here are bytes of the segment, its header included (a heap
//! offset plus [`HEADER_BYTES`]).

use crate::segment::{RawSegment, HEADER_BYTES};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// How many parts the heap may grow by: the core grows its extent by at
/// least a sixteenth at a time, so a 1 TiB reservation takes some 220.
pub const MAX_GROWN: usize = 1024;

/// The heap bytes part 0 registers after the header: what is committed
/// at start (the runtime's areas, `World::init`).
pub fn first_part(segment: RawSegment) -> usize {
    segment.committed()
}

/// A part of the segment: its number (0: the first, 1: the global data,
/// 2 on: grown) and its bytes `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub index: usize,
    pub start: usize,
    pub end: usize,
}

/// Every part of a job's segments, and every peer's key `K` for each.
pub struct Parts<K> {
    /// Part 0 is bytes `[0, first_end)`.
    first_end: usize,
    first_keys: Box<[K]>,
    /// The global data's part, bytes `[start, end)`, and its keys.
    data: Option<(usize, usize, Box<[K]>)>,
    /// Grown parts may lie below this (the global data's start).
    limit: usize,
    /// Grown parts published; slots below it are written and never change.
    count: AtomicUsize,
    starts: Box<[AtomicUsize]>,
    ends: Box<[AtomicUsize]>,
    keys: Box<[OnceLock<Box<[K]>>]>,
    /// The writer's own view of the grown parts (start, end, alive),
    /// which also makes growth one writer at a time.
    writer: Mutex<Vec<(usize, usize, bool)>>,
}

impl<K: Copy> Parts<K> {
    /// Part 0 of `first_end` bytes with every peer's key, the global data
    /// (`data`: its bytes and keys), and no grown part; grown parts lie
    /// below `limit`.
    pub fn new(first_end: usize, first_keys: Vec<K>, data: Option<(usize, usize, Vec<K>)>, limit: usize) -> Self {
        Parts {
            first_end,
            first_keys: first_keys.into(),
            data: data.map(|(start, end, keys)| (start, end, keys.into())),
            limit,
            count: AtomicUsize::new(0),
            starts: (0..MAX_GROWN).map(|_| AtomicUsize::new(0)).collect(),
            ends: (0..MAX_GROWN).map(|_| AtomicUsize::new(0)).collect(),
            keys: (0..MAX_GROWN).map(|_| OnceLock::new()).collect(),
            writer: Mutex::new(Vec::new()),
        }
    }

    /// Where part 0 ends: bytes below it need no lookup.
    #[inline]
    pub fn first_end(&self) -> usize {
        self.first_end
    }

    /// The part that holds byte `at`, if any: part 0 in one compare.
    #[inline]
    pub fn find(&self, at: usize) -> Option<Span> {
        match at < self.first_end {
            true => Some(Span {
                index: 0,
                start: 0,
                end: self.first_end,
            }),
            false => self.find_beyond_first(at),
        }
    }

    #[cold]
    #[inline(never)]
    fn find_beyond_first(&self, at: usize) -> Option<Span> {
        if let Some((start, end, _)) = self.data {
            if (start..end).contains(&at) {
                return Some(Span { index: 1, start, end });
            }
        }
        let count = self.count.load(Ordering::Acquire);
        // The last part that starts at or below `at`: a failed growth's
        // part is followed by its retry, which starts where it did.
        let after = self.starts[..count].partition_point(|s| s.load(Ordering::Relaxed) <= at);
        let i = after.checked_sub(1)?;
        let (start, end) = (
            self.starts[i].load(Ordering::Relaxed),
            self.ends[i].load(Ordering::Relaxed),
        );
        (at < end).then_some(Span {
            index: 2 + i,
            start,
            end,
        })
    }

    /// `peer`'s key of part `index`; `None` while (or if never) every rank
    /// has registered it.
    pub fn key(&self, index: usize, peer: usize) -> Option<K> {
        match index {
            0 => self.first_keys.get(peer).copied(),
            1 => self.data.as_ref().and_then(|(_, _, keys)| keys.get(peer).copied()),
            i => self.keys.get(i - 2)?.get()?.get(peer).copied(),
        }
    }

    /// The part holding byte `at` and `peer`'s key for it, or why there is
    /// none, in heap offsets.
    #[inline(never)]
    pub fn lookup(&self, at: usize, peer: usize) -> Result<(Span, K), String> {
        match self.find(at) {
            Some(span) => match self.key(span.index, peer) {
                Some(key) => Ok((span, key)),
                None => Err(unregistered(at, true)),
            },
            None => Err(unregistered(at, false)),
        }
    }

    /// Publishes a grown part, bytes `[start, end)`, before its keys are
    /// known; returns its number for [`Parts::complete`] or
    /// [`Parts::abandon`]. Parts come in order of start and do not overlap.
    pub fn open(&self, start: usize, end: usize) -> Result<usize, String> {
        let mut writer = crate::sync::lock(&self.writer);
        let n = writer.len();
        let floor = writer
            .iter()
            .rev()
            .find(|part| part.2)
            .map_or(self.first_end, |part| part.1);
        let floor = floor.max(writer.last().map_or(0, |part| part.0));
        if start < floor || end <= start || end > self.limit {
            return Err(format!(
                "heap offsets {:#x}..{:#x} do not follow the parts registered so far (up to {:#x})",
                start.wrapping_sub(HEADER_BYTES),
                end.wrapping_sub(HEADER_BYTES),
                floor.wrapping_sub(HEADER_BYTES)
            ));
        }
        if n == MAX_GROWN {
            return Err(format!(
                "the heap has grown {MAX_GROWN} times, as often as a NIC's registrations are kept: \
                 set a heap cap (ONESIDE_HEAP_SIZE) or allocate in larger steps"
            ));
        }
        self.starts[n].store(start, Ordering::Relaxed);
        self.ends[n].store(end, Ordering::Relaxed);
        writer.push((start, end, true));
        self.count.store(n + 1, Ordering::Release);
        Ok(2 + n)
    }

    /// Sets every peer's key of grown part `index`: it may be used from now.
    pub fn complete(&self, index: usize, keys: Vec<K>) {
        let _writer = crate::sync::lock(&self.writer);
        let _ = self.keys[index - 2].set(keys.into());
    }

    /// Grown part `index` will never have keys: a later part may start
    /// where it did.
    pub fn abandon(&self, index: usize) {
        if let Some(part) = crate::sync::lock(&self.writer).get_mut(index - 2) {
            part.2 = false;
        }
    }
}

/// Why byte `at` has no key: in no part, or in one not registered everywhere.
#[cold]
fn unregistered(at: usize, in_a_part: bool) -> String {
    let offset = at.wrapping_sub(HEADER_BYTES);
    match in_a_part {
        false => format!("heap offset {offset:#x} lies in no part of the heap registered with the NIC"),
        true => format!(
            "heap offset {offset:#x} lies in a range the heap grew by that is not registered on every rank (yet)"
        ),
    }
}

/// The part beyond part 0 a reader last found for one peer, and that
/// peer's key for it: looked in first, with one compare. A part never
/// changes once its keys are set, so a hint stays true.
#[derive(Clone, Copy, Default)]
pub struct Hint<K> {
    start: usize,
    len: usize,
    key: K,
}

impl<K: Copy> Hint<K> {
    /// The key, and the part's bytes, if byte `at` lies in the hinted part.
    #[inline]
    pub fn get(&self, at: usize) -> Option<(K, Span)> {
        let into = at.wrapping_sub(self.start);
        (into < self.len).then_some((
            self.key,
            Span {
                index: usize::MAX,
                start: self.start,
                end: self.start + self.len,
            },
        ))
    }

    /// Remembers that `span` holds the next bytes, with `key`.
    pub fn set(&mut self, span: Span, key: K) {
        *self = Hint {
            start: span.start,
            len: span.end - span.start,
            key,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Parts<u32> {
        // Part 0: 0..0x2000; data 0x10000..0x11000; grown parts below 0x10000.
        Parts::new(0x2000, vec![10, 11], Some((0x10000, 0x11000, vec![20, 21])), 0x10000)
    }

    #[test]
    fn part_zero_and_the_data_are_found_without_growth() {
        let parts = table();
        assert_eq!(
            parts.find(0),
            Some(Span {
                index: 0,
                start: 0,
                end: 0x2000
            })
        );
        assert_eq!(parts.find(0x1fff).map(|s| s.index), Some(0));
        assert_eq!(parts.find(0x2000), None, "nothing grown yet");
        assert_eq!(parts.find(0x10000).map(|s| s.index), Some(1));
        assert_eq!(parts.find(0x10fff).map(|s| s.index), Some(1));
        assert_eq!(parts.find(0x11000), None);
        assert_eq!(parts.lookup(0x10, 1), Ok((parts.find(0).unwrap(), 11)));
        assert_eq!(parts.lookup(0x10008, 0).map(|(_, k)| k), Ok(20));
        let why = parts.lookup(0x2000 + 0x40, 0).unwrap_err();
        assert!(why.contains("heap offset 0x1040 lies in no part"), "{why}");
    }

    #[test]
    fn grown_parts_are_found_by_binary_search_once_their_keys_are_set() {
        let parts = table();
        let a = parts.open(0x2000, 0x3000).unwrap();
        assert_eq!(
            parts.find(0x2800),
            Some(Span {
                index: a,
                start: 0x2000,
                end: 0x3000
            })
        );
        let why = parts.lookup(0x2800, 0).unwrap_err();
        assert!(why.contains("not registered on every rank"), "{why}");
        parts.complete(a, vec![30, 31]);
        let b = parts.open(0x3000, 0x8000).unwrap();
        parts.complete(b, vec![40, 41]);
        let c = parts.open(0x8000, 0x9000).unwrap();
        parts.complete(c, vec![50, 51]);
        for (at, key) in [
            (0x2000, 30),
            (0x2fff, 30),
            (0x3000, 40),
            (0x7ff8, 40),
            (0x8000, 50),
            (0x8fff, 50),
        ] {
            assert_eq!(parts.lookup(at, 0).map(|(_, k)| k), Ok(key), "{at:#x}");
            assert_eq!(parts.lookup(at, 1).map(|(_, k)| k), Ok(key + 1), "{at:#x}");
        }
        assert_eq!(parts.find(0x9000), None);
        assert_eq!(parts.find(0x4000).map(|s| (s.start, s.end)), Some((0x3000, 0x8000)));
    }

    #[test]
    fn a_hint_answers_for_its_part_only() {
        let parts = table();
        let a = parts.open(0x2000, 0x3000).unwrap();
        parts.complete(a, vec![30, 31]);
        let mut hint = Hint::default();
        assert!(
            hint.get(0).is_none() && hint.get(0x2000).is_none(),
            "an empty hint answers for nothing"
        );
        let (span, key) = parts.lookup(0x2800, 1).unwrap();
        hint.set(span, key);
        assert_eq!(
            hint.get(0x2000).map(|(k, s)| (k, s.start, s.end)),
            Some((31, 0x2000, 0x3000))
        );
        assert_eq!(hint.get(0x2fff).map(|(k, _)| k), Some(31));
        assert!(hint.get(0x1fff).is_none() && hint.get(0x3000).is_none());
    }

    #[test]
    fn a_failed_growth_leaves_a_dead_part_its_retry_replaces() {
        let parts = table();
        let a = parts.open(0x2000, 0x4000).unwrap();
        parts.abandon(a);
        assert!(parts.lookup(0x3000, 0).is_err());
        let retry = parts.open(0x2000, 0x3000).unwrap();
        parts.complete(retry, vec![7, 8]);
        assert_eq!(parts.lookup(0x2fff, 1).map(|(_, k)| k), Ok(8));
        assert_eq!(
            parts.find(0x3000),
            None,
            "the dead part is not found past its retry's end"
        );
        let next = parts.open(0x3000, 0x5000).unwrap();
        parts.complete(next, vec![9, 9]);
        assert_eq!(parts.lookup(0x3000, 0).map(|(_, k)| k), Ok(9));
    }

    #[test]
    fn a_part_that_overlaps_or_passes_the_limit_is_refused() {
        let parts = table();
        let a = parts.open(0x2000, 0x4000).unwrap();
        parts.complete(a, vec![1, 1]);
        assert!(parts.open(0x3000, 0x5000).is_err(), "overlaps");
        assert!(parts.open(0x1000, 0x2000).is_err(), "inside part 0");
        assert!(parts.open(0x4000, 0x10001).is_err(), "into the data");
        assert!(parts.open(0x4000, 0x4000).is_err(), "empty");
    }

    #[test]
    fn growth_stops_at_the_capacity_with_a_clear_message() {
        let parts: Parts<u32> = Parts::new(0x1000, vec![0], None, usize::MAX);
        for i in 0..MAX_GROWN {
            let at = 0x1000 + i * 0x1000;
            let index = parts.open(at, at + 0x1000).unwrap();
            parts.complete(index, vec![i as u32]);
        }
        let why = parts
            .open(0x1000 * (MAX_GROWN + 1), 0x1000 * (MAX_GROWN + 2))
            .unwrap_err();
        assert!(why.contains("grown 1024 times"), "{why}");
        for i in [0, 1, 511, 1023] {
            let at = 0x1000 + i * 0x1000 + 8;
            assert_eq!(parts.lookup(at, 0).map(|(s, k)| (s.index, k)), Ok((2 + i, i as u32)));
        }
    }

    #[test]
    fn readers_on_other_threads_see_whole_parts_while_it_grows() {
        let parts: Parts<u64> = Parts::new(0x1000, vec![0; 2], None, usize::MAX);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..512u64 {
                    let at = 0x1000 * (i as usize + 1);
                    let index = parts.open(at, at + 0x1000).unwrap();
                    parts.complete(index, vec![i, i]);
                }
                done.store(true, Ordering::Release);
            });
            while !done.load(Ordering::Acquire) {
                for i in 0..512usize {
                    let at = 0x1000 * (i + 1) + 0x10;
                    if let Ok((span, key)) = parts.lookup(at, 1) {
                        assert_eq!((span.start, span.end, key), (at - 0x10, at - 0x10 + 0x1000, i as u64));
                    }
                }
            }
        });
    }
}
