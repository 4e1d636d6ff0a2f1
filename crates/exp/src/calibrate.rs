//! Calibration checks: micro-benchmarks run inside the simulator next to the
//! published hardware measurements they mirror (hardware.md).
//!
//! The memory model's inputs come from some of these same measurements (the
//! single-core and cluster limits, and the node curve's two fitting points),
//! so those rows check that the mechanism reproduces its inputs; the other
//! rows are predictions.

use crate::configs;
use schedlab_engine::{Sim, SimConfig};
use schedlab_topo::{CpuId, CpuMask};
use schedlab_workload::stream::{self, StreamParams};

/// One check.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Check {
    pub name: String,
    pub unit: String,
    pub published: f64,
    pub simulated: f64,
    pub ratio: f64,
    pub source: String,
    /// "input" when the figure parameterises the model, "prediction" otherwise.
    pub role: String,
}

/// STREAM copy with one thread pinned per listed CPU, memory on `node`; MB/s.
pub fn stream_copy_pinned(machine: &str, pins: &[CpuId], node: u32) -> Result<f64, String> {
    let m = schedlab_topo::resolve_machine(machine).map_err(|e| e.to_string())?;
    let cfg = configs::resolve("vanilla")?;
    let d = schedlab_topo::build_domains(&m, &cfg.domains).map_err(|e| e.to_string())?;
    let p = StreamParams {
        threads: pins.len() as u32,
        size_mib: 512,
        iterations: 3,
    };
    let mut spec = stream::build(&p, None, Some(node));
    for (t, &cpu) in spec.templates.iter_mut().zip(pins) {
        t.affinity = Some(CpuMask::from_cpus([cpu]));
    }
    let mut sim = Sim::new(
        m,
        d,
        spec,
        SimConfig {
            seed: 7,
            noise: false,
            checked: false,
            ..SimConfig::default()
        },
    );
    sim.run();
    let marks: Vec<(u32, u64)> = sim
        .marks
        .iter()
        .filter(|x| sim.tasks[x.0 as usize].template == 0)
        .map(|x| (x.1, x.2))
        .collect();
    let r = stream::best_rates_mb_per_s(&p, &marks).ok_or("STREAM did not complete")?;
    Ok(r[0])
}

/// The calibration table of a machine.
pub fn checks(machine: &str) -> Result<Vec<Check>, String> {
    match machine {
        "kunpeng920" => {
            let rows: [(&str, Vec<CpuId>, f64, &str); 5] = [
                ("stream copy, 1 core", vec![0], 12_400.0, "input"),
                (
                    "stream copy, 4 cores in 1 cluster",
                    vec![0, 1, 2, 3],
                    30_700.0,
                    "input",
                ),
                (
                    "stream copy, 4 cores in 4 clusters",
                    vec![0, 4, 8, 12],
                    40_800.0,
                    "input",
                ),
                (
                    "stream copy, 12 cores (3 clusters)",
                    (0..12).collect(),
                    58_000.0,
                    "prediction",
                ),
                (
                    "stream copy, 24 cores (node)",
                    (0..24).collect(),
                    63_300.0,
                    "input",
                ),
            ];
            rows.into_iter()
                .map(|(name, pins, published, role)| {
                    let simulated = stream_copy_pinned(machine, &pins, 0)?;
                    Ok(Check {
                        name: name.to_string(),
                        unit: "MB/s".to_string(),
                        published,
                        simulated,
                        ratio: simulated / published,
                        source: "[WAYCA] lmbench STREAM, node-local".to_string(),
                        role: role.to_string(),
                    })
                })
                .collect()
        }
        m => {
            // Validate the name first so a typo is reported as such.
            schedlab_topo::resolve_machine(m).map_err(|e| e.to_string())?;
            Err(format!(
                "calibrate: no calibration table for '{m}' yet (available: kunpeng920)"
            ))
        }
    }
}
