//! Command-line behaviour: contract shapes and bad-input handling.

use std::process::{Command, Output};

pub fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .output()
        .expect("run schedlab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// `args` are bad input: exit 2, and one line on stderr that contains `want`.
fn assert_bad_input(args: &[&str], want: &str) {
    let o = schedlab(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    let e = stderr(&o);
    assert!(e.contains(want), "{args:?}: {e}");
    assert_eq!(e.trim().lines().count(), 1, "one-line message: {e}");
}

#[test]
fn reproduce_list_names_the_experiments() {
    let o = schedlab(&["reproduce", "--list"]);
    assert!(o.status.success());
    assert!(stdout(&o).lines().any(|l| l == "kunpeng920-stream"));
}

#[test]
fn unknown_experiment_exits_2_with_valid_names() {
    let dir = tempdir("unknown-exp");
    let o = schedlab(&[
        "reproduce",
        "no-such-experiment",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("no-such-experiment") && e.contains("kunpeng920-stream"),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "one-line message: {e}");
    assert!(!dir.join("results.json").exists(), "no partial output");
}

#[test]
fn unknown_machine_exits_2_with_presets() {
    let o = schedlab(&["topo", "no-such-machine"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("no-such-machine") && e.contains("kunpeng920"),
        "{e}"
    );
}

#[test]
fn unknown_config_feature_and_workload_key_exit_2() {
    for args in [
        &["topo", "kunpeng920", "--config", "nope"][..],
        &[
            "run",
            "--machine",
            "kunpeng920",
            "--workload",
            "stream:threads=2",
            "--feature",
            "NOPE=on",
        ][..],
        &[
            "run",
            "--machine",
            "kunpeng920",
            "--workload",
            "stream:bogus=1",
        ][..],
        &[
            "run",
            "--machine",
            "kunpeng920",
            "--workload",
            "stream:threads=0",
        ][..],
        &["run", "--machine", "kunpeng920", "--workload", "nosuch"][..],
        &[
            "run",
            "--machine",
            "kunpeng920",
            "--workload",
            "stream",
            "--cpus",
            "200-300",
        ][..],
        &[
            "run",
            "--machine",
            "kunpeng920",
            "--workload",
            "stream",
            "--mem-node",
            "9",
        ][..],
        // reproduce's stdout is its tables; a factor needs its study.
        &["reproduce", "alderlake-single", "--quick", "--json", "-"][..],
        &[
            "reproduce",
            "alderlake-single",
            "--quick",
            "--sensitivity-factor",
            "3",
        ][..],
        // The big.LITTLE schemes need two CPU capacities, and one scheme.
        &[
            "run",
            "--machine",
            "sapphirerapids",
            "--workload",
            "stream",
            "--config",
            "hperf-hmp",
        ][..],
        &[
            "compare",
            "--machine",
            "kunpeng920",
            "--workload",
            "stream",
            "--config",
            "vanilla",
            "--config",
            "linaro-mp",
        ][..],
        &[
            "run",
            "--machine",
            "exynos5422",
            "--workload",
            "stream",
            "--config",
            "linaro-mp",
            "--feature",
            "HMP_HPERF=on",
        ][..],
    ] {
        let o = schedlab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o).trim().lines().count(),
            1,
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// A machine edit alone can unfit a configuration (S5's schemes on CPUs
/// edited to one capacity): `reproduce` refuses it before any run.
#[test]
fn reproduce_refuses_an_edit_that_unfits_a_configuration() {
    let dir = tempdir("unfit");
    let out = dir.join("out");
    let o = schedlab(&[
        "reproduce",
        "exynos5433-mixed",
        "--quick",
        "--machine-edit",
        "core_type.capacity=1024",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("needs a big.LITTLE machine"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn topo_json_has_the_kunpeng_cluster_hierarchy() {
    let o = schedlab(&["topo", "kunpeng920", "--config", "cluster", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cpu0 = &v["cpus"][0];
    assert_eq!(cpu0["cpu"], 0);
    let spans: Vec<(String, usize, u64)> = cpu0["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let span = d["span"].as_array().unwrap();
            (
                d["level"].as_str().unwrap().to_string(),
                span.len(),
                span.last().unwrap().as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("CLS", 4, 3),
        ("MC", 24, 23),
        ("NUMA", 48, 47),
        ("NUMA", 72, 71),
        ("NUMA", 96, 95),
    ];
    assert_eq!(spans.len(), want.len(), "{spans:?}");
    for (got, want) in spans.iter().zip(want) {
        assert_eq!((got.0.as_str(), got.1, got.2), want);
    }
    // vanilla: no CLS, MC first.
    let o = schedlab(&["topo", "kunpeng920", "--config", "vanilla", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cpus"][0]["domains"][0]["level"], "MC");
}

#[test]
fn run_prints_stream_output_and_writes_json() {
    let dir = tempdir("run-json");
    let json = dir.join("run.json");
    let o = schedlab(&[
        "run",
        "--machine",
        "kunpeng920",
        "--workload",
        "stream:threads=4,iterations=3",
        "--cpus",
        "0-23",
        "--mem-node",
        "0",
        "--config",
        "cluster",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Best Rate MB/s") && out.contains("Copy:") && out.contains("Triad:"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "schedlab.run/1");
    // The engine's event count, as the text summary prints it.
    let events = v["events"].as_u64().unwrap();
    assert!(out.contains(&format!("{events} events")), "{events}: {out}");
    assert_eq!(v["tasks"].as_array().unwrap().len(), 4);
    for t in v["tasks"].as_array().unwrap() {
        for k in [
            "cpu_time_ns",
            "wait_time_ns",
            "migrations",
            "wakeups",
            "timeslices",
        ] {
            assert!(t[k].is_u64(), "task field {k}: {t}");
        }
    }
    assert!(v["counters"]["levels"]
        .as_array()
        .is_some_and(|l| !l.is_empty()));
    assert!(v["metrics"]["copy"].as_f64().unwrap() > 1000.0);
    assert_eq!(v["cpus"].as_array().unwrap().len(), 96);
}

#[test]
fn run_writes_a_trace_in_both_formats_and_rejects_bad_trace_options() {
    let dir = tempdir("run-trace");
    let base = [
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        "blackscholes:threads=6,input=simsmall",
        "--config",
        "hperf-hmp",
    ];
    // tracefs text, chosen by the .txt extension (in any case).
    let upper = dir.join("sched.TXT");
    let mut args = base.to_vec();
    args.extend(["--trace", upper.to_str().unwrap()]);
    let o = schedlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&upper)
        .unwrap()
        .starts_with("# tracer: nop"));
    let txt = dir.join("sched.txt");
    let mut args = base.to_vec();
    args.extend(["--trace", txt.to_str().unwrap()]);
    let o = schedlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("trace: "), "{}", stdout(&o));
    let text = std::fs::read_to_string(&txt).unwrap();
    assert!(text.starts_with("# tracer: nop"));
    let switches = text
        .lines()
        .filter(|l| l.contains(": sched_switch: "))
        .count();
    assert!(switches > 10, "{switches} switches");
    assert!(text.contains(": sched_wakeup_new: comm=blackscholes"));
    // Perfetto protobuf by default: a Trace message whose fields are packets.
    let pb = dir.join("sched.pftrace");
    let mut args = base.to_vec();
    args.extend(["--trace", pb.to_str().unwrap()]);
    let o = schedlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&pb).unwrap();
    assert_eq!(bytes[0], 0x0a, "field 1 (packet), length-delimited");
    // The same run traced twice gives the same bytes.
    let again = dir.join("again.pftrace");
    let mut args = base.to_vec();
    args.extend(["--trace", again.to_str().unwrap()]);
    assert!(schedlab(&args).status.success());
    assert_eq!(bytes, std::fs::read(&again).unwrap());
    // Bad options: one line, exit 2, no file.
    // A window of simulated time: only its events, all inside it.
    let win = dir.join("window.txt");
    let mut args = base.to_vec();
    args.extend([
        "--trace",
        win.to_str().unwrap(),
        "--trace-window",
        "1.3..4.69",
    ]);
    let o = schedlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<String> = std::fs::read_to_string(&win)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert!(!lines.is_empty() && lines.len() < switches);
    for l in &lines {
        let ts: f64 = l
            .split("] d..2.")
            .nth(1)
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!((0.0013..=0.00469).contains(&ts), "{l}");
    }
    // --trace-idle adds power:cpu_idle lines: entries and PWR_EVENT_EXIT.
    let idle = dir.join("idle.txt");
    let mut args = base.to_vec();
    args.extend(["--trace", idle.to_str().unwrap(), "--trace-idle"]);
    let o = schedlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let idle = std::fs::read_to_string(&idle).unwrap();
    assert!(idle.contains(": cpu_idle: state=0 cpu_id="), "entries");
    assert!(
        idle.contains(": cpu_idle: state=4294967295 cpu_id="),
        "exits"
    );
    assert!(!text.contains("cpu_idle"), "off by default");
    let o = schedlab(
        &base
            .iter()
            .copied()
            .chain(["--trace-idle"])
            .collect::<Vec<_>>(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--trace-idle"), "{}", stderr(&o));
    // So is a limit without a trace.
    let o = schedlab(&[&base[..], &["--trace-limit", "5"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--trace-limit 5: no --trace"),
        "{}",
        stderr(&o)
    );
    for (extra, field) in [
        (&["--trace-format", "json"][..], "--trace-format json"),
        (&["--trace-limit", "0"][..], "--trace-limit 0"),
        (
            &["--trace-limit", "50000001"][..],
            "--trace-limit 50000001: at most 50000000",
        ),
        (&["--trace-window", "5..2"][..], "--trace-window 5..2"),
        (&["--trace-window", "soon"][..], "--trace-window soon"),
    ] {
        let bad = dir.join("bad.pftrace");
        let mut args = base.to_vec();
        args.extend(["--trace", bad.to_str().unwrap()]);
        args.extend(extra);
        let o = schedlab(&args);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(field), "{}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1);
        assert!(!bad.exists());
    }
}

#[test]
fn compare_runs_an_ad_hoc_experiment_with_config_variants() {
    let dir = tempdir("compare");
    let args = [
        "compare",
        "--machine",
        "exynos5422",
        "--workload",
        "blackscholes:input=simsmall",
        "--sweep",
        "threads=2,6",
        "--config",
        "linaro-mp",
        "--config",
        "hperf-hmp",
        "--config",
        "hperf-hmp+HMP_HPERF=off",
        "--reps",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ];
    let o = schedlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("hperf-hmp+HMP_HPERF=off"), "{out}");
    assert!(out.contains("Amean     time-6"), "{out}");
    assert!(
        out.contains("note: placement threads=6 hperf-hmp:"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let e = &v["experiments"][0];
    assert_eq!(e["name"], "compare");
    assert_eq!(e["baseline"], "linaro-mp");
    assert_eq!(e["configs"].as_array().unwrap().len(), 3);
    // time and roi_time, 2 points, 3 configs.
    let rows = e["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 3 * 2);
    assert!(rows
        .iter()
        .all(|r| r["samples"].as_array().unwrap().len() == 2));
    assert!(rows.iter().any(|r| r["params"]["threads"] == 6));
    assert!(rows.iter().all(|r| r.get("published_change_pct").is_none()));
    assert!(dir.join("plots/compare-time.svg").exists());
    // The same command gives the same results.
    let first = std::fs::read(dir.join("results.json")).unwrap();
    assert!(schedlab(&args).status.success());
    assert_eq!(first, std::fs::read(dir.join("results.json")).unwrap());
    // Each repetition's seed is recorded, and `run --seed` reruns it.
    let seeds = e["seeds"].as_array().unwrap();
    assert_eq!(seeds.len(), 2);
    let p6 = seeds.iter().find(|p| p["params"]["threads"] == 6).unwrap();
    // In decimal strings: JSON readers holding numbers as doubles would
    // round a 64-bit seed.
    let seed = p6["seeds"][1].as_str().unwrap().to_string();
    assert!(seed.parse::<u64>().is_ok(), "{seed}");
    let workload = p6["workload"].as_str().unwrap();
    assert!(workload.starts_with("blackscholes:"), "{workload}");
    assert!(p6.get("cpus").is_none() && p6.get("mem_node").is_none());
    let o = schedlab(&[
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        workload,
        "--config",
        "hperf-hmp",
        "--seed",
        &seed,
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = rows
        .iter()
        .find(|r| {
            r["params"]["threads"] == 6 && r["config"] == "hperf-hmp" && r["metric"] == "time"
        })
        .unwrap();
    assert_eq!(run["metrics"]["time"], row["samples"][1]);
}

/// An `--out` directory's plots/ loses the plots an earlier run wrote there
/// (they may be of other experiments) and keeps every other file.
#[test]
fn out_replaces_its_own_plots_and_keeps_the_users() {
    let dir = tempdir("plots-owned");
    let run = |workload: &str| {
        let o = schedlab(&[
            "compare",
            "--machine",
            "exynos5422",
            "--workload",
            workload,
            "--config",
            "linaro-mp",
            "--config",
            "hperf-hmp",
            "--reps",
            "1",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run("blackscholes:input=simsmall,threads=2");
    let plots = dir.join("plots");
    assert!(plots.join("compare-time.svg").exists());
    std::fs::write(plots.join("my-figure.svg"), "<svg/>").unwrap();
    run("pipe:instances=1,loops=200");
    assert!(
        !plots.join("compare-time.svg").exists(),
        "a stale plot stayed"
    );
    assert!(plots.join("compare-usec_per_op.svg").exists());
    assert_eq!(
        std::fs::read_to_string(plots.join("my-figure.svg")).unwrap(),
        "<svg/>"
    );
}

/// A metric with no better direction (hackbench's message count) is not
/// compared, and the output says so rather than dropping it silently.
#[test]
fn compare_names_the_metrics_it_does_not_compare() {
    let o = schedlab(&[
        "compare",
        "--machine",
        "exynos5422",
        "--workload",
        "hackbench:groups=1,loops=5",
        "--config",
        "vanilla",
        "--config",
        "hperf-hmp",
        "--reps",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Amean     time"), "{out}");
    assert!(
        out.contains("note: not compared, having no better direction: messages"),
        "{out}"
    );
}

#[test]
fn compare_rejects_bad_input_with_one_line() {
    let base = [
        "compare",
        "--machine",
        "exynos5422",
        "--workload",
        "blackscholes:input=simsmall",
    ];
    for (extra, field) in [
        (&["--config", "nope"][..], "unknown config 'nope'"),
        (&["--config", "cluster+NO_SUCH=on"][..], "NO_SUCH"),
        (
            &["--config", "vanilla", "--sweep", "threads"][..],
            "--sweep 'threads'",
        ),
        (
            &["--config", "vanilla", "--sweep", "input=simsmall,native"][..],
            "already set",
        ),
        (
            &["--config", "vanilla", "--sweep", "bogus=1,2"][..],
            "bogus",
        ),
        (&["--config", "vanilla", "--reps", "0"][..], "--reps 0"),
        (&["--config", "vanilla", "--cpus", "99"][..], "--cpus '99'"),
        (
            &[
                "--config",
                "vanilla",
                "--config",
                "hperf-hmp",
                "--config",
                "vanilla",
            ][..],
            "--config vanilla: given twice",
        ),
        (
            &["--config", "vanilla", "--sweep", "threads=2,4,2"][..],
            "value 2 given twice",
        ),
        (
            &["--config", "vanilla", "--sweep", "threads=2,,4"][..],
            "--sweep 'threads=2,,4': an empty value",
        ),
        (
            &["--config", "vanilla", "--sensitivity-keys", "wakeup"][..],
            "--sensitivity-keys wakeup: not a number",
        ),
        (
            &[
                "--config",
                "vanilla",
                "--sensitivity-keys",
                "wakeup.ipi_ns,bogus",
            ][..],
            "--sensitivity-keys bogus: no machine of this run has it",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        let o = schedlab(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(field), "{extra:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{extra:?}: {e}");
    }
}

/// An output never overwrites another output or an input file, and a
/// trace is not written to a file named `-`.
#[test]
fn outputs_may_not_overwrite_each_other_or_the_inputs() {
    let dir = tempdir("output-clash");
    let wl = dir.join("w.json");
    let text = r#"{"tasks": {"t": {"loop": 2, "run": 100, "sleep": 100}}}"#;
    std::fs::write(&wl, text).unwrap();
    let (wl_s, out) = (wl.to_str().unwrap(), dir.join("o.json"));
    let out_s = out.to_str().unwrap();
    let base = ["run", "--machine", "exynos5422", "--workload", wl_s];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [base, extra].concat()
    }
    assert_bad_input(
        &with(&base, &["--json", out_s, "--trace", out_s]),
        "the same file as --json",
    );
    assert_bad_input(
        &with(&base, &["--json", wl_s]),
        "would overwrite the --workload file",
    );
    assert_bad_input(&with(&base, &["--trace", "-"]), "--trace -");
    assert_eq!(std::fs::read_to_string(&wl).unwrap(), text);
    assert!(!out.exists());
    let o = schedlab(&with(&base, &["--json", out_s]));
    assert!(o.status.success(), "{}", stderr(&o));
    // A results directory's files are outputs too.
    let rt = dir.join("results.json");
    std::fs::write(&rt, text).unwrap();
    let rt_s = rt.to_str().unwrap();
    let dir_s = dir.to_str().unwrap();
    assert_bad_input(
        &[
            "compare",
            "--machine",
            "exynos5422",
            "--workload",
            rt_s,
            "--config",
            "vanilla",
            "--reps",
            "1",
            "--out",
            dir_s,
        ],
        "would overwrite the --workload file",
    );
    assert_eq!(std::fs::read_to_string(&rt).unwrap(), text);
    let later = dir.join("later");
    let tables = later.join("tables.txt");
    assert_bad_input(
        &[
            "reproduce",
            "kunpeng920-stream",
            "--quick",
            "--out",
            later.to_str().unwrap(),
            "--json",
            tables.to_str().unwrap(),
        ],
        "a file --out",
    );
    // An output through a symbolic link replaces the file it points to.
    #[cfg(unix)]
    {
        let (real, link) = (dir.join("real.json"), dir.join("link.json"));
        std::fs::write(&real, "{}").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let o = schedlab(&with(&base, &["--json", link.to_str().unwrap()]));
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(link.is_symlink());
        assert!(std::fs::read_to_string(&real)
            .unwrap()
            .contains("schedlab.run/1"));
    }
}

#[test]
fn calibrate_kunpeng_matches_the_published_bandwidths() {
    let o = schedlab(&["calibrate", "kunpeng920", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut checked = 0;
    for c in v["checks"].as_array().unwrap() {
        let ratio = c["ratio"].as_f64().unwrap();
        // Rows carry the tolerance their test allows (STREAM 10%, ping-pong
        // 15%); rows without one (lock_test) show a gap the model has.
        let Some(tol) = c["tolerance"].as_f64() else {
            continue;
        };
        assert!((ratio - 1.0).abs() <= tol, "{} ratio {ratio}", c["name"]);
        checked += 1;
    }
    assert!(checked >= 15, "{checked} rows with a tolerance");
}

/// A fresh directory under the target dir.
pub fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn topo_host_and_sysfs_fixtures_work_and_emitted_machines_reload() {
    let o = schedlab(&["topo", "--host"]);
    assert!(o.status.success(), "topo --host: {}", stderr(&o));
    // `host` is a machine for run and compare too.
    let o = schedlab(&[
        "run",
        "--machine",
        "host",
        "--workload",
        "pipe:instances=1,loops=100",
    ]);
    assert!(o.status.success(), "run --machine host: {}", stderr(&o));
    assert!(stdout(&o).contains("on host (vanilla)"), "{}", stdout(&o));
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../topo/tests/fixtures");
    let dir = tempdir("emit");
    for f in ["x86-smt", "x86-hybrid", "arm64-biglittle", "x86-2node"] {
        let root = format!("{fixtures}/{f}");
        let o = schedlab(&["topo", "--sysfs-root", &root, "--json"]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(!v["cpus"].as_array().unwrap().is_empty(), "{f}");
        // --emit-machine writes a machine file the loader accepts, with the same domains.
        let o = schedlab(&["topo", "--sysfs-root", &root, "--emit-machine"]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let file = dir.join(format!("{f}.toml"));
        std::fs::write(&file, &o.stdout).unwrap();
        let again = schedlab(&["topo", file.to_str().unwrap(), "--json"]);
        assert!(again.status.success(), "{f} reload: {}", stderr(&again));
        let w: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
        assert_eq!(
            v["cpus"], w["cpus"],
            "{f}: domains differ after a round trip"
        );
    }
    // The emitted file marks sysfs's gaps ESTIMATE, so --sensitivity on it
    // moves them (and nothing that sysfs measured).
    let file = dir.join("x86-hybrid.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("[wakeup]  # ESTIMATE"), "{text}");
    let o = schedlab(&[
        "compare",
        "--machine",
        file.to_str().unwrap(),
        "--workload",
        "pipe:instances=1,loops=200",
        "--config",
        "vanilla",
        "--config",
        "cluster",
        "--reps",
        "1",
        "--sensitivity",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "wakeup.ipi_ns*2 ",
        "c2c.llc_ns*0.5 ",
        "core_type.0.core_bw_bytes_per_s*2 ",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert!(
        !out.contains("capacity*"),
        "capacities come from sysfs: {out}"
    );
    // A preset's --emit-machine is its own file, sources and all.
    let o = schedlab(&["topo", "kunpeng920", "--emit-machine"]);
    assert!(stdout(&o).contains("[WAYCA]"), "{}", stdout(&o));
    // A broken machine file: exit 2 naming the file.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\n[shape]\npackages = 0\n").unwrap();
    let o = schedlab(&["topo", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.toml"), "{}", stderr(&o));
}

#[test]
fn every_preset_builds_for_every_config_it_lists() {
    let o = schedlab(&["topo", "--list"]);
    let presets: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(presets.len(), 7);
    for p in &presets {
        let o = schedlab(&["topo", p, "--json"]);
        assert!(o.status.success(), "{p}: {}", stderr(&o));
    }
}

#[test]
fn run_accepts_rtapp_files_and_rejects_malformed_ones_with_the_json_path() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../workload/tests/fixtures");
    // `schedlab run --machine exynos5422 --workload FILE` and `extra` flags.
    let run = |file: &str, extra: &[&str]| {
        let mut args = vec!["run", "--machine", "exynos5422", "--workload", file];
        args.extend_from_slice(extra);
        schedlab(&args)
    };
    let o = run(&format!("{fixtures}/finite.json"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The relaxed syntax of rt-app's own examples runs, with its phases'
    // CPUs, and a note names the key rt-app would pass over.
    let relaxed = format!("{fixtures}/relaxed_phases.json");
    let o = run(&relaxed, &["--checked"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("global.frag ignored"), "{all}");
    assert!(all.contains("TimeLimit"), "{all}");
    // Under --cpus that leave a phase none of its CPUs, the run is refused.
    let o = run(&relaxed, &["--cpus", "3-7"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("tasks.mover.phases"), "{}", stderr(&o));
    let dir = tempdir("rtapp-bad");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"tasks": {"ui": {"loop": 1, "phases": {"p": {"run": 100, "timer": {"ref": "t", "period": "x"}}}}}}"#,
    )
    .unwrap();
    let o = run(bad.to_str().unwrap(), &[]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("bad.json") && e.contains("tasks.ui.phases.p.timer.period"),
        "{e}"
    );
    let o = run("/nonexistent/x.json", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn every_builtin_runs_on_a_small_machine() {
    for w in [
        "hackbench:groups=1,fds=4,loops=20,ipc=pipe,mode=threads",
        "hackbench:groups=1,fds=4,loops=20,ipc=socket,mode=process",
        "pipe:instances=2,loops=200",
        "schbench:message_threads=1,workers=4,runtime_s=1",
        "blackscholes:threads=4,input=simsmall",
        "streamcluster:threads=4,input=simsmall",
        "bodytrack:threads=4,input=simsmall",
        "pbzip2:threads=4,size_mib=8",
        "kernbench:threads=8,files=50",
        "stream:threads=2,iterations=2,size_mib=16",
    ] {
        let o = schedlab(&[
            "run",
            "--machine",
            "alderlake",
            "--workload",
            w,
            "--checked",
        ]);
        assert!(o.status.success(), "{w}: {}", stderr(&o));
        let out = stdout(&o);
        // Timed benchmarks (schbench) end by their runtime; none may stall.
        assert!(
            out.contains("Finished") || out.contains("TimeLimit"),
            "{w}: {out}"
        );
        assert!(!out.contains("Stalled"), "{w}: {out}");
    }
}

#[test]
fn machines_with_offline_cpus_span_only_the_online_ones() {
    let o = schedlab(&["topo", "power10:online=0-63", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 64);
    let top = cpus[0]["domains"].as_array().unwrap().last().unwrap();
    assert_eq!(top["span"].as_array().unwrap().len(), 64);
    let o = schedlab(&["topo", "power10:online=0-99"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("online") && e.trim().lines().count() == 1, "{e}");
}

/// `--reps` overrides the experiments' repetitions; the first runs of a
/// larger count are the same runs (a repetition's seed depends on its
/// index), and an impossible count is a one-line error with exit 2.
#[test]
fn reproduce_reps_overrides_the_repetitions() {
    let samples = |reps: &str| -> Vec<Vec<f64>> {
        let dir = tempdir(&format!("reps-{reps}"));
        let o = schedlab(&[
            "reproduce",
            "exynos5433-mixed",
            "--quick",
            "--reps",
            reps,
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
        v["experiments"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["samples"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .collect()
    };
    let one = samples("1");
    let two = samples("2");
    assert!(one.iter().all(|s| s.len() == 1));
    assert!(two.iter().all(|s| s.len() == 2));
    for (a, b) in one.iter().zip(&two) {
        assert_eq!(a[0], b[0], "the first repetition is the same run");
    }
    let o = schedlab(&["reproduce", "exynos5433-mixed", "--reps", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--reps 0"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "one-line message: {e}");
}

/// `reproduce --feature/--tunable` switch every configuration: the runs
/// move, the configurations keep their names, results.json and the tables
/// record the switches, and a bad switch is a one-line error with exit 2.
#[test]
fn reproduce_switches_apply_to_every_configuration_and_are_recorded() {
    let dir = tempdir("switch-plain");
    let plain_args = [
        "reproduce",
        "exynos5433-mixed",
        "--quick",
        "--reps",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ];
    let o = schedlab(&plain_args);
    assert!(o.status.success(), "{}", stderr(&o));
    let plain: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    let dir2 = tempdir("switch-on");
    let mut args = plain_args.to_vec();
    args[6] = dir2.to_str().unwrap();
    args.extend([
        "--feature",
        "HMP_FORK_BOOST=off",
        "--tunable",
        "migration_cost_ns=500000",
    ]);
    let o = schedlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir2.join("results.json")).unwrap()).unwrap();
    let text = std::fs::read_to_string(dir2.join("tables.txt")).unwrap();
    assert!(plain.get("config_switches").is_none());
    assert_eq!(
        v["config_switches"],
        serde_json::json!(["HMP_FORK_BOOST=off", "migration_cost_ns=500000"])
    );
    assert!(
        text.contains("== Configuration switches: HMP_FORK_BOOST=off, migration_cost_ns=500000"),
        "{text}"
    );
    let e = &v["experiments"][0];
    assert_eq!(e["configs"], plain["experiments"][0]["configs"]);
    assert_ne!(
        e["rows"], plain["experiments"][0]["rows"],
        "Linaro's children without the fork boost move the results"
    );
    for (flag, switch, want) in [
        ("--feature", "NO_SUCH=on", "unknown feature 'NO_SUCH'"),
        (
            "--feature",
            "migration_cost_ns=1",
            "--feature migration_cost_ns=1",
        ),
        ("--tunable", "domains/XYZ/busy_factor=2", "no such domain"),
    ] {
        assert_bad_input(&["reproduce", "exynos5433-mixed", flag, switch], want);
    }
    // `compare` takes them too, for every --config: Linaro MP's runs move,
    // HPERF_HMP's (which the switch does not concern) do not.
    let compare = |switch: Option<&str>| -> (serde_json::Value, String) {
        let dir = tempdir(&format!("switch-compare-{}", switch.map_or(0, str::len)));
        let mut args = vec![
            "compare",
            "--machine",
            "exynos5433",
            "--workload",
            "mobile:cpus=8,scale=1",
            "--config",
            "linaro-mp",
            "--config",
            "hperf-hmp",
            "--reps",
            "1",
            "--out",
            dir.to_str().unwrap(),
        ];
        match switch {
            Some(t) if t.starts_with("domains/") => args.extend(["--tunable", t]),
            Some(f) => args.extend(["--feature", f]),
            None => {}
        }
        let o = schedlab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
        (v, stdout(&o))
    };
    let (c0, _) = compare(None);
    let (c1, out) = compare(Some("HMP_FORK_BOOST=off"));
    assert!(
        out.contains("; in every configuration: HMP_FORK_BOOST=off)"),
        "{out}"
    );
    assert!(c0.get("config_switches").is_none());
    assert_eq!(
        c1["config_switches"],
        serde_json::json!(["HMP_FORK_BOOST=off"])
    );
    let score = |v: &serde_json::Value, config: &str| {
        v["experiments"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["config"] == config && r["metric"] == "score")
            .map(|r| r["samples"][0].as_f64().unwrap())
            .unwrap()
    };
    assert_ne!(score(&c0, "linaro-mp"), score(&c1, "linaro-mp"));
    assert_eq!(score(&c0, "hperf-hmp"), score(&c1, "hperf-hmp"));
    // A tunable: HPERF_HMP's step runs at the PKG level's interval.
    let (c2, _) = compare(Some("domains/PKG/busy_factor=1"));
    assert_eq!(
        c2["config_switches"],
        serde_json::json!(["domains/PKG/busy_factor=1"])
    );
    assert_ne!(score(&c0, "hperf-hmp"), score(&c2, "hperf-hmp"));
    for (tunable, want) in [
        ("hz=+250", "'+' separates the switches"),
        ("domains/CLS/busy_factor=3", "no such domain"),
    ] {
        assert_bad_input(
            &[
                "compare",
                "--machine",
                "exynos5433",
                "--workload",
                "mobile",
                "--config",
                "linaro-mp",
                "--tunable",
                tunable,
            ],
            want,
        );
    }
}

/// `--machine-edit` changes a machine number before the runs: the runs move,
/// results.json and the tables record the edit, and a bad edit is a
/// one-line error with exit 2 before anything runs.
#[test]
fn machine_edits_change_the_runs_and_are_recorded() {
    let run = |edit: Option<&str>| -> (serde_json::Value, String) {
        let dir = tempdir(&format!("edit-{}", edit.is_some()));
        let mut args = vec![
            "reproduce",
            "exynos5433-mixed",
            "--quick",
            "--reps",
            "1",
            "--out",
            dir.to_str().unwrap(),
        ];
        if let Some(e) = edit {
            args.extend(["--machine-edit", e]);
        }
        let o = schedlab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
        (v, std::fs::read_to_string(dir.join("tables.txt")).unwrap())
    };
    let (plain, plain_text) = run(None);
    let (edited, text) = run(Some("wakeup.ipi_ns*4"));
    assert!(plain.get("machine_edits").is_none());
    assert!(!plain_text.contains("Machine edits"));
    assert_eq!(
        edited["machine_edits"],
        serde_json::json!(["wakeup.ipi_ns*4"])
    );
    assert!(text.contains("== Machine edits: wakeup.ipi_ns*4"), "{text}");
    assert!(
        text.contains("exynos5433 (edited: wakeup.ipi_ns*4)"),
        "{text}"
    );
    // Each experiment's set-up names the edits that reached its machine.
    let setup = |v: &serde_json::Value| v["experiments"][0]["setup"].as_str().unwrap().to_string();
    assert!(setup(&edited).ends_with("; machine edited: wakeup.ipi_ns*4"));
    assert!(!setup(&plain).contains("machine edited"));
    assert_ne!(
        plain["experiments"][0]["rows"], edited["experiments"][0]["rows"],
        "slower IPIs move the results"
    );
    // `run` says so too, in its summary and its JSON.
    let dir = tempdir("edit-run");
    let json = dir.join("run.json");
    let o = schedlab(&[
        "run",
        "--machine",
        "kunpeng920",
        "--workload",
        "pipe:instances=1,loops=200",
        "--machine-edit",
        "wakeup.ipi_ns*2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("on kunpeng920 (edited: wakeup.ipi_ns*2)"),
        "{}",
        stdout(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["machine_edits"], serde_json::json!(["wakeup.ipi_ns*2"]));
    for (args, want) in [
        (
            &[
                "reproduce",
                "exynos5433-mixed",
                "--machine-edit",
                "wakeup.ipi_ns",
            ][..],
            "PATH*FACTOR",
        ),
        (
            &[
                "reproduce",
                "exynos5433-mixed",
                "--machine-edit",
                "wakeup.nope*2",
            ][..],
            "no such number",
        ),
        (
            &[
                "reproduce",
                "exynos5433-mixed",
                "--machine-edit",
                "wakeup.ipi_ns*1",
            ][..],
            "changes nothing",
        ),
        (
            // Over every experiment's machine: some have c2c.die_ns, none changes.
            &["reproduce", "--machine-edit", "c2c.die_ns*1"][..],
            "changes nothing in any machine of this run",
        ),
        (
            // Changed in some machines is enough: the next check speaks.
            &[
                "reproduce",
                "--machine-edit",
                "c2c.die_ns*2",
                "--sensitivity-factor",
                "0.5",
            ][..],
            "--sensitivity-factor 0.5",
        ),
        (
            &[
                "run",
                "--machine",
                "kunpeng920",
                "--workload",
                "pipe:instances=1",
                "--machine-edit",
                "core_type.0.smt_thread_speed=1.0",
            ][..],
            "changes nothing",
        ),
        (
            &[
                "reproduce",
                "exynos5433-mixed",
                "--machine-edit",
                "core_type.capacity=0",
            ][..],
            "edited: core_type.capacity=0",
        ),
        (
            &[
                "run",
                "--machine",
                "kunpeng920",
                "--workload",
                "pipe:instances=1",
                "--machine-edit",
                "name*2",
            ][..],
            "not a number",
        ),
    ] {
        assert_bad_input(args, want);
    }
}

/// `--sensitivity` reruns with every ESTIMATE number of the machine halved
/// and doubled and reports each edit; impossible edits are listed as
/// skipped; a bad factor is a one-line error with exit 2.
#[test]
fn sensitivity_reruns_each_estimate_and_reports_it() {
    let dir = tempdir("sensitivity");
    let o = schedlab(&[
        "reproduce",
        "alderlake-single",
        "--quick",
        "--reps",
        "1",
        "--sensitivity",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("tables.txt")).unwrap();
    let s = &text[text.find("== Sensitivity").expect("section")..];
    for want in [
        "wakeup.ipi_ns*0.5 ",
        "wakeup.ipi_ns*2 ",
        "core_type.1.capacity*0.5 ",
        "largest move alderlake-single",
        "core_type.0.smt_thread_speed*2 ",
        "skipped:",
        "edits change a shape verdict",
    ] {
        assert!(s.contains(want), "{want}: {s}");
    }
    // Measured numbers are left alone.
    assert!(!s.contains("freq_max_mhz"), "{s}");
    // results.json carries the same, one entry per edit.
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    let entries = v["sensitivity"].as_array().expect("sensitivity entries");
    let ipi = entries
        .iter()
        .find(|e| e["edit"] == "wakeup.ipi_ns*2")
        .expect("wakeup.ipi_ns*2");
    assert_eq!(ipi["machines"], serde_json::json!(["alderlake"]));
    assert_eq!(ipi["largest_move"]["experiment"], "alderlake-single");
    assert!(ipi.get("skipped").is_none());
    let skipped = entries
        .iter()
        .find(|e| e["edit"] == "core_type.0.smt_thread_speed*2")
        .expect("skipped edit");
    assert!(skipped["skipped"]
        .as_str()
        .unwrap()
        .contains("smt_thread_speed"));
    assert_bad_input(
        &[
            "reproduce",
            "alderlake-single",
            "--sensitivity",
            "--sensitivity-factor",
            "1",
        ],
        "--sensitivity-factor 1",
    );
}

/// `--sensitivity-keys` varies chosen paths, measured or not. Kunpeng's
/// cluster bus (a measured 30.7 GB/s) is what STREAM's cluster gain comes
/// from: doubled, four threads in one cluster are no longer bus-bound and
/// the gain at 4 threads is gone.
#[test]
fn sensitivity_keys_vary_chosen_paths_and_the_cluster_bus_makes_the_stream_gain() {
    let dir = tempdir("sensitivity-keys");
    let o = schedlab(&[
        "reproduce",
        "kunpeng920-stream",
        "--quick",
        "--reps",
        "1",
        "--sensitivity-keys",
        "link.0.bw_bytes_per_s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    let entries = v["sensitivity"].as_array().unwrap();
    let edits: Vec<&str> = entries
        .iter()
        .map(|e| e["edit"].as_str().unwrap())
        .collect();
    assert_eq!(
        edits,
        ["link.0.bw_bytes_per_s*0.5", "link.0.bw_bytes_per_s*2"]
    );
    let doubled = &entries[1];
    assert!(
        doubled["verdict_changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(
                |c| c["claim"] == "cluster beats vanilla at 4 threads (copy)"
                    && c["holds"] == false
            ),
        "{doubled}"
    );
    for (keys, want) in [
        ("no.such_key", "no machine of this run"),
        ("a b", "not a machine-file path"),
    ] {
        assert_bad_input(
            &["reproduce", "kunpeng920-stream", "--sensitivity-keys", keys],
            want,
        );
    }
}

#[test]
fn output_paths_and_cpu_lists_are_checked_before_the_run() {
    let dir = tempdir("out-checks");
    let missing = dir.join("no-such-dir").join("x.json");
    // `run` with these extra arguments is bad input naming `want`.
    let bad_run = |extra: &[&str], want: &str| {
        let mut a = vec!["run", "--machine", "exynos5422", "--workload", "hackbench"];
        a.extend_from_slice(extra);
        assert_bad_input(&a, want);
    };
    bad_run(&["--json", missing.to_str().unwrap()], "does not exist");
    bad_run(&["--trace", dir.to_str().unwrap()], "is a directory");
    let slash = format!("{}/x.json/", dir.display());
    bad_run(&["--json", &slash], "is a directory");
    // A device is written in place, as a shell redirection would.
    for flag in ["--json", "--trace"] {
        let out = schedlab(&[
            "run",
            "--machine",
            "exynos5422",
            "--workload",
            "pipe:instances=1,loops=10",
            flag,
            "/dev/null",
        ]);
        assert!(out.status.success(), "{flag} /dev/null: {out:?}");
    }
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    assert_bad_input(
        &[
            "reproduce",
            "kunpeng920-stream",
            "--quick",
            "--out",
            file.to_str().unwrap(),
        ],
        "not a directory",
    );
    // A bad --json leaves no --out directory behind.
    let out = dir.join("results");
    assert_bad_input(
        &[
            "reproduce",
            "kunpeng920-stream",
            "--quick",
            "--out",
            out.to_str().unwrap(),
            "--json",
            missing.to_str().unwrap(),
        ],
        "does not exist",
    );
    assert!(!out.exists());
    // A directory where no file can be created is refused before the runs
    // (procfs refuses even root).
    if std::path::Path::new("/proc/self").is_dir() {
        for (out, want) in [
            ("/proc", "--out /proc: cannot write there: "),
            ("/proc/schedlab/x", "cannot create it in /proc: "),
        ] {
            assert_bad_input(
                &["reproduce", "kunpeng920-stream", "--quick", "--out", out],
                want,
            );
        }
    }
    // CPUs the machine does not have are an error, not silently dropped.
    bad_run(&["--cpus", "0-200"], "has no CPU 8");
    // Nothing was written.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn run_json_pids_are_the_trace_pids_less_one() {
    let dir = tempdir("run-pids");
    let json = dir.join("run.json");
    let trace = dir.join("run.txt");
    let o = schedlab(&[
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        "hackbench:groups=1,fds=2,loops=10,mode=process",
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // In hackbench's process mode each receiver is a process of its own:
    // its pid is its own tid; the first process's pid is the first tid.
    let tasks = v["tasks"].as_array().unwrap();
    let first = &tasks[0];
    assert_eq!(first["pid"], first["tid"]);
    let rx = tasks
        .iter()
        .find(|t| t["name"].as_str().unwrap().starts_with("receiver"))
        .expect("a receiver");
    assert_eq!(rx["pid"], rx["tid"], "{rx}");
}

#[test]
fn configs_lists_every_configuration_with_its_features() {
    let o = schedlab(&["configs"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for name in ["vanilla", "cluster", "patchset", "cache-aware", "hperf-hmp"] {
        assert!(out.lines().any(|l| l == name), "{name}: {out}");
    }
    assert!(out.contains("features: SCHED_CACHE=on"), "{out}");
}

#[test]
fn an_rtapp_thread_pinned_outside_cpus_is_refused() {
    let dir = tempdir("rtapp-cpus");
    let f = dir.join("pinned.json");
    std::fs::write(
        &f,
        r#"{"global":{"duration":1},"tasks":{"t":{"cpus":[4,5],"run":1000,"sleep":1000}}}"#,
    )
    .unwrap();
    let file = f.to_str().unwrap();
    assert_bad_input(
        &[
            "run",
            "--machine",
            "exynos5422",
            "--workload",
            file,
            "--cpus",
            "0-3",
        ],
        &format!("{file}: tasks.t.cpus: CPUs 4-5 are all outside --cpus 0-3"),
    );
    // Overlapping lists run on the overlap.
    let o = schedlab(&[
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        file,
        "--cpus",
        "0-4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Conflicting flags are refused, not ignored.
    let o = schedlab(&["topo", "--list", "--config", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
    let o = schedlab(&["reproduce", "--list", "kunpeng920-stream"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `run --tunable` and configuration switches set the kernel's tunables:
/// relax_domain_level=0 turns off every newidle balance, a higher level
/// only those above it; the JSON report records the values.
#[test]
fn tunables_change_the_run_and_are_recorded() {
    let dir = tempdir("tunables");
    let newidle = |extra: &[&str]| {
        let json = dir.join("run.json");
        let mut args = vec![
            "run",
            "--machine",
            "kunpeng920",
            "--workload",
            "hackbench:groups=2,fds=4,loops=200",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = schedlab(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (v["counters"]["newidle_balance"].as_u64().unwrap(), v)
    };
    let (all, v) = newidle(&[]);
    assert_eq!(v["tunables"]["migration_cost_ns"], 500_000);
    assert_eq!(v["tunables"]["base_slice_ns"], 2_800_000);
    let (none, v) = newidle(&["--tunable", "relax_domain_level=0"]);
    assert_eq!(v["tunables"]["relax_domain_level"], 0);
    let (below_numa, _) = newidle(&["--config", "vanilla+relax_domain_level=2"]);
    assert!(
        all > below_numa && below_numa > 0 && none == 0,
        "{all} {below_numa} {none}"
    );
    let (_, v) = newidle(&[
        "--tunable",
        "domains/MC/imbalance_pct=130",
        "--tunable",
        "nr_migrate=8",
    ]);
    assert_eq!(v["tunables"]["domains"][0], "domains/MC/imbalance_pct=130");
    assert_eq!(v["tunables"]["nr_migrate"], 8);
    // The recorded configuration is the one run: --feature and --tunable
    // switches appended in order.
    let (_, v) = newidle(&[
        "--config",
        "cluster+CLUSTER_SCAN=off",
        "--feature",
        "CLUSTER_SCAN=on",
        "--tunable",
        "nr_migrate=8",
    ]);
    assert_eq!(
        v["config"],
        "cluster+CLUSTER_SCAN=off+CLUSTER_SCAN=on+nr_migrate=8"
    );
    assert_eq!(v["features"]["CLUSTER_SCAN"], true);

    let o = schedlab(&["tunables"]);
    assert!(o.status.success());
    for name in [
        "migration_cost_ns",
        "relax_domain_level",
        "llc_balancing/imb_pct",
        "hz",
    ] {
        assert!(stdout(&o).lines().any(|l| l.starts_with(name)), "{name}");
    }
    let o = schedlab(&[
        "topo",
        "kunpeng920",
        "--config",
        "vanilla+domains/MC/busy_factor=4",
    ]);
    assert!(stdout(&o).contains("domain0 MC span 0-23") && stdout(&o).contains("busy_factor 4"));
}

#[test]
fn bad_tunables_exit_2_naming_the_tunable() {
    let run = |t: &str| {
        vec![
            "run".to_string(),
            "--machine".into(),
            "kunpeng920".into(),
            "--workload".into(),
            "stream:threads=2".into(),
            "--tunable".into(),
            t.to_string(),
        ]
    };
    for (t, want) in [
        ("nope=1", "unknown tunable 'nope'"),
        ("base_slice_ns=5", "tunable 'base_slice_ns': 5 is outside"),
        ("hz=123", "tunable 'hz'"),
        ("relax_domain_level=x", "tunable 'relax_domain_level'"),
        ("domains/CLS/busy_factor=2", "domains/CLS: no such domain"),
        ("domains/MC/imbalance_pct=50", "outside 100..=10000"),
        ("nr_migrate", "expected FEATURE=on|off or TUNABLE=VALUE"),
    ] {
        let args = run(t);
        let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        assert_bad_input(&args, want);
    }
    assert_bad_input(
        &[
            "topo",
            "kunpeng920",
            "--config",
            "vanilla+migration_cost_ns=-1",
        ],
        "config 'vanilla+migration_cost_ns=-1': tunable 'migration_cost_ns'",
    );
}

/// A bad command line is one line and exit 2, like any bad input; help and
/// version print as before.
#[test]
fn argument_errors_are_one_line() {
    for (args, want) in [
        (
            &["topo", "kunpeng920", "--cnfig", "x"][..],
            "'--cnfig' found (tip: a similar argument exists: '--config')",
        ),
        (
            &["run"][..],
            "not provided: --machine <MACHINE>, --workload <WORKLOAD>",
        ),
        (
            &["run", "--machine", "m", "--workload", "w", "--seed", "x"][..],
            "invalid value 'x' for '--seed <SEED>'",
        ),
    ] {
        assert_bad_input(args, want);
        assert!(stderr(&schedlab(args)).starts_with("schedlab: "));
    }
    let o = schedlab(&["run", "--help"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("Usage: schedlab run"));
    let o = schedlab(&["--version"]);
    assert!(o.status.success());
    assert!(stdout(&o).starts_with("schedlab "));
}

/// Bad input files are named with the field and the reason, briefly.
#[test]
fn file_errors_name_the_file_field_and_reason() {
    let dir = tempdir("file-errors");
    let write = |name: &str, text: &str| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_string()
    };
    let json = write("m.json", "{\"machine\": 1}");
    assert_bad_input(
        &["run", "--machine", &json, "--workload", "stream"],
        &format!("{json}: field `(file)`: not a TOML machine file"),
    );
    let task = |run: &str, duration: &str| {
        format!(
            r#"{{"global":{{"duration":{duration}}},"tasks":{{"t":{{"run":{run},"sleep":10}}}}}}"#
        )
    };
    for (name, text, want) in [
        ("huge.json", task("1e300", "1"), "tasks.t.run: 1e300 is outside 0..=1e12 µs"),
        ("long.json", task("10", "1e9"), "global.duration: expected -1 (no limit) or a number of seconds above 0 and at most 1e6, found 1e9"),
    ] {
        let f = write(name, &text);
        assert_bad_input(
            &["run", "--machine", "exynos5422", "--workload", &f],
            &format!("{f}: {want}"),
        );
    }
    // A file without .json, and a path to no file.
    write("rt.txt", &task("10", "1"));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["run", "--machine", "exynos5422", "--workload", "rt.txt"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("rt.txt: not a workload spec, and an rt-app file needs a .json name"),
        "{}",
        stderr(&o)
    );
    assert_bad_input(
        &[
            "run",
            "--machine",
            "exynos5422",
            "--workload",
            "./no-such-stream",
        ],
        "./no-such-stream: no such file",
    );
}

/// An rt-app file may come through a pipe (`--workload <(jq ...)` names
/// /dev/fd/N; here /dev/stdin) or with an upper-case `.JSON` name.
#[test]
fn an_rtapp_workload_reads_from_a_pipe_and_any_case_name() {
    use std::io::Write;
    let dir = tempdir("rtapp-pipe");
    let text = r#"{"tasks": {"a": {"loop": 2, "run": 1000, "sleep": 1000}}}"#;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["run", "--machine", "exynos5422", "--workload", "/dev/stdin"])
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("rt-app (simulated)"));
    std::fs::write(dir.join("U.JSON"), text).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["run", "--machine", "exynos5422", "--workload", "U.JSON"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `run --json -` writes the JSON report to stdout (the text report to
/// stderr) and no file named `-`.
#[test]
fn run_json_dash_is_stdout() {
    let dir = tempdir("json-dash");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "run",
            "--machine",
            "exynos5422",
            "--workload",
            "hackbench:groups=1,fds=2,loops=10",
            "--json",
            "-",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "schedlab.run/1");
    assert!(stderr(&o).contains("schedlab: hackbench on exynos5422"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    assert!(v.get("mem_node").is_none() && v.get("allowed_cpus").is_none());
}

/// `run --json` records the placement options, so runs with memory on
/// different nodes can be told apart.
#[test]
fn run_json_records_cpus_and_mem_node() {
    let o = schedlab(&[
        "run",
        "--machine",
        "kunpeng920",
        "--workload",
        "stream:threads=2,size_mib=8,iterations=2",
        "--cpus",
        "0-3",
        "--mem-node",
        "1",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["allowed_cpus"], "0-3");
    assert_eq!(v["mem_node"], 1);
}

/// `plot` of a results file without experiments is bad input, and creates
/// no plots/ directory.
#[test]
fn plot_of_no_experiments_is_refused() {
    let dir = tempdir("plot-empty");
    let f = dir.join("results.json");
    std::fs::write(
        &f,
        r#"{"schema": "schedlab.results/1", "version": "0.1.0", "experiments": []}"#,
    )
    .unwrap();
    assert_bad_input(
        &["plot", f.to_str().unwrap()],
        "field `experiments`: empty list, nothing to plot",
    );
    assert!(!dir.join("plots").exists());
}

/// A `--feature` switch to the value the configuration already has is
/// named as changing nothing (HRTICK is on in x86 builds of 7.3).
#[test]
fn a_feature_switch_that_changes_nothing_is_named() {
    let run = |f: &str| {
        let o = schedlab(&[
            "run",
            "--machine",
            "sapphirerapids",
            "--workload",
            "pipe:loops=50",
            "--feature",
            f,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert!(run("HRTICK=on").contains("note: --feature HRTICK=on changes nothing"));
    assert!(!run("HRTICK=off").contains("changes nothing"));
}

/// Runs the rt-app document `doc` on exynos5422 in checked mode (written
/// to a file in a temporary directory named after `name`), and returns its
/// `--json` report and its ftrace text trace.
fn run_rtapp_traced(name: &str, doc: &str) -> (serde_json::Value, String) {
    let dir = tempdir(name);
    let wl = dir.join("workload.json");
    std::fs::write(&wl, doc).unwrap();
    let (json, trace) = (dir.join("run.json"), dir.join("t.txt"));
    let o = schedlab(&[
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        wl.to_str().unwrap(),
        "--checked",
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, std::fs::read_to_string(&trace).unwrap())
}

/// An rt-app file with a SCHED_FIFO hog and a fair hog on one CPU: the RT
/// task runs, the fair one gets the fair server's 50 ms a second, and the
/// trace shows the RT priority (99 − 60 = 39).
#[test]
fn run_takes_rtapp_fifo_tasks() {
    let (v, text) = run_rtapp_traced(
        "rtapp-fifo",
        r#"{"global": {"duration": 2, "calibration": 100},
            "tasks": {"rt": {"policy": "SCHED_FIFO", "priority": 60, "cpus": [5], "run": 5000000},
                      "fair": {"cpus": [5], "run": 5000000}}}"#,
    );
    let cpu = |name: &str| {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"].as_str().is_some_and(|n| n.starts_with(name)))
            .and_then(|t| t["cpu_time_ns"].as_u64())
            .unwrap()
    };
    let (rt, fair) = (cpu("rt"), cpu("fair"));
    assert!(
        rt > 1_850_000_000 && fair < 150_000_000,
        "rt {rt} fair {fair}"
    );
    assert!(v["counters"]["fair_server_runs"].as_u64().unwrap() >= 1);
    assert!(text.contains("next_comm=rt-0") && text.contains("next_prio=39"));
}

/// An rt-app file with a SCHED_DEADLINE hog of 10 ms per 100 ms: the CBS
/// throttles it every period, the trace shows its priority (-1); a file
/// asking for more deadline bandwidth than the machine admits makes rt-app
/// exit, and `run` with it: exit status 2, one line naming EBUSY, and no
/// `--json` or `--trace` file; so does `compare`, after its report, and
/// without its `--out` directory.
#[test]
fn run_takes_rtapp_deadline_tasks() {
    let (v, text) = run_rtapp_traced(
        "rtapp-dl",
        r#"{"global": {"duration": 1, "calibration": "CPU4"},
            "tasks": {"dl": {"policy": "SCHED_DEADLINE", "dl-runtime": 10000, "dl-period": 100000, "run": 5000000},
                      "fair": {"run": 5000000}}}"#,
    );
    assert!(
        v["counters"]["dl_throttles"].as_u64().unwrap() >= 9,
        "{}",
        v["counters"]
    );
    assert!(text.contains("next_comm=dl-0") && text.contains("next_prio=-1"));
    let over = tempdir("rtapp-dl-over").join("over.json");
    std::fs::write(
        &over,
        r#"{"tasks": {"dl": {"instance": 9, "policy": "SCHED_DEADLINE", "dl-runtime": 90000, "dl-period": 100000, "run": 1000}}}"#,
    )
    .unwrap();
    assert_bad_input(
        &[
            "run",
            "--machine",
            "exynos5422",
            "--workload",
            over.to_str().unwrap(),
        ],
        "EBUSY",
    );
    let dir = over.parent().unwrap();
    let (json, trace, out) = (dir.join("o.json"), dir.join("t.txt"), dir.join("cmp/a/b"));
    let o = schedlab(&[
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        over.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !json.exists() && !trace.exists(),
        "no output file on exit 2"
    );
    assert!(stdout(&o).contains("not written (the run exits with status 2)"));
    let o = schedlab(&[
        "compare",
        "--machine",
        "exynos5422",
        "--workload",
        over.to_str().unwrap(),
        "--config",
        "vanilla",
        "--reps",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.join("cmp").exists(), "no --out directory on exit 2");
    let e = stderr(&o);
    assert!(
        e.contains("2 of 2 runs stopped as the workload exited") && e.contains("EBUSY"),
        "{e}"
    );
    assert!(stdout(&o).contains("EBUSY"), "the report comes first");
}

/// rt-app's fork limit: a thread that forks a task a 1025th time makes
/// the workload exit (status 2) with rt-app's reason, where the run would
/// otherwise go on creating threads.
#[test]
fn run_stops_a_fork_loop_at_rt_apps_fork_limit() {
    let dir = tempdir("forklimit");
    let bomb = dir.join("bomb.json");
    std::fs::write(
        &bomb,
        r#"{"global": {"duration": 5},
            "tasks": {"parent": {"loop": 2000, "fork": "child", "sleep": 100},
                      "child": {"instance": 0, "loop": 1, "run": 10}}}"#,
    )
    .unwrap();
    let o = schedlab(&[
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        bomb.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("thread parent-0")
            && e.contains("reached its fork limit (1024) forking 'child'"),
        "{e}"
    );
}

/// rt-app's `pi_enabled`: a fair thread holding the lock an RT thread
/// (FIFO 90) waits for runs at that priority (kernel prio 9 in the trace)
/// and finishes before an RT hog of middle priority; without it the hog
/// runs first and the holder keeps its fair priority.
#[test]
fn run_takes_rtapp_priority_inheritance() {
    let doc = |pi: bool| {
        format!(
            r#"{{"global": {{"duration": 1, "calibration": 100, "pi_enabled": {pi}}},
            "tasks": {{"low": {{"cpus": [5], "delay": 1000, "loop": 1, "lock": "m", "run": 5000, "unlock": "m"}},
                      "high": {{"policy": "SCHED_FIFO", "priority": 90, "cpus": [5], "delay": 2000, "loop": 1,
                               "lock": "m", "run": 1000, "unlock": "m"}},
                      "mid": {{"policy": "SCHED_FIFO", "priority": 50, "cpus": [5], "delay": 2500, "loop": 1,
                              "run": 50000}}}}}}"#
        )
    };
    // Whether low-0 ever ran at high's priority, and which of high and mid
    // ran first on CPU 5 after the mutex was handed on.
    let boosted_low = |text: &str| {
        text.lines()
            .any(|l| l.contains("next_comm=low-0 ") && l.ends_with("next_prio=9"))
    };
    // high-0's return to CPU 5 with the mutex (its second switch-in there)
    // against the hog's first.
    let high_first = |text: &str| {
        let ins = |c: &str| -> Vec<usize> {
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.contains("[005]") && l.contains(&format!("next_comm={c}-0 ")))
                .map(|(i, _)| i)
                .collect()
        };
        ins("high")[1] < ins("mid")[0]
    };
    let (v, text) = run_rtapp_traced("rtapp-pi", &doc(true));
    assert_eq!(
        v["counters"]["pi_boosts"].as_u64(),
        Some(1),
        "{}",
        v["counters"]
    );
    assert!(boosted_low(&text) && high_first(&text), "{text}");
    let (v, text) = run_rtapp_traced("rtapp-nopi", &doc(false));
    assert_eq!(v["counters"]["pi_boosts"].as_u64(), Some(0));
    assert!(!boosted_low(&text) && !high_first(&text), "{text}");
}

/// A deadlock in an rt-app file (two threads taking two mutexes in
/// opposite orders) stops the run as stalled, naming each waiting thread,
/// its step and the mutex by the file's own name.
#[test]
fn a_stalled_rtapp_run_names_the_mutexes_as_the_file_does() {
    let wl = tempdir("rtapp-abba").join("abba.json");
    std::fs::write(
        &wl,
        r#"{"global": {"calibration": 100, "pi_enabled": true},
            "tasks": {"a": {"loop": 1, "lock": "x", "run": 1000, "lock2": "y", "unlock": "y", "unlock2": "x"},
                      "b": {"loop": 1, "lock": "y", "run": 1000, "lock2": "x", "unlock": "x", "unlock2": "y"}}}"#,
    )
    .unwrap();
    let o = schedlab(&[
        "run",
        "--machine",
        "exynos5422",
        "--workload",
        wl.to_str().unwrap(),
    ]);
    let out = stdout(&o);
    assert!(
        out.contains(r#"a-0 at step 4 (Lock { mutex: 1 }: mutex "y")"#)
            && out.contains(r#"b-0 at step 4 (Lock { mutex: 0 }: mutex "x")"#),
        "{out}"
    );
}

/// A `--feature` switch that changes none of compare's configurations is
/// named in a note (as `run` does), one that changes any is not.
#[test]
fn compare_notes_a_feature_switch_that_changes_nothing() {
    let note = |switch: &str| {
        let o = schedlab(&[
            "compare",
            "--machine",
            "exynos5422",
            "--workload",
            "pipe:loops=200",
            "--config",
            "vanilla",
            "--config",
            "hperf-hmp",
            "--feature",
            switch,
            "--reps",
            "1",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).contains(&format!("note: --feature {switch} changes nothing"))
    };
    assert!(note("WAKEUP_PREEMPTION=on"));
    assert!(!note("WAKEUP_PREEMPTION=off"));
}
