//! Named configurations (shared/contract.md): what kernel a run simulates.
//!
//! A configuration is the topology a kernel build/boot would give (a
//! [`DomainConfig`]) plus scheduler feature switches. Names are stable.

use schedlab_engine::Features;
use schedlab_topo::DomainConfig;

/// A resolved configuration.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub name: String,
    pub domains: DomainConfig,
    pub features: Features,
}

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
        "Alder Lake: CLS as first enabled in 5.16: SMT group flags lost, pre-6.5 ITMT SMT priorities, the S3 balancer fixes off",
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
        "big.LITTLE baseline (S5): Linaro MP per-task load thresholds (HMP_LINARO)",
    ),
    (
        "hperf-hmp",
        "HPERF_HMP (S5): druntime-fair cluster balancing (HMP_HPERF)",
    ),
];

/// Resolves a configuration name; the error lists the valid names.
pub fn resolve(name: &str) -> Result<RunConfig, String> {
    let domains = DomainConfig::named(name).ok_or_else(|| {
        format!(
            "unknown config '{name}' (valid: {})",
            CONFIGS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
        )
    })?;
    let mut features = Features::default();
    if name == "patchset" {
        // S2 (Srikar Dronamraju, Apr 2021): the idle-core identity, the
        // wake_affine rework (WA_IDLER_LLC is on by default in the series)
        // and the fallback LLC on top of SD_FALLBACK_LLC in the topology.
        for f in ["IDLE_CORE_ID", "WA_IDLER_LLC", "FALLBACK_LLC"] {
            features.set(f, true)?;
        }
    }
    // The S5 schemes are scheduler features on the upstream topology.
    let feature = match name {
        "linaro-mp" => Some("HMP_LINARO"),
        "hperf-hmp" => Some("HMP_HPERF"),
        _ => None,
    };
    if let Some(f) = feature {
        features.set(f, true)?;
    }
    if name == "cluster-naive" || name == "cluster-naive-noitmt" {
        // S3's baseline behaviour: 5.16's balancer on 5.16's topology
        // (DomainConfig: SMT group flags lost, pre-6.5 ITMT SMT priorities and
        // SMT-level asym packing). Each feature below is one prerequisite or
        // fix of the series, off restores what 5.16 did (features.rs).
        for f in schedlab_engine::S3_FIXES {
            features.set(f, false)?;
        }
    }
    if name == "cache-aware" {
        // S4: SCHED_CACHE on the upstream topology.
        features.set("SCHED_CACHE", true)?;
    }
    Ok(RunConfig {
        name: name.to_string(),
        domains,
        features,
    })
}
