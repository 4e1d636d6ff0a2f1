//! Machines with some CPUs offline (`echo 0 > /sys/devices/system/cpu/cpuN/online`,
//! `ppc64_cpu --cores-on=N`).
//!
//! The kernel builds its sched domains over the online CPUs only
//! (`sched_init_domains()` / `partition_sched_domains()` use
//! `cpu_active_mask`): an offline CPU is in no domain span, no group and no
//! LLC mask, and the wakeup path and the balancer never see it. The faithful
//! model is therefore a smaller machine that contains only the online CPUs,
//! with the same cores, caches and memory; the domain builder then runs on it
//! unchanged, except for what the kernel decided at boot with every CPU
//! online (the arch's topology table, ITMT, hybrid capacity scaling), which
//! it reads from the machine as booted (`Machine::booted`). Offline CPUs are
//! removed and the remaining ones renumbered in order (with a prefix `0-N`
//! nothing is renumbered); so are the cores, clusters, LLCs, dies and
//! packages, densely in order of their lowest online CPU, as a machine file
//! numbers them, so that the machine `topo --emit-machine` writes loads
//! back equal. NUMA nodes keep their ids, and a node whose CPUs are all
//! offline stays as a node without CPUs (its memory is still there: Linux
//! keeps it in N_MEMORY, only N_CPU loses it, and sched_update_numa() takes
//! it out of the sched domains' NUMA distances).
//!
//! Name syntax: `MACHINE:online=LIST` (e.g. `power10:online=0-63`), accepted
//! wherever a machine name is (`resolve_machine`).

use crate::cpumask::{CpuId, CpuMask};
use crate::error::TopoError;
use crate::load::densify;
use crate::machine::{CpuInfo, Machine};

/// The suffix that restricts a machine to its online CPUs.
pub const ONLINE_KEY: &str = ":online=";

/// The error for an online list that is not a non-empty subset of `m`'s CPUs.
fn not_a_subset(m: &Machine, list: &str) -> TopoError {
    TopoError::invalid(
        &format!("{}{ONLINE_KEY}{list}", m.name),
        "online",
        format!(
            "the online CPUs must be a non-empty subset of {}",
            m.all_cpus().to_list_string()
        ),
    )
}

/// `m` with only the CPUs of `online` (renumbered densely in CPU order, and
/// their cores, clusters, LLCs, dies and packages in order of their lowest
/// online CPU): caches and shared links keep their online CPUs and disappear
/// when none is left; nodes keep their ids, and their memory when none of
/// their CPUs is left; node memory parameters, latencies and costs are
/// unchanged.
pub fn with_online_cpus(m: &Machine, online: &CpuMask) -> Result<Machine, TopoError> {
    let origin = format!("{}{ONLINE_KEY}{}", m.name, online.to_list_string());
    let all = m.all_cpus();
    if online.is_empty() || !online.is_subset(&all) {
        return Err(not_a_subset(m, &online.to_list_string()));
    }
    // Old id -> new id.
    let mut map: Vec<Option<CpuId>> = vec![None; m.nr_cpus()];
    for (new, old) in online.iter().enumerate() {
        map[old as usize] = Some(new as CpuId);
    }
    let remap = |mask: &CpuMask| CpuMask::from_cpus(mask.iter().filter_map(|c| map[c as usize]));
    let mut out = m.clone();
    // The topology table and ITMT keep what the whole machine gave at boot.
    out.booted = Some(Box::new(m.as_booted().clone()));
    out.name = origin.clone();
    out.description = format!(
        "{} (online CPUs {} of {})",
        m.description,
        online.to_list_string(),
        all.to_list_string()
    );
    out.cpus = m
        .cpus
        .iter()
        .filter_map(|c| {
            map[c.id as usize].map(|id| {
                let mut c = c.clone();
                c.id = id;
                c
            })
        })
        .collect();
    // The loader's numbering (load.rs `densify`): the machine written out
    // and loaded again is this one.
    let dense = |key: fn(&CpuInfo) -> u32| densify(out.cpus.iter().map(|c| u64::from(key(c))));
    let (cores, clusters, llcs) = (dense(|c| c.core), dense(|c| c.cluster), dense(|c| c.llc));
    let (dies, packages) = (dense(|c| c.die), dense(|c| c.package));
    for (i, c) in out.cpus.iter_mut().enumerate() {
        (c.core, c.cluster, c.llc) = (cores[i], clusters[i], llcs[i]);
        (c.die, c.package) = (dies[i], packages[i]);
    }
    out.caches = m
        .caches
        .iter()
        .filter_map(|c| {
            let cpus = remap(&c.cpus);
            (!cpus.is_empty()).then(|| {
                let mut c = c.clone();
                c.cpus = cpus;
                c
            })
        })
        .collect();
    // Nodes keep their ids (the SLIT table is indexed by them), even when all
    // their CPUs are offline (a memory-only node), and such a node keeps its
    // memory in its package: that package's new number, or one after the
    // online CPUs' when the whole package is offline.
    let nr_packages = out.cpus.iter().map(|c| c.package + 1).max().unwrap_or(0);
    let mut offline_packages: Vec<u32> = Vec::new();
    for n in &mut out.nodes {
        n.cpus = remap(&n.cpus);
        if !n.cpus.is_empty() {
            n.package = None;
            continue;
        }
        let Some(old) = m.node_package(n.id) else {
            continue;
        };
        let online_cpu = m
            .cpus
            .iter()
            .find(|c| c.package == old && map[c.id as usize].is_some());
        n.package = Some(match online_cpu {
            Some(c) => out.cpus[map[c.id as usize].unwrap_or(0) as usize].package,
            None => crate::load::cpuless_package(&mut offline_packages, old, nr_packages),
        });
    }
    out.links = m
        .links
        .iter()
        .filter_map(|l| {
            let cpus = remap(&l.cpus);
            (!cpus.is_empty()).then(|| {
                let mut l = l.clone();
                l.cpus = cpus;
                l
            })
        })
        .collect();
    Ok(out)
}

/// [`with_online_cpus`] for the text of an online list (as [`split_online`]
/// returns it): a list naming CPUs the machine does not have, however large
/// their numbers, gets the same error as any other list that is not a
/// subset of its CPUs.
pub fn with_online_list(m: &Machine, list: &str) -> Result<Machine, TopoError> {
    match CpuMask::parse_list(list) {
        Some(online) => with_online_cpus(m, &online),
        None => Err(not_a_subset(m, list.trim())),
    }
}

/// Splits `NAME:online=LIST` into the machine name and the list's text
/// (for [`with_online_list`]), which must be a CPU list such as `0-63`
/// (its numbers are checked against the machine there). `Ok(None)` when
/// `s` has no online suffix.
pub fn split_online(s: &str) -> Result<Option<(&str, &str)>, TopoError> {
    let Some((name, list)) = s.rsplit_once(ONLINE_KEY) else {
        return Ok(None);
    };
    if is_cpu_list(list) {
        Ok(Some((name, list)))
    } else {
        Err(TopoError::invalid(
            s,
            "online",
            format!("'{list}' is not a CPU list such as 0-63"),
        ))
    }
}

/// Whether `s` has the syntax [`CpuMask::parse_list`] accepts (a non-empty
/// list of numbers and ranges `A-B` with A <= B), whatever its numbers.
fn is_cpu_list(s: &str) -> bool {
    // A number too large for u64 is still a number (beyond any machine).
    let num = |t: &str| {
        let t = t.trim();
        t.parse::<u64>().ok().or_else(|| {
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then_some(u64::MAX)
        })
    };
    let s = s.trim();
    !s.is_empty()
        && s.split(',').all(|part| match part.split_once('-') {
            Some((a, b)) => matches!((num(a), num(b)), (Some(a), Some(b)) if a <= b),
            None => num(part).is_some(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{build_domains, preset, resolve_machine, DomainConfig};

    #[test]
    fn power10_with_64_cpus_online() {
        let m = resolve_machine("power10:online=0-63").unwrap();
        assert_eq!(m.nr_cpus(), 64);
        assert_eq!(m.name, "power10:online=0-63");
        // Hemisphere 1 keeps 3 of its 5 SMT8 cores.
        assert_eq!(m.die_mask(40).weight(), 24);
        assert_eq!(m.die_mask(0).weight(), 40);
        assert_eq!(m.nodes[0].cpus.weight(), 64);
        let d = build_domains(&m, &DomainConfig::default()).unwrap();
        // The widest domain spans the online CPUs only.
        let top = d.cpus[0].domains.last().unwrap();
        assert_eq!(top.span.to_list_string(), "0-63");
        let full = preset("power10").unwrap();
        assert_eq!(full.llc_mask(62), m.llc_mask(62));
    }

    /// The table the arch code listed at boot stays: offline SMT siblings
    /// or a whole coregroup leave a degenerate level behind, and the levels
    /// above keep the numbers (`sd->level`) they had with every CPU online.
    #[test]
    fn offline_cpus_keep_the_boot_topology_table() {
        let levels = |name: &str| -> Vec<(String, u8)> {
            let m = resolve_machine(name).unwrap();
            let d = build_domains(&m, &DomainConfig::default()).unwrap();
            d.cpus[0]
                .domains
                .iter()
                .map(|d| (d.name.clone(), d.level))
                .collect()
        };
        // Sapphire Rapids with one thread per core online: SMT was listed
        // at boot, so MC is still level 1.
        let evens: Vec<String> = (0..120).step_by(2).map(|c| c.to_string()).collect();
        let spr = format!("sapphirerapids:online={}", evens.join(","));
        assert_eq!(
            levels(&spr),
            [("MC".to_string(), 1), ("PKG".to_string(), 2)]
        );
        // POWER10 with one coregroup online: MC (the coregroup) was listed
        // at boot and spans what PKG spans, so PKG degenerates.
        assert_eq!(
            levels("power10:online=0-39"),
            [("SMT".to_string(), 0), ("MC".to_string(), 1)]
        );
        // Chained restrictions keep the machine that booted.
        let m = resolve_machine("power10:online=0-63:online=0-39").unwrap();
        assert_eq!(m.as_booted().nr_cpus(), 80);
        // A machine with every CPU online is its own booted machine.
        assert!(preset("power10").unwrap().booted.is_none());
    }

    #[test]
    fn sparse_masks_are_renumbered_and_bad_lists_rejected() {
        let full = preset("power10").unwrap();
        let m = with_online_cpus(&full, &CpuMask::parse_list("0-7,40-47").unwrap()).unwrap();
        assert_eq!(m.nr_cpus(), 16);
        assert_eq!(m.die_mask(8).to_list_string(), "8-15");
        assert_eq!(m.llc_mask(9), CpuMask::parse_list("9,11,13,15").unwrap());
        assert!(resolve_machine("power10:online=0-200").is_err());
        assert!(resolve_machine("power10:online=x").is_err());
        assert!(resolve_machine("nosuch:online=0-3").is_err());
        // CPU numbers the machine does not have, however large, are not a
        // subset of its CPUs; text that is not a list is not a list.
        let err = |name: &str| resolve_machine(name).unwrap_err().to_string();
        for list in ["80", "5000", "0-5000", "3,99999999999999999999999"] {
            let e = err(&format!("power10:online={list}"));
            assert!(
                e.ends_with("field `online`: the online CPUs must be a non-empty subset of 0-79"),
                "{list}: {e}"
            );
        }
        for list in ["x", "", "5-3", "0-", "1,,2", "-1"] {
            let e = err(&format!("power10:online={list}"));
            assert!(
                e.contains(&format!("'{list}' is not a CPU list")),
                "{list}: {e}"
            );
        }
    }

    /// The online CPUs' cores, clusters, LLCs, dies and packages are
    /// numbered as a machine file numbers them; nodes keep their ids, and
    /// one whose CPUs are all offline keeps its memory.
    #[test]
    fn online_topology_ids_are_dense_and_nodes_stay() {
        let m = resolve_machine("exynos5422:online=3-5").unwrap();
        let ids: Vec<(u32, u32, u32)> = m.cpus.iter().map(|c| (c.core, c.cluster, c.llc)).collect();
        assert_eq!(ids, [(0, 0, 0), (1, 1, 1), (2, 1, 1)]);
        let m = resolve_machine("kunpeng920:online=0,95").unwrap();
        assert_eq!(m.nodes.len(), 4);
        assert!(m.nodes[1].cpus.is_empty() && m.nodes[2].cpus.is_empty());
        assert_eq!(
            (m.cpus[1].node, m.cpus[1].package, m.cpus[1].die),
            (3, 1, 1)
        );
    }

    /// A node whose CPUs are all offline keeps the package they had at
    /// boot, by that package's online CPUs' new number, and none when the
    /// whole package is offline: its memory controllers do not move.
    /// (Kunpeng 920: nodes 0-1 are package 0, nodes 2-3 package 1.)
    #[test]
    fn an_offline_nodes_memory_stays_in_its_package() {
        let m = resolve_machine("kunpeng920:online=0-23,48-71").unwrap();
        let pkgs: Vec<Option<u32>> = (0..4).map(|n| m.node_package(n)).collect();
        assert_eq!(pkgs, [Some(0), Some(0), Some(1), Some(1)]);
        // Socket 1 wholly offline: its nodes are in a package of their own.
        let m = resolve_machine("kunpeng920:online=0-47").unwrap();
        let pkgs: Vec<Option<u32>> = (0..4).map(|n| m.node_package(n)).collect();
        assert_eq!(pkgs, [Some(0), Some(0), Some(1), Some(1)]);
        assert!(m.cpus.iter().all(|c| c.package == 0));
        // Taken offline twice: still so.
        let m = crate::with_online_list(&m, "24-47").unwrap();
        let pkgs: Vec<Option<u32>> = (0..4).map(|n| m.node_package(n)).collect();
        assert_eq!(pkgs, [Some(0), Some(0), Some(1), Some(1)]);
        // The emitted file keeps the packages.
        let text = crate::sysfs::machine_to_toml(&m);
        let back = crate::load_machine_str(&text, "t").unwrap();
        let pkgs: Vec<Option<u32>> = (0..4).map(|n| back.node_package(n)).collect();
        assert_eq!(pkgs, [Some(0), Some(0), Some(1), Some(1)]);
    }
}
