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
//! same tables (`header`, checked by a test). Every exported function is
//! `unsafe extern "C"`: its safety contract is the OpenSHMEM specification's
//! (valid pointers of the stated sizes, symmetric addresses where the
//! specification requires them), which is why they carry no `# Safety`
//! section each. Any error prints one line naming the call and ends the job
//! (`state::fail`).

#![allow(clippy::missing_safety_doc)]

#[macro_use]
mod export;
#[macro_use]
mod types;
#[macro_use]
mod convert;

mod active_set;
mod alloc_note;
mod amo;
mod coll;
mod ctx;
mod direct;
#[cfg(test)]
mod header;
mod python;
mod rma;
mod session;
mod setup;
mod state;
mod sync;
mod teams;
