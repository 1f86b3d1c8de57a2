//! How every OpenSHMEM routine leaves the library: under its own name and
//! under the profiling interface's (OpenSHMEM 1.5 section 10), as Sandia
//! OpenSHMEM does with `#pragma weak shmem_x = pshmem_x`.
//!
//! `export!` defines the body once as `p<name>` (`pshmem_putmem`,
//! `pstart_pes`, `p_my_pe`) and `<name>` as a call to it. A tool that
//! defines `shmem_putmem` in a library loaded ahead of this one (preloaded,
//! or linked first) is what the program's calls reach; the tool calls
//! `pshmem_putmem` for the real work. Calls inside this library go to the
//! Rust functions directly, so a tool sees the program's calls only, each
//! once. The header's inline direct paths step aside when a tool defines
//! any of the names they inline (`direct::interposed`).

/// Defines `p$name` with the body and `$name` forwarding to it, both
/// exported unmangled; attributes (docs, lint allowances) go on both.
macro_rules! export {
    ($(#[$attr:meta])* pub unsafe extern "C" fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        paste::paste! {
            $(#[$attr])*
            #[no_mangle]
            pub unsafe extern "C" fn [<p $name>]($($arg: $ty),*) $(-> $ret)? $body

            $(#[$attr])*
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: the same contract as the routine it forwards to.
                unsafe { [<p $name>]($($arg),*) }
            }
        }
    };
    ($(#[$attr:meta])* pub extern "C" fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        paste::paste! {
            $(#[$attr])*
            #[no_mangle]
            pub extern "C" fn [<p $name>]($($arg: $ty),*) $(-> $ret)? $body

            $(#[$attr])*
            #[no_mangle]
            pub extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                [<p $name>]($($arg),*)
            }
        }
    };
}
