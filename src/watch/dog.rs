//! The watchdog thread: a few times a second it reads every thread's slot,
//! and tells rlaunch when all of them have been blocked for
//! [`STALLED_AFTER`] (`Msg::Stalled`, sent again when a block changes) and
//! when one of them gets going again (`Msg::Moving`). It sleeps between
//! looks and never touches the data path.

use super::{slots, Block, Waiting, WATCHING};
use crate::protocol::stall::{Stall, ThreadStall};
use crate::protocol::wire::Msg;
use crate::reporter::Reporter;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(100);
/// How long every thread must have been blocked before the rank says so.
const STALLED_AFTER: Duration = Duration::from_millis(300);

/// Turns hang reports on when rlaunch asked for them (`ONESIDE_WATCH`)
/// and starts this rank's watchdog, which reports over `reporter`;
/// `own_core`, whether the rank has a core of its own (then the watchdog
/// runs only when that core is idle, see [`run_only_when_idle`]).
pub(crate) fn start(rank: usize, reporter: Option<Reporter>, own_core: bool) {
    let Some(reporter) = reporter else {
        return;
    };
    if std::env::var_os("ONESIDE_WATCH").is_none_or(|v| v.is_empty() || v == "0") {
        return;
    }
    WATCHING.store(true, Ordering::Relaxed);
    super::keep_reporter(rank, reporter.clone());
    let spawned = crate::service::spawn("oneside-watch".into(), rank, "watchdog", move || {
        crate::service::panic_if_asked("watchdog");
        if own_core {
            run_only_when_idle();
        }
        watch(rank, reporter)
    });
    if let Err(e) = spawned {
        WATCHING.store(false, Ordering::Relaxed);
        eprintln!("oneside: rank {rank}: no hang reports (cannot start the watchdog thread: {e})");
    }
}

fn watch(rank: usize, reporter: Reporter) {
    // What the last `Stalled` described: each block's start and whether it
    // had its backtrace yet.
    let mut reported: Option<Vec<(Instant, bool)>> = None;
    loop {
        std::thread::sleep(TICK);
        let news = super::news();
        let slots = slots();
        let mut key = Vec::with_capacity(slots.len());
        let mut threads = Vec::with_capacity(slots.len());
        let mut newest = Duration::MAX;
        let (mut published, mut stalled) = (false, !slots.is_empty());
        for slot in &slots {
            // Described under the slot's lock: the waiting thread clears its
            // block under it before it leaves the wait, so the words read
            // here are still mapped.
            let block = crate::sync::lock(&slot.block);
            published |= block.is_some();
            // A loop of tests counts only while its tests go on.
            let block = block
                .as_ref()
                .filter(|b| !b.polling || super::polling::fresh(&slot.polled));
            match block.filter(|b| b.since.elapsed() >= STALLED_AFTER) {
                Some(block) if stalled => {
                    key.push((block.since, block.trace.is_some()));
                    newest = newest.min(block.since.elapsed());
                    threads.push(describe(block));
                }
                _ => stalled = false,
            }
        }
        let msg = match stalled {
            true if reported.as_ref() != Some(&key) => Some(Msg::Stalled(Stall {
                rank: rank as u32,
                for_ms: newest.as_millis() as u64,
                threads,
            })),
            false if reported.take().is_some() => Some(Msg::Moving { rank: rank as u32 }),
            _ => None,
        };
        let sent = match msg {
            Some(Msg::Stalled(stall)) => {
                let sent = reporter.send_if(|| still_blocked(&slots, &key).then_some(Msg::Stalled(stall)));
                reported = Some(key);
                sent
            }
            Some(msg) => reporter.send(&msg),
            None => true,
        };
        if !sent {
            return;
        }
        // Nothing to watch: sleep until a long wait is published, so a
        // rank busy in short waits is never woken (on full cores, each
        // wake-up pre-empted a spinning rank).
        if !published && reported.is_none() {
            super::wait_for_news(news);
        }
    }
}

/// Whether every slot still holds the block `key` describes (each
/// block's start), marking each as reported: called under the link's
/// lock just before `Stalled` goes out, so a thread that leaves its wait
/// after this sends its `Moving` after the `Stalled`, and one that left
/// before it is not reported stalled.
fn still_blocked(slots: &[std::sync::Arc<super::Slot>], key: &[(Instant, bool)]) -> bool {
    slots.len() == key.len()
        && slots.iter().zip(key).all(|(slot, (since, _))| {
            let block = crate::sync::lock(&slot.block);
            let same = block.as_ref().is_some_and(|b| b.since == *since);
            if same {
                slot.reported.store(true, Ordering::Release);
            }
            same
        })
}

/// Puts this thread in Linux's `SCHED_IDLE` class: it runs only on a core
/// nobody else wants. Describing a C caller's block resolves a backtrace,
/// which first parses the library's debug information: some 100 ms of CPU
/// once a rank has waited 300 ms, taken from the core where that rank's
/// ofi progress thread was serving its peers (8-byte put + quiet on such a
/// rank over tcp;ofi_rxm took 1.4x as long as with reports off). A rank
/// that hangs naps, which leaves its core idle, so reports still come; only
/// for a rank with a core of its own, as on a host whose ranks outnumber
/// its cores the others may keep every core busy.
fn run_only_when_idle() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler on the calling thread (pid 0) with a
    // valid parameter; failure leaves the thread as it was.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
}

/// The `count` elements of `size` bytes a wait watches, from `addr` (heap
/// `offset`, or a `global` variable), named as the program knows them:
/// "its element [2] of the global 'flags' (now 0)", "its element [0] of
/// the 8-byte object allocated at hang.rs:30:25 (heap offset 2228224, now
/// 0)"; the bare address or offset when nothing names them.
fn elements(addr: usize, offset: usize, global: bool, size: u8, count: usize) -> String {
    let size = usize::from(size.max(1));
    // What holds the elements, its name, the first one's byte offset in
    // it and its size.
    let (holder, mut notes) = match global {
        true => (
            super::symbols::global_at(addr).map(|(name, at, bytes)| (format!("the global '{name}'"), at, bytes)),
            Vec::new(),
        ),
        false => match super::objects::object_at(offset) {
            Some(object) => (Some(object), vec![format!("heap offset {offset}")]),
            None => (None, Vec::new()),
        },
    };
    if count == 1 {
        notes.push(format!("now {}", read(addr, size as u8)));
    }
    let notes = match notes.is_empty() {
        true => String::new(),
        false => format!(" ({})", notes.join(", ")),
    };
    let bare = match global {
        true => format!("global variable {addr:#x}"),
        false => format!("heap offset {offset}"),
    };
    match (holder, count) {
        (Some((name, 0, bytes)), 1) if bytes <= size => format!("{name}{notes}"),
        (Some((name, at, _)), 1) => format!("its element [{}] of {name}{notes}", at / size),
        (Some((name, at, _)), n) => format!("{n} of its elements from [{}] of {name}{notes}", at / size),
        (None, 1) => format!("its element at {bare}{notes}"),
        (None, n) => format!("{n} of its elements from {bare}{notes}"),
    }
}

/// One block in words.
fn describe(block: &Block) -> ThreadStall {
    let call = block.call;
    let (waits, on, anyone) = match block.waiting {
        Waiting::Words {
            addr,
            offset,
            global,
            size,
            count,
            cmp,
        } => {
            let what = elements(addr, offset, global, size, count);
            let until = match cmp {
                Some((op, value)) => format!("to become {op} {value}"),
                None => "to satisfy the program's condition".to_string(),
            };
            (format!("{what} {until}"), Vec::new(), true)
        }
        Waiting::Step {
            op, rank, call, step, ..
        } => (
            format!(
                "rank {rank} to reach step {step} of {op}, the {} collective call on their team since init",
                crate::words::ordinal(call)
            ),
            vec![rank as u32],
            false,
        ),
        Waiting::Lock { offset } => (
            format!("the lock at heap offset {offset} to be passed to it"),
            Vec::new(),
            true,
        ),
        Waiting::Condition => ("a condition of the program's".to_string(), Vec::new(), true),
        Waiting::Answer { rank } => (
            format!("rank {rank} to answer (data, a value or an acknowledgement its progress engine owes)"),
            vec![rank as u32],
            false,
        ),
    };
    let waits = match block.polling {
        true => format!("{waits}, polled by a loop of tests that each find it false"),
        false => waits,
    };
    let answer = matches!(block.waiting, Waiting::Answer { .. });
    let step_of = match block.waiting {
        Waiting::Step { slot, value, .. } => Some((slot as u32, value)),
        _ => None,
    };
    ThreadStall {
        step_of,
        call: call.name.to_string(),
        at: block
            .place
            .clone()
            .unwrap_or_else(|| call.site.describe(block.trace.as_deref())),
        waits,
        on,
        anyone,
        answer,
        finalizing: call.name.ends_with("finalize"),
    }
}

/// The unsigned value of the `size`-byte element at `addr`.
fn read(addr: usize, size: u8) -> u64 {
    // SAFETY: `addr` is an element of this rank's heap or symmetric
    // globals (checked by `World::waiting_on`) that a thread is
    // waiting on right now (the caller holds its slot's lock, which that
    // thread takes before it leaves the wait), aligned to its size; the
    // volatile reads form no reference to memory peers write.
    unsafe {
        match size {
            1 => u64::from((addr as *const u8).read_volatile()),
            2 => u64::from((addr as *const u16).read_volatile()),
            4 => u64::from((addr as *const u32).read_volatile()),
            _ => (addr as *const u64).read_volatile(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_leaves_a_busy_core_to_others() {
        let policy = std::thread::spawn(|| {
            run_only_when_idle();
            // SAFETY: sched_getscheduler of the calling thread.
            unsafe { libc::sched_getscheduler(0) }
        })
        .join()
        .expect("the thread ran");
        assert_eq!(policy, libc::SCHED_IDLE);
    }
}
