//! ChaCha20-xiangshan: a multi-threaded Verilator RTL simulation of the
//! XiangShan RISC-V core running a ChaCha20 kernel (S4's "RISC-V processor
//! simulator", github cyyself/chacha20-xiangshan: `make run` runs the
//! statically linked `xs-emu` built with 8 Verilator threads on a bare-metal
//! ChaCha20 binary and prints `Host time spent: N ms`).
//!
//! What it models: Verilator's thread pool (the main thread plus
//! `threads - 1` workers, all of one process) evaluates the design once per
//! simulated clock cycle. Each thread owns a static partition of the design
//! (Verilator's mtask schedule): per cycle it reads the signals the other
//! partitions produced (`Share` reads of their chunks of one process-shared
//! region), writes its own outputs (`Share` write of its chunk), evaluates
//! its partition (`Work` with the partition's working set) and waits for the
//! others (a barrier: Verilator's `waitUntilUpstreamDone()` and the workers'
//! `dequeWork()` spin on an atomic and only yield/sleep after
//! `VL_LOCK_SPINS` = 50000 pause instructions, i.e. they spin through every
//! cycle). The cost of the shared signals therefore depends on where the
//! threads run: the engine charges line transfers from the writer's core,
//! its LLC, another LLC or socket (hwcost.rs). Metric `host_time` (ms) from
//! the first simulated cycle to the last, as xs-emu's "Host time spent".
//!
//! What it leaves out: the mtask dependency graph inside a cycle (one barrier
//! per cycle instead of many fine-grained waits), uneven partitions, the
//! emulator's per-cycle serial work (difftest is off: `--no-diff`), the
//! design's memories beyond a per-thread working set, model start-up
//! (loading the image), and the yield after a long spin.

use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// Verilator threads of the benchmark's emulator (`xs-emu-8t`, used when the
/// machine has at least 8 CPUs: the repository's Makefile).
pub const DEFAULT_THREADS: u64 = 8;
/// Guest cycles of `make run` (BENCH_LEN=256): 171,945 in the repository's
/// README output.
pub const DEFAULT_CYCLES: u64 = 171_945;
/// Evaluation work of the whole design per guest cycle, ns on a
/// capacity-1024 CPU (ESTIMATE: the README's sample run spends 16,376 ms
/// host time on 171,945 guest cycles, ~95 µs per cycle, taken as one
/// thread's worth of work).
pub const DEFAULT_EVAL_NS: u64 = 95_000;
/// Signal data each thread reads from the other partitions per cycle, and
/// writes for them (ESTIMATE: inter-partition pipeline registers and
/// handshakes of an out-of-order core, ~1/8 of the few hundred KiB a
/// partition touches per cycle: 16 KiB = 256 cache lines).
pub const DEFAULT_SHARED_KIB: u64 = 16;
/// A partition's working set (ESTIMATE: XiangShan's verilated model state
/// is tens of MiB but a partition's per-cycle footprint is about its L2:
/// 1 MiB).
pub const DEFAULT_WS_KIB: u64 = 1024;
/// How long a waiting thread spins before it sleeps, µs (ESTIMATE:
/// VL_LOCK_SPINS = 50000 `pause` instructions of ~40 ns).
pub const DEFAULT_SPIN_US: u64 = 2_000;

/// Sync objects: the start barrier, the per-cycle barrier, the signals.
const START: u32 = 0;
const CYCLE: u32 = 1;
const SIGNALS: u32 = 2;

/// Parameters of `chacha20:threads=T,cycles=C,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct Chacha20Params {
    pub threads: u32,
    pub cycles: u32,
    pub eval_ns: u64,
    pub shared_kib: u64,
    pub ws_kib: u64,
    pub spin_us: u64,
}

/// Keys `chacha20:` accepts.
pub const KEYS: &[&str] = &[
    "threads",
    "cycles",
    "eval_us",
    "shared_kib",
    "ws_kib",
    "spin_us",
];

impl Chacha20Params {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(Chacha20Params {
            threads: s.get_u64("threads", DEFAULT_THREADS, 1, 512)? as u32,
            cycles: s.get_u64("cycles", DEFAULT_CYCLES, 1, 100_000_000)? as u32,
            eval_ns: s.get_u64("eval_us", DEFAULT_EVAL_NS / 1000, 1, 1_000_000)? * 1000,
            shared_kib: s.get_u64("shared_kib", DEFAULT_SHARED_KIB, 0, 1 << 20)?,
            ws_kib: s.get_u64("ws_kib", DEFAULT_WS_KIB, 0, 1 << 22)?,
            spin_us: s.get_u64("spin_us", DEFAULT_SPIN_US, 0, 10_000_000)?,
        })
    }
}

impl Default for Chacha20Params {
    fn default() -> Self {
        Chacha20Params {
            threads: DEFAULT_THREADS as u32,
            cycles: DEFAULT_CYCLES as u32,
            eval_ns: DEFAULT_EVAL_NS,
            shared_kib: DEFAULT_SHARED_KIB,
            ws_kib: DEFAULT_WS_KIB,
            spin_us: DEFAULT_SPIN_US,
        }
    }
}

/// Template i is Verilator thread i; template 0 is the main thread, which
/// creates the workers, marks the start (tag 0) and the end (tag 1).
pub fn build(p: &Chacha20Params, affinity: Option<CpuMask>) -> WorkloadSpec {
    let t = p.threads.max(1);
    let spin_ns = p.spin_us * 1000;
    let shared = p.shared_kib * 1024;
    // Each peer's share of what a thread reads per cycle.
    let per_peer = if t > 1 { shared / (t as u64 - 1) } else { 0 };
    let templates = (0..t)
        .map(|i| {
            let mut steps = Vec::new();
            if i == 0 {
                for w in 1..t {
                    steps.push(Step::Spawn { template: w });
                }
            }
            steps.push(Step::Barrier { id: START, spin_ns });
            if i == 0 {
                steps.push(Step::Mark { tag: 0 });
            }
            let body = steps.len() as u32;
            for j in (0..t).filter(|&j| j != i) {
                steps.push(Step::Share {
                    region: SIGNALS,
                    chunk: j,
                    bytes: per_peer,
                    write: false,
                });
            }
            steps.push(Step::Share {
                region: SIGNALS,
                chunk: i,
                bytes: shared,
                write: true,
            });
            steps.push(Step::Work {
                work_ns: (p.eval_ns / t as u64).max(1),
                working_set_bytes: p.ws_kib * 1024,
            });
            steps.push(Step::Barrier { id: CYCLE, spin_ns });
            steps.push(Step::Loop {
                start: body,
                count: p.cycles,
                slot: 0,
            });
            if i == 0 {
                steps.push(Step::Mark { tag: 1 });
            }
            steps.push(Step::Exit);
            ThreadTemplate {
                idle_policy: false,
                name: if i == 0 {
                    "xs-emu".into()
                } else {
                    format!("xs-emu-w{i}")
                },
                nice: 0,
                affinity,
                steps,
            }
        })
        .collect();
    WorkloadSpec {
        name: format!(
            "chacha20:threads={},cycles={},eval_us={},shared_kib={},ws_kib={},spin_us={}",
            t,
            p.cycles,
            p.eval_ns / 1000,
            p.shared_kib,
            p.ws_kib,
            p.spin_us
        ),
        templates,
        initial: vec![0],
        sync: vec![
            SyncObject::Barrier { parties: t },
            SyncObject::Barrier { parties: t },
            SyncObject::Shared { chunks: t },
        ],
        mem_node: None,
        max_time_ns: 3_600_000_000_000,
    }
}

/// Host time (ms) from the main thread's marks `(tag, time)`.
pub fn host_time_ms(marks: &[(u32, u64)]) -> Option<f64> {
    let at = |tag| marks.iter().find(|m| m.0 == tag).map(|m| m.1);
    Some(at(1)?.checked_sub(at(0)?)? as f64 / 1e6)
}

/// xs-emu's closing lines.
pub fn report(p: &Chacha20Params, host_ms: Option<f64>) -> String {
    let mut s = format!(
        "xs-emu (simulated, {} Verilator threads)\nThe image is ./chacha20_baremetal-256.bin\n",
        p.threads
    );
    match host_ms {
        Some(ms) => {
            s.push_str("Core 0: HIT GOOD TRAP\n");
            s.push_str(&format!(
                "Guest cycle spent: {}\nHost time spent: {}ms\n",
                thousands(p.cycles as u64),
                thousands(ms.round() as u64)
            ));
        }
        None => s.push_str("(incomplete run: no host time)\n"),
    }
    s
}

/// 171945 → "171,945".
fn thousands(v: u64) -> String {
    let d = v.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn spec_keys_and_defaults() {
        let p = Chacha20Params::from_spec(&parse_spec("chacha20").unwrap()).unwrap();
        assert_eq!(p, Chacha20Params::default());
        let p = Chacha20Params::from_spec(&parse_spec("chacha20:threads=4,cycles=10").unwrap())
            .unwrap();
        assert_eq!((p.threads, p.cycles), (4, 10));
        assert!(Chacha20Params::from_spec(&parse_spec("chacha20:bogus=1").unwrap()).is_err());
        assert!(Chacha20Params::from_spec(&parse_spec("chacha20:threads=0").unwrap()).is_err());
    }

    #[test]
    fn every_thread_reads_the_others_and_writes_its_own_chunk() {
        let p = Chacha20Params {
            threads: 4,
            cycles: 3,
            ..Chacha20Params::default()
        };
        let w = build(&p, None);
        assert_eq!(w.templates.len(), 4);
        for (i, t) in w.templates.iter().enumerate() {
            let reads: Vec<u32> = t
                .steps
                .iter()
                .filter_map(|s| match *s {
                    Step::Share {
                        chunk,
                        write: false,
                        ..
                    } => Some(chunk),
                    _ => None,
                })
                .collect();
            let writes: Vec<u32> = t
                .steps
                .iter()
                .filter_map(|s| match *s {
                    Step::Share {
                        chunk, write: true, ..
                    } => Some(chunk),
                    _ => None,
                })
                .collect();
            assert_eq!(reads.len(), 3);
            assert!(!reads.contains(&(i as u32)));
            assert_eq!(writes, vec![i as u32]);
        }
        assert_eq!(thousands(171_945), "171,945");
        assert_eq!(thousands(16), "16");
        assert_eq!(host_time_ms(&[(0, 1_000_000), (1, 3_500_000)]), Some(2.5));
    }
}
