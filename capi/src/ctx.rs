//! Communication contexts (`shmem_ctx_t`). A context made by
//! `shmem_ctx_create` or `shmem_team_create_ctx` is a Rust
//! [`oneside::Ctx`]: over TCP it has its own connections, batches and
//! acknowledgements, so `shmem_ctx_quiet` completes its operations only,
//! and threads that each use their own context never contend. On shared
//! memory a context costs nothing. `SHMEM_CTX_DEFAULT` is the world's
//! default context. Every context is safe to share between threads, so the
//! options (`SHMEM_CTX_PRIVATE`, `_SERIALIZED`, `_NOSTORE`) are accepted
//! and need nothing more: a private context's locks are never contended.
//!
//! Contexts still alive at `shmem_finalize` are destroyed by it (quieted
//! first), before the world they point into goes away.
//!
//! `shmem_barrier_all` also completes every context the PE created, shared
//! ones included: a program that puts on a context and then meets the
//! others in a barrier expects its puts to be there, as they are over
//! shared memory, libfabric, verbs and in Sandia OpenSHMEM. The
//! specification promises that only after the context's quiet. A context
//! with nothing pending costs its quiet's look at each link over TCP or a
//! NIC; where every peer is on shared memory, nothing at all. `shmem_quiet` and `shmem_sync_all` keep their meaning:
//! the one quiets the default context, the other nothing.

use crate::state::{ok, world};
use crate::teams::{team_handle, ShmemTeam};
use libc::{c_int, c_long};
use oneside::prelude::*;
use oneside::AnyEndpoint;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What a `shmem_ctx_t` points to: the team it was created on, and the
/// Rust context (none for `SHMEM_CTX_DEFAULT`).
pub struct Ctx {
    team: ShmemTeam,
    inner: Option<oneside::Ctx<'static>>,
}

/// A C `shmem_ctx_t`.
pub type ShmemCtx = *mut Ctx;

/// `SHMEM_CTX_DEFAULT` is this object's address.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut oneside_ctx_default: Ctx = Ctx {
    team: std::ptr::null_mut(),
    inner: None,
};

/// Every context created and not yet destroyed, as addresses.
static LIVE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// `LIVE`'s length, so a barrier in a program without contexts reads one
/// word instead of taking a lock. Changed under `LIVE`'s lock; read
/// without it by the thread that calls the barrier, which made (or
/// synchronized with) every context it must complete.
static LIVE_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Completes the operations of every context alive (before
/// `shmem_barrier_all`'s own quiet and barrier). The list stays locked
/// while they quiet, so no thread can destroy one meanwhile. Where every
/// peer is on shared memory, each context's operations were complete when
/// they returned, and the barrier's own fence orders them: nothing to do.
#[inline]
pub fn quiet_all(api: &'static str) {
    if LIVE_COUNT.load(Ordering::Relaxed) == 0 || world(api).complete_on_return() {
        return;
    }
    let live = live();
    for &ctx in live.iter() {
        ok(api, endpoint(api, ctx as ShmemCtx).quiet());
    }
}

fn live() -> std::sync::MutexGuard<'static, Vec<usize>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The endpoint a call on `ctx` runs on (`SHMEM_CTX_DEFAULT`, or a null
/// context, is the world's default context).
#[inline(always)]
pub fn endpoint(api: &'static str, ctx: ShmemCtx) -> AnyEndpoint<'static> {
    let w = world(api);
    if ctx.is_null() {
        return AnyEndpoint::Default(w);
    }
    // SAFETY: a non-null context is the default or one of ours, alive
    // until shmem_ctx_destroy (the C API's contract).
    match unsafe { &(*ctx).inner } {
        Some(inner) => AnyEndpoint::Ctx(inner),
        None => AnyEndpoint::Default(w),
    }
}

/// The world rank of PE `pe` of `ctx`'s team (PEs of a context are
/// numbered in its team); -1, which every call rejects, if there is none.
#[inline(always)]
pub fn world_pe(ctx: ShmemCtx, pe: c_int) -> c_int {
    if ctx.is_null() {
        return pe;
    }
    // SAFETY: as in `endpoint`.
    let team = unsafe { (*ctx).team };
    if team.is_null() || team == crate::teams::world_handle() {
        return pe;
    }
    let team = team_handle("shmem_ctx", team);
    usize::try_from(pe)
        .ok()
        .and_then(|pe| team.world_rank(pe))
        .map_or(-1, |rank| rank as c_int)
}

/// Makes a context on `team`; 0, or -1 with `SHMEM_CTX_INVALID` written
/// when the Rust context cannot be made (a TCP peer refused a connection).
/// The options (`SHMEM_CTX_PRIVATE`, ...) need nothing: see the module docs.
///
/// # Safety
/// `ctx` must be valid for one write of a `shmem_ctx_t`, and `team` a live
/// team other than `SHMEM_TEAM_INVALID` (crate docs).
unsafe fn create(api: &'static str, team: ShmemTeam, ctx: *mut ShmemCtx) -> c_int {
    let world = world(api);
    let inner = match team == crate::teams::world_handle() {
        true => world.ctx_create(),
        // SHMEM_TEAM_INVALID is refused by the callers.
        false => world.team_ctx_create(team_handle(api, team)),
    };
    let made = match inner {
        Ok(inner) => Box::into_raw(Box::new(Ctx {
            team,
            inner: Some(inner),
        })),
        Err(e) => {
            crate::state::say(&format!("oneside: {api}: {e} (the context was not created)"));
            std::ptr::null_mut()
        }
    };
    // SAFETY: the caller passes a writable `shmem_ctx_t`.
    unsafe { ctx.write(made) };
    if made.is_null() {
        return -1;
    }
    let mut live = live();
    live.push(made as usize);
    LIVE_COUNT.store(live.len(), Ordering::Relaxed);
    0
}

export! {
    /// # Safety
    /// `ctx` must be valid for one write of a `shmem_ctx_t`.
    pub unsafe extern "C" fn shmem_ctx_create(_options: c_long, ctx: *mut ShmemCtx) -> c_int {
        // SAFETY: forwarded from the caller.
        unsafe { create("shmem_ctx_create", crate::teams::world_handle(), ctx) }
    }
}

export! {
    /// # Safety
    /// `ctx` must be valid for one write of a `shmem_ctx_t`, and `team` a
    /// live team (crate docs).
    pub unsafe extern "C" fn shmem_team_create_ctx(team: ShmemTeam, _options: c_long, ctx: *mut ShmemCtx) -> c_int {
        if team.is_null() {
            // SAFETY: the caller passes a writable `shmem_ctx_t`.
            unsafe { ctx.write(std::ptr::null_mut()) };
            return -1;
        }
        team_handle("shmem_team_create_ctx", team);
        // SAFETY: forwarded from the caller.
        unsafe { create("shmem_team_create_ctx", team, ctx) }
    }
}

export! {
    /// # Safety
    /// No call on `ctx` may be running on another thread, nor start after
    /// this one. Any `ctx` that is not a live context is ignored: it is
    /// looked up among the live ones before it is freed.
    pub unsafe extern "C" fn shmem_ctx_destroy(ctx: ShmemCtx) {
        if ctx.is_null() || ctx == &raw mut oneside_ctx_default {
            return;
        }
        {
            let mut live = live();
            let Some(at) = live.iter().position(|&c| c == ctx as usize) else {
                return;
            };
            live.swap_remove(at);
            LIVE_COUNT.store(live.len(), Ordering::Relaxed);
        }
        // SAFETY: every other context came from Box::into_raw in `create`, and
        // it was live until just now.
        let ctx = unsafe { Box::from_raw(ctx) };
        if let Some(inner) = ctx.inner {
            // The spec: destroying a context quiets it first.
            ok("shmem_ctx_destroy", inner.destroy());
        }
    }
}

/// Destroys every context still alive (`shmem_finalize`).
pub fn destroy_all() {
    let all = {
        let mut live = live();
        LIVE_COUNT.store(0, Ordering::Relaxed);
        std::mem::take(&mut *live)
    };
    for ctx in all {
        // SAFETY: each address was a live context made in `create`.
        let ctx = unsafe { Box::from_raw(ctx as ShmemCtx) };
        if let Some(inner) = ctx.inner {
            ok("shmem_finalize", inner.destroy());
        }
    }
}

export! {
    /// # Safety
    /// `ctx` must be a live context (crate docs; null makes the call
    /// return -1) and `team` null or valid for one write of a
    /// `shmem_team_t`.
    pub unsafe extern "C" fn shmem_ctx_get_team(ctx: ShmemCtx, team: *mut ShmemTeam) -> c_int {
        if ctx.is_null() || team.is_null() {
            return -1;
        }
        // SAFETY: a non-null context is the default or one of ours.
        let mine = unsafe { (*ctx).team };
        let mine = match mine.is_null() {
            true => crate::teams::world_handle(),
            false => mine,
        };
        // SAFETY: the caller passes a writable `shmem_team_t`.
        unsafe { team.write(mine) };
        0
    }
}

export! {
    /// # Safety
    /// `ctx` must be a live context (crate docs).
    pub unsafe extern "C" fn shmem_ctx_quiet(ctx: ShmemCtx) {
        ok("shmem_ctx_quiet", endpoint("shmem_ctx_quiet", ctx).quiet());
    }
}

export! {
    /// # Safety
    /// `ctx` must be a live context (crate docs).
    pub unsafe extern "C" fn shmem_ctx_fence(ctx: ShmemCtx) {
        ok("shmem_ctx_fence", endpoint("shmem_ctx_fence", ctx).fence());
    }
}
