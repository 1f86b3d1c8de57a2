//! This rank's segment as the verbs transport registers it, in parts
//! (`transport::parts`): at start the header with the committed heap
//! (part 0) and the global data (part 1); later each range the heap grows
//! by, through [`Memory`]. The device, the protection domain, the MRs
//! and every peer's rkey of every part are shared by the lanes.

use super::device::{Context, MemoryRegion, ProtectionDomain};
use crate::segment::{RawSegment, HEADER_BYTES};
use crate::transport::fault::Fault;
use crate::transport::parts::{first_part, Parts};
use crate::transport::VerbsCard;
use std::sync::{Arc, Mutex, OnceLock};

/// What every lane shares. Fields drop in order: the grown parts' MRs,
/// the data's and part 0's, the PD, the device context.
pub(super) struct Device {
    /// The MRs of the heap's grown parts, with their part numbers.
    grown: Mutex<Vec<(usize, MemoryRegion)>>,
    /// Every rank's rkey of every part, from the cards at connect.
    pub(super) parts: OnceLock<Parts<u32>>,
    data_mr: Option<MemoryRegion>,
    first_mr: MemoryRegion,
    pd: ProtectionDomain,
    pub(super) context: Context,
    /// The segment's first byte (its header), its heap bytes registered in
    /// part 0, and where the global data starts and ends (heap offsets).
    segment: *mut u8,
    first: usize,
    data: (usize, usize),
}

// SAFETY: the device objects are owned here and freed in `Drop` once the
// last lane is gone; libibverbs allows them to be used from any thread.
// After set-up only the name is read, and MRs are registered and
// deregistered (thread-safe verbs calls) under the `grown` mutex.
unsafe impl Send for Device {}
// SAFETY: as above; shared use is the name, `parts` (atomics) and `grown` (a mutex).
unsafe impl Sync for Device {}

impl Device {
    /// Registers what is committed of `segment` (part 0) and its global
    /// data (part 1), for remote reads, writes and atomics.
    pub(super) fn register(context: Context, pd: ProtectionDomain, segment: RawSegment) -> Result<Device, Fault> {
        let base = segment.heap_base().wrapping_sub(HEADER_BYTES);
        let first = first_part(segment);
        // SAFETY: the header and the heap's committed start lie in the
        // segment, which stays mapped while the World (which owns both the
        // segment and this transport, dropping its links first) lives.
        let first_mr = unsafe { MemoryRegion::register(&pd, base, HEADER_BYTES + first) }?;
        let data = (segment.alloc_len(), segment.heap_len());
        let data_mr = match segment.data_len() {
            0 => None,
            // SAFETY: as above, for the global data at the segment's end.
            len => Some(unsafe { MemoryRegion::register(&pd, segment.heap_base().wrapping_add(data.0), len) }?),
        };
        Ok(Device {
            grown: Mutex::new(Vec::new()),
            parts: OnceLock::new(),
            data_mr,
            first_mr,
            pd,
            context,
            segment: base,
            first,
            data,
        })
    }

    pub(super) fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// What the card says of the registration: part 0's rkey and bytes,
    /// the data's rkey.
    pub(super) fn card_parts(&self) -> (u32, u64, Option<u32>) {
        (
            self.first_mr.rkey(),
            self.first as u64,
            self.data_mr.as_ref().map(MemoryRegion::rkey),
        )
    }

    /// Learns every rank's rkeys of part 0 and the data from the cards
    /// (`rkey_of` may alter one, for fault injection); a card whose parts
    /// differ from this rank's is refused, naming its rank.
    pub(super) fn learn(
        &self,
        cards: &[Option<VerbsCard>],
        rkey_of: impl Fn(usize, u32) -> u32,
    ) -> Result<(), (usize, String)> {
        let (_, first, data_rkey) = self.card_parts();
        for (peer, card) in cards.iter().enumerate() {
            let Some(card) = card else { continue };
            if card.first != first || card.data_rkey.is_some() != data_rkey.is_some() {
                return Err((
                    peer,
                    format!(
                        "it registered its segment in other parts (heap bytes in part 0: {} there, {first} here; \
                         global data: {} there, {} here): start every rank with the same program and settings",
                        card.first,
                        card.data_rkey.is_some(),
                        data_rkey.is_some()
                    ),
                ));
            }
        }
        let key = |peer: usize, card: &Option<VerbsCard>, of: fn(&VerbsCard) -> u32| {
            card.as_ref().map_or(0, |card| rkey_of(peer, of(card)))
        };
        let first_keys = cards.iter().enumerate().map(|(p, c)| key(p, c, |c| c.rkey)).collect();
        let data = data_rkey.map(|_| {
            let keys = cards.iter().enumerate();
            let keys = keys.map(|(p, c)| key(p, c, |c| c.data_rkey.unwrap_or(0))).collect();
            (HEADER_BYTES + self.data.0, HEADER_BYTES + self.data.1, keys)
        });
        let parts = Parts::new(HEADER_BYTES + self.first, first_keys, data, HEADER_BYTES + self.data.0);
        let _ = self.parts.set(parts);
        Ok(())
    }
}

/// The lanes' shared registration, for the heap's growth.
pub struct Memory(pub(super) Arc<Device>);

impl Memory {
    /// Registers heap offsets `[start, start + len)`, committed; returns
    /// the part's number and this rank's key for peers (its rkey, 4 bytes).
    pub fn register(&self, start: usize, len: usize) -> Result<(usize, Vec<u8>), String> {
        let device = &self.0;
        let parts = device.parts.get().ok_or("the verbs transport is not connected")?;
        let index = parts.open(HEADER_BYTES + start, HEADER_BYTES + start + len)?;
        let addr = device.segment.wrapping_add(HEADER_BYTES + start);
        // SAFETY: `open` checked the range lies in the heap's reservation,
        // inside the segment's mapping, which outlives this transport (the
        // World drops its links before its segment); the caller committed it.
        match unsafe { MemoryRegion::register(&device.pd, addr, len) } {
            Ok(mr) => {
                let key = mr.rkey().to_le_bytes().to_vec();
                crate::sync::lock(&device.grown).push((index, mr));
                Ok((index, key))
            }
            Err(fault) => {
                parts.abandon(index);
                Err(fault.to_string())
            }
        }
    }

    /// Sets every rank's key of part `index`, from the bytes each sent
    /// (index = rank); a key of the wrong size names its rank.
    pub fn publish(&self, index: usize, keys: &[Vec<u8>]) -> Result<(), (usize, String)> {
        let parts = self.0.parts.get().ok_or((0, "not connected".to_string()))?;
        let mut rkeys = Vec::with_capacity(keys.len());
        for (peer, key) in keys.iter().enumerate() {
            let bytes = <[u8; 4]>::try_from(key.as_slice())
                .map_err(|_| (peer, format!("it sent a {}-byte key, not an rkey's 4 bytes", key.len())))?;
            rkeys.push(fault_rkey(peer, u32::from_le_bytes(bytes)));
        }
        parts.complete(index, rkeys);
        Ok(())
    }

    /// Deregisters part `index` (no peer learned its key).
    pub fn abandon(&self, index: usize) {
        if let Some(parts) = self.0.parts.get() {
            parts.abandon(index);
        }
        crate::sync::lock(&self.0.grown).retain(|(i, _)| *i != index);
    }
}

/// Fault injection for the test suite: `ONESIDE_VERBS_FAULT=bad-rkey:N`
/// corrupts the remote keys used for peer N (of every part), so the NIC
/// itself refuses the access (a remote access error), as a stale or wrong
/// key would.
pub(super) fn fault_rkey(peer: usize, rkey: u32) -> u32 {
    match std::env::var("ONESIDE_VERBS_FAULT") {
        Ok(fault) if fault == format!("bad-rkey:{peer}") => rkey ^ 0x00ff_ff00,
        _ => rkey,
    }
}
