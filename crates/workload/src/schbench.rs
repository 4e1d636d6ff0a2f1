//! schbench (Chris Mason, the 2023 rewrite).
//!
//! What it models: `message_threads` messengers, each with `workers` worker
//! threads. A worker puts itself on its messenger's list, futex-wakes the
//! messenger and futex-waits; the messenger wakes every listed worker (one
//! broadcast, each woken worker stamped with the wake time) and sleeps
//! again. The worker records its **wakeup latency** (now − wake time), then
//! serves a fake request: `usleep(sleep_us)`, then `operations` naive matrix
//! multiplies on a `footprint_kb` working set under a **per-CPU mutex**
//! (lock_this_cpu(): the lock of the CPU the worker runs on, taken in a
//! trylock spin that never sleeps, and given back for the new CPU's if the
//! worker migrated while it spun; preemption or migration in the middle of a
//! request makes the next user of that CPU's lock spin), and records
//! the **request latency** (from its wakeup to the end of the request).
//! Completed requests per one-second interval give the **RPS** samples.
//! The report follows schbench's: percentiles 50/90/*99/99.9 with min and
//! max for both latencies, RPS percentiles 20/*50/90 and the average RPS;
//! latencies are differences of µs-truncated gettimeofday() stamps, and a
//! zero one is dropped, as schbench does.
//!
//! What it leaves out: the cache footprint of the matrices (the multiply is
//! pure compute, [`MAC_PS`] per multiply-add, ESTIMATE), the messenger's
//! per-waiter wake cost beyond [`WAKE_ALL_NS`], schbench's log-linear
//! histogram buckets (percentiles here are exact), the `sched delay` line,
//! fixed-RPS (`-R`), auto-RPS (`-A`) and pipe (`-p`) modes, and zeroing (`-z`).
//!
//! `legacy=1` runs the pre-2023 schbench instead (as in Srikar Dronamraju's
//! 2019 fork, the S2 author's; defaults `-m 2 -t 16 -s 30000 -c 30000`, the
//! code's values, where the help text says 10000): a worker spins
//! `cputime_us` of wall time, puts itself on its messenger's list, posts the
//! messenger and waits; the messenger, woken by the first post, sleeps
//! `sleep_us` plus a jitter of up to a quarter of it, then wakes every worker
//! on its list (one timestamp for all) and waits for the next post. A worker
//! records its wakeup latency when it runs. Its report is the single
//! `Latency percentiles (usec)` table (50/75/90/95/*99/99.5/99.9, min, max);
//! metrics `p50`..`p99_9`. Upstream's 2021 version adds a messenger spin
//! after each post (`message_cputime_us`, `-C`, 30 ms there; 0 here) and a
//! 5 s warm-up (`warmup_s`).

use crate::hist::Hist;
use crate::marks::{MarkFold, PerTask};
use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// Cost of one multiply-add of the naive matrix multiply, picoseconds on a
/// capacity-1024 CPU (ESTIMATE: ~4 ms requests at the defaults, the order of
/// published schbench request latencies on servers).
pub const MAC_PS: u64 = 700;
/// The messenger's list splice and futex wakes per round, ns (ESTIMATE).
pub const WAKE_ALL_NS: u64 = 1_000;
/// Per-CPU locks: one mutex per possible CPU.
const PER_CPU_LOCKS: u32 = 512;

/// Mark tags of a worker.
pub const TAG_WOKEN: u32 = 0;
pub const TAG_AWAKE: u32 = 1;
pub const TAG_DONE: u32 = 2;

/// schbench parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SchbenchParams {
    pub message_threads: u32,
    /// Workers per message thread; 0 = schbench's default ceil(ncpus / m),
    /// resolved by [`SchbenchParams::resolve`].
    pub workers: u32,
    pub runtime_s: u32,
    pub warmup_s: u32,
    pub sleep_us: u64,
    pub operations: u32,
    pub footprint_kb: u64,
    /// The per-CPU request lock (`-L` turns it off).
    pub lock: bool,
    /// The pre-2023 schbench: workers think for `cputime_us` of wall time
    /// and post their messenger, which sleeps `sleep_us` (plus jitter) and
    /// wakes them; one latency table.
    pub legacy: bool,
    /// Legacy mode's think time per loop (`-c`), µs.
    pub cputime_us: u64,
    /// Legacy mode's messenger spin after a post (upstream's 2021 `-C`;
    /// Srikar's 2019 fork has none), µs.
    pub message_cputime_us: u64,
}

/// Keys `schbench:` accepts.
pub const KEYS: &[&str] = &[
    "message_threads",
    "workers",
    "runtime_s",
    "warmup_s",
    "sleep_us",
    "operations",
    "footprint_kb",
    "lock",
    "legacy",
    "cputime_us",
    "message_cputime_us",
];

impl SchbenchParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        let legacy = s.get_u64("legacy", 0, 0, 1)? == 1;
        Ok(SchbenchParams {
            message_threads: s.get_u64("message_threads", if legacy { 2 } else { 1 }, 1, 256)?
                as u32,
            workers: s.get_u64("workers", if legacy { 16 } else { 0 }, 0, 4096)? as u32,
            runtime_s: s.get_u64("runtime_s", 30, 1, 3600)? as u32,
            warmup_s: s.get_u64("warmup_s", 0, 0, 3600)? as u32,
            // The pre-2023 code's defaults are 30 ms each (its help text
            // says 10 ms).
            sleep_us: s.get_u64("sleep_us", if legacy { 30_000 } else { 100 }, 0, 10_000_000)?,
            legacy,
            cputime_us: s.get_u64("cputime_us", 30_000, 0, 10_000_000)?,
            message_cputime_us: s.get_u64("message_cputime_us", 0, 0, 10_000_000)?,
            operations: s.get_u64("operations", 5, 0, 10_000)? as u32,
            footprint_kb: s.get_u64("footprint_kb", 256, 1, 1 << 20)?,
            lock: s.get_u64("lock", 1, 0, 1)? == 1,
        })
    }

    /// Fills the default worker count for a machine of `ncpus` CPUs.
    pub fn resolve(&mut self, ncpus: usize) {
        if self.workers == 0 {
            self.workers = (ncpus as u32).div_ceil(self.message_threads).max(1);
        }
    }

    /// Work of one request's matrix multiplies, ns on a capacity-1024 CPU.
    pub fn request_work_ns(&self) -> u64 {
        // Three square matrices of u64 in the footprint.
        let elems = self.footprint_kb * 1024 / 3 / 8;
        let n = (elems as f64).sqrt() as u64;
        n * n * n * self.operations as u64 * MAC_PS / 1000
    }
}

/// Builds the programs: templates 0..m are messengers, then the workers.
/// Sync ids: messenger i has semaphore 2i and condition 2i+1; the per-CPU
/// locks follow.
pub fn build(p: &SchbenchParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let m = p.message_threads.max(1);
    let workers = match p.workers {
        0 => affinity.map_or(8, |a| a.weight()).div_ceil(m).max(1),
        w => w,
    };
    let mut sync = Vec::new();
    for _ in 0..m {
        sync.push(SyncObject::Semaphore { initial: 0 });
        sync.push(SyncObject::Cond);
    }
    let first_lock = sync.len() as u32;
    if p.lock {
        sync.extend((0..PER_CPU_LOCKS).map(|_| SyncObject::Mutex));
    }
    let mut templates = Vec::new();
    if p.legacy {
        legacy(p, m, workers, affinity, &mut templates);
    }
    for i in 0..m {
        if p.legacy {
            break;
        }
        templates.push(ThreadTemplate {
            idle_policy: false,
            name: format!("schbench-msg{i}"),
            nice: 0,
            affinity,
            steps: vec![
                Step::SemWait { sem: 2 * i },
                Step::Broadcast { cond: 2 * i + 1 },
                Step::Compute {
                    work_ns: WAKE_ALL_NS,
                },
                Step::Loop {
                    start: 0,
                    count: u32::MAX,
                    slot: 0,
                },
            ],
        });
    }
    for i in 0..m {
        if p.legacy {
            break;
        }
        for w in 0..workers {
            let mut s = vec![
                Step::SemPost { sem: 2 * i },
                Step::Wait {
                    cond: 2 * i + 1,
                    mutex: None,
                },
                Step::MarkWoken { tag: TAG_WOKEN },
                Step::Mark { tag: TAG_AWAKE },
            ];
            if p.sleep_us > 0 {
                // usleep(): an hrtimer with the task's timer slack.
                s.push(Step::Nanosleep {
                    ns: p.sleep_us * 1000,
                });
            }
            if p.lock {
                s.push(Step::LockPerCpu {
                    first: first_lock,
                    count: PER_CPU_LOCKS,
                });
            }
            s.push(Step::Compute {
                work_ns: p.request_work_ns(),
            });
            if p.lock {
                s.push(Step::UnlockPerCpu);
            }
            s.push(Step::Mark { tag: TAG_DONE });
            s.push(Step::Loop {
                start: 0,
                count: u32::MAX,
                slot: 0,
            });
            templates.push(ThreadTemplate {
                idle_policy: false,
                name: format!("schbench-w{i}.{w}"),
                nice: 0,
                affinity,
                steps: s,
            });
        }
    }
    WorkloadSpec {
        name: format!(
            "schbench:message_threads={m},workers={workers},runtime_s={}",
            p.runtime_s
        ),
        initial: (0..templates.len() as u32).collect(),
        templates,
        sync,
        mem_node: None,
        max_time_ns: (p.warmup_s as u64 + p.runtime_s as u64) * 1_000_000_000,
    }
}

/// Pre-2023 schbench (run_msg_thread() and worker_thread() of Srikar
/// Dronamraju's fork, github srikard/schbench, Dec 2019): messenger i wakes
/// every worker on its list (condition 2i+1, one timestamp for all), waits
/// until a worker posts its futex word (semaphore 2i), optionally spins
/// `message_cputime_us` (upstream's 2021 `-C`), and sleeps `sleep_us` plus
/// a jitter of up to a quarter of it. A worker spins `cputime_us` of wall
/// time (a gettimeofday busy loop), puts itself on the list, posts the
/// messenger and waits; it records its wakeup latency when it runs again.
/// The messenger's futex word is semaphore 2i: a post before its wait is
/// kept (fwait() returns at once), a post before the top of its loop is
/// lost (the word is reset to BLOCKED there: `SemReset`).
fn legacy(
    p: &SchbenchParams,
    m: u32,
    workers: u32,
    affinity: Option<CpuMask>,
    templates: &mut Vec<ThreadTemplate>,
) {
    for i in 0..m {
        let mut steps = vec![
            // td->futex = FUTEX_BLOCKED.
            Step::SemReset { sem: 2 * i },
            Step::Broadcast { cond: 2 * i + 1 },
            Step::Compute {
                work_ns: WAKE_ALL_NS,
            },
            // fwait() until a worker's fpost().
            Step::SemWait { sem: 2 * i },
        ];
        if p.message_cputime_us > 0 {
            steps.push(Step::RunWall {
                ns: p.message_cputime_us * 1000,
            });
        }
        if p.sleep_us > 0 {
            // usleep(sleeptime + rand_r() % (sleeptime / 4)).
            steps.push(Step::NanosleepJitter {
                ns: p.sleep_us * 1000,
                jitter_ns: p.sleep_us / 4 * 1000,
            });
        }
        steps.push(Step::Loop {
            start: 0,
            count: u32::MAX,
            slot: 0,
        });
        templates.push(ThreadTemplate {
            idle_policy: false,
            name: format!("schbench-msg{i}"),
            nice: 0,
            affinity,
            steps,
        });
    }
    for i in 0..m {
        for w in 0..workers {
            templates.push(ThreadTemplate {
                idle_policy: false,
                name: format!("schbench-w{i}.{w}"),
                nice: 0,
                affinity,
                steps: vec![
                    // usec_spin(cputime).
                    Step::RunWall {
                        ns: p.cputime_us * 1000,
                    },
                    Step::Mark { tag: TAG_DONE },
                    // msg_and_wait(): on the list, fpost() the messenger,
                    // fwait().
                    Step::SemPost { sem: 2 * i },
                    Step::Wait {
                        cond: 2 * i + 1,
                        mutex: None,
                    },
                    Step::MarkWoken { tag: TAG_WOKEN },
                    Step::Mark { tag: TAG_AWAKE },
                    Step::Loop {
                        start: 0,
                        count: u32::MAX,
                        slot: 0,
                    },
                ],
            });
        }
    }
}

/// The samples of a run, as exact histograms (schbench itself keeps
/// histograms; these lose nothing).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    /// Wakeup latencies, µs.
    pub wakeup_us: Hist,
    /// Request latencies, µs.
    pub request_us: Hist,
    /// Completed requests per one-second interval.
    pub rps: Hist,
}

/// What schbench records for an interval from `start_ns` to `end_ns`:
/// tvdelta() of two gettimeofday() stamps, each a time truncated to whole
/// µs (simulated time 0 stands for a whole second of the wall clock), so
/// the delta is the difference of the truncated stamps, not the truncated
/// difference. schbench drops a zero delta (msg_and_wait()'s and
/// worker_thread()'s `if (delta > 0) add_lat(...)`): `None`.
pub fn gtod_delta_us(start_ns: u64, end_ns: u64) -> Option<u64> {
    Some((end_ns / 1000).saturating_sub(start_ns / 1000)).filter(|&d| d > 0)
}

/// Collects samples from worker marks `(task, tag, time)` in recording
/// order; samples before the warmup end are dropped, and so are latencies
/// of 0 µs, as schbench drops them ([`gtod_delta_us`]).
pub fn samples(p: &SchbenchParams, marks: &[(u32, u32, u64)]) -> Samples {
    Sampler::new(p).fold(marks).samples()
}

/// [`samples`] one mark at a time, as the run makes them: memory bounded
/// by the number of workers and of distinct latencies, however long the run.
#[derive(Clone, Debug)]
pub struct Sampler {
    warm_ns: u64,
    /// Per task: last woken stamp and last request start.
    woken: PerTask,
    start: PerTask,
    per_sec: Vec<u64>,
    wakeup_us: Hist,
    request_us: Hist,
}

impl Sampler {
    pub fn new(p: &SchbenchParams) -> Sampler {
        Sampler {
            warm_ns: p.warmup_s as u64 * 1_000_000_000,
            woken: PerTask::default(),
            start: PerTask::default(),
            per_sec: vec![0; p.runtime_s as usize],
            wakeup_us: Hist::default(),
            request_us: Hist::default(),
        }
    }

    /// The samples so far.
    pub fn samples(&self) -> Samples {
        Samples {
            wakeup_us: self.wakeup_us.clone(),
            request_us: self.request_us.clone(),
            rps: self.per_sec.iter().copied().collect(),
        }
    }
}

impl MarkFold for Sampler {
    /// One worker mark.
    fn mark(&mut self, t: u32, tag: u32, at: u64) {
        match tag {
            TAG_WOKEN => self.woken.set(t, at),
            TAG_AWAKE => {
                if let Some(w) = self.woken.get(t) {
                    if w >= self.warm_ns {
                        if let Some(d) = gtod_delta_us(w, at) {
                            self.wakeup_us.add(d);
                        }
                    }
                }
                self.start.set(t, at);
            }
            TAG_DONE => {
                if let Some(b) = self.start.get(t) {
                    if b >= self.warm_ns {
                        if let Some(d) = gtod_delta_us(b, at) {
                            self.request_us.add(d);
                        }
                    }
                }
                if at >= self.warm_ns {
                    let k = ((at - self.warm_ns) / 1_000_000_000) as usize;
                    if let Some(c) = self.per_sec.get_mut(k) {
                        *c += 1;
                    }
                }
            }
            _ => {}
        }
    }
}
/// Latency percentiles reported as metrics.
pub const LAT_PCTS: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9];
/// RPS percentiles.
pub const RPS_PCTS: [f64; 3] = [20.0, 50.0, 90.0];

/// Metrics with schbench's JSON keys (`wakeup_latency_pct99.0`, ...).
pub fn metrics(p: &SchbenchParams, s: &Samples) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for (name, v) in [
        ("wakeup_latency", &s.wakeup_us),
        ("request_latency", &s.request_us),
    ] {
        if v.is_empty() {
            continue;
        }
        for q in LAT_PCTS {
            out.push((
                format!("{name}_pct{q:.1}"),
                v.percentile(q).unwrap_or(0) as f64,
            ));
        }
        out.push((format!("{name}_min"), v.min().unwrap_or(0) as f64));
        out.push((format!("{name}_max"), v.max().unwrap_or(0) as f64));
    }
    if !s.rps.is_empty() {
        for q in RPS_PCTS {
            out.push((
                format!("rps_pct{q:.1}"),
                s.rps.percentile(q).unwrap_or(0) as f64,
            ));
        }
        out.push((
            "average_rps".into(),
            s.rps.sum() as f64 / s.rps.len() as f64,
        ));
    }
    // The pre-2023 table's names (wakeup latency), as mmtests reports them.
    if !s.wakeup_us.is_empty() {
        for (q, name) in LAT_PCTS
            .iter()
            .zip(["p50", "p75", "p90", "p95", "p99", "p99_5", "p99_9"])
        {
            out.push((name.into(), s.wakeup_us.percentile(*q).unwrap_or(0) as f64));
        }
    }
    out.push(("runtime".into(), p.runtime_s as f64));
    out
}

fn table(
    out: &mut String,
    title: &str,
    unit: &str,
    runtime: u32,
    v: &Hist,
    pcts: &[f64],
    star: f64,
) {
    out.push_str(&format!(
        "{title} percentiles ({unit}) runtime {runtime} (s) ({} total samples)\n",
        v.len()
    ));
    let mut below = 0u64;
    for &q in pcts {
        let val = v.percentile(q).unwrap_or(0);
        let upto = v.count_le(val);
        let mark = if q == star { "* " } else { "  " };
        out.push_str(&format!(
            "\t{mark}{q:.1}th: {val:<10} ({} samples)\n",
            upto - below.min(upto)
        ));
        below = upto;
    }
    out.push_str(&format!(
        "\t  min={}, max={}\n",
        v.min().unwrap_or(0),
        v.max().unwrap_or(0)
    ));
}

/// schbench's final report.
pub fn report(p: &SchbenchParams, s: &Samples) -> String {
    let mut out = String::new();
    if p.legacy {
        out.push_str("Latency percentiles (usec)\n");
        for q in LAT_PCTS {
            let v = s.wakeup_us.percentile(q).unwrap_or(0);
            let star = if q == 99.0 { "*" } else { "" };
            out.push_str(&format!("\t{star}{q:.4}th: {v}\n"));
        }
        out.push_str(&format!(
            "\tmin={}, max={}\n",
            s.wakeup_us.min().unwrap_or(0),
            s.wakeup_us.max().unwrap_or(0)
        ));
        return out;
    }
    let pcts = [50.0, 90.0, 99.0, 99.9];
    table(
        &mut out,
        "Wakeup Latencies",
        "usec",
        p.runtime_s,
        &s.wakeup_us,
        &pcts,
        99.0,
    );
    table(
        &mut out,
        "Request Latencies",
        "usec",
        p.runtime_s,
        &s.request_us,
        &pcts,
        99.0,
    );
    table(
        &mut out,
        "RPS",
        "requests",
        p.runtime_s,
        &s.rps,
        &RPS_PCTS,
        50.0,
    );
    out.push_str(&format!(
        "average rps: {:.2}\n",
        s.rps.sum() as f64 / s.rps.len().max(1) as f64
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn percentiles_follow_schbench() {
        let pct = |v: &[u64], p: f64| v.iter().copied().collect::<Hist>().percentile(p);
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(pct(&v, 50.0), Some(50));
        assert_eq!(pct(&v, 99.0), Some(99));
        assert_eq!(pct(&v, 99.9), Some(100));
        assert_eq!(pct(&v, 0.0), Some(1));
        assert_eq!(pct(&[7], 99.9), Some(7));
        assert_eq!(pct(&[], 50.0), None);
        let v = vec![1, 1, 1, 2, 10];
        assert_eq!(pct(&v, 50.0), Some(1));
        assert_eq!(pct(&v, 90.0), Some(10));
    }

    #[test]
    fn samples_pair_marks_per_worker() {
        let p = SchbenchParams::from_spec(&parse_spec("schbench:runtime_s=2,workers=2").unwrap())
            .unwrap();
        // Two workers interleaved: woken at 1000, awake 4000 → 3 µs; request
        // 4000..1_004_000 → 1000 µs; the other 2 µs / 500 µs.
        let marks = vec![
            (5, TAG_WOKEN, 1_000),
            (6, TAG_WOKEN, 1_000),
            (6, TAG_AWAKE, 3_000),
            (5, TAG_AWAKE, 4_000),
            (6, TAG_DONE, 503_000),
            (5, TAG_DONE, 1_004_000),
            (5, TAG_WOKEN, 1_100_000),
        ];
        let s = samples(&p, &marks);
        assert_eq!(s.wakeup_us, [2, 3].into_iter().collect());
        assert_eq!(s.request_us, [500, 1000].into_iter().collect());
        // Both requests complete in the first second.
        assert_eq!(s.rps, [0, 2].into_iter().collect());
        let m = metrics(&p, &s);
        let get = |k: &str| m.iter().find(|x| x.0 == k).unwrap().1;
        assert_eq!(get("wakeup_latency_pct99.0"), 3.0);
        assert_eq!(get("request_latency_pct50.0"), 500.0);
        assert_eq!(get("average_rps"), 1.0);
        let r = report(&p, &s);
        assert!(r.starts_with(
            "Wakeup Latencies percentiles (usec) runtime 2 (s) (2 total samples)\n\t  50.0th: 2          (1 samples)\n"
        ), "{r}");
        assert!(r.contains("\t* 99.0th: 3 "), "{r}");
        assert!(r.contains("average rps: 1.00"), "{r}");
    }

    /// Latencies are differences of µs-truncated gettimeofday() stamps, and
    /// a zero one is not a sample (msg_and_wait(): `if (delta > 0)`).
    #[test]
    fn latencies_are_deltas_of_truncated_stamps_without_zeros() {
        let p = SchbenchParams::from_spec(&parse_spec("schbench:runtime_s=2,workers=1").unwrap())
            .unwrap();
        assert_eq!(gtod_delta_us(1_999, 2_001), Some(1));
        assert_eq!(gtod_delta_us(1_000, 1_999), None);
        assert_eq!(gtod_delta_us(1_001, 3_000), Some(2));
        let marks = vec![
            // 2 ns across a µs boundary: 1 µs (a floored difference: 0).
            (5, TAG_WOKEN, 1_999),
            (5, TAG_AWAKE, 2_001),
            (5, TAG_DONE, 9_000),
            // 999 ns inside one µs: dropped (a floored difference: a 0).
            (5, TAG_WOKEN, 20_000),
            (5, TAG_AWAKE, 20_999),
            (5, TAG_DONE, 130_500),
        ];
        let s = samples(&p, &marks);
        assert_eq!(s.wakeup_us, [1].into_iter().collect());
        assert_eq!(s.request_us, [7, 110].into_iter().collect());
        // Every completed request still counts towards the RPS.
        assert_eq!(s.rps, [0, 2].into_iter().collect());
    }

    #[test]
    fn legacy_mode_has_the_old_defaults_and_table() {
        let p = SchbenchParams::from_spec(&parse_spec("schbench:legacy=1,runtime_s=1").unwrap())
            .unwrap();
        assert_eq!(
            (p.message_threads, p.workers, p.sleep_us, p.cputime_us),
            (2, 16, 30_000, 30_000)
        );
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 2 + 32);
        // The messenger waits for a worker's post, then sleeps with jitter;
        // the worker spins, posts its messenger and waits on the list.
        let msg = &spec.templates[0].steps;
        assert_eq!(msg[0], Step::SemReset { sem: 0 });
        assert_eq!(msg[3], Step::SemWait { sem: 0 });
        assert_eq!(
            msg[4],
            Step::NanosleepJitter {
                ns: 30_000_000,
                jitter_ns: 7_500_000
            }
        );
        let w = &spec.templates[2].steps;
        assert_eq!(w[0], Step::RunWall { ns: 30_000_000 });
        assert_eq!(w[2], Step::SemPost { sem: 0 });
        assert_eq!(
            w[3],
            Step::Wait {
                cond: 1,
                mutex: None
            }
        );
        assert_eq!(spec.sync[0], SyncObject::Semaphore { initial: 0 });
        let s = Samples {
            wakeup_us: (1..=1000).collect(),
            ..Samples::default()
        };
        let r = report(&p, &s);
        assert!(
            r.starts_with("Latency percentiles (usec)\n\t50.0000th: 500\n"),
            "{r}"
        );
        assert!(r.contains("\t*99.0000th: 990\n"), "{r}");
        let m = metrics(&p, &s);
        assert!(m.contains(&("p99_5".to_string(), 995.0)));
    }

    #[test]
    fn default_request_is_a_few_ms_and_workers_resolve() {
        let mut p =
            SchbenchParams::from_spec(&parse_spec("schbench:message_threads=2").unwrap()).unwrap();
        let w = p.request_work_ns();
        assert!((2_000_000..8_000_000).contains(&w), "{w}");
        p.resolve(9);
        assert_eq!(p.workers, 5);
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 2 + 10);
    }
}
