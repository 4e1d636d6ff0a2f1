//! sysfs import: the fixture trees of `tests/fixtures/` (made by
//! `make_fixtures.py`) and, when present, the oracle's real sysfs listing.

use schedlab_topo::{
    build_domains, load_machine_str, machine_from_sysfs, machine_to_toml, Arch, DomainConfig,
    SdFlags,
};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn spans(m: &schedlab_topo::Machine, cfg: &str, cpu: usize) -> Vec<String> {
    let d = build_domains(m, &DomainConfig::named(cfg).unwrap()).unwrap();
    d.cpus[cpu]
        .domains
        .iter()
        .map(|s| format!("{} {}", s.name, s.span.to_list_string()))
        .collect()
}

fn round_trips(m: &schedlab_topo::Machine) {
    let text = machine_to_toml(m);
    let back = load_machine_str(&text, "rt").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(&back, m);
}

#[test]
fn x86_smt() {
    let m = machine_from_sysfs(&fixture("x86-smt")).unwrap();
    assert_eq!(m.arch, Arch::X86);
    // MWAIT idle polls the need-resched flag: no wakeup IPI.
    assert!(m.wakeup.idle_polls);
    assert_eq!(m.nr_cpus(), 8);
    assert_eq!(m.smt_mask(1).to_list_string(), "1,5");
    assert_eq!(m.cpus[0].freq_max_mhz, 3600);
    assert_eq!(m.caches.iter().filter(|c| c.level == 3).count(), 1);
    assert_eq!(spans(&m, "vanilla", 1), ["SMT 1,5", "MC 0-7"]);
    round_trips(&m);
}

#[test]
fn x86_hybrid() {
    let m = machine_from_sysfs(&fixture("x86-hybrid")).unwrap();
    assert_eq!(m.core_types.len(), 2);
    assert_eq!(m.cpus[0].asym_prio, 60);
    assert_eq!(m.cpus[5].asym_prio, 35);
    assert_eq!(m.cluster_mask(5).to_list_string(), "4-7");
    assert_eq!(spans(&m, "cluster", 0), ["SMT 0-1", "MC 0-7"]);
    assert_eq!(spans(&m, "cluster", 6), ["CLS 4-7", "MC 0-7"]);
    let d = build_domains(&m, &DomainConfig::named("cluster").unwrap()).unwrap();
    assert!(d.cpus[0].domains[1].flags.contains(SdFlags::ASYM_PACKING));
    round_trips(&m);
}

#[test]
fn arm64_big_little() {
    let m = machine_from_sysfs(&fixture("arm64-biglittle")).unwrap();
    assert_eq!(m.arch, Arch::Arm64);
    assert!(!m.wakeup.idle_polls);
    assert_eq!(m.cpus[0].capacity, 446);
    assert_eq!(m.llc_mask(0).to_list_string(), "0-3");
    assert_eq!(spans(&m, "vanilla", 0), ["MC 0-3", "PKG 0-7"]);
    let d = build_domains(&m, &DomainConfig::default()).unwrap();
    assert!(d.asym_cpucapacity);
    round_trips(&m);
}

#[test]
fn x86_two_nodes_and_a_memory_only_node() {
    let m = machine_from_sysfs(&fixture("x86-2node")).unwrap();
    assert_eq!(m.nodes.len(), 2);
    assert_eq!(m.distance, vec![vec![10, 21], vec![21, 10]]);
    assert_eq!(m.cpus[5].node, 1);
    assert_eq!(spans(&m, "vanilla", 0), ["MC 0-3", "NUMA 0-7"]);
    round_trips(&m);
}

#[test]
fn missing_tree_is_an_error() {
    let e = machine_from_sysfs(Path::new("/no/such/sysfs"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/no/such/sysfs"), "{e}");
}

/// Rebuilds a sysfs tree from the oracle's ===SYSFS=== listing, imports it, and
/// checks that the domains match the kernel's (levels and spans).
#[test]
fn oracle_sysfs_listing_imports_to_the_kernels_domains() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/oracle/sapphirerapids-qemu.txt");
    let Ok(text) = std::fs::read_to_string(&oracle) else {
        println!("note: {} absent, test skipped", oracle.display());
        return;
    };
    let body = text
        .split("===SYSFS===")
        .nth(1)
        .unwrap()
        .split("===END===")
        .next()
        .unwrap();
    let root = std::env::temp_dir().join(format!("schedlab-sysfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let w = |p: PathBuf, v: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    };
    let mut cur: Option<PathBuf> = None;
    for line in body.lines() {
        let kv = |k: &str| {
            line.split_whitespace()
                .find_map(|t| t.strip_prefix(&format!("{k}=")))
                .unwrap_or("")
                .to_string()
        };
        if line.starts_with("cpu") {
            let cpu = line.split_whitespace().next().unwrap();
            let d = root.join("devices/system/cpu").join(cpu);
            let t = d.join("topology");
            w(t.join("core_id"), &kv("core_id"));
            w(t.join("physical_package_id"), &kv("pkg"));
            w(t.join("die_id"), &kv("die"));
            w(t.join("thread_siblings_list"), &kv("thread_siblings"));
            w(t.join("cluster_cpus_list"), &kv("cluster_cpus"));
            if kv("capacity") != "1024" {
                w(d.join("cpu_capacity"), &kv("capacity"));
            }
            cur = Some(d);
        } else if line.trim_start().starts_with("index") {
            let ix = line.split_whitespace().next().unwrap();
            let c = cur.as_ref().unwrap().join("cache").join(ix);
            w(c.join("level"), &kv("level"));
            w(c.join("type"), &kv("type"));
            w(c.join("size"), &kv("size"));
            w(c.join("shared_cpu_list"), &kv("shared"));
        } else if line.starts_with("node") {
            let n = line.split_whitespace().next().unwrap();
            let d = root.join("devices/system/node").join(n);
            w(d.join("cpulist"), &kv("cpus"));
            w(d.join("distance"), &kv("distance"));
        }
    }
    let m = machine_from_sysfs(&root).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(m.nr_cpus(), 120);
    assert_eq!(spans(&m, "cluster", 0), ["SMT 0-1", "MC 0-59", "PKG 0-119"]);
    assert_eq!(
        spans(&m, "cluster", 61),
        ["SMT 60-61", "MC 60-119", "PKG 0-119"]
    );
    let ours = schedlab_topo::preset("sapphirerapids").unwrap();
    for c in 0..120u16 {
        assert_eq!(m.smt_mask(c), ours.smt_mask(c));
        assert_eq!(m.llc_mask(c), ours.llc_mask(c));
    }
}
