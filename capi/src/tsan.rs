//! The race checker's eyes in a C program: `oshcc --check-races` compiles
//! with `-fsanitize=thread`, which GCC and Clang turn into a call before
//! every load and store (`__tsan_read8(addr)`), atomic
//! (`__tsan_atomic64_fetch_add`) and function entry, and links this
//! library instead of ThreadSanitizer's runtime. These are those entry
//! points: each passes the address, size and kind, and its return address
//! (the program's place), to `oneside::race::access`, which keeps only
//! symmetric memory and the buffers of pending non-blocking operations.
//!
//! Each entry is a two-instruction naked trampoline that puts its return
//! address in the sixth argument register and jumps to the Rust function
//! that does the work: the place costs one load, never a backtrace. The
//! atomics also do what they are asked (sequentially consistent, whatever
//! order was asked: never weaker), and in an OpenMP team each is a
//! release before and an acquire after between the team's threads
//! (`oneside::race::threads`). 128-bit atomics are not provided.
//! x86_64 and aarch64 only.

#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#![allow(clippy::missing_safety_doc)]

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};

/// A trampoline `$name` to `$target`, which takes the caller's arguments
/// and, sixth, the return address.
macro_rules! trampoline {
    ($($name:ident => $target:path;)*) => {$(
        #[unsafe(naked)]
        #[no_mangle]
        pub extern "C" fn $name() {
            #[cfg(target_arch = "x86_64")]
            core::arch::naked_asm!("mov r9, [rsp]", "jmp {t}", t = sym $target);
            #[cfg(target_arch = "aarch64")]
            core::arch::naked_asm!("mov x5, x30", "b {t}", t = sym $target);
        }
    )*};
}
pub(crate) use trampoline;

/// What an entry's access does to its bytes, as `oneside::race::access` numbers it.
pub(crate) const READ: u8 = 0;
pub(crate) const WRITE: u8 = 1;
/// An entry's size that its call passes (`__tsan_read_range(addr, size)`).
pub(crate) const SIZED: usize = 0;

/// Every plain load and store entry: `N` bytes (`SIZED`: the call's
/// second argument) at `addr`, doing `KIND`, made at `pc`.
pub(crate) extern "C" fn access<const N: usize, const KIND: u8>(
    addr: usize,
    size: usize,
    _: usize,
    _: usize,
    _: usize,
    pc: usize,
) {
    let len = if N == SIZED { size } else { N };
    oneside::race::access(addr, len, KIND, pc);
}

trampoline! {
    __tsan_read1 => access::<1, READ>;
    __tsan_read2 => access::<2, READ>;
    __tsan_read4 => access::<4, READ>;
    __tsan_read8 => access::<8, READ>;
    __tsan_read16 => access::<16, READ>;
    __tsan_unaligned_read2 => access::<2, READ>;
    __tsan_unaligned_read4 => access::<4, READ>;
    __tsan_unaligned_read8 => access::<8, READ>;
    __tsan_unaligned_read16 => access::<16, READ>;
    __tsan_volatile_read1 => access::<1, READ>;
    __tsan_volatile_read2 => access::<2, READ>;
    __tsan_volatile_read4 => access::<4, READ>;
    __tsan_volatile_read8 => access::<8, READ>;
    __tsan_write1 => access::<1, WRITE>;
    __tsan_write2 => access::<2, WRITE>;
    __tsan_write4 => access::<4, WRITE>;
    __tsan_write8 => access::<8, WRITE>;
    __tsan_write16 => access::<16, WRITE>;
    __tsan_unaligned_write2 => access::<2, WRITE>;
    __tsan_unaligned_write4 => access::<4, WRITE>;
    __tsan_unaligned_write8 => access::<8, WRITE>;
    __tsan_unaligned_write16 => access::<16, WRITE>;
    __tsan_volatile_write1 => access::<1, WRITE>;
    __tsan_volatile_write2 => access::<2, WRITE>;
    __tsan_volatile_write4 => access::<4, WRITE>;
    __tsan_volatile_write8 => access::<8, WRITE>;
    __tsan_read_range => access::<SIZED, READ>;
    __tsan_write_range => access::<SIZED, WRITE>;
}

/// The instrumented program's start-up call: its atomics will be seen,
/// so its OpenMP threads may keep views of their own.
#[no_mangle]
pub extern "C" fn __tsan_init() {
    oneside::race::threads::set_instrumented();
}

/// Function entry and exit: the checker keeps no shadow stack.
#[no_mangle]
pub extern "C" fn __tsan_func_entry(_caller: *mut libc::c_void) {}

#[no_mangle]
pub extern "C" fn __tsan_func_exit() {}

/// C++ virtual table pointers: not symmetric memory.
#[no_mangle]
pub extern "C" fn __tsan_vptr_update(_vptr: *mut *mut libc::c_void, _new: *mut libc::c_void) {}

#[no_mangle]
pub extern "C" fn __tsan_vptr_read(_vptr: *mut *mut libc::c_void) {}

#[no_mangle]
pub extern "C" fn __tsan_atomic_thread_fence(_order: libc::c_int) {
    let _edge = oneside::race::threads::Edge::new(oneside::race::threads::TEAM);
    std::sync::atomic::fence(SeqCst);
}

#[no_mangle]
pub extern "C" fn __tsan_atomic_signal_fence(_order: libc::c_int) {
    std::sync::atomic::compiler_fence(SeqCst);
}

/// The atomics of one width: `$t` the value, `$a` the atomic type.
macro_rules! atomics {
    ($n:literal, $t:ty, $a:ty, $load:ident, $store:ident, $xchg:ident, $add:ident, $sub:ident, $and:ident,
     $or:ident, $xor:ident, $nand:ident, $cas:ident, $casw:ident, $casv:ident) => {
        mod $load {
            use super::*;
            /// The atomic at `a`, noted for the race checker. Only the
            /// entry points below call it, with the address the compiler
            /// passed: that of an atomic object of the program's.
            fn at<'a>(a: *mut $t, pc: usize) -> &'a $a {
                oneside::race::access(a as usize, $n, 2, pc);
                // SAFETY: as in `read`.
                unsafe { <$a>::from_ptr(a) }
            }
            /// `at` for an atomic load, which writes nothing.
            fn read<'a>(a: *mut $t, pc: usize) -> &'a $a {
                oneside::race::access(a as usize, $n, 3, pc);
                // SAFETY: `a` is the address of the atomic object the
                // instrumented code operates on, valid and aligned.
                unsafe { <$a>::from_ptr(a) }
            }
            pub unsafe extern "C" fn load(a: *mut $t, _: i32, _: usize, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                read(a, pc).load(SeqCst)
            }
            pub unsafe extern "C" fn store(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).store(v, SeqCst)
            }
            pub unsafe extern "C" fn xchg(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).swap(v, SeqCst)
            }
            pub unsafe extern "C" fn add(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).fetch_add(v, SeqCst)
            }
            pub unsafe extern "C" fn sub(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).fetch_sub(v, SeqCst)
            }
            pub unsafe extern "C" fn and(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).fetch_and(v, SeqCst)
            }
            pub unsafe extern "C" fn or(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).fetch_or(v, SeqCst)
            }
            pub unsafe extern "C" fn xor(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).fetch_xor(v, SeqCst)
            }
            pub unsafe extern "C" fn nand(a: *mut $t, v: $t, _: i32, _: usize, _: usize, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                at(a, pc).fetch_nand(v, SeqCst)
            }
            /// `*a == *c`: stores `v`, 1; else `*c = *a`, 0.
            pub unsafe extern "C" fn cas(a: *mut $t, c: *mut $t, v: $t, _: i32, _: i32, pc: usize) -> libc::c_int {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                // SAFETY: `c` is the caller's expected value, a plain
                // object the compiler passes by address.
                let expected = unsafe { c.read() };
                match at(a, pc).compare_exchange(expected, v, SeqCst, SeqCst) {
                    Ok(_) => 1,
                    Err(now) => {
                        // SAFETY: as above; the failed exchange writes back.
                        unsafe { c.write(now) };
                        0
                    }
                }
            }
            pub unsafe extern "C" fn casv(a: *mut $t, c: $t, v: $t, _: i32, _: i32, pc: usize) -> $t {
                let _edge = oneside::race::threads::Edge::new(a as usize);
                match at(a, pc).compare_exchange(c, v, SeqCst, SeqCst) {
                    Ok(old) | Err(old) => old,
                }
            }
        }
        trampoline! {
            $load => $load::load;
            $store => $load::store;
            $xchg => $load::xchg;
            $add => $load::add;
            $sub => $load::sub;
            $and => $load::and;
            $or => $load::or;
            $xor => $load::xor;
            $nand => $load::nand;
            $cas => $load::cas;
            $casw => $load::cas;
            $casv => $load::casv;
        }
    };
}

atomics!(
    1,
    u8,
    AtomicU8,
    __tsan_atomic8_load,
    __tsan_atomic8_store,
    __tsan_atomic8_exchange,
    __tsan_atomic8_fetch_add,
    __tsan_atomic8_fetch_sub,
    __tsan_atomic8_fetch_and,
    __tsan_atomic8_fetch_or,
    __tsan_atomic8_fetch_xor,
    __tsan_atomic8_fetch_nand,
    __tsan_atomic8_compare_exchange_strong,
    __tsan_atomic8_compare_exchange_weak,
    __tsan_atomic8_compare_exchange_val
);
atomics!(
    2,
    u16,
    AtomicU16,
    __tsan_atomic16_load,
    __tsan_atomic16_store,
    __tsan_atomic16_exchange,
    __tsan_atomic16_fetch_add,
    __tsan_atomic16_fetch_sub,
    __tsan_atomic16_fetch_and,
    __tsan_atomic16_fetch_or,
    __tsan_atomic16_fetch_xor,
    __tsan_atomic16_fetch_nand,
    __tsan_atomic16_compare_exchange_strong,
    __tsan_atomic16_compare_exchange_weak,
    __tsan_atomic16_compare_exchange_val
);
atomics!(
    4,
    u32,
    AtomicU32,
    __tsan_atomic32_load,
    __tsan_atomic32_store,
    __tsan_atomic32_exchange,
    __tsan_atomic32_fetch_add,
    __tsan_atomic32_fetch_sub,
    __tsan_atomic32_fetch_and,
    __tsan_atomic32_fetch_or,
    __tsan_atomic32_fetch_xor,
    __tsan_atomic32_fetch_nand,
    __tsan_atomic32_compare_exchange_strong,
    __tsan_atomic32_compare_exchange_weak,
    __tsan_atomic32_compare_exchange_val
);
atomics!(
    8,
    u64,
    AtomicU64,
    __tsan_atomic64_load,
    __tsan_atomic64_store,
    __tsan_atomic64_exchange,
    __tsan_atomic64_fetch_add,
    __tsan_atomic64_fetch_sub,
    __tsan_atomic64_fetch_and,
    __tsan_atomic64_fetch_or,
    __tsan_atomic64_fetch_xor,
    __tsan_atomic64_fetch_nand,
    __tsan_atomic64_compare_exchange_strong,
    __tsan_atomic64_compare_exchange_weak,
    __tsan_atomic64_compare_exchange_val
);
