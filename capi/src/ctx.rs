//! Communication contexts (`shmem_ctx_t`). Every context shares the
//! default context's implementation, as OpenSHMEM allows: operations on
//! any context are ordered and completed by that context's `fence` and
//! `quiet`, which here order and complete everything the PE issued (a
//! stronger promise than the specification's). The default context is
//! safe to share between threads (`SHMEM_THREAD_MULTIPLE`), so every
//! context is, whatever its options. A C context does not yet map onto a
//! Rust `oneside::Ctx` with links of its own.

use crate::state::{ok, world};
use crate::teams::{team_handle, ShmemTeam};
use libc::{c_int, c_long};
use oneside::prelude::*;

/// What a `shmem_ctx_t` points to: the team it was created on.
pub struct Ctx {
    team: ShmemTeam,
}

/// A C `shmem_ctx_t`.
pub type ShmemCtx = *mut Ctx;

/// `SHMEM_CTX_DEFAULT` is this object's address.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut oneside_ctx_default: Ctx = Ctx {
    team: std::ptr::null_mut(),
};

/// The world rank of PE `pe` of `ctx`'s team (PEs of a context are
/// numbered in its team); -1, which every call rejects, if there is none.
#[inline(always)]
pub fn world_pe(ctx: ShmemCtx, pe: c_int) -> c_int {
    if ctx.is_null() {
        return pe;
    }
    // SAFETY: a non-null context is the default or one of ours, alive
    // until shmem_ctx_destroy.
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

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_create(_options: c_long, ctx: *mut ShmemCtx) -> c_int {
    world("shmem_ctx_create");
    let team = crate::teams::world_handle();
    // SAFETY: the caller passes a writable `shmem_ctx_t`.
    unsafe { ctx.write(Box::into_raw(Box::new(Ctx { team }))) };
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(team: ShmemTeam, _options: c_long, ctx: *mut ShmemCtx) -> c_int {
    if team.is_null() {
        // SAFETY: as in shmem_ctx_create.
        unsafe { ctx.write(std::ptr::null_mut()) };
        return -1;
    }
    team_handle("shmem_team_create_ctx", team);
    // SAFETY: as in shmem_ctx_create.
    unsafe { ctx.write(Box::into_raw(Box::new(Ctx { team }))) };
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_destroy(ctx: ShmemCtx) {
    if ctx.is_null() || ctx == &raw mut oneside_ctx_default {
        return;
    }
    // The spec: destroying a context quiets it first.
    ok("shmem_ctx_destroy", world("shmem_ctx_destroy").quiet());
    // SAFETY: every other context came from Box::into_raw above, and the
    // C API's contract is that it is destroyed once.
    drop(unsafe { Box::from_raw(ctx) });
}

#[no_mangle]
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

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_quiet(_ctx: ShmemCtx) {
    ok("shmem_ctx_quiet", world("shmem_ctx_quiet").quiet());
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_fence(_ctx: ShmemCtx) {
    ok("shmem_ctx_fence", world("shmem_ctx_fence").fence());
}
