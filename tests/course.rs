//! The course programs (GUPS, histogram, Mandelbrot work queue, halo
//! exchange, lock-protected counter, and on teams and collectives: pi,
//! conjugate gradients, bucket sort, matrix-vector product, SUMMA) under
//! the real `rlaunch`, at 1, 2, 4 and 8 ranks on every transport. Each program checks its own result and
//! exits non-zero when the check fails; these tests also pin what rank 0
//! prints, with the exact numbers wherever the run is deterministic.

mod common;
use common::*;

/// Every (transport, path name, rank count) to run the programs at.
fn matrix() -> Vec<(&'static str, &'static str, usize)> {
    transports()
        .into_iter()
        .flat_map(|(t, p)| sizes().into_iter().map(move |n| (t, p, n)))
        .collect()
}

/// Runs `program ARGS` at `n` ranks over `transport`; it must succeed.
fn run(transport: &str, n: usize, program: &str, args: &[&str]) -> Outcome {
    let n_text = n.to_string();
    let path = example(program);
    let mut argv = vec!["-n", &n_text, "--transport", transport, &path];
    argv.extend_from_slice(args);
    let out = rlaunch(&argv);
    assert_eq!(out.code, Some(0), "{program} n={n} {transport}: {out:?}");
    out
}

#[test]
fn gups_loses_no_update() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "gups", &[]);
        let updates = 4 * 4096 * n;
        let line = out.stdout.trim_end();
        let head = format!("gups: {n} ranks, {updates} updates, 0 errors: ok (");
        assert!(line.starts_with(&head), "n={n} {transport}: {out:?}");
        let rate: f64 = line[head.len()..]
            .strip_suffix(" GUP/s)")
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("a GUP/s figure in '{line}'"));
        assert!(rate > 0.0, "{line}");
        assert_eq!(out.lines().len(), 1, "{out:?}");
    }
}

#[test]
fn histogram_counts_every_value_exactly() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "histogram", &[]);
        let values = 5000 * n;
        assert_eq!(
            out.stdout,
            format!("histogram: 256 bins, {values} values from {n} ranks: exact: ok\n"),
            "n={n} {transport}: {out:?}"
        );
    }
}

/// FNV-1a of the default 160×120 image's iteration counts (IEEE f64
/// arithmetic without fused multiply-adds, so the same on every machine).
const MANDELBROT_CHECKSUM: &str = "0x9947281c5e11070d";

#[test]
fn mandelbrot_work_queue_matches_the_serial_image() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "mandelbrot", &[]);
        let line = out.stdout.trim_end();
        let rest = line
            .strip_prefix("mandelbrot: 160x120, rows per rank [")
            .unwrap_or_else(|| panic!("n={n} {transport}: {out:?}"));
        let (rows, rest) = rest.split_once(']').expect("rows per rank in brackets");
        let rows: Vec<usize> = rows.split(' ').map(|r| r.parse().expect("a row count")).collect();
        assert_eq!(rows.len(), n, "one count per rank: {line}");
        assert_eq!(rows.iter().sum::<usize>(), 120, "every row exactly once: {line}");
        assert_eq!(
            rest,
            format!(", checksum {MANDELBROT_CHECKSUM}, serial {MANDELBROT_CHECKSUM}: ok"),
            "n={n} {transport}"
        );
    }
}

#[test]
fn mandelbrot_writes_its_image_as_pgm() {
    let (transport, _) = transports()[0];
    let file = std::env::temp_dir().join(format!("oneside-course-{}.pgm", std::process::id()));
    let file_text = file.display().to_string();
    run(transport, 2, "mandelbrot", &["64", "48", "1000", "--out", &file_text]);
    let image = std::fs::read(&file).expect("the PGM was written");
    let _ = std::fs::remove_file(&file);
    let header = b"P5\n64 48\n1000\n";
    assert_eq!(&image[..header.len()], header);
    // Samples above 255 take two bytes each.
    assert_eq!(image.len(), header.len() + 64 * 48 * 2);
}

#[test]
fn halo_exchange_is_bitwise_equal_to_serial() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "halo", &[]);
        assert_eq!(
            out.stdout,
            format!("halo: 256 cells, 200 steps over {n} ranks: bitwise equal to serial: ok\n"),
            "n={n} {transport}: {out:?}"
        );
    }
}

#[test]
fn lock_counter_loses_no_increment() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "lock_counter", &[]);
        let total = 200 * n;
        assert_eq!(
            out.stdout,
            format!(
                "lock_counter: {n} ranks x 200 increments = {total}, expected {total}; try_lock refused by {} of {} while held: ok\n",
                n - 1,
                n - 1
            ),
            "n={n} {transport}: {out:?}"
        );
    }
}

#[test]
fn uneven_blocks_at_three_ranks() {
    // 3 ranks: a table size that is not a power of two, bins and cells that
    // do not split evenly.
    for (transport, _) in transports() {
        let out = run(transport, 3, "gups", &["1024"]);
        assert!(
            out.stdout.starts_with("gups: 3 ranks, 12288 updates, 0 errors: ok ("),
            "{out:?}"
        );
        let out = run(transport, 3, "histogram", &["100", "3000"]);
        assert_eq!(out.stdout, "histogram: 100 bins, 9000 values from 3 ranks: exact: ok\n");
        let out = run(transport, 3, "halo", &["100", "300"]);
        assert_eq!(
            out.stdout,
            "halo: 100 cells, 300 steps over 3 ranks: bitwise equal to serial: ok\n"
        );
    }
}

/// The number in `line` between `before` and `after`.
fn number_between(line: &str, before: &str, after: &str) -> f64 {
    let start = line.find(before).unwrap_or_else(|| panic!("'{before}' in '{line}'")) + before.len();
    let len = line[start..]
        .find(after)
        .unwrap_or_else(|| panic!("'{after}' in '{line}'"));
    line[start..start + len]
        .parse()
        .unwrap_or_else(|_| panic!("a number after '{before}' in '{line}'"))
}

#[test]
fn pi_by_all_reduce_is_within_its_error_bound() {
    for (transport, _, n) in matrix() {
        // One interval: only rank 0 has work, so the sum is exact.
        let out = run(transport, n, "pi", &["1"]);
        assert_eq!(
            out.stdout,
            format!("pi ≈ 3.200000000000 from {n} rank(s), 1 intervals (error 5.84e-2)\n"),
            "n={n} {transport}: {out:?}"
        );
        // The midpoint rule's error h²/12 = 8.3e-12, plus rounding that
        // depends on how the partial sums split.
        let out = run(transport, n, "pi", &["100000"]);
        let head = format!("pi ≈ 3.141592653598 from {n} rank(s), 100000 intervals (error ");
        assert!(out.stdout.starts_with(&head), "n={n} {transport}: {out:?}");
        let error = number_between(&out.stdout, "(error ", ")\n");
        assert!((8.2e-12..8.5e-12).contains(&error), "n={n} {transport}: {out:?}");
    }
}

#[test]
fn cg_matches_the_serial_solve() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "cg", &[]);
        let line = out.stdout.trim_end();
        // CG on the n×n second-difference matrix takes exactly n steps.
        let head = format!("cg: {n} ranks, n=256, converged in 256 iterations, residual ");
        assert!(line.starts_with(&head), "n={n} {transport}: {out:?}");
        assert!(line.ends_with(": ok"), "n={n} {transport}: {out:?}");
        let residual = number_between(line, "residual ", ",");
        let diff = number_between(line, "max diff from serial ", ":");
        assert!(residual < 1e-8, "{line}");
        assert!(diff < 1e-9, "{line}");
        assert_eq!(out.lines().len(), 1, "{out:?}");
    }
}

#[test]
fn bucket_sort_is_sorted_and_a_permutation() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "bucket_sort", &[]);
        let keys = 16_384 * n;
        assert_eq!(
            out.stdout,
            format!("bucket_sort: {n} ranks, {keys} keys: sorted and a permutation: ok\n"),
            "n={n} {transport}: {out:?}"
        );
    }
}

#[test]
fn matvec_equals_the_serial_product() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "matvec", &[]);
        let block = 300usize.div_ceil(n);
        assert_eq!(
            out.stdout,
            format!("matvec: {n} ranks, 300x300 matrix, x in blocks of {block}: y equal to serial: ok\n"),
            "n={n} {transport}: {out:?}"
        );
    }
}

#[test]
fn summa_equals_the_serial_product() {
    for (transport, _, n) in matrix() {
        let out = run(transport, n, "summa", &[]);
        let q = [1, 2, 3].into_iter().take_while(|q| q * q <= n).last().unwrap();
        let (idle, block) = (n - q * q, 60 / q);
        assert_eq!(
            out.stdout,
            format!(
                "summa: {n} ranks, {q}x{q} grid ({idle} idle), 60x60 matrices in {block}x{block} blocks: C equal to serial: ok\n"
            ),
            "n={n} {transport}: {out:?}"
        );
    }
}

#[test]
fn collectives_with_uneven_shares() {
    // Rank counts and sizes that do not split evenly: ranks with no rows or
    // no keys, padded blocks, a 3x3 grid.
    for (transport, _) in transports() {
        let out = run(transport, 3, "cg", &["100"]);
        assert!(
            out.stdout
                .starts_with("cg: 3 ranks, n=100, converged in 100 iterations, residual "),
            "{out:?}"
        );
        assert!(out.stdout.ends_with(": ok\n"), "{out:?}");
        let out = run(transport, 8, "cg", &["5"]);
        assert!(
            out.stdout
                .starts_with("cg: 8 ranks, n=8, converged in 8 iterations, residual "),
            "one row per rank at least: {out:?}"
        );
        let out = run(transport, 3, "bucket_sort", &["1000"]);
        assert_eq!(
            out.stdout,
            "bucket_sort: 3 ranks, 3000 keys: sorted and a permutation: ok\n"
        );
        let out = run(transport, 5, "bucket_sort", &["1"]);
        assert_eq!(
            out.stdout,
            "bucket_sort: 5 ranks, 5 keys: sorted and a permutation: ok\n"
        );
        let out = run(transport, 3, "matvec", &["100"]);
        assert_eq!(
            out.stdout,
            "matvec: 3 ranks, 100x100 matrix, x in blocks of 34: y equal to serial: ok\n"
        );
        let out = run(transport, 8, "matvec", &["5"]);
        assert_eq!(
            out.stdout,
            "matvec: 8 ranks, 5x5 matrix, x in blocks of 1: y equal to serial: ok\n"
        );
        let out = run(transport, 9, "summa", &["50"]);
        assert_eq!(
            out.stdout,
            "summa: 9 ranks, 3x3 grid (0 idle), 50x50 matrices in 17x17 blocks: C equal to serial: ok\n"
        );
        let out = run(transport, 5, "summa", &["7"]);
        assert_eq!(
            out.stdout,
            "summa: 5 ranks, 2x2 grid (1 idle), 7x7 matrices in 4x4 blocks: C equal to serial: ok\n"
        );
    }
}
