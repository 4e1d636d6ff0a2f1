//! Human and JSON renderings of a machine and its domains (`schedlab topo`).

use crate::build::kernel_capacities;
use crate::cpumask::CpuMask;
use crate::domains::{CpuDomains, Domains, SchedDomain};
use crate::machine::Machine;
use serde_json::{json, Value};
use std::fmt::Write as _;

fn size_str(bytes: u64) -> String {
    const K: u64 = 1024;
    if bytes >= K * K * K {
        trim(bytes as f64 / (K * K * K) as f64, "G")
    } else if bytes >= K * K {
        trim(bytes as f64 / (K * K) as f64, "M")
    } else if bytes >= K {
        trim(bytes as f64 / K as f64, "K")
    } else {
        format!("{bytes}B")
    }
}

fn trim(v: f64, unit: &str) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

fn gbps(v: f64) -> String {
    format!("{:.1} GB/s", v / 1e9)
}

fn distinct(m: &Machine, key: fn(&crate::machine::CpuInfo) -> u32) -> usize {
    let mut v: Vec<u32> = m.cpus.iter().map(key).collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// The machine summary printed above the domains.
pub fn format_machine(m: &Machine) -> String {
    let mut s = String::new();
    let n = m.nr_cpus();
    let cores = distinct(m, |c| c.core);
    let _ = writeln!(s, "machine {} (arch {})", m.name, m.arch.as_str());
    if !m.description.is_empty() {
        let _ = writeln!(s, "  {}", m.description);
    }
    let _ = writeln!(
        s,
        "  {n} CPUs, {cores} cores, {} clusters, {} LLCs, {} dies, {} packages, {} nodes",
        distinct(m, |c| c.cluster),
        distinct(m, |c| c.llc),
        distinct(m, |c| c.die),
        distinct(m, |c| c.package),
        m.nodes.len()
    );
    for (ti, t) in m.core_types.iter().enumerate() {
        let mine: Vec<_> = m
            .cpus
            .iter()
            .filter(|c| c.core_type as usize == ti)
            .collect();
        if mine.is_empty() {
            // Every CPU of this type is offline (`:online=`).
            let _ = writeln!(s, "  core type {}: no CPU online", t.name);
            continue;
        }
        let cpus = CpuMask::from_cpus(mine.iter().map(|c| c.id));
        let mut caps: Vec<u16> = mine.iter().map(|c| c.capacity).collect();
        caps.sort_unstable();
        caps.dedup();
        let mut freqs: Vec<u32> = mine.iter().map(|c| c.freq_max_mhz).collect();
        freqs.sort_unstable();
        freqs.dedup();
        let mut prios: Vec<u32> = mine.iter().map(|c| c.asym_prio).collect();
        prios.sort_unstable();
        prios.dedup();
        let list = |v: Vec<String>| v.join("/");
        let _ = writeln!(
            s,
            "  core type {}: CPUs {}, capacity {}, {} MHz, asym_prio {}, smt_thread_speed {:.2}, core bw {}",
            t.name,
            cpus.to_list_string(),
            list(caps.iter().map(|c| c.to_string()).collect()),
            list(freqs.iter().map(|c| c.to_string()).collect()),
            list(prios.iter().map(|c| c.to_string()).collect()),
            t.smt_thread_speed,
            gbps(t.core_bw_bytes_per_s),
        );
    }
    // Caches: one line per (level, kind, size, sharing weight).
    let mut kinds: Vec<(u8, String, u64, u32, u32)> = Vec::new();
    for c in &m.caches {
        let w = c.cpus.weight();
        match kinds
            .iter_mut()
            .find(|k| k.0 == c.level && k.1 == c.kind && k.2 == c.size_bytes && k.3 == w)
        {
            Some(k) => k.4 += 1,
            None => kinds.push((c.level, c.kind.clone(), c.size_bytes, w, 1)),
        }
    }
    if !kinds.is_empty() {
        let parts: Vec<String> = kinds
            .iter()
            .map(|(l, k, sz, w, cnt)| {
                let suffix = match k.as_str() {
                    "Data" => "d",
                    "Instruction" => "i",
                    _ => "",
                };
                format!(
                    "L{l}{suffix} {} x{cnt} ({w} CPU{} each)",
                    size_str(*sz),
                    if *w == 1 { "" } else { "s" }
                )
            })
            .collect();
        let _ = writeln!(s, "  caches: {}", parts.join(", "));
    }
    for nd in &m.nodes {
        let _ = writeln!(
            s,
            "  node {}: {}, memory {} asymptote, half at {:.2} streams, {} ns",
            nd.id,
            if nd.cpus.is_empty() {
                // Memory only, or every CPU offline (`:online=`): where the
                // memory model puts it.
                match m.node_package(nd.id) {
                    Some(p) if m.cpus.iter().any(|c| c.package == p) => {
                        format!("no CPUs (in package {p})")
                    }
                    Some(_) => "no CPUs (in a package without online CPUs)".to_string(),
                    None => "no CPUs".to_string(),
                }
            } else {
                format!("CPUs {}", nd.cpus.to_list_string())
            },
            gbps(nd.mem_bw_peak_bytes_per_s),
            nd.mem_half_concurrency,
            nd.mem_latency_ns
        );
    }
    if m.distance.len() > 1 {
        let _ = writeln!(s, "  node distances:");
        for row in &m.distance {
            let r: Vec<String> = row.iter().map(|d| format!("{d:>3}")).collect();
            let _ = writeln!(s, "   {}", r.join(" "));
        }
    }
    if !m.links.is_empty() {
        let parts: Vec<String> = m
            .links
            .iter()
            .map(|l| {
                format!(
                    "{} {{{}}} {}",
                    l.name,
                    l.cpus.to_list_string(),
                    gbps(l.bw_bytes_per_s)
                )
            })
            .collect();
        let _ = writeln!(s, "  links: {}", parts.join(", "));
    }
    let c = &m.c2c;
    let _ = writeln!(
        s,
        "  c2c ns: smt {} cluster {} llc {} die {} node {} package {} remote package {}",
        c.smt_ns, c.cluster_ns, c.llc_ns, c.die_ns, c.node_ns, c.package_ns, c.remote_package_ns
    );
    let w = &m.wakeup;
    let _ = writeln!(
        s,
        "  wakeup ns: ipi {} wakeup path {}; balance pass {} + {} per CPU, refused {}",
        w.ipi_ns,
        w.wakeup_path_ns,
        w.balance_pass_ns,
        w.balance_pass_per_cpu_ns,
        w.balance_refused_ns
    );
    for st in &w.idle_states {
        let mut notes = Vec::new();
        if st.polls {
            notes.push("polls: no IPI".to_string());
        }
        if st.poll_loop {
            notes.push(if st.poll_limit_ns > 0 {
                format!("a loop that gives up after {} ns", st.poll_limit_ns)
            } else {
                "a loop that gives up after cpuidle_poll_time()".to_string()
            });
        }
        if st.disabled {
            notes.push("disabled".to_string());
        }
        let _ = writeln!(
            s,
            "  idle state {}: exit {} ns, residency {} ns{}",
            st.name,
            st.exit_ns,
            st.residency_ns,
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        );
    }
    s
}

fn group_str(g: &crate::domains::SchedGroup) -> String {
    let w = g.span.weight();
    if g.capacity == 1024 * w {
        format!("{{{}}}", g.span.to_list_string())
    } else {
        format!("{{{} cap={}}}", g.span.to_list_string(), g.capacity)
    }
}

fn domain_line(k: usize, d: &SchedDomain) -> String {
    let mut s = format!(
        "domain{k} {} span {} flags {} imbalance_pct {} min_interval {} max_interval {} busy_factor {} cache_nice_tries {}",
        d.name,
        d.span.to_list_string(),
        d.flags.names().join(" "),
        d.imbalance_pct,
        d.min_interval_ms,
        d.max_interval_ms,
        d.busy_factor,
        d.cache_nice_tries,
    );
    if d.imb_numa_nr > 0 {
        let _ = write!(s, " imb_numa_nr {}", d.imb_numa_nr);
    }
    if d.numa_distance > 0 {
        let _ = write!(s, " distance {}", d.numa_distance);
    }
    let _ = write!(s, " level {}", d.level);
    s
}

fn shortcut_line(m: &Machine, c: &CpuDomains) -> String {
    let name = |i: Option<usize>| match i {
        Some(i) => format!("{}({})", c.domains[i].name, c.domains[i].span.weight()),
        None => "-".to_string(),
    };
    let info = &m.cpus[c.cpu as usize];
    format!(
        "cpu{} core {} cluster {} llc {} node {} capacity {}: sd_llc {} llc_size {} llc_id {} share_id {} sd_cluster {} sd_numa {} sd_asym_packing {} sd_asym_cpucapacity {}",
        c.cpu,
        info.core,
        info.cluster,
        info.llc,
        info.node,
        info.capacity,
        name(c.sd_llc),
        c.llc_size,
        c.llc_id,
        c.share_id,
        name(c.sd_cluster),
        name(c.sd_numa),
        name(c.sd_asym_packing),
        name(c.sd_asym_cpucapacity),
    )
}

/// The text of one CPU's hierarchy (kernel-debug-like).
pub fn format_cpu(m: &Machine, c: &CpuDomains) -> String {
    let mut s = shortcut_line(m, c);
    s.push('\n');
    if c.domains.is_empty() {
        s.push_str("  (no domains)\n");
    }
    for (k, d) in c.domains.iter().enumerate() {
        let indent = "  ".repeat(k + 1);
        let _ = writeln!(s, "{indent}{}", domain_line(k, d));
        let groups: Vec<String> = d.groups.iter().map(group_str).collect();
        let _ = writeln!(s, "{indent}  groups: {}", groups.join(" "));
    }
    s
}

/// Machine header plus every CPU's domains.
pub fn format_topo(m: &Machine, d: &Domains) -> String {
    let mut s = format_machine(m);
    let cfg = &d.config;
    let caps = kernel_capacities(m);
    let kernel_caps_differ = caps
        .iter()
        .zip(&m.cpus)
        .any(|(k, c)| *k != u32::from(c.capacity));
    let _ = writeln!(
        s,
        "domains: cluster {} mc_is_llc {} fallback_llc {} propagate_smt_flags {} itmt {}{}{}; sched_cluster_active {} sched_asym_cpucapacity {}{}",
        cfg.cluster,
        cfg.mc_is_llc,
        cfg.fallback_llc,
        cfg.propagate_smt_flags,
        // ITMT (sched_set_itmt_support()) exists on x86 only, and packs only
        // when the booted CPUs' priorities differ and capacities do not.
        if m.arch == crate::machine::Arch::X86 {
            let packing = crate::build::asym_packing_on(m, cfg);
            let one_prio = !crate::build::prios_differ(m);
            match (cfg.itmt, packing, one_prio) {
                (false, _, _) => "false".to_string(),
                (true, true, _) => "true".to_string(),
                (true, false, true) => "true (inactive: one priority)".to_string(),
                (true, false, false) => {
                    "true (inactive: hybrid capacity scaling instead)".to_string()
                }
            }
        } else {
            "n/a (x86 only)".to_string()
        },
        if cfg.itmt_legacy_smt {
            " (pre-6.5 SMT priorities, SMT asym packing)"
        } else {
            ""
        },
        if cfg.relax_domain_level >= 0 {
            format!(" relax_domain_level {}", cfg.relax_domain_level)
        } else {
            String::new()
        },
        d.cluster_active,
        d.asym_cpucapacity,
        if kernel_caps_differ {
            " (x86 with SMT: the kernel sees capacity 1024 everywhere)"
        } else {
            ""
        }
    );
    for c in &d.cpus {
        s.push_str(&format_cpu(m, c));
    }
    s
}

/// `topo --json` (contract shape), with extra keys per domain and per CPU.
pub fn topo_json(m: &Machine, d: &Domains) -> Value {
    let cpus: Vec<Value> = d
        .cpus
        .iter()
        .map(|c| {
            let doms: Vec<Value> = c
                .domains
                .iter()
                .map(|s| {
                    json!({
                        "level": s.name,
                        "span": s.span.iter().collect::<Vec<_>>(),
                        "flags": s.flags.names(),
                        "groups": s.groups.iter().map(|g| g.span.iter().collect::<Vec<_>>()).collect::<Vec<_>>(),
                        "group_capacity": s.groups.iter().map(|g| g.capacity).collect::<Vec<_>>(),
                        "group_flags": s.groups.iter().map(|g| g.flags.names()).collect::<Vec<_>>(),
                        "imbalance_pct": s.imbalance_pct,
                        "min_interval_ms": s.min_interval_ms,
                        "max_interval_ms": s.max_interval_ms,
                        "busy_factor": s.busy_factor,
                        "cache_nice_tries": s.cache_nice_tries,
                        "imb_numa_nr": s.imb_numa_nr,
                        "numa_distance": s.numa_distance,
                    })
                })
                .collect();
            let lvl = |i: Option<usize>| i.map(|i| c.domains[i].name.clone());
            json!({
                "cpu": c.cpu,
                "domains": doms,
                "sd_llc": lvl(c.sd_llc),
                "llc_size": c.llc_size,
                "llc_id": c.llc_id,
                "share_id": c.share_id,
                "sd_cluster": lvl(c.sd_cluster),
                "sd_numa": lvl(c.sd_numa),
                "sd_asym_packing": lvl(c.sd_asym_packing),
                "sd_asym_cpucapacity": lvl(c.sd_asym_cpucapacity),
            })
        })
        .collect();
    json!({
        "machine": m.name,
        "description": m.description,
        "arch": m.arch.as_str(),
        "config": d.config,
        "cluster_active": d.cluster_active,
        "asym_cpucapacity": d.asym_cpucapacity,
        "topology": m,
        "cpus": cpus,
    })
}
