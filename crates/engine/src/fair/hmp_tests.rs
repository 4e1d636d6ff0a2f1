//! Scenario tests of the S5 big.LITTLE schemes (fair/hmp.rs) on the Exynos
//! 5422 preset (CPUs 0-3 little, 4-7 big), with invariants checked after
//! every event.

use crate::features::Features;
use crate::sim::{Sim, SimConfig};
use schedlab_topo::{build_domains, preset, CpuMask, DomainConfig};
use schedlab_workload::{Step, ThreadTemplate, WorkloadSpec};

fn sim(feature: &str, templates: Vec<Vec<Step>>, seed: u64) -> Sim {
    sim_pinned(
        feature,
        templates.into_iter().map(|s| (s, None)).collect(),
        seed,
    )
}

fn sim_pinned(feature: &str, templates: Vec<(Vec<Step>, Option<CpuMask>)>, seed: u64) -> Sim {
    let m = preset("exynos5422").expect("preset");
    let d = build_domains(&m, &DomainConfig::default()).expect("domains");
    let mut features = Features::default();
    features.set(feature, true).expect("feature");
    let n = templates.len() as u32;
    let spec = WorkloadSpec {
        name: "hmp".into(),
        templates: templates
            .into_iter()
            .enumerate()
            .map(|(i, (steps, affinity))| ThreadTemplate {
                idle_policy: false,
                name: format!("t{i}"),
                nice: 0,
                affinity,
                steps,
            })
            .collect(),
        initial: (0..n).collect(),
        sync: vec![],
        mem_node: None,
        max_time_ns: u64::MAX,
    };
    Sim::new(
        m,
        d,
        spec,
        SimConfig {
            seed,
            features,
            checked: true,
            ..SimConfig::default()
        },
    )
}

fn hog(work_ns: u64) -> Vec<Step> {
    vec![Step::Compute { work_ns }, Step::Exit]
}

fn workload(s: &Sim) -> Vec<usize> {
    (0..s.tasks.len())
        .filter(|&i| !s.tasks[i].kthread)
        .collect()
}

#[test]
fn hperf_druntime_of_equal_hogs_stays_near_zero() {
    // 8 equal hogs on 4 big + 4 little CPUs: swaps rotate them so every
    // hog's big and little time stay close.
    let mut s = sim(
        "HMP_HPERF",
        (0..8).map(|_| hog(10_000_000_000)).collect(),
        5,
    );
    s.run_until(400_000_000);
    assert!(s.counters.hmp_swaps > 10, "swaps {}", s.counters.hmp_swaps);
    for i in workload(&s) {
        let t = &s.tasks[i];
        let cpu = t.stats.cpu_time_ns as i64;
        assert!(cpu > 300_000_000, "{} ran {cpu} ns", t.name);
        assert!(
            t.hmp.druntime.abs() * 4 < cpu,
            "{}: druntime {} of {cpu} ns (big {} little {})",
            t.name,
            t.hmp.druntime,
            t.hmp.big_ns,
            t.hmp.little_ns
        );
        assert!(
            t.hmp.little_ns > 0 && t.hmp.big_ns > 0,
            "{} never rotated",
            t.name
        );
    }
}

#[test]
fn hperf_idle_big_cpu_pulls_from_little() {
    // 8 hogs, 4 of them short: once those exit, the big CPUs they leave
    // idle pull the long hogs from the little CPUs.
    let mut t: Vec<Vec<Step>> = (0..4).map(|_| hog(20_000_000)).collect();
    t.extend((0..4).map(|_| hog(2_000_000_000)));
    let mut s = sim("HMP_HPERF", t, 7);
    s.run_until(150_000_000);
    let long: Vec<usize> = workload(&s)
        .into_iter()
        .filter(|&i| s.tasks[i].name.as_ref() >= "t4")
        .collect();
    assert_eq!(long.len(), 4);
    for &i in &long {
        let tk = &s.tasks[i];
        assert!(s.hmp_is_big(tk.cpu), "{} on cpu {}", tk.name, tk.cpu);
    }
    assert!(s.counters.hmp_up > 0);
    // Little CPUs idle once the long hogs are all on big ones.
    for c in 0..4u16 {
        assert!(s.rqs[c as usize]
            .curr
            .is_none_or(|t| s.tasks[t as usize].kthread));
    }
}

#[test]
fn linaro_light_task_moves_down_and_cpu_bound_task_moves_up() {
    // 30 periods of 1 ms work + 9 ms sleep (load ratio ~10%), then CPU bound.
    let steps = vec![
        Step::Compute { work_ns: 1_000_000 },
        Step::Sleep { ns: 9_000_000 },
        Step::Loop {
            start: 0,
            count: 30,
            slot: 0,
        },
        Step::Compute {
            work_ns: 3_000_000_000,
        },
        Step::Exit,
    ];
    let mut s = sim("HMP_LINARO", vec![steps], 3);
    // A new task starts on a big CPU (full initial load).
    s.run_until(5_000_000);
    let t = workload(&s)[0];
    assert!(
        s.hmp_is_big(s.tasks[t].cpu),
        "starts on cpu {}",
        s.tasks[t].cpu
    );
    s.run_until(280_000_000);
    assert!(
        !s.hmp_is_big(s.tasks[t].cpu),
        "light task on cpu {} (ratio {})",
        s.tasks[t].cpu,
        s.hmp_load_ratio(t as u32)
    );
    assert!(s.counters.hmp_down > 0);
    s.run_until(900_000_000);
    assert!(
        s.hmp_is_big(s.tasks[t].cpu),
        "cpu-bound task on cpu {} (ratio {})",
        s.tasks[t].cpu,
        s.hmp_load_ratio(t as u32)
    );
    assert!(s.counters.hmp_up > 0);
}

#[test]
fn no_cross_cluster_generic_balancing_under_hmp() {
    // Linaro MP with 6 hogs: all fork to big; the generic balancer does not
    // spill them to the idle little CPUs. Only Linaro's own offload rule
    // moves tasks down, one per starving pair (hmp_offload_down()).
    let mut s = sim(
        "HMP_LINARO",
        (0..6).map(|_| hog(5_000_000_000)).collect(),
        2,
    );
    s.run_until(200_000_000);
    let on_little = workload(&s)
        .into_iter()
        .filter(|&i| !s.hmp_is_big(s.tasks[i].cpu))
        .count() as u64;
    assert_eq!(on_little, s.counters.hmp_offloads);
    assert!(on_little <= 2, "{on_little}");
    let top = s.counters.levels.last().map_or(0, |l| l.lb_moved);
    assert_eq!(
        top, 0,
        "generic balancing moved {top} tasks across clusters"
    );
}

#[test]
fn linaro_offloads_a_sharing_big_task_to_an_idle_little_cpu() {
    // Five hogs: Linaro starts all on big CPUs, one A15 runs two; the pair
    // starve (each runs half its runnable time), so one is offloaded to an
    // idle A7 (hmp_offload_down()) and stays there: its load is high, but
    // no big CPU goes idle to take it back.
    let mut s = sim(
        "HMP_LINARO",
        (0..5).map(|_| hog(10_000_000_000)).collect(),
        3,
    );
    s.run_until(200_000_000);
    assert!(s.counters.hmp_offloads >= 1, "{}", s.counters.hmp_offloads);
    let on_little: Vec<_> = workload(&s)
        .into_iter()
        .filter(|&i| !s.hmp_is_big(s.tasks[i].cpu))
        .collect();
    assert_eq!(on_little.len(), 1, "{on_little:?}");
    // Four hogs fit the four big CPUs: nobody starves, nothing is offloaded.
    let mut s = sim(
        "HMP_LINARO",
        (0..4).map(|_| hog(10_000_000_000)).collect(),
        3,
    );
    s.run_until(200_000_000);
    assert_eq!(s.counters.hmp_offloads, 0);
}

#[test]
fn linaro_load_ratio_is_the_wall_clock_runnable_fraction() {
    // A task pinned to a little CPU is busy 6 ms of wall time (RunWall) and
    // sleeps 4 ms: runnable 60% of the time. Linaro's 3.10 signal sees 60%;
    // the 7.3 runnable_avg, whose PELT clock runs at 377/1024 speed while the
    // CPU is busy and catches up when it idles, sees far less.
    let steps = vec![
        Step::RunWall { ns: 6_000_000 },
        Step::Sleep { ns: 4_000_000 },
        Step::Loop {
            start: 0,
            count: 100,
            slot: 0,
        },
        Step::Exit,
    ];
    let little = 0; // CPUs 0-3 are the A7s
    let mut s = sim_pinned(
        "HMP_LINARO",
        vec![(steps, Some(CpuMask::from_cpus([little])))],
        1,
    );
    assert!(!s.hmp_is_big(little));
    s.run_until(600_000_000);
    let t = workload(&s)[0];
    assert_eq!(s.tasks[t].cpu, little);
    let ratio = s.hmp_load_ratio(t as u32);
    let invariant = s.tasks[t].avg.runnable_avg;
    assert!((520..=700).contains(&ratio), "Linaro ratio {ratio}");
    assert!(
        invariant + 150 < ratio,
        "7.3 runnable_avg {invariant} vs {ratio}"
    );
}
