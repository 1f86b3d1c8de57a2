//! The C caller of the current call, noted at its entry: the return
//! address the program's `call shmem_put` pushed, read by the exported
//! name's entry (`export!`) when a checking mode needs it on every call
//! (`--debug`'s collective records, the race checker's records of every
//! put, get and atomic). Finding it afterwards by unwinding cost a
//! microsecond a call (`oneside::site::c_caller_pc`, still the fallback).
//!
//! On x86_64 the exported `shmem_put` is a naked entry: with noting off it
//! is one test and a jump to `pshmem_put`; on, it saves the argument
//! registers, passes its return address to [`note`], restores them and
//! jumps. `pshmem_put` opens a [`Scope`], which takes the noted address
//! for this call only: one noted on entering through `shmem_put` from
//! outside the library. A call that entered another way (a tool calling
//! `pshmem_put`, the library calling its own entry, another
//! architecture) has none, and the caller is found by unwinding, as
//! before. The address is never one left over from an earlier call.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Whether entries note their caller: set at `shmem_init` when a checking
/// mode is on. Read by the naked entries as a byte.
pub static NOTING: AtomicBool = AtomicBool::new(false);

/// This thread's noted caller and how deep it is in the library's calls.
struct Noted {
    /// The return address the last noting entry passed.
    pc: Cell<usize>,
    /// Noted by an entry whose scope has not opened yet.
    fresh: Cell<bool>,
    /// The outermost scope took a noted address: `pc` is this call's.
    valid: Cell<bool>,
    /// Open scopes.
    depth: Cell<u32>,
}

thread_local! {
    static NOTED: Noted = const {
        Noted {
            pc: Cell::new(0),
            fresh: Cell::new(false),
            valid: Cell::new(false),
            depth: Cell::new(0),
        }
    };
}

/// Turns noting on or off (at `shmem_init`: on when `--debug` or the race
/// checker is), and lets the oneside crate ask for the noted caller.
pub fn set_noting(on: bool) {
    let _ = NOTED.try_with(|n| n.fresh.set(false));
    NOTING.store(on, Relaxed);
    if on {
        oneside::site::set_noted_caller(noted);
    }
}

/// A noting entry's report of its return address. Only the outermost
/// entry's counts: the library calling one of its own entries passes an
/// address inside the library.
pub extern "C" fn note(pc: usize) {
    let _ = NOTED.try_with(|n| {
        if n.depth.get() == 0 {
            n.pc.set(pc);
            n.fresh.set(true);
        }
    });
}

/// The C caller of the current call, if its entry noted it; else 0.
fn noted() -> usize {
    NOTED
        .try_with(|n| match n.valid.get() {
            true => n.pc.get(),
            false => 0,
        })
        .unwrap_or(0)
}

/// One call's stay in the library (the body of `pshmem_x`): the outermost
/// one takes the address its entry noted, if it entered through one.
pub struct Scope {
    open: bool,
}

impl Scope {
    #[inline(always)]
    pub fn enter() -> Scope {
        if !NOTING.load(Relaxed) {
            return Scope { open: false };
        }
        Scope::open()
    }

    #[inline(never)]
    fn open() -> Scope {
        let open = NOTED
            .try_with(|n| {
                let depth = n.depth.get();
                if depth == 0 {
                    n.valid.set(n.fresh.get());
                }
                n.fresh.set(false);
                n.depth.set(depth + 1);
            })
            .is_ok();
        Scope { open }
    }
}

impl Drop for Scope {
    #[inline(always)]
    fn drop(&mut self) {
        if self.open {
            let _ = NOTED.try_with(|n| {
                let depth = n.depth.get().saturating_sub(1);
                n.depth.set(depth);
                if depth == 0 {
                    n.valid.set(false);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_call_entered_through_a_noting_entry_has_a_caller() {
        NOTING.store(true, Relaxed);
        // Entered through the exported name: the noted address is this call's.
        note(0x1234);
        {
            let _outer = Scope::enter();
            assert_eq!(noted(), 0x1234);
            // The library calling its own entry notes nothing new.
            note(0x9999);
            let _inner = Scope::enter();
            assert_eq!(noted(), 0x1234);
        }
        // Returned: nothing is left over for the next call.
        assert_eq!(noted(), 0);
        // Entered as pshmem_x (a tool's call): no noted caller.
        {
            let _scope = Scope::enter();
            assert_eq!(noted(), 0);
        }
        NOTING.store(false, Relaxed);
    }
}
