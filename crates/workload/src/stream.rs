//! STREAM (McCalpin, v5.10) as its OpenMP build runs it.
//!
//! The master thread forks the OpenMP team at the first parallel region, then
//! runs `iterations` passes of four kernels (Copy, Scale, Add, Triad). Each
//! kernel is a `#pragma omp parallel for` over static, contiguous chunks of the
//! arrays: the master releases the team (start barrier), every thread streams
//! its chunk, and the implicit end barrier makes the slowest thread set the time.
//! The master times each kernel around the region; STREAM reports
//! `Best Rate MB/s = 1e-6 · bytes / min_time` over passes 2..n (the first is
//! discarded), counting 16 bytes per element for Copy/Scale and 24 for Add/Triad
//! (write-allocate traffic is not counted; workloads.md section 4).
//!
//! What it leaves out: the per-element compute (STREAM is bandwidth-bound), TLB
//! effects, and the checktick/validation phases, which are untimed.

use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// Kernel names in STREAM's order.
pub const KERNELS: [&str; 4] = ["copy", "scale", "add", "triad"];
/// Bytes STREAM counts per array element for each kernel.
pub const BYTES_PER_ELEM: [u64; 4] = [16, 16, 24, 24];

/// libgomp's active wait before a thread sleeps on a barrier (GOMP_SPINCOUNT
/// 300000 pause iterations with OMP_WAIT_POLICY unset). ESTIMATE: ~1 ns per
/// iteration.
pub const GOMP_SPIN_NS: u64 = 300_000;

/// STREAM parameters (`stream:threads=N,size_mib=512,iterations=10`).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamParams {
    pub threads: u32,
    /// Total bytes of the three arrays in MiB (mmtests' STREAM_SIZE).
    pub size_mib: u64,
    /// NTIMES: passes over the four kernels (the first is discarded).
    pub iterations: u32,
}

impl Default for StreamParams {
    fn default() -> Self {
        StreamParams {
            threads: 1,
            size_mib: 512,
            iterations: 10,
        }
    }
}

/// Keys `stream:` accepts.
pub const KEYS: &[&str] = &["threads", "size_mib", "iterations"];

impl StreamParams {
    /// Reads a `stream:...` spec.
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(StreamParams {
            threads: s.get_u64("threads", 1, 1, 512)? as u32,
            size_mib: s.get_u64("size_mib", 512, 1, 1 << 20)?,
            iterations: s.get_u64("iterations", 10, 2, 1000)? as u32,
        })
    }

    /// Elements per array.
    pub fn elements(&self) -> u64 {
        self.size_mib * 1024 * 1024 / 3 / 8
    }
}

/// Builds the thread programs. Template 0 is the master (OpenMP thread 0);
/// `affinity` restricts every thread (numactl -N), `mem_node` binds memory (-m).
pub fn build(p: &StreamParams, affinity: Option<CpuMask>, mem_node: Option<u32>) -> WorkloadSpec {
    let n = p.threads.max(1) as u64;
    let elems = p.elements();
    // Static schedule: contiguous chunks, the first `rem` threads one element more.
    let chunk = |t: u64| elems / n + u64::from(t < elems % n);
    const START: u32 = 0;
    const END: u32 = 1;
    let region = |t: u64, k: usize, steps: &mut Vec<Step>| {
        steps.push(Step::Barrier {
            id: START,
            spin_ns: GOMP_SPIN_NS,
        });
        steps.push(Step::Memory {
            bytes: chunk(t) * BYTES_PER_ELEM[k],
        });
        steps.push(Step::Barrier {
            id: END,
            spin_ns: GOMP_SPIN_NS,
        });
    };
    let program = |t: u64| {
        let mut s = Vec::new();
        if t == 0 {
            for w in 1..n {
                s.push(Step::Spawn { template: w as u32 });
            }
        }
        // First parallel region: initialise a, b, c (first touch, untimed).
        s.push(Step::Barrier {
            id: START,
            spin_ns: GOMP_SPIN_NS,
        });
        s.push(Step::Memory {
            bytes: chunk(t) * 24,
        });
        s.push(Step::Barrier {
            id: END,
            spin_ns: GOMP_SPIN_NS,
        });
        let loop_start = s.len() as u32;
        for k in 0..4 {
            if t == 0 {
                s.push(Step::Mark { tag: k as u32 });
            }
            region(t, k, &mut s);
            if t == 0 {
                s.push(Step::Mark { tag: 4 + k as u32 });
            }
        }
        s.push(Step::Loop {
            start: loop_start,
            count: p.iterations,
            slot: 0,
        });
        s.push(Step::Exit);
        s
    };
    let templates = (0..n)
        .map(|t| ThreadTemplate {
            idle_policy: false,
            name: if t == 0 {
                "stream".to_string()
            } else {
                format!("stream-omp{t}")
            },
            nice: 0,
            affinity,
            steps: program(t),
        })
        .collect();
    WorkloadSpec {
        name: format!("stream:threads={}", p.threads),
        templates,
        initial: vec![0],
        sync: vec![
            SyncObject::Barrier { parties: n as u32 },
            SyncObject::Barrier { parties: n as u32 },
        ],
        mem_node,
        max_time_ns: 600_000_000_000,
    }
}

/// STREAM's report: best rate in MB/s per kernel, from the master's marks
/// `(tag, time_ns)` in program order (tags 0..3 start, 4..7 end of a kernel).
/// Returns `None` when the marks are incomplete.
pub fn best_rates_mb_per_s(p: &StreamParams, marks: &[(u32, u64)]) -> Option<[f64; 4]> {
    let mut times: [Vec<u64>; 4] = Default::default();
    let mut open: [Option<u64>; 4] = [None; 4];
    for &(tag, t) in marks {
        let k = (tag % 4) as usize;
        if tag < 4 {
            open[k] = Some(t);
        } else if let Some(s) = open[k].take() {
            times[k].push(t.saturating_sub(s));
        }
    }
    let elems = p.elements() as f64;
    let mut out = [0.0; 4];
    for k in 0..4 {
        if times[k].len() < p.iterations as usize {
            return None;
        }
        let best_ns = *times[k][1..].iter().min()?;
        if best_ns == 0 {
            return None;
        }
        let bytes = BYTES_PER_ELEM[k] as f64 * elems;
        out[k] = 1e-6 * bytes / (best_ns as f64 * 1e-9);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counting_follows_stream() {
        let p = StreamParams {
            threads: 3,
            size_mib: 3,
            iterations: 2,
        };
        let spec = build(&p, None, Some(0));
        let elems = p.elements();
        assert_eq!(elems, 131072);
        // The chunks of one kernel add up to the whole array, times STREAM's bytes.
        for (k, &b) in BYTES_PER_ELEM.iter().enumerate() {
            let total: u64 = spec
                .templates
                .iter()
                .map(|t| {
                    let mem: Vec<u64> = t
                        .steps
                        .iter()
                        .filter_map(|s| match s {
                            Step::Memory { bytes } => Some(*bytes),
                            _ => None,
                        })
                        .collect();
                    mem[1 + k]
                })
                .sum();
            assert_eq!(total, b * elems);
        }
        // Best rate: 1e-6 * 16 * elems / best time, first pass discarded.
        let marks = vec![(0, 0), (4, 10_000), (0, 10_000), (4, 12_000)];
        let mut all = marks.clone();
        for k in 1..4u32 {
            all.extend([(k, 0), (4 + k, 1000), (k, 0), (4 + k, 1000)]);
        }
        let r = best_rates_mb_per_s(&p, &all).unwrap();
        let want = 1e-6 * 16.0 * elems as f64 / 2e-6;
        assert!((r[0] - want).abs() < 1e-6, "{} vs {want}", r[0]);
    }
}
