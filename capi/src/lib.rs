//! # oneside-shmem: the OpenSHMEM 1.5 C API on oneside
//!
//! Builds `liboneside_shmem.so` and `liboneside_shmem.a`, which export the
//! OpenSHMEM 1.5 C API declared in `include/shmem.h`, plus `oshcc` (the
//! compiler wrapper). Programs run under `oshrun` (rlaunch) over shared
//! memory, TCP or verbs, or alone as one PE.
//!
//! Each module is one family of calls, written once as a generic function
//! over the Rust API (`oneside::World`) and instantiated per type from the
//! specification's type tables (`types`); the header is generated from the
//! same tables (`header`, checked by a test). Any error prints one line
//! naming the call and ends the job (`state::fail`).
//!
//! ## Safety
//!
//! Every exported function that reads or writes through a pointer or a
//! handle is `unsafe extern "C"`, and its `# Safety` section says what its
//! caller must guarantee: the OpenSHMEM specification's contract, less
//! what the library checks. Checked, so not undefined but the end of the
//! job with a message: a symmetric address (or range) outside the
//! symmetric heap and the program's global data, a misaligned atomic, a PE
//! number outside the job or team, an unknown comparison or signal
//! operator, a bad active set, `SHMEM_TEAM_INVALID` where a team is needed,
//! and any call outside `shmem_init` .. `shmem_finalize`. The sections use
//! three terms:
//!
//! - a *local buffer* of `n` elements: memory of this process, aligned for
//!   the element type and valid for `n` reads (a source) or writes (a
//!   destination) for the length of the call, which no other thread
//!   writes (nor, for a destination, reads) meanwhile; it may be null when
//!   `n` is 0;
//! - a *live context*: `SHMEM_CTX_DEFAULT`, null (taken as the default), or
//!   a context that `shmem_ctx_create` or `shmem_team_create_ctx` made and
//!   `shmem_ctx_destroy` has not destroyed, made on a team that is still
//!   live;
//! - a *live team*: `SHMEM_TEAM_WORLD`, `SHMEM_TEAM_SHARED`,
//!   `SHMEM_TEAM_INVALID` (null), or a team that `shmem_team_split_strided`
//!   or `shmem_team_split_2d` made and `shmem_team_destroy` has not
//!   destroyed.
//!
//! One rule holds for every call, safe or not, and is the whole program's
//! to keep, as the specification says: no call runs while `shmem_init`,
//! `shmem_init_thread` or `shmem_finalize` runs on another thread (the
//! state they write is read without a lock, `state`).
//!
//! Clippy's `missing_safety_doc` sees these functions only because the
//! workspace's `clippy.toml` sets `check-private-items`: they live in
//! private modules, which the lint otherwise skips.

#[macro_use]
mod export;
#[macro_use]
mod types;
#[macro_use]
mod convert;
#[macro_use]
mod next;

mod active_set;
mod alloc_note;
mod amo;
mod asan;
mod caller;
mod coll;
mod ctx;
mod direct;
#[cfg(test)]
mod header;
mod locks;
mod omp;
mod ompt;
mod once;
mod pthread;
mod python;
mod rma;
mod session;
mod setup;
mod state;
mod sync;
mod teams;
mod tsan;
