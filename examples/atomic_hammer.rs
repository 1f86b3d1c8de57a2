//! Every kind of atomic, from every rank at once, checked exactly: fetch-add
//! on a counter at rank 0, at the rank itself and at its right neighbour;
//! 32-bit adds that wrap on the two halves of one 64-bit word of rank 0 (a
//! NIC that clobbered the neighbouring half would show); a compare-and-swap
//! increment loop; a swap chain (every value swapped in comes out exactly
//! once); 64- and 32-bit sets racing an add on the other half; or and xor;
//! put-with-signal (add and set) whose data must be there when the signal
//! is; a lock-protected plain get + put increment; and non-blocking gets
//! (a fenced get-then-put must read the old value; a 5 MiB get in chunks).
//! After a barrier rank 0 checks every total, and that the values its
//! counter's fetch-adds returned were all distinct.
//!
//! `atomic_hammer [ITERATIONS]` (default 200). Prints one
//! `atomic_hammer: rank R/N ok: ...` line per rank, or MISMATCH lines and
//! exits 1.

use oneside::prelude::*;
use oneside::{Cmp, Lock, SignalOp, Sym, World};
use std::process::ExitCode;

/// Increments of the low and high 32-bit halves: both wrap often, and a
/// carry out of the low half would corrupt the high one.
const LOW_STEP: u32 = 0x9000_0001;
const HIGH_STEP: u32 = 0xf000_0003;
/// Marks the data sent with a set signal, apart from that of an add signal.
const SET_TAG: u64 = 1 << 63;
/// The large non-blocking get: several RDMA READ chunks, wrapping the staging ring.
const BIG_BYTES: usize = 5 << 20;
/// How many times the large get runs.
const BIG_GETS: usize = 3;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("atomic_hammer: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The symmetric objects, allocated in the same order on every rank.
struct Objects {
    /// [0]: fetch-added by everyone at rank 0; [1]: by each rank at itself;
    /// [2]: by each rank at its right neighbour.
    counters: Sym<u64>,
    halves: Sym<u32>,
    cas: Sym<u64>,
    swap: Sym<u64>,
    set64: Sym<u64>,
    /// [0]: added to by the rank itself; [1]: set by its left neighbour.
    set32: Sym<u32>,
    bits: Sym<u64>,
    plain: Sym<u64>,
    /// [i]: data of add signal i; [k + i]: data of set signal i.
    mail: Sym<u64>,
    /// [0]: add signal; [1]: set signal.
    sig: Sym<u64>,
    /// On rank 0: what every rank's fetch-adds and swaps returned.
    seen: Sym<u64>,
    swapped: Sym<u64>,
    verdict: Sym<u64>,
    /// Written only by the left neighbour, read back by it before each write.
    scratch: Sym<u64>,
    /// A pattern of this rank's, read whole by the left neighbour.
    big: Sym<u8>,
    lock: Lock,
}

impl Objects {
    fn alloc(world: &World, k: usize) -> oneside::Result<Objects> {
        let n = world.size() * k;
        Ok(Objects {
            counters: world.alloc(3)?,
            halves: world.alloc(2)?,
            cas: world.alloc(1)?,
            swap: world.alloc(1)?,
            set64: world.alloc(1)?,
            set32: world.alloc(2)?,
            bits: world.alloc(1)?,
            plain: world.alloc(1)?,
            mail: world.alloc(2 * k)?,
            sig: world.alloc(2)?,
            seen: world.alloc(n)?,
            swapped: world.alloc(n)?,
            verdict: world.alloc(1)?,
            scratch: world.alloc(1)?,
            big: world.alloc(BIG_BYTES)?,
            lock: world.alloc_lock()?,
        })
    }
}

fn run() -> oneside::Result<bool> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let k: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let o = Objects::alloc(&world, k)?;
    world.local_write(&o.big, 0, &big_pattern(rank))?;
    world.barrier()?;
    let mut mismatches = Vec::new();
    let (fetched, swapped) = hammer(&world, &o, k, &mut mismatches)?;
    world.barrier()?;
    world.put(&o.seen, 0, rank * k, &fetched)?;
    world.put(&o.swapped, 0, rank * k, &swapped)?;
    world.barrier()?;
    if rank == 0 {
        let verdict = if check_totals(&world, &o, k, &mut mismatches)? {
            1
        } else {
            2
        };
        for target in 0..size {
            world.put_value(&o.verdict, target, 0, verdict)?;
        }
    }
    world.barrier()?;
    let totals_ok = world.local_to_vec(&o.verdict)?[0] == 1;
    for m in &mismatches {
        println!("atomic_hammer: rank {rank}: MISMATCH {m}");
    }
    if !totals_ok && rank != 0 {
        println!("atomic_hammer: rank {rank}: MISMATCH in the totals (rank 0 names them)");
    }
    let ok = mismatches.is_empty() && totals_ok;
    if ok {
        let atomics = world.rdma_device().map_or("cpu".to_string(), |d| format!("nic {d}"));
        let path = world.transport_to((rank + 1) % size)?;
        println!(
            "atomic_hammer: rank {rank}/{size} ok: {k} iterations, atomics by {atomics}, right neighbour via {path}"
        );
    }
    world.finalize()?;
    Ok(ok)
}

fn mail_value(rank: usize, i: usize) -> u64 {
    ((rank as u64 + 1) << 32) | (i as u64 + 1)
}

/// The iterations; returns what this rank's fetch-adds at rank 0 and its
/// swaps returned.
fn hammer(world: &World, o: &Objects, k: usize, mismatches: &mut Vec<String>) -> oneside::Result<(Vec<u64>, Vec<u64>)> {
    let (rank, size) = (world.rank(), world.size());
    let (right, left) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut fetched = Vec::with_capacity(k);
    let mut swapped = Vec::with_capacity(k);
    for i in 0..k {
        fetched.push(world.atomic_fetch_add(&o.counters, 0, 0, 1)?);
        world.atomic_fetch_add(&o.counters, rank, 1, 1)?;
        if i % 2 == 0 {
            world.atomic_fetch_add(&o.halves, 0, 0, LOW_STEP)?;
            world.atomic_add(&o.halves, 0, 1, HIGH_STEP)?;
        } else {
            world.atomic_add(&o.halves, 0, 0, LOW_STEP)?;
            world.atomic_fetch_add(&o.halves, 0, 1, HIGH_STEP)?;
        }

        let mut old = world.atomic_fetch(&o.cas, 0, 0)?;
        loop {
            let seen = world.atomic_compare_swap(&o.cas, 0, 0, old, old + 1)?;
            if seen == old {
                break;
            }
            old = seen;
        }

        swapped.push(world.atomic_swap(&o.swap, 0, 0, mail_value(rank, i))?);
        world.atomic_set(&o.set64, right, 0, mail_value(rank, i))?;
        world.atomic_set(&o.set32, right, 1, i as u32 + 1)?;
        world.atomic_add(&o.set32, rank, 0, 1)?;

        world.atomic_or(&o.bits, 0, 0, 1 << (rank % 32))?;
        // Only high bits, so the or above can never fall between the two.
        let pattern = ((i as u64 + 1).wrapping_mul(0x9e37_79b9) & 0xffff_ffff) << 32;
        world.atomic_fetch_xor(&o.bits, 0, 0, pattern)?;
        world.atomic_xor(&o.bits, 0, 0, pattern)?;

        let data = mail_value(rank, i);
        world.put_signal(&o.mail, right, i, &[data], &o.sig, 0, SignalOp::Add, 1)?;
        world.put_signal(
            &o.mail,
            right,
            k + i,
            &[data | SET_TAG],
            &o.sig,
            1,
            SignalOp::Set,
            i as u64 + 1,
        )?;
        world.signal_wait_until(&o.sig, 0, Cmp::Ge(i as u64 + 1))?;
        world.signal_wait_until(&o.sig, 1, Cmp::Ge(i as u64 + 1))?;
        let mut got = [0u64; 1];
        for (index, want) in [(i, mail_value(left, i)), (k + i, mail_value(left, i) | SET_TAG)] {
            world.local_read(&o.mail, index, &mut got)?;
            if got[0] != want {
                mismatches.push(format!(
                    "mail[{index}] is {:#x} after its signal, expected {want:#x}",
                    got[0]
                ));
            }
        }

        let guard = world.lock(&o.lock)?;
        let value = world.get_value(&o.plain, 0, 0)?;
        world.put_value(&o.plain, 0, 0, value + 1)?;
        guard.unlock()?;

        nonblocking(world, o, i, k, mismatches)?;
    }
    Ok((fetched, swapped))
}

fn big_pattern(rank: usize) -> Vec<u8> {
    (0..BIG_BYTES).map(|j| (j * 7 + rank * 13 + j / 4093) as u8).collect()
}

/// Iteration `i`'s non-blocking gets from the right neighbour: its scratch
/// word, fenced before a put to the same word (so the get reads what this
/// rank put there in the previous iteration), and now and then all of `big`.
/// The fence also orders the (non-fetching, every other time) add to the
/// neighbour's counters[2] just before it ahead of the put, which the
/// neighbour checks.
fn nonblocking(world: &World, o: &Objects, i: usize, k: usize, mismatches: &mut Vec<String>) -> oneside::Result<()> {
    let right = (world.rank() + 1) % world.size();
    // The left neighbour adds to our counters[2] before its fenced put of
    // scratch, so a scratch value is never ahead of those adds.
    let put = world.wait_until(&o.scratch, 0, |_| true)?;
    let mut added = [0u64];
    world.local_read(&o.counters, 2, &mut added)?;
    if added[0] < put {
        mismatches.push(format!(
            "counters[2] is {} after scratch {put}: an add overtook the fence",
            added[0]
        ));
    }
    match i % 2 {
        0 => world.atomic_add(&o.counters, right, 2, 1)?,
        _ => world.atomic_fetch_add(&o.counters, right, 2, 1).map(drop)?,
    }
    let mut old = [u64::MAX];
    let mut big = if i.is_multiple_of(k.div_ceil(BIG_GETS)) {
        vec![0u8; BIG_BYTES]
    } else {
        Vec::new()
    };
    world.nbi(|s| {
        s.get(&o.scratch, right, 0, &mut old)?;
        world.fence()?;
        world.put_value(&o.scratch, right, 0, i as u64 + 1)?;
        if !big.is_empty() {
            s.get(&o.big, right, 0, &mut big)?;
        }
        Ok(())
    })?;
    if old[0] != i as u64 {
        mismatches.push(format!(
            "get_nbi of scratch at rank {right} read {}, expected {i}",
            old[0]
        ));
    }
    if !big.is_empty() && big != big_pattern(right) {
        let at = big.iter().zip(big_pattern(right)).position(|(a, b)| *a != b);
        mismatches.push(format!("get_nbi of big at rank {right} differs from byte {at:?}"));
    }
    Ok(())
}

/// Rank 0, after the barrier: every total, exactly.
fn check_totals(world: &World, o: &Objects, k: usize, mismatches: &mut Vec<String>) -> oneside::Result<bool> {
    let size = world.size();
    let n = (size * k) as u64;
    let before = mismatches.len();
    let mut expect = |what: String, got: u64, want: u64| {
        if got != want {
            mismatches.push(format!("{what} is {got:#x}, expected {want:#x}"));
        }
    };
    expect("counters[0] at rank 0".into(), world.get_value(&o.counters, 0, 0)?, n);
    for t in 0..size {
        let left = (t + size - 1) % size;
        expect(
            format!("counters[1] at rank {t}"),
            world.get_value(&o.counters, t, 1)?,
            k as u64,
        );
        expect(
            format!("counters[2] at rank {t}"),
            world.get_value(&o.counters, t, 2)?,
            k as u64,
        );
        let set64 = world.get_value(&o.set64, t, 0)?;
        expect(format!("set64 at rank {t}"), set64, mail_value(left, k - 1));
        for half in 0..2 {
            let value = u64::from(world.get_value(&o.set32, t, half)?);
            expect(format!("set32[{half}] at rank {t}"), value, k as u64);
            expect(
                format!("sig[{half}] at rank {t}"),
                world.get_value(&o.sig, t, half)?,
                k as u64,
            );
        }
    }
    let low = u64::from(world.get_value(&o.halves, 0, 0)?);
    let high = u64::from(world.get_value(&o.halves, 0, 1)?);
    expect(
        "halves[0] at rank 0".into(),
        low,
        u64::from(LOW_STEP.wrapping_mul(n as u32)),
    );
    expect(
        "halves[1] at rank 0".into(),
        high,
        u64::from(HIGH_STEP.wrapping_mul(n as u32)),
    );
    expect("cas at rank 0".into(), world.get_value(&o.cas, 0, 0)?, n);
    expect("plain (locked) at rank 0".into(), world.get_value(&o.plain, 0, 0)?, n);
    let bits = (0..size).fold(0u64, |acc, r| acc | 1 << (r % 32));
    expect("bits at rank 0".into(), world.get_value(&o.bits, 0, 0)?, bits);

    let mut seen = world.local_to_vec(&o.seen)?;
    seen.sort_unstable();
    if seen != (0..n).collect::<Vec<_>>() {
        let dup = seen.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
        mismatches.push(format!(
            "fetch-adds at rank 0 returned repeated or missing values (first repeat {dup:?})"
        ));
    }
    // Every value swapped in comes out once, by a later swap or as the last value.
    let mut out = world.local_to_vec(&o.swapped)?;
    out.push(world.get_value(&o.swap, 0, 0)?);
    out.sort_unstable();
    let mut tokens: Vec<u64> = (0..size).flat_map(|r| (0..k).map(move |i| mail_value(r, i))).collect();
    tokens.push(0);
    tokens.sort_unstable();
    if out != tokens {
        mismatches.push("the swap chain at rank 0 lost or duplicated a value".into());
    }
    Ok(mismatches.len() == before)
}
