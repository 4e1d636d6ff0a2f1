//! Built-in workloads as the CLI and experiments use them: spec parsing,
//! program building, and the benchmark's own metrics and output.

use schedlab_engine::Sim;
use schedlab_topo::CpuMask;
use schedlab_workload::stream::{self, StreamParams};
use schedlab_workload::{parse_spec, SpecError, WorkloadSpec};

/// A parsed built-in workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Builtin {
    Stream(StreamParams),
}

/// Built-ins with their keys and what they model.
pub const BUILTINS: &[(&str, &str, &str)] = &[(
    "stream",
    "threads=N (1), size_mib=M (512, all three arrays), iterations=K (10)",
    "STREAM 5.10 under OpenMP: master forks the team; copy/scale/add/triad as parallel loops over static chunks with barriers; Best Rate MB/s",
)];

impl Builtin {
    /// Parses `NAME:key=value,...`.
    pub fn parse(spec: &str) -> Result<Builtin, SpecError> {
        let s = parse_spec(spec)?;
        match s.name.as_str() {
            "stream" => Ok(Builtin::Stream(StreamParams::from_spec(&s)?)),
            other => Err(SpecError::UnknownWorkload(
                other.to_string(),
                BUILTINS.iter().map(|b| b.0).collect::<Vec<_>>().join(", "),
            )),
        }
    }

    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self {
            Builtin::Stream(_) => "stream",
        }
    }

    /// Thread programs, restricted to `affinity` with memory on `mem_node`.
    pub fn build(&self, affinity: Option<CpuMask>, mem_node: Option<u32>) -> WorkloadSpec {
        match self {
            Builtin::Stream(p) => stream::build(p, affinity, mem_node),
        }
    }

    /// The benchmark's metrics after a run, in its own units.
    pub fn metrics(&self, sim: &Sim) -> Vec<(String, f64)> {
        match self {
            Builtin::Stream(p) => {
                let marks: Vec<(u32, u64)> = sim
                    .marks
                    .iter()
                    .filter(|m| sim.tasks[m.0 as usize].template == 0)
                    .map(|m| (m.1, m.2))
                    .collect();
                match stream::best_rates_mb_per_s(p, &marks) {
                    Some(r) => stream::KERNELS
                        .iter()
                        .zip(r)
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                    None => Vec::new(),
                }
            }
        }
    }

    /// The benchmark's own report lines.
    pub fn report(&self, metrics: &[(String, f64)]) -> String {
        match self {
            Builtin::Stream(p) => {
                let mut s = format!(
                    "STREAM version $Revision: 5.10 $ (simulated)\nArray size = {} (elements), Offset = 0 (elements)\nNumber of Threads requested = {}\nFunction    Best Rate MB/s\n",
                    p.elements(),
                    p.threads
                );
                for (k, v) in metrics {
                    let mut name = k.clone();
                    if let Some(c) = name.get_mut(0..1) {
                        c.make_ascii_uppercase();
                    }
                    s.push_str(&format!("{:<12}{:>14.1}\n", format!("{name}:"), v));
                }
                if metrics.is_empty() {
                    s.push_str("(incomplete run: no rates)\n");
                }
                s
            }
        }
    }
}
