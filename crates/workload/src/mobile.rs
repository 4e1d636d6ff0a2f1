//! A mixed mobile benchmark in the style of AnTuTu 5 (the S5 cover letter's
//! Exynos 5433 figure): a driver thread runs a fixed sequence of CPU, memory,
//! "UX" and I/O sub-tests one after the other while a few Android-like
//! system services wake periodically in the background. Each sub-test's
//! score is inversely proportional to its elapsed time; the total score is
//! their sum.
//!
//! What it models: the threading shape of each sub-test class —
//! single-threaded integer/float loops, one compute thread per CPU
//! (AnTuTu's multi-threaded CPU tests), a Dalvik-like runtime test with
//! garbage-collector helpers, a multitasking test of four app threads that
//! compute in bursts and block briefly, a single-threaded RAM-operation test
//! and a four-thread RAM-speed test (streams through the bandwidth model),
//! and storage/database I/O as short compute between device waits.
//! Background: a compositor (60 Hz), a system server (30 Hz) and a sensor
//! thread (125 Hz), each with a short burst per period.
//!
//! What it leaves out: the GPU tests (no GPU model: the published AnTuTu
//! total includes them, so only the direction of its change is
//! comparable), the exact AnTuTu kernels and weights (every amount and
//! weight here is an ESTIMATE of the class's shape, equal weights), DVFS.

use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// Parameters of `mobile:cpus=N,scale=S`.
#[derive(Clone, Debug, PartialEq)]
pub struct MobileParams {
    /// Threads of the multi-threaded CPU test (AnTuTu uses one per CPU).
    pub cpus: u32,
    /// Multiplies every sub-test's amount of work (1 = the default run).
    pub scale: u32,
}

/// Keys `mobile:` accepts.
pub const KEYS: &[&str] = &["cpus", "scale"];

impl MobileParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(MobileParams {
            cpus: s.get_u64("cpus", 8, 1, 1024)? as u32,
            scale: s.get_u64("scale", 1, 1, 1000)? as u32,
        })
    }
}

/// One sub-test: `threads` copies of `body`, repeated `loops` times each.
/// `ideal_ns` is its elapsed time with every thread alone on a
/// capacity-1024 CPU (compute only): the score normaliser.
struct SubTest {
    name: &'static str,
    threads: u32,
    loops: u32,
    body: Vec<Step>,
    ideal_ns: u64,
}

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// Sub-test names, in run order (metric `score_NAME`).
pub const TESTS: &[&str] = &[
    "cpu_single",
    "cpu_multi",
    "runtime",
    "multitask",
    "ram_operation",
    "ram_speed",
    "io",
];

/// Every sub-test's amounts (ESTIMATES of each class's shape; ×scale).
fn tests(p: &MobileParams) -> Vec<SubTest> {
    let s = p.scale;
    vec![
        // Integer and float loops on one thread.
        SubTest {
            name: "cpu_single",
            threads: 1,
            loops: 20 * s,
            body: vec![Step::Compute { work_ns: 10 * MS }],
            ideal_ns: 200 * MS * s as u64,
        },
        // One compute thread per CPU, equal shares, the test ends with the last.
        SubTest {
            name: "cpu_multi",
            threads: p.cpus,
            loops: 20 * s,
            body: vec![Step::Compute { work_ns: 10 * MS }],
            ideal_ns: 200 * MS * s as u64,
        },
        // Dalvik-like runtime: a mutator and two GC helpers that wake often.
        SubTest {
            name: "runtime",
            threads: 3,
            loops: 40 * s,
            body: vec![
                Step::Compute { work_ns: 3 * MS },
                Step::Sleep { ns: 2 * MS },
            ],
            ideal_ns: 200 * MS * s as u64,
        },
        // Four app threads computing in bursts and blocking briefly.
        SubTest {
            name: "multitask",
            threads: 4,
            loops: 50 * s,
            body: vec![Step::Compute { work_ns: 3 * MS }, Step::Sleep { ns: MS }],
            ideal_ns: 200 * MS * s as u64,
        },
        // RAM operation: compute on data then move a block.
        SubTest {
            name: "ram_operation",
            threads: 1,
            loops: 40 * s,
            body: vec![
                Step::Compute { work_ns: 2 * MS },
                Step::Memory { bytes: 4 << 20 },
            ],
            ideal_ns: 80 * MS * s as u64,
        },
        // RAM speed: four streams.
        SubTest {
            name: "ram_speed",
            threads: 4,
            loops: 8 * s,
            body: vec![Step::Memory { bytes: 16 << 20 }],
            ideal_ns: 40 * MS * s as u64,
        },
        // Storage and database I/O: short compute between device waits.
        SubTest {
            name: "io",
            threads: 1,
            loops: 200 * s,
            body: vec![
                Step::Compute { work_ns: 300 * US },
                Step::Sleep { ns: 700 * US },
            ],
            ideal_ns: 200 * MS * s as u64,
        },
    ]
}

/// Background services: (name, period, burst), ESTIMATES of a phone's idle
/// system activity.
const SERVICES: &[(&str, u64, u64)] = &[
    ("surfaceflinger", 16_667 * US, 1_500 * US),
    ("system_server", 33_333 * US, 3 * MS),
    ("sensors", 8 * MS, 300 * US),
];

const DONE: u32 = 0;
const STOP: u32 = 1;
/// Marks: sub-test `i` starts at tag `2i` and ends at `2i + 1`.
pub fn tag_start(i: usize) -> u32 {
    2 * i as u32
}

/// Template 0 is the driver; then the services; then one template per sub-test.
pub fn build(p: &MobileParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let tests = tests(p);
    let first_test = 1 + SERVICES.len() as u32;
    let mut driver = Vec::new();
    for i in 0..SERVICES.len() as u32 {
        driver.push(Step::Spawn { template: 1 + i });
    }
    let mut templates = vec![];
    for (i, t) in tests.iter().enumerate() {
        driver.push(Step::Mark { tag: tag_start(i) });
        for _ in 0..t.threads {
            driver.push(Step::Spawn {
                template: first_test + i as u32,
            });
        }
        // Join: one post per finished thread.
        let at = driver.len() as u32;
        driver.push(Step::SemWait { sem: DONE });
        driver.push(Step::Loop {
            start: at,
            count: t.threads,
            slot: 0,
        });
        driver.push(Step::Mark {
            tag: tag_start(i) + 1,
        });
    }
    // Raise the stop flag for the services, then end.
    let end = driver.len() as u32 + 1;
    driver.push(Step::Grab {
        counter: STOP,
        limit: 1,
        exit_to: end,
    });
    driver.push(Step::Exit);
    templates.push(ThreadTemplate {
        name: "antutu".into(),
        nice: 0,
        idle_policy: false,
        affinity,
        steps: driver,
    });
    for (i, &(name, period_ns, burst_ns)) in SERVICES.iter().enumerate() {
        templates.push(ThreadTemplate {
            name: name.into(),
            nice: 0,
            idle_policy: false,
            affinity: None,
            steps: vec![
                Step::Timer {
                    id: i as u32,
                    period_ns,
                    absolute: true,
                },
                Step::Compute { work_ns: burst_ns },
                Step::TestCounter {
                    counter: STOP,
                    below: 1,
                    else_to: 4,
                },
                Step::Loop {
                    start: 0,
                    count: u32::MAX,
                    slot: 0,
                },
                Step::Exit,
            ],
        });
    }
    for t in &tests {
        let mut steps = t.body.clone();
        steps.push(Step::Loop {
            start: 0,
            count: t.loops,
            slot: 0,
        });
        steps.push(Step::SemPost { sem: DONE });
        steps.push(Step::Exit);
        templates.push(ThreadTemplate {
            name: format!("antutu-{}", t.name),
            nice: 0,
            idle_policy: false,
            affinity: None,
            steps,
        });
    }
    WorkloadSpec {
        name: format!("mobile:cpus={},scale={}", p.cpus, p.scale),
        templates,
        initial: vec![0],
        sync: vec![SyncObject::Semaphore { initial: 0 }, SyncObject::Counter],
        mem_node: None,
        max_time_ns: 3_600_000_000_000,
    }
}

/// Per-test scores (1000 × ideal / elapsed) and their sum, from the
/// driver's marks `(tag, time)`.
pub fn scores(p: &MobileParams, driver_marks: &[(u32, u64)]) -> Option<Vec<(String, f64)>> {
    let mut out = Vec::new();
    let mut total = 0.0;
    for (i, t) in tests(p).iter().enumerate() {
        let at = |tag: u32| driver_marks.iter().find(|m| m.0 == tag).map(|m| m.1);
        let dt = at(tag_start(i) + 1)?.checked_sub(at(tag_start(i))?)?;
        if dt == 0 {
            return None;
        }
        let s = 1000.0 * t.ideal_ns as f64 / dt as f64;
        total += s;
        out.push((format!("score_{}", t.name), s));
    }
    out.insert(0, ("score".into(), total));
    Some(out)
}

/// The benchmark's result screen.
pub fn report(p: &MobileParams, scores: &[(String, f64)]) -> String {
    let mut s = format!(
        "mixed mobile benchmark (AnTuTu-5-like, simulated, {} CPU threads, scale {})\n",
        p.cpus, p.scale
    );
    if scores.is_empty() {
        s.push_str("(incomplete run: no score)\n");
        return s;
    }
    for (k, v) in scores {
        s.push_str(&format!("{:<22}{:>8.0}\n", k, v));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn structure_and_scores() {
        let p = MobileParams::from_spec(&parse_spec("mobile:cpus=8").unwrap()).unwrap();
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 1 + SERVICES.len() + TESTS.len());
        for (i, name) in TESTS.iter().enumerate() {
            assert_eq!(
                spec.templates[1 + SERVICES.len() + i].name,
                format!("antutu-{name}")
            );
        }
        // Every sub-test at exactly its ideal time scores 1000.
        let mut marks = Vec::new();
        let mut now = 0;
        for (i, t) in tests(&p).iter().enumerate() {
            marks.push((tag_start(i), now));
            now += t.ideal_ns;
            marks.push((tag_start(i) + 1, now));
        }
        let s = scores(&p, &marks).unwrap();
        assert_eq!(s[0].0, "score");
        assert!((s[0].1 - 1000.0 * TESTS.len() as f64).abs() < 1e-6);
        assert!(report(&p, &s).contains("score_ram_speed"));
        assert!(scores(&p, &marks[..3]).is_none());
        assert!(MobileParams::from_spec(&parse_spec("mobile:scale=0").unwrap()).is_err());
    }
}
