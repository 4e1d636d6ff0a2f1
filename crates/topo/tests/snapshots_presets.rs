//! Pins every preset's per-CPU hierarchy (text of representative CPUs) for the
//! configurations the experiments use (`shared/contract.md`). Accepted snapshots
//! live in `tests/snapshots/`; they were reviewed against the kernel rules.

use schedlab_topo::{
    build_domains, format_cpu, format_machine, format_topo, preset, topo_json, DomainConfig,
};

fn text(machine: &str, config: &str, cpus: &[usize]) -> String {
    let m = preset(machine).unwrap();
    let d = build_domains(&m, &DomainConfig::named(config).unwrap()).unwrap();
    if cpus.is_empty() {
        return format_topo(&m, &d);
    }
    let mut s = format_machine(&m);
    for &c in cpus {
        s.push_str(&format_cpu(&m, &d.cpus[c]));
    }
    s
}

macro_rules! snap {
    ($name:ident, $machine:expr, $config:expr, $cpus:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(text($machine, $config, &$cpus));
        }
    };
}

snap!(
    kunpeng920_vanilla,
    "kunpeng920",
    "vanilla",
    [0, 5, 24, 50, 95]
);
snap!(
    kunpeng920_cluster,
    "kunpeng920",
    "cluster",
    [0, 5, 24, 50, 95]
);
snap!(power10_vanilla, "power10", "vanilla", [0, 1, 9, 41]);
snap!(power10_mc_llc, "power10", "mc-llc", [0, 1, 41]);
snap!(power10_patchset, "power10", "patchset", [0, 1, 41]);
snap!(alderlake_vanilla, "alderlake", "vanilla", []);
snap!(alderlake_cluster, "alderlake", "cluster", []);
snap!(alderlake_cluster_naive, "alderlake", "cluster-naive", []);
snap!(
    sapphirerapids_vanilla,
    "sapphirerapids",
    "vanilla",
    [0, 1, 2, 60, 119]
);
snap!(genoa_vanilla, "genoa", "vanilla", [0, 1, 17, 33, 127]);
snap!(exynos5422_vanilla, "exynos5422", "vanilla", []);
snap!(exynos5433_vanilla, "exynos5433", "vanilla", []);

#[test]
fn exynos5422_json() {
    let m = preset("exynos5422").unwrap();
    let d = build_domains(&m, &DomainConfig::named("linaro-mp").unwrap()).unwrap();
    insta::assert_json_snapshot!(topo_json(&m, &d));
}

#[test]
fn json_has_contract_shape() {
    let m = preset("kunpeng920").unwrap();
    let d = build_domains(&m, &DomainConfig::named("cluster").unwrap()).unwrap();
    let j = topo_json(&m, &d);
    assert_eq!(j["machine"], "kunpeng920");
    let d0 = &j["cpus"][0]["domains"][0];
    assert_eq!(j["cpus"][0]["cpu"], 0);
    assert_eq!(d0["level"], "CLS");
    assert_eq!(d0["span"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(d0["groups"], serde_json::json!([[0], [1], [2], [3]]));
    assert!(d0["flags"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("SD_SHARE_LLC")));
}

/// Every CPU of every preset, for each configuration that changes its topology:
/// the whole per-CPU hierarchy (spans, flags, groups, intervals) is pinned.
#[test]
fn every_cpu_of_every_preset() {
    let cases: &[(&str, &[&str])] = &[
        ("kunpeng920", &["vanilla", "cluster"]),
        ("power10", &["vanilla", "mc-llc", "patchset"]),
        ("alderlake", &["vanilla", "cluster", "cluster-naive"]),
        ("sapphirerapids", &["vanilla"]),
        ("genoa", &["vanilla"]),
        ("exynos5422", &["vanilla"]),
        ("exynos5433", &["vanilla"]),
    ];
    for (machine, configs) in cases {
        for config in *configs {
            let m = schedlab_topo::preset(machine).unwrap();
            let cfg = schedlab_topo::DomainConfig::named(config).unwrap();
            let d = schedlab_topo::build_domains(&m, &cfg).unwrap();
            let name = format!("all_cpus_{machine}_{}", config.replace('-', "_"));
            insta::assert_snapshot!(name, schedlab_topo::format_topo(&m, &d));
        }
    }
}
