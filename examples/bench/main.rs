//! OSU-style micro-benchmarks for oneside: put/get latency, put bandwidth
//! and bi-directional bandwidth over a size sweep (8 B to 4 MiB), small-put
//! message rate, barrier latency over all ranks of the job, and (`ops.rs`)
//! atomic latencies, the add rate, put-with-signal latency, non-blocking put
//! bandwidth and the cache-line round trip they are bounded by; and
//! (`coll.rs`, `--only-coll`) collective latencies on the world team.
//!
//! ```text
//! rlaunch -n 2 target/release/examples/bench [--smoke] [--only-barrier] [--only-ops] [--only-coll] [--osu-iters] [--max BYTES]
//!         [--busy-target | --testing-target]
//!         [--csv FILE] [--plot FILE.svg] [--peer FILE] [--peer-name NAME]
//! ```
//!
//! Prints a table, then one machine-readable line per figure:
//! `<metric> <bytes> <value> <unit>`. `--peer` reads the same lines from
//! another implementation (`bench/mpi_rma.c`) to draw next to ours.
//! `--busy-target` has the other ranks compute outside oneside, rather
//! than wait in a barrier, while rank 0 measures a one-sided figure (the
//! case an MPI target cannot serve); `--testing-target` has them loop on
//! `test` of a word instead (a program polling with `shmem_test`).
//! `--osu-iters` runs each collective OSU's number of calls per size
//! (`coll::Counts::Osu`), as `bench/mpi_coll.c` does.

mod coll;
mod measure;
mod ops;
mod report;

use measure::{sizes, Bench};
use report::Figure;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Default)]
struct Options {
    smoke: bool,
    only_barrier: bool,
    only_ops: bool,
    only_coll: bool,
    target: measure::Target,
    osu_iters: bool,
    max: usize,
    csv: Option<PathBuf>,
    plot: Option<PathBuf>,
    peer: Option<PathBuf>,
    peer_name: String,
}

fn parse_options() -> Result<Options, String> {
    let mut opts = Options {
        max: 4 << 20,
        peer_name: "peer".into(),
        ..Options::default()
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--smoke" => opts.smoke = true,
            "--only-barrier" => opts.only_barrier = true,
            "--only-ops" => opts.only_ops = true,
            "--only-coll" => opts.only_coll = true,
            "--busy-target" => opts.target = measure::Target::Computing,
            "--testing-target" => opts.target = measure::Target::Testing,
            "--osu-iters" => opts.osu_iters = true,
            "--max" => opts.max = value()?.parse().map_err(|_| "--max takes a byte count".to_string())?,
            "--csv" => opts.csv = Some(value()?.into()),
            "--plot" => opts.plot = Some(value()?.into()),
            "--peer" => opts.peer = Some(value()?.into()),
            "--peer-name" => opts.peer_name = value()?,
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    if opts.max < 8 {
        return Err("--max must be at least 8".into());
    }
    Ok(opts)
}

fn main() -> ExitCode {
    let opts = match parse_options() {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("bench: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(opts: &Options) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let world = oneside::init()?;
    if world.size() < 2 {
        eprintln!(
            "bench: needs at least 2 ranks, e.g. rlaunch -n 2 {}",
            std::env::args().next().unwrap_or_default()
        );
        return Ok(ExitCode::from(2));
    }
    if opts.only_coll {
        let counts = match (opts.smoke, opts.osu_iters) {
            (true, _) => coll::Counts::Smoke,
            (false, true) => coll::Counts::Osu,
            (false, false) => coll::Counts::Steady,
        };
        let figures = coll::collectives(&world, opts.max.min(1 << 20), counts)?;
        if world.rank() == 0 {
            print!("{}", coll::table(world.size(), &figures));
            for figure in &figures {
                println!("{}", figure.line());
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let sweep = match (opts.only_barrier || opts.only_ops, opts.smoke) {
        (true, _) => Vec::new(),
        (false, true) => vec![8, 4096, 65536.min(opts.max)],
        (false, false) => sizes(opts.max),
    };
    let bench = Bench {
        world: &world,
        // The message rate spreads its puts over the first 64 bytes.
        buffer: world.alloc::<u8>(opts.max.max(64))?,
        rates: world.alloc::<f64>(3)?,
        words: world.alloc::<u64>(4)?,
        signals: world.alloc::<u64>(2)?,
        smoke: opts.smoke,
        target: opts.target,
        done: world.alloc::<u64>(1)?,
        measured: std::cell::Cell::new(0),
    };
    let mut figures = Vec::new();
    let mut keep = |metric: &str, bytes: usize, value: Option<f64>, unit: &'static str| {
        if let Some(value) = value {
            figures.push(Figure {
                metric: metric.to_string(),
                bytes,
                value,
                unit,
            });
        }
    };
    for &size in &sweep {
        keep("put_lat", size, bench.put_latency(size)?, "us");
        keep("get_lat", size, bench.get_latency(size)?, "us");
        keep("put_bw", size, bench.put_bandwidth(size)?, "MB/s");
        keep("put_bibw", size, bench.put_bibandwidth(size)?, "MB/s");
        if size >= 65536 {
            keep("copy_bw", size, bench.copy_bandwidth(size)?, "MB/s");
        }
    }
    if !opts.only_barrier && !opts.only_ops {
        keep("msg_rate", 8, bench.message_rate()?, "msg/s");
    }
    if !opts.only_barrier {
        keep("fadd_lat", 8, bench.fetch_add_latency()?, "us");
        keep("cswap_lat", 8, bench.compare_swap_latency()?, "us");
        let add = bench.add_rate()?;
        keep("add_lat", 8, add.map(|(lat, _)| lat), "us");
        keep("add_rate", 8, add.map(|(_, rate)| rate), "msg/s");
        keep("line_lat", 8, bench.line_round_trip()?, "us");
        for size in [8, 4096, 65536].into_iter().filter(|&s| s <= opts.max) {
            keep("put_signal_lat", size, bench.put_signal_latency(size)?, "us");
        }
        let big = [65536, 1 << 20].into_iter().filter(|&s| s <= opts.max);
        for size in big.take(if opts.smoke { 1 } else { 2 }) {
            keep("put_nbi_bw", size, bench.put_window_bandwidth(size, true)?, "MB/s");
            keep("put_win_bw", size, bench.put_window_bandwidth(size, false)?, "MB/s");
        }
    }
    if !opts.only_ops {
        keep(&format!("barrier_n{}", world.size()), 0, bench.barrier_latency()?, "us");
    }

    if world.rank() == 0 {
        let transport = match world.rdma_device() {
            Some(device) => format!("{} on {device}", world.transport_to(1)?),
            None => world.transport_to(1)?.to_string(),
        };
        print!("{}", report::table(&transport, world.size(), &figures));
        for figure in &figures {
            println!("{}", figure.line());
        }
        if let Some(path) = &opts.csv {
            std::fs::write(path, report::csv(&figures))?;
        }
        if let Some(path) = &opts.plot {
            let peer = match &opts.peer {
                Some(file) => report::parse_lines(&std::fs::read_to_string(file)?),
                None => Vec::new(),
            };
            report::plot(path, &figures, &peer, &opts.peer_name)?;
        }
    }
    world.finalize()?;
    Ok(ExitCode::SUCCESS)
}
