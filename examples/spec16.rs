//! The OpenSHMEM 1.6 additions in the Rust API, each checked against a
//! computed expectation: blocked strided transfers (`ibput`, `ibget`), the
//! lone signal updates (`signal_set`, `signal_add`), completion by rank
//! (`pe_quiet`) and `flush`, on the world and on a context; and their
//! argument errors, which write nothing.
//!
//! Prints `spec16: ok over N ranks` from rank 0; exits 1 on a mismatch.

use oneside::prelude::*;
use oneside::{Cmp, Error, World};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spec16: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Fails with `what` unless `ok`.
fn expect(ok: bool, what: impl FnOnce() -> String) -> oneside::Result<()> {
    match ok {
        true => Ok(()),
        false => {
            eprintln!("spec16: check failed: {}", what());
            std::process::exit(1)
        }
    }
}

fn run() -> oneside::Result<()> {
    let world = oneside::init()?;
    let (me, n) = (world.rank(), world.size());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    blocks(&world, right, left)?;
    signals(&world, right)?;
    completion(&world, right, left)?;
    errors(&world)?;
    world.barrier()?;
    if me == 0 {
        println!("spec16: ok over {n} ranks");
    }
    world.finalize()
}

fn blocks(world: &World, right: usize, left: usize) -> oneside::Result<()> {
    let me = world.rank() as i64;
    let dst = world.alloc::<i64>(64)?;
    let src: Vec<i64> = (0..64).map(|i| 1000 * me + i).collect();
    world.local_write(&dst, 0, &[-1; 64])?;
    world.barrier()?;
    // 4 blocks of 3 from stride 5 to stride 7, into the right neighbour.
    world.ibput(&dst, right, 0, 7, &src, 5, 3, 4)?;
    world.barrier()?;
    let got = world.local_to_vec(&dst)?;
    for b in 0..4 {
        for j in 0..7 {
            let want = if j < 3 {
                1000 * left as i64 + 5 * b as i64 + j as i64
            } else {
                -1
            };
            expect(got[b * 7 + j] == want, || {
                format!("ibput [{}] = {}, want {want}", b * 7 + j, got[b * 7 + j])
            })?;
        }
    }
    // 3 blocks of 2 from the right's copy at stride 7, through a context.
    let ctx = world.ctx_create()?;
    let mut back = vec![0i64; 9];
    ctx.ibget(&dst, right, 0, 7, &mut back, 3, 2, 3)?;
    for b in 0..3 {
        for j in 0..2 {
            let want = 1000 * me + 5 * b as i64 + j as i64;
            expect(back[b * 3 + j] == want, || {
                format!("ibget [{}] = {}, want {want}", b * 3 + j, back[b * 3 + j])
            })?;
        }
    }
    ctx.destroy()?;
    world.barrier()?;
    world.free(dst)
}

fn signals(world: &World, right: usize) -> oneside::Result<()> {
    let sig = world.alloc::<u64>(2)?;
    world.barrier()?;
    world.signal_set(&sig, right, 0, 40)?;
    world.signal_add(&sig, right, 0, 2)?;
    let ctx = world.ctx_create()?;
    ctx.signal_add(&sig, right, 1, 5)?;
    ctx.signal_add(&sig, right, 1, 6)?;
    ctx.quiet()?;
    world.quiet()?;
    expect(world.signal_wait_until(&sig, 0, Cmp::Eq(42))? == 42, || {
        "set then add".into()
    })?;
    world.barrier()?;
    let eleven = world.signal_fetch(&sig, 1)?;
    expect(eleven == 11, || format!("two adds on a context gave {eleven}"))?;
    ctx.destroy()?;
    world.barrier()?;
    world.free(sig)
}

fn completion(world: &World, right: usize, left: usize) -> oneside::Result<()> {
    let me = world.rank() as i64;
    let data = world.alloc::<i64>(16)?;
    let flag = world.alloc::<u64>(1)?;
    world.barrier()?;
    for i in 0..16 {
        world.put_value(&data, right, i, 7 * me + i as i64)?;
    }
    world.pe_quiet(&[right])?;
    world.pe_quiet(&[])?;
    world.put_value(&flag, right, 0, 1)?;
    world.wait_until(&flag, 0, |v| v == 1)?;
    let got = world.local_to_vec(&data)?;
    for (i, &v) in got.iter().enumerate() {
        let want = 7 * left as i64 + i as i64;
        expect(v == want, || format!("pe_quiet: data[{i}] = {v}, want {want}"))?;
    }
    // A context's puts, pushed out by flush, completed by pe_quiet.
    let ctx = world.ctx_create()?;
    world.barrier()?;
    for i in 0..16 {
        ctx.put_value(&data, right, i, -(7 * me + i as i64))?;
    }
    ctx.flush()?;
    ctx.pe_quiet(&[right, right])?;
    ctx.destroy()?;
    world.barrier()?;
    let got = world.local_to_vec(&data)?;
    for (i, &v) in got.iter().enumerate() {
        let want = -(7 * left as i64 + i as i64);
        expect(v == want, || format!("ctx pe_quiet: data[{i}] = {v}, want {want}"))?;
    }
    world.barrier()?;
    world.free(flag)?;
    world.free(data)
}

fn errors(world: &World) -> oneside::Result<()> {
    let n = world.size();
    let dst = world.alloc::<i64>(8)?;
    let err = world.pe_quiet(&[n]).unwrap_err();
    expect(matches!(err.kind(), Error::RankOutOfRange { .. }), || {
        format!("pe_quiet of rank {n}: {err}")
    })?;
    // 3 blocks of 2 at stride 4 need 10 source elements; 9 is an error.
    let err = world.ibput(&dst, 0, 0, 2, &[1; 9], 4, 2, 3).unwrap_err();
    expect(matches!(err.kind(), Error::IndexOutOfRange { .. }), || {
        format!("short source: {err}")
    })?;
    // 3 blocks of 2 at stride 4 reach element 10 of an 8-element object.
    let err = world.ibput(&dst, 0, 0, 4, &[1; 6], 2, 2, 3).unwrap_err();
    expect(matches!(err.kind(), Error::IndexOutOfRange { .. }), || {
        format!("past the object: {err}")
    })?;
    world.barrier()?;
    world.free(dst)
}
