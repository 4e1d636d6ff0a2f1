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
    ("patchset", "POWER10: S2 patch set topology (fallback LLC)"),
    (
        "cluster-naive",
        "Alder Lake: CLS as first enabled in 5.16, without the S3 fixes",
    ),
    (
        "cache-aware",
        "SCHED_CACHE (S4): Linux 7.3 cache-aware load balancing (feature SCHED_CACHE on)",
    ),
    ("linaro-mp", "big.LITTLE baseline (S5)"),
    ("hperf-hmp", "HPERF_HMP (S5) topology"),
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
    if name == "cache-aware" {
        features
            .set("SCHED_CACHE", true)
            .expect("SCHED_CACHE is in the features table");
    }
    Ok(RunConfig {
        name: name.to_string(),
        domains,
        features,
    })
}
