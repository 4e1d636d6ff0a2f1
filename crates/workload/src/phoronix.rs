//! Phoronix Test Suite style benchmarks of patch set S3 (Alder Lake):
//! single-threaded `tjbench`, `phpbench`, `flac`, `pybench`, and the
//! multi-threaded `tflite` (TensorFlow Lite inference). `kbuild` is the
//! kernbench model.
//!
//! What it models. Single-threaded: the test harness's shell forks one
//! benchmark process per run (fork balancing picks its CPU), waits for it,
//! and repeats `runs` times; the benchmark pays its process start-up, then
//! computes in chunks over its working set, with the blocking reads/writes or
//! short sleeps of the real program between chunks; a harness monitor thread
//! (the PHP test-suite process polling the system) wakes every 100 ms for a
//! short burst. TensorFlow Lite: `threads` threads (the main thread plus a
//! pool) run every layer of a model as equal parallel slices separated by a
//! barrier (spin, then sleep), for `inferences` inferences.
//!
//! What it leaves out: the benchmarks' real instruction mixes (a chunk is
//! capacity-scaled CPU work over a working set), the page cache and disks,
//! frequency/turbo behaviour, TensorFlow Lite's per-operator thread counts and
//! non-parallel operators. Every work amount is an ESTIMATE from the real
//! program's structure, scaled down so a run lasts a few simulated seconds.

use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

pub const TAG_START: u32 = 0;
pub const TAG_END: u32 = 1;

/// The single-threaded benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Single {
    Tjbench,
    Phpbench,
    Flac,
    Pybench,
}

/// How one single-threaded benchmark run behaves (all ESTIMATEs, see
/// [`Single::profile`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Process start-up (exec, dynamic linking, interpreter start), ns.
    pub startup_ns: u64,
    /// Number of compute chunks and the work of each, ns at capacity 1024.
    pub chunks: u32,
    pub chunk_ns: u64,
    pub working_set_bytes: u64,
    /// Blocking time before each chunk (a read), and after it (a write), ns.
    pub pre_sleep_ns: u64,
    pub post_sleep_ns: u64,
}

impl Single {
    pub const ALL: [Single; 4] = [
        Single::Tjbench,
        Single::Phpbench,
        Single::Flac,
        Single::Pybench,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Single::Tjbench => "tjbench",
            Single::Phpbench => "phpbench",
            Single::Flac => "flac",
            Single::Pybench => "pybench",
        }
    }

    /// The run profile. ESTIMATEs from the programs' structure:
    /// - tjbench (libjpeg-turbo): compresses/decompresses one in-memory image
    ///   in a timed loop: pure compute over the image and its JPEG (~12 MiB).
    /// - phpbench: the PHP interpreter runs a suite of micro-benchmarks; small
    ///   working set (~2 MiB), no I/O, interpreter start-up ~20 ms.
    /// - flac: encodes a WAV file block by block: read a block, encode it
    ///   (~4 ms), write the FLAC frame; short blocking reads/writes.
    /// - pybench: Python's pybench runs rounds of small tests and prints a
    ///   line per round to the harness (a short sleep per chunk); ~4 MiB.
    pub fn profile(self) -> Profile {
        const MIB: u64 = 1 << 20;
        match self {
            Single::Tjbench => Profile {
                startup_ns: 3_000_000,
                chunks: 150,
                chunk_ns: 10_000_000,
                working_set_bytes: 12 * MIB,
                pre_sleep_ns: 0,
                post_sleep_ns: 0,
            },
            Single::Phpbench => Profile {
                startup_ns: 20_000_000,
                chunks: 100,
                chunk_ns: 20_000_000,
                working_set_bytes: 2 * MIB,
                pre_sleep_ns: 0,
                post_sleep_ns: 0,
            },
            Single::Flac => Profile {
                startup_ns: 2_000_000,
                chunks: 400,
                chunk_ns: 4_000_000,
                working_set_bytes: MIB,
                pre_sleep_ns: 60_000,
                post_sleep_ns: 30_000,
            },
            Single::Pybench => Profile {
                startup_ns: 25_000_000,
                chunks: 150,
                chunk_ns: 10_000_000,
                working_set_bytes: 4 * MIB,
                pre_sleep_ns: 0,
                post_sleep_ns: 200_000,
            },
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub enum PhoronixParams {
    /// A single-threaded benchmark, `runs` times.
    Single { bench: Single, runs: u32 },
    /// TensorFlow Lite: `threads`, `inferences` of `layers` layers of
    /// `layer_us` µs of work (capacity 1024, all threads together).
    Tflite {
        threads: u32,
        inferences: u32,
        layers: u32,
        layer_us: u64,
    },
}

/// Keys of the single-threaded specs and of `tflite:`.
pub const SINGLE_KEYS: &[&str] = &["runs"];
pub const TFLITE_KEYS: &[&str] = &["threads", "inferences", "layers", "layer_us"];

/// Harness monitor period and burst (ESTIMATE: the test-suite process polls
/// /proc and sensors a few times a second for a fraction of a millisecond).
pub const MONITOR_PERIOD_NS: u64 = 100_000_000;
pub const MONITOR_BURST_NS: u64 = 300_000;
/// The shell's fork + wait bookkeeping per run, ns (ESTIMATE).
pub const SHELL_FORK_NS: u64 = 500_000;
/// Barrier spin of the inference thread pool before it sleeps, ns (ESTIMATE:
/// a short busy-wait as thread pools do between operators).
pub const TFLITE_SPIN_NS: u64 = 100_000;
/// The model's weights and activations touched per slice (ESTIMATE, a
/// MobileNet-class float model: ~16 MiB of weights, split over the threads).
pub const TFLITE_MODEL_BYTES: u64 = 16 << 20;

impl PhoronixParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        let single = |bench| -> Result<Self, SpecError> {
            s.check_keys(SINGLE_KEYS)?;
            Ok(PhoronixParams::Single {
                bench,
                runs: s.get_u64("runs", 3, 1, 1000)? as u32,
            })
        };
        match s.name.as_str() {
            "tjbench" => single(Single::Tjbench),
            "phpbench" => single(Single::Phpbench),
            "flac" => single(Single::Flac),
            "pybench" => single(Single::Pybench),
            _ => {
                s.check_keys(TFLITE_KEYS)?;
                Ok(PhoronixParams::Tflite {
                    threads: s.get_u64("threads", 1, 1, 1024)? as u32,
                    inferences: s.get_u64("inferences", 40, 1, 1_000_000)? as u32,
                    layers: s.get_u64("layers", 30, 1, 10_000)? as u32,
                    layer_us: s.get_u64("layer_us", 2_000, 1, 10_000_000)?,
                })
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            PhoronixParams::Single { bench, .. } => bench.name(),
            PhoronixParams::Tflite { .. } => "tflite",
        }
    }
}

const DONE: u32 = 0;
const STOP: u32 = 1;
const LAYER: u32 = 2;

/// Builds the thread programs.
pub fn build(p: &PhoronixParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    match *p {
        PhoronixParams::Single { bench, runs } => build_single(bench, runs, affinity),
        PhoronixParams::Tflite {
            threads,
            inferences,
            layers,
            layer_us,
        } => build_tflite(threads, inferences, layers, layer_us, affinity),
    }
}

fn tpl(name: &str, affinity: Option<CpuMask>, steps: Vec<Step>) -> ThreadTemplate {
    ThreadTemplate {
        name: name.into(),
        nice: 0,
        idle_policy: false,
        affinity,
        steps,
    }
}

fn build_single(bench: Single, runs: u32, affinity: Option<CpuMask>) -> WorkloadSpec {
    let pr = bench.profile();
    // Template 0: the shell; 1: the benchmark process; 2: the harness monitor.
    let shell = vec![
        Step::Mark { tag: TAG_START },
        Step::Compute {
            work_ns: SHELL_FORK_NS,
        },
        Step::Spawn { template: 1 },
        Step::SemWait { sem: DONE },
        Step::Loop {
            start: 1,
            count: runs,
            slot: 0,
        },
        Step::Mark { tag: TAG_END },
        // Tell the monitor to stop (one ticket on the stop counter).
        Step::Grab {
            counter: STOP,
            limit: u32::MAX,
            exit_to: 7,
        },
        Step::Exit,
    ];
    let mut b = vec![
        Step::Exec,
        Step::Compute {
            work_ns: pr.startup_ns,
        },
    ];
    let body = b.len() as u32;
    if pr.pre_sleep_ns > 0 {
        b.push(Step::Sleep {
            ns: pr.pre_sleep_ns,
        });
    }
    b.push(Step::Work {
        work_ns: pr.chunk_ns,
        working_set_bytes: pr.working_set_bytes,
    });
    if pr.post_sleep_ns > 0 {
        b.push(Step::Sleep {
            ns: pr.post_sleep_ns,
        });
    }
    b.extend([
        Step::Loop {
            start: body,
            count: pr.chunks,
            slot: 0,
        },
        Step::SemPost { sem: DONE },
        Step::Exit,
    ]);
    let monitor = vec![
        Step::Timer {
            id: 0,
            period_ns: MONITOR_PERIOD_NS,
            absolute: false,
        },
        Step::TestCounter {
            counter: STOP,
            below: 1,
            else_to: 4,
        },
        Step::Compute {
            work_ns: MONITOR_BURST_NS,
        },
        Step::Loop {
            start: 0,
            count: u32::MAX,
            slot: 0,
        },
        Step::Exit,
    ];
    WorkloadSpec {
        name: format!("{}:runs={runs}", bench.name()),
        templates: vec![
            tpl("sh", affinity, shell),
            tpl(bench.name(), None, b),
            tpl("pts-monitor", affinity, monitor),
        ],
        initial: vec![2, 0],
        sync: vec![SyncObject::Semaphore { initial: 0 }, SyncObject::Counter],
        mem_node: None,
        max_time_ns: 3_600_000_000_000,
    }
}

fn build_tflite(
    threads: u32,
    inferences: u32,
    layers: u32,
    layer_us: u64,
    affinity: Option<CpuMask>,
) -> WorkloadSpec {
    let slice_ns = layer_us * 1000 / threads as u64;
    let ws = TFLITE_MODEL_BYTES / threads as u64;
    let layer = |start: u32| {
        vec![
            Step::Work {
                work_ns: slice_ns,
                working_set_bytes: ws,
            },
            Step::Barrier {
                id: LAYER,
                spin_ns: TFLITE_SPIN_NS,
            },
            Step::Loop {
                start,
                count: inferences * layers,
                slot: 0,
            },
        ]
    };
    let mut main = vec![Step::Mark { tag: TAG_START }];
    for _ in 1..threads {
        main.push(Step::Spawn { template: 1 });
    }
    let s = main.len() as u32;
    main.extend(layer(s));
    main.extend([Step::Mark { tag: TAG_END }, Step::Exit]);
    let mut worker = layer(0);
    worker.push(Step::Exit);
    // Sync ids: 0 and 1 unused here (kept aligned with the single-threaded
    // layout), 2 the layer barrier.
    WorkloadSpec {
        name: format!(
            "tflite:threads={threads},inferences={inferences},layers={layers},layer_us={layer_us}"
        ),
        templates: vec![
            tpl("tflite", affinity, main),
            tpl("tflite-pool", None, worker),
        ],
        initial: vec![0],
        sync: vec![
            SyncObject::Semaphore { initial: 0 },
            SyncObject::Counter,
            SyncObject::Barrier { parties: threads },
        ],
        mem_node: None,
        max_time_ns: 3_600_000_000_000,
    }
}

/// Runtime in seconds from the main thread's marks: the mean per run for the
/// single-threaded benchmarks (Phoronix averages its runs), the whole run for
/// TensorFlow Lite.
pub fn runtime_s(p: &PhoronixParams, marks: &[(u32, u64)]) -> Option<f64> {
    let start = marks.iter().find(|m| m.0 == TAG_START)?.1;
    let end = marks.iter().find(|m| m.0 == TAG_END)?.1;
    let total = end.checked_sub(start)? as f64 * 1e-9;
    Some(match p {
        PhoronixParams::Single { runs, .. } => total / *runs as f64,
        PhoronixParams::Tflite { .. } => total,
    })
}

/// The benchmark's result line.
pub fn report(p: &PhoronixParams, runtime: Option<f64>) -> String {
    match runtime {
        Some(t) => format!("{} (simulated): Average: {t:.3} Seconds\n", p.name()),
        None => format!("{} (simulated): incomplete run\n", p.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn specs_parse_and_build() {
        let p = PhoronixParams::from_spec(&parse_spec("flac:runs=2").unwrap()).unwrap();
        assert_eq!(
            p,
            PhoronixParams::Single {
                bench: Single::Flac,
                runs: 2
            }
        );
        let w = build(&p, None);
        assert_eq!(w.templates.len(), 3);
        assert!(PhoronixParams::from_spec(&parse_spec("flac:threads=2").unwrap()).is_err());
        let t = PhoronixParams::from_spec(&parse_spec("tflite:threads=10").unwrap()).unwrap();
        let w = build(&t, None);
        let spawns = w.templates[0]
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Spawn { .. }))
            .count();
        assert_eq!(spawns, 9);
        assert_eq!(
            runtime_s(&p, &[(TAG_START, 0), (TAG_END, 4_000_000_000)]),
            Some(2.0)
        );
    }
}
