//! The randomized model test: random puts and gets across ranks between
//! barriers, checked against a model of what memory must hold; and every
//! kind of atomic from every rank at once, checked exactly.

mod common;
use common::*;

#[test]
fn random_puts_and_gets_match_the_model() {
    let runs = [
        ("auto", 2, 11),
        ("auto", 3, 12),
        ("auto", 4, 13),
        ("auto", 8, 14),
        ("tcp", 2, 15),
        ("tcp", 4, 16),
    ];
    for (transport, n, seed) in runs {
        let out = rlaunch(&[
            "-n",
            &n.to_string(),
            "--transport",
            transport,
            &example("model_check"),
            &seed.to_string(),
            "30",
        ]);
        assert_eq!(out.code, Some(0), "n={n} seed={seed}: {out:?}");
        let ok = out.lines().iter().filter(|l| l.contains(" ok: 30 phases")).count();
        assert_eq!(ok, n, "every rank must report success: {out:?}");
        assert!(!out.stdout.contains("MISMATCH"), "{out:?}");
    }
}

#[test]
fn every_atomic_from_every_rank_at_once_is_exact() {
    for (transport, _) in transports() {
        for n in sizes() {
            let out = rlaunch(&[
                "-n",
                &n.to_string(),
                "--transport",
                transport,
                &example("atomic_hammer"),
                "100",
            ]);
            assert_eq!(out.code, Some(0), "n={n} {transport}: {out:?}");
            let ok = out.lines().iter().filter(|l| l.contains(" ok: 100 iterations")).count();
            assert_eq!(ok, n, "every rank must report success: {out:?}");
        }
    }
}

#[test]
fn the_atomic_history_checkers_reject_broken_histories() {
    let out = std::process::Command::new(example("model_check"))
        .arg("--self-test")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "model_check: self-test: ok\n");
}
