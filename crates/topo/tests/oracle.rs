//! Golden data: the domain dumps of a real Linux 7.3 kernel booted under qemu
//! (`shared/oracle/*.txt`, see its README). Skipped with a note when the directory
//! is absent; `SCHEDLAB_ORACLE_DIR` overrides its location.

use schedlab_topo::{build_domains, preset, CpuMask, DomainConfig, Domains, SdFlags};
use std::path::PathBuf;

fn oracle_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("SCHEDLAB_ORACLE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracle"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "note: oracle directory {} absent, test skipped",
            dir.display()
        );
        None
    }
}

fn section<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text.find(&format!("==={name}===")).expect("section");
    let rest = &text[start..];
    let body = &rest[rest.find('\n').unwrap_or(0)..];
    match body.find("\n===") {
        Some(e) => &body[..e],
        None => body,
    }
}

/// One domain of the dmesg listing.
#[derive(Debug, PartialEq)]
struct DmesgDomain {
    level: String,
    span: CpuMask,
    groups: Vec<(CpuMask, Option<u32>)>,
}

fn parse_dmesg(body: &str) -> Vec<Vec<DmesgDomain>> {
    let mut cpus: Vec<Vec<DmesgDomain>> = Vec::new();
    for line in body.lines() {
        let l = match line.find(']') {
            Some(p) => line[p + 1..].trim(),
            None => line.trim(),
        };
        if let Some(rest) = l.strip_prefix("CPU") {
            let n: usize = rest.split_whitespace().next().unwrap().parse().unwrap();
            assert_eq!(n, cpus.len(), "CPUs listed in order");
            cpus.push(Vec::new());
        } else if l.starts_with("domain-") {
            let span = l
                .split("span=")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap();
            let level = l.split("level=").nth(1).unwrap().trim();
            cpus.last_mut().unwrap().push(DmesgDomain {
                level: level.to_string(),
                span: CpuMask::parse_list(span).unwrap(),
                groups: Vec::new(),
            });
        } else if let Some(g) = l.strip_prefix("groups:") {
            let d = cpus.last_mut().unwrap().last_mut().unwrap();
            for part in g.split('{').skip(1) {
                let inner = part.split('}').next().unwrap();
                let span = inner
                    .split("span=")
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .next()
                    .unwrap();
                let cap = inner
                    .split("cap=")
                    .nth(1)
                    .map(|c| c.split_whitespace().next().unwrap().parse().unwrap());
                d.groups.push((CpuMask::parse_list(span).unwrap(), cap));
            }
        }
    }
    cpus
}

fn check_against_oracle(file: &str, machine: &str, config: &str) {
    let Some(dir) = oracle_dir() else { return };
    let path = dir.join(file);
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("note: {} absent, test skipped", path.display());
        return;
    };
    let m = preset(machine).unwrap();
    let d: Domains = build_domains(&m, &DomainConfig::named(config).unwrap()).unwrap();

    // dmesg: levels, spans, groups in order, group capacities.
    let dm = parse_dmesg(section(&text, "DMESG-SCHED"));
    assert_eq!(dm.len(), m.nr_cpus());
    for (cpu, kd) in dm.iter().enumerate() {
        let ours = &d.cpus[cpu].domains;
        assert_eq!(ours.len(), kd.len(), "cpu{cpu}: number of domains");
        for (o, k) in ours.iter().zip(kd) {
            assert_eq!(o.name, k.level, "cpu{cpu}");
            assert_eq!(o.span, k.span, "cpu{cpu} {}", o.name);
            let og: Vec<CpuMask> = o.groups.iter().map(|g| g.span).collect();
            let kg: Vec<CpuMask> = k.groups.iter().map(|g| g.0).collect();
            assert_eq!(og, kg, "cpu{cpu} {} groups", o.name);
            for (g, (_, cap)) in o.groups.iter().zip(&k.groups) {
                if let Some(cap) = cap {
                    assert_eq!(g.capacity, *cap, "cpu{cpu} {} group cap", o.name);
                }
            }
        }
    }

    // debugfs: name, flags, imbalance_pct, intervals, busy_factor, cache_nice_tries.
    let mut seen = 0;
    for line in section(&text, "DEBUGFS")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let mut words = line.split_whitespace();
        let cpu: usize = words
            .next()
            .unwrap()
            .trim_start_matches("cpu")
            .parse()
            .unwrap();
        let dom: usize = words
            .next()
            .unwrap()
            .trim_start_matches("domain")
            .parse()
            .unwrap();
        let o = &d.cpus[cpu].domains[dom];
        let mut flags = SdFlags::empty();
        let mut field = "";
        for w in line.split_whitespace().skip(2) {
            if let Some((k, v)) = w.split_once('=') {
                field = k;
                match k {
                    "name" => assert_eq!(o.name, v, "{line}"),
                    "flags" => flags = flags | SdFlags::from_name(v).expect(v),
                    "imb" => assert_eq!(o.imbalance_pct.to_string(), v, "{line}"),
                    "min" => assert_eq!(o.min_interval_ms.to_string(), v, "{line}"),
                    "max" => assert_eq!(o.max_interval_ms.to_string(), v, "{line}"),
                    "bf" => assert_eq!(o.busy_factor.to_string(), v, "{line}"),
                    "cnt" => assert_eq!(o.cache_nice_tries.to_string(), v, "{line}"),
                    _ => panic!("unknown debugfs key {k}"),
                }
            } else if field == "flags" {
                flags = flags | SdFlags::from_name(w).expect(w);
            }
        }
        assert_eq!(o.flags, flags, "{line}");
        seen += 1;
    }
    assert!(seen > 0);
}

#[test]
fn sapphirerapids_matches_linux_7_3() {
    check_against_oracle("sapphirerapids-qemu.txt", "sapphirerapids", "vanilla");
}

#[test]
fn sapphirerapids_cache_aware_is_the_same_topology() {
    check_against_oracle("sapphirerapids-qemu.txt", "sapphirerapids", "cache-aware");
}

#[test]
fn sapphirerapids_with_cls_compiled_in() {
    // The oracle kernel had CONFIG_SCHED_CLUSTER: its CLS (= the SMT pair) degenerates.
    check_against_oracle("sapphirerapids-qemu.txt", "sapphirerapids", "cluster");
}
