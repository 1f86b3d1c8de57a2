//! Misbehaving ranks on purpose, to see (and test) how rlaunch and oneside
//! handle failure. `faults MODE [ARGS]`:
//!
//! * `exit RANK CODE`     — RANK exits with CODE after init; the others wait in a barrier
//! * `signal RANK`        — RANK prints `dying pid=P`, then kills itself with SIGKILL after init
//! * `signal-handled RANK` — the same, every rank having installed a SIGTERM handler of its own before init (it says so on stderr, then exits 143)
//! * `stop RANK`          — RANK stops itself with SIGSTOP after init (a silent rank); the others wait in a barrier
//! * `sleep`              — init, print `ready pid=P job=J`, then sleep forever
//! * `no-init RANK`       — RANK exits 0 without calling init; the others call it
//! * `stall-init RANK`    — RANK prints `stalling pid=P job=J bootstrap=ADDR`, never calls init
//! * `oob-put`            — rank 0 puts past the end of an object and reports the error
//! * `bad-rank`           — rank 0 puts to rank `size` and reports the error
//! * `oob-atomic`, `bad-rank-atomic` — the same for an atomic past the end / at rank `size`
//! * `exhaust`            — allocate more than the heap and report the error
//! * `leak`               — init, then `process::exit(0)` without finalizing
//! * `segv RANK`          — RANK writes through a null pointer (in `write_through`); the others wait in a barrier
//! * `overflow RANK`      — RANK overflows its stack (std's message, then SIGABRT... or SIGSEGV)
//! * `guard SECS`         — print `ready ... tcp=ADDR`, sleep, then check a zeroed object is intact
//! * `peer-dies [fadd]`   — rank 1 SIGKILLs itself; rank 0 (ignoring SIGTERM) keeps getting from it (or fetch-adding to it)
//! * `env VAR`            — print VAR as rank 0 sees it
//! * `echo-stdin`         — rank 0 copies one stdin line to stdout

use oneside::prelude::*;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("faults: {e}");
            ExitCode::from(2)
        }
    }
}

fn arg(args: &[String], i: usize) -> usize {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or(0)
}

/// The program's own SIGTERM handler of `signal-handled`.
extern "C" fn own_sigterm(_signal: libc::c_int) {
    const SAID: &[u8] = b"faults: the program's own SIGTERM handler ran\n";
    // SAFETY: write(2) and _exit(2) are async-signal-safe; SAID is static.
    unsafe {
        libc::write(2, SAID.as_ptr().cast(), SAID.len());
        libc::_exit(143);
    }
}

fn env_rank() -> usize {
    std::env::var("ONESIDE_RANK")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn job_id() -> String {
    std::env::var("ONESIDE_JOB_ID").unwrap_or_default()
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn run(args: &[String]) -> oneside::Result<u8> {
    let mode = args.first().map(String::as_str).unwrap_or("");
    match mode {
        "no-init" if env_rank() == arg(args, 1) => return Ok(0),
        "stall-init" if env_rank() == arg(args, 1) => {
            let bootstrap = std::env::var("ONESIDE_BOOTSTRAP_ADDR").unwrap_or_default();
            println!(
                "stalling pid={} job={} bootstrap={bootstrap}",
                std::process::id(),
                job_id()
            );
            sleep_forever();
        }
        "env" => {
            let name = args.get(1).cloned().unwrap_or_default();
            if env_rank() == 0 {
                println!("{name}={}", std::env::var(&name).unwrap_or_else(|_| "<unset>".into()));
            }
            return Ok(0);
        }
        "echo-stdin" => {
            if env_rank() == 0 {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).expect("stdin is readable");
                println!("rank 0 read: {}", line.trim_end());
            }
            return Ok(0);
        }
        _ => {}
    }

    if mode == "signal-handled" {
        // SAFETY: installing a handler that only writes(2) and _exits, both
        // async-signal-safe.
        unsafe {
            libc::signal(
                libc::SIGTERM,
                own_sigterm as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
    if mode == "peer-dies" {
        // SAFETY: ignoring SIGTERM has no memory-safety preconditions. It lets
        // rank 0 see the broken link itself before rlaunch's SIGKILL comes.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    }
    let world = oneside::init()?;
    let rank = world.rank();
    match mode {
        "exit" => {
            if rank == arg(args, 1) {
                std::process::exit(arg(args, 2) as i32);
            }
            world.barrier()?;
        }
        "signal" | "signal-handled" => {
            if rank == arg(args, 1) {
                println!("dying pid={}", std::process::id());
                // SAFETY: raising a signal at ourselves has no memory-safety preconditions.
                unsafe { libc::raise(libc::SIGKILL) };
            }
            world.barrier()?;
        }
        "stop" => {
            if rank == arg(args, 1) {
                println!("stopping pid={}", std::process::id());
                // SAFETY: raising a signal at ourselves has no memory-safety preconditions.
                unsafe { libc::raise(libc::SIGSTOP) };
            }
            world.barrier()?;
        }
        "sleep" => {
            println!("ready pid={} job={}", std::process::id(), job_id());
            sleep_forever();
        }
        "oob-put" | "bad-rank" | "exhaust" | "oob-atomic" | "bad-rank-atomic" => {
            let object = world.alloc::<u32>(16)?;
            let outcome = match mode {
                "oob-put" => world
                    .put(&object, (rank + 1) % world.size(), 10, &[7u32; 8])
                    .map(|_| ()),
                "bad-rank" => world.put(&object, world.size(), 0, &[7u32]).map(|_| ()),
                "oob-atomic" => world
                    .atomic_fetch_add(&object, (rank + 1) % world.size(), 16, 1)
                    .map(drop),
                "bad-rank-atomic" => world.atomic_compare_swap(&object, world.size(), 0, 0, 1).map(drop),
                _ => world.alloc::<u8>(world.heap_size() + 1).map(|_| ()),
            };
            if rank == 0 {
                match outcome {
                    Ok(()) => println!("{mode}: unexpectedly succeeded"),
                    Err(e) => println!("{mode}: refused: {e}"),
                }
            }
            // Nothing was written out of bounds: the object is still all zeros.
            world.barrier()?;
            let clean = world.local_to_vec(&object)?.iter().all(|&v| v == 0);
            println!("rank {rank}: object intact: {clean}");
        }
        "guard" => {
            let object = world.alloc::<u32>(16)?;
            let tcp = world.tcp_engine_addr().map_or("-".to_string(), |a| a.to_string());
            println!("ready pid={} job={} tcp={tcp}", std::process::id(), job_id());
            std::thread::sleep(Duration::from_secs(arg(args, 1) as u64));
            world.barrier()?;
            let clean = world.local_to_vec(&object)?.iter().all(|&v| v == 0);
            println!("rank {rank}: object intact: {clean}");
        }
        "peer-dies" => {
            let object = world.alloc::<u64>(4)?;
            if rank == 1 {
                // SAFETY: raising a signal at ourselves has no memory-safety preconditions.
                unsafe { libc::raise(libc::SIGKILL) };
            }
            if rank == 0 {
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while std::time::Instant::now() < deadline {
                    let attempt = match args.get(1).map(String::as_str) {
                        Some("fadd") => world.atomic_fetch_add(&object, 1, 0, 1).map(drop),
                        _ => world.get_value(&object, 1, 0).map(drop),
                    };
                    if let Err(e) = attempt {
                        // Report, then stay until rlaunch tears the job down, so
                        // rank 1's death is the failure it sees first.
                        eprintln!("faults: {e}");
                        sleep_forever();
                    }
                }
                println!("peer-dies: rank 1 still answers after 10 s");
            }
            return Ok(3);
        }
        "segv" => {
            if rank == arg(args, 1) {
                write_through(std::hint::black_box(std::ptr::null_mut()));
            }
            world.barrier()?;
        }
        "overflow" => {
            if rank == arg(args, 1) {
                println!("depth {}", recurse(std::hint::black_box(1)));
            }
            world.barrier()?;
        }
        "leak" => {
            if rank == 1 {
                std::process::exit(0);
            }
            world.barrier()?;
        }
        _ => {
            eprintln!("faults: unknown mode '{mode}' (see the source for the list)");
            return Ok(2);
        }
    }
    world.finalize()?;
    Ok(0)
}

/// Writes through `p`: a fault when it is null.
#[inline(never)]
fn write_through(p: *mut u64) {
    // SAFETY: none; this mode exists to fault.
    unsafe { std::ptr::write_volatile(p, 1) };
}

/// Recurses until the stack runs out.
#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(n: u64) -> u64 {
    let mut big = [n; 64];
    big[n as usize % 64] = recurse(std::hint::black_box(n + 1));
    std::hint::black_box(&big);
    big[0]
}
