//! Same inputs → byte-identical results, on any thread count.

use crate::cli::tempdir;
use std::process::Command;

fn reproduce(dir: &std::path::Path, threads: &str, seed: &str) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "reproduce",
            "kunpeng920-stream",
            "alderlake-single",
            "exynos5433-mixed",
            "--quick",
            "--seed",
            seed,
            "--out",
        ])
        .arg(dir)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("run schedlab");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(dir.join("results.json")).unwrap()
}

#[test]
fn same_seed_gives_byte_identical_results_on_any_thread_count() {
    let a = reproduce(&tempdir("det-a"), "1", "3");
    let b = reproduce(&tempdir("det-b"), "2", "3");
    assert_eq!(a, b, "results.json differs between 1 and 2 worker threads");
    let c = reproduce(&tempdir("det-c"), "2", "4");
    assert_ne!(a, c, "another seed should give other samples");
}

/// `--sensitivity` runs its edits concurrently; its entries, like the
/// results, must not depend on the thread count.
#[test]
fn sensitivity_is_byte_identical_on_any_thread_count() {
    let run = |threads: &str| {
        let dir = tempdir(&format!("det-sens-{threads}"));
        let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args([
                "reproduce",
                "alderlake-single",
                "exynos5433-mixed",
                "--quick",
                "--reps",
                "1",
                "--sensitivity",
                "--out",
            ])
            .arg(&dir)
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .expect("run schedlab");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(dir.join("results.json")).unwrap()
    };
    let (a, b) = (run("1"), run("3"));
    assert!(String::from_utf8_lossy(&a).contains("\"sensitivity\""));
    assert_eq!(
        a, b,
        "sensitivity entries differ between 1 and 3 worker threads"
    );
}

#[test]
fn stream_table_snapshot() {
    let dir = tempdir("snap");
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["reproduce", "kunpeng920-stream", "--quick", "--out"])
        .arg(&dir)
        .output()
        .expect("run schedlab");
    assert!(o.status.success());
    let tables = String::from_utf8_lossy(&o.stdout).to_string();
    insta::assert_snapshot!("kunpeng920_stream_quick", tables);
    // S1's shape: cluster beats vanilla at 4 threads, and the gain shrinks to 12.
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    let change = |threads: u64| -> f64 {
        v["experiments"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["config"] == "cluster"
                    && r["metric"] == "copy"
                    && r["params"]["threads"] == threads
            })
            .unwrap()["change_pct"]
            .as_f64()
            .unwrap()
    };
    assert!(change(4) > 5.0, "cluster gains at 4 threads: {}", change(4));
    assert!(
        change(4) > change(6) && change(6) >= change(12),
        "gain shrinks 4→6→12"
    );
    // The plots: one per metric, ours against the published changes.
    let copy = std::fs::read_to_string(dir.join("plots/kunpeng920-stream-copy.svg")).unwrap();
    assert!(copy.starts_with("<svg") && copy.contains("cluster (published)"));
    // `schedlab plot` redraws them from results.json alone, identically.
    let again = tempdir("snap-plots");
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .arg("plot")
        .arg(dir.join("results.json"))
        .arg("--out")
        .arg(&again)
        .output()
        .expect("run schedlab");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("4 plots written to "));
    let redrawn = std::fs::read_to_string(again.join("kunpeng920-stream-copy.svg")).unwrap();
    assert_eq!(copy, redrawn);
    // Two experiments of one name get numbered files, not one file twice.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let first = v["experiments"][0].clone();
    v["experiments"].as_array_mut().unwrap().push(first);
    let twice = tempdir("snap-plots-twice");
    let doubled = twice.join("doubled.json");
    std::fs::write(&doubled, v.to_string()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .arg("plot")
        .arg(&doubled)
        .arg("--out")
        .arg(twice.join("plots"))
        .output()
        .expect("run schedlab");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_dir(twice.join("plots")).unwrap().count(), 8);
    assert_eq!(
        std::fs::read_to_string(twice.join("plots/kunpeng920-stream-copy-2.svg")).unwrap(),
        copy
    );
}

#[test]
fn plot_rejects_a_file_that_is_not_results_json() {
    let dir = tempdir("plot-bad");
    let bad = dir.join("results.json");
    std::fs::write(&bad, "{\"schema\": \"something/else\"}").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .arg("plot")
        .arg(&bad)
        .output()
        .expect("run schedlab");
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        e.contains("results.json") && e.trim().lines().count() == 1,
        "{e}"
    );
    assert!(!dir.join("plots").exists());
}
