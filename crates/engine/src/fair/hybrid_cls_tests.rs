//! Patch set S3 (cluster scheduling on hybrid Alder Lake): scenario tests of
//! the 7.3 behaviour (`cluster`) and of the restored 5.16 mechanisms
//! (`cluster-naive`: features ASYM_IDLE_CORE, SWB_IDLE_CORE,
//! SMT_ACTIVE_BALANCE, SMT_BUSIEST_PICK, SMT_SIBLING_IMBALANCE off, SMT group
//! flags not propagated, pre-6.5 ITMT SMT priorities).

use crate::features::Features;
use crate::sim::{Sim, SimConfig};
use schedlab_topo::{build_domains, itmt_priorities, preset, DomainConfig};
use schedlab_workload::{Step, ThreadTemplate, WorkloadSpec};

fn hybrid_sim_cfg(cfg: DomainConfig, naive: bool, spec: WorkloadSpec, seed: u64) -> Sim {
    let m = preset("alderlake").expect("preset");
    let d = build_domains(&m, &cfg).expect("domains");
    let mut features = Features::default();
    if naive {
        for f in crate::features::S3_FIXES {
            features.set(f, false).unwrap();
        }
    }
    Sim::new(
        m,
        d,
        spec,
        SimConfig {
            seed,
            checked: true,
            features,
            ..SimConfig::default()
        },
    )
}

/// A parent that forks one CPU-bound child (fork balancing picks its CPU)
/// and exits.
fn forked_hog(work_ns: u64) -> WorkloadSpec {
    let t = |name: &str, steps| ThreadTemplate {
        idle_policy: false,
        name: name.into(),
        nice: 0,
        affinity: None,
        steps,
    };
    WorkloadSpec {
        name: "forked-hog".into(),
        templates: vec![
            t("sh", vec![Step::Spawn { template: 1 }, Step::Exit]),
            t(
                "hog",
                vec![Step::NewProcess, Step::Compute { work_ns }, Step::Exit],
            ),
        ],
        initial: vec![0],
        sync: vec![],
        mem_node: None,
        max_time_ns: 10_000_000_000,
    }
}

fn hog_cpu_at(naive: bool, seed: u64, at_ns: u64) -> schedlab_topo::CpuId {
    let name = if naive { "cluster-naive" } else { "cluster" };
    hog_cpu_cfg(DomainConfig::named(name).unwrap(), naive, seed, at_ns)
}

fn hog_cpu_cfg(cfg: DomainConfig, naive: bool, seed: u64, at_ns: u64) -> schedlab_topo::CpuId {
    let mut s = hybrid_sim_cfg(cfg, naive, forked_hog(2_000_000_000), seed);
    s.run_until(at_ns);
    let hog = s
        .tasks
        .iter()
        .position(|t| t.name.starts_with("hog"))
        .expect("hog forked");
    s.tasks[hog].cpu
}

/// With the series (7.3 + CLS) one busy task on an otherwise idle Alder Lake
/// runs on a P-core: fork balancing may start it in an E-cluster (4 idle CPUs
/// beat a P-core's 2), and asym packing pulls it to an idle P-core.
#[test]
fn cluster_runs_a_lone_forked_hog_on_a_p_core() {
    for seed in 1..=3 {
        let cpu = hog_cpu_at(false, seed, 300_000_000);
        assert!(cpu < 12, "seed {seed}: hog on E-core CPU {cpu}");
    }
}

/// The restored 5.16 mechanisms do NOT reproduce the 5.16 single-task
/// regression (docs/reproduction.md S3): the P-core's first thread keeps the
/// highest pre-6.5 ITMT priority (2·60 vs 2·35 for an E-core), so plain
/// sched_asym_prefer() still pulls the lone task from the E-cluster. This
/// test pins that finding; change it if a modelled 5.16 mechanism makes the
/// task stay on an E-core.
#[test]
fn cluster_naive_also_pulls_a_lone_hog_to_a_p_core() {
    let m = preset("alderlake").unwrap();
    let p = itmt_priorities(&m, &DomainConfig::named("cluster-naive").unwrap());
    assert_eq!((p[0], p[1], p[12]), (120, 30, 70));
    for seed in 1..=3 {
        let cpu = hog_cpu_at(true, seed, 300_000_000);
        assert!(cpu < 12, "seed {seed}: hog on E-core CPU {cpu}");
    }
}

/// The mechanism of the regression Phoronix measured on 5.16-rc1 (i9-12900K,
/// overclocking-enabled firmware whose CPPC highest_perf reads 0xff, so
/// intel_pstate never enabled ITMT and there was no asym packing): fork
/// balancing with CLS sees an E-cluster (4 idle CPUs) as idler than any
/// P-core (2), starts the forked single-threaded process there, and nothing
/// ever packs it onto a P-core. Without CLS (5.15) the same fork picks a
/// P-core group (2 idle CPUs against 1 per E-core).
#[test]
fn without_itmt_cls_forks_a_lone_hog_onto_an_e_core_and_leaves_it_there() {
    for seed in 1..=3 {
        let naive = DomainConfig::named("cluster-naive-noitmt").unwrap();
        let at_fork = hog_cpu_cfg(naive.clone(), true, seed, 1_000_000);
        assert!(
            at_fork >= 12,
            "seed {seed}: forked onto P-core CPU {at_fork}"
        );
        let later = hog_cpu_cfg(naive, true, seed, 300_000_000);
        assert!(later >= 12, "seed {seed}: moved to P-core CPU {later}");
        let v = DomainConfig::named("vanilla-noitmt").unwrap();
        let v_fork = hog_cpu_cfg(v, false, seed, 1_000_000);
        assert!(v_fork < 12, "seed {seed}: 5.15 forked onto E-core {v_fork}");
    }
}

/// Where `n` CPU hogs run on alderlake under `cfg_name`, sampled every
/// 200 ms from 0.2 s to 2.8 s: per sample, (threads on P-cores, distinct
/// P-cores, threads on E-cluster 1, threads on E-cluster 2).
fn hogs_placements(cfg_name: &str, n: u32, seed: u64) -> Vec<(u32, usize, u32, u32)> {
    let spec = crate::scenarios::cpu_hogs(n as usize, 3_000_000_000, None, 10_000_000_000);
    let naive = cfg_name.starts_with("cluster-naive");
    let mut s = hybrid_sim_cfg(DomainConfig::named(cfg_name).unwrap(), naive, spec, seed);
    let mut out = Vec::new();
    for k in 1..=14u64 {
        s.run_until(k * 200_000_000);
        let (mut p, mut e1, mut e2) = (0, 0, 0);
        let mut cores = std::collections::BTreeSet::new();
        for tk in s.tasks.iter().filter(|t| t.name.starts_with("hog")) {
            match tk.cpu {
                c if c < 12 => {
                    p += 1;
                    cores.insert(c / 2);
                }
                c if c < 16 => e1 += 1,
                _ => e2 += 1,
            }
        }
        out.push((p, cores.len(), e1, e2));
    }
    out
}

/// The cover letter's 10-thread placement: with the series every P-core runs
/// one thread and each E-cluster two; the balancer at the CLS level evens
/// the clusters again after a kthread's wakeup upsets them. In 24 seeds at
/// least 80% of the samples are 2/2 (286 of 336 with the idle-state tables
/// of 2026-11-26; vanilla: 79, next test). A kthread waking on a P-core can
/// also push its hog to an E-core until asym packing pulls it back: at most
/// one sample in twenty catches a P-core without its hog.
#[test]
fn cluster_puts_ten_hogs_one_per_p_core_and_two_per_e_cluster() {
    let (mut even, mut six, mut all) = (0, 0, 0);
    for seed in 1..=24 {
        for (p, cores, e1, e2) in hogs_placements("cluster", 10, seed) {
            assert_eq!(p + e1 + e2, 10, "seed {seed}");
            assert_eq!(p, cores as u32, "two hogs on one P-core, seed {seed}");
            six += (p == 6) as u32;
            even += (e1 == 2 && e2 == 2) as u32;
            all += 1;
        }
    }
    assert!(
        six * 20 >= all * 19,
        "6 on P-cores in {six} of {all} samples"
    );
    assert!(even * 5 >= all * 4, "2/2 in {even} of {all} samples");
}

/// Without CLS the E-cores are single-CPU groups of the MC level, so nothing
/// balances the two E-clusters: 6 on the P-cores (in at least 90% of the
/// samples) and a split of the other four that drifts with kthread wakeups,
/// as far as all four on one E-cluster (the cover letter saw 4 on one).
#[test]
fn vanilla_leaves_the_e_clusters_uneven_at_ten_hogs() {
    let (mut even, mut all, mut four, mut p_full) = (0, 0, 0, 0);
    for seed in 1..=12 {
        for (p, cores, e1, e2) in hogs_placements("vanilla", 10, seed) {
            p_full += (p == 6 && cores == 6) as u32;
            even += (e1 == 2 && e2 == 2) as u32;
            four += (e1 == 4 || e2 == 4) as u32;
            all += 1;
        }
    }
    assert!(
        p_full * 10 >= all * 9,
        "6 on 6 P-cores in {p_full} of {all}"
    );
    assert!(even * 10 < all * 6, "2/2 in {even} of {all} samples");
    assert!(four > 0, "never four on one E-cluster");
}
