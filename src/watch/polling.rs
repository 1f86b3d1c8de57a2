//! A loop of tests, shown as the wait it is. A program that polls with
//! `shmem_test` (or `World::test`) instead of waiting makes one call per
//! look, so no call of its own stays blocked for a hang report to see.
//! Each test that finds its condition false comes here with the backoff's
//! streak ([`Streak`]) (the loop of failed tests it belongs to): a streak that has
//! lasted [`SHOWN_AFTER`] is published to the thread's slot as a block of
//! the test's call, marked `polling`. The slot's `polled` stamp moves with
//! every failed test, and the watchdog counts the block only while that
//! stamp is fresh ([`FRESH`]): a thread that went back to computing between
//! its tests is not blocked. A new streak, a test that finds its
//! condition, or any wait takes the block back out.

use super::{Block, Local, Slot, Streak, Waiting, LOCAL, SLOT};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

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
/// condition false, as failed test `streak` of its loop; `waiting` says
/// what it looks for.
#[inline(never)]
pub(super) fn in_vain(name: &'static str, waiting: impl FnOnce() -> Waiting, streak: Streak) {
    let _ = LOCAL.try_with(|local| {
        if local.pending.get().is_some() {
            return;
        }
        if streak.fresh {
            unpublish(local);
        }
        let Ok(slot) = SLOT.try_with(|slot| slot.borrow_mut().get_or_insert_with(super::register).clone()) else {
            return;
        };
        slot.polled.store(now_ns(), Ordering::Relaxed);
        if local.polling.get() || streak.now.duration_since(streak.since) < SHOWN_AFTER {
            return;
        }
        publish(local, &slot, name, waiting(), streak.since);
    });
}

/// A test found its condition, or a wait begins: the streak ends.
#[inline(never)]
pub(super) fn ended() {
    let _ = LOCAL.try_with(unpublish);
}

fn publish(local: &Local, slot: &Arc<Slot>, name: &'static str, waiting: Waiting, since: Instant) {
    let call = local.current(name);
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
