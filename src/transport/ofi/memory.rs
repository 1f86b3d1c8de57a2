//! This rank's segment as the ofi transport registers it, and where a
//! peer's segment byte is for the provider.
//!
//! A provider that pins what it registers (hardware: verbs, efa, cxi, ...)
//! gets the segment in parts (`transport::parts`): what is committed at
//! start (part 0: the header and the heap's first part; part 1: the
//! global data), then each range the heap grows by (`Links::grown`). A
//! software provider (tcp, shm, udp, sockets, and rxm or rxd over them)
//! only records a registration, so it gets the whole segment, reservation
//! included, once: its heap never needs registering again, and gives pages
//! back. `ONESIDE_OFI_REGISTER=parts` or `=whole` chooses; every rank must
//! choose alike (its card says, and wire-up checks).
//!
//! Without `FI_MR_VIRT_ADDR` a remote address is an offset from the start
//! of its part's registration; with it, the peer's segment base plus the
//! byte (the segment is one contiguous mapping on the peer).

use super::fabric::{no_context, open, Object};
use super::library::Library;
use super::sys::*;
use super::Ofi;
use crate::segment::HEADER_BYTES;
use crate::transport::fault::Fault;
use crate::transport::OfiCard;
use std::ffi::c_void;

/// `parts` or `whole` (see the module docs); unset, by provider.
pub const REGISTER_VAR: &str = "ONESIDE_OFI_REGISTER";

/// Providers that register without pinning, as their first layer names them.
const SOFTWARE: [&str; 4] = ["tcp", "shm", "udp", "sockets"];

/// Whether `provider` gets its segment in parts (it pins what it registers).
pub fn registers_in_parts(provider: &str) -> Result<bool, Fault> {
    match std::env::var(REGISTER_VAR).as_deref().map(str::trim) {
        Err(_) | Ok("") => Ok(!SOFTWARE.contains(&provider.split(';').next().unwrap_or(""))),
        Ok("parts") => Ok(true),
        Ok("whole") => Ok(false),
        Ok(other) => Err(format!("{REGISTER_VAR}={other:?} is neither parts nor whole").into()),
    }
}

/// Refuses a peer's `card` whose segment is registered otherwise than
/// this rank's (`own`): parts are symmetric, and growth is registered on
/// every rank or none.
pub fn same_parts(own: &OfiCard, card: &OfiCard) -> Result<(), String> {
    if card.grows != own.grows {
        let how = |grows| if grows { "in parts" } else { "whole" };
        return Err(format!(
            "it registers its segment {}, this rank {}: set the same {REGISTER_VAR} everywhere",
            how(card.grows),
            how(own.grows),
        ));
    }
    if card.first != own.first || card.data_key.is_some() != own.data_key.is_some() {
        return Err(format!(
            "it registered other parts of its segment (heap bytes in part 0: {} there, {} here; \
             global data apart: {} there, {} here): start every rank with the same program and settings",
            card.first,
            own.first,
            card.data_key.is_some(),
            own.data_key.is_some()
        ));
    }
    Ok(())
}

/// What a registration needs of the domain.
pub(super) struct Registrar<'a> {
    pub lib: &'static Library,
    pub domain: &'a Object<fid_domain>,
    pub ep: &'a Object<fid_ep>,
    pub mr_mode: i32,
}

impl Registrar<'_> {
    /// Registers `len` bytes at `base` for remote reads and writes (and
    /// local use), under `key` where the provider takes the application's
    /// keys; binds and enables it where the provider wants that.
    ///
    /// # Safety
    /// `base..base + len` must stay mapped for the registration's life.
    pub unsafe fn register(&self, base: *const u8, len: usize, key: u64) -> Result<Object<fid_mr>, Fault> {
        let domain = self.domain;
        // SAFETY: the inline fi_mr_reg through the domain's mr ops, with the
        // arguments its header declares; the range by this function's contract.
        let mr = unsafe {
            open("fi_mr_reg", self.lib, |out| {
                ((*(*domain.raw).mr).reg)(
                    domain.fid(),
                    base.cast::<c_void>(),
                    len,
                    FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE,
                    0,
                    key,
                    0,
                    out,
                    no_context(),
                )
            })
        }?;
        if self.mr_mode & FI_MR_ENDPOINT != 0 {
            mr.bind(self.ep.fid(), 0, "fi_mr_bind", self.lib)?;
            mr.enable("fi_mr_enable", self.lib)?;
        }
        Ok(mr)
    }
}

/// The key of a live registration (`fi_mr_key`).
pub(super) fn key_of(mr: &Object<fid_mr>) -> u64 {
    // SAFETY: a live MR; its key is set at registration.
    unsafe { (*mr.raw).key }
}

impl Ofi {
    /// The address of byte `at` of `peer`'s segment (header included) for
    /// the provider, its key, and the bytes from there in the same part:
    /// part 0 in one compare, then the part last found for this peer in
    /// one more (`transport::parts`).
    #[inline]
    pub(super) fn target(&mut self, peer: usize, at: usize, op: &'static str) -> Result<Target, Fault> {
        let (base, key) = self.remote[peer];
        let (key, start, end) = match at < self.first_end {
            true => (key, 0, self.first_end),
            false => match self.hints[peer].get(at) {
                Some((key, span)) => (key, span.start, span.end),
                None => return self.target_beyond_first(peer, at, op),
            },
        };
        let from = if self.virt_addr { 0 } else { start };
        Ok(Target {
            addr: self.addrs[peer],
            remote: base + (at - from) as u64,
            key,
            room: end - at,
        })
    }

    #[cold]
    #[inline(never)]
    fn target_beyond_first(&mut self, peer: usize, at: usize, op: &'static str) -> Result<Target, Fault> {
        let (span, key) = self.parts.lookup(at, peer).map_err(|why| Fault::with(peer, op, why))?;
        self.hints[peer].set(span, key);
        self.target(peer, at, op)
    }

    /// Registers heap offsets `[start, start + len)`, committed; returns
    /// the part's number and this rank's key for peers (8 bytes).
    pub fn register_part(&mut self, start: usize, len: usize) -> Result<(usize, Vec<u8>), String> {
        let at = HEADER_BYTES + start;
        let index = self.parts.open(at, at + len)?;
        let registrar = Registrar {
            lib: self.lib,
            domain: &self._domain,
            ep: &self.ep,
            mr_mode: self.mr_mode,
        };
        // SAFETY: `open` checked the range lies in the heap's reservation,
        // inside this rank's segment, which outlives the transport (the
        // World drops its links before its segment); the caller committed
        // it. The part's number is a key no other registration here has.
        match unsafe { registrar.register(self.own_segment.wrapping_add(at), len, index as u64) } {
            Ok(mr) => {
                let key = key_of(&mr).to_le_bytes().to_vec();
                self.grown_mrs.push((index, mr));
                Ok((index, key))
            }
            Err(fault) => {
                self.parts.abandon(index);
                Err(fault.to_string())
            }
        }
    }

    /// Sets every rank's key of part `index` (index = rank).
    pub fn publish_part(&mut self, index: usize, keys: &[Vec<u8>]) -> Result<(), (usize, String)> {
        let mut all = Vec::with_capacity(keys.len());
        for (peer, key) in keys.iter().enumerate() {
            let bytes = <[u8; 8]>::try_from(key.as_slice())
                .map_err(|_| (peer, format!("it sent a {}-byte key, not ofi's 8 bytes", key.len())))?;
            all.push(u64::from_le_bytes(bytes));
        }
        self.parts.complete(index, all);
        Ok(())
    }

    /// Closes this rank's registration of part `index` (no peer learned its key).
    pub fn abandon_part(&mut self, index: usize) {
        self.parts.abandon(index);
        self.grown_mrs.retain(|(i, _)| *i != index);
    }
}

/// Where one RMA or atomic goes: the peer's AV address, the remote
/// address and key, and the bytes that lie in the same part.
pub(super) struct Target {
    pub addr: fi_addr_t,
    pub remote: u64,
    pub key: u64,
    pub room: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(first: u64, data: bool, grows: bool) -> OfiCard {
        OfiCard {
            provider: "tcp;ofi_rxm".into(),
            name: vec![1],
            addr: 0,
            key: 7,
            first,
            data_key: data.then_some(8),
            grows,
        }
    }

    #[test]
    fn a_peer_registered_otherwise_is_refused_naming_what_differs() {
        let own = card(1 << 21, true, true);
        assert_eq!(same_parts(&own, &card(1 << 21, true, true)), Ok(()));
        let why = same_parts(&own, &card(1 << 21, true, false)).unwrap_err();
        assert!(
            why.contains("registers its segment whole, this rank in parts: set the same ONESIDE_OFI_REGISTER"),
            "{why}"
        );
        let why = same_parts(&own, &card(1 << 22, true, true)).unwrap_err();
        assert!(
            why.contains("heap bytes in part 0: 4194304 there, 2097152 here"),
            "{why}"
        );
        assert!(
            same_parts(&own, &card(1 << 21, false, true)).is_err(),
            "the data apart on one side only"
        );
    }

    #[test]
    fn software_providers_register_whole_and_others_in_parts() {
        if std::env::var_os(REGISTER_VAR).is_some() {
            return; // the environment chooses
        }
        for provider in ["tcp;ofi_rxm", "shm", "udp;ofi_rxd", "sockets", "tcp"] {
            assert_eq!(registers_in_parts(provider).ok(), Some(false), "{provider}");
        }
        for provider in ["verbs;ofi_rxm", "efa", "cxi", "psm3", "opx"] {
            assert_eq!(registers_in_parts(provider).ok(), Some(true), "{provider}");
        }
    }
}
