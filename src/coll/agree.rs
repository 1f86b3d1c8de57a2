//! The checking mode's collective checks (`crate::debug`), run at the
//! start of every collective when `rlaunch --debug` is on: the
//! destination check, then the signature check against the previous
//! member's record of the same call. A sync compares after it, and mostly
//! without that record: the previous member is the one it heard from
//! first (dissemination's first round), and it left its call's digest
//! beside the flag it raised here.

use super::Coll;
use crate::backoff::Backoff;
use crate::debug::{self, Checks, Place, Signature};
use crate::error::Result;
use crate::links::Channel;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where this rank's collective was called: a C or Rust caller as its
/// site's code (`race::site`), put in words only if a message needs it; a
/// Python program's line is words already.
fn place_here() -> Place {
    use crate::race::site::{code, raw_c, raw_rust};
    if crate::watch::in_c_call() {
        if let Some(foreign) = crate::site::foreign_caller() {
            return Place::Words(foreign);
        }
        let pc = crate::site::c_caller_pc();
        if pc != 0 {
            return Place::Code(code(raw_c(pc)));
        }
    } else if let Some(code) = crate::watch::rust_site()
        .map(|at| code(raw_rust(at)))
        .filter(|&c| c != 0)
    {
        return Place::Code(code);
    }
    Place::Words(crate::watch::here())
}

/// This rank's record of one collective call, published.
pub(crate) struct Published {
    sig: Signature,
    at: Place,
    offset: usize,
    call_name: &'static str,
    /// `sig`'s digest for this call (`Signature::digest`).
    digest: u64,
}

impl Coll<'_> {
    /// Checks this call against the other members' (`sig`: what it is;
    /// `dst`: the heap offset and bytes of its destination, if it has one
    /// in the heap). Free when the checking mode is off.
    #[inline]
    #[track_caller]
    pub fn agree(&self, sig: Signature, dst: Option<(usize, usize)>) -> Result<()> {
        self.dst.set(dst);
        crate::error::located(|| match self.w.debug.as_ref() {
            None => Ok(()),
            Some(checks) => self.check(checks, sig, dst),
        })
    }

    #[inline(never)]
    fn check(&self, checks: &Checks, sig: Signature, dst: Option<(usize, usize)>) -> Result<()> {
        self.broken_if_err(self.compare(checks, sig, dst))
    }

    fn compare(&self, checks: &Checks, sig: Signature, dst: Option<(usize, usize)>) -> Result<()> {
        let Some(mine) = self.publish_mine(checks, sig, dst)? else {
            return Ok(());
        };
        self.compare_previous(&mine, false)
    }

    /// A mistake found leaves the rank unable to finish any collective
    /// (the members disagree about which call comes next), so the world is
    /// marked broken: dropping it then skips the farewell barrier.
    fn broken_if_err<T>(&self, checked: Result<T>) -> Result<T> {
        if checked.is_err() {
            self.w.links.mark_broken();
        }
        checked
    }

    /// A sync's half of [`agree`](Coll::agree), before it: its record
    /// published, not yet compared, and its digest set for its
    /// notifications to carry (`Coll::notify`). A sync cannot hang or write anything
    /// whatever the other members called, so it is compared after it
    /// ([`agreed_sync`](Coll::agreed_sync)), when every member's record is
    /// there: no wait for the neighbour's, which cost a barrier under
    /// `--debug` a second rendezvous. Every other collective compares
    /// before it, and a sync's mismatch with one of them is found by that
    /// one's member next to a sync's on the ring, which exists.
    #[inline]
    #[track_caller]
    pub fn agree_sync(&self) -> Result<Option<Published>> {
        crate::error::located(|| match self.w.debug.as_ref() {
            None => Ok(None),
            Some(checks) => {
                let mine =
                    self.broken_if_err(self.publish_mine(checks, Signature::of::<u8>("team_sync", None, 0), None))?;
                self.check_note.set(mine.as_ref().map(|m| m.digest));
                Ok(mine)
            }
        })
    }

    /// A sync's record compared with the previous member's, after the
    /// sync: by the digest it left beside its flag here when it is this
    /// call's and the same as this rank's (no cache line of its record
    /// read), else by its record.
    #[inline]
    #[track_caller]
    pub fn agreed_sync(&self, published: Option<Published>) -> Result<()> {
        crate::error::located(|| match published {
            None => Ok(()),
            Some(mine) if self.noted(self.previous()) == mine.digest => Ok(()),
            Some(mine) => self.broken_if_err(self.compare_previous(&mine, true)),
        })
    }

    /// The member this rank compares its record with.
    fn previous(&self) -> usize {
        (self.me() + self.n() - 1) % self.n()
    }

    /// The digest member `from` last left beside its flag here.
    fn noted(&self, from: usize) -> u64 {
        let offset = self.layout.check_note(self.t.slot, from);
        // SAFETY: the word lies in the team area of this rank's heap,
        // 8-byte aligned; its sender writes it whole (a torn or later
        // word only sends the caller to the record).
        unsafe { AtomicU64::from_ptr(self.own(offset).cast()) }.load(Ordering::Acquire)
    }

    /// Checks the destination and publishes this rank's record; `None`
    /// when there is no other member to compare with.
    fn publish_mine(&self, checks: &Checks, sig: Signature, dst: Option<(usize, usize)>) -> Result<Option<Published>> {
        let sig = match sig.op {
            "team_sync" => debug::barrier_signature(),
            _ => sig,
        };
        let at = place_here();
        let call_name = crate::watch::current_call().unwrap_or(sig.op);
        checks.destination(self.w.rank, self.t.slot, (sig.op, call_name), &at, dst)?;
        if self.n() == 1 {
            return Ok(None);
        }
        let offset = checks.record(self.t.slot, self.call);
        self.publish(offset, &sig, &at);
        Ok(Some(Published {
            digest: sig.digest(self.call),
            sig,
            at,
            offset,
            call_name,
        }))
    }

    /// Compares `mine` with the previous member's record of this call;
    /// `synced`: after the sync, which every member entered having
    /// published its record, so it is there to read at once. Every member
    /// checking its neighbour on the ring checks them all.
    fn compare_previous(&self, mine: &Published, synced: bool) -> Result<()> {
        let other = self.rank(self.previous());
        let record = match synced {
            true => self.read_written(other, mine.offset).map(Some),
            false => self.read_record(other, mine.offset),
        };
        let Some((theirs, their_at)) = record? else {
            return Ok(());
        };
        match theirs == mine.sig {
            true => Ok(()),
            false => Err(debug::mismatch(
                (self.w.rank, mine.call_name),
                self.call,
                (&mine.sig, &mine.at),
                other,
                (&theirs, &their_at),
            )),
        }
    }

    /// Writes this rank's record of this call: the text and signature
    /// first, the call number last (Release), so a reader that sees the
    /// number and reads again sees the rest.
    fn publish(&self, offset: usize, sig: &Signature, at: &Place) {
        let (words, text) = Checks::encode(sig, self.call, at);
        let base = self.own(offset);
        // SAFETY: the record lies in this rank's checking area (allocated
        // at start, 8-byte aligned); only this rank writes it, and the
        // call-number word is accessed atomically. A C site's record is
        // its words alone (`Checks::decode` reads no text then): one cache
        // line, not two.
        unsafe {
            if matches!(at, Place::Words(_)) {
                std::ptr::copy_nonoverlapping(text.as_ptr(), base.add(words.len() * 8), text.len());
            }
            for (i, w) in words.iter().enumerate().skip(1) {
                base.add(i * 8).cast::<u64>().write_volatile(*w);
            }
            AtomicU64::from_ptr(base.cast()).store(words[0], Ordering::Release);
        }
    }

    /// Reads rank `from`'s record of this call once `from` has written it;
    /// `None` when `from` has run a whole ring of calls ahead (nothing left
    /// to compare).
    fn read_record(&self, from: usize, offset: usize) -> Result<Option<(Signature, Place)>> {
        let mut backoff = Backoff::new(self.w.spin_waits);
        let _blocked = crate::watch::blocked(crate::watch::Waiting::Step {
            op: "--debug's check of the collective",
            rank: from,
            slot: self.t.slot,
            // The record is written before any step of the call is
            // signalled: a rank that signalled none of this call's steps
            // may not have written it either.
            value: self.call << super::STEP_BITS,
            call: self.call,
            step: 0,
        });
        loop {
            self.w.links.check_links()?;
            let mut word = [0u8; 8];
            self.w.links.copy_out(Channel::Default, from, offset, &mut word)?;
            let call = u64::from_le_bytes(word);
            if call > self.call {
                return Ok(None);
            }
            if call == self.call {
                return self.read_written(from, offset).map(Some);
            }
            backoff.pause();
        }
    }

    /// Reads rank `from`'s record of this call, written already: its
    /// words, and its text only for a place in words. The other member
    /// cannot have written a later call's record over it: that slot comes
    /// round again only after a whole ring of calls, each needing this
    /// rank.
    fn read_written(&self, from: usize, offset: usize) -> Result<(Signature, Place)> {
        let mut bytes = [0u8; debug::RECORD];
        let words = debug::RECORD_WORDS;
        self.w
            .links
            .copy_out(Channel::Default, from, offset, &mut bytes[..words])?;
        if Checks::has_text(&bytes) {
            self.w
                .links
                .copy_out(Channel::Default, from, offset + words, &mut bytes[words..])?;
        }
        let (_, sig, at) = Checks::decode(&bytes);
        Ok((sig, at))
    }
}
