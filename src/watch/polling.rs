//! A loop of tests, shown as the wait it is. A program that polls with
//! `shmem_test` (or `World::test`) instead of waiting makes one call per
//! look, so no call of its own stays blocked for a hang report to see.
//! Each test that finds its condition false says so here: tests that
//! follow each other within [`GAP`] are one *polling streak*, and a streak
//! that has lasted [`SHOWN_AFTER`] is published to the thread's slot as a
//! block of the test's call, marked `polling`. The slot's `polled` stamp
//! moves with every failed test, and the watchdog counts the block only
//! while that stamp is fresh ([`FRESH`]): a thread that went back to
//! computing between its tests is not blocked. A test that finds its
//! condition, or any wait, ends the streak.

use super::{Block, Call, Local, Slot, Waiting, LOCAL, SLOT};
use crate::site::Site;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The longest pause between two failed tests of one streak: longer than
/// a time slice lost to another thread on a full core (with 1 ms, a loop
/// of tests at 2 ranks on 2 cores kept breaking its streak and never
/// showed).
const GAP: Duration = Duration::from_millis(20);
/// How long a streak lasts before the watchdog is shown it.
const SHOWN_AFTER: Duration = Duration::from_millis(50);
/// How recent a streak's last failed test must be for it to count as a
/// block (the watchdog looks every 100 ms).
pub(super) const FRESH: Duration = Duration::from_millis(50);

/// The clock of `Slot::polled`: ns since the first use.
fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Whether a polling block's last failed test (`polled`) is recent.
pub(super) fn fresh(polled: &AtomicU64) -> bool {
    now_ns().saturating_sub(polled.load(Ordering::Relaxed)) < FRESH.as_nanos() as u64
}

/// A test named `name` (the C entry point's name wins) found its
/// condition false; `waiting` says what it looks for.
#[inline(never)]
pub(super) fn in_vain(name: &'static str, waiting: impl FnOnce() -> Waiting) {
    let _ = LOCAL.try_with(|local| {
        if local.pending.get().is_some() {
            return;
        }
        let now = Instant::now();
        let since = match local.streak.get() {
            Some((since, last)) if now.duration_since(last) < GAP => since,
            Some(_) => {
                unpublish(local);
                now
            }
            None => now,
        };
        local.streak.set(Some((since, now)));
        let Ok(slot) = SLOT.try_with(|slot| slot.borrow_mut().get_or_insert_with(super::register).clone()) else {
            return;
        };
        slot.polled.store(now_ns(), Ordering::Relaxed);
        if local.polling.get() || now.duration_since(since) < SHOWN_AFTER {
            return;
        }
        publish(local, &slot, name, waiting(), since);
    });
}

/// A test found its condition, or a wait begins: the streak ends.
#[inline(never)]
pub(super) fn ended() {
    let _ = LOCAL.try_with(|local| {
        if local.streak.take().is_some() {
            unpublish(local);
        }
    });
}

fn publish(local: &Local, slot: &Arc<Slot>, name: &'static str, waiting: Waiting, since: Instant) {
    let call = match (local.c_call.get(), local.call.get()) {
        (Some(name), _) => Call { name, site: Site::C },
        (None, Some(call)) => call,
        (None, None) => Call {
            name,
            site: Site::Unknown,
        },
    };
    let (trace, place) = super::c_caller(call.site);
    *crate::sync::lock(&slot.block) = Some(Block {
        call,
        waiting,
        since,
        trace,
        place,
        polling: true,
    });
    local.polling.set(true);
    super::announce();
}

/// Takes a published streak back out of the slot (saying `Moving` if
/// rlaunch was told of it).
fn unpublish(local: &Local) {
    if local.polling.replace(false) {
        super::clear_slot();
    }
}
