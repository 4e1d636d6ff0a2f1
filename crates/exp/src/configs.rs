//! Named configurations (shared/contract.md): what kernel a run simulates.
//!
//! A configuration is the topology a kernel build/boot would give (a
//! [`DomainConfig`]), scheduler feature switches, the debugfs tunables and
//! the build's CONFIG_HZ. Names are stable.

use schedlab_engine::{Features, Tunables, FEATURES};
use schedlab_topo::{Arch, DomainConfig, SdTunable};

/// A resolved configuration, for one machine's architecture.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub name: String,
    pub domains: DomainConfig,
    pub features: Features,
    /// The engine's debugfs tunables (the per-domain ones are in `domains`).
    pub tunables: Tunables,
    /// CONFIG_HZ of the simulated kernel build.
    pub hz: u32,
}

/// The CONFIG_HZ values a configuration may set (`hz=`): Kconfig.hz's
/// choices and the S5 vendor trees' 200.
pub const HZ_CHOICES: &[u32] = &[100, 200, 250, 300, 1000];

/// The switches a configuration takes besides features, with their meaning,
/// for `schedlab tunables` (the engine's own table follows them).
pub const BUILD_SWITCHES: &[(&str, &str, &str)] = &[
    (
        "hz",
        "250",
        "CONFIG_HZ of the kernel build (100, 200, 250, 300, 1000; linaro-mp and hperf-hmp build with 200): the tick, jiffies and everything counted in them",
    ),
    (
        "relax_domain_level",
        "-1",
        "the relax_domain_level= boot parameter: domains at this level of the topology table or above (`schedlab topo` prints each domain's level) lose SD_BALANCE_NEWIDLE and SD_BALANCE_WAKE, so no newidle balancing there; -1 = none",
    ),
    (
        "domains/LEVEL/FILE",
        "sd_init()'s",
        "a write to FILE of every CPU's LEVEL domain (SMT, CLS, MC, PKG, NUMA, ...); FILE is min_interval, max_interval (ms), busy_factor, imbalance_pct (100 and up) or cache_nice_tries, as in /sys/kernel/debug/sched/domains/cpuN/domainM/",
    ),
    (
        "domains/cpuN/domainM/FILE",
        "sd_init()'s",
        "the same write to one CPU's M-th domain (after degeneration), the kernel's own debugfs path",
    ),
];

/// CONFIG_HZ when nothing is known about the build: Kconfig.hz's default
/// (HZ_250) on x86 and arm64.
pub const DEFAULT_HZ: u32 = 250;

/// CONFIG_HZ of the S5 kernels: the Exynos 5422 vendor 3.10 tree whose
/// big.LITTLE MP code the Linaro model follows (defconfig
/// exynos5422-k3g_00: CONFIG_HZ=200, also CONFIG_PREEMPT=y and
/// CONFIG_NO_HZ_IDLE=y, see resolve_named()); HPERF_HMP was compared with it
/// on the same board, so both S5 configurations run at this rate. (The Exynos 5433
/// runs use it too; that SoC's vendor tree was not checked.)
pub const S5_HZ: u32 = 200;

/// Every configuration name, with a one-line meaning.
pub const CONFIGS: &[(&str, &str)] = &[
    (
        "vanilla",
        "Linux 7.3 without CONFIG_SCHED_CLUSTER: no CLS level",
    ),
    (
        "cluster",
        "CLS level between SMT and MC (S1/S3), cluster-first wakeup scan",
    ),
    ("mc-llc", "POWER10: MC marked as the LLC (S2 alternative)"),
    (
        "patchset",
        "POWER10: S2 patch set (idle-core identity, wake_affine_idler_llc, fallback LLC)",
    ),
    (
        "cluster-naive",
        "Alder Lake: CLS as first enabled in 5.16: SMT group flags lost, pre-6.5 ITMT SMT priorities, the S3 balancer fixes and the cluster-aware wakeup (6.7) off",
    ),
    (
        "cluster-naive-noitmt",
        "Alder Lake: cluster-naive on firmware whose CPPC highest_perf is 0xff (overclocking on): 5.16-rc1 never enabled ITMT, so no asym packing",
    ),
    (
        "vanilla-noitmt",
        "Alder Lake: vanilla without ITMT (no asym packing), the no-CLS match of cluster-naive-noitmt",
    ),
    (
        "cache-aware",
        "SCHED_CACHE (S4): Linux 7.3 cache-aware load balancing (feature SCHED_CACHE on)",
    ),
    (
        "linaro-mp",
        "big.LITTLE baseline (S5): Linaro MP per-task load thresholds (HMP_LINARO; needs CPUs of two capacities)",
    ),
    (
        "hperf-hmp",
        "HPERF_HMP (S5): druntime-fair cluster balancing (HMP_HPERF; needs CPUs of two capacities)",
    ),
];

/// `config` with `switches` appended as `+SWITCH`, the spec [`resolve`]
/// takes (a configuration as `--feature`/`--tunable` change it).
pub fn with_switches<S: AsRef<str>>(config: &str, switches: &[S]) -> String {
    std::iter::once(config)
        .chain(switches.iter().map(|s| s.as_ref().trim()))
        .collect::<Vec<_>>()
        .join("+")
}

/// Resolves a configuration: a name from [`CONFIGS`], optionally followed by
/// switches, `NAME+SWITCH[+SWITCH...]`, each a feature (`CLUSTER_SCAN=off`)
/// or a tunable (`migration_cost_ns=250000`, `domains/MC/imbalance_pct=130`,
/// `relax_domain_level=1`, `hz=1000`): a policy variant of a named kernel,
/// e.g. `cluster+CLUSTER_SCAN=off`. Errors list the valid names or name the
/// bad switch. Features start from what a
/// 7.3 build for `arch` enables ([`Features::for_arch`]: HRTICK on x86),
/// except SCHED_CACHE, which 7.3 builds on but every configuration other
/// than `cache-aware` runs switched off (debugfs `llc_balancing/enabled=0`),
/// as the published baselines' kernels did not have it.
pub fn resolve(spec: &str, arch: Arch) -> Result<RunConfig, String> {
    let mut parts = spec.split('+');
    let name = parts.next().unwrap_or_default();
    let mut cfg = resolve_named(name, arch)?;
    for switch in parts {
        apply_switch(&mut cfg, switch).map_err(|e| format!("config '{spec}': {e}"))?;
    }
    cfg.name = spec.to_string();
    Ok(cfg)
}

/// Checks that a configuration's scheduler can run on machine `m`, as a
/// kernel build would refuse or never offer it: the two big.LITTLE schemes
/// of S5 (`HMP_LINARO`, `HMP_HPERF`) each replace the balancing between a
/// fast and a slow CPU type, so they need CPUs of two kernel capacities
/// (with one capacity every CPU is "big" and the cluster-spanning levels
/// would simply stop balancing), and only one of them can own that job.
pub fn check_machine(cfg: &RunConfig, m: &schedlab_topo::Machine) -> Result<(), String> {
    use schedlab_engine::Feat;
    let (linaro, hperf) = (
        cfg.features.enabled(Feat::HMP_LINARO),
        cfg.features.enabled(Feat::HMP_HPERF),
    );
    if linaro && hperf {
        return Err(format!(
            "config '{}': HMP_LINARO and HMP_HPERF are two schemes for the same balancing; switch on one",
            cfg.name
        ));
    }
    if linaro || hperf {
        let mut caps = schedlab_topo::kernel_capacities(m);
        caps.sort_unstable();
        caps.dedup();
        if caps.len() < 2 {
            return Err(format!(
                "config '{}': {} needs a big.LITTLE machine, CPUs of two capacities; every CPU of {} has kernel capacity {}",
                cfg.name,
                if linaro { "HMP_LINARO" } else { "HMP_HPERF" },
                m.name,
                caps.first().copied().unwrap_or(0)
            ));
        }
    }
    Ok(())
}

/// Applies one `NAME=VALUE` switch to a configuration: a feature of the
/// features table (`NAME=on|off`), CONFIG_HZ (`hz=`), the
/// `relax_domain_level=` boot parameter, a per-domain debugfs file
/// (`domains/...`) or one of the engine's tunables.
pub fn apply_switch(cfg: &mut RunConfig, switch: &str) -> Result<(), String> {
    let Some((name, value)) = switch.split_once('=') else {
        return Err(format!(
            "switch '{switch}': expected FEATURE=on|off or TUNABLE=VALUE"
        ));
    };
    let (name, value) = (name.trim(), value.trim());
    if FEATURES.iter().any(|f| f.name.eq_ignore_ascii_case(name)) {
        return cfg.features.apply(switch);
    }
    if name == "hz" {
        cfg.hz = value
            .parse()
            .ok()
            .filter(|v| HZ_CHOICES.contains(v))
            .ok_or_else(|| format!("tunable 'hz': '{value}' is not one of {HZ_CHOICES:?}"))?;
        return Ok(());
    }
    if name == "relax_domain_level" {
        cfg.domains.relax_domain_level = value
            .parse()
            .ok()
            .filter(|v| (-1..=64).contains(v))
            .ok_or_else(|| {
                format!("tunable 'relax_domain_level': '{value}' is not a level in -1..=64")
            })?;
        return Ok(());
    }
    if name.starts_with("domains/") {
        cfg.domains.sd_tunables.push(SdTunable::parse(name, value)?);
        return Ok(());
    }
    if Tunables::knows(name) {
        return cfg.tunables.apply(switch);
    }
    if ["on", "off", "true", "false"].contains(&value.to_ascii_lowercase().as_str()) {
        // Meant as a feature: list the features.
        return cfg.features.apply(switch);
    }
    Err(format!(
        "unknown tunable '{name}' (valid: hz, relax_domain_level, domains/..., {}; `schedlab tunables` lists them)",
        schedlab_engine::TUNABLES
            .iter()
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Resolves a configuration name of [`CONFIGS`].
fn resolve_named(name: &str, arch: Arch) -> Result<RunConfig, String> {
    let domains = DomainConfig::named(name).ok_or_else(|| {
        format!(
            "unknown config '{name}' (valid: {})",
            CONFIGS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
        )
    })?;
    let mut features = Features::for_arch(arch);
    if name == "patchset" {
        // S2 (Srikar Dronamraju, Apr 2021): the idle-core identity, busy-CPU
        // counts kept at idle entry/exit, the wake_affine rework (WA_IDLER_LLC
        // is on by default in the series) and the fallback LLC on top of
        // SD_FALLBACK_LLC in the topology.
        for f in [
            "IDLE_CORE_ID",
            "NR_BUSY_ON_IDLE",
            "WA_IDLER_LLC",
            "FALLBACK_LLC",
        ] {
            features.set(f, true)?;
        }
    }
    // The S5 schemes are scheduler features on the upstream topology.
    let feature = match name {
        "linaro-mp" => Some("HMP_LINARO"),
        "hperf-hmp" => Some("HMP_HPERF"),
        _ => None,
    };
    let mut hz = DEFAULT_HZ;
    if let Some(f) = feature {
        features.set(f, true)?;
        hz = S5_HZ;
        // The S5 kernels (3.10) stop the tick at every idle entry: the idle
        // governor's say over the tick came with 4.17. Their build is
        // CONFIG_PREEMPT=y: full preemption, no lazy mode.
        features.set("IDLE_GOV_TICK", false)?;
        features.set("PREEMPT_LAZY", false)?;
        // 3.10's ttwu_queue() used the wake list only across LLCs.
        features.set("TTWU_QUEUE_IDLE", false)?;
        // 3.10's futex_wake() woke every waiter under the bucket's lock.
        features.set("WAKE_Q", false)?;
        // 3.10's fair class is CFS: vruntime order, sleeper credit, wakeup
        // granularity, sched_slice() turns.
        features.set("EEVDF", false)?;
    }
    if name == "cluster-naive" || name == "cluster-naive-noitmt" {
        // S3's baseline behaviour: 5.16's balancer on 5.16's topology
        // (DomainConfig: SMT group flags lost, pre-6.5 ITMT SMT priorities and
        // SMT-level asym packing). Each feature below is one prerequisite or
        // fix of the series, off restores what 5.16 did (features.rs).
        for f in schedlab_engine::S3_FIXES {
            features.set(f, false)?;
        }
        // 5.16's wakeup path knew nothing of clusters: the cluster-aware
        // select_idle_sibling() came in 6.7.
        features.set("CLUSTER_SCAN", false)?;
    }
    if name == "cache-aware" {
        // S4: SCHED_CACHE on the upstream topology.
        features.set("SCHED_CACHE", true)?;
    }
    Ok(RunConfig {
        name: name.to_string(),
        domains,
        features,
        tunables: Tunables::default(),
        hz,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_engine::Feat;

    #[test]
    fn the_hmp_schemes_need_two_capacities_and_one_scheme() {
        let m = |name: &str| schedlab_topo::resolve_machine(name).unwrap();
        let exynos = m("exynos5422");
        for c in ["linaro-mp", "hperf-hmp"] {
            let cfg = resolve(c, exynos.arch).unwrap();
            assert!(check_machine(&cfg, &exynos).is_ok(), "{c}");
            // One capacity: Sapphire Rapids, and Alder Lake, whose kernel
            // capacities are all 1024 (ITMT instead).
            for other in ["sapphirerapids", "alderlake", "exynos5422:online=4-7"] {
                let o = m(other);
                let e = check_machine(&resolve(c, o.arch).unwrap(), &o).unwrap_err();
                assert!(e.contains("needs a big.LITTLE machine"), "{e}");
                assert!(!e.contains('\n'), "{e}");
            }
        }
        let both = resolve("linaro-mp+HMP_HPERF=on", exynos.arch).unwrap();
        let e = check_machine(&both, &exynos).unwrap_err();
        assert!(e.contains("switch on one"), "{e}");
        assert!(check_machine(&resolve("vanilla", Arch::X86).unwrap(), &m("genoa")).is_ok());
    }

    /// The S5 configurations run the 3.10 kernels' scheduler around their
    /// scheme: CFS, no lazy preemption, no wake queue, the wake list only
    /// across LLCs, the tick stopped at every idle entry, HZ=200; the
    /// others run 7.3's.
    #[test]
    fn the_s5_configurations_run_3_10s_fair_class() {
        let off310 = [
            Feat::EEVDF,
            Feat::PREEMPT_LAZY,
            Feat::WAKE_Q,
            Feat::TTWU_QUEUE_IDLE,
            Feat::IDLE_GOV_TICK,
        ];
        for c in ["linaro-mp", "hperf-hmp"] {
            let cfg = resolve(c, Arch::Arm64).unwrap();
            for f in off310 {
                assert!(!cfg.features.enabled(f), "{c}: {f:?}");
            }
            assert_eq!(cfg.hz, S5_HZ);
        }
        for c in ["vanilla", "cluster", "cache-aware"] {
            let cfg = resolve(c, Arch::Arm64).unwrap();
            assert!(off310.iter().all(|&f| cfg.features.enabled(f)), "{c}");
        }
    }

    #[test]
    fn variants_switch_features_on_top_of_a_named_config() {
        let base = resolve("cluster", Arch::Arm64).expect("cluster");
        assert!(base.features.enabled(Feat::CLUSTER_SCAN));
        let v = resolve("cluster+CLUSTER_SCAN=off", Arch::Arm64).expect("variant");
        assert_eq!(v.name, "cluster+CLUSTER_SCAN=off");
        assert!(!v.features.enabled(Feat::CLUSTER_SCAN));
        assert_eq!(v.domains, base.domains);
        let two =
            resolve("linaro-mp+HMP_LINARO=off+HMP_HPERF=on", Arch::Arm64).expect("two switches");
        assert!(two.features.enabled(Feat::HMP_HPERF) && !two.features.enabled(Feat::HMP_LINARO));
    }

    #[test]
    fn the_s5_configs_simulate_the_vendor_kernels_hz() {
        for c in ["linaro-mp", "hperf-hmp", "hperf-hmp+HMP_HPERF=off"] {
            assert_eq!(resolve(c, Arch::Arm64).unwrap().hz, 200, "{c}");
        }
        for c in ["vanilla", "cluster", "cache-aware", "patchset"] {
            assert_eq!(resolve(c, Arch::Arm64).unwrap().hz, 250, "{c}");
        }
    }

    #[test]
    fn hrtick_is_on_for_x86_builds_and_can_be_switched_off() {
        assert!(resolve("vanilla", Arch::X86)
            .unwrap()
            .features
            .enabled(Feat::HRTICK));
        assert!(!resolve("vanilla", Arch::Arm64)
            .unwrap()
            .features
            .enabled(Feat::HRTICK));
        assert!(!resolve("patchset", Arch::PowerPc)
            .unwrap()
            .features
            .enabled(Feat::HRTICK));
        let off = resolve("cluster-naive+HRTICK=off", Arch::X86).unwrap();
        assert!(!off.features.enabled(Feat::HRTICK));
        let on = resolve("linaro-mp+HRTICK=on", Arch::Arm64).unwrap();
        assert!(on.features.enabled(Feat::HRTICK));
    }

    #[test]
    fn bad_variants_name_the_problem() {
        let e = resolve("nope+CLUSTER_SCAN=off", Arch::Arm64).unwrap_err();
        assert!(e.contains("unknown config 'nope'"), "{e}");
        let e = resolve("cluster+NO_SUCH_FEATURE=on", Arch::Arm64).unwrap_err();
        assert!(
            e.contains("cluster+NO_SUCH_FEATURE=on") && e.contains("NO_SUCH_FEATURE"),
            "{e}"
        );
        let e = resolve("cluster+CLUSTER_SCAN", Arch::Arm64).unwrap_err();
        assert!(e.contains("FEATURE=on|off or TUNABLE=VALUE"), "{e}");
        let e = resolve("cluster+CLUSTER_SCAN=maybe", Arch::Arm64).unwrap_err();
        assert!(e.contains("maybe"), "{e}");
        let e = resolve("cluster+nope=3", Arch::Arm64).unwrap_err();
        assert!(e.contains("unknown tunable 'nope'"), "{e}");
        let e = resolve("cluster+NOPE=off", Arch::Arm64).unwrap_err();
        assert!(e.contains("unknown feature 'NOPE'"), "{e}");
    }

    #[test]
    fn tunables_go_where_the_kernel_keeps_them() {
        let c = resolve(
            "cluster+migration_cost_ns=100000+hz=1000+relax_domain_level=2+domains/MC/busy_factor=8+SIS_UTIL=off",
            Arch::Arm64,
        )
        .unwrap();
        assert_eq!(c.tunables.migration_cost_ns, 100_000);
        assert_eq!(c.hz, 1000);
        assert_eq!(c.domains.relax_domain_level, 2);
        assert_eq!(c.domains.sd_tunables[0].text(), "domains/MC/busy_factor=8");
        assert!(!c.features.enabled(Feat::SIS_UTIL));
        // The S5 kernels' HZ is a default a switch may change.
        assert_eq!(resolve("hperf-hmp+hz=250", Arch::Arm64).unwrap().hz, 250);
        assert_eq!(
            resolve("vanilla", Arch::Arm64).unwrap().tunables,
            Tunables::default()
        );
    }
}
