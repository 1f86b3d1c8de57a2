//! Non-blocking put and get (OpenSHMEM's `put_nbi`/`get_nbi`): they return
//! at once and [`quiet`](World::quiet) completes them, so a rank can compute
//! while its transfers move.
//!
//! A non-blocking put copies or stages its source before it returns
//! (shared memory copies at once, TCP appends it to the peer's batch, verbs
//! copies it into registered staging memory), so [`World::put_nbi`] borrows
//! `src` only for the call.
//!
//! A non-blocking get writes into the caller's memory *later*. Safe Rust
//! must not read, reuse or free that memory before the write lands, so
//! gets live in a scope, as threads do in `std::thread::scope`:
//! [`World::nbi`] runs a closure that receives an [`Nbi`] handle, and ends
//! with a quiet. A destination handed to [`Nbi::get`] stays mutably
//! borrowed until the scope returns, so it cannot be read inside it, and a
//! buffer that does not outlive the scope cannot be handed in at all. If
//! the closure panics, the scope still completes (or abandons, on a broken
//! link) every get before unwinding past the buffers.
//!
//! ```no_run
//! # let world = oneside::init()?;
//! # let halo = world.alloc::<f64>(1024)?;
//! let mut left = vec![0.0; 1024];
//! let mut right = vec![0.0; 1024];
//! world.nbi(|s| {
//!     s.get(&halo, 0, 0, &mut left)?;
//!     s.get(&halo, 1 % world.size(), 0, &mut right)?;
//!     // ... compute on something else while both transfers move ...
//!     Ok(())
//! })?; // quiet: both buffers are filled here
//! println!("{}", left[0] + right[0]);
//! # Ok::<(), oneside::Error>(())
//! ```
//!
//! Reading a destination before the scope has completed it does not compile:
//!
//! ```compile_fail
//! # let world = oneside::init()?;
//! # let halo = world.alloc::<f64>(8)?;
//! let mut buf = [0.0; 8];
//! world.nbi(|s| {
//!     s.get(&halo, 0, 0, &mut buf)?;
//!     println!("{}", buf[0]); // error: `buf` is still borrowed by the get
//!     Ok(())
//! })?;
//! # Ok::<(), oneside::Error>(())
//! ```
//!
//! Nor does handing in a buffer that dies inside the scope:
//!
//! ```compile_fail
//! # let world = oneside::init()?;
//! # let halo = world.alloc::<f64>(8)?;
//! world.nbi(|s| {
//!     let mut buf = [0.0; 8];
//!     s.get(&halo, 0, 0, &mut buf)?; // error: `buf` does not live long enough
//!     Ok(())
//! })?;
//! # Ok::<(), oneside::Error>(())
//! ```

use crate::error::Result;
use crate::links::Channel;
use crate::rma::Rma;
use crate::sym::{Pod, Sym};
use crate::world::World;
use std::marker::PhantomData;

/// The handle of a non-blocking scope; see [`World::nbi`].
pub struct Nbi<'scope, 'env: 'scope> {
    world: &'env World,
    /// Invariant in 'scope, so destinations are borrowed for exactly the scope.
    scope: PhantomData<&'scope mut &'scope ()>,
}

/// Completes the scope's transfers even when its closure panics.
struct QuietOnExit<'w>(&'w World);

impl Drop for QuietOnExit<'_> {
    fn drop(&mut self) {
        // Only reached by unwinding: the normal exit quiets and forgets the
        // guard. A failed quiet breaks the link, which forgets every
        // destination, so nothing is written into a buffer after this.
        let _ = self.0.quiet();
    }
}

impl World {
    /// Runs `body` with a scope for non-blocking gets (and puts), then
    /// quiets: every destination handed to [`Nbi::get`] is filled when this
    /// returns `Ok`.
    #[track_caller]
    pub fn nbi<'env, R>(
        &'env self,
        body: impl for<'scope> FnOnce(&'scope Nbi<'scope, 'env>) -> Result<R>,
    ) -> Result<R> {
        crate::error::located(|| {
            let scope = Nbi {
                world: self,
                scope: PhantomData,
            };
            let guard = QuietOnExit(self);
            let outcome = body(&scope);
            std::mem::forget(guard);
            let quiet = self.quiet();
            let value = outcome?;
            quiet.map(|()| value)
        })
    }
}

impl<'scope, 'env> Nbi<'scope, 'env> {
    /// Starts reading `dst.len()` elements of `target`'s copy of `sym` from
    /// `index` into `dst`. `dst` is filled when the scope ends (or after a
    /// [`quiet`](Nbi::quiet) in it), and stays borrowed until the scope ends.
    #[track_caller]
    pub fn get<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, dst: &'scope mut [T]) -> Result<()> {
        crate::error::located(|| {
            let offset = self.world.checked_offset("get_nbi", sym, target, index, dst.len())?;
            let bytes: &'scope mut [u8] = bytemuck::cast_slice_mut(dst);
            // SAFETY: `dst` is mutably borrowed for 'scope, which outlasts the
            // quiet at the end of `World::nbi` (run on unwinding too), so it
            // stays valid and untouched until the transport has written it.
            unsafe {
                self.world
                    .links
                    .copy_out_nbi(Channel::Default, target, offset, bytes.as_mut_ptr(), bytes.len())
            }
        })
    }

    /// [`World::put_nbi`], for symmetry inside a scope.
    #[track_caller]
    pub fn put<T: Pod>(&self, sym: &Sym<T>, target: usize, index: usize, src: &[T]) -> Result<()> {
        self.world.put_nbi(sym, target, index, src)
    }

    /// Completes every transfer started so far ([`World::quiet`]). The
    /// destinations stay borrowed until the scope ends.
    #[track_caller]
    pub fn quiet(&self) -> Result<()> {
        self.world.quiet()
    }

    /// The world this scope belongs to.
    pub fn world(&self) -> &'env World {
        self.world
    }
}
