//! The engine benchmark: simulated events per second and simulated/wall time.
//!
//! Wall-clock time is measured here, around the engine, never inside it.

use crate::configs;
use crate::experiments;
use schedlab_engine::{Sim, SimConfig};
use schedlab_topo::{build_domains, resolve_machine};
use schedlab_workload::{Step, ThreadTemplate, WorkloadSpec};
use std::time::Instant;

/// One benchmark row.
#[derive(Clone, Debug)]
pub struct BenchRow {
    pub name: String,
    pub events: u64,
    pub sim_ns: u64,
    /// Machine loading and domain building.
    pub setup_s: f64,
    /// The event loop alone.
    pub run_s: f64,
}

impl BenchRow {
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.run_s.max(1e-9)
    }
    pub fn sim_per_wall(&self) -> f64 {
        self.sim_ns as f64 / 1e9 / self.run_s.max(1e-9)
    }
}

fn time_run(
    name: String,
    machine: &str,
    config: &str,
    spec: WorkloadSpec,
) -> Result<BenchRow, String> {
    let t0 = Instant::now();
    let m = resolve_machine(machine).map_err(|e| e.to_string())?;
    let cfg = configs::resolve(config, m.arch)?;
    let d = build_domains(&m, &cfg.domains).map_err(|e| e.to_string())?;
    let mut sim = Sim::new(
        m,
        d,
        spec,
        SimConfig {
            seed: 1,
            features: cfg.features.clone(),
            tunables: cfg.tunables.clone(),
            hz: cfg.hz,
            checked: false,
            ..SimConfig::default()
        },
    );
    let setup_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    sim.run();
    let run_s = t1.elapsed().as_secs_f64();
    Ok(BenchRow {
        name,
        events: sim.events,
        sim_ns: sim.now,
        setup_s,
        run_s,
    })
}

/// `n` CPU-bound threads for `sim_s` simulated seconds: ticks, slices,
/// preemption and periodic/idle balancing dominate.
fn hogs(n: usize, sim_s: u64) -> WorkloadSpec {
    WorkloadSpec {
        name: format!("hogs:{n}"),
        templates: (0..n)
            .map(|i| ThreadTemplate {
                idle_policy: false,
                name: format!("hog{i}"),
                nice: 0,
                affinity: None,
                steps: vec![
                    Step::Compute {
                        work_ns: u64::MAX / 4,
                    },
                    Step::Exit,
                ],
            })
            .collect(),
        initial: (0..n as u32).collect(),
        sync: vec![],
        mem_node: None,
        max_time_ns: sim_s * 1_000_000_000,
    }
}

/// Runs the benchmark set: the kunpeng920-stream points, power10 pipe and
/// spr hackbench messaging (the bulk of a full `reproduce`), CPU hogs at 2× the
/// CPUs of kunpeng920 and genoa, and on exynos5422 at 2, 256 and 2048 hogs
/// per CPU, under vanilla and under HPERF_HMP (whose balancing picks tasks by
/// druntime across a whole cluster): per-event cost must not grow with the
/// runqueue length beyond O(log n).
pub fn run(quick: bool) -> Result<Vec<BenchRow>, String> {
    let mut rows = Vec::new();
    let def = experiments::get("kunpeng920-stream", quick)?;
    for p in &def.points {
        for c in &def.configs {
            rows.push(time_run(
                format!(
                    "stream {} {c}",
                    schedlab_report::table::params_text(&p.params)
                ),
                &def.machine,
                c,
                p.workload.build(p.affinity, p.mem_node),
            )?);
        }
    }
    // The messaging points that take most of a full `reproduce`: pipe
    // ping-pong on every POWER10 CPU (SMT8 re-rating on each switch) and
    // hackbench's fine-grained pipe messages on Sapphire Rapids.
    let (pipe_loops, hb_loops) = if quick { (500, 100) } else { (2_000, 500) };
    for (name, machine, spec) in [
        (
            "pipe 80 instances on power10",
            "power10",
            format!("pipe:instances=80,loops={pipe_loops}"),
        ),
        (
            "hackbench g2 f20 on sapphirerapids",
            "sapphirerapids",
            format!(
                "hackbench:groups=2,fds=20,loops={hb_loops},datasize=100,ipc=pipe,mode=threads"
            ),
        ),
    ] {
        let w = crate::workloads::Builtin::parse(&spec).map_err(|e| e.to_string())?;
        rows.push(time_run(
            name.into(),
            machine,
            "vanilla",
            w.build(None, None),
        )?);
    }
    let secs = if quick { 1 } else { 5 };
    for (machine, n, config) in [
        ("kunpeng920", 192, "vanilla"),
        ("genoa", 256, "vanilla"),
        ("exynos5422", 16, "vanilla"),
        ("exynos5422", 2048, "vanilla"),
        ("exynos5422", 16384, "vanilla"),
        ("exynos5422", 16, "hperf-hmp"),
        ("exynos5422", 2048, "hperf-hmp"),
        ("exynos5422", 16384, "hperf-hmp"),
    ] {
        let name = match config {
            "vanilla" => format!("hogs {n} on {machine}"),
            c => format!("hogs {n} on {machine} {c}"),
        };
        rows.push(time_run(name, machine, config, hogs(n, secs))?);
    }
    Ok(rows)
}
