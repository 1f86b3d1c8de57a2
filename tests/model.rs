//! The randomized model test: random puts and gets across ranks between
//! barriers, checked against a model of what memory must hold.

mod common;
use common::*;

#[test]
fn random_puts_and_gets_match_the_model() {
    for (n, seed) in [(2, 11), (3, 12), (4, 13), (8, 14)] {
        let out = rlaunch(&["-n", &n.to_string(), &example("model_check"), &seed.to_string(), "30"]);
        assert_eq!(out.code, Some(0), "n={n} seed={seed}: {out:?}");
        let ok = out.lines().iter().filter(|l| l.contains(" ok: 30 phases")).count();
        assert_eq!(ok, n, "every rank must report success: {out:?}");
        assert!(!out.stdout.contains("MISMATCH"), "{out:?}");
    }
}
