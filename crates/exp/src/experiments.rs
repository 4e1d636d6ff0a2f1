//! The reference experiments (shared/contract.md) and their runner.
//!
//! An experiment is a machine preset, a workload with a parameter sweep, and
//! a list of configurations (baseline first). Every (params, config,
//! repetition) is one independent simulation; repetitions use distinct seeds,
//! and the same repetition uses the same seed under every configuration
//! (common random numbers), so differences come from the configuration.

use crate::configs;
use crate::published;
use crate::workloads::Builtin;
use rayon::prelude::*;
use schedlab_engine::{rng, Sim, SimConfig, StopReason};
use schedlab_report::{ExperimentResult, MetricSpec, Params};
use schedlab_topo::CpuMask;
use schedlab_workload::stream::StreamParams;
use std::collections::{BTreeMap, BTreeSet};

/// What the note of a run whose workload exited says before the reason (a
/// failed system call, as rt-app exits): `compare` looks for it to fail
/// after its report, as `run` does.
pub const EXITED_NOTE: &str = "the workload exited: ";

/// One experiment's definition.
#[derive(Clone, Debug)]
pub struct ExperimentDef {
    pub name: String,
    /// A preset name, a machine file or a preset with `:online=LIST`.
    pub machine: String,
    pub workload: String,
    /// Configuration names (configs::resolve), baseline first.
    pub configs: Vec<String>,
    /// The metrics to tabulate; empty = every metric the runs report that
    /// has a known direction ([`Builtin::metric_spec`]), in order.
    pub metrics: Vec<MetricSpec>,
    /// Parameter sets, each with the workload to run and where.
    pub points: Vec<Point>,
    pub repetitions: usize,
    /// What the set-up mirrors (printed with the table).
    pub setup: String,
    /// Also note the wakeup path's outcomes per point and configuration
    /// (wake_affine, idle search, S2 decisions).
    pub wakeup_notes: bool,
}

/// One parameter set of an experiment.
#[derive(Clone, Debug)]
pub struct Point {
    pub params: Params,
    /// The workload as `run --workload` takes it (a built-in spec or an
    /// rt-app file's path), for rerunning one repetition.
    pub spec: String,
    pub workload: Builtin,
    /// CPUs the workload may use (`numactl -N`), `None` = all.
    pub affinity: Option<CpuMask>,
    /// Memory node (`numactl -m`).
    pub mem_node: Option<u32>,
}

/// Owned configuration names.
fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Names of every experiment, in contract order (`reproduce --list`).
pub fn names() -> Vec<&'static str> {
    CONTRACT_NAMES.to_vec()
}

/// The experiment names of shared/contract.md, in its order.
pub const CONTRACT_NAMES: &[&str] = &[
    "kunpeng920-stream",
    "kunpeng920-pbzip2",
    "kunpeng920-pbzip2-node",
    "kunpeng920-pixz-node",
    "kunpeng920-kernbench",
    "power10-pipe",
    "power10-schbench",
    "power10-daytrader",
    "power10-ycsb",
    "alderlake-single",
    "alderlake-multi",
    "spr-hackbench",
    "spr-schbench",
    "spr-chacha20",
    "genoa-hackbench",
    "genoa-chacha20",
    "exynos5422-parsec",
    "exynos5433-mixed",
];

/// Looks an experiment up; the error names the valid ones.
pub fn get(name: &str, quick: bool) -> Result<ExperimentDef, String> {
    match name {
        "kunpeng920-stream" => Ok(kunpeng920_stream(quick)),
        "kunpeng920-pbzip2" => kunpeng920_pbzip2(quick, false),
        "kunpeng920-pbzip2-node" => kunpeng920_pbzip2(quick, true),
        "kunpeng920-pixz-node" => kunpeng920_pixz(quick),
        "kunpeng920-kernbench" => kunpeng920_kernbench(quick),
        "power10-pipe" => power10_pipe(quick),
        "power10-schbench" => power10_schbench(quick),
        "power10-daytrader" => power10_daytrader(quick),
        "power10-ycsb" => power10_ycsb(quick),
        "exynos5422-parsec" => exynos5422_parsec(quick),
        "spr-hackbench" => s4_hackbench(quick, false),
        "genoa-hackbench" => s4_hackbench(quick, true),
        "spr-schbench" => spr_schbench(quick),
        "exynos5433-mixed" => exynos5433_mixed(quick),
        "spr-chacha20" => s4_chacha20(quick, false),
        "genoa-chacha20" => s4_chacha20(quick, true),
        "alderlake-single" => alderlake_single(quick),
        "alderlake-multi" => alderlake_multi(quick),
        n => Err(format!(
            "unknown experiment '{n}' (valid: {})",
            names().join(", ")
        )),
    }
}

/// S1 STREAM on one Kunpeng 920 node: `numactl -N 0 -m 0`, OpenMP threads
/// 4, 6, 12, 512 MiB of arrays (patch-sets.md S1).
fn kunpeng920_stream(quick: bool) -> ExperimentDef {
    let node0 = CpuMask::first_n(24);
    let points = [4u32, 6, 12]
        .iter()
        .map(|&threads| Point {
            params: schedlab_report::params([("threads", threads)]),
            spec: format!(
                "stream:threads={threads},size_mib=512,iterations={}",
                if quick { 5 } else { 10 }
            ),
            workload: Builtin::Stream(StreamParams {
                threads,
                size_mib: 512,
                iterations: if quick { 5 } else { 10 },
            }),
            affinity: Some(node0),
            mem_node: Some(0),
        })
        .collect();
    ExperimentDef {
        name: "kunpeng920-stream".into(),
        machine: "kunpeng920".into(),
        workload: "stream".into(),
        configs: strings(&["vanilla", "cluster"]),
        metrics: ["copy", "scale", "add", "triad"]
            .iter()
            .map(|m| MetricSpec::new(*m, "MB/s", true))
            .collect(),
        points,
        repetitions: if quick { 3 } else { 5 },
        setup: "STREAM (OpenMP) bound to node 0 (CPUs 0-23, memory node 0), 512 MiB of arrays"
            .into(),
        wakeup_notes: false,
    }
}

/// A point running the built-in workload `spec` (a `NAME:key=value` string).
fn point(
    params: Params,
    spec: &str,
    affinity: Option<CpuMask>,
    mem_node: Option<u32>,
) -> Result<Point, String> {
    let workload = Builtin::parse(spec).map_err(|e| e.to_string())?;
    Ok(Point {
        params,
        spec: spec.to_string(),
        workload,
        affinity,
        mem_node,
    })
}

/// Points of a one-parameter sweep: `key` = each of `values`, the workload
/// spec of each from `spec`, all with the same CPUs and memory node.
fn sweep(
    key: &str,
    values: &[u32],
    affinity: Option<CpuMask>,
    mem_node: Option<u32>,
    spec: impl Fn(u32) -> String,
) -> Result<Vec<Point>, String> {
    values
        .iter()
        .map(|&v| {
            point(
                schedlab_report::params([(key, v)]),
                &spec(v),
                affinity,
                mem_node,
            )
        })
        .collect()
}

/// S1 pbzip2 throughput (mmtests lkp-compress style): the whole machine, or
/// node 0 only (`numactl -N 0 -m 0`).
fn kunpeng920_pbzip2(quick: bool, node: bool) -> Result<ExperimentDef, String> {
    let threads: &[u32] = if node {
        &[2, 4, 6, 8, 12, 18, 24]
    } else {
        &[2, 5, 8, 12, 21, 30, 48, 79, 96]
    };
    let (affinity, mem_node) = if node {
        (Some(CpuMask::first_n(24)), Some(0))
    } else {
        (None, None)
    };
    let points = sweep("threads", threads, affinity, mem_node, |t| {
        format!("pbzip2:threads={t},size_mib=256")
    })?;
    Ok(ExperimentDef {
        name: if node {
            "kunpeng920-pbzip2-node"
        } else {
            "kunpeng920-pbzip2"
        }
        .into(),
        machine: "kunpeng920".into(),
        workload: "pbzip2".into(),
        configs: strings(&["vanilla", "cluster"]),
        metrics: vec![MetricSpec::new("tput", "MB/s", true)],
        points,
        repetitions: if quick { 3 } else { 5 },
        setup: if node {
            "pbzip2 -pN compressing 256 MiB, bound to node 0 (CPUs 0-23, memory node 0)"
        } else {
            "pbzip2 -pN compressing 256 MiB on the whole machine (96 CPUs)"
        }
        .into(),
        wakeup_notes: false,
    })
}

/// S1 pixz throughput (mmtests lkp-compress style) on node 0 only
/// (`numactl -N 0 -m 0`): xz -6 in 16 MiB blocks, 768 MiB of input (48
/// blocks, two per encoder at 24 threads); `--quick` compresses 384 MiB.
fn kunpeng920_pixz(quick: bool) -> Result<ExperimentDef, String> {
    let size_mib = if quick { 384 } else { 768 };
    let points = sweep(
        "threads",
        &[2u32, 4, 6, 8, 12, 18, 24],
        Some(CpuMask::first_n(24)),
        Some(0),
        |t| format!("pixz:threads={t},size_mib={size_mib}"),
    )?;
    Ok(ExperimentDef {
        name: "kunpeng920-pixz-node".into(),
        machine: "kunpeng920".into(),
        workload: "pixz".into(),
        configs: strings(&["vanilla", "cluster"]),
        metrics: vec![MetricSpec::new("tput", "MB/s", true)],
        points,
        repetitions: if quick { 2 } else { 5 },
        setup: if quick {
            "pixz -pN (xz -6, 16 MiB blocks) compressing 384 MiB (--quick), bound to node 0 (CPUs 0-23, memory node 0)"
        } else {
            "pixz -pN (xz -6, 16 MiB blocks) compressing 768 MiB, bound to node 0 (CPUs 0-23, memory node 0)"
        }.into(),
        wakeup_notes: false,
    })
}

/// S1 kernbench: make -jN of a kernel tree on the whole machine.
fn kunpeng920_kernbench(quick: bool) -> Result<ExperimentDef, String> {
    let points = sweep("threads", &[24u32, 48, 96], None, None, |t| {
        format!("kernbench:threads={t}")
    })?;
    Ok(ExperimentDef {
        name: "kunpeng920-kernbench".into(),
        machine: "kunpeng920".into(),
        workload: "kernbench".into(),
        configs: strings(&["vanilla", "cluster"]),
        metrics: ["elsp", "user", "syst"]
            .iter()
            .map(|m| MetricSpec::new(*m, "s", false))
            .collect(),
        points,
        repetitions: if quick { 2 } else { 3 },
        setup: "kernbench make -jN on the whole machine (96 CPUs)".into(),
        wakeup_notes: false,
    })
}

/// S2 pipe ping-pong: N concurrent `perf bench sched pipe` instances on the
/// whole POWER10 LPAR (80 CPUs).
fn power10_pipe(quick: bool) -> Result<ExperimentDef, String> {
    // perf's default is 1000000 loops; usecs/op is a per-op mean, so fewer
    // loops only shorten the run (20000 in full runs, 5000 with --quick).
    let loops = if quick { 5_000 } else { 20_000 };
    let points = sweep(
        "instances",
        &[1u32, 2, 4, 8, 16, 32, 64, 80],
        None,
        None,
        |n| format!("pipe:instances={n},loops={loops}"),
    )?;
    Ok(ExperimentDef {
        name: "power10-pipe".into(),
        machine: "power10".into(),
        workload: "pipe".into(),
        configs: strings(&["vanilla", "mc-llc", "patchset"]),
        // The mean over instances (the contract's metric), then the cover
        // letter's min, median and max over instances.
        metrics: ["usec_per_op", "usec_per_op_min", "usec_per_op_median", "usec_per_op_max"]
            .iter()
            .map(|m| MetricSpec::new(*m, "us", false))
            .collect(),
        points,
        repetitions: if quick { 3 } else { 5 },
        setup: if quick {
            "N concurrent perf bench sched pipe instances (5000 loops each, --quick) on 80 CPUs; usecs/op mean over instances, and their min, median and max"
        } else {
            "N concurrent perf bench sched pipe instances (20000 loops each) on 80 CPUs; usecs/op mean over instances, and their min, median and max"
        }.into(),
        wakeup_notes: true,
    })
}

/// S2 schbench -m 3 -r 30 in its pre-2023 form (the series predates the
/// rewrite; docs/workloads.md): 3 messengers with 16 workers each, wakeup
/// latency percentiles, for runtimes of 10 and 20 s (2 and 4 s with --quick,
/// the `runtime` label keeps the contract's value).
fn power10_schbench(quick: bool) -> Result<ExperimentDef, String> {
    let points = sweep("runtime", &[10u32, 20], None, None, |r| {
        let run = if quick { r / 5 } else { r };
        format!("schbench:legacy=1,message_threads=3,runtime_s={run}")
    })?;
    Ok(ExperimentDef {
        name: "power10-schbench".into(),
        machine: "power10".into(),
        workload: "schbench".into(),
        configs: strings(&["vanilla", "mc-llc", "patchset"]),
        metrics: ["p50", "p75", "p90", "p95", "p99", "p99_5", "p99_9"]
            .iter()
            .map(|m| MetricSpec::new(*m, "us", false))
            .collect(),
        points,
        repetitions: if quick { 3 } else { 5 },
        setup: if quick {
            "schbench -m 3 (pre-2023: 16 workers per messenger, 30 ms think, then the messenger's 30-37.5 ms sleep) on 80 CPUs; --quick runs 2 s / 4 s for runtime 10 / 20"
        } else {
            "schbench -m 3 -r R (pre-2023: 16 workers per messenger, 30 ms think, then the messenger's 30-37.5 ms sleep) on 80 CPUs"
        }.into(),
        wakeup_notes: true,
    })
}

/// The POWER10 LPAR with 64 CPUs online (8 of its 10 SMT8 cores, as
/// `ppc64_cpu --cores-on=8` leaves it): the kernel builds its domains over
/// the online CPUs only, so the machine is restricted, not the workload's
/// affinity (topo online.rs).
const POWER10_64_ONLINE: &str = "power10:online=0-63";

/// S2 DayTrader: 1, 2, 4 JVMs × 60, 80, 100 JMeter users (in total) on 64
/// online CPUs; throughput in requests/s over the measured interval. J9's
/// default GC helper count is the number of CPUs (64).
fn power10_daytrader(quick: bool) -> Result<ExperimentDef, String> {
    let (runtime_ms, warmup_ms) = if quick { (300, 100) } else { (2_000, 500) };
    let mut points = Vec::new();
    for jvms in [1u32, 2, 4] {
        for users in [60u32, 80, 100] {
            points.push(point(
                schedlab_report::params([("jvms", jvms), ("users", users)]),
                &format!(
                    "daytrader:jvms={jvms},users={users},gc_threads=64,runtime_ms={runtime_ms},warmup_ms={warmup_ms}"
                ),
                None,
                None,
            )?);
        }
    }
    Ok(ExperimentDef {
        name: "power10-daytrader".into(),
        machine: POWER10_64_ONLINE.into(),
        workload: "daytrader".into(),
        configs: strings(&["vanilla", "mc-llc", "patchset"]),
        metrics: vec![MetricSpec::new("tput", "req/s", true)],
        points,
        repetitions: if quick { 2 } else { 3 },
        setup: if quick {
            "DayTrader on J JVMs, U JMeter users in total (no think time), 3 JDBC calls per request to DB2 agents, 64 GC helpers per JVM; 64 CPUs online (CPUs 64-79 offline); 0.1 s warm-up + 0.3 s measured (--quick)"
        } else {
            "DayTrader on J JVMs, U JMeter users in total (no think time), 3 JDBC calls per request to DB2 agents, 64 GC helpers per JVM; 64 CPUs online (CPUs 64-79 offline); 0.5 s warm-up + 2 s measured"
        }.into(),
        wakeup_notes: true,
    })
}

/// S2 YCSB workload A (50% reads, 50% updates) against a MongoDB-like
/// server with 14, 21, 28, 35 client threads on the whole LPAR (80 CPUs).
fn power10_ycsb(quick: bool) -> Result<ExperimentDef, String> {
    let operations = if quick { 50_000 } else { 200_000 };
    let points = sweep("clients", &[14u32, 21, 28, 35], None, None, |n| {
        format!("ycsb:clients={n},operations={operations},read_pct=50")
    })?;
    Ok(ExperimentDef {
        name: "power10-ycsb".into(),
        machine: "power10".into(),
        workload: "ycsb".into(),
        configs: strings(&["vanilla", "mc-llc", "patchset"]),
        metrics: vec![
            MetricSpec::new("ops", "ops/s", true),
            MetricSpec::new("read_lat", "us", false),
            MetricSpec::new("clean_lat", "us", false),
            MetricSpec::new("update_lat", "us", false),
        ],
        points,
        repetitions: if quick { 3 } else { 5 },
        setup: if quick {
            "YCSB workload A (50/50 read/update) with N client threads against a thread-per-connection key-value server on 80 CPUs; 50000 operations (--quick)"
        } else {
            "YCSB workload A (50/50 read/update) with N client threads against a thread-per-connection key-value server on 80 CPUs; 200000 operations"
        }.into(),
        wakeup_notes: true,
    })
}

/// S5 PARSEC on the Exynos 5422 (4 A7 + 4 A15): streamcluster, bodytrack and
/// blackscholes with 1..32 threads, Linaro MP against HPERF_HMP. The
/// published runs used the native inputs (tens of seconds); simlarge keeps
/// the same structure (barriers, thread churn, static slices) at a fraction
/// of the simulated time, so absolute seconds are not comparable.
fn exynos5422_parsec(quick: bool) -> Result<ExperimentDef, String> {
    let threads: Vec<u32> = if quick {
        vec![1, 2, 4, 5, 8, 12, 16, 24, 32]
    } else {
        (1..=32).collect()
    };
    let mut points = Vec::new();
    for bench in ["streamcluster", "bodytrack", "blackscholes"] {
        for &t in &threads {
            points.push(point(
                schedlab_report::params([
                    ("bench", serde_json::Value::from(bench)),
                    ("threads", serde_json::Value::from(t)),
                ]),
                &format!("{bench}:threads={t},input=simlarge"),
                None,
                None,
            )?);
        }
    }
    Ok(ExperimentDef {
        name: "exynos5422-parsec".into(),
        machine: "exynos5422".into(),
        workload: "parsec".into(),
        configs: strings(&["linaro-mp", "hperf-hmp"]),
        metrics: vec![MetricSpec::new("time", "s", false)],
        points,
        repetitions: if quick { 2 } else { 3 },
        setup: "PARSEC 3.0 pthreads (simlarge) streamcluster, bodytrack, blackscholes, 1-32 threads on 4x A7 + 4x A15".into(),
        wakeup_notes: false,
    })
}

/// S5 mixed mobile benchmark on the Exynos 5433 (4 A53 + 4 A57), Linaro MP
/// against HPERF_HMP: the cover letter's AnTuTu figure. One point; the
/// sub-test scores are extra metrics.
fn exynos5433_mixed(quick: bool) -> Result<ExperimentDef, String> {
    let mut metrics = vec![MetricSpec::new("score", "points", true)];
    for t in schedlab_workload::mobile::TESTS {
        metrics.push(MetricSpec::new(format!("score_{t}"), "points", true));
    }
    Ok(ExperimentDef {
        name: "exynos5433-mixed".into(),
        machine: "exynos5433".into(),
        workload: "mobile".into(),
        configs: strings(&["linaro-mp", "hperf-hmp"]),
        metrics,
        points: vec![point(Params::new(), "mobile:cpus=8,scale=1", None, None)?],
        repetitions: if quick { 3 } else { 10 },
        setup: "mixed mobile benchmark (AnTuTu-5-like CPU, runtime, multitask, RAM and I/O sub-tests in sequence, no GPU tests) with periodic system services, on 4x A53 + 4x A57".into(),
        wakeup_notes: false,
    })
}

/// S3's configurations, baseline first: Linux 7.3 without CLS (the published
/// baseline was 6.3-rc5 without CLS on hybrid), CLS as 5.16 first enabled it
/// on x86, and CLS with the series (7.3).
const S3_CONFIGS: &[&str] = &["vanilla", "cluster-naive", "cluster"];

/// alderlake-single adds the firmware condition of Phoronix's 5.16-rc1
/// measurement (ITMT never enabled, so no asym packing): 5.16 with CLS and
/// the matching 5.15 without it, each compared with `vanilla` like the others.
const S3_SINGLE_CONFIGS: &[&str] = &[
    "vanilla",
    "cluster-naive",
    "cluster",
    "vanilla-noitmt",
    "cluster-naive-noitmt",
];

/// S3 single-threaded Phoronix benchmarks on Alder Lake (patch-sets.md S3).
fn alderlake_single(quick: bool) -> Result<ExperimentDef, String> {
    let mut points = Vec::new();
    for bench in ["tjbench", "phpbench", "flac", "pybench"] {
        points.push(point(
            schedlab_report::params([("bench", serde_json::Value::from(bench))]),
            &format!("{bench}:runs={}", if quick { 1 } else { 3 }),
            None,
            None,
        )?);
    }
    Ok(ExperimentDef {
        name: "alderlake-single".into(),
        machine: "alderlake".into(),
        workload: "phoronix".into(),
        configs: strings(S3_SINGLE_CONFIGS),
        metrics: vec![MetricSpec::new("runtime", "s", false)],
        points,
        repetitions: if quick { 3 } else { 10 },
        setup: "Phoronix-style single-threaded tjbench, phpbench, flac, pybench: a harness shell forks each run, a monitor process wakes every 100 ms; 6 P-cores (SMT2) + 2 E-clusters of 4".into(),
        wakeup_notes: false,
    })
}

/// The metric name of [`HybridPlacement::small_gap_rms`].
pub const ECL_GAP: &str = "ecl_gap";
/// The metric name of [`HybridPlacement::small_busy`] (informational: more
/// busy E-cores is not better in itself; tabulated as higher-is-better).
pub const ECL_BUSY: &str = "ecl_busy";

/// S3 multi-threaded kbuild (make -jN) and TensorFlow Lite at 8, 10, 12 threads.
fn alderlake_multi(quick: bool) -> Result<ExperimentDef, String> {
    let mut points = Vec::new();
    for bench in ["kbuild", "tflite"] {
        for t in [8u32, 10, 12] {
            // kbuild: a scaled-down tree (ESTIMATE: 300 objects and a link
            // scaled like kernbench's, 2500 objects : 8 s).
            let spec = match bench {
                "kbuild" => format!(
                    "kernbench:threads={t},files={},link_ms={}",
                    if quick { 60 } else { 300 },
                    if quick { 200 } else { 960 }
                ),
                _ => format!(
                    "tflite:threads={t},inferences={}",
                    if quick { 15 } else { 100 }
                ),
            };
            points.push(point(
                schedlab_report::params([
                    ("bench", serde_json::Value::from(bench)),
                    ("threads", serde_json::Value::from(t)),
                ]),
                &spec,
                None,
                None,
            )?);
        }
    }
    Ok(ExperimentDef {
        name: "alderlake-multi".into(),
        machine: "alderlake".into(),
        workload: "phoronix".into(),
        configs: strings(S3_CONFIGS),
        metrics: vec![
            MetricSpec::new("runtime", "s", false),
            MetricSpec::new(ECL_GAP, "CPUs", false),
            MetricSpec::new(ECL_BUSY, "CPUs", true),
        ],
        points,
        repetitions: if quick { 2 } else { 5 },
        setup: "kbuild (make -jN model, scaled-down tree) and TensorFlow Lite inference (N threads, per-layer barrier) at 8, 10, 12 threads on 6 P-cores (SMT2) + 2 E-clusters of 4".into(),
        wakeup_notes: false,
    })
}

/// Messages each hackbench thread passes in the S4 runs (full, quick): loops =
/// this / fds, so every point runs for a comparable time per thread (long
/// enough for several 8 ms SCHED_CACHE epochs and periodic balances above
/// the LLC) while the event count grows only with the number of threads.
const S4_HACKBENCH_MSGS_PER_THREAD: (u32, u32) = (60_000, 40_000);

/// S4 hackbench (patch-sets.md S4): threads, pipes, fds reduced so that a
/// group fits an LLC; Sapphire Rapids (1 node, 2 LLCs of 60 CPUs) or Genoa
/// (4 nodes of 2 CCXs of 16 CPUs). `--quick` runs fds 2, 8, 20 × groups 1, 4.
fn s4_hackbench(quick: bool, genoa: bool) -> Result<ExperimentDef, String> {
    let (fds, groups): (&[u32], &[u32]) = match (genoa, quick) {
        (false, false) => (&[2, 4, 8, 10, 16, 20], &[1, 2, 4, 8]),
        (true, false) => (&[2, 4, 6, 8, 20], &[1, 2, 4]),
        (_, true) => (&[2, 8, 20], &[1, 4]),
    };
    let per_thread = if quick {
        S4_HACKBENCH_MSGS_PER_THREAD.1
    } else {
        S4_HACKBENCH_MSGS_PER_THREAD.0
    };
    let mut points = Vec::new();
    for &f in fds {
        for &g in groups {
            let loops = (per_thread / f).max(1);
            points.push(point(
                schedlab_report::params([("fds", f), ("groups", g)]),
                &format!(
                    "hackbench:groups={g},fds={f},loops={loops},datasize=100,ipc=pipe,mode=threads"
                ),
                None,
                None,
            )?);
        }
    }
    Ok(ExperimentDef {
        name: if genoa {
            "genoa-hackbench"
        } else {
            "spr-hackbench"
        }.into(),
        machine: if genoa { "genoa" } else { "sapphirerapids" }.into(),
        workload: "hackbench".into(),
        configs: strings(&["vanilla", "cache-aware"]),
        metrics: vec![MetricSpec::new("time", "s", false)],
        points,
        repetitions: if quick { 2 } else { 3 },
        setup: if genoa {
            "hackbench --threads --pipe -g G -f F, 100-byte messages, loops = 60000/F (quick 40000/F), whole machine (4 nodes x 2 CCXs of 16 CPUs)"
        } else {
            "hackbench --threads --pipe -g G -f F, 100-byte messages, loops = 60000/F (quick 40000/F), whole machine (1 node, 2 LLCs of 60 CPUs)"
        }.into(),
        wakeup_notes: false,
    })
}

/// S4 schbench on Sapphire Rapids: one message thread and T workers;
/// the metric is the 99th percentile wakeup latency.
fn spr_schbench(quick: bool) -> Result<ExperimentDef, String> {
    let threads: &[u32] = &[2, 4, 8, 16, 32, 64, 128];
    let runtime = if quick { 3 } else { 10 };
    let points = sweep("threads", threads, None, None, |t| {
        format!("schbench:message_threads=1,workers={t},runtime_s={runtime}")
    })?;
    Ok(ExperimentDef {
        name: "spr-schbench".into(),
        machine: "sapphirerapids".into(),
        workload: "schbench".into(),
        configs: strings(&["vanilla", "cache-aware"]),
        metrics: vec![MetricSpec::new("p99", "us", false)],
        points,
        repetitions: if quick { 2 } else { 3 },
        setup: "schbench -m 1 -t T (runtime 10 s, quick 3 s) on the whole machine; p99 = 99th percentile wakeup latency".into(),
        wakeup_notes: false,
    })
}

/// Guest cycles of the S4 ChaCha20 runs (full, quick): the full run is the
/// benchmark's `make run` (171,945 cycles, ~3 s simulated); the quick one is
/// still ~1 s, a hundred SCHED_CACHE epochs.
const S4_CHACHA20_CYCLES: (u32, u32) = (171_945, 60_000);

/// S4 ChaCha20-xiangshan (patch-sets.md S4): the 8-thread Verilator
/// simulation of the XiangShan core on the whole machine, one point.
fn s4_chacha20(quick: bool, genoa: bool) -> Result<ExperimentDef, String> {
    let cycles = if quick {
        S4_CHACHA20_CYCLES.1
    } else {
        S4_CHACHA20_CYCLES.0
    };
    let points = vec![point(
        Params::new(),
        &format!("chacha20:threads=8,cycles={cycles}"),
        None,
        None,
    )?];
    Ok(ExperimentDef {
        name: if genoa {
            "genoa-chacha20"
        } else {
            "spr-chacha20"
        }.into(),
        machine: if genoa { "genoa" } else { "sapphirerapids" }.into(),
        workload: "chacha20".into(),
        configs: strings(&["vanilla", "cache-aware"]),
        metrics: vec![MetricSpec::new("host_time", "ms", false)],
        points,
        repetitions: if quick { 3 } else { 8 },
        setup: if genoa {
            "xs-emu (8 Verilator threads) running chacha20_baremetal-256 (make run: 171,945 guest cycles; quick 60,000), whole machine (4 nodes x 2 CCXs of 16 CPUs); Host time spent (ms)"
        } else {
            "xs-emu (8 Verilator threads) running chacha20_baremetal-256 (make run: 171,945 guest cycles; quick 60,000), whole machine (1 node, 2 LLCs of 60 CPUs); Host time spent (ms)"
        }.into(),
        wakeup_notes: false,
    })
}

/// Options of a reproduction run.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub seed: u64,
    /// Check invariants after every event (slow).
    pub checked: bool,
    /// Changes to the machines' numbers before loading them (see
    /// `schedlab_topo::edit`); an edit applies to every machine that has
    /// its path and leaves the others as they are.
    pub machine_edits: Vec<schedlab_topo::MachineEdit>,
    /// Switches appended to every configuration of every experiment, as
    /// `+NAME=VALUE` (a feature `NAME=on|off`, a tunable, `hz=`,
    /// `domains/...`): `reproduce` and `compare`'s `--feature/--tunable`.
    /// The results keep the configurations' names.
    pub config_switches: Vec<String>,
}

impl Options {
    /// The configuration as run: `config` with every switch appended.
    pub fn config_spec(&self, config: &str) -> String {
        configs::with_switches(config, &self.config_switches)
    }
}

/// Checks that every configuration of `defs` takes `opts`' switches (known
/// names, valid values) on its experiment's machine as `opts` edits it:
/// the configuration strings the runs will resolve, so that a bad switch
/// fails before anything runs.
pub fn check_switches(defs: &[ExperimentDef], opts: &Options) -> Result<(), String> {
    // Unedited and unswitched, the contract's configurations run on their
    // own machines (tested); an edit alone can still unfit one (S5's schemes
    // on CPUs edited to one capacity).
    if opts.config_switches.is_empty() && opts.machine_edits.is_empty() {
        return Ok(());
    }
    for d in defs {
        let (m, _) = schedlab_topo::resolve_machine_edited(&d.machine, &opts.machine_edits, false)
            .map_err(|e| e.to_string())?;
        for c in &d.configs {
            let cfg = configs::resolve(&opts.config_spec(c), m.arch)?;
            configs::check_machine(&cfg, &m)
                .map_err(|e| format!("{} ({}): {e}", d.name, d.machine))?;
            schedlab_topo::build_domains(&m, &cfg.domains)
                .map_err(|e| format!("{} ({}): {e}", d.name, d.machine))?;
        }
    }
    Ok(())
}

impl Default for Options {
    fn default() -> Self {
        Options {
            quick: false,
            seed: 1,
            // Debug builds (the test suite) check invariants after every event.
            checked: cfg!(debug_assertions),
            machine_edits: Vec::new(),
            config_switches: Vec::new(),
        }
    }
}

/// What one simulation produced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub metrics: Vec<(String, f64)>,
    pub stop: StopReason,
    /// Why the workload exited ([`StopReason::Exited`]).
    pub exit_reason: Option<String>,
    pub events: u64,
    pub sim_time_ns: u64,
    pub placement: Placement,
}

/// Placement evidence of one run, from the scheduler's counters.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// Mean number of busy CPUs in a busy CPU's cluster.
    pub cluster_corunners: f64,
    /// Hybrid x86 (S3): share of busy CPU time on the biggest cores, and the
    /// time-averaged busy CPUs on the big cores and on the busier and the
    /// less busy cluster of small cores (`None` on a machine of one capacity).
    pub hybrid: Option<HybridPlacement>,
    pub migrations: u64,
    pub wakeups: u64,
    pub wakeups_affine: u64,
    pub lb_moved: u64,
    pub active_balance: u64,
    /// Wakeup path (schedstat-like counters): remote wakeups, the idle
    /// search's outcomes, and the S2 patch set's decisions.
    pub wakeups_remote: u64,
    /// Wakees placed outside the waker's hardware LLC.
    pub wakeups_cross_llc: u64,
    pub sis_target: u64,
    pub sis_prev: u64,
    pub sis_scan_found: u64,
    pub sis_scan_failed: u64,
    pub s2: schedlab_engine::stats::S2Counters,
    /// big.LITTLE: share of task CPU time on big CPUs, HMP up/down moves
    /// and swaps (0 when no HMP scheme runs).
    pub big_share: f64,
    pub hmp_up: u64,
    pub hmp_down: u64,
    pub hmp_swaps: u64,
    /// Tasks preempted while they owned a mutex.
    pub lock_holder_preemptions: u64,
    /// Released mutexes taken by a spinner ahead of the woken sleeper.
    pub lock_steals: u64,
    /// Mean number of busy CPUs in a busy CPU's LLC.
    pub llc_corunners: f64,
    /// Task migrations between LLCs.
    pub llc_migrations: u64,
    /// Stalls on process-shared data (`Step::Share` transfers), ns.
    pub share_stall_ns: u64,
}

/// Where the CPU time went on a hybrid machine (S3 placement notes).
#[derive(Clone, Copy, Debug, Default)]
pub struct HybridPlacement {
    pub big_share: f64,
    pub big_busy: f64,
    pub small_busy_hi: f64,
    pub small_busy_lo: f64,
    /// Busy CPUs on all the small cores, time-averaged.
    pub small_busy: f64,
    /// How unevenly the small cores' clusters are loaded: the RMS over time
    /// of the difference of their busy CPU counts
    /// (`Counters::cluster_gap_rms`; 0 = always as many busy CPUs in each,
    /// 4 = two clusters of four run 4/0).
    pub small_gap_rms: f64,
    /// An Intel hybrid part (x86): the notes say P-cores and E-clusters,
    /// elsewhere big cores and small-core clusters.
    pub x86: bool,
}

/// Per-core-type busy time and per-cluster occupancy of small cores, from the
/// CPUs' busy time over the run; `None` unless the machine has big cores and at
/// least two clusters of smaller ones (what S3's "balanced E-clusters" asks
/// about; on a big.LITTLE SoC the HMP note already gives the big-core share).
pub fn hybrid_placement(sim: &Sim) -> Option<HybridPlacement> {
    let m = &sim.machine;
    let max_cap = m.cpus.iter().map(|c| c.capacity).max()?;
    if m.cpus.iter().all(|c| c.capacity == max_cap) || sim.now == 0 {
        return None;
    }
    let t = sim.now as f64;
    let (mut big, mut total) = (0u64, 0u64);
    let mut clusters: BTreeMap<u32, u64> = BTreeMap::new();
    for (c, rq) in m.cpus.iter().zip(&sim.rqs) {
        total += rq.busy_ns;
        if c.capacity == max_cap {
            big += rq.busy_ns;
        } else {
            *clusters.entry(c.cluster).or_default() += rq.busy_ns;
        }
    }
    if clusters.len() < 2 {
        return None;
    }
    // The gap of the small cores' type (the first below the biggest
    // capacity), over that type's own clusters.
    let small_type = m.cpus.iter().find(|c| c.capacity < max_cap)?.core_type;
    let type_clusters: BTreeSet<u32> = m
        .cpus
        .iter()
        .filter(|c| c.core_type == small_type)
        .map(|c| c.cluster)
        .collect();
    let small_gap_rms = sim
        .counters
        .cluster_gap_rms(small_type as usize, type_clusters.len())
        .unwrap_or(0.0);
    let small_busy = clusters.values().sum::<u64>() as f64 / t;
    let hi = clusters.values().copied().max().unwrap_or(0);
    let lo = clusters.values().copied().min().unwrap_or(0);
    Some(HybridPlacement {
        x86: m.arch == schedlab_topo::Arch::X86,
        big_share: big as f64 / total.max(1) as f64,
        big_busy: big as f64 / t,
        small_busy_hi: hi as f64 / t,
        small_busy_lo: lo as f64 / t,
        small_busy,
        small_gap_rms,
    })
}

/// Runs one simulation of an experiment point under a configuration.
pub fn run_point(
    machine: &str,
    edits: &[schedlab_topo::MachineEdit],
    point: &Point,
    config: &str,
    seed: u64,
    checked: bool,
) -> Result<RunOutcome, String> {
    let (m, _) =
        schedlab_topo::resolve_machine_edited(machine, edits, false).map_err(|e| e.to_string())?;
    let cfg = configs::resolve(config, m.arch)?;
    configs::check_machine(&cfg, &m)?;
    let d = schedlab_topo::build_domains(&m, &cfg.domains).map_err(|e| e.to_string())?;
    let spec = point.workload.build(point.affinity, point.mem_node);
    let sim_cfg = SimConfig {
        seed,
        features: cfg.features.clone(),
        tunables: cfg.tunables.clone(),
        hz: cfg.hz,
        checked,
        ..SimConfig::default()
    };
    let mut sim = Sim::new(m, d, spec, sim_cfg);
    point.workload.attach(&mut sim);
    let stop = sim.run();
    let mut metrics = point.workload.metrics(&sim);
    let hybrid = hybrid_placement(&sim);
    if let Some(h) = hybrid {
        // S3's "balanced E-clusters": a placement figure tabulated like a
        // metric where an experiment lists it.
        metrics.push((ECL_GAP.into(), h.small_gap_rms));
        metrics.push((ECL_BUSY.into(), h.small_busy));
    }
    let c = &sim.counters;
    let placement = Placement {
        cluster_corunners: c.mean_cluster_corunners(),
        hybrid,
        migrations: c.migrations,
        wakeups: c.wakeups,
        wakeups_affine: c.wakeups_affine,
        lb_moved: c.levels.iter().map(|l| l.lb_moved).sum(),
        active_balance: c.active_balance,
        wakeups_remote: c.wakeups_remote,
        wakeups_cross_llc: c.wakeups_cross_llc,
        sis_target: c.sis_target,
        sis_prev: c.sis_prev,
        sis_scan_found: c.sis_scan_found,
        sis_scan_failed: c.sis_scan_failed,
        s2: c.s2.clone(),
        big_share: if c.hmp_big_ns + c.hmp_little_ns > 0 {
            c.hmp_big_ns as f64 / (c.hmp_big_ns + c.hmp_little_ns) as f64
        } else {
            0.0
        },
        hmp_up: c.hmp_up,
        hmp_down: c.hmp_down,
        hmp_swaps: c.hmp_swaps,
        lock_holder_preemptions: c.lock_holder_preemptions,
        lock_steals: c.lock_steals,
        llc_corunners: c.mean_llc_corunners(),
        llc_migrations: sim.cache.llc_migrations,
        share_stall_ns: sim.hw.stats.share_ns,
    };
    Ok(RunOutcome {
        metrics,
        stop,
        exit_reason: sim.exit_reason.clone(),
        events: sim.events,
        sim_time_ns: sim.now,
        placement,
    })
}

/// `n` of `noun`, singular for one: "1 repetition", "3 plots".
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Seed of repetition `rep` of point `point` of experiment `name`: the same
/// under every configuration.
pub fn seed_for(base: u64, name: &str, point: usize, rep: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    rng::derive_seed(base ^ h, ((point as u64) << 32) | rep as u64)
}

/// Observes a run of experiments: called once per finished simulation with
/// its experiment's name and the wall-clock seconds it took (which the
/// results never depend on).
pub type Progress<'a> = &'a (dyn Fn(&str, f64) + Sync);

/// Runs experiments in parallel (rayon) and returns their results in the
/// order given. `progress` is called once per finished simulation.
pub fn run_all(
    defs: &[ExperimentDef],
    opts: &Options,
    progress: Progress,
) -> Result<Vec<ExperimentResult>, String> {
    struct Job<'a> {
        exp: usize,
        point: usize,
        config: &'a str,
        rep: usize,
    }
    let mut jobs = Vec::new();
    for (ei, d) in defs.iter().enumerate() {
        for pi in 0..d.points.len() {
            for config in &d.configs {
                for rep in 0..d.repetitions {
                    jobs.push(Job {
                        exp: ei,
                        point: pi,
                        config,
                        rep,
                    });
                }
            }
        }
    }
    // One simulation per rayon task: left to itself, rayon hands each worker
    // a contiguous range of jobs that no idle worker can steal from once it
    // has started, and the run ends waiting for the longest such range.
    let outcomes: Vec<Result<RunOutcome, String>> = jobs
        .par_iter()
        .with_max_len(1)
        .map(|j| {
            let d = &defs[j.exp];
            let seed = seed_for(opts.seed, &d.name, j.point, j.rep);
            let started = std::time::Instant::now();
            let r = run_point(
                &d.machine,
                &opts.machine_edits,
                &d.points[j.point],
                &opts.config_spec(j.config),
                seed,
                opts.checked,
            );
            progress(&d.name, started.elapsed().as_secs_f64());
            r.map_err(|e| format!("{} {} rep {}: {e}", d.name, j.config, j.rep))
        })
        .collect();
    let mut results = Vec::new();
    for (ei, d) in defs.iter().enumerate() {
        let mut samples: BTreeMap<(usize, &str, String), Vec<f64>> = BTreeMap::new();
        let mut placement: BTreeMap<(usize, &str), Vec<Placement>> = BTreeMap::new();
        let mut run_notes = Vec::new();
        for (j, o) in jobs.iter().zip(&outcomes) {
            if j.exp != ei {
                continue;
            }
            let o = o.as_ref().map_err(|e| e.clone())?;
            // Time-bound workloads (schbench) end at their time limit.
            if matches!(
                o.stop,
                StopReason::Stalled | StopReason::Livelock | StopReason::Exited
            ) || o.metrics.is_empty()
            {
                let why = match o.stop {
                    StopReason::Stalled => {
                        " (every thread waits for another: a deadlock in the workload; `run` names the threads)".to_string()
                    }
                    StopReason::Livelock => " (threads kept switching with no time passing)".to_string(),
                    StopReason::Exited => format!(
                        " ({EXITED_NOTE}{})",
                        o.exit_reason.as_deref().unwrap_or("a failed system call")
                    ),
                    _ => String::new(),
                };
                run_notes.push(format!(
                    "point {} {} rep {} stopped: {:?}{why}",
                    j.point, j.config, j.rep, o.stop
                ));
            }
            for (m, v) in &o.metrics {
                samples
                    .entry((j.point, j.config, m.clone()))
                    .or_default()
                    .push(*v);
            }
            placement
                .entry((j.point, j.config))
                .or_default()
                .push(o.placement.clone());
        }
        let metrics = if d.metrics.is_empty() {
            let (known, unranked) = discovered_metrics(
                jobs.iter()
                    .zip(&outcomes)
                    .filter(|(j, _)| j.exp == ei)
                    .filter_map(|(j, o)| Some((&d.points[j.point].workload, o.as_ref().ok()?))),
            );
            if !unranked.is_empty() {
                run_notes.push(format!(
                    "not compared, having no better direction: {} (`run --json` reports them)",
                    unranked.join(", ")
                ));
            }
            known
        } else {
            d.metrics.clone()
        };
        let rows = d
            .points
            .iter()
            .enumerate()
            .flat_map(|(pi, p)| {
                let samples = &samples;
                let metrics = &metrics;
                d.configs.iter().flat_map(move |c| {
                    metrics.iter().map(move |m| {
                        let v = samples
                            .get(&(pi, c.as_str(), m.name.clone()))
                            .cloned()
                            .unwrap_or_default();
                        (p.params.clone(), c.to_string(), m.name.clone(), v)
                    })
                })
            })
            .collect();
        let mut r = ExperimentResult::from_samples(
            d.name.clone(),
            d.machine.clone(),
            d.workload.clone(),
            d.configs[0].clone(),
            d.configs.clone(),
            metrics,
            rows,
        );
        r.seeds = d
            .points
            .iter()
            .enumerate()
            .map(|(pi, p)| schedlab_report::PointSeeds {
                params: p.params.clone(),
                workload: p.spec.clone(),
                cpus: p.affinity.map(|a| a.to_list_string()),
                mem_node: p.mem_node,
                seeds: (0..d.repetitions)
                    .map(|rep| seed_for(opts.seed, &d.name, pi, rep).to_string())
                    .collect(),
            })
            .collect();
        r.setup = format!(
            "{}; {}{}",
            d.setup,
            counted(d.repetitions, "repetition"),
            if opts.quick && !d.setup.contains("--quick") {
                "; --quick"
            } else {
                ""
            }
        );
        // The LLC side of placement wherever some config runs SCHED_CACHE.
        // (Whether SCHED_CACHE is on does not depend on the architecture.)
        let llc_notes = d.configs.iter().any(|c| {
            configs::resolve(&opts.config_spec(c), schedlab_topo::Arch::default())
                .is_ok_and(|rc| rc.features.enabled(schedlab_engine::Feat::SCHED_CACHE))
        });
        for (pi, p) in d.points.iter().enumerate() {
            for c in &d.configs {
                let c = c.as_str();
                if let Some(pub_pct) = published::published_changes(&d.name, &p.params, c) {
                    for (metric, pct) in pub_pct {
                        r.set_published(&p.params, c, metric, pct);
                    }
                }
                if let Some(ps) = placement.get(&(pi, c)) {
                    let mut note = placement_note(&p.params, c, ps);
                    if llc_notes {
                        note.push_str(&llc_placement_note(ps));
                    }
                    r.notes.push(note);
                    if d.wakeup_notes {
                        r.notes.push(wakeup_note(&p.params, c, ps));
                    }
                }
            }
        }
        r.notes.extend(run_notes);
        results.push(r);
    }
    Ok(results)
}

/// The metrics runs reported, in order of first appearance: those that have a
/// known direction, and the names of the others (informational counts such
/// as hackbench's `messages`, or rt-app's `cpu_time_s`, which more work done
/// and slower CPUs both raise), which are not compared.
fn discovered_metrics<'a>(
    outcomes: impl Iterator<Item = (&'a Builtin, &'a RunOutcome)>,
) -> (Vec<MetricSpec>, Vec<String>) {
    let mut out: Vec<MetricSpec> = Vec::new();
    let mut unranked: Vec<String> = Vec::new();
    for (w, o) in outcomes {
        for (name, _) in &o.metrics {
            if !out.iter().any(|m| m.name == *name) && !unranked.contains(name) {
                match w.metric_spec(name) {
                    Some(spec) => out.push(spec),
                    None => unranked.push(name.clone()),
                }
            }
        }
    }
    (out, unranked)
}

/// The LLC side of placement (S4 experiments): co-runners and migrations across LLCs.
fn llc_placement_note(ps: &[Placement]) -> String {
    let n = ps.len().max(1) as f64;
    let avg = |f: &dyn Fn(&Placement) -> f64| ps.iter().map(f).sum::<f64>() / n;
    let mut s = format!(
        "; busy CPUs per busy LLC {:.2}, LLC migrations {:.1}",
        avg(&|p| p.llc_corunners),
        avg(&|p| p.llc_migrations as f64)
    );
    let share = avg(&|p| p.share_stall_ns as f64);
    if share > 0.0 {
        s.push_str(&format!(
            ", shared-data transfer stalls {:.1} ms (all threads)",
            share / 1e6
        ));
    }
    s
}

fn placement_note(params: &Params, config: &str, ps: &[Placement]) -> String {
    let n = ps.len().max(1) as f64;
    let avg = |f: &dyn Fn(&Placement) -> f64| ps.iter().map(f).sum::<f64>() / n;
    let hmp = if ps.iter().any(|p| p.big_share > 0.0) {
        let mut s = format!(
            ", CPU time on big cores {:.1}%, HMP up {:.1} down {:.1} swaps {:.1}",
            100.0 * avg(&|p| p.big_share),
            avg(&|p| p.hmp_up as f64),
            avg(&|p| p.hmp_down as f64),
            avg(&|p| p.hmp_swaps as f64),
        );
        if ps
            .iter()
            .any(|p| p.lock_holder_preemptions > 0 || p.lock_steals > 0)
        {
            s.push_str(&format!(
                ", lock-holder preemptions {:.1}, lock steals {:.1}",
                avg(&|p| p.lock_holder_preemptions as f64),
                avg(&|p| p.lock_steals as f64)
            ));
        }
        s
    } else {
        String::new()
    };
    let hy: Vec<HybridPlacement> = ps.iter().filter_map(|p| p.hybrid).collect();
    let hybrid = if hy.is_empty() {
        String::new()
    } else {
        let k = hy.len() as f64;
        let a = |f: &dyn Fn(&HybridPlacement) -> f64| hy.iter().map(f).sum::<f64>() / k;
        let (big, small) = if hy[0].x86 {
            ("P-cores", "E-cluster")
        } else {
            ("big cores", "small-core cluster")
        };
        let b = if hy[0].x86 { "P" } else { "big" };
        format!(
            ", CPU time on {big} {:.1}%, busy CPUs {b} {:.2} / busier {small} {:.2} / other {small} {:.2}, {small} gap (RMS) {:.2}",
            100.0 * a(&|h| h.big_share),
            a(&|h| h.big_busy),
            a(&|h| h.small_busy_hi),
            a(&|h| h.small_busy_lo),
            a(&|h| h.small_gap_rms),
        )
    };
    format!(
        "placement {} {config}: busy CPUs per busy cluster {:.2}, migrations {:.1}, wakeups {:.1} (affine {:.1}), balancer moves {:.1}, active balances {:.1}{hmp}{hybrid} (mean of {} runs)",
        schedlab_report::table::params_text(params),
        avg(&|p| p.cluster_corunners),
        avg(&|p| p.migrations as f64),
        avg(&|p| p.wakeups as f64),
        avg(&|p| p.wakeups_affine as f64),
        avg(&|p| p.lb_moved as f64),
        avg(&|p| p.active_balance as f64),
        ps.len()
    )
}

/// The wakeup path's outcomes, per-run means: where wakees went and why.
fn wakeup_note(params: &Params, config: &str, ps: &[Placement]) -> String {
    let n = ps.len().max(1) as f64;
    let avg = |f: &dyn Fn(&Placement) -> u64| ps.iter().map(f).sum::<u64>() as f64 / n;
    let s2 = avg(&|p| {
        let s = &p.s2;
        s.wa_skipped + s.wa_idle_prev + s.wa_idle_this + s.idler_this_idle + s.idler_prev_idle
    }) > 0.0
        || avg(&|p| p.s2.both_full + p.s2.sync_stack) > 0.0;
    let mut out = format!(
        "wakeups {} {config}: remote {:.0}, outside the waker's hardware LLC {:.0}, affine {:.0}; idle search: target idle {:.0}, prev idle {:.0}, scan found {:.0}, scan failed {:.0}",
        schedlab_report::table::params_text(params),
        avg(&|p| p.wakeups_remote),
        avg(&|p| p.wakeups_cross_llc),
        avg(&|p| p.wakeups_affine),
        avg(&|p| p.sis_target),
        avg(&|p| p.sis_prev),
        avg(&|p| p.sis_scan_found),
        avg(&|p| p.sis_scan_failed),
    );
    if s2 {
        out.push_str(&format!(
            "; S2: wake_affine skipped {:.0}, same-LLC prev/waker idle {:.0}/{:.0}, idler_llc waker idle/core {:.0}/{:.0}, prev idle/core {:.0}/{:.0}, ratio waker/prev/equal {:.0}/{:.0}/{:.0}, both full (no search) {:.0}, fallback core/ratio {:.0}/{:.0}, sync stacking {:.0}",
            avg(&|p| p.s2.wa_skipped),
            avg(&|p| p.s2.wa_idle_prev),
            avg(&|p| p.s2.wa_idle_this),
            avg(&|p| p.s2.idler_this_idle),
            avg(&|p| p.s2.idler_this_core),
            avg(&|p| p.s2.idler_prev_idle),
            avg(&|p| p.s2.idler_prev_core),
            avg(&|p| p.s2.idler_ratio_this),
            avg(&|p| p.s2.idler_ratio_prev),
            avg(&|p| p.s2.idler_ratio_equal),
            avg(&|p| p.s2.both_full),
            avg(&|p| p.s2.fallback_core),
            avg(&|p| p.s2.fallback_ratio),
            avg(&|p| p.s2.sync_stack),
        ));
    }
    out.push_str(&format!(" (mean of {} runs)", ps.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hybrid placement note speaks Intel's words (P-cores, E-clusters)
    /// on x86 only.
    #[test]
    fn hybrid_notes_name_the_cores_by_the_machines_kind() {
        let note = |x86: bool| {
            let p = Placement {
                hybrid: Some(HybridPlacement {
                    x86,
                    ..HybridPlacement::default()
                }),
                ..Placement::default()
            };
            placement_note(&Params::new(), "vanilla", &[p])
        };
        let (intel, other) = (note(true), note(false));
        assert!(intel.contains("CPU time on P-cores") && intel.contains("E-cluster gap"));
        assert!(
            other.contains("CPU time on big cores") && other.contains("small-core cluster gap")
        );
        assert!(
            !other.contains("P-core") && !other.contains("E-cluster"),
            "{other}"
        );
    }

    /// Every experiment of the contract is defined, full and quick, with
    /// its baseline first and a point per parameter set.
    #[test]
    fn every_contract_experiment_is_defined() {
        for &n in CONTRACT_NAMES {
            for quick in [false, true] {
                let d = get(n, quick).unwrap_or_else(|e| panic!("{n}: {e}"));
                assert_eq!(d.name, n);
                assert!(!d.points.is_empty() && d.repetitions > 0, "{n}");
                assert!(d.configs.len() >= 2, "{n}");
                // The spec results.json records for rerunning a point is
                // the workload the point runs.
                for p in &d.points {
                    assert_eq!(
                        Builtin::parse(&p.spec).as_ref().ok(),
                        Some(&p.workload),
                        "{n}: {}",
                        p.spec
                    );
                }
            }
        }
        assert!(get("nosuch", false).unwrap_err().contains("valid: "));
    }

    /// spr-chacha20 and genoa-chacha20 end to end on fewer cycles: both
    /// configurations fill their row, and the notes carry the LLC placement
    /// and the shared-data stalls.
    #[test]
    fn s4_chacha20_smoke() {
        for name in ["spr-chacha20", "genoa-chacha20"] {
            let mut d = get(name, true).unwrap();
            assert_eq!(d.points.len(), 1);
            d.points[0].workload = Builtin::parse("chacha20:threads=8,cycles=400").unwrap();
            d.repetitions = 1;
            let opts = Options {
                quick: true,
                checked: false,
                ..Options::default()
            };
            let r = run_all(&[d], &opts, &|_, _| {}).unwrap();
            let r = &r[0];
            assert_eq!(r.rows.len(), 2);
            assert!(r
                .rows
                .iter()
                .all(|row| row.samples.len() == 1 && row.mean > 0.0));
            assert!(
                r.notes
                    .iter()
                    .any(|n| n.contains("busy CPUs per busy LLC") && n.contains("shared-data")),
                "{:?}",
                r.notes
            );
        }
    }

    /// power10-daytrader and power10-ycsb end to end on one small point each:
    /// every config runs on the right machine (64 online CPUs for DayTrader),
    /// every metric row is filled, and the wakeup notes carry the S2
    /// counters for the patch set.
    #[test]
    fn power10_daytrader_ycsb_smoke() {
        let mut dt = get("power10-daytrader", true).unwrap();
        assert_eq!(dt.points.len(), 9);
        dt.points.truncate(1);
        dt.points[0].workload = Builtin::parse(
            "daytrader:jvms=1,users=60,gc_threads=64,gc_period_ms=20,runtime_ms=30,warmup_ms=10",
        )
        .unwrap();
        dt.repetitions = 1;
        let mut y = get("power10-ycsb", true).unwrap();
        assert_eq!(y.points.len(), 4);
        y.points.truncate(1);
        y.points[0].workload = Builtin::parse("ycsb:clients=14,operations=1400").unwrap();
        y.repetitions = 1;
        let opts = Options {
            quick: true,
            checked: false,
            ..Options::default()
        };
        let r = run_all(&[dt, y], &opts, &|_, _| {}).unwrap();
        assert_eq!(r[0].machine, "power10:online=0-63");
        assert_eq!(r[0].rows.len(), 3);
        assert_eq!(r[1].rows.len(), 3 * 4);
        for e in &r {
            assert!(
                e.rows
                    .iter()
                    .all(|row| row.samples.len() == 1 && row.mean > 0.0),
                "{}",
                e.name
            );
            assert!(
                e.notes.iter().any(|n| n.starts_with("wakeups ")
                    && n.contains("patchset: ")
                    && n.contains("S2: ")),
                "{:?}",
                e.notes
            );
            assert!(
                !e.notes.iter().any(|n| n.contains("stopped")),
                "{:?}",
                e.notes
            );
        }
    }

    /// One point of an S3 experiment under `config`, one repetition, checked.
    fn s3_run(spec: &str, config: &str) -> HybridPlacement {
        let p = point(Params::new(), spec, None, None).unwrap();
        let o = run_point("alderlake", &[], &p, config, 7, true).unwrap();
        assert!(!o.metrics.is_empty(), "{spec} {config}: no metric");
        o.placement.hybrid.expect("alderlake is hybrid")
    }

    /// S3 "done when": with the series (cluster), one busy single-threaded
    /// benchmark on an otherwise idle Alder Lake runs on a P-core (fork
    /// balancing may start it on an E-cluster; asym packing pulls it back).
    #[test]
    fn s3_single_task_runs_on_a_p_core() {
        let h = s3_run("tjbench:runs=1", "cluster");
        assert!(h.big_share > 0.95, "{h:?}");
    }

    /// exynos5422-parsec end to end on a few points: every row is filled,
    /// both configurations run, the HMP counters reach the placement notes,
    /// and at 5 streamcluster threads HPERF_HMP uses the little cluster.
    #[test]
    fn exynos5422_parsec_smoke() {
        let mut d = get("exynos5422-parsec", true).unwrap();
        assert_eq!(d.points.len(), 27);
        d.points.retain(|p| {
            p.params.get("bench").and_then(|v| v.as_str()) == Some("streamcluster")
                && matches!(
                    p.params.get("threads").and_then(|v| v.as_u64()),
                    Some(1 | 5)
                )
        });
        d.repetitions = 1;
        let opts = Options {
            quick: true,
            checked: false,
            ..Options::default()
        };
        let r = run_all(&[d], &opts, &|_, _| {}).unwrap();
        let r = &r[0];
        assert_eq!(r.rows.len(), 4);
        assert!(r
            .rows
            .iter()
            .all(|row| row.samples.len() == 1 && row.mean > 0.0));
        let note = r
            .notes
            .iter()
            .find(|n| n.contains("threads=5 hperf-hmp"))
            .expect("placement note");
        assert!(note.contains("CPU time on big cores"), "{note}");
        assert!(
            !r.notes.iter().any(|n| n.contains("stopped")),
            "{:?}",
            r.notes
        );
    }
}
