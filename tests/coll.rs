//! Teams and collectives under the real `rlaunch`: `coll_check` runs every
//! collective on every team shape (world, strided subsets, a reversed team,
//! 2-D rows and columns, single members) at sizes 0, 1, odd and larger
//! than the internal buffers, for every reduction operation and type,
//! against a serial computation; it also checks argument errors and team
//! exhaustion. Across hosts (node-aware algorithms) in tests/cluster.rs.

mod common;
use common::*;

fn check(transport: &str, n: usize, args: &[&str]) {
    let n_text = n.to_string();
    let path = example("coll_check");
    let mut argv = vec!["-n", &n_text, "--transport", transport, &path];
    argv.extend_from_slice(args);
    let out = rlaunch(&argv);
    assert_eq!(out.code, Some(0), "n={n} {transport} {args:?}: {out:?}");
    assert!(!out.stdout.contains("MISMATCH"), "{out:?}");
    assert_eq!(
        out.stdout.matches("coll_check: rank").count(),
        n,
        "every rank reports: {out:?}"
    );
    let teams = out.stdout.matches("checked team ").count();
    let expected = if n >= 3 { 6 } else { 4 };
    assert_eq!(teams, expected, "every team shape is checked: {out:?}");
    assert!(out.stdout.contains("checked errors:"), "{out:?}");
    assert!(out.stdout.contains("checked exhaustion: 31 teams"), "{out:?}");
}

#[test]
fn every_collective_on_every_team_matches_the_serial_computation() {
    for (transport, _) in transports() {
        for n in sizes() {
            check(transport, n, &["--quick"]);
        }
    }
}

/// Every type and operation at 3 ranks (an odd team) and 4 (a power of
/// two: recursive doubling where each rank is its own node). The
/// Soft-RoCE guest, where everything is emulated and one such run takes
/// two minutes, sets `ONESIDE_TEST_EXACT_SIZES=4`: the arithmetic is the
/// same over every path, and 3 ranks run over shm and tcp on the host.
#[test]
fn every_reduction_type_and_operation_is_exact() {
    let (transport, _) = transports()[0];
    let sizes: Vec<usize> = match std::env::var("ONESIDE_TEST_EXACT_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|n| n.trim().parse().expect("ONESIDE_TEST_EXACT_SIZES holds numbers"))
            .collect(),
        Err(_) => vec![3, 4],
    };
    for n in sizes {
        check(transport, n, &[]);
    }
}
