//! The sched-domain builder: what Linux 7.3's `build_sched_domains()`
//! (kernel/sched/topology.c) makes of a [`Machine`].
//!
//! Steps, each named after the kernel function it mirrors:
//! 1. the topology table of the machine's architecture (`x86`
//!    `build_sched_topology()`, powerpc `build_sched_topology()`, the generic
//!    `default_topology`) followed by the NUMA levels of `sched_init_numa()`;
//! 2. per CPU, one domain per level (`build_sched_domain()` + `sd_init()`), stopping
//!    at the first level that spans every CPU;
//! 3. groups (`build_sched_groups()`, `build_overlap_sched_groups()` for NUMA);
//! 4. `imb_numa_nr` (the loop at the end of `build_sched_domains()`);
//! 5. group capacity, cores and `asym_prefer_cpu` (`init_sched_groups_capacity()`);
//! 6. degenerate-domain removal (`cpu_attach_domain()`, `sd_degenerate()`,
//!    `sd_parent_degenerate()`);
//! 7. per-CPU shortcuts (`update_top_cache_domain()`).
//!
//! Choices where the kernel's rules did not settle the model are marked CHOICE.

use crate::cpumask::{CpuId, CpuMask};
use crate::domains::{CpuDomains, DomainConfig, Domains, SchedDomain, SchedGroup, SdFlags};
use crate::error::TopoError;
use crate::machine::{Arch, CpuInfo, Machine};

/// `RECLAIM_DISTANCE` / `node_reclaim_distance`: NUMA levels farther than this lose
/// SD_BALANCE_EXEC, SD_BALANCE_FORK and SD_WAKE_AFFINE.
pub const RECLAIM_DISTANCE: u32 = 30;

/// Which mask a topology level uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mask {
    /// `cpu_smt_mask()` (powerpc big cores: `cpu_smallcore_mask()`).
    Smt,
    /// `cpu_clustergroup_mask()`.
    Cluster,
    /// `cpu_coregroup_mask()` (x86: LLC siblings; arm64: arch_topology.c rule).
    Coregroup,
    /// powerpc CACHE: `cpu_l2_cache_mask()`, the LLC.
    L2Cache,
    /// powerpc MC: the coregroup, our `die`.
    PpcCoregroup,
    /// PKG: `cpu_cpu_mask()` = the CPU's node on every architecture here.
    Pkg,
    /// NODE / NUMA: `sd_numa_mask()` of the given distance level.
    Numa(usize),
}

/// One topology level (`struct sched_domain_topology_level`).
#[derive(Clone, Debug)]
struct Level {
    name: &'static str,
    mask: Mask,
    /// The level's `sd_flags()` result.
    flags: SdFlags,
    /// Groups overlap (the NUMA levels above NODE: 7.3 builds overlapping
    /// groups for SD_NUMA domains; it has no SD_OVERLAP flag any more).
    overlap: bool,
    /// `sched_domains_numa_distance[numa_level]` for NODE/NUMA levels.
    distance: u32,
}

/// A domain as built, before degeneration.
#[derive(Clone, Debug)]
struct Raw {
    level: usize,
    span: CpuMask,
    /// `sd_weight` of `sd_init()`: the weight of the level's mask.
    mask_weight: u32,
    flags: SdFlags,
    imbalance_pct: u32,
    cache_nice_tries: u32,
    imb_numa_nr: u32,
    /// Group spans in the kernel's order and their build-time flags (`sg->flags`).
    groups: Vec<(CpuMask, SdFlags)>,
    /// Each group's balance mask (`group_balance_mask()`) and its
    /// `sched_group_capacity` key (level, CPU), in the same order.
    balance: Vec<(CpuMask, u8, CpuId)>,
}

/// Per-CPU masks precomputed from the machine.
struct Masks {
    smt: Vec<CpuMask>,
    cluster: Vec<CpuMask>,
    llc: Vec<CpuMask>,
    die: Vec<CpuMask>,
    package: Vec<CpuMask>,
    node: Vec<CpuMask>,
}

impl Masks {
    fn new(m: &Machine) -> Masks {
        let n = m.nr_cpus();
        let by = |key: fn(&crate::machine::CpuInfo) -> u32| -> Vec<CpuMask> {
            (0..n)
                .map(|i| {
                    let k = key(&m.cpus[i]);
                    CpuMask::from_cpus(m.cpus.iter().filter(|c| key(c) == k).map(|c| c.id))
                })
                .collect()
        };
        Masks {
            smt: by(|c| c.core),
            cluster: by(|c| c.cluster),
            llc: by(|c| c.llc),
            die: by(|c| c.die),
            package: by(|c| c.package),
            node: by(|c| c.node),
        }
    }
}

/// The capacity the kernel sees (`arch_scale_cpu_capacity()`).
///
/// x86 only enables hybrid capacity scaling when SMT is off
/// (`hybrid_init_cpu_capacity_scaling()` in intel_pstate.c): with SMT every CPU has
/// 1024 and ITMT is used instead. Other architectures use the machine's capacities.
/// intel_pstate decides this once, at boot, for the machine as it booted.
pub fn kernel_capacities(m: &Machine) -> Vec<u32> {
    let x86_smt = m.arch == Arch::X86 && has_smt(m.as_booted());
    m.cpus
        .iter()
        .map(|c| if x86_smt { 1024 } else { u32::from(c.capacity) })
        .collect()
}

fn has_smt(m: &Machine) -> bool {
    let mut cores: Vec<u32> = m.cpus.iter().map(|c| c.core).collect();
    cores.sort_unstable();
    cores.windows(2).any(|w| w[0] == w[1])
}

/// Whether SD_ASYM_PACKING is in force: x86 ITMT (`sched_set_itmt_support()` is
/// called when CPPC priorities differ, and cleared when hybrid capacity scaling
/// takes over), or a powerpc shared-processor LPAR (`splpar_asym_pack`), which we
/// model as "the machine gives distinct `asym_prio` values". Both are decided
/// at boot, over every CPU the machine booted with.
pub(crate) fn asym_packing_on(m: &Machine, cfg: &DomainConfig) -> bool {
    if !cfg.itmt || !prios_differ(m) {
        return false;
    }
    match m.arch {
        Arch::X86 => !kernel_capacities(m.as_booted())
            .windows(2)
            .any(|w| w[0] != w[1]),
        Arch::PowerPc => true,
        Arch::Arm64 => false,
    }
}

/// Do the CPUs the machine booted with have distinct `asym_prio` values
/// (ITMT priorities on x86, a shared-processor LPAR on powerpc)?
pub(crate) fn prios_differ(m: &Machine) -> bool {
    let b = m.as_booted();
    b.cpus.windows(2).any(|w| w[0].asym_prio != w[1].asym_prio)
}

/// The ITMT priorities the scheduler sees (`sched_core_priority`): the machine's
/// per-CPU `asym_prio`, except with `itmt_legacy_smt` on x86, where the pre-6.5
/// sched_set_itmt_core_prio() scales the i-th thread (1-based, in CPU order) of
/// every core by `smp_num_siblings / i^2`; `smp_num_siblings` is the largest
/// thread count of any core as the machine booted, so a single-thread core's
/// CPU is scaled by it too. (With CPUs offline, `i` counts the online threads
/// of a core: the kernel numbered them at boot, which only matters for a core
/// whose first thread went offline.)
pub fn itmt_priorities(m: &Machine, cfg: &DomainConfig) -> Vec<u32> {
    let mut prio: Vec<u32> = m.cpus.iter().map(|c| c.asym_prio).collect();
    if !cfg.itmt_legacy_smt || m.arch != Arch::X86 {
        return prio;
    }
    let b = m.as_booted();
    let threads_of = |core: u32| b.cpus.iter().filter(|c| c.core == core).count() as u64;
    let siblings = b.cpus.iter().map(|c| threads_of(c.core)).max().unwrap_or(1);
    for (i, c) in m.cpus.iter().enumerate() {
        let nth = m.cpus[..i].iter().filter(|o| o.core == c.core).count() as u64 + 1;
        prio[i] = (c.asym_prio as u64 * siblings / (nth * nth)) as u32;
    }
    prio
}

/// A copy of `m` whose `asym_prio` values are [`itmt_priorities`].
pub fn with_itmt_priorities(m: &Machine, cfg: &DomainConfig) -> Machine {
    let prio = itmt_priorities(m, cfg);
    let mut out = m.clone();
    for (c, p) in out.cpus.iter_mut().zip(prio) {
        c.asym_prio = p;
    }
    out
}

/// The topology table (arch part plus `sched_init_numa()` levels) and the sorted
/// distinct NUMA distances. The arch part is what the arch code listed at
/// boot, from the machine as it booted (`Machine::as_booted`): a level whose
/// CPUs went offline stays in the table and degenerates, so the levels above
/// keep their numbers (`sd->level`, which relax_domain_level compares).
fn topology_levels(m: &Machine, cfg: &DomainConfig, asym: bool) -> Vec<Level> {
    // sched_init_numa()'s distances are those between the nodes that have
    // (online) CPUs, as this machine's are; the arch part reads the booted
    // machine.
    let numa = m;
    let m = m.as_booted();
    let smt_flags = SdFlags::SHARE_CPUCAPACITY | SdFlags::SHARE_LLC; // cpu_smt_flags()
    let asym_f = if asym {
        SdFlags::ASYM_PACKING
    } else {
        SdFlags::empty()
    };
    let lvl = |name, mask, flags| Level {
        name,
        mask,
        flags,
        overlap: false,
        distance: 0,
    };
    let mut t = Vec::new();
    match m.arch {
        Arch::X86 => {
            // x86 build_sched_topology(): SMT is dropped when there is one thread
            // per core; CLS only with CONFIG_SCHED_CLUSTER; PKG is dropped with NUMA
            // inside a package. x86_sched_itmt_flags() adds ASYM_PACKING to CLS,
            // MC and PKG whenever ITMT is on (7.3's table; 6.x's x86_die_flags()
            // gave it to PKG on hybrid and AMD heterogeneous parts only).
            if has_smt(m) {
                // Before 6.5 x86_smt_flags() added the ITMT flags to SMT too.
                let f = if cfg.itmt_legacy_smt {
                    smt_flags | asym_f
                } else {
                    smt_flags
                };
                t.push(lvl("SMT", Mask::Smt, f));
            }
            if cfg.cluster {
                t.push(lvl(
                    "CLS",
                    Mask::Cluster,
                    SdFlags::CLUSTER | SdFlags::SHARE_LLC | asym_f,
                ));
            }
            t.push(lvl("MC", Mask::Coregroup, SdFlags::SHARE_LLC | asym_f));
            let numa_in_package = m.cpus.iter().any(|a| {
                m.cpus
                    .iter()
                    .any(|b| a.package == b.package && a.node != b.node)
            });
            if !numa_in_package {
                t.push(lvl("PKG", Mask::Pkg, asym_f));
            }
        }
        Arch::PowerPc => {
            // powerpc build_sched_topology(): SMT (small core), CACHE (L2), MC
            // (coregroup), PKG. A shared-processor LPAR adds ASYM_PACKING to CACHE,
            // MC and PKG (powerpc_shared_cache_flags(), powerpc_shared_proc_flags()).
            // CACHE is listed when some CPU's L2 is wider than its (small)
            // core, as smp_callin() decides `shared_caches`. MC is listed when
            // the firmware reports coregroups (has_coregroup_support()), which
            // a machine description shows as a node holding two or more dies
            // (the coregroup mask is clipped to the node, as
            // update_coregroup_mask() does). Since 2023 a shared-processor LPAR
            // (here: distinct asym_prio values) reports none, so 7.3 lists no
            // MC there. (The power10 preset models the dedicated-style
            // topology of the 5.12 kernels S2 measured: coregroups, no asym.)
            // The level numbers relax_domain_level compares follow from what
            // is listed, as sd->level counts the table's entries.
            t.push(lvl("SMT", Mask::Smt, smt_flags));
            use std::collections::{BTreeMap, BTreeSet};
            let tally = |key: &dyn Fn(&CpuInfo) -> u32| {
                let mut n: BTreeMap<u32, usize> = BTreeMap::new();
                for c in &m.cpus {
                    *n.entry(key(c)).or_default() += 1;
                }
                n
            };
            let (per_llc, per_core) = (tally(&|c| c.llc), tally(&|c| c.core));
            let shared_caches = m.cpus.iter().any(|c| per_llc[&c.llc] > per_core[&c.core]);
            if shared_caches {
                t.push(lvl("CACHE", Mask::L2Cache, SdFlags::SHARE_LLC | asym_f));
            }
            let pairs: BTreeSet<(u32, u32)> = m.cpus.iter().map(|c| (c.node, c.die)).collect();
            let nodes: BTreeSet<u32> = pairs.iter().map(|p| p.0).collect();
            // The LPAR's kind is the machine's, whatever the configuration
            // does with the priorities it implies.
            let shared_lpar = prios_differ(m);
            let coregroups = !shared_lpar && pairs.len() > nodes.len();
            if coregroups {
                let mc_llc = if cfg.mc_is_llc {
                    SdFlags::SHARE_LLC
                } else {
                    SdFlags::empty()
                };
                t.push(lvl("MC", Mask::PpcCoregroup, mc_llc | asym_f));
            }
            t.push(lvl("PKG", Mask::Pkg, asym_f));
        }
        Arch::Arm64 => {
            // default_topology[] of kernel/sched/topology.c.
            t.push(lvl("SMT", Mask::Smt, smt_flags));
            if cfg.cluster {
                t.push(lvl(
                    "CLS",
                    Mask::Cluster,
                    SdFlags::CLUSTER | SdFlags::SHARE_LLC,
                ));
            }
            t.push(lvl("MC", Mask::Coregroup, SdFlags::SHARE_LLC));
            t.push(lvl("PKG", Mask::Pkg, SdFlags::empty()));
        }
    }
    // sched_init_numa(): the distinct distances; NODE for the identity distance,
    // one NUMA level (SD_NUMA, overlapping groups) per larger one.
    for (j, &d) in numa_distances(numa).iter().enumerate() {
        if j == 0 {
            t.push(Level {
                name: "NODE",
                mask: Mask::Numa(0),
                flags: SdFlags::empty(),
                overlap: false,
                distance: d,
            });
        } else {
            t.push(Level {
                name: "NUMA",
                mask: Mask::Numa(j),
                flags: SdFlags::NUMA,
                overlap: true,
                distance: d,
            });
        }
    }
    t
}

/// Sorted distinct node distances (`sched_domains_numa_distance[]`), between
/// the nodes that have CPUs: sched_init_numa() walks the N_CPU nodes only
/// (`for_each_cpu_node_but()`), so a memory-only node adds no distance, nor
/// does one whose CPUs are all offline (sched_update_numa() rebuilds the
/// table without it when its last CPU goes).
fn numa_distances(m: &Machine) -> Vec<u32> {
    let mut nodes: Vec<u32> = m.cpus.iter().map(|c| c.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut d: Vec<u32> = nodes
        .iter()
        .flat_map(|&a| nodes.iter().map(move |&b| (a, b)))
        .map(|(a, b)| m.node_distance(a, b))
        .collect();
    d.push(10);
    d.sort_unstable();
    d.dedup();
    d
}

/// The level's mask for `cpu` (`tl->mask(tl, cpu)`).
fn level_mask(
    m: &Machine,
    mk: &Masks,
    dists: &[u32],
    cfg: &DomainConfig,
    mask: Mask,
    cpu: usize,
) -> CpuMask {
    match mask {
        Mask::Smt => mk.smt[cpu],
        Mask::Cluster => match m.arch {
            // x86: cpu_l2c_shared_mask().
            Arch::X86 => mk.cluster[cpu],
            // arch_topology.c cpu_clustergroup_mask(): never as wide as the
            // coregroup; then the SMT siblings.
            _ => {
                if coregroup(m, mk, cfg, cpu).is_subset(&mk.cluster[cpu]) {
                    mk.smt[cpu]
                } else {
                    mk.cluster[cpu]
                }
            }
        },
        Mask::Coregroup => coregroup(m, mk, cfg, cpu),
        Mask::L2Cache => mk.llc[cpu],
        // update_coregroup_mask(): the coregroup within the CPU's node.
        Mask::PpcCoregroup => mk.die[cpu].and(&mk.node[cpu]),
        Mask::Pkg => mk.node[cpu],
        Mask::Numa(j) => {
            let limit = dists.get(j).copied().unwrap_or(u32::MAX);
            let my = m.cpus[cpu].node;
            CpuMask::from_cpus(
                m.cpus
                    .iter()
                    .filter(|c| m.node_distance(my, c.node) <= limit)
                    .map(|c| c.id),
            )
        }
    }
}

/// `cpu_coregroup_mask()`: x86 returns the LLC siblings; arch_topology.c takes the
/// smallest of node, package and LLC siblings, widened to the cluster when the
/// result fits in it and CONFIG_SCHED_CLUSTER is on.
fn coregroup(m: &Machine, mk: &Masks, cfg: &DomainConfig, cpu: usize) -> CpuMask {
    match m.arch {
        Arch::X86 | Arch::PowerPc => mk.llc[cpu],
        Arch::Arm64 => {
            let mut core = mk.node[cpu];
            if mk.package[cpu].is_subset(&core) {
                core = mk.package[cpu];
            }
            if mk.llc[cpu].is_subset(&core) {
                core = mk.llc[cpu];
            }
            if cfg.cluster && core.is_subset(&mk.cluster[cpu]) {
                core = mk.cluster[cpu];
            }
            core
        }
    }
}

/// `asym_cpu_capacity_classify()`: ASYM_CPUCAPACITY when the span holds two or more
/// distinct capacities, plus _FULL when it holds all of the machine's.
fn asym_classify(span: &CpuMask, caps: &[u32]) -> SdFlags {
    let mut all: Vec<u32> = caps.to_vec();
    all.sort_unstable();
    all.dedup();
    let mut mine: Vec<u32> = span.iter().map(|c| caps[c as usize]).collect();
    mine.sort_unstable();
    mine.dedup();
    if mine.len() < 2 {
        SdFlags::empty()
    } else if mine.len() < all.len() {
        SdFlags::ASYM_CPUCAPACITY
    } else {
        SdFlags::ASYM_CPUCAPACITY | SdFlags::ASYM_CPUCAPACITY_FULL
    }
}

/// Builds the per-CPU domain hierarchies. Mirrors `build_sched_domains()`.
pub fn build_domains(m: &Machine, cfg: &DomainConfig) -> Result<Domains, TopoError> {
    let legacy;
    let m = if cfg.itmt_legacy_smt {
        legacy = with_itmt_priorities(m, cfg);
        &legacy
    } else {
        m
    };
    let n = m.nr_cpus();
    let origin = format!("machine {}", m.name);
    if n == 0 || m.cpus.iter().enumerate().any(|(i, c)| c.id as usize != i) {
        return Err(TopoError::Domains {
            origin,
            reason: "CPU ids must be dense 0..N".into(),
        });
    }
    let all = m.all_cpus();
    let mk = Masks::new(m);
    let caps = kernel_capacities(m);
    let asym = asym_packing_on(m, cfg);
    let levels = topology_levels(m, cfg, asym);
    let dists = numa_distances(m);

    // 2. Domains per CPU: build_sched_domain() + sd_init().
    let mut raw: Vec<Vec<Raw>> = Vec::with_capacity(n);
    for cpu in 0..n {
        let mut chain: Vec<Raw> = Vec::new();
        for (li, l) in levels.iter().enumerate() {
            let mask = level_mask(m, &mk, &dists, cfg, l.mask, cpu);
            let mut span = mask.and(&all);
            if let Some(child) = chain.last() {
                // "BUG: arch topology borken" fix-up: a domain covers its child.
                span = span.or(&child.span);
            }
            // (7.3's sd_init() no longer takes SD_PREFER_SIBLING off the
            // child of an asymmetric-capacity domain; only NUMA levels lose it.)
            let mut d = sd_init(l, li, span, mask.weight(), &caps);
            // set_domain_attribute(): relax_domain_level turns idle
            // balancing off from that level up.
            if cfg.relax_domain_level >= 0 && li as i32 >= cfg.relax_domain_level {
                d.flags = d
                    .flags
                    .without(SdFlags::BALANCE_NEWIDLE)
                    .without(SdFlags::BALANCE_WAKE);
            }
            let done = d.span == all;
            chain.push(d);
            if done {
                break;
            }
        }
        raw.push(chain);
    }
    check_spans(&origin, &raw, &levels)?;

    // 3. Groups.
    for cpu in 0..n {
        for li in 0..raw[cpu].len() {
            let (groups, balance) = if levels[raw[cpu][li].level].overlap {
                overlap_groups(&raw, cpu, li).into_iter().unzip()
            } else {
                // get_group(): the group's sgc is this level's, of the
                // group's first CPU.
                let g = plain_groups(&raw, cpu, li);
                let b = g
                    .iter()
                    .map(|x| (x.0, li as u8, x.0.first().unwrap_or(0)))
                    .collect();
                (g, b)
            };
            raw[cpu][li].groups = groups;
            raw[cpu][li].balance = balance;
        }
    }

    // 4. imb_numa_nr, on the tree before degeneration.
    for chain in raw.iter_mut() {
        let mut imb: u32 = 0;
        let mut imb_span: u32 = 1;
        for i in 0..chain.len() {
            let w = chain[i].span.weight();
            let child_llc = i > 0 && chain[i - 1].flags.contains(SdFlags::SHARE_LLC);
            if !chain[i].flags.contains(SdFlags::SHARE_LLC) && child_llc {
                let nr_llcs = w / chain[i - 1].span.weight().max(1);
                imb = if nr_llcs == 1 { w >> 3 } else { nr_llcs };
                imb = imb.max(1);
                chain[i].imb_numa_nr = imb;
                imb_span = chain[i + 1..]
                    .iter()
                    .find(|p| p.flags.contains(SdFlags::NUMA))
                    .map_or(w, |p| p.span.weight());
            } else {
                let factor = (w / imb_span.max(1)).max(1);
                chain[i].imb_numa_nr = imb * factor;
            }
        }
    }

    // 6. Degeneration: cpu_attach_domain().
    let attached: Vec<Attached> = raw.iter().map(|c| attach(c, cfg)).collect();

    // Shortcut keys need every CPU's final chain: assemble.
    // sched_cluster_active: build_sched_domains() asks lowest_flag_domain()
    // after cpu_attach_domain(), so a CLS level that degenerated everywhere
    // (a cluster no wider than an SMT core) leaves it off. has_asym is
    // collected before degeneration.
    let cluster_active = attached
        .iter()
        .any(|a| a.flags.iter().any(|f| f.contains(SdFlags::CLUSTER)));
    let asym_cpucapacity = raw
        .iter()
        .flatten()
        .any(|d| d.flags.contains(SdFlags::ASYM_CPUCAPACITY));

    let mut cpus: Vec<CpuDomains> = Vec::with_capacity(n);
    for cpu in 0..n {
        let at = &attached[cpu];
        let mut domains = Vec::with_capacity(at.alive.len());
        for (k, &ri) in at.alive.iter().enumerate() {
            let r = &raw[cpu][ri];
            let l = &levels[r.level];
            let overlap = l.overlap;
            let groups = r
                .groups
                .iter()
                .enumerate()
                .map(|(gi, (span, build_flags))| {
                    // 5. init_sched_groups_capacity() + the group flags after attach:
                    // plain groups are shared by all CPUs of the group, so their flags
                    // are what the group's CPUs left in them; overlap groups are
                    // private, only the local one is rewritten.
                    let flags = if gi == 0 {
                        at.lg_flags[k]
                    } else if overlap {
                        *build_flags
                    } else {
                        let first = span.first().unwrap_or(0) as usize;
                        group_flags_of(&attached[first], ri).unwrap_or(*build_flags)
                    };
                    make_group(m, &caps, *span, flags, r.balance[gi])
                })
                .collect();
            let w = r.mask_weight;
            domains.push(SchedDomain {
                name: l.name.to_string(),
                level: r.level as u8,
                span: r.span,
                flags: at.flags[k],
                groups,
                weight: w,
                min_interval_ms: w,
                max_interval_ms: 2 * w,
                busy_factor: 16,
                imbalance_pct: r.imbalance_pct,
                cache_nice_tries: r.cache_nice_tries,
                imb_numa_nr: r.imb_numa_nr,
                numa_distance: if r.flags.contains(SdFlags::NUMA) {
                    l.distance
                } else {
                    0
                },
            });
        }
        cpus.push(shortcuts(cpu as CpuId, domains, cfg));
    }
    write_sd_tunables(&origin, &mut cpus, &cfg.sd_tunables)?;
    dense_llc_ids(&mut cpus);
    Ok(Domains {
        config: cfg.clone(),
        cpus,
        cluster_active,
        asym_cpucapacity,
    })
}

/// The per-domain debugfs writes of `tunables`, in order, on the built
/// domains. A write that reaches no domain, or leaves a domain with
/// min_interval above max_interval, is refused.
fn write_sd_tunables(
    origin: &str,
    cpus: &mut [CpuDomains],
    tunables: &[crate::domains::SdTunable],
) -> Result<(), TopoError> {
    for t in tunables {
        let mut hit = false;
        for c in cpus.iter_mut() {
            let cpu = c.cpu;
            for (k, d) in c.domains.iter_mut().enumerate() {
                if t.targets(u32::from(cpu), k, d) {
                    t.write(d);
                    hit = true;
                }
            }
        }
        if !hit {
            let mut names: Vec<&str> = Vec::new();
            for d in cpus.iter().flat_map(|c| &c.domains) {
                if !names.contains(&d.name.as_str()) {
                    names.push(&d.name);
                }
            }
            return Err(TopoError::Domains {
                origin: origin.to_string(),
                reason: format!(
                    "tunable {}: no such domain (domains here: {})",
                    t.target,
                    names.join(", ")
                ),
            });
        }
    }
    for c in cpus.iter() {
        for (k, d) in c.domains.iter().enumerate() {
            if d.min_interval_ms > d.max_interval_ms {
                return Err(TopoError::Domains {
                    origin: origin.to_string(),
                    reason: format!(
                        "cpu{} domain{k} {}: min_interval {} is above max_interval {}",
                        c.cpu, d.name, d.min_interval_ms, d.max_interval_ms
                    ),
                });
            }
        }
    }
    Ok(())
}

/// `sd_init()`: defaults and the topology flags turned into behaviour.
fn sd_init(l: &Level, li: usize, span: CpuMask, mask_weight: u32, caps: &[u32]) -> Raw {
    let mut flags = SdFlags::BALANCE_NEWIDLE
        | SdFlags::BALANCE_EXEC
        | SdFlags::BALANCE_FORK
        | SdFlags::WAKE_AFFINE
        | SdFlags::PREFER_SIBLING
        | l.flags;
    flags = flags | asym_classify(&span, caps);
    let mut imbalance_pct = 117;
    let cache_nice_tries;
    if flags.contains(SdFlags::SHARE_CPUCAPACITY) {
        imbalance_pct = 110;
        cache_nice_tries = 0;
    } else if flags.contains(SdFlags::SHARE_LLC) {
        imbalance_pct = 117;
        cache_nice_tries = 1;
    } else if flags.contains(SdFlags::NUMA) {
        cache_nice_tries = 2;
        flags = flags.without(SdFlags::PREFER_SIBLING) | SdFlags::SERIALIZE;
        if l.distance > RECLAIM_DISTANCE {
            flags = flags
                .without(SdFlags::BALANCE_EXEC)
                .without(SdFlags::BALANCE_FORK)
                .without(SdFlags::WAKE_AFFINE);
        }
    } else {
        cache_nice_tries = 1;
    }
    Raw {
        level: li,
        span,
        mask_weight,
        flags,
        imbalance_pct,
        cache_nice_tries,
        imb_numa_nr: 0,
        groups: Vec::new(),
        balance: Vec::new(),
    }
}

/// `topology_span_sane()`: on non-NUMA levels, two CPUs' spans are equal or
/// disjoint; the kernel refuses to build domains otherwise.
fn check_spans(origin: &str, raw: &[Vec<Raw>], levels: &[Level]) -> Result<(), TopoError> {
    for (li, l) in levels.iter().enumerate() {
        if l.overlap {
            continue;
        }
        for a in raw {
            let Some(da) = a.get(li) else { continue };
            for b in raw {
                let Some(db) = b.get(li) else { continue };
                if da.span != db.span && da.span.intersects(&db.span) {
                    return Err(TopoError::Domains {
                        origin: origin.to_string(),
                        reason: format!(
                            "{} level: spans {} and {} overlap (topology_span_sane)",
                            l.name,
                            da.span.to_list_string(),
                            db.span.to_list_string()
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// `build_sched_groups()`: walk the span from `cpu` wrapping around; each CPU not
/// yet covered contributes its child domain's span (`get_group()`).
fn plain_groups(raw: &[Vec<Raw>], cpu: usize, li: usize) -> Vec<(CpuMask, SdFlags)> {
    let span = raw[cpu][li].span;
    let mut covered = CpuMask::new();
    let mut out = Vec::new();
    for i in span.iter_wrap(cpu as CpuId) {
        if covered.test(i) {
            continue;
        }
        let (g, f) = match li.checked_sub(1).and_then(|c| raw[i as usize].get(c)) {
            Some(child) => (child.span, child.flags),
            None => (CpuMask::from_cpus([i]), SdFlags::empty()),
        };
        covered = covered.or(&g);
        out.push((g, f));
    }
    out
}

/// `build_overlap_sched_groups()`: each uncovered CPU `i` of the span contributes
/// the child span of its own domain at this level (`sibling`), descending first
/// (`find_descended_sibling()`) when that child reaches outside the span. CPUs
/// whose hierarchy ended below this level are skipped, as in the kernel.
#[allow(clippy::type_complexity)]
fn overlap_groups(
    raw: &[Vec<Raw>],
    cpu: usize,
    li: usize,
) -> Vec<((CpuMask, SdFlags), (CpuMask, u8, CpuId))> {
    let span = raw[cpu][li].span;
    let mut covered = CpuMask::new();
    let mut out = Vec::new();
    for i in span.iter_wrap(cpu as CpuId) {
        if covered.test(i) {
            continue;
        }
        let chain = &raw[i as usize];
        let Some(sib) = chain.get(li) else { continue };
        if !sib.span.test(i) {
            continue;
        }
        let mut s = li;
        if s > 0 && !chain[s - 1].span.is_subset(&span) {
            while s > 0 && !chain[s - 1].span.is_subset(&span) {
                s -= 1;
            }
            while s > 0 && chain[s - 1].span == chain[s].span {
                s -= 1;
            }
        }
        let (g, f) = if s > 0 {
            (chain[s - 1].span, chain[s - 1].flags)
        } else {
            (chain[s].span, SdFlags::empty())
        };
        covered = covered.or(&g);
        // init_overlap_sched_group(): the sgc of the sibling's level, of
        // the balance mask's first CPU.
        let mask = balance_mask(raw, s, &g);
        let sgc_cpu = mask.first().or(g.first()).unwrap_or(0);
        out.push(((g, f), (mask, s as u8, sgc_cpu)));
    }
    out
}

/// `build_balance_mask()` of an overlap group built from the domains at
/// raw index `s` (the sibling it came from, perhaps a descended one): the
/// CPUs of the group whose own domain at that index has a child, before
/// degenerate domains are removed, spanning exactly the group.
fn balance_mask(raw: &[Vec<Raw>], s: usize, g: &CpuMask) -> CpuMask {
    let mut m = CpuMask::new();
    if s == 0 {
        return m;
    }
    for j in g.iter() {
        let chain = &raw[j as usize];
        if chain.len() > s && chain[s - 1].span == *g {
            m.set(j);
        }
    }
    m
}

/// One CPU's hierarchy after `cpu_attach_domain()`.
struct Attached {
    /// Raw indices of the surviving domains, bottom-up.
    alive: Vec<usize>,
    /// Their final flags.
    flags: Vec<SdFlags>,
    /// Their local group's flags (`sd->groups->flags`).
    lg_flags: Vec<SdFlags>,
}

fn group_flags_of(a: &Attached, raw_index: usize) -> Option<SdFlags> {
    a.alive
        .iter()
        .position(|&r| r == raw_index)
        .map(|k| a.lg_flags[k])
}

/// `sd_degenerate()`.
fn sd_degenerate(span: &CpuMask, flags: SdFlags, nr_groups: usize) -> bool {
    if span.weight() == 1 {
        return true;
    }
    if flags.intersects(SdFlags::DEGENERATE_GROUPS_MASK) && nr_groups > 1 {
        return false;
    }
    !flags.intersects(SdFlags::WAKE_AFFINE)
}

/// `cpu_attach_domain()`: remove parents that add nothing (`sd_parent_degenerate()`),
/// moving SD_PREFER_SIBLING down and (since 6.6, `propagate_smt_flags`) giving the
/// grandparent's local group the survivor's flags; then drop a degenerate base
/// domain and clear its parent's local group flags.
fn attach(chain: &[Raw], cfg: &DomainConfig) -> Attached {
    let len = chain.len();
    let mut alive: Vec<bool> = vec![true; len];
    let mut flags: Vec<SdFlags> = chain.iter().map(|d| d.flags).collect();
    let mut lg: Vec<SdFlags> = chain
        .iter()
        .map(|d| d.groups.first().map_or(SdFlags::empty(), |g| g.1))
        .collect();
    let next_alive = |alive: &[bool], from: usize| (from + 1..len).find(|&j| alive[j]);
    let mut t = 0usize;
    while let Some(p) = next_alive(&alive, t) {
        let parent = &chain[p];
        let degenerate = if sd_degenerate(&parent.span, flags[p], parent.groups.len()) {
            true
        } else if chain[t].span != parent.span {
            false
        } else {
            let mut pflags = flags[p];
            if parent.groups.len() == 1 {
                pflags = pflags.without(SdFlags::DEGENERATE_GROUPS_MASK);
            }
            pflags.without(flags[t]).0 == 0
        };
        if degenerate {
            if let Some(gp) = next_alive(&alive, p) {
                if cfg.propagate_smt_flags {
                    lg[gp] = flags[t];
                }
            }
            if flags[p].contains(SdFlags::PREFER_SIBLING) {
                flags[t] = flags[t] | SdFlags::PREFER_SIBLING;
            }
            alive[p] = false;
        } else {
            t = p;
        }
    }
    if len > 0 && sd_degenerate(&chain[0].span, flags[0], chain[0].groups.len()) {
        alive[0] = false;
        if let Some(nb) = next_alive(&alive, 0) {
            lg[nb] = SdFlags::empty();
        }
    }
    let keep: Vec<usize> = (0..len).filter(|&i| alive[i]).collect();
    Attached {
        flags: keep.iter().map(|&i| flags[i]).collect(),
        lg_flags: keep.iter().map(|&i| lg[i]).collect(),
        alive: keep,
    }
}

/// A group with `init_sched_groups_capacity()`'s data.
/// A group of `span` with its flags and its balance mask and
/// sched_group_capacity key (`sgc`: mask, level, CPU).
fn make_group(
    m: &Machine,
    caps: &[u32],
    span: CpuMask,
    flags: SdFlags,
    sgc: (CpuMask, u8, CpuId),
) -> SchedGroup {
    let capacity = span.iter().map(|c| caps[c as usize]).sum();
    let mut cores: Vec<u32> = span.iter().map(|c| m.cpus[c as usize].core).collect();
    cores.sort_unstable();
    cores.dedup();
    // sched_asym_prefer(): strictly higher priority wins, ties keep the lower CPU.
    let mut best: Option<CpuId> = None;
    for c in span.iter() {
        best = match best {
            Some(b) if m.cpus[c as usize].asym_prio <= m.cpus[b as usize].asym_prio => Some(b),
            _ => Some(c),
        };
    }
    SchedGroup {
        span,
        flags,
        capacity,
        cores: cores.len() as u32,
        asym_prefer_cpu: best.unwrap_or(0),
        balance_mask: sgc.0,
        sgc_level: sgc.1,
        sgc_cpu: sgc.2,
    }
}

/// `highest_flag_domain()`: the highest domain with `flag`; for SHARED_CHILD flags
/// the walk stops at the first domain without it.
fn highest_flag(d: &[SchedDomain], flag: SdFlags) -> Option<usize> {
    let mut h = None;
    for (i, s) in d.iter().enumerate() {
        if s.flags.contains(flag) {
            h = Some(i);
        } else if flag.intersects(SdFlags::SHARED_CHILD_MASK) {
            break;
        }
    }
    h
}

/// `lowest_flag_domain()`.
fn lowest_flag(d: &[SchedDomain], flag: SdFlags) -> Option<usize> {
    d.iter().position(|s| s.flags.contains(flag))
}

/// `update_top_cache_domain()` (the LLC id is made dense afterwards), plus
/// SD_FALLBACK_LLC for the S2 patch set.
fn shortcuts(cpu: CpuId, mut domains: Vec<SchedDomain>, cfg: &DomainConfig) -> CpuDomains {
    let sd_llc = highest_flag(&domains, SdFlags::SHARE_LLC);
    if cfg.fallback_llc {
        // CHOICE: S2 marks the level above the LLC (POWER10's MC); we put the flag
        // on the first domain above sd_llc after degeneration.
        let above = sd_llc.map_or(0, |i| i + 1);
        if let Some(d) = domains.get_mut(above) {
            d.flags = d.flags | SdFlags::FALLBACK_LLC;
        }
    }
    let (llc_first, llc_size) = match sd_llc {
        Some(i) => (
            domains[i].span.first().unwrap_or(cpu),
            domains[i].span.weight(),
        ),
        None => (cpu, 1),
    };
    let sd_cluster = lowest_flag(&domains, SdFlags::CLUSTER);
    let share_id = match sd_cluster {
        Some(i) => domains[i].span.first().unwrap_or(cpu),
        None => llc_first,
    };
    CpuDomains {
        cpu,
        sd_numa: lowest_flag(&domains, SdFlags::NUMA),
        sd_asym_packing: highest_flag(&domains, SdFlags::ASYM_PACKING),
        sd_asym_cpucapacity: lowest_flag(&domains, SdFlags::ASYM_CPUCAPACITY_FULL),
        sd_cluster,
        sd_llc,
        llc_size,
        // Temporarily the first CPU of the LLC; made dense by dense_llc_ids().
        llc_id: u32::from(llc_first),
        share_id,
        domains,
    }
}

/// `sd_llc_id` as a dense index, in order of the LLCs' first CPUs.
fn dense_llc_ids(cpus: &mut [CpuDomains]) {
    let mut firsts: Vec<u32> = cpus.iter().map(|c| c.llc_id).collect();
    firsts.sort_unstable();
    firsts.dedup();
    for c in cpus.iter_mut() {
        c.llc_id = firsts.binary_search(&c.llc_id).unwrap_or(0) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    fn doms(machine: &str, cfg: &str) -> Domains {
        let m = preset(machine).unwrap();
        build_domains(&m, &DomainConfig::named(cfg).unwrap()).unwrap()
    }

    /// `NAME span` per domain of one CPU.
    fn chain(d: &Domains, cpu: usize) -> Vec<String> {
        d.cpus[cpu]
            .domains
            .iter()
            .map(|s| format!("{} {}", s.name, s.span.to_list_string()))
            .collect()
    }

    fn groups(d: &Domains, cpu: usize, k: usize) -> Vec<String> {
        d.cpus[cpu].domains[k]
            .groups
            .iter()
            .map(|g| g.span.to_list_string())
            .collect()
    }

    #[test]
    fn kunpeng920_cluster() {
        let d = doms("kunpeng920", "cluster");
        assert_eq!(
            chain(&d, 0),
            ["CLS 0-3", "MC 0-23", "NUMA 0-47", "NUMA 0-71", "NUMA 0-95"]
        );
        assert_eq!(groups(&d, 0, 0), ["0", "1", "2", "3"]);
        assert_eq!(
            groups(&d, 0, 1),
            ["0-3", "4-7", "8-11", "12-15", "16-19", "20-23"]
        );
        assert_eq!(groups(&d, 0, 2), ["0-23", "24-47"]);
        assert_eq!(groups(&d, 0, 3), ["0-47", "48-71"]);
        // cpu72 (node 3) has NUMA(20) = nodes {2,3} = 48-95 as the child of its
        // NUMA(22) domain, so the kernel's overlap groups overlap on 48-71.
        assert_eq!(groups(&d, 0, 4), ["0-71", "48-95"]);
        assert!(d.cluster_active);
        assert!(!d.asym_cpucapacity);
        let c = &d.cpus[5];
        assert_eq!(c.sd_llc, Some(1));
        assert_eq!(c.llc_size, 24);
        assert_eq!(c.share_id, 4);
        assert_eq!(c.sd_cluster, Some(0));
        assert_eq!(c.sd_numa, Some(2));
        assert_eq!(d.cpus[30].llc_id, 1);
        let cls = &c.domains[0];
        assert_eq!(cls.flags.names().join(" "), "SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_CLUSTER SD_SHARE_LLC SD_PREFER_SIBLING");
        let numa = &c.domains[2];
        assert_eq!(numa.flags.names().join(" "), "SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_SERIALIZE SD_NUMA");
        assert_eq!((numa.cache_nice_tries, numa.imbalance_pct), (2, 117));
        assert_eq!(numa.numa_distance, 12);
        // imb_numa_nr: 1 LLC per node => 24 >> 3 = 3, scaled by |A| / 48 above.
        let imb: Vec<u32> = c.domains.iter().map(|s| s.imb_numa_nr).collect();
        assert_eq!(imb, [0, 0, 3, 3, 6]);
        // cpu24 (node 1): NUMA(20) equals NUMA(12) and degenerates.
        assert_eq!(
            chain(&d, 24),
            [
                "CLS 24-27",
                "MC 24-47",
                "NUMA 0-47",
                "NUMA 0-71",
                "NUMA 0-95"
            ]
        );
    }

    #[test]
    fn kunpeng920_vanilla() {
        let d = doms("kunpeng920", "vanilla");
        assert_eq!(
            chain(&d, 0),
            ["MC 0-23", "NUMA 0-47", "NUMA 0-71", "NUMA 0-95"]
        );
        assert_eq!(d.cpus[0].domains[0].groups.len(), 24);
        assert!(!d.cluster_active);
        assert_eq!(d.cpus[7].share_id, 0);
        assert_eq!(d.cpus[7].sd_cluster, None);
    }

    #[test]
    fn genoa() {
        let d = doms("genoa", "vanilla");
        assert_eq!(
            chain(&d, 0),
            ["SMT 0-1", "MC 0-15", "NODE 0-31", "NUMA 0-127"]
        );
        assert_eq!(groups(&d, 0, 2), ["0-15", "16-31"]);
        assert_eq!(groups(&d, 33, 3), ["32-63", "64-95", "96-127", "0-31"]);
        let node = &d.cpus[0].domains[2];
        assert!(!node.flags.contains(SdFlags::NUMA));
        assert_eq!(node.imb_numa_nr, 2);
        // 2 LLCs per node => imb 2 on NODE; NUMA spans 128 = the first NUMA domain.
        assert_eq!(d.cpus[0].domains[3].imb_numa_nr, 2);
        assert!(d.cpus[0].domains[1].groups[0]
            .flags
            .contains(SdFlags::SHARE_CPUCAPACITY));
    }

    #[test]
    fn sapphirerapids() {
        let d = doms("sapphirerapids", "vanilla");
        assert_eq!(chain(&d, 0), ["SMT 0-1", "MC 0-59", "PKG 0-119"]);
        assert_eq!(groups(&d, 1, 0), ["1", "0"]);
        let g = groups(&d, 2, 1);
        assert_eq!((g[0].as_str(), g[29].as_str()), ("2-3", "0-1"));
        assert_eq!(groups(&d, 2, 2), ["0-59", "60-119"]);
        assert_eq!(groups(&d, 60, 2), ["60-119", "0-59"]);
        assert_eq!(d.cpus[0].domains[1].groups[0].capacity, 2048);
        assert_eq!(d.cpus[0].domains[2].groups[0].capacity, 61440);
    }

    #[test]
    fn exynos_asym_capacity() {
        for name in ["exynos5422", "exynos5433"] {
            let d = doms(name, "vanilla");
            assert_eq!(chain(&d, 0), ["MC 0-3", "PKG 0-7"]);
            let pkg = &d.cpus[0].domains[1];
            assert!(pkg
                .flags
                .contains(SdFlags::ASYM_CPUCAPACITY | SdFlags::ASYM_CPUCAPACITY_FULL));
            // 7.3's sd_init() leaves SD_PREFER_SIBLING on the child of an
            // asym domain.
            assert!(d.cpus[0].domains[0].flags.contains(SdFlags::PREFER_SIBLING));
            assert_eq!(d.cpus[0].sd_asym_cpucapacity, Some(1));
            assert!(d.asym_cpucapacity);
            assert_eq!(d.cpus[4].llc_id, 1);
            // CLS never spans the coregroup on arm64: it degenerates.
            let c = doms(name, "cluster");
            assert_eq!(chain(&c, 0), ["MC 0-3", "PKG 0-7"]);
        }
    }

    #[test]
    fn power10() {
        let v = doms("power10", "vanilla");
        assert_eq!(chain(&v, 0), ["SMT 0,2,4,6", "MC 0-39", "PKG 0-79"]);
        assert_eq!(v.cpus[0].llc_size, 4);
        assert_eq!(v.cpus[0].sd_llc, Some(0));
        assert!(!v.cpus[0].domains[1].flags.contains(SdFlags::SHARE_LLC));
        let l = doms("power10", "mc-llc");
        assert_eq!(l.cpus[0].sd_llc, Some(1));
        assert_eq!(l.cpus[0].llc_size, 40);
        let p = doms("power10", "patchset");
        assert_eq!(p.cpus[0].llc_size, 4);
        assert!(p.cpus[0].domains[1].flags.contains(SdFlags::FALLBACK_LLC));
    }

    #[test]
    fn alderlake() {
        let c = doms("alderlake", "cluster");
        assert_eq!(chain(&c, 0), ["SMT 0-1", "MC 0-19"]);
        assert_eq!(chain(&c, 12), ["CLS 12-15", "MC 0-19"]);
        let mc = &c.cpus[0].domains[1];
        assert!(mc.flags.contains(SdFlags::ASYM_PACKING));
        assert!(!mc.flags.contains(SdFlags::ASYM_CPUCAPACITY));
        assert!(!c.asym_cpucapacity);
        assert_eq!(c.cpus[0].sd_asym_packing, Some(1));
        assert_eq!(c.cpus[12].sd_asym_packing, Some(1));
        assert!(c.cpus[12].domains[0].flags.contains(SdFlags::ASYM_PACKING));
        assert!(!c.cpus[0].domains[0].flags.contains(SdFlags::ASYM_PACKING));
        let g = groups(&c, 0, 1);
        assert_eq!(
            g,
            ["0-1", "2-3", "4-5", "6-7", "8-9", "10-11", "12-15", "16-19"]
        );
        // The P-core groups keep SD_SHARE_CPUCAPACITY (propagate_smt_flags)...
        assert!(mc.groups[1].flags.contains(SdFlags::SHARE_CPUCAPACITY));
        assert!(mc.groups[6].flags.contains(SdFlags::CLUSTER));
        assert_eq!(mc.groups[6].capacity, 4096);
        assert_eq!(mc.groups[0].asym_prefer_cpu, 0);
        // ...and lose it in cluster-naive (5.16): they carry the dead CLS's flags.
        let n = doms("alderlake", "cluster-naive");
        let mcn = &n.cpus[0].domains[1];
        assert!(!mcn.groups[1].flags.contains(SdFlags::SHARE_CPUCAPACITY));
        assert!(mcn.groups[1].flags.contains(SdFlags::CLUSTER));
        // The E-core CLS's groups: the removed SMT base domain clears them.
        assert_eq!(c.cpus[12].domains[0].groups[0].flags, SdFlags::empty());
        let v = doms("alderlake", "vanilla");
        assert_eq!(chain(&v, 12), ["MC 0-19"]);
        assert!(!v.cluster_active);
        assert!(c.cluster_active);
    }

    /// 7.3's x86 table gives PKG the ITMT flags on any x86 part
    /// (x86_sched_itmt_flags()), not only on hybrid ones: a package of two
    /// LLCs with favoured cores packs by priority at PKG too.
    #[test]
    fn x86_pkg_packs_by_itmt_priority_on_any_part() {
        let mut m = preset("sapphirerapids").unwrap();
        for c in m.cpus.iter_mut() {
            c.llc = c.core / 15;
        }
        let pkg_flags = |m: &Machine| {
            let d = build_domains(m, &DomainConfig::named("vanilla").unwrap()).unwrap();
            let pkg = d.cpus[0].domains.iter().find(|d| d.name == "PKG").unwrap();
            assert!(pkg.span.weight() > 30, "PKG above a 30-CPU MC");
            pkg.flags
        };
        assert!(!pkg_flags(&m).contains(SdFlags::ASYM_PACKING));
        for c in m.cpus.iter_mut() {
            c.asym_prio = if c.core % 15 == 0 { 2 } else { 1 };
        }
        assert!(pkg_flags(&m).contains(SdFlags::ASYM_PACKING));
    }

    /// sched_cluster_active is decided on the attached domains: Genoa's CLS
    /// level spans an SMT core, degenerates everywhere and leaves it off.
    #[test]
    fn a_cluster_level_that_degenerates_everywhere_is_not_active() {
        let g = doms("genoa", "cluster");
        assert!(g.cpus.iter().all(|c| c.sd_cluster.is_none()));
        assert!(!g.cluster_active);
        assert!(doms("kunpeng920", "cluster").cluster_active);
    }

    #[test]
    fn configs_named() {
        for n in crate::domains::CONFIG_NAMES {
            assert!(DomainConfig::named(n).is_some());
        }
        assert!(DomainConfig::named("nope").is_none());
    }

    /// relax_domain_level=N takes SD_BALANCE_NEWIDLE off the domains at
    /// topology-table position N and above (set_domain_attribute()), and
    /// leaves the rest of the hierarchy as it was.
    #[test]
    fn relax_domain_level_turns_off_newidle_from_its_level_up() {
        let m = preset("kunpeng920").unwrap();
        let base = build_domains(&m, &DomainConfig::named("cluster").unwrap()).unwrap();
        let levels: Vec<(String, u8)> = base.cpus[0]
            .domains
            .iter()
            .map(|d| (d.name.clone(), d.level))
            .collect();
        assert_eq!(levels[..2], [("CLS".into(), 1), ("MC".into(), 2)]);
        let mut cfg = DomainConfig::named("cluster").unwrap();
        cfg.relax_domain_level = 2;
        let d = build_domains(&m, &cfg).unwrap();
        assert_eq!(chain(&d, 0), chain(&base, 0));
        for (a, b) in d.cpus[0].domains.iter().zip(&base.cpus[0].domains) {
            let newidle = a.flags.contains(SdFlags::BALANCE_NEWIDLE);
            assert_eq!(newidle, a.level < 2, "{} level {}", a.name, a.level);
            assert_eq!(
                a.flags.without(SdFlags::BALANCE_NEWIDLE),
                b.flags.without(SdFlags::BALANCE_NEWIDLE)
            );
        }
    }

    /// powerpc lists CACHE only when an L2 is wider than its small core and
    /// MC only with coregroups, as build_sched_topology() does, so the levels
    /// relax_domain_level counts match the kernel's: POWER10's MC is level 1
    /// (its L2 is per small core), and without coregroups PKG follows SMT.
    #[test]
    fn powerpc_lists_cache_and_mc_only_when_the_machine_has_them() {
        let m = preset("power10").unwrap();
        let levels = |m: &Machine| -> Vec<(String, u8)> {
            let d = build_domains(m, &DomainConfig::named("vanilla").unwrap()).unwrap();
            d.cpus[0]
                .domains
                .iter()
                .map(|d| (d.name.clone(), d.level))
                .collect()
        };
        assert_eq!(
            levels(&m),
            [("SMT".into(), 0), ("MC".into(), 1), ("PKG".into(), 2)]
        );
        // One die per node: no coregroups, no MC level at all.
        let mut flat = m.clone();
        for c in flat.cpus.iter_mut() {
            c.die = c.node;
        }
        assert_eq!(levels(&flat), [("SMT".into(), 0), ("PKG".into(), 1)]);
        // An L2 shared by the two small cores of a big core: CACHE is listed.
        let mut l2 = m.clone();
        for c in l2.cpus.iter_mut() {
            c.llc /= 2;
        }
        let names: Vec<(String, u8)> = levels(&l2);
        assert_eq!(names[1], ("CACHE".into(), 1));
        assert_eq!(names[2], ("MC".into(), 2));
        // A shared-processor LPAR (distinct asym_prio values) reports no
        // coregroups to a 7.3 kernel.
        let mut shared = m.clone();
        for c in shared.cpus.iter_mut() {
            c.asym_prio = 100 - c.core;
        }
        assert!(!levels(&shared).iter().any(|(n, _)| n == "MC"));
        // ... also when the configuration packs nothing by priority.
        let no_itmt = DomainConfig {
            itmt: false,
            ..DomainConfig::named("vanilla").unwrap()
        };
        let d = build_domains(&shared, &no_itmt).unwrap();
        assert!(!d.cpus[0].domains.iter().any(|d| d.name == "MC"));
        // Two nodes with one die each (an imported LPAR without coregroup
        // support reads die_id -1 everywhere): no MC, and PKG and NUMA above
        // SMT as the kernel builds them.
        let text = crate::presets::preset_text("power10")
            .unwrap()
            .replacen("die = 0\ncpus", "die = 0\nnode = 0\ncpus", 1)
            .replacen("die = 1\n", "die = 0\nnode = 1\n", 1)
            + "\n[numa]\ndistance = [[10, 20], [20, 10]]\n";
        let two = crate::load::load_machine_str(&text, "two-node").unwrap();
        let d = build_domains(&two, &DomainConfig::named("vanilla").unwrap()).unwrap();
        let chain: Vec<(String, u32)> = d.cpus[0]
            .domains
            .iter()
            .map(|d| (d.name.clone(), d.span.weight()))
            .collect();
        assert_eq!(
            chain,
            [("SMT".into(), 4), ("PKG".into(), 40), ("NUMA".into(), 80)]
        );
    }

    /// A min_interval write leaves sd_init()'s weight, the first balance
    /// interval, as it was.
    #[test]
    fn a_min_interval_write_keeps_the_domains_weight() {
        use crate::domains::SdTunable;
        let m = preset("kunpeng920").unwrap();
        let mut cfg = DomainConfig::named("cluster").unwrap();
        cfg.sd_tunables = vec![SdTunable::parse("domains/MC/min_interval", "2").unwrap()];
        let d = build_domains(&m, &cfg).unwrap();
        let mc = &d.cpus[0].domains[1];
        assert_eq!(
            (mc.name.as_str(), mc.min_interval_ms, mc.weight),
            ("MC", 2, 24)
        );
    }

    /// Writes to the per-domain debugfs files land on the named domains,
    /// by level name or by CPU and index; a write that reaches nothing, or
    /// a min_interval above max_interval, is an error.
    #[test]
    fn per_domain_tunables_write_the_named_domains() {
        use crate::domains::SdTunable;
        let m = preset("kunpeng920").unwrap();
        let mut cfg = DomainConfig {
            sd_tunables: vec![
                SdTunable::parse("domains/MC/imbalance_pct", "130").unwrap(),
                SdTunable::parse("domains/cpu5/domain1/busy_factor", "4").unwrap(),
            ],
            ..DomainConfig::default()
        };
        let d = build_domains(&m, &cfg).unwrap();
        assert!(d
            .cpus
            .iter()
            .all(|c| c.domains[0].name == "MC" && c.domains[0].imbalance_pct == 130));
        assert_eq!(d.cpus[5].domains[1].busy_factor, 4);
        assert_eq!(d.cpus[4].domains[1].busy_factor, 16);
        assert_eq!(
            cfg.sd_tunables[1].text(),
            "domains/cpu5/domain1/busy_factor=4"
        );

        cfg.sd_tunables = vec![SdTunable::parse("domains/CLS/busy_factor", "4").unwrap()];
        let e = build_domains(&m, &cfg).unwrap_err().to_string();
        assert!(
            e.contains("domains/CLS: no such domain (domains here: MC, NUMA)"),
            "{e}"
        );
        cfg.sd_tunables = vec![SdTunable::parse("domains/MC/min_interval", "100").unwrap()];
        let e = build_domains(&m, &cfg).unwrap_err().to_string();
        assert!(
            e.contains("min_interval 100 is above max_interval 48"),
            "{e}"
        );

        for (path, value, why) in [
            ("domains/MC/imbalance_pct", "99", "outside 100..=10000"),
            ("domains/MC/nope", "1", "unknown file 'nope'"),
            ("domains/MC/busy_factor", "x", "not a whole number"),
            (
                "domains/cpuX/domain0/busy_factor",
                "1",
                "'cpuX' is not cpuN",
            ),
            ("domains/busy_factor", "1", "expected domains/LEVEL/FILE"),
        ] {
            let e = SdTunable::parse(path, value).unwrap_err();
            assert!(
                e.contains(why) && e.starts_with(&format!("tunable '{path}'")),
                "{e}"
            );
        }
    }

    /// build_balance_mask() on Kunpeng 920: nodes 1 and 3 have no domain at
    /// distance 20 (it equals their distance-12 one and degenerates), but
    /// the mask is decided on the domains before that: for CPU 24 the group
    /// 0-47 of its 0-71 domain may be balanced for by CPUs 24-47 only (whose
    /// distance-20 domain had the 0-47 child), not by node 0.
    #[test]
    fn overlap_balance_masks_use_the_domains_before_degeneration() {
        let d = doms("kunpeng920", "vanilla");
        let group0 = |cpu: usize, span: &str| {
            let dom = d.cpus[cpu]
                .domains
                .iter()
                .find(|x| x.span.to_list_string() == span)
                .expect(span);
            (
                dom.groups[0].span.to_list_string(),
                dom.groups[0].balance_mask.to_list_string(),
            )
        };
        assert_eq!(group0(24, "0-71"), ("0-47".into(), "24-47".into()));
        assert_eq!(group0(72, "0-23,48-95"), ("48-95".into(), "72-95".into()));
        assert_eq!(group0(0, "0-71"), ("0-47".into(), "0-47".into()));
        assert_eq!(group0(0, "0-47"), ("0-23".into(), "0-23".into()));
        // Plain groups: the span.
        let mc = &d.cpus[5].domains[0];
        assert!(mc.groups.iter().all(|g| g.balance_mask == g.span));
        // The two 0-47 groups share no sched_group_capacity: the kernel
        // keys it on the balance mask's first CPU.
        let sgc = |cpu: usize| {
            let g = &d.cpus[cpu]
                .domains
                .iter()
                .find(|x| x.span.to_list_string() == "0-71")
                .unwrap()
                .groups[0];
            (g.sgc_level, g.sgc_cpu)
        };
        assert_eq!(sgc(24).1, 24);
        assert_eq!(sgc(0).1, 0);
        assert!(mc
            .groups
            .iter()
            .all(|g| g.sgc_cpu == g.span.first().unwrap()));
    }

    proptest::proptest! {
        /// Whatever the path and value, a per-domain write parses or is
        /// refused with a one-line message, and a parsed one builds domains
        /// or fails with an error, never a panic.
        #[test]
        fn per_domain_writes_never_panic(
            path in "domains/(MC|NUMA|CLS|SMT|cpu[0-9]{1,3}/domain[0-9]|[A-Z]{0,4})/[a-z_]{0,16}",
            value in "[-0-9]{0,7}",
            relax in -1i32..8,
        ) {
            let m = preset("kunpeng920").unwrap();
            match crate::domains::SdTunable::parse(&path, &value) {
                Ok(t) => {
                    let cfg = DomainConfig {
                        sd_tunables: vec![t],
                        relax_domain_level: relax,
                        ..DomainConfig::default()
                    };
                    let _ = build_domains(&m, &cfg);
                }
                Err(e) => proptest::prop_assert!(!e.contains('\n')),
            }
        }
    }
}
