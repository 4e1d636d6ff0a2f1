//! Sched-domain building, after kernel/sched/topology.c (Linux 7.3).
//!
//! [`build_domains`] turns a [`Machine`] and a [`DomainConfig`] into the per-CPU
//! domain hierarchy the kernel would build (`build_sched_domains()`): topology
//! levels, `sd_init()` defaults, groups, degenerate-domain removal
//! (`cpu_attach_domain()`), and the per-CPU shortcuts (`update_top_cache_domain()`).

use crate::cpumask::{CpuId, CpuMask};

use serde::{Deserialize, Serialize};

/// `SD_*` flags (include/linux/sched/sd_flags.h), as a bit set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct SdFlags(pub u32);

impl SdFlags {
    pub const BALANCE_NEWIDLE: SdFlags = SdFlags(1 << 0);
    pub const BALANCE_EXEC: SdFlags = SdFlags(1 << 1);
    pub const BALANCE_FORK: SdFlags = SdFlags(1 << 2);
    pub const BALANCE_WAKE: SdFlags = SdFlags(1 << 3);
    pub const WAKE_AFFINE: SdFlags = SdFlags(1 << 4);
    pub const ASYM_CPUCAPACITY: SdFlags = SdFlags(1 << 5);
    pub const ASYM_CPUCAPACITY_FULL: SdFlags = SdFlags(1 << 6);
    pub const SHARE_CPUCAPACITY: SdFlags = SdFlags(1 << 7);
    pub const CLUSTER: SdFlags = SdFlags(1 << 8);
    pub const SHARE_LLC: SdFlags = SdFlags(1 << 9);
    pub const SERIALIZE: SdFlags = SdFlags(1 << 10);
    pub const ASYM_PACKING: SdFlags = SdFlags(1 << 11);
    pub const PREFER_SIBLING: SdFlags = SdFlags(1 << 12);
    pub const NUMA: SdFlags = SdFlags(1 << 14);
    /// Not in mainline: the POWER10 fallback-LLC flag of patch set S2.
    pub const FALLBACK_LLC: SdFlags = SdFlags(1 << 15);

    /// Names in kernel order, as `/sys/kernel/debug/sched/domains/*/flags` prints them.
    pub const NAMES: &'static [(SdFlags, &'static str)] = &[
        (Self::BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"),
        (Self::BALANCE_EXEC, "SD_BALANCE_EXEC"),
        (Self::BALANCE_FORK, "SD_BALANCE_FORK"),
        (Self::BALANCE_WAKE, "SD_BALANCE_WAKE"),
        (Self::WAKE_AFFINE, "SD_WAKE_AFFINE"),
        (Self::ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"),
        (Self::ASYM_CPUCAPACITY_FULL, "SD_ASYM_CPUCAPACITY_FULL"),
        (Self::SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"),
        (Self::CLUSTER, "SD_CLUSTER"),
        (Self::SHARE_LLC, "SD_SHARE_LLC"),
        (Self::SERIALIZE, "SD_SERIALIZE"),
        (Self::ASYM_PACKING, "SD_ASYM_PACKING"),
        (Self::PREFER_SIBLING, "SD_PREFER_SIBLING"),
        (Self::NUMA, "SD_NUMA"),
        (Self::FALLBACK_LLC, "SD_FALLBACK_LLC"),
    ];

    pub const fn empty() -> Self {
        SdFlags(0)
    }
    pub const fn contains(self, o: SdFlags) -> bool {
        self.0 & o.0 == o.0
    }
    pub const fn intersects(self, o: SdFlags) -> bool {
        self.0 & o.0 != 0
    }
    pub const fn union(self, o: SdFlags) -> SdFlags {
        SdFlags(self.0 | o.0)
    }
    pub const fn without(self, o: SdFlags) -> SdFlags {
        SdFlags(self.0 & !o.0)
    }
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

impl std::ops::BitOr for SdFlags {
    type Output = SdFlags;
    fn bitor(self, o: SdFlags) -> SdFlags {
        self.union(o)
    }
}

impl std::fmt::Debug for SdFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.names().join("|"))
    }
}

/// Which topology a kernel build/boot would produce: the topology-changing part
/// of a schedlab config (`vanilla`, `cluster`, `mc-llc`, ...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainConfig {
    /// CONFIG_SCHED_CLUSTER and a CLS level (patch sets S1, S3).
    pub cluster: bool,
    /// Mark the MC level as sharing the LLC (S2's "mc-llc", POWER10).
    pub mc_is_llc: bool,
    /// SD_FALLBACK_LLC on the level above the LLC (S2 patch set, POWER10).
    pub fallback_llc: bool,
    /// Keep SMT group flags when a degenerate parent is removed (S3 fix; mainline
    /// since 6.6). `false` reproduces 5.16's behaviour for `cluster-naive`.
    pub propagate_smt_flags: bool,
    /// x86 ITMT: ASYM_PACKING on CLS/MC/PKG when CPUs have distinct priorities.
    pub itmt: bool,
    /// x86 ITMT as before Linux 6.5 (`cluster-naive`): sched_set_itmt_core_prio()
    /// gives the i-th SMT sibling of a core `prio * smp_num_siblings / i^2` (so the
    /// second thread of a P-core ranks below an E-core), and the SMT level carries
    /// SD_ASYM_PACKING (x86_smt_flags()). Ricardo Neri's series "sched: Avoid
    /// unnecessary migrations within SMT domains" (6.5: "x86/sched/itmt: Give all
    /// SMT siblings of a core the same priority", "x86/sched: Remove
    /// SD_ASYM_PACKING from the SMT domain flags") replaced both.
    #[serde(default)]
    pub itmt_legacy_smt: bool,
    /// The `relax_domain_level=` boot parameter: domains at this position of
    /// the topology table or above lose SD_BALANCE_NEWIDLE and
    /// SD_BALANCE_WAKE (set_domain_attribute()); -1 (the default) relaxes
    /// nothing.
    #[serde(default = "no_relax")]
    pub relax_domain_level: i32,
    /// Writes to the per-domain debugfs files (`domains/cpuN/domainM/...`)
    /// once the domains are built, in order.
    #[serde(default)]
    pub sd_tunables: Vec<SdTunable>,
}

fn no_relax() -> i32 {
    -1
}

/// Which domains a per-domain tunable writes to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SdTarget {
    /// Every CPU's domains of this name (`domains/MC/...`): what a loop
    /// over /sys/kernel/debug/sched/domains/cpu*/domain*/ with that name
    /// writes.
    Level(String),
    /// One CPU's domain by its index after degeneration
    /// (`domains/cpu3/domain1/...`, the kernel's own path).
    CpuDomain { cpu: u32, index: u32 },
}

impl std::fmt::Display for SdTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SdTarget::Level(name) => write!(f, "domains/{name}"),
            SdTarget::CpuDomain { cpu, index } => write!(f, "domains/cpu{cpu}/domain{index}"),
        }
    }
}

/// A writable file of a domain's debugfs directory (register_sd()).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SdField {
    MinInterval,
    MaxInterval,
    BusyFactor,
    ImbalancePct,
    CacheNiceTries,
}

impl SdField {
    /// `(file name, field, accepted range)` of every writable file.
    pub const ALL: &'static [(&'static str, SdField, u32, u32)] = &[
        ("min_interval", SdField::MinInterval, 1, 100_000),
        ("max_interval", SdField::MaxInterval, 1, 100_000),
        ("busy_factor", SdField::BusyFactor, 0, 10_000),
        ("imbalance_pct", SdField::ImbalancePct, 100, 10_000),
        ("cache_nice_tries", SdField::CacheNiceTries, 0, 10_000),
    ];
}

/// One write to a domain's debugfs file: `domains/LEVEL/FILE=VALUE` or
/// `domains/cpuN/domainM/FILE=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SdTunable {
    pub target: SdTarget,
    pub field: SdField,
    pub value: u32,
}

impl SdTunable {
    /// Parses `path` (starting `domains/`) and `value`; `Err` is one line
    /// naming the path and the reason.
    pub fn parse(path: &str, value: &str) -> Result<SdTunable, String> {
        let bad = |why: &str| format!("tunable '{path}': {why}");
        let parts: Vec<&str> = path.split('/').collect();
        let (target, file) = match parts.as_slice() {
            ["domains", level, file] if !level.is_empty() => {
                (SdTarget::Level(level.to_string()), *file)
            }
            ["domains", cpu, dom, file] => {
                let num = |s: &str, prefix: &str| {
                    s.strip_prefix(prefix)
                        .and_then(|n| n.parse::<u32>().ok())
                        .ok_or_else(|| bad(&format!("'{s}' is not {prefix}N")))
                };
                (
                    SdTarget::CpuDomain {
                        cpu: num(cpu, "cpu")?,
                        index: num(dom, "domain")?,
                    },
                    *file,
                )
            }
            _ => {
                return Err(bad(
                    "expected domains/LEVEL/FILE or domains/cpuN/domainM/FILE",
                ))
            }
        };
        let Some(&(_, field, lo, hi)) = SdField::ALL.iter().find(|f| f.0 == file) else {
            return Err(bad(&format!(
                "unknown file '{file}' (valid: {})",
                SdField::ALL
                    .iter()
                    .map(|f| f.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let v: u32 = value
            .trim()
            .parse()
            .map_err(|_| bad(&format!("'{value}' is not a whole number")))?;
        if v < lo || v > hi {
            return Err(bad(&format!("{v} is outside {lo}..={hi}")));
        }
        Ok(SdTunable {
            target,
            field,
            value: v,
        })
    }

    /// The write as a switch, `domains/MC/imbalance_pct=130`.
    pub fn text(&self) -> String {
        let file = SdField::ALL
            .iter()
            .find(|f| f.1 == self.field)
            .map_or("?", |f| f.0);
        format!("{}/{file}={}", self.target, self.value)
    }

    /// Does this write reach CPU `cpu`'s `index`-th domain `d`?
    pub fn targets(&self, cpu: u32, index: usize, d: &SchedDomain) -> bool {
        match &self.target {
            SdTarget::Level(name) => d.name == *name,
            SdTarget::CpuDomain { cpu: c, index: i } => *c == cpu && *i as usize == index,
        }
    }

    /// Writes the value into `d`.
    pub fn write(&self, d: &mut SchedDomain) {
        let v = self.value;
        match self.field {
            SdField::MinInterval => d.min_interval_ms = v,
            SdField::MaxInterval => d.max_interval_ms = v,
            SdField::BusyFactor => d.busy_factor = v,
            SdField::ImbalancePct => d.imbalance_pct = v,
            SdField::CacheNiceTries => d.cache_nice_tries = v,
        }
    }
}

impl Default for DomainConfig {
    fn default() -> Self {
        DomainConfig {
            cluster: false,
            mc_is_llc: false,
            fallback_llc: false,
            propagate_smt_flags: true,
            itmt: true,
            itmt_legacy_smt: false,
            relax_domain_level: -1,
            sd_tunables: Vec::new(),
        }
    }
}

/// One group of a domain (`struct sched_group` plus its capacity).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchedGroup {
    pub span: CpuMask,
    /// The child domain's flags (`sg->flags`), empty at the lowest level.
    pub flags: SdFlags,
    /// Sum of the CPUs' original capacities.
    pub capacity: u32,
    /// Number of distinct cores in the span (`sg->cores`).
    pub cores: u32,
    /// The CPU with the highest asym priority (`asym_prefer_cpu`).
    pub asym_prefer_cpu: CpuId,
    /// `group_balance_mask()`: the CPUs that may balance for this group. Its
    /// span, except for an overlapping (NUMA) group, where it is the CPUs
    /// whose domain at the group's build level had a child, before
    /// degeneration, spanning exactly the group (build_balance_mask()); may
    /// then be empty.
    #[serde(default)]
    pub balance_mask: CpuMask,
    /// Which `sched_group_capacity` the group shares (its `sgc->imbalance`
    /// flag among others): the topology level it was built at and its first
    /// CPU, for an overlap group the level of the sibling it came from and
    /// the first CPU of its balance mask (init_overlap_sched_group()).
    #[serde(default)]
    pub sgc_level: u8,
    #[serde(default)]
    pub sgc_cpu: CpuId,
}

/// One domain of one CPU (`struct sched_domain`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchedDomain {
    /// "SMT", "CLS", "MC", "PKG", "NODE", "NUMA".
    pub name: String,
    /// Position in the topology table, for `sched_domain_level` comparisons.
    pub level: u8,
    pub span: CpuMask,
    pub flags: SdFlags,
    /// Groups in the kernel's order: the one holding this CPU first.
    pub groups: Vec<SchedGroup>,
    /// sd_init()'s `sd_weight`: the weight of the topology level's mask for
    /// this CPU within the CPUs the domains are built over, taken before any
    /// fix-up of a child wider than its parent. The first balance interval
    /// (ms) is this, whatever a debugfs write later makes `min_interval_ms`.
    #[serde(default)]
    pub weight: u32,
    pub min_interval_ms: u32,
    pub max_interval_ms: u32,
    pub busy_factor: u32,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    /// NUMA imbalance allowance (`imb_numa_nr`), 0 below the NUMA levels.
    pub imb_numa_nr: u32,
    /// NUMA distance of this level (SD_NUMA levels), else 0.
    pub numa_distance: u32,
}

/// Per-CPU domain hierarchy and its shortcuts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuDomains {
    pub cpu: CpuId,
    /// Bottom-up, after degenerate-domain removal.
    pub domains: Vec<SchedDomain>,
    /// Index into `domains` of `sd_llc` (highest SHARE_LLC domain), if any.
    pub sd_llc: Option<usize>,
    /// Weight of sd_llc's span (1 when there is no LLC domain).
    pub llc_size: u32,
    /// Dense LLC id (`sd_llc_id`): equal ids ⇔ `cpus_share_cache()`.
    pub llc_id: u32,
    /// `sd_share_id`: first CPU of the lowest CLUSTER domain, else of the LLC.
    pub share_id: CpuId,
    /// Index of `sd_numa` (lowest SD_NUMA domain), if any.
    pub sd_numa: Option<usize>,
    /// Index of `sd_asym_packing` (highest ASYM_PACKING domain), if any.
    pub sd_asym_packing: Option<usize>,
    /// Index of `sd_asym_cpucapacity` (lowest ASYM_CPUCAPACITY_FULL domain), if any.
    pub sd_asym_cpucapacity: Option<usize>,
    /// Index of the lowest domain with SD_CLUSTER, if any (cluster-first wakeup scan).
    pub sd_cluster: Option<usize>,
}

/// The whole result of domain building.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Domains {
    pub config: DomainConfig,
    pub cpus: Vec<CpuDomains>,
    /// `sched_cluster_active`: some CPU keeps a cluster domain after
    /// degenerate domains are removed.
    pub cluster_active: bool,
    /// `sched_asym_cpucapacity`: the machine has CPUs of different capacity.
    pub asym_cpucapacity: bool,
}

impl Domains {
    /// Number of dense LLC ids (`sd_llc_id`), for per-LLC arrays (at least 1).
    pub fn nr_llc_ids(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.llc_id as usize + 1)
            .max()
            .unwrap_or(1)
    }
}

impl SdFlags {
    /// Flags that need at least two groups to mean anything
    /// (`SD_DEGENERATE_GROUPS_MASK`: every flag but SD_WAKE_AFFINE).
    pub const DEGENERATE_GROUPS_MASK: SdFlags = SdFlags(
        Self::BALANCE_NEWIDLE.0
            | Self::BALANCE_EXEC.0
            | Self::BALANCE_FORK.0
            | Self::BALANCE_WAKE.0
            | Self::ASYM_CPUCAPACITY.0
            | Self::ASYM_CPUCAPACITY_FULL.0
            | Self::SHARE_CPUCAPACITY.0
            | Self::CLUSTER.0
            | Self::SHARE_LLC.0
            | Self::SERIALIZE.0
            | Self::ASYM_PACKING.0
            | Self::PREFER_SIBLING.0
            | Self::NUMA.0,
    );
    /// SDF_SHARED_CHILD flags: set from the base domain up to some level.
    pub const SHARED_CHILD_MASK: SdFlags = SdFlags(
        Self::BALANCE_NEWIDLE.0
            | Self::BALANCE_EXEC.0
            | Self::BALANCE_FORK.0
            | Self::BALANCE_WAKE.0
            | Self::WAKE_AFFINE.0
            | Self::SHARE_CPUCAPACITY.0
            | Self::SHARE_LLC.0,
    );

    /// Parses a kernel flag name (`SD_SHARE_LLC`; the old name
    /// `SD_SHARE_PKG_RESOURCES` is accepted too).
    pub fn from_name(name: &str) -> Option<SdFlags> {
        if name == "SD_SHARE_PKG_RESOURCES" {
            return Some(Self::SHARE_LLC);
        }
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }
}

/// The configuration names of `shared/contract.md` that change the topology.
pub const CONFIG_NAMES: &[&str] = &[
    "vanilla",
    "cluster",
    "mc-llc",
    "patchset",
    "cluster-naive",
    "cluster-naive-noitmt",
    "vanilla-noitmt",
    "cache-aware",
    "linaro-mp",
    "hperf-hmp",
];

impl DomainConfig {
    /// The topology part of a named schedlab configuration (`shared/contract.md`):
    /// - `vanilla`, `cache-aware`, `linaro-mp`, `hperf-hmp`: the upstream topology
    ///   without a CLS level (cache-aware scheduling and the HMP schemes change
    ///   policies, not domains);
    /// - `cluster`: CONFIG_SCHED_CLUSTER, a CLS level (S1, S3);
    /// - `cluster-naive`: CLS as first enabled on x86 in 5.16: SMT group flags lost
    ///   when a degenerate parent is removed, and the pre-6.5 ITMT SMT priorities
    ///   and SMT-level asym packing (`itmt_legacy_smt`); the scheduler-side 5.16
    ///   behaviour is a set of features switched off in the exp crate's configs;
    /// - `mc-llc`: MC marked SD_SHARE_LLC (S2's competing RFC; changes powerpc only,
    ///   where MC lies above the LLC);
    /// - `patchset`: the upstream topology plus SD_FALLBACK_LLC above the LLC (S2).
    pub fn named(name: &str) -> Option<DomainConfig> {
        let base = DomainConfig::default();
        Some(match name {
            "vanilla" | "cache-aware" | "linaro-mp" | "hperf-hmp" => base,
            "cluster" => DomainConfig {
                cluster: true,
                ..base
            },
            "cluster-naive" => DomainConfig {
                cluster: true,
                propagate_smt_flags: false,
                itmt_legacy_smt: true,
                ..base
            },
            // S3 on the firmware Phoronix measured 5.16 with: CPPC highest_perf
            // reads 0xff on every CPU when overclocking is enabled, so 5.16-rc1's
            // intel_pstate never enabled ITMT (no SD_ASYM_PACKING); fixed in
            // 5.16-rc3 by "cpufreq: intel_pstate: ITMT support for overclocked
            // system". `vanilla-noitmt` is the matching no-CLS kernel (5.15).
            "cluster-naive-noitmt" => DomainConfig {
                cluster: true,
                propagate_smt_flags: false,
                itmt_legacy_smt: true,
                itmt: false,
                ..base
            },
            "vanilla-noitmt" => DomainConfig {
                itmt: false,
                ..base
            },
            "mc-llc" => DomainConfig {
                mc_is_llc: true,
                ..base
            },
            "patchset" => DomainConfig {
                fallback_llc: true,
                ..base
            },
            _ => return None,
        })
    }
}

impl CpuDomains {
    /// The `sd_llc` domain, if any.
    pub fn llc(&self) -> Option<&SchedDomain> {
        self.sd_llc.and_then(|i| self.domains.get(i))
    }
}
