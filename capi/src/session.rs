//! OpenSHMEM 1.6's completion by PE and communication sessions.
//!
//! `shmem_pe_quiet` completes the operations to the named PEs only: over
//! TCP only their links are asked for an acknowledgement
//! (`oneside::Rma::pe_quiet`), elsewhere it is a quiet.
//!
//! A session (`shmem_ctx_session_start` .. `_stop`) tells the library that
//! a run of small operations on one context follows. Its options are hints,
//! as the specification says. On this library small puts, signals and
//! non-fetching atomics over TCP already wait in the context's batch until
//! it fills or until something needs them out; `_stop` pushes the batch
//! out, so the session's last operations reach their targets without a
//! further call. On shared memory and verbs every operation leaves at once,
//! and a session changes nothing.

use crate::ctx::{endpoint, world_pe, ShmemCtx};
use crate::state::{fail, ok};
use libc::{c_int, c_long};
use oneside::prelude::*;

/// `SHMEM_CTX_SESSION_BATCH`, the one session option.
const SESSION_BATCH: c_long = 1;
/// `SHMEM_CTX_SESSION_TOTAL_OPS`, the one configuration field.
const SESSION_TOTAL_OPS: c_long = 1;

/// `shmem_ctx_session_config_t`.
#[repr(C)]
pub struct SessionConfig {
    total_ops: c_long,
}

/// World ranks of the PEs `target_pes[..npes]`, numbered in `ctx`'s team.
///
/// # Safety
/// `target_pes` must be a local buffer of `npes` ints and `ctx` a live
/// context (crate docs).
unsafe fn targets(ctx: ShmemCtx, target_pes: *const c_int, npes: usize) -> Vec<usize> {
    if npes == 0 {
        return Vec::new();
    }
    // SAFETY: the caller passes `npes` ints.
    let pes = unsafe { std::slice::from_raw_parts(target_pes, npes) };
    pes.iter().map(|&pe| crate::convert::pe(world_pe(ctx, pe))).collect()
}

export! {
    /// # Safety
    /// `target_pes` must be a local buffer of `npes` ints (crate docs).
    pub unsafe extern "C" fn shmem_pe_quiet(target_pes: *const c_int, npes: usize) {
        const API: &str = "shmem_pe_quiet";
        // SAFETY: forwarded from the caller.
        let ranks = unsafe { targets(std::ptr::null_mut(), target_pes, npes) };
        ok(API, endpoint(API, std::ptr::null_mut()).pe_quiet(&ranks));
    }
}

export! {
    /// # Safety
    /// `target_pes` must be a local buffer of `npes` ints and `ctx` a live
    /// context (crate docs).
    pub unsafe extern "C" fn shmem_ctx_pe_quiet(ctx: ShmemCtx, target_pes: *const c_int, npes: usize) {
        const API: &str = "shmem_ctx_pe_quiet";
        // SAFETY: forwarded from the caller.
        let ranks = unsafe { targets(ctx, target_pes, npes) };
        ok(API, endpoint(API, ctx).pe_quiet(&ranks));
    }
}

export! {
    /// # Safety
    /// `ctx` must be a live context (crate docs); when `config_mask` names
    /// `SHMEM_CTX_SESSION_TOTAL_OPS`, `config` must be null (an error) or
    /// valid for reading a `shmem_ctx_session_config_t`.
    pub unsafe extern "C" fn shmem_ctx_session_start(
        ctx: ShmemCtx,
        options: c_long,
        config: *const SessionConfig,
        config_mask: c_long,
    ) {
        const API: &str = "shmem_ctx_session_start";
        if ctx.is_null() {
            return;
        }
        endpoint(API, ctx);
        if options & !SESSION_BATCH != 0 {
            fail(API, &format!("unknown option bits {:#x} (use SHMEM_CTX_SESSION_BATCH)", options & !SESSION_BATCH));
        }
        if config_mask & SESSION_TOTAL_OPS != 0 {
            if config.is_null() {
                fail(API, &"config_mask names SHMEM_CTX_SESSION_TOTAL_OPS but config is NULL");
            }
            // SAFETY: the caller passes a readable config when the mask names a field.
            let total = unsafe { (*config).total_ops };
            if total < 0 {
                fail(API, &format!("total_ops {total} is negative"));
            }
        }
    }
}

export! {
    /// # Safety
    /// `ctx` must be a live context (crate docs).
    pub unsafe extern "C" fn shmem_ctx_session_stop(ctx: ShmemCtx) {
        const API: &str = "shmem_ctx_session_stop";
        if ctx.is_null() {
            return;
        }
        ok(API, endpoint(API, ctx).flush());
    }
}
