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

/// Defines `p$name` and `$name`, both exported unmangled and both running
/// the body, a private `body_$name`, in a `caller::Scope`; attributes
/// (docs, lint allowances) go on all three. On x86_64 `$name` is a naked
/// entry that notes its caller when a checking mode asks (`caller`) and
/// jumps to the body directly: a jump to the exported `p$name` would go
/// through the PLT, an exported name being one a tool may replace.
macro_rules! export {
    ($(#[$attr:meta])* pub unsafe extern "C" fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        paste::paste! {
            $(#[$attr])*
            #[inline(never)]
            #[allow(non_snake_case)]
            unsafe extern "C" fn [<body_ $name>]($($arg: $ty),*) $(-> $ret)? {
                let _scope = crate::caller::Scope::enter();
                $body
            }

            $(#[$attr])*
            #[no_mangle]
            pub unsafe extern "C" fn [<p $name>]($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: the same contract as the body it runs.
                unsafe { [<body_ $name>]($($arg),*) }
            }

            #[cfg(target_arch = "x86_64")]
            $(#[$attr])*
            #[unsafe(naked)]
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                noting_entry!([<body_ $name>])
            }

            #[cfg(not(target_arch = "x86_64"))]
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
            #[inline(never)]
            #[allow(non_snake_case)]
            extern "C" fn [<body_ $name>]($($arg: $ty),*) $(-> $ret)? {
                let _scope = crate::caller::Scope::enter();
                $body
            }

            $(#[$attr])*
            #[no_mangle]
            pub extern "C" fn [<p $name>]($($arg: $ty),*) $(-> $ret)? {
                [<body_ $name>]($($arg),*)
            }

            #[cfg(target_arch = "x86_64")]
            $(#[$attr])*
            #[unsafe(naked)]
            #[no_mangle]
            pub extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                noting_entry!([<body_ $name>])
            }

            #[cfg(not(target_arch = "x86_64"))]
            $(#[$attr])*
            #[no_mangle]
            pub extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                [<p $name>]($($arg),*)
            }
        }
    };
}

/// The body of a naked entry that jumps to `$target`, first passing its
/// return address to `caller::note` when `caller::NOTING` is set. Every
/// register that can carry an argument (rdi, rsi, rdx, rcx, r8, r9, rax
/// for variadics, xmm0-7) is saved around the call and restored, and the
/// stack is as it was at entry when it jumps: arguments on the stack stay
/// where the target looks for them. At entry rsp is 8 past a 16-byte
/// boundary; seven pushes and 128 bytes bring it to one for the call.
macro_rules! noting_entry {
    ($target:path) => {
        core::arch::naked_asm!(
            "cmp byte ptr [rip + {flag}], 0",
            "jne 2f",
            "jmp {target}",
            "2:",
            "push rdi",
            "push rsi",
            "push rdx",
            "push rcx",
            "push r8",
            "push r9",
            "push rax",
            "sub rsp, 128",
            "movdqu xmmword ptr [rsp], xmm0",
            "movdqu xmmword ptr [rsp + 16], xmm1",
            "movdqu xmmword ptr [rsp + 32], xmm2",
            "movdqu xmmword ptr [rsp + 48], xmm3",
            "movdqu xmmword ptr [rsp + 64], xmm4",
            "movdqu xmmword ptr [rsp + 80], xmm5",
            "movdqu xmmword ptr [rsp + 96], xmm6",
            "movdqu xmmword ptr [rsp + 112], xmm7",
            "mov rdi, qword ptr [rsp + 184]",
            "call {note}",
            "movdqu xmm0, xmmword ptr [rsp]",
            "movdqu xmm1, xmmword ptr [rsp + 16]",
            "movdqu xmm2, xmmword ptr [rsp + 32]",
            "movdqu xmm3, xmmword ptr [rsp + 48]",
            "movdqu xmm4, xmmword ptr [rsp + 64]",
            "movdqu xmm5, xmmword ptr [rsp + 80]",
            "movdqu xmm6, xmmword ptr [rsp + 96]",
            "movdqu xmm7, xmmword ptr [rsp + 112]",
            "add rsp, 128",
            "pop rax",
            "pop r9",
            "pop r8",
            "pop rcx",
            "pop rdx",
            "pop rsi",
            "pop rdi",
            "jmp {target}",
            flag = sym crate::caller::NOTING,
            note = sym crate::caller::note,
            target = sym $target,
        )
    };
}
