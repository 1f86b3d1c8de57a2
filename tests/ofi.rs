//! The ofi transport's own cases, run by tests/ofi/run.sh (feature
//! `ofi-tests`) on a host with libfabric: the doctor lists the providers,
//! a forced ofi job says which provider carries every path and atomic, and
//! a provider that does not exist is one clear error per rank.

mod common;
use common::*;

#[test]
fn the_doctor_lists_libfabrics_providers() {
    let out = rlaunch(&["--check", "-H", "localhost"]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("libfabric: "))
        .unwrap_or_else(|| panic!("no libfabric line: {out:?}"));
    assert!(line.contains("with RMA and atomics:"), "{line}");
    assert!(line.contains("tcp;ofi_rxm"), "{line}");
}

#[test]
fn a_forced_ofi_job_sends_data_and_atomics_through_the_provider() {
    let out = rlaunch(&[
        "-n",
        "2",
        "--transport",
        "ofi",
        "--ofi-provider",
        "tcp;ofi_rxm",
        &example("atomic_hammer"),
        "50",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    for line in out.lines().iter().filter(|l| l.contains(" ok: ")) {
        assert!(line.contains("atomics by nic ofi tcp;ofi_rxm"), "{line}");
        assert!(line.contains("via ofi"), "{line}");
    }
    assert_eq!(out.lines().iter().filter(|l| l.contains(" ok: ")).count(), 2, "{out:?}");
}

#[test]
fn an_unknown_provider_is_a_clear_error() {
    let out = rlaunch(&[
        "-n",
        "2",
        "--transport",
        "ofi",
        "--ofi-provider",
        "no-such-provider",
        &example("hello_put"),
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    // Both ranks fail the same way; whichever reports first is named.
    let said = |rank: u32| {
        out.stderr.contains(&format!(
            "rank {rank}: cannot use libfabric (--transport ofi): provider \"no-such-provider\" offers no RDM endpoint"
        ))
    };
    assert!(said(0) || said(1), "{out:?}");
}
