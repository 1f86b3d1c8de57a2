//! The profiling level, owned by the profile, as `shmem_pcontrol` sets it (OpenSHMEM 1.5 section
//! 10.2): 0 stops profiling, 1 is the default level, 2 asks for detail, and
//! other values mean whatever a profiling tool gives them. The library's
//! own profiling reads it here; a tool that wraps the C API sees the call.

use std::sync::atomic::{AtomicI32, Ordering};

/// The default level: profiling (when a tool or the runtime profiles) on.
pub const DEFAULT_LEVEL: i32 = 1;

static LEVEL: AtomicI32 = AtomicI32::new(DEFAULT_LEVEL);

/// Sets this process's profiling level (`shmem_pcontrol`).
pub fn set_profiling_level(level: i32) {
    LEVEL.store(level, Ordering::Relaxed);
    super::level_changed(level);
}

/// This process's profiling level: `DEFAULT_LEVEL` until set.
#[inline]
pub fn profiling_level() -> i32 {
    LEVEL.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_is_the_last_one_set() {
        assert_eq!(profiling_level(), DEFAULT_LEVEL);
        set_profiling_level(0);
        assert_eq!(profiling_level(), 0);
        set_profiling_level(2);
        assert_eq!(profiling_level(), 2);
        set_profiling_level(DEFAULT_LEVEL);
    }
}
