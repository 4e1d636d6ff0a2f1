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
    assert!(m.wakeup.any_state_polls());
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
    assert!(!m.wakeup.any_state_polls());
    // Two cpuidle states: the governor chooses (WFI, a deeper sleep).
    let names: Vec<&str> = m
        .wakeup
        .idle_states
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["WFI", "cpu-sleep"]);
    assert_eq!(m.wakeup.idle_states[1].exit_ns, 130_000);
    assert_eq!(m.cpus[0].capacity, 446);
    assert_eq!(m.llc_mask(0).to_list_string(), "0-3");
    assert_eq!(spans(&m, "vanilla", 0), ["MC 0-3", "PKG 0-7"]);
    let d = build_domains(&m, &DomainConfig::default()).unwrap();
    assert!(d.asym_cpucapacity);
    round_trips(&m);
}

/// A copy of an x86 guest's /sys has `cpu_capacity` files (x86 kernels
/// write them too): they do not make it arm64; the haltpoll driver and the
/// POLL state say x86, so the polling flag stays.
#[test]
fn x86_vm_with_cpu_capacity_files_is_x86() {
    let m = machine_from_sysfs(&fixture("x86-vm")).unwrap();
    assert_eq!(m.arch, Arch::X86);
    assert!(m.wakeup.idle_states[0].poll_loop);
    assert!(m.wakeup.any_state_polls());
    round_trips(&m);
    // No cpufreq: the 2000 MHz default is marked ESTIMATE, a read one is not.
    let estimated = |root: &Path| {
        let text = schedlab_topo::sysfs_machine_text(root).unwrap();
        schedlab_topo::estimate_keys(&text)
            .iter()
            .any(|k| k.path == "core_type.0.freq_max_mhz")
    };
    assert_eq!(m.cpus[0].freq_max_mhz, 2000);
    assert!(estimated(&fixture("x86-vm")));
    assert!(!estimated(&fixture("x86-smt")));
}

/// The architecture evidence, strongest first (see `guess_arch`).
#[test]
fn arch_evidence() {
    let arch = |root: &Path| machine_from_sysfs(root).unwrap().arch;
    let vm = Copy::of("x86-vm", "arch");
    // Without the driver and the idle states: equal capacities, x86.
    std::fs::remove_file(vm.file("cpu/cpuidle/current_driver")).unwrap();
    std::fs::remove_dir_all(vm.file("cpu/cpu0/cpuidle")).unwrap();
    assert_eq!(arch(&vm.0), Arch::X86);
    // arm64's MIDR_EL1 register file decides.
    let midr = vm.file("cpu/cpu0/regs/identification/midr_el1");
    std::fs::create_dir_all(midr.parent().unwrap()).unwrap();
    std::fs::write(&midr, "0x00000000410fd0c0\n").unwrap();
    assert_eq!(arch(&vm.0), Arch::Arm64);
    std::fs::remove_file(&midr).unwrap();
    // So do the cpuidle and cpufreq drivers.
    for (file, driver, want) in [
        ("cpu/cpuidle/current_driver", "psci_idle", Arch::Arm64),
        ("cpu/cpuidle/current_driver", "pseries_idle", Arch::PowerPc),
        (
            "cpu/cpufreq/policy0/scaling_driver",
            "intel_pstate",
            Arch::X86,
        ),
    ] {
        let path = vm.file(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{driver}\n")).unwrap();
        assert_eq!(arch(&vm.0), want, "{driver}");
        std::fs::remove_file(&path).unwrap();
    }
    // big.LITTLE capacities without other evidence: arm64.
    let bl = Copy::of("arm64-biglittle", "arch");
    std::fs::remove_dir_all(bl.file("cpu/cpu0/cpuidle")).unwrap();
    assert_eq!(arch(&bl.0), Arch::Arm64);
}

/// A memory-only node (CXL memory) is kept, with its distances, so a run
/// can bind memory to it (`--mem-node 2`); the domains' NUMA levels come
/// from the nodes with CPUs only.
#[test]
fn x86_two_nodes_and_a_memory_only_node() {
    let m = machine_from_sysfs(&fixture("x86-2node")).unwrap();
    assert_eq!(m.nodes.len(), 3);
    assert!(m.nodes[2].cpus.is_empty());
    assert_eq!(
        m.distance,
        vec![vec![10, 21, 17], vec![21, 10, 28], vec![17, 28, 10]]
    );
    assert_eq!(m.cpus[5].node, 1);
    assert_eq!(spans(&m, "vanilla", 0), ["MC 0-3", "NUMA 0-7"]);
    // No HMAT in the tree: the ESTIMATE defaults, and the memory-only
    // node's saturation point is that of node 0, the nearest with CPUs.
    assert_eq!(m.nodes[2].mem_bw_peak_bytes_per_s, 60e9);
    assert_eq!(
        m.nodes[2].mem_half_concurrency,
        m.nodes[0].mem_half_concurrency
    );
    round_trips(&m);
}

/// Distances as the kernel takes them: a memory-only node without a
/// `distance` file gets its column from the other rows, an asymmetric entry
/// between a CPU node and a memory-only one is the CPU node's row (the
/// kernel builds its levels from those rows only), and a directory that is
/// not `node` and a plain number (`node+2`, `node01`) is not a node.
#[test]
fn memory_only_distances_follow_the_cpu_nodes_rows() {
    let t = Copy::of("x86-2node", "dist");
    std::fs::remove_file(t.file("node/node2/distance")).unwrap();
    let m = machine_from_sysfs(&t.0).unwrap();
    assert_eq!(
        m.distance,
        vec![vec![10, 21, 17], vec![21, 10, 28], vec![17, 28, 10]]
    );
    std::fs::write(t.file("node/node2/distance"), "14 28 10\n").unwrap();
    let m = machine_from_sysfs(&t.0).unwrap();
    assert_eq!(m.distance[0][2], 17);
    assert_eq!(m.distance[2][0], 17);
    for odd in ["node+2", "node01"] {
        std::fs::create_dir_all(t.file(&format!("node/{odd}"))).unwrap();
        std::fs::write(t.file(&format!("node/{odd}/cpulist")), "\n").unwrap();
    }
    assert_eq!(machine_from_sysfs(&t.0).unwrap().nodes.len(), 3);
}

/// Sub-NUMA clustering: one package, two nodes, and an L3 that sysfs (from
/// CPUID) shows shared by the whole package. The kernel's match_llc() splits
/// the LLC per node; so does the import, each part with its node's share of
/// the size.
#[test]
fn an_llc_shared_by_two_nodes_is_split_per_node() {
    let t = Copy::of("x86-2node", "snc");
    for c in 0..8 {
        std::fs::write(
            t.file(&format!("cpu/cpu{c}/topology/physical_package_id")),
            "0\n",
        )
        .unwrap();
        let l3 = t.file(&format!("cpu/cpu{c}/cache/index2"));
        std::fs::write(l3.join("shared_cpu_list"), "0-7\n").unwrap();
        std::fs::write(l3.join("size"), "16384K\n").unwrap();
    }
    let m = machine_from_sysfs(&t.0).unwrap();
    let l3: Vec<(u64, String)> = m
        .caches
        .iter()
        .filter(|c| c.level == 3)
        .map(|c| (c.size_bytes, c.cpus.to_list_string()))
        .collect();
    assert_eq!(
        l3,
        [(8 << 20, "0-3".to_string()), (8 << 20, "4-7".to_string())]
    );
    assert_eq!(m.llc_mask(5).to_list_string(), "4-7");
    assert_eq!(spans(&m, "vanilla", 0), ["MC 0-3", "NUMA 0-7"]);
    let text = schedlab_topo::sysfs_machine_text(&t.0).unwrap();
    assert!(text.contains("sub-NUMA clustering"), "{text}");
    round_trips(&m);
}

/// Node ids with gaps are numbered densely; the emitted file names each
/// renumbered node's sysfs directory.
#[test]
fn renumbered_nodes_name_their_sysfs_directory() {
    let t = Copy::of("x86-2node", "gaps");
    std::fs::rename(t.file("node/node2"), t.file("node/node4")).unwrap();
    let text = schedlab_topo::sysfs_machine_text(&t.0).unwrap();
    assert!(text.contains("id = 2  # sysfs node4"), "{text}");
    assert_eq!(machine_from_sysfs(&t.0).unwrap().nodes.len(), 3);
    // A CPU no node lists is an error (it used to join node 0 silently).
    std::fs::write(t.file("node/node0/cpulist"), "0-2\n").unwrap();
    let e = machine_from_sysfs(&t.0).unwrap_err().to_string();
    assert!(
        e.contains("field `devices/system/node`: CPU 3 is in no node's cpulist"),
        "{e}"
    );
}

/// The firmware's ratings under `access0/initiators/` (HMAT, or CDAT for
/// CXL memory) give a node's bandwidth (MiB/s) and latency; a memory-only
/// node takes its latency from the nearest node with CPUs, whose distance
/// the hardware model charges on top. A rating that is not a number is an
/// error naming its file.
#[test]
fn hmat_ratings_give_the_nodes_bandwidth_and_latency() {
    let t = Copy::of("x86-2node", "hmat");
    let rate = |node: u32, bw: &str, lat: &str| {
        let dir = t.file(&format!("node/node{node}/access0/initiators"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("read_bandwidth"), bw).unwrap();
        std::fs::write(dir.join("read_latency"), lat).unwrap();
    };
    rate(0, "204800\n", "110\n");
    rate(1, "204800\n", "115\n");
    rate(2, "32768\n", "260\n");
    // Without a rating of its own, a node is flagged as off the others' scale.
    std::fs::remove_file(t.file("node/node1/access0/initiators/read_bandwidth")).unwrap();
    let text = schedlab_topo::sysfs_machine_text(&t.0).unwrap();
    assert!(text.contains("not rated where other nodes are"), "{text}");
    rate(1, "204800\n", "115\n");
    let m = machine_from_sysfs(&t.0).unwrap();
    assert_eq!(m.nodes[0].mem_bw_peak_bytes_per_s, 204800.0 * 1048576.0);
    assert_eq!(m.nodes[1].mem_latency_ns, 115);
    assert_eq!(m.nodes[2].mem_bw_peak_bytes_per_s, 32768.0 * 1048576.0);
    assert_eq!(m.nodes[2].mem_latency_ns, 110);
    let text = schedlab_topo::sysfs_machine_text(&t.0).unwrap();
    assert!(schedlab_topo::estimate_keys(&text)
        .iter()
        .any(|k| k.path == "node.2.mem_bw_peak_bytes_per_s"));
    round_trips(&m);
    // access1 (CPU initiators only) comes before access0.
    let dir = t.file("node/node0/access1/initiators");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("read_bandwidth"), "102400\n").unwrap();
    let m = machine_from_sysfs(&t.0).unwrap();
    assert_eq!(m.nodes[0].mem_bw_peak_bytes_per_s, 102400.0 * 1048576.0);
    std::fs::remove_dir_all(t.file("node/node0/access1")).unwrap();
    rate(2, "fast\n", "260\n");
    let e = machine_from_sysfs(&t.0).unwrap_err().to_string();
    assert!(
        e.contains("node/node2/access0/initiators/read_bandwidth"),
        "{e}"
    );
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

/// A copy of fixture `name` in a fresh temporary directory (removed on drop).
struct Copy(PathBuf);

impl Copy {
    fn of(name: &str, tag: &str) -> Copy {
        fn copy_dir(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap() {
                let e = e.unwrap();
                let dest = to.join(e.file_name());
                if e.file_type().unwrap().is_dir() {
                    copy_dir(&e.path(), &dest);
                } else {
                    std::fs::copy(e.path(), &dest).unwrap();
                }
            }
        }
        let root = std::env::temp_dir().join(format!(
            "schedlab-sysfs-{}-{name}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        copy_dir(&fixture(name), &root);
        Copy(root)
    }

    fn file(&self, rel: &str) -> PathBuf {
        self.0.join("devices/system").join(rel)
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A present file that does not parse or is out of range is an error naming
/// the file and the reason, never a default.
#[test]
fn garbage_in_a_present_file_is_an_error_naming_it() {
    let cases = [
        (
            "arm64-biglittle",
            "cpu/cpu0/cpu_capacity",
            "x",
            "`x` is not an integer",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu5/cpu_capacity",
            "2000",
            "out of range 1..=1024",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cache/index2/level",
            "99",
            "`99` is out of range 1..=8",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cache/index0/level",
            "0",
            "out of range 1..=8",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cache/index2/size",
            "lots",
            "`lots` is not a cache size",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cache/index2/size",
            "0K",
            "`0K` is not a cache size",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cache/index2/type",
            "Sideways",
            "not Data, Instruction or Unified",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cache/index2/coherency_line_size",
            "0",
            "out of range 1..=4096",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cache/index2/shared_cpu_list",
            "0-",
            "not a CPU list",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/topology/core_id",
            "abc",
            "`abc` is not an integer",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/topology/core_id",
            "-1",
            "out of range 0..=",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/topology/core_id",
            "12345678901234567890",
            "out of range",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu2/topology/physical_package_id",
            "-2",
            "out of range -1..=",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/topology/cluster_cpus_list",
            "zero",
            "not a CPU list",
        ),
        (
            "arm64-biglittle",
            "cpu/cpu0/cpufreq/cpuinfo_max_freq",
            "fast",
            "not an integer",
        ),
        (
            "x86-hybrid",
            "cpu/cpu0/acpi_cppc/highest_perf",
            "-5",
            "out of range 0..=",
        ),
        (
            "x86-smt",
            "cpu/cpu1/topology/thread_siblings_list",
            "1,x",
            "not a CPU list",
        ),
        (
            "x86-smt",
            "cpu/cpu1/topology/die_id",
            "1.5",
            "not an integer",
        ),
        (
            "x86-smt",
            "cpu/cpu1/topology/thread_siblings_list",
            "1-2",
            "names CPU 2, whose own list is 2,6: sibling lists must agree",
        ),
        (
            "x86-smt",
            "cpu/cpu1/topology/core_id",
            &"7".repeat(5000),
            "more than 4096 bytes",
        ),
        (
            "x86-2node",
            "node/node1/distance",
            "21 x 28",
            "`x` is not a distance",
        ),
        (
            "x86-2node",
            "node/node1/distance",
            "21 10",
            "has 2 distances for 3 nodes",
        ),
        (
            "x86-2node",
            "node/node0/distance",
            "10 31 17",
            "gives 31 to node1, whose own file gives 21 back",
        ),
        (
            "x86-2node",
            "node/node1/distance",
            "21 12 28",
            "gives the node a distance of 12 to itself, not 10",
        ),
        (
            "x86-2node",
            "node/node0/cpulist",
            "0-3\n4",
            "not a CPU list",
        ),
        (
            "x86-2node",
            "node/node0/cpulist",
            "0-100",
            "names CPUs 8-100, which the tree does not have (its CPUs are 0-7)",
        ),
        (
            "x86-2node",
            "node/node1/cpulist",
            "3-7",
            "names CPU 3, which node0/cpulist names too",
        ),
        (
            "x86-smt",
            "cpu/cpu1/topology/thread_siblings_list",
            "",
            "is empty, but the kernel's list always names CPU 1 itself",
        ),
        (
            "x86-smt",
            "cpu/cpu1/topology/thread_siblings_list",
            "5",
            "`5` does not name CPU 1 itself",
        ),
        (
            "x86-smt",
            "cpu/cpu3/topology/cluster_cpus_list",
            "",
            "is empty",
        ),
        (
            "x86-smt",
            "cpu/cpu2/cache/index0/shared_cpu_list",
            "",
            "is empty",
        ),
    ];
    let mut copies: Vec<(&str, Copy)> = Vec::new();
    for (fixture_name, rel, content, want) in cases {
        if !copies.iter().any(|(n, _)| *n == fixture_name) {
            copies.push((fixture_name, Copy::of(fixture_name, "garbage")));
        }
        let copy = &copies.iter().find(|(n, _)| *n == fixture_name).unwrap().1;
        let path = copy.file(rel);
        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, format!("{content}\n")).unwrap();
        let e = machine_from_sysfs(&copy.0)
            .map(|_| ())
            .expect_err(&format!("{rel} = {content:?} was accepted"))
            .to_string();
        std::fs::write(&path, good).unwrap();
        assert!(
            e.contains(&format!("field `devices/system/{rel}`: ")),
            "{e}"
        );
        assert!(e.contains(want), "{rel} = {content:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

/// Only `cpu` followed by digits is a CPU directory (`cpu+4`, `cpufreq`
/// and `cpuidle` are not).
#[test]
fn only_cpu_and_digits_name_a_cpu() {
    let copy = Copy::of("x86-smt", "cpu-names");
    let cpu3 = copy.file("cpu/cpu3");
    for odd in ["cpu+4", "cpu 5", "cpu6x"] {
        let to = copy.file("cpu").join(odd);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&cpu3).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    assert_eq!(machine_from_sysfs(&copy.0).unwrap().nr_cpus(), 8);
}

/// An absent file takes its documented default.
#[test]
fn absent_files_take_their_defaults() {
    let copy = Copy::of("arm64-biglittle", "absent");
    for rel in [
        "cpu/cpu0/cpu_capacity",
        "cpu/cpu0/cpufreq/cpuinfo_max_freq",
        "cpu/cpu0/topology/core_id",
        "cpu/cpu0/cache/index0/coherency_line_size",
    ] {
        std::fs::remove_file(copy.file(rel)).unwrap();
    }
    // cpu4's caches: no type (Unified), then no size (not listed), then no
    // level (skipped).
    std::fs::remove_file(copy.file("cpu/cpu4/cache/index0/type")).unwrap();
    std::fs::remove_file(copy.file("cpu/cpu4/cache/index2/size")).unwrap();
    std::fs::remove_file(copy.file("cpu/cpu4/cache/index1/level")).unwrap();
    let m = machine_from_sysfs(&copy.0).unwrap();
    let base = machine_from_sysfs(&fixture("arm64-biglittle")).unwrap();
    assert_eq!(m.cpus[0].capacity, 1024);
    assert_eq!(m.cpus[0].freq_max_mhz, 2000);
    assert_eq!(
        (m.cpus[1].capacity, m.cpus[1].freq_max_mhz),
        (base.cpus[1].capacity, base.cpus[1].freq_max_mhz)
    );
    // The L2 without a size still makes cpu4's LLC.
    assert_eq!(m.llc_mask(4), base.llc_mask(4));
    assert_eq!(
        m.caches.iter().filter(|c| c.line_bytes == 64).count(),
        m.caches.len()
    );
    assert!(m.caches.len() < base.caches.len());
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestRunner;

    const FILES: [&str; 15] = [
        "cpu/cpu0/cpu_capacity",
        "cpu/cpu1/cpufreq/cpuinfo_max_freq",
        "cpu/cpu2/topology/core_id",
        "cpu/cpu3/topology/physical_package_id",
        "cpu/cpu4/topology/thread_siblings_list",
        "cpu/cpu5/topology/cluster_cpus_list",
        "cpu/cpu6/cache/index2/level",
        "cpu/cpu6/cache/index2/size",
        "cpu/cpu7/cache/index1/shared_cpu_list",
        "node/node0/distance",
        "cpu/cpu0/cpuidle/state1/latency",
        "cpu/cpu0/cpuidle/state1/residency",
        "cpu/cpu0/cpuidle/state1/disable",
        "node/node0/access0/initiators/read_bandwidth",
        "node/node0/access0/initiators/read_latency",
    ];

    /// Whatever a file holds, the import never panics, and its errors are one
    /// line. (One copy of the tree serves every case: each restores its file.)
    #[test]
    fn any_content_of_a_file_is_a_machine_or_a_one_line_error() {
        let copy = Copy::of("arm64-biglittle", "fuzz");
        // The fixture has no HMAT ratings: give node 0 some to vary.
        let acc = copy.file("node/node0/access0/initiators");
        std::fs::create_dir_all(&acc).unwrap();
        std::fs::write(acc.join("read_bandwidth"), "25600\n").unwrap();
        std::fs::write(acc.join("read_latency"), "120\n").unwrap();
        let mut runner = TestRunner::new(ProptestConfig::with_cases(200));
        let strategy = (0..FILES.len(), "[-0-9a-zA-Z ,.KM\n]{0,14}");
        runner
            .run(&strategy, |(which, content)| {
                let path = copy.file(FILES[which]);
                let good = std::fs::read(&path).unwrap();
                std::fs::write(&path, &content).unwrap();
                let result = machine_from_sysfs(&copy.0);
                std::fs::write(&path, good).unwrap();
                if let Err(e) = result {
                    let msg = e.to_string();
                    prop_assert!(!msg.contains('\n'), "{}", msg);
                }
                Ok(())
            })
            .unwrap();
    }
}

/// A file whose read fails (here a directory in its place; in /sys, an
/// attribute whose read returns an error) tells nothing: its default applies.
#[test]
fn a_file_whose_read_fails_takes_its_default() {
    let c = Copy::of("x86-smt", "readfail");
    let f = c.file("cpu/cpu0/cache/index0/coherency_line_size");
    let _ = std::fs::remove_file(&f);
    std::fs::create_dir_all(&f).unwrap();
    let m = schedlab_topo::machine_from_sysfs(&c.0).expect("imports");
    // The default line size is the fixture's own 64 bytes.
    let original = schedlab_topo::machine_from_sysfs(&fixture("x86-smt")).unwrap();
    assert_eq!(m.caches, original.caches);
}

/// The cpuidle states become the machine's idle states: exit latency and
/// residency from `latency` and `residency` (µs), `disable`, and whether
/// they poll: POLL and MWAIT ones do, an ACPI I/O-port or HLT state does
/// not, so a wakeup onto a CPU in it needs the IPI. POLL is a polling loop
/// with cpuidle's time limit; pseries' snooze gives up after the next
/// state's residency.
#[test]
fn cpuidle_states_become_the_machines_idle_states() {
    // (name, desc, latency µs, residency µs, disable)
    type Sys<'a> = (&'a str, &'a str, u32, u32, u32);
    let with_states = |tag: &str, states: &[Sys]| {
        let c = Copy::of("x86-smt", tag);
        for (i, (name, desc, latency, residency, disable)) in states.iter().enumerate() {
            let d = c.file(&format!("cpu/cpu0/cpuidle/state{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(d.join("desc"), format!("{desc}\n")).unwrap();
            std::fs::write(d.join("latency"), format!("{latency}\n")).unwrap();
            std::fs::write(d.join("residency"), format!("{residency}\n")).unwrap();
            std::fs::write(d.join("disable"), format!("{disable}\n")).unwrap();
        }
        let m = schedlab_topo::machine_from_sysfs(&c.0).unwrap();
        round_trips(&m);
        m.wakeup
            .idle_states
            .iter()
            .map(|s| {
                let mut flags = String::new();
                for (on, f) in [(s.polls, 'p'), (s.poll_loop, 'l'), (s.disabled, 'd')] {
                    if on {
                        flags.push(f);
                    }
                }
                format!(
                    "{} {}/{} {flags} {}",
                    s.name, s.exit_ns, s.residency_ns, s.poll_limit_ns
                )
            })
            .collect::<Vec<_>>()
    };
    let acpi = [
        ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0, 0),
        ("C1", "ACPI FFH MWAIT 0x0", 1, 2, 0),
        ("C2", "ACPI IOPORT 0x814", 18, 36, 0),
    ];
    assert_eq!(
        with_states("acpi", &acpi),
        ["POLL 0/0 pl 0", "C1 1000/2000 p 0", "C2 18000/36000  0"]
    );
    let intel = [
        ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0, 0),
        ("C1", "MWAIT 0x00", 1, 1, 0),
        ("C6", "MWAIT 0x20", 290, 800, 1),
    ];
    assert_eq!(
        with_states("intel", &intel),
        ["POLL 0/0 pl 0", "C1 1000/1000 p 0", "C6 290000/800000 pd 0"]
    );
    let haltpoll = [
        ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0, 0),
        ("haltpoll", "default architecture idle", 1, 1, 0),
    ];
    assert_eq!(
        with_states("haltpoll", &haltpoll),
        ["POLL 0/0 pl 0", "haltpoll 1000/1000  0"]
    );
    let pseries = [
        ("snooze", "snooze", 0, 0, 0),
        ("Shared Cede", "Shared Cede", 10, 100, 0),
    ];
    assert_eq!(
        with_states("pseries", &pseries),
        ["snooze 0/0 pl 100000", "Shared Cede 10000/100000  0"]
    );
    assert_eq!(
        with_states("halt", &[("C1", "ACPI HLT", 1, 1, 0)]),
        ["C1 1000/1000  0"]
    );
    // Two states of one name get distinct ones.
    let twins = [("C1", "MWAIT 0x00", 1, 1, 0), ("C1", "MWAIT 0x01", 2, 4, 0)];
    assert_eq!(
        with_states("twins", &twins),
        ["C1 1000/1000 p 0", "C1state1 2000/4000 p 0"]
    );
    // No cpuidle directory: x86's MWAIT, an estimated exit.
    assert_eq!(with_states("none", &[]), ["C1 2000/0 p 0"]);
}

/// An offline CPU has a cpuN directory but no topology: the import refuses
/// the tree, naming the CPUs, rather than give them cores and LLCs of their
/// own (an online file listing every CPU is fine).
#[test]
fn offline_cpus_are_refused_by_name() {
    let c = Copy::of("x86-smt", "offline");
    std::fs::write(c.file("cpu/online"), "0-7\n").unwrap();
    assert_eq!(machine_from_sysfs(&c.0).unwrap().nr_cpus(), 8);
    std::fs::write(c.file("cpu/online"), "0-3\n").unwrap();
    let _ = std::fs::remove_dir_all(c.file("cpu/cpu5/topology"));
    let e = machine_from_sysfs(&c.0).unwrap_err().to_string();
    assert!(e.contains("devices/system/cpu/online"), "{e}");
    assert!(e.contains("CPUs 4-7 are offline"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

/// A CPU without a `topology` directory is its own core, unless another
/// CPU's sibling list names it: then the error names the missing directory
/// (not a disagreement of lists).
#[test]
fn a_missing_topology_directory_is_named() {
    let c = Copy::of("x86-smt", "notopo");
    std::fs::remove_dir_all(c.file("cpu/cpu2/topology")).unwrap();
    let e = machine_from_sysfs(&c.0).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "field `devices/system/cpu/cpu2/topology`: missing, though \
             cpu6/topology/thread_siblings_list names CPU 2 as a sibling"
        ),
        "{e}"
    );
    // Without the sibling that names it, it is a core of its own.
    std::fs::remove_dir_all(c.file("cpu/cpu6/topology")).unwrap();
    let m = machine_from_sysfs(&c.0).unwrap();
    assert_eq!(m.smt_mask(2).to_list_string(), "2");
}

/// An imported machine writes every wake-up and balancing cost, marked
/// ESTIMATE, so that sensitivity studies and edits find them all.
#[test]
fn imported_costs_are_all_written_and_marked() {
    let text = schedlab_topo::sysfs::sysfs_machine_text(&fixture("x86-smt")).unwrap();
    let keys: Vec<String> = schedlab_topo::edit::estimate_keys(&text)
        .into_iter()
        .map(|k| k.path)
        .collect();
    for k in [
        "wakeup.ipi_ns",
        "wakeup.wakeup_path_ns",
        "wakeup.balance_pass_ns",
        "wakeup.balance_pass_per_cpu_ns",
        "wakeup.balance_refused_ns",
    ] {
        assert!(keys.contains(&k.to_string()), "{k}: {keys:?}");
    }
}
