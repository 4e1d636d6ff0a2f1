//! The machine model: what the simulated hardware looks like.
//!
//! A [`Machine`] is plain, validated data. It is built from a machine file
//! (TOML, see `docs/machine-format.md`) by [`crate::load`], from a preset by
//! [`crate::preset`], or from a sysfs tree. Nothing here knows about the
//! scheduler: the domain builder (`domains.rs`) and the hardware performance
//! model (crate `schedlab-hw`) read it.

use crate::cpumask::{CpuId, CpuMask};
use serde::{Deserialize, Serialize};

/// One logical CPU (a hardware thread).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuInfo {
    pub id: CpuId,
    /// Global index of the physical core this thread belongs to (SMT siblings share it).
    pub core: u32,
    /// Global index of the cluster (CPUs sharing an L2 or L3 tag / cluster bus).
    /// Equal to the core's own index when the machine has no clusters.
    pub cluster: u32,
    /// Global index of the last-level cache this CPU uses.
    pub llc: u32,
    /// Global index of the die (a set of CPUs sharing an uncore; several per package possible).
    pub die: u32,
    /// Package (socket) index.
    pub package: u32,
    /// NUMA node index.
    pub node: u32,
    /// `cpu_capacity` at the highest frequency, 1..=1024 (1024 = the biggest CPU).
    pub capacity: u16,
    /// Highest frequency in MHz (cpufreq `cpuinfo_max_freq` / 1000).
    pub freq_max_mhz: u32,
    /// ITMT / CPPC priority (higher = preferred); 0 when the machine has none.
    pub asym_prio: u32,
    /// Index into [`Machine::core_types`].
    pub core_type: u16,
}

/// A kind of core (P/E, big/LITTLE, or the only kind).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreType {
    pub name: String,
    /// Throughput of one thread when its SMT siblings are busy, relative to running
    /// alone (e.g. 0.62 means two busy threads give 1.24x one thread). 1.0 without SMT.
    pub smt_thread_speed: f64,
    /// Highest sustainable memory bandwidth of one core running one stream, bytes/s.
    pub core_bw_bytes_per_s: f64,
}

/// One cache instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// 1, 2, 3 ...
    pub level: u8,
    /// "Data", "Instruction" or "Unified", as sysfs `type`.
    pub kind: String,
    pub size_bytes: u64,
    pub line_bytes: u32,
    /// The CPUs that share this instance (sysfs `shared_cpu_list`).
    pub cpus: CpuMask,
}

/// One NUMA node with its memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub id: u32,
    pub cpus: CpuMask,
    /// Asymptotic bandwidth of the node's memory controllers, bytes/s: the service
    /// rate of the closed-queue model in `schedlab-hw` (throughput with n streams =
    /// peak·n/(n + half_concurrency)).
    pub mem_bw_peak_bytes_per_s: f64,
    /// Number of concurrent streams at which the node delivers half its peak.
    pub mem_half_concurrency: f64,
    /// Unloaded DRAM latency for this node's own CPUs, ns.
    pub mem_latency_ns: u32,
    /// For a node without CPUs, the package its memory hangs off (its memory
    /// controllers, or the host bridge of CXL memory), when known: a node
    /// whose CPUs are offline keeps the package they were in (a package no
    /// online CPU is in when the whole package is offline); a machine file
    /// may give it. `None`: [`Machine::node_package`] takes the nearest node
    /// with CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<u32>,
}

/// One bandwidth limit shared by a group of CPUs (a cluster bus, a CCX link...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedLink {
    pub name: String,
    pub cpus: CpuMask,
    pub bw_bytes_per_s: f64,
}

/// Cache-line transfer (core-to-core) latency by the closest level two CPUs share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct C2cLatency {
    pub smt_ns: u32,
    pub cluster_ns: u32,
    pub llc_ns: u32,
    pub die_ns: u32,
    pub node_ns: u32,
    pub package_ns: u32,
    pub remote_package_ns: u32,
}

/// Costs of waking an idle CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WakeupCosts {
    /// Sending a reschedule IPI to another CPU, ns.
    pub ipi_ns: u32,
    /// Kernel path of one wakeup plus context switch on the waking side, ns.
    pub wakeup_path_ns: u32,
    /// How long one load-balancing pass over a domain takes: this fixed part
    /// plus [`WakeupCosts::balance_pass_per_cpu_ns`] per CPU of the domain,
    /// ns. Newly idle balancing weighs it against the expected idle time, and
    /// a pass over an SD_SERIALIZE domain holds `sched_balance_running` that
    /// long.
    #[serde(default = "default_balance_pass_ns")]
    pub balance_pass_ns: u32,
    /// See [`WakeupCosts::balance_pass_ns`], ns per CPU.
    #[serde(default = "default_balance_pass_per_cpu_ns")]
    pub balance_pass_per_cpu_ns: u32,
    /// A newly idle pass that SD_SERIALIZE refuses (should_we_balance() and
    /// a failed compare-and-swap), ns.
    #[serde(default = "default_balance_refused_ns")]
    pub balance_refused_ns: u32,
    /// The CPU's idle states, shallowest first, as its cpuidle driver
    /// registers them (`/sys/devices/system/cpu/cpuN/cpuidle/stateK`); never
    /// empty. The idle governor picks one per idle period and a wakeup pays
    /// its exit latency.
    pub idle_states: Vec<IdleState>,
}

/// One idle state (a `struct cpuidle_state` as the machine's driver fills
/// it: intel_idle's table, acpi_idle's _CST states, pseries' snooze and
/// Cede).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdleState {
    pub name: String,
    /// Time to leave the state when woken (`exit_latency`), ns.
    pub exit_ns: u32,
    /// Shortest idle period for which the state pays off
    /// (`target_residency`), ns: the governor picks it only when it expects
    /// at least this much idle time.
    pub residency_ns: u32,
    /// Whether the CPU keeps TIF_POLLING_NRFLAG set in this state (x86 MWAIT
    /// states and POLL, POWER's snooze), so that a remote wakeup, reschedule
    /// or balance kick needs no IPI: the flag write itself ends the state
    /// (set_nr_if_polling(), set_nr_and_not_polling()). arm64 has no
    /// polling flag.
    pub polls: bool,
    /// Whether this is a software polling loop (CPUIDLE_FLAG_POLLING: the
    /// POLL state, pseries' snooze), which the governor treats specially and
    /// which gives up after a time limit; only the first state may be one.
    pub poll_loop: bool,
    /// The polling loop's time limit, ns: pseries' snooze gives up after the
    /// next state's target residency; 0 follows cpuidle_poll_time() (the
    /// first enabled deeper state's residency of at least 10 µs, at most a
    /// sixteenth of a tick). Only for a polling loop.
    pub poll_limit_ns: u32,
    /// Turned off (`stateK/disable`, a BIOS that does not offer it): the
    /// governor never picks it.
    pub disabled: bool,
}

impl IdleState {
    /// An enabled state that is not a polling loop.
    pub fn new(name: &str, exit_ns: u32, residency_ns: u32, polls: bool) -> IdleState {
        IdleState {
            name: name.to_string(),
            exit_ns,
            residency_ns,
            polls,
            poll_loop: false,
            poll_limit_ns: 0,
            disabled: false,
        }
    }
}

/// Default [`WakeupCosts::balance_pass_ns`] (ESTIMATE).
pub const DEFAULT_BALANCE_PASS_NS: u32 = 2_000;
/// Default [`WakeupCosts::balance_pass_per_cpu_ns`] (ESTIMATE).
pub const DEFAULT_BALANCE_PASS_PER_CPU_NS: u32 = 50;
/// Default [`WakeupCosts::balance_refused_ns`] (ESTIMATE).
pub const DEFAULT_BALANCE_REFUSED_NS: u32 = 100;

fn default_balance_pass_ns() -> u32 {
    DEFAULT_BALANCE_PASS_NS
}
fn default_balance_pass_per_cpu_ns() -> u32 {
    DEFAULT_BALANCE_PASS_PER_CPU_NS
}
fn default_balance_refused_ns() -> u32 {
    DEFAULT_BALANCE_REFUSED_NS
}

impl WakeupCosts {
    /// The time one balance pass over a domain of `span_cpus` CPUs takes,
    /// ns (see [`WakeupCosts::balance_pass_ns`]).
    pub fn balance_pass_ns_for(&self, span_cpus: u32) -> u64 {
        u64::from(self.balance_pass_ns)
            + u64::from(self.balance_pass_per_cpu_ns) * u64::from(span_cpus)
    }

    /// Whether any enabled idle state keeps the polling flag.
    pub fn any_state_polls(&self) -> bool {
        self.idle_states.iter().any(|s| s.polls && !s.disabled)
    }
}

/// Which architecture's sched-domain topology table the machine gets.
///
/// The kernel's levels differ per architecture: x86 (`arch/x86/kernel/smpboot.c`
/// `build_sched_topology()`), powerpc (`arch/powerpc/kernel/smp.c`, with its CACHE
/// level and an MC level above the LLC), and the generic table of
/// `kernel/sched/topology.c` (`default_topology`) that arm, arm64 and riscv use with
/// the masks of `drivers/base/arch_topology.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// x86: SMT, CLS (L2 siblings), MC (LLC), PKG (dropped with NUMA in package);
    /// ITMT adds SD_ASYM_PACKING to CLS/MC (and PKG on hybrid parts).
    X86,
    /// arm / arm64 / riscv default topology: SMT, CLS, MC, PKG with the
    /// arch_topology.c masks.
    #[default]
    Arm64,
    /// powerpc: SMT (the small core on big-core chips), CACHE (L2), MC (coregroup =
    /// the CPUs' `die`), PKG; shared-processor LPARs add SD_ASYM_PACKING to MC/PKG.
    PowerPc,
}

impl Arch {
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86 => "x86",
            Arch::Arm64 => "arm64",
            Arch::PowerPc => "powerpc",
        }
    }
}

/// A whole machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub name: String,
    pub description: String,
    /// Topology table the kernel would use (added field; defaults to `arm64`).
    #[serde(default)]
    pub arch: Arch,
    /// Indexed by CPU id; ids are dense `0..cpus.len()`.
    pub cpus: Vec<CpuInfo>,
    pub core_types: Vec<CoreType>,
    pub caches: Vec<CacheInfo>,
    pub nodes: Vec<NodeInfo>,
    /// SLIT distance table, `distance[a][b]`, 10 on the diagonal.
    pub distance: Vec<Vec<u32>>,
    /// Bandwidth limits shared by groups of CPUs below the node (cluster buses...).
    pub links: Vec<SharedLink>,
    pub c2c: C2cLatency,
    pub wakeup: WakeupCosts,
    /// The machine as it booted, when CPUs were taken offline afterwards
    /// (`NAME:online=LIST`, online.rs): the arch code builds its topology
    /// table once, at boot (x86's and powerpc's build_sched_topology() are
    /// `__init`), and decides ITMT and hybrid capacity scaling there, from
    /// every CPU; the domains are then built over the online ones. `None`
    /// when every CPU is online. Not part of a machine file.
    #[serde(skip)]
    pub booted: Option<Box<Machine>>,
}

impl Machine {
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// The machine as it booted: itself, unless CPUs went offline later.
    pub fn as_booted(&self) -> &Machine {
        self.booted.as_deref().unwrap_or(self)
    }

    /// The package a node's memory hangs off (its memory controllers, or the
    /// host bridge of CXL memory): its CPUs' package; for a node without
    /// CPUs, the one [`NodeInfo::package`] gives (a node whose CPUs are
    /// offline keeps theirs, which may be a package no online CPU is in:
    /// its memory is then remote to every CPU), else the package of the
    /// node with CPUs nearest to it by distance (the lowest id on a tie).
    /// `None` only for a machine without a node with CPUs.
    pub fn node_package(&self, node: u32) -> Option<u32> {
        if let Some(c) = self.cpus.iter().find(|c| c.node == node) {
            return Some(c.package);
        }
        if let Some(p) = self
            .nodes
            .iter()
            .find(|n| n.id == node)
            .and_then(|n| n.package)
        {
            return Some(p);
        }
        let mut cpu_nodes: Vec<u32> = self.cpus.iter().map(|c| c.node).collect();
        cpu_nodes.sort_unstable();
        cpu_nodes.dedup();
        let near = cpu_nodes
            .into_iter()
            .min_by_key(|&o| (self.node_distance(node, o), o))?;
        self.cpus.iter().find(|c| c.node == near).map(|c| c.package)
    }

    /// Number of core indices (`max core id + 1`), for per-core arrays.
    pub fn nr_cores(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.core as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// Number of cluster indices, for per-cluster arrays (at least 1).
    pub fn nr_clusters(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.cluster as usize + 1)
            .max()
            .unwrap_or(1)
    }

    /// Number of LLC indices, for per-LLC arrays (at least 1).
    pub fn nr_llcs(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.llc as usize + 1)
            .max()
            .unwrap_or(1)
    }

    /// All CPUs.
    pub fn all_cpus(&self) -> CpuMask {
        CpuMask::first_n(self.cpus.len())
    }

    /// CPUs of NUMA node `node`.
    pub fn node_cpus(&self, node: u32) -> CpuMask {
        self.nodes
            .iter()
            .find(|n| n.id == node)
            .map(|n| n.cpus)
            .unwrap_or_default()
    }

    /// SMT siblings of `cpu` (including itself).
    pub fn smt_mask(&self, cpu: CpuId) -> CpuMask {
        let core = self.cpus[cpu as usize].core;
        CpuMask::from_cpus(self.cpus.iter().filter(|c| c.core == core).map(|c| c.id))
    }

    /// The CPUs sharing `cpu`'s cluster.
    pub fn cluster_mask(&self, cpu: CpuId) -> CpuMask {
        let cl = self.cpus[cpu as usize].cluster;
        CpuMask::from_cpus(self.cpus.iter().filter(|c| c.cluster == cl).map(|c| c.id))
    }

    /// The CPUs sharing `cpu`'s last-level cache.
    pub fn llc_mask(&self, cpu: CpuId) -> CpuMask {
        let l = self.cpus[cpu as usize].llc;
        CpuMask::from_cpus(self.cpus.iter().filter(|c| c.llc == l).map(|c| c.id))
    }

    /// The CPUs of `cpu`'s die.
    pub fn die_mask(&self, cpu: CpuId) -> CpuMask {
        let d = self.cpus[cpu as usize].die;
        CpuMask::from_cpus(self.cpus.iter().filter(|c| c.die == d).map(|c| c.id))
    }

    /// The CPUs of `cpu`'s package.
    pub fn package_mask(&self, cpu: CpuId) -> CpuMask {
        let p = self.cpus[cpu as usize].package;
        CpuMask::from_cpus(self.cpus.iter().filter(|c| c.package == p).map(|c| c.id))
    }

    /// The CPUs of `cpu`'s NUMA node.
    pub fn cpu_node_mask(&self, cpu: CpuId) -> CpuMask {
        let n = self.cpus[cpu as usize].node;
        CpuMask::from_cpus(self.cpus.iter().filter(|c| c.node == n).map(|c| c.id))
    }

    /// SLIT distance between two nodes (10 when out of range, as for a 1-node table).
    pub fn node_distance(&self, a: u32, b: u32) -> u32 {
        self.distance
            .get(a as usize)
            .and_then(|row| row.get(b as usize))
            .copied()
            .unwrap_or(if a == b { 10 } else { 20 })
    }

    /// Core-to-core cache-line transfer latency between two CPUs, by the closest
    /// level they share.
    pub fn c2c_ns(&self, a: CpuId, b: CpuId) -> u32 {
        let (x, y) = (&self.cpus[a as usize], &self.cpus[b as usize]);
        if a == b {
            0
        } else if x.core == y.core {
            self.c2c.smt_ns
        } else if x.cluster == y.cluster {
            self.c2c.cluster_ns
        } else if x.llc == y.llc {
            self.c2c.llc_ns
        } else if x.die == y.die {
            self.c2c.die_ns
        } else if x.node == y.node {
            self.c2c.node_ns
        } else if x.package == y.package {
            self.c2c.package_ns
        } else {
            self.c2c.remote_package_ns
        }
    }
}
