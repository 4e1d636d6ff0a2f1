//! `perf bench sched pipe`, N instances at once.
//!
//! What it models: each instance is two processes joined by two pipes, as
//! bench_sched_pipe() sets them up. The shell starts each instance: a
//! process forked from the launcher that execs perf (exec balancing places
//! it), task A. A starts its timer, forks B (fork balancing from A's CPU:
//! the child is placed by sched_balance_find_dst_group() with A already
//! running), and the two ping-pong: A writes an int to pipe 1 and reads the
//! answer from pipe 2, B reads pipe 1 and writes pipe 2, `loops` times. That
//! is worker_thread() as perf had it when S2 was measured (2021: the
//! thread with nr 0 reads first); a later perf (7.3's tools/perf) has both
//! sides write first, so each write finds its reader running more often:
//! `both_write=1` models that.
//! The pipes follow fs/pipe.c (`SyncObject::Pipe`: 16 page slots; a
//! write into the empty pipe wakes its blocked reader with WF_SYNC), so
//! every write wakes the blocked peer with WF_SYNC and the pair ping-pongs
//! through the wakeup path (wake affine, select_idle_sibling). perf times
//! the whole exchange in A and prints `Total time`, `usecs/op` and
//! `ops/sec`; with N instances (the power10 experiment runs N copies at
//! once) the metric is the mean usecs/op over the instances.
//!
//! What it leaves out: the pipe code's cost beyond a per-call CPU cost
//! ([`SYSCALL_NS`], ESTIMATE), the cache-line transfer of the pipe buffer,
//! perf's set-up between exec and the benchmark, the cost of fork itself,
//! and the final waitpid() (A stops its timer after its last read; B exits
//! right after its last write).

use crate::program::{
    Step, SyncObject, ThreadTemplate, WorkloadSpec, PAGE_BYTES, PIPE_DEF_BUFFERS,
};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// CPU cost of one 4-byte pipe read or write, ns (ESTIMATE).
pub const SYSCALL_NS: u64 = 700;

/// Parameters of `pipe:instances=N,loops=L`.
#[derive(Clone, Debug, PartialEq)]
pub struct PipeParams {
    pub instances: u32,
    /// Round trips per instance (perf's `-l`; perf defaults to 1000000, we to
    /// 20000 to keep runs short — usecs/op is a per-op mean either way).
    pub loops: u32,
    /// Both processes write first (a later perf, 7.3's tools/perf), not only A.
    pub both_write: bool,
}

/// Keys `pipe:` accepts.
pub const KEYS: &[&str] = &["instances", "loops", "both_write"];

impl PipeParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(PipeParams {
            instances: s.get_u64("instances", 1, 1, 4096)? as u32,
            loops: s.get_u64("loops", 20_000, 1, 100_000_000)? as u32,
            both_write: s.get_u64("both_write", 0, 0, 1)? == 1,
        })
    }
}

/// Template 2i is instance i's A (it marks start/end and forks B), 2i+1 its B.
pub fn build(p: &PipeParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let mut templates = Vec::new();
    let mut sync = Vec::new();
    let call = Step::Compute {
        work_ns: SYSCALL_NS,
    };
    for i in 0..p.instances {
        let (p1, p2) = (2 * i, 2 * i + 1);
        for _ in 0..2 {
            sync.push(SyncObject::Pipe {
                buffers: PIPE_DEF_BUFFERS,
                page_bytes: PAGE_BYTES,
            });
        }
        // perf's parent side: exec'd by the shell, timer, fork, then the
        // write-first loop (bench_sched_pipe(), worker_thread() with nr 1).
        let a = vec![
            Step::Exec,
            Step::Mark { tag: 0 },
            Step::Spawn {
                template: 2 * i + 1,
            },
            call.clone(),
            Step::Send { chan: p1, bytes: 4 },
            Step::Recv { chan: p2, bytes: 4 },
            call.clone(),
            Step::Loop {
                start: 3,
                count: p.loops,
                slot: 0,
            },
            Step::Mark { tag: 1 },
            Step::Exit,
        ];
        // The forked child: the read-first loop (worker_thread() with nr 0),
        // or write-first like A's with `both_write`.
        let round = if p.both_write {
            vec![
                call.clone(),
                Step::Send { chan: p2, bytes: 4 },
                Step::Recv { chan: p1, bytes: 4 },
                call.clone(),
            ]
        } else {
            vec![
                Step::Recv { chan: p1, bytes: 4 },
                call.clone(),
                call.clone(),
                Step::Send { chan: p2, bytes: 4 },
            ]
        };
        let mut b = vec![Step::NewProcess];
        b.extend(round);
        b.extend([
            Step::Loop {
                start: 1,
                count: p.loops,
                slot: 0,
            },
            Step::Exit,
        ]);
        for (n, steps) in [("a", a), ("b", b)] {
            templates.push(ThreadTemplate {
                idle_policy: false,
                name: format!("sched-pipe-{i}{n}"),
                nice: 0,
                affinity,
                steps,
            });
        }
    }
    WorkloadSpec {
        name: if p.both_write {
            format!(
                "pipe:instances={},loops={},both_write=1",
                p.instances, p.loops
            )
        } else {
            format!("pipe:instances={},loops={}", p.instances, p.loops)
        },
        // The launcher forks the A tasks; each A forks its own B.
        initial: (0..p.instances).map(|i| 2 * i).collect(),
        templates,
        sync,
        mem_node: None,
        max_time_ns: 3_600_000_000_000,
    }
}

/// Each instance's usecs/op and total seconds, from marks `(template, tag,
/// time)`, in instance order.
pub fn instances(p: &PipeParams, marks: &[(u32, u32, u64)]) -> Option<Vec<(f64, f64)>> {
    (0..p.instances)
        .map(|i| {
            let tpl = 2 * i;
            let at = |tag| marks.iter().find(|m| m.0 == tpl && m.1 == tag).map(|m| m.2);
            let dt = at(1)?.checked_sub(at(0)?)? as f64;
            Some((dt / 1e3 / p.loops as f64, dt * 1e-9))
        })
        .collect()
}

/// Mean usecs/op over instances, from marks `(template, tag, time)`.
/// Returns (usecs/op, total seconds of the slowest instance).
pub fn usecs_per_op(p: &PipeParams, marks: &[(u32, u32, u64)]) -> Option<(f64, f64)> {
    let all = instances(p, marks)?;
    let sum: f64 = all.iter().map(|x| x.0).sum();
    let slowest = all.iter().map(|x| x.1).fold(0.0, f64::max);
    Some((sum / p.instances as f64, slowest))
}

/// (min, median, max) of the instances' usecs/op, as the S2 cover letter
/// reports them; the median of an even count is the mean of the middle two.
pub fn usecs_per_op_spread(p: &PipeParams, marks: &[(u32, u32, u64)]) -> Option<(f64, f64, f64)> {
    let mut us: Vec<f64> = instances(p, marks)?.into_iter().map(|x| x.0).collect();
    if us.is_empty() {
        return None;
    }
    us.sort_by(f64::total_cmp);
    let n = us.len();
    let median = if n % 2 == 1 {
        us[n / 2]
    } else {
        (us[n / 2 - 1] + us[n / 2]) / 2.0
    };
    Some((us[0], median, us[n - 1]))
}

/// perf's output (`perf bench sched pipe`), once for the mean instance.
pub fn report(p: &PipeParams, r: Option<(f64, f64)>) -> String {
    let mut s = format!(
        "# Running 'sched/pipe' benchmark ({} instance{}):\n# Executed {} pipe operations between two processes\n\n",
        p.instances,
        if p.instances == 1 { "" } else { "s" },
        p.loops
    );
    match r {
        Some((us, _)) => {
            let total = us * p.loops as f64 / 1e6;
            s.push_str(&format!("     Total time: {total:.3} [sec]\n\n"));
            s.push_str(&format!("     {us:>12.6} usecs/op\n"));
            s.push_str(&format!("     {:>12} ops/sec\n", (1e6 / us) as u64));
        }
        None => s.push_str("(incomplete run: no time)\n"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usecs_per_op_is_time_over_loops() {
        let p = PipeParams {
            instances: 2,
            loops: 1000,
            both_write: false,
        };
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 4);
        let marks = vec![(0, 0, 0), (2, 0, 0), (0, 1, 5_000_000), (2, 1, 7_000_000)];
        let (us, total) = usecs_per_op(&p, &marks).unwrap();
        assert!((us - 6.0).abs() < 1e-9);
        assert!((total - 0.007).abs() < 1e-12);
        assert_eq!(usecs_per_op_spread(&p, &marks), Some((5.0, 6.0, 7.0)));
        let r = report(&p, Some((us, total)));
        assert!(r.contains("6.000000 usecs/op"), "{r}");
        assert!(r.contains("166666 ops/sec"), "{r}");
    }

    /// The child reads first as perf did in 2021, or writes first with
    /// `both_write=1` as a later perf (7.3's tools/perf) does.
    #[test]
    fn the_child_reads_first_unless_both_write() {
        let first = |both: bool| {
            let p = PipeParams {
                instances: 1,
                loops: 10,
                both_write: both,
            };
            build(&p, None).templates[1]
                .steps
                .iter()
                .find(|s| matches!(s, Step::Send { .. } | Step::Recv { .. }))
                .cloned()
        };
        assert!(matches!(first(false), Some(Step::Recv { .. })));
        assert!(matches!(first(true), Some(Step::Send { .. })));
    }
}
