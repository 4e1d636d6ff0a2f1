//! Engine fuzzing: random thread programs run on every preset under every
//! named configuration, with the invariants checked after every event.
//!
//! Two generators. [`rt_app_doc`] writes rt-app files, the one way a user
//! puts arbitrary programs into the engine: structurally valid JSON whose
//! semantics are random (locks taken and released in any order or by another
//! thread, condition waits with and without a signal, barriers, semaphores,
//! self-suspension, timers, forks, custom slices, SCHED_IDLE/BATCH, nice
//! values, affinities). [`program`] writes step programs of every kind the
//! built-in workloads use, including what rt-app cannot express (channels,
//! spinlocks, per-CPU locks, counters and polls, shared data, working sets,
//! the requeueing broadcast, new processes). Such programs deadlock, leak
//! locks, fork and livelock; the engine must still keep every invariant,
//! stop by itself and repeat itself exactly. Every case derives from its
//! number; a failure prints the case's machine, configuration and seed.
//!
//! Environment: `SCHEDLAB_FUZZ_CASES=N` runs N cases per generator instead
//! of CI's 128, from `SCHEDLAB_FUZZ_FIRST`; `SCHEDLAB_FUZZ_PRINT=1` prints each
//! case's program, `SCHEDLAB_FUZZ_STATS=1` each case's outcome. A bug
//! hunt: `SCHEDLAB_FUZZ_CASES=5000 cargo test --release -p schedlab-exp fuzz`.

use crate::configs;
use crate::workloads::Builtin;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use schedlab_engine::trace::check_trace;
use schedlab_engine::{Sim, SimConfig, StopReason};
use schedlab_topo::{CpuId, CpuMask, Machine};
use schedlab_workload::{SchedPolicy, Step, SyncObject, ThreadTemplate, WorkloadSpec};
use std::fmt::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Machines the cases run on (every preset, and one with CPUs offline).
const MACHINES: &[&str] = &[
    "kunpeng920",
    "power10",
    "power10:online=0-63",
    "alderlake",
    "sapphirerapids",
    "genoa",
    "exynos5422",
    "exynos5433",
];

/// A random rt-app document for a machine of `nr_cpus` CPUs.
fn rt_app_doc(rng: &mut Pcg64, nr_cpus: usize) -> String {
    let tasks = rng.gen_range(1..=6usize);
    // A leaf task nobody starts (instance 0) that the others may fork; it
    // forks nothing itself, so forks cannot cascade.
    let leaf = rng.gen_bool(0.4);
    let mut doc = String::from(
        "{\n  \"global\": {\"duration\": 1, \"calibration\": \"CPU0\"},\n  \"tasks\": {\n",
    );
    let total = tasks + usize::from(leaf);
    for t in 0..total {
        let is_leaf = leaf && t == tasks;
        let name = format!("t{t}");
        let _ = write!(doc, "    \"{name}\": {{");
        if is_leaf {
            doc.push_str("\"instance\": 0, ");
        } else {
            let _ = write!(doc, "\"instance\": {}, ", rng.gen_range(1..=4));
        }
        if rng.gen_bool(0.5) {
            let _ = write!(doc, "\"loop\": {}, ", rng.gen_range(1..=40));
        } else {
            doc.push_str("\"loop\": -1, ");
        }
        let policy_draw = rng.gen_range(0..7);
        match policy_draw {
            0 => doc.push_str("\"policy\": \"SCHED_IDLE\", "),
            1 => doc.push_str("\"policy\": \"SCHED_BATCH\", "),
            2 => {
                let _ = write!(doc, "\"priority\": {}, ", rng.gen_range(-20..=19));
            }
            // RT threads: with `pi_enabled` they lend their priority to the
            // owners of the mutexes they wait for.
            3 => {
                let policy = ["SCHED_FIFO", "SCHED_RR"][rng.gen_range(0..2)];
                let _ = write!(
                    doc,
                    "\"policy\": \"{policy}\", \"priority\": {}, ",
                    rng.gen_range(1..=99)
                );
            }
            // Deadline threads (their CPUs must span the machine, or rt-app
            // exits): with `pi_enabled` they lend the deadline class.
            4 => {
                let period_us = rng.gen_range(2..=50) * 1000;
                let _ = write!(
                    doc,
                    "\"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": {}, \"dl-period\": {period_us}, ",
                    period_us * rng.gen_range(1..=30) / 100
                );
            }
            _ => {}
        }
        if rng.gen_bool(0.3) {
            let _ = write!(doc, "\"cpus\": [{}], ", cpu_list(rng, nr_cpus));
        }
        if rng.gen_bool(0.2) {
            let _ = write!(doc, "\"delay\": {}, ", rng.gen_range(0..3000));
        }
        if rng.gen_bool(0.15) && policy_draw != 4 {
            let _ = write!(doc, "\"dl-runtime\": {}, ", rng.gen_range(0..20_000));
        }
        let sync = match rng.gen_range(0..20) {
            0..=7 => Sync::None,
            8..=15 => Sync::Balanced,
            _ => Sync::Any,
        };
        doc.push_str("\"phases\": {");
        let phases = rng.gen_range(1..=3);
        for p in 0..phases {
            if p > 0 {
                doc.push_str(", ");
            }
            let _ = write!(doc, "\"p{p}\": {{\"loop\": {}", rng.gen_range(1..=5));
            if rng.gen_bool(0.2) {
                let _ = write!(doc, ", \"cpus\": [{}]", cpu_list(rng, nr_cpus));
            }
            let phase_policy = rng.gen_bool(0.15);
            if phase_policy {
                let policy = ["SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE"][rng.gen_range(0..3)];
                let _ = write!(doc, ", \"policy\": \"{policy}\"");
            }
            // (A nice value, so not under an RT or deadline policy.)
            if rng.gen_bool(0.15) && policy_draw != 3 && policy_draw != 4 {
                let _ = write!(doc, ", \"priority\": {}", rng.gen_range(-20..=19));
            }
            // (Not on a deadline thread: a phase's runtime alone would give it
            // a deadline of 0, and rt-app exits.)
            if rng.gen_bool(0.1) && policy_draw != 4 {
                let _ = write!(doc, ", \"dl-runtime\": {}", rng.gen_range(0..20_000));
            }
            // Clamps, with the minimum below the maximum when both are set
            // (otherwise rt-app exits at start); not on a phase of a
            // deadline thread that keeps its policy (the phase would set
            // SCHED_DEADLINE without parameters).
            if rng.gen_bool(0.15) && (policy_draw != 4 || phase_policy) {
                let lo = rng.gen_range(0..=1024);
                let _ = write!(doc, ", \"util_min\": {lo}");
                if rng.gen_bool(0.5) {
                    let _ = write!(doc, ", \"util_max\": {}", rng.gen_range(lo..=1024));
                }
            }
            let events = rng.gen_range(1..=8);
            for e in 0..events {
                doc.push_str(", ");
                event(rng, &mut doc, e, t, tasks, sync, leaf && !is_leaf);
            }
            doc.push('}');
        }
        doc.push_str("}}");
        doc.push_str(if t + 1 < total { ",\n" } else { "\n" });
    }
    doc.push_str("  }\n}\n");
    // Drawn last, so that the rest of a case stays what it was.
    if rng.gen_bool(0.5) {
        doc = doc.replacen(
            "\"calibration\": \"CPU0\"}",
            "\"calibration\": \"CPU0\", \"pi_enabled\": true}",
            1,
        );
    }
    doc
}

/// A random rt-app `cpus` list: 1-8 distinct CPUs of the machine, sorted.
fn cpu_list(rng: &mut Pcg64, nr_cpus: usize) -> String {
    let n = rng.gen_range(1..=nr_cpus.min(8));
    let mut cpus: Vec<usize> = (0..nr_cpus).collect();
    cpus.shuffle(rng);
    cpus.truncate(n);
    cpus.sort_unstable();
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    list.join(", ")
}

/// A duration in µs, log-uniform from 1 µs to `max_us`: mostly short steps,
/// so a case makes many scheduling decisions.
fn us(rng: &mut Pcg64, max_us: f64) -> u64 {
    10f64.powf(rng.gen_range(0.0..max_us.log10())) as u64
}

/// How a task synchronises: not at all, only in ways that cannot block
/// it for good on their own (balanced critical sections, posts, signals,
/// barriers), or anyhow (unbalanced locks, waits, self-suspension).
#[derive(Clone, Copy, PartialEq)]
enum Sync {
    None,
    Balanced,
    Any,
}

/// Appends one event (keys suffixed with `e` to keep them distinct).
fn event(
    rng: &mut Pcg64,
    doc: &mut String,
    e: usize,
    me: usize,
    tasks: usize,
    sync: Sync,
    may_fork: bool,
) {
    let m = rng.gen_range(0..3);
    let c = rng.gen_range(0..2);
    let s = rng.gen_range(0..2);
    let kind = match sync {
        Sync::None => rng.gen_range(0..12),
        Sync::Balanced => rng.gen_range(0..20),
        Sync::Any => rng.gen_range(0..26),
    };
    let _ = match kind {
        0..=3 => write!(doc, "\"run{e}\": {}", us(rng, 6000.0).max(1)),
        4 => write!(doc, "\"runtime{e}\": {}", us(rng, 3000.0).max(1)),
        5..=6 => write!(doc, "\"sleep{e}\": {}", us(rng, 5000.0)),
        7 => write!(
            doc,
            "\"timer{e}\": {{\"ref\": \"tm{}\", \"period\": {}, \"mode\": \"{}\"}}",
            rng.gen_range(0..2),
            us(rng, 10_000.0).max(20),
            if rng.gen_bool(0.5) { "absolute" } else { "relative" }
        ),
        8 => match rng.gen_range(0..3) {
            0 => write!(doc, "\"mem{e}\": {}", rng.gen_range(0..2_000_000)),
            1 => write!(
                doc,
                "\"memrun{e}\": {{\"size\": {}, \"count\": {}}}",
                rng.gen_range(0..1_000_000),
                rng.gen_range(0..4)
            ),
            _ => write!(doc, "\"iorun{e}\": {}", rng.gen_range(0..200_000)),
        },
        9 => write!(doc, "\"yield{e}\": 0"),
        10 if may_fork => write!(doc, "\"fork{e}\": \"t{tasks}\""),
        10..=11 => write!(doc, "\"run{e}\": {}", rng.gen_range(1..100)),
        // A critical section as rt-app files write one.
        12..=14 => write!(
            doc,
            "\"lock{e}\": \"m{m}\", \"run{e}x\": {}, \"unlock{e}\": \"m{m}\"",
            rng.gen_range(1..500)
        ),
        15 => write!(doc, "\"signal{e}\": \"c{c}\""),
        16 => write!(doc, "\"broad{e}\": \"c{c}\""),
        17 => write!(doc, "\"sem_post{e}\": \"s{s}\""),
        18 => write!(doc, "\"resume{e}\": \"t{}\"", rng.gen_range(0..tasks)),
        19 => write!(doc, "\"barrier{e}\": \"b{}\"", rng.gen_range(0..2)),
        // A lock or an unlock on its own: unbalanced, or released by
        // another thread than the one that took it.
        20 => write!(doc, "\"lock{e}\": \"m{m}\""),
        21 => write!(doc, "\"unlock{e}\": \"m{m}\""),
        22 => write!(
            doc,
            "\"lock{e}\": \"m{m}\", \"wait{e}\": {{\"ref\": \"c{c}\", \"mutex\": \"m{m}\"}}, \"unlock{e}\": \"m{m}\""
        ),
        23 => write!(doc, "\"wait{e}\": {{\"ref\": \"c{c}\", \"mutex\": \"m{m}\"}}"),
        24 => write!(doc, "\"sem_wait{e}\": \"s{s}\""),
        _ => write!(doc, "\"suspend{e}\": \"t{me}\""),
    };
}

/// What one case ran, for the determinism check.
#[derive(Debug, PartialEq)]
struct Outcome {
    stop: StopReason,
    now_ns: u64,
    events: u64,
    counters: String,
}

/// Runs `spec` in checked mode under `config` and, with `trace`, records
/// its trace and replays it ([`check_trace`]). Fuzzed programs may livelock;
/// they are stopped sooner than a user's run would be.
/// Every fourth case runs its configuration on 3.10's CFS (`+EEVDF=off`),
/// so the older fair class meets every machine and workload too (the S5
/// configurations have it already).
fn with_fair_class(config: &str, n: u64) -> String {
    if n % 4 == 1 && !matches!(config, "linaro-mp" | "hperf-hmp") {
        format!("{config}+EEVDF=off")
    } else {
        config.to_string()
    }
}

fn simulate(m: Machine, config: &str, spec: WorkloadSpec, seed: u64, trace: bool) -> Outcome {
    let cfg = configs::resolve(config, m.arch).expect("config");
    let d = schedlab_topo::build_domains(&m, &cfg.domains).expect("domains");
    let max_time_ns = spec.max_time_ns;
    let mut sim = Sim::new(
        m,
        d,
        spec,
        SimConfig {
            seed,
            features: cfg.features.clone(),
            tunables: cfg.tunables.clone(),
            hz: cfg.hz,
            checked: true,
            livelock_events: 200_000,
            ..SimConfig::default()
        },
    );
    if trace {
        sim.enable_trace(usize::MAX);
        // Half the traced runs also record power:cpu_idle.
        if let Some(tr) = sim.trace.as_deref_mut() {
            tr.cpu_idle = seed % 2 == 1;
        }
    }
    let stop = sim.run();
    assert!(sim.now <= max_time_ns, "ran past its limit: {}", sim.now);
    sim.check_time_conservation()
        .unwrap_or_else(|e| panic!("{e}"));
    if trace {
        check_trace(&sim).unwrap_or_else(|e| panic!("{e}"));
    }
    Outcome {
        stop,
        now_ns: sim.now,
        events: sim.events,
        counters: format!("{:?}", sim.counters),
    }
}

/// Runs a case twice when `n % 4 == 0`, the second time traced: the same
/// run, and a consistent trace.
fn run_and_repeat(n: u64, run: impl Fn(bool) -> Outcome) -> Outcome {
    let out = run(false);
    if n.is_multiple_of(4) {
        assert_eq!(
            out,
            run(true),
            "not deterministic, or tracing changed the run"
        );
    }
    out
}

/// One case: machine, configuration, document, run length and simulation
/// seed, all derived from the case number.
struct Case {
    machine: &'static str,
    config: String,
    doc: String,
    sim_time_ns: u64,
    seed: u64,
}

impl Case {
    fn new(n: u64) -> Case {
        let mut rng = Pcg64::seed_from_u64(0x5eed_f022 ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let machine = *MACHINES.choose(&mut rng).expect("machines");
        let config = with_fair_class(configs::CONFIGS.choose(&mut rng).expect("configs").0, n);
        let nr_cpus = schedlab_topo::resolve_machine(machine)
            .expect("machine")
            .nr_cpus();
        let doc = rt_app_doc(&mut rng, nr_cpus);
        Case {
            machine,
            config,
            doc,
            sim_time_ns: rng.gen_range(5_000_000..40_000_000u64),
            seed: u64::from(rng.gen::<u32>()),
        }
    }

    fn describe(&self, n: u64) -> String {
        format!(
            "fuzz case {n}: machine {}, config {}, seed {}, {} ms, rt-app file:\n{}",
            self.machine,
            self.config,
            self.seed,
            self.sim_time_ns / 1_000_000,
            self.doc
        )
    }

    /// Runs the case in checked mode.
    fn run(&self, trace: bool) -> Outcome {
        let m = schedlab_topo::resolve_machine(self.machine).expect("machine");
        // With the machine's capacities, as the CLI imports files.
        let w = Builtin::from_rtapp_for(&self.doc, &m)
            .unwrap_or_else(|e| panic!("generated document rejected: {e}"));
        let mut spec = w.build(None, None);
        spec.max_time_ns = self.sim_time_ns;
        simulate(m, &self.config, spec, self.seed, trace)
    }
}

/// The case numbers a fuzz test runs: `SCHEDLAB_FUZZ_CASES` (default 128)
/// from `SCHEDLAB_FUZZ_FIRST` (default 0).
fn case_numbers() -> std::ops::Range<u64> {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let first = env("SCHEDLAB_FUZZ_FIRST", 0);
    first..first + env("SCHEDLAB_FUZZ_CASES", 128)
}

/// Runs `f`; if it panics, panics again with the case's description
/// (`what()`) after the message.
fn described<T>(what: impl FnOnce() -> String, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{msg}\n{}", what());
        }
    }
}

/// Prints a case's outcome when `SCHEDLAB_FUZZ_STATS` is set.
fn print_stats(out: &Outcome) {
    if std::env::var_os("SCHEDLAB_FUZZ_STATS").is_some() {
        eprintln!(
            "-> {:?} at {} ms, {} events",
            out.stop,
            out.now_ns / 1_000_000,
            out.events
        );
    }
}

#[test]
fn random_rt_app_programs_keep_every_invariant_on_every_machine_and_config() {
    for n in case_numbers() {
        let case = Case::new(n);
        if std::env::var_os("SCHEDLAB_FUZZ_PRINT").is_some() {
            eprintln!("{}", case.describe(n));
        }
        let out = described(
            || case.describe(n),
            || run_and_repeat(n, |trace| case.run(trace)),
        );
        print_stats(&out);
    }
}

#[test]
fn the_generator_writes_documents_the_importer_accepts() {
    let mut rng = Pcg64::seed_from_u64(7);
    for _ in 0..500 {
        let nr_cpus = rng.gen_range(1..=128);
        let doc = rt_app_doc(&mut rng, nr_cpus);
        if let Err(e) = Builtin::from_rtapp(&doc, nr_cpus) {
            panic!("{e}\n{doc}");
        }
    }
}

/// Cases fuzzing found, kept as files: each used to hang or crash.
#[test]
fn fuzz_regressions_stop_by_themselves() {
    let cases = [
        // Three threads that only yield on two CPUs: yields cost nothing,
        // so simulated time stood still and the run never returned.
        (
            include_str!("fuzz_regressions/yield_livelock.json"),
            "exynos5433",
            "vanilla",
            2_466_711_109,
            13_000_000,
            &[StopReason::TimeLimit][..],
        ),
        // Threads passing a barrier with no work between, pulled one by one
        // by HPERF_HMP's idle big CPUs, each switch-in nested in the
        // previous thread's schedule(): the stack overflowed. (Since sleeps
        // carry the timer slack the run reaches its time limit; before, the
        // livelock detector stopped it. Either way it must stop.)
        (
            include_str!("fuzz_regressions/hperf_idle_pull_recursion.json"),
            "exynos5422",
            "hperf-hmp",
            3_684_921_024,
            21_000_000,
            &[StopReason::Livelock, StopReason::TimeLimit][..],
        ),
    ];
    for (doc, machine, config, seed, sim_time_ns, want) in cases {
        let case = Case {
            machine,
            config: config.to_string(),
            doc: doc.to_string(),
            sim_time_ns,
            seed,
        };
        let out = case.run(true);
        assert!(
            want.contains(&out.stop),
            "{:?}\n{}",
            out.stop,
            case.describe(0)
        );
    }
}

// ----- thread programs of every step kind --------------------------------

/// Synchronisation objects of a generated program, by index.
const SYNC_BARRIER: u32 = 0;
const SYNC_MUTEXES: [u32; 2] = [1, 2];
const SYNC_COND: u32 = 3;
const SYNC_CHANNEL: u32 = 4;
const SYNC_SEM: u32 = 5;
const SYNC_COUNTER: u32 = 6;
const SYNC_SHARED: u32 = 7;
/// Per-CPU mutexes (`LockPerCpu`) start here.
const SYNC_PERCPU: u32 = 8;
const PERCPU_LOCKS: u32 = 4;

/// A random program of steps: short well-formed blocks (critical sections
/// closed, condition waits inside their mutex, jumps only forward) of every
/// step kind the built-in workloads use, in a bounded loop. What rt-app
/// files cannot express (channels, spinlocks, per-CPU locks, counters and
/// polls, shared data, working sets, sweeps, the requeueing broadcast,
/// processes) is exercised here.
fn program(rng: &mut Pcg64, leaf: Option<u32>) -> Vec<Step> {
    let sync = match rng.gen_range(0..20) {
        0..=7 => Sync::None,
        8..=15 => Sync::Balanced,
        _ => Sync::Any,
    };
    let mut blocks: Vec<Vec<Step>> = Vec::new();
    let n = rng.gen_range(1..=8);
    for _ in 0..n {
        let mut kind = rng.gen_range(0..30);
        // Blocks that can block a thread for good are kept to some threads,
        // so most cases run long (as in rt_app_doc()).
        let blocks_for_good = matches!(kind, 13 | 17 | 19) || (kind == 20);
        let may_block = matches!(kind, 11 | 12 | 14 | 18 | 21 | 22);
        if (sync == Sync::None && (may_block || blocks_for_good))
            || (sync == Sync::Balanced && blocks_for_good)
        {
            kind = 0;
        }
        let m = SYNC_MUTEXES[rng.gen_range(0..2)];
        let work = Step::Compute {
            work_ns: us(rng, 500.0) * 1000,
        };
        // Jumps name the next block; patched to step indices below.
        const NEXT: u32 = u32::MAX;
        let b = match kind {
            0..=3 => vec![work],
            4 => vec![Step::Work {
                work_ns: us(rng, 2000.0) * 1000,
                working_set_bytes: rng.gen_range(0..64 << 20),
            }],
            5 => vec![Step::Memory {
                bytes: rng.gen_range(0..4 << 20),
            }],
            6 => vec![
                Step::Sweep {
                    bytes: rng.gen_range(0..2 << 20),
                    footprint_bytes: rng.gen_range(0..128 << 20),
                },
                work,
            ],
            7 => vec![match rng.gen_range(0..3) {
                0 => Step::Sleep {
                    ns: us(rng, 3000.0) * 1000,
                },
                1 => Step::NanosleepJitter {
                    ns: us(rng, 3000.0) * 1000,
                    jitter_ns: us(rng, 1000.0) * 1000,
                },
                _ => Step::Delay {
                    ns: us(rng, 20_000.0) * 1000,
                },
            }],
            8 => vec![Step::RunWall {
                ns: us(rng, 1000.0) * 1000,
            }],
            9 => vec![
                Step::Yield {
                    syscall_ns: rng.gen_range(0..2) * 500,
                },
                Step::SetSlice {
                    ns: rng.gen_range(0..3) * 1_000_000,
                },
                Step::SetAttr(Box::new(schedlab_workload::Attrs {
                    policy: match rng.gen_range(0..6) {
                        0 => SchedPolicy::Normal,
                        1 => SchedPolicy::Batch,
                        2 => SchedPolicy::Idle,
                        3 => SchedPolicy::Fifo(rng.gen_range(1..=99)),
                        4 => SchedPolicy::Rr(rng.gen_range(1..=99)),
                        // Any parameters, bad ones too (the call fails, the
                        // run stops as rt-app exits), some constrained.
                        _ => {
                            let period_ns = rng.gen_range(50..=200) * 1_000_000 / 10;
                            SchedPolicy::Deadline {
                                runtime_ns: rng.gen_range(1..=40) * period_ns / 100,
                                deadline_ns: period_ns * rng.gen_range(5..=10) / 10,
                                period_ns,
                            }
                        }
                    },
                    nice: rng.gen_bool(0.5).then(|| rng.gen_range(-20..=19)),
                    runtime_ns: rng.gen_bool(0.3).then(|| rng.gen_range(0..3) * 1_000_000),
                    // Any pair, a minimum above the maximum included (the
                    // call then fails and changes nothing).
                    util_min: rng.gen_bool(0.3).then(|| rng.gen_range(0..=1024)),
                    util_max: rng.gen_bool(0.3).then(|| rng.gen_range(0..=1024)),
                })),
                Step::SetAffinity {
                    cpus: match rng.gen_range(0..3) {
                        0 => None,
                        // CPUs the machine may not have: dropped, or a
                        // failed call when none is left.
                        _ => Some(Box::new(CpuMask::from_cpus(
                            (0..rng.gen_range(1..=4)).map(|_| rng.gen_range(0..160)),
                        ))),
                    },
                },
            ],
            10 => vec![
                Step::Timer {
                    id: rng.gen_range(0..2),
                    period_ns: us(rng, 5000.0).max(20) * 1000,
                    absolute: rng.gen_bool(0.5),
                },
                Step::MarkWoken { tag: 0 },
                Step::Mark { tag: 1 },
            ],
            11 => vec![Step::Lock { mutex: m }, work, Step::Unlock { mutex: m }],
            12 => vec![Step::SpinLock { mutex: m }, work, Step::Unlock { mutex: m }],
            13 => vec![
                Step::Lock { mutex: m },
                Step::Wait {
                    cond: SYNC_COND,
                    mutex: Some(m),
                },
                Step::Unlock { mutex: m },
            ],
            14 => vec![
                Step::Lock { mutex: m },
                Step::BroadcastRequeue {
                    cond: SYNC_COND,
                    mutex: m,
                    syscall_ns: rng.gen_range(0..2) * 1000,
                },
                Step::Unlock { mutex: m },
            ],
            15 => vec![Step::Signal { cond: SYNC_COND }],
            16 => vec![if rng.gen_bool(0.5) {
                Step::Broadcast { cond: SYNC_COND }
            } else {
                Step::BroadcastSync { cond: SYNC_COND }
            }],
            17 => vec![Step::Wait {
                cond: SYNC_COND,
                mutex: None,
            }],
            18 => vec![if rng.gen_bool(0.8) {
                Step::Send {
                    chan: SYNC_CHANNEL,
                    bytes: rng.gen_range(1..100_000),
                }
            } else {
                // Stride 0: the same channel whatever the loop's pass.
                Step::SendNext {
                    first: SYNC_CHANNEL,
                    stride: 0,
                    slot: rng.gen_range(0..4),
                    bytes: rng.gen_range(1..100_000),
                }
            }],
            19 => vec![Step::Recv {
                chan: SYNC_CHANNEL,
                bytes: rng.gen_range(1..100_000),
            }],
            20 => vec![match rng.gen_range(0..5) {
                0 | 1 => Step::SemPost { sem: SYNC_SEM },
                2 | 3 => Step::SemWait { sem: SYNC_SEM },
                _ => Step::SemReset { sem: SYNC_SEM },
            }],
            21 => vec![Step::Barrier {
                id: SYNC_BARRIER,
                spin_ns: rng.gen_range(0..3) * 100_000,
            }],
            22 => vec![
                Step::LockPerCpu {
                    first: SYNC_PERCPU,
                    count: PERCPU_LOCKS,
                },
                work,
                Step::UnlockPerCpu,
            ],
            23 => vec![
                Step::Share {
                    region: SYNC_SHARED,
                    chunk: rng.gen_range(0..4),
                    bytes: rng.gen_range(0..1 << 20),
                    write: rng.gen_bool(0.5),
                },
                work,
            ],
            24 => vec![
                Step::Grab {
                    counter: SYNC_COUNTER,
                    limit: rng.gen_range(0..50),
                    exit_to: NEXT,
                },
                work,
            ],
            25 => vec![
                Step::TestCounter {
                    counter: SYNC_COUNTER,
                    below: rng.gen_range(0..50),
                    else_to: NEXT,
                },
                Step::Count {
                    counter: SYNC_COUNTER,
                    delta: rng.gen_range(-2..=2),
                    reached: rng.gen_range(0..20),
                    jump_to: NEXT,
                },
            ],
            26 => vec![
                match rng.gen_bool(0.5) {
                    true => Step::SetCounter {
                        counter: SYNC_COUNTER,
                        value: rng.gen_range(0..3),
                    },
                    false => Step::ResetCounter {
                        counter: SYNC_COUNTER,
                    },
                },
                Step::Poll {
                    counter: SYNC_COUNTER,
                    value: rng.gen_range(0..3),
                    spin_ns: us(rng, 500.0) * 1000,
                },
            ],
            27 => vec![Step::Jump { to: NEXT }, work],
            28 => vec![match rng.gen_bool(0.5) {
                true => Step::NewProcess,
                false => Step::Exec,
            }],
            _ => match leaf {
                Some(template) => vec![Step::Spawn { template }],
                None => vec![work],
            },
        };
        blocks.push(b);
    }
    // Lay the blocks out; NEXT becomes the first step of the next block.
    let mut steps = Vec::new();
    for b in blocks {
        let next = (steps.len() + b.len()) as u32;
        for mut s in b {
            match &mut s {
                Step::Grab { exit_to: to, .. }
                | Step::TestCounter { else_to: to, .. }
                | Step::Count { jump_to: to, .. }
                | Step::Jump { to } => *to = next,
                _ => {}
            }
            steps.push(s);
        }
    }
    steps.push(Step::Loop {
        start: 0,
        count: rng.gen_range(1..200),
        slot: 0,
    });
    steps.push(Step::Exit);
    steps
}

/// A random workload of [`program`]s: up to six threads started at once and
/// a leaf program they may spawn.
fn step_workload(rng: &mut Pcg64, nr_cpus: usize, max_time_ns: u64) -> WorkloadSpec {
    let threads = rng.gen_range(1..=6u32);
    let leaf = threads;
    let mut templates: Vec<ThreadTemplate> = (0..threads)
        .map(|i| ThreadTemplate {
            name: format!("p{i}"),
            nice: if rng.gen_bool(0.3) {
                rng.gen_range(-20..=19)
            } else {
                0
            },
            idle_policy: rng.gen_bool(0.1),
            affinity: if rng.gen_bool(0.3) {
                let first = rng.gen_range(0..nr_cpus) as u32;
                let n = rng.gen_range(1..=4u32);
                Some(CpuMask::from_cpus(
                    (first..first + n).map(|c| (c as usize % nr_cpus) as CpuId),
                ))
            } else {
                None
            },
            steps: program(rng, Some(leaf)),
        })
        .collect();
    templates.push(ThreadTemplate {
        name: "leaf".into(),
        nice: 0,
        idle_policy: false,
        affinity: None,
        steps: program(rng, None),
    });
    let mut sync = vec![
        SyncObject::Barrier {
            parties: rng.gen_range(1..=threads),
        },
        SyncObject::Mutex,
        // With priority inheritance: RT threads of the programs boost its
        // owners, and its unlocks hand it over.
        SyncObject::PiMutex,
        SyncObject::Cond,
        // The channel is a plain byte buffer, a pipe or a unix socket.
        match rng.gen_range(0..3) {
            0 => SyncObject::Channel {
                capacity: rng.gen_range(1..200_000),
            },
            1 => SyncObject::Pipe {
                buffers: rng.gen_range(1..=16),
                page_bytes: 4096,
            },
            _ => SyncObject::UnixStream {
                sndbuf: rng.gen_range(4608..300_000),
            },
        },
        SyncObject::Semaphore {
            initial: rng.gen_range(0..3),
        },
        SyncObject::Counter,
        SyncObject::Shared { chunks: 4 },
    ];
    sync.extend((0..PERCPU_LOCKS).map(|_| SyncObject::Mutex));
    WorkloadSpec {
        name: "fuzz".into(),
        templates,
        initial: (0..threads).collect(),
        sync,
        mem_node: None,
        max_time_ns,
    }
}

/// Runs step-program case `n` in checked mode.
fn run_step_case(n: u64) -> Outcome {
    let mut rng = Pcg64::seed_from_u64(0x57e9_f022 ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let machine = *MACHINES.choose(&mut rng).expect("machines");
    let config = with_fair_class(configs::CONFIGS.choose(&mut rng).expect("configs").0, n);
    let m = schedlab_topo::resolve_machine(machine).expect("machine");
    let sim_time_ns = rng.gen_range(5_000_000..40_000_000u64);
    let spec = step_workload(&mut rng, m.nr_cpus(), sim_time_ns);
    let seed = u64::from(rng.gen::<u32>());
    let what = format!("step case {n}: machine {machine}, config {config}, seed {seed}");
    if std::env::var_os("SCHEDLAB_FUZZ_PRINT").is_some() {
        eprintln!("{what}\n{spec:#?}");
    }
    described(
        || format!("{what} (SCHEDLAB_FUZZ_PRINT=1 prints its program)"),
        || {
            run_and_repeat(n, |trace| {
                simulate(m.clone(), &config, spec.clone(), seed, trace)
            })
        },
    )
}

#[test]
fn random_step_programs_keep_every_invariant_on_every_machine_and_config() {
    for n in case_numbers() {
        print_stats(&run_step_case(n));
    }
}

// ----- random machines ---------------------------------------------------

/// A random machine file: x86, arm64 or powerpc; 1-3 packages of 1-2 dies,
/// 1-2 LLCs per die, 1-3 clusters of 1-3 cores with 1, 2 or 4 threads, 1-2
/// NUMA nodes per package with random distances, adjacent or split CPU
/// numbering; or a hybrid part (a big SMT group and a little clustered
/// group per package); ITMT priorities or none. The machine-file property
/// tests of the topology crate check the domains such files give; here the
/// engine runs on them.
fn machine_toml(rng: &mut Pcg64) -> String {
    let arch = *["x86", "arm64", "powerpc"].choose(rng).expect("arch");
    let prios = rng.gen_bool(0.5);
    let prio = |p: u32| if prios { p } else { 0 };
    let mut t = format!("name = \"fuzz\"\narch = \"{arch}\"\n");
    let _ = write!(
        t,
        "[[core_type]]\nname = \"big\"\ncapacity = 1024\nfreq_max_mhz = 3000\nsmt_thread_speed = 0.6\ncore_bw_bytes_per_s = 10e9\nasym_prio = {}\n",
        prio(50)
    );
    let _ = write!(
        t,
        "[[core_type]]\nname = \"little\"\ncapacity = {}\nfreq_max_mhz = 2000\ncore_bw_bytes_per_s = 5e9\nasym_prio = {}\n",
        rng.gen_range(200..=900),
        prio(20)
    );
    let packages = rng.gen_range(1..=3u32);
    let cores = rng.gen_range(1..=3u32);
    let clusters = rng.gen_range(1..=3u32);
    let threads = *[1u32, 2, 4].choose(rng).expect("threads");
    let nodes = if rng.gen_bool(0.3) {
        // Hybrid: per package a big group (SMT) and a little group
        // (clusters), each its own LLC; node = package.
        for p in 0..packages {
            let _ = write!(
                t,
                "[[core_group]]\ncore_type = \"big\"\ncores = {cores}\nthreads_per_core = {threads}\npackage = {p}\ndie = {p}\nnode = {p}\n"
            );
            let _ = write!(
                t,
                "[[core_group]]\ncore_type = \"little\"\ncores = {}\ncores_per_cluster = {clusters}\npackage = {p}\ndie = {p}\nnode = {p}\nllc = {}\n",
                cores * clusters,
                100 + p
            );
        }
        packages
    } else {
        let dies = rng.gen_range(1..=2u32);
        let llcs = rng.gen_range(1..=2u32);
        let npp = if (dies * llcs) % 2 == 0 && rng.gen_bool(0.5) {
            2
        } else {
            1
        };
        let _ = write!(
            t,
            "[shape]\npackages = {packages}\ndies_per_package = {dies}\nllcs_per_die = {llcs}\nclusters_per_llc = {clusters}\ncores_per_cluster = {cores}\nthreads_per_core = {threads}\nnodes_per_package = {npp}\nnumbering = \"{}\"\ncore_type = \"big\"\n",
            if rng.gen_bool(0.5) { "split" } else { "adjacent" }
        );
        packages * npp
    };
    if nodes > 1 {
        let n = nodes as usize;
        // One random distance per pair, the matrix symmetric.
        let pair: Vec<u32> = (0..n * n).map(|_| rng.gen_range(11..=40)).collect();
        let rows: Vec<String> = (0..n)
            .map(|a| {
                let r: Vec<String> = (0..n)
                    .map(|b| match a == b {
                        true => "10".to_string(),
                        false => pair[a.min(b) * n + a.max(b)].to_string(),
                    })
                    .collect();
                format!("[{}]", r.join(", "))
            })
            .collect();
        let _ = write!(t, "[numa]\ndistance = [{}]\n", rows.join(", "));
    }
    t.push_str(
        "[memory]\nmem_bw_peak_bytes_per_s = 50e9\nmem_half_concurrency = 2\nmem_latency_ns = 100\n\
         [c2c]\nllc_ns = 30\nremote_package_ns = 120\n\
         [wakeup]\nipi_ns = 1000\nwakeup_path_ns = 1000\n",
    );
    // Idle states, in the short form (none polls as on arm64, all poll as
    // with intel_idle, polling below a non-polling state's residency as
    // with acpi_idle, a polling loop that gives up as pseries' snooze) or
    // as a table of one to six states: an optional polling loop first (with
    // or without its own limit), then states of growing residency, some
    // polling, some disabled.
    match rng.gen_range(0..6u32) {
        0 => t.push_str("idle_exit_ns = 1000\n"),
        1 => t.push_str("idle_exit_ns = 1000\nidle_polls = true\n"),
        k @ (2 | 3) => {
            let below_ns = rng.gen_range(5_000..300_000u32);
            let _ = write!(
                t,
                "idle_exit_ns = 1000\nidle_polls = true\nidle_poll_below_ns = {below_ns}\nidle_poll_gives_up = {}\n",
                k == 3
            );
        }
        _ => {
            let n_states = rng.gen_range(1..=6usize);
            let mut residency_ns = 0u32;
            for i in 0..n_states {
                let poll_loop = i == 0 && rng.gen_bool(0.5);
                let _ = write!(t, "[[idle_state]]\nname = \"S{i}\"\n");
                if poll_loop {
                    t.push_str("exit_ns = 0\nresidency_ns = 0\npolls = true\npoll_loop = true\n");
                    if rng.gen_bool(0.5) {
                        let _ = writeln!(t, "poll_limit_ns = {}", rng.gen_range(1_000..200_000u32));
                    }
                } else {
                    residency_ns += rng.gen_range(0..400_000u32);
                    let _ = write!(
                        t,
                        "exit_ns = {}\nresidency_ns = {residency_ns}\npolls = {}\n",
                        rng.gen_range(0..=residency_ns.max(1)),
                        rng.gen_bool(0.5)
                    );
                }
                if rng.gen_bool(0.2) {
                    t.push_str("disabled = true\n");
                }
            }
        }
    }
    t
}

/// Runs random-machine case `n`: a machine file, a configuration, and an
/// rt-app file or a step program, in checked mode.
fn run_machine_case(n: u64) -> Outcome {
    let mut rng = Pcg64::seed_from_u64(0x3ac4_f022 ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let toml = machine_toml(&mut rng);
    let config = with_fair_class(configs::CONFIGS.choose(&mut rng).expect("configs").0, n);
    let sim_time_ns = rng.gen_range(5_000_000..30_000_000u64);
    let m = schedlab_topo::load_machine_str(&toml, "fuzz.toml")
        .unwrap_or_else(|e| panic!("machine case {n}: generated machine rejected: {e}\n{toml}"));
    let nr_cpus = m.nr_cpus();
    let steps = rng.gen_bool(0.5);
    let doc = if steps {
        String::new()
    } else {
        rt_app_doc(&mut rng, nr_cpus)
    };
    let spec = if steps {
        step_workload(&mut rng, nr_cpus, sim_time_ns)
    } else {
        let w = Builtin::from_rtapp(&doc, nr_cpus).expect("generated rt-app file");
        let mut spec = w.build(None, None);
        spec.max_time_ns = sim_time_ns;
        spec
    };
    let seed = u64::from(rng.gen::<u32>());
    let what = format!(
        "machine case {n}: config {config}, seed {seed}, {} workload, machine file:\n{toml}",
        if steps { "step" } else { "rt-app" }
    );
    if steps && std::env::var_os("SCHEDLAB_FUZZ_PRINT").is_some() {
        eprintln!("{what}\n{spec:#?}");
    }
    described(
        || format!("{what}{doc}"),
        || {
            run_and_repeat(n, |trace| {
                simulate(m.clone(), &config, spec.clone(), seed, trace)
            })
        },
    )
}

#[test]
fn random_machines_keep_every_invariant_under_every_config() {
    for n in case_numbers() {
        print_stats(&run_machine_case(n));
    }
}

/// A machine-file case fuzzing found: three NUMA nodes with unequal
/// distances (overlapping groups), a thread pinned to cpu0 and SCHED_CACHE.
/// An LBF_DST_PINNED retry named the source CPU as the new destination and
/// the balancer "migrated" the task from cpu0 to cpu0 (a sched_migrate_task
/// with orig_cpu = dest_cpu in the trace, a migration counted).
#[test]
fn a_balancer_move_to_the_source_cpu_is_no_migration() {
    let m = schedlab_topo::load_machine_str(
        include_str!("fuzz_regressions/numa_overlap_dst_pinned.toml"),
        "numa_overlap_dst_pinned.toml",
    )
    .expect("machine");
    let doc = include_str!("fuzz_regressions/numa_overlap_dst_pinned.json");
    let w = Builtin::from_rtapp(doc, m.nr_cpus()).expect("rt-app file");
    let mut spec = w.build(None, None);
    spec.max_time_ns = 30_000_000;
    // simulate() replays the trace: no migration to the same CPU.
    simulate(m, "cache-aware", spec, 1_339_481_912, true);
}
