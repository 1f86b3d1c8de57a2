//! The launcher's property-based fuzzing (tests only): each decoder of
//! bytes from outside (hostfiles and `-H` lists, the PMI-1 server's
//! request lines) runs its property through [`fuzz`], on 100 000 cases or
//! `ONESIDE_FUZZ_CASES`, as the `oneside` crate's `fuzz` module does.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Runs `check` on 100 000 inputs (or `ONESIDE_FUZZ_CASES`) from
/// `strategy`; fails with the smallest failing input.
pub fn fuzz<S: Strategy>(strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let cases = std::env::var("ONESIDE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if let Err(e) = TestRunner::new(config).run(&strategy, check) {
        panic!("{e}");
    }
}
