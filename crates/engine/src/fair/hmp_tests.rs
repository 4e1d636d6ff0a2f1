//! Scenario tests of the S5 big.LITTLE schemes (fair/hmp.rs) on the Exynos
//! 5422 preset (CPUs 0-3 little, 4-7 big), with invariants checked after
//! every event.

use crate::features::Features;
use crate::sim::{Sim, SimConfig};
use crate::task::TaskState;
use schedlab_topo::{build_domains, preset, CpuMask, DomainConfig, SdTunable};
use schedlab_workload::{Step, ThreadTemplate, WorkloadSpec};

fn sim(feature: &str, templates: Vec<Vec<Step>>, seed: u64) -> Sim {
    sim_pinned(
        feature,
        templates.into_iter().map(|s| (s, None)).collect(),
        seed,
    )
}

fn sim_pinned(feature: &str, templates: Vec<(Vec<Step>, Option<CpuMask>)>, seed: u64) -> Sim {
    let initial = (0..templates.len() as u32).collect();
    sim_spec(feature, templates, initial, seed)
}

/// Unpinned templates of which only `initial` start.
fn sim_initial(feature: &str, templates: Vec<Vec<Step>>, initial: Vec<u32>, seed: u64) -> Sim {
    let templates = templates.into_iter().map(|s| (s, None)).collect();
    sim_spec(feature, templates, initial, seed)
}

fn sim_spec(
    feature: &str,
    templates: Vec<(Vec<Step>, Option<CpuMask>)>,
    initial: Vec<u32>,
    seed: u64,
) -> Sim {
    sim_with(
        feature,
        templates,
        initial,
        seed,
        &[],
        DomainConfig::default(),
    )
}

/// [`sim_spec`] with more feature switches (`NAME=on|off`) and a domain
/// configuration.
fn sim_with(
    feature: &str,
    templates: Vec<(Vec<Step>, Option<CpuMask>)>,
    initial: Vec<u32>,
    seed: u64,
    switches: &[&str],
    dcfg: DomainConfig,
) -> Sim {
    let m = preset("exynos5422").expect("preset");
    let d = build_domains(&m, &dcfg).expect("domains");
    let mut features = Features::default();
    features.set(feature, true).expect("feature");
    for sw in switches {
        features.apply(sw).expect("switch");
    }
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
        initial,
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
    // hog's big and little time stay close. (With every CPU busy, each
    // balances the cluster-spanning level about every 124 ms.)
    let mut s = sim(
        "HMP_HPERF",
        (0..8).map(|_| hog(10_000_000_000)).collect(),
        5,
    );
    s.run_until(1_600_000_000);
    assert!(s.counters.hmp_swaps > 10, "swaps {}", s.counters.hmp_swaps);
    for i in workload(&s) {
        let t = &s.tasks[i];
        let cpu = t.stats.cpu_time_ns as i64;
        assert!(cpu > 1_200_000_000, "{} ran {cpu} ns", t.name);
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
    let mut steps = crate::scenarios::compute_sleep_rounds(1_000_000, 9_000_000, 30);
    steps.extend([
        Step::Compute {
            work_ns: 3_000_000_000,
        },
        Step::Exit,
    ]);
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
    let mut steps = crate::scenarios::run_sleep_rounds(6_000_000, 4_000_000, 100);
    steps.push(Step::Exit);
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

#[test]
fn linaro_min_load_takes_an_idle_cpu_then_the_least_recently_disturbed() {
    // hmp_domain_min_load(): any runnable load makes a CPU "full" (1023), so
    // among busy big CPUs the queue length does not count; the CPU an HMP
    // migration targeted longest ago wins. Among idle CPUs likewise, the
    // first one in order when none was ever targeted.
    let pin = |c: u16| Some(CpuMask::from_cpus([c]));
    let mut tasks = vec![(hog(1_000_000_000), pin(4))];
    tasks.extend((0..3).map(|_| (hog(1_000_000_000), pin(5))));
    tasks.push((hog(1_000_000_000), pin(6)));
    tasks.push((hog(1_000_000_000), pin(7)));
    let mut s = sim_pinned("HMP_LINARO", tasks, 1);
    s.run_until(2_000_000);
    for (c, last_ns) in [(4, 40), (5, 10), (6, 30), (7, 20)] {
        s.rqs[c].hmp_last_up_ns = Some(last_ns);
    }
    let all = CpuMask::first_n(8);
    assert_eq!(s.hmp_domain_min_load(true, all), (1023, Some(5)));
    // A down-move timestamp counts when no up-move is noted.
    s.rqs[7].hmp_last_up_ns = None;
    s.rqs[7].hmp_last_down_ns = Some(5);
    assert_eq!(s.hmp_domain_min_load(true, all), (1023, Some(7)));
    // Affinity restricts the choice.
    let no7 = CpuMask::from_cpus([4, 5, 6]);
    assert_eq!(s.hmp_domain_min_load(true, no7), (1023, Some(5)));
    // The little CPUs are idle: load 0, first CPU, then the undisturbed one.
    assert_eq!(s.hmp_domain_min_load(false, all), (0, Some(0)));
    s.rqs[0].hmp_last_down_ns = Some(0);
    assert_eq!(s.hmp_domain_min_load(false, all), (0, Some(1)));
    // No allowed CPU in the domain.
    let bigs = CpuMask::from_cpus([4, 5, 6, 7]);
    assert_eq!(s.hmp_domain_min_load(false, bigs), (1023, None));
}

#[test]
fn linaro_forks_spread_over_busy_big_cpus_by_disturbance_time() {
    // A parent forks eight hogs one after another (each clone() costs it a
    // little time): the first children take the idle big CPUs; once the big
    // domain is full, each further fork goes to the big CPU a fork
    // (hmp_next_up_delay()) targeted longest ago, so every A15 ends with two
    // tasks once the parent has exited.
    let mut steps: Vec<Step> = (1..=8).map(|template| Step::Spawn { template }).collect();
    steps.push(Step::Exit);
    let mut templates = vec![steps];
    templates.extend((0..8).map(|_| hog(1_000_000_000)));
    let mut s = sim_initial("HMP_LINARO", templates, vec![0], 4);
    s.run_until(1_000_000);
    let mut per_cpu = [0u32; 8];
    for t in workload(&s) {
        if s.tasks[t].state != TaskState::Dead {
            per_cpu[s.tasks[t].cpu as usize] += 1;
        }
    }
    assert_eq!(per_cpu, [0, 0, 0, 0, 2, 2, 2, 2]);
}

#[test]
fn linaro_without_fork_boost_places_a_child_like_a_wakeup_with_its_parents_history() {
    // A parent pinned to little CPU 0, light so far (its history starts
    // empty), forks one unpinned hog. With HMP_FORK_BOOST (LSK) the child
    // starts fully loaded on a big CPU; without it (the 5422 tree) it keeps
    // the parent's light history, so no up-migration, and the stock fork
    // path places it inside the parent's (little) cluster.
    let child_cpu = |boost: bool| {
        let templates = vec![
            (
                vec![Step::Spawn { template: 1 }, Step::Exit],
                Some(CpuMask::from_cpus([0])),
            ),
            (hog(100_000_000), Some(CpuMask::first_n(8))),
        ];
        let mut s = sim_spec("HMP_LINARO", templates, vec![0], 1);
        s.cfg.features.set("HMP_FORK_BOOST", boost).unwrap();
        s.run_until(100_000);
        let child = workload(&s)
            .into_iter()
            .find(|&t| s.tasks[t].template == 1)
            .unwrap();
        s.tasks[child].cpu
    };
    assert!(child_cpu(true) >= 4);
    assert!(child_cpu(false) < 4);
}

/// HPERF_HMP's indexed druntime pick equals a scan over every running and
/// queued task of the side: lowest druntime, or highest, ties to the lowest
/// id, with and without a filter. Hogs that sleep now and then make queues
/// change all the time (the index is also checked after every event).
#[test]
fn hperf_indexed_pick_equals_a_scan_of_every_queue() {
    let mut steps = Vec::new();
    for i in 0..40u64 {
        steps.push(Step::Compute {
            work_ns: 300_000 + 10_000 * i,
        });
        steps.push(Step::Sleep { ns: 200_000 });
    }
    steps.push(Step::Exit);
    let mut s = sim("HMP_HPERF", vec![steps; 20], 3);
    let mut checked = 0;
    for k in 1..=60u64 {
        s.run_until(k * 500_000);
        for big in [false, true] {
            for highest in [false, true] {
                for odd_only in [false, true] {
                    let ok = |t: u32| !odd_only || t % 2 == 1;
                    let scan = (0..s.tasks.len() as u32)
                        .filter(|&t| {
                            let tk = &s.tasks[t as usize];
                            matches!(tk.state, TaskState::Running | TaskState::Runnable)
                                && !tk.kthread
                                && !tk.se.sched_delayed
                                && s.hmp_is_big(tk.cpu) == big
                                && ok(t)
                        })
                        .min_by_key(|&t| {
                            let d = s.tasks[t as usize].hmp.druntime;
                            (if highest { d.saturating_neg() } else { d }, t)
                        });
                    assert_eq!(s.hperf_extreme(big, highest, ok), scan, "at {k}");
                    checked += usize::from(scan.is_some());
                }
            }
        }
    }
    assert!(checked > 300, "{checked}");
    let mut d: Vec<i64> = workload(&s)
        .iter()
        .map(|&t| s.tasks[t].hmp.druntime)
        .collect();
    d.sort_unstable();
    d.dedup();
    assert!(d.len() > 10, "druntimes {d:?}");
}

/// HPERF_HMP's loads are runnable counts: a task that went to sleep but
/// stays queued as a delayed entity (DELAY_DEQUEUE, which the 3.10-era
/// scheme never saw) does not make its CPU look busier. Every CPU runs a
/// task; big CPU 4 also holds a delayed one. A wakeup from little CPU 0
/// goes to the least loaded big CPU, ties to the lowest number: CPU 4.
#[test]
fn hperf_wakeup_does_not_count_a_delayed_task_as_load() {
    let mut s = sim_initial("HMP_HPERF", vec![hog(1_000_000)], vec![], 1);
    let all = s.machine.all_cpus();
    let t = s.tasks.len() as u32;
    s.tasks.push(crate::task::Task::new(t, "w", 1, 0, 0, all));
    for c in 0..8usize {
        s.rqs[c].curr = Some(t);
        s.rqs[c].cfs.nr_queued = 1;
    }
    s.rqs[4].cfs.nr_queued = 2;
    s.rqs[4].cfs.nr_delayed = 1;
    assert_eq!(s.hmp_select_task_rq(t, 0, false), Some(4));
    // A second runnable task there does count.
    s.rqs[4].cfs.nr_delayed = 0;
    assert_eq!(s.hmp_select_task_rq(t, 0, false), Some(5));
}

#[test]
fn hperf_balances_from_the_softirq_at_the_levels_busy_interval() {
    // 8 hogs keep every CPU busy for 1 s. With HMP_HPERF_SOFTIRQ, HPERF's
    // step runs when the cluster-spanning level is due for a CPU, every
    // 8 ms × busy_factor 16 less one jiffy (124 ms at HZ=250), on the CPU
    // should_we_balance() names in each cluster (no CPU is idle: CPUs 0
    // and 4), so about 2 × 8 = 16 steps. Without it one global step runs
    // every 8 ms (125); with busy_factor 1 the two CPUs step every 4 ms
    // (500).
    let run = |switches: &[&str], busy_factor: Option<&str>| {
        let mut dcfg = DomainConfig::default();
        if let Some(v) = busy_factor {
            dcfg.sd_tunables
                .push(SdTunable::parse("domains/PKG/busy_factor", v).expect("tunable"));
        }
        let templates = (0..8).map(|_| (hog(10_000_000_000), None)).collect();
        let mut s = sim_with("HMP_HPERF", templates, (0..8).collect(), 3, switches, dcfg);
        s.run_until(1_000_000_000);
        s.counters.hmp_balance
    };
    let softirq = run(&[], None);
    let global = run(&["HMP_HPERF_SOFTIRQ=off"], None);
    let unstretched = run(&[], Some("1"));
    assert!((12..=20).contains(&softirq), "softirq steps {softirq}");
    assert!((115..=130).contains(&global), "global steps {global}");
    assert!(
        (450..=520).contains(&unstretched),
        "busy_factor 1 steps {unstretched}"
    );
}

#[test]
fn hperf_step_is_not_a_newly_idle_pass() {
    // A newly idle pass over the cluster-spanning level leaves HPERF's
    // step alone (its idle pull is the newly idle part); a periodic pass
    // by the cluster's balancing CPU runs it once.
    let templates = (0..8).map(|_| (hog(1_000_000_000), None)).collect();
    let mut s = sim_with(
        "HMP_HPERF",
        templates,
        (0..8).collect(),
        4,
        &[],
        DomainConfig::default(),
    );
    s.run_until(50_000_000);
    let top = s.domains.cpus[0].domains.len() - 1;
    assert!(s.hmp_skip_level(0, top));
    let before = s.counters.hmp_balance;
    s.sched_balance_rq(0, top, crate::fair::balance::IdleType::NewlyIdle);
    assert_eq!(s.counters.hmp_balance, before);
    s.sched_balance_rq(0, top, crate::fair::balance::IdleType::NotIdle);
    assert_eq!(s.counters.hmp_balance, before + 1);
    // CPU 1 is not its cluster's balancing CPU while CPU 0 is busy.
    s.sched_balance_rq(1, top, crate::fair::balance::IdleType::NotIdle);
    assert_eq!(s.counters.hmp_balance, before + 1);
}
