//! Machine presets, embedded in the binary (`crates/topo/presets/*.toml`).
//!
//! Every number in a preset file carries its source key from
//! `shared/reference/hardware.md` (e.g. `[WAYCA]`) or the word ESTIMATE in a comment.

use crate::edit::{load_edited, EditCount, MachineEdit};
use crate::error::TopoError;
use crate::load::load_machine_str;
use crate::machine::Machine;
use crate::sysfs::host_machine_text;
use std::path::Path;

/// Preset names, in the order of the reference machines (S1..S5).
pub const PRESET_NAMES: &[&str] = &[
    "kunpeng920",
    "power10",
    "alderlake",
    "sapphirerapids",
    "genoa",
    "exynos5422",
    "exynos5433",
];

/// The TOML text of a preset, if `name` is one.
pub fn preset_text(name: &str) -> Option<&'static str> {
    Some(match name {
        "kunpeng920" => include_str!("../presets/kunpeng920.toml"),
        "power10" => include_str!("../presets/power10.toml"),
        "alderlake" => include_str!("../presets/alderlake.toml"),
        "sapphirerapids" => include_str!("../presets/sapphirerapids.toml"),
        "genoa" => include_str!("../presets/genoa.toml"),
        "exynos5422" => include_str!("../presets/exynos5422.toml"),
        "exynos5433" => include_str!("../presets/exynos5433.toml"),
        _ => return None,
    })
}

/// Loads a preset by name; the error lists the valid names.
pub fn preset(name: &str) -> Result<Machine, TopoError> {
    match preset_text(name) {
        Some(text) => load_machine_str(text, &format!("preset:{name}")),
        None => Err(TopoError::UnknownPreset {
            name: name.to_string(),
            valid: PRESET_NAMES.join(", "),
        }),
    }
}

/// Names that mean this computer, read from `/sys` ([`host_machine_text`]),
/// where no file of that name exists.
pub const HOST_NAMES: [&str; 2] = ["host", "--host"];

/// The text behind a preset name, a machine file path or a host name, and
/// the origin its messages name; `None` for anything else.
fn source(name_or_path: &str) -> Result<Option<(String, String)>, TopoError> {
    if let Some(text) = preset_text(name_or_path) {
        return Ok(Some((text.to_string(), format!("preset:{name_or_path}"))));
    }
    let path = Path::new(name_or_path);
    if path.is_file() {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TopoError::Io {
            origin: origin.clone(),
            reason: e.to_string(),
        })?;
        return Ok(Some((text, origin)));
    }
    if HOST_NAMES.contains(&name_or_path) {
        return Ok(Some((host_machine_text()?, "/sys".to_string())));
    }
    Ok(None)
}

fn unknown(name_or_path: &str) -> TopoError {
    let path = Path::new(name_or_path);
    TopoError::UnknownMachine {
        name: name_or_path.to_string(),
        valid: format!("{}, host", PRESET_NAMES.join(", ")),
        reason: if path.exists() {
            "the path is not a regular file".to_string()
        } else {
            "no such file".to_string()
        },
    }
}

/// A preset name, else a machine file path, else `host` (this computer);
/// any may end in `:online=LIST` (only those CPUs online, see
/// [`crate::online`]).
pub fn resolve_machine(name_or_path: &str) -> Result<Machine, TopoError> {
    resolve_machine_edited(name_or_path, &[], false).map(|(m, _)| m)
}

/// The machine-file text behind a name [`resolve_machine`] accepts (an
/// `:online=LIST` suffix is ignored here).
pub fn machine_text(name_or_path: &str) -> Result<String, TopoError> {
    if let Some((text, _)) = source(name_or_path)? {
        return Ok(text);
    }
    if let Some((name, _)) = crate::online::split_online(name_or_path)? {
        return machine_text(name);
    }
    Err(unknown(name_or_path))
}

/// The machine file `topo --emit-machine` prints for a name
/// [`resolve_machine`] accepts: a preset's, a file's or the host's own text;
/// for `NAME:online=LIST`, the smaller machine written out
/// ([`crate::machine_to_toml`]), with every line that holds a number NAME's
/// text marks ESTIMATE marked ESTIMATE again (so `--sensitivity` still finds
/// them in an edited copy).
pub fn emit_machine_text(name_or_path: &str) -> Result<String, TopoError> {
    if let Some((text, _)) = source(name_or_path)? {
        return Ok(text);
    }
    let Some((name, online)) = crate::online::split_online(name_or_path)? else {
        return Err(unknown(name_or_path));
    };
    let text = emit_machine_text(name)?;
    let written = |edits: &[MachineEdit]| -> Result<Option<String>, TopoError> {
        let (m, counts) = load_edited(&text, name, edits, false)?;
        if counts.iter().any(|n| n.changed == 0) {
            return Ok(None);
        }
        let m = crate::online::with_online_list(&m, online)?;
        Ok(Some(crate::sysfs::machine_to_toml(&m)))
    };
    let Some(out) = written(&[])? else {
        return Err(unknown(name_or_path));
    };
    let lines: Vec<&str> = out.lines().collect();
    let mut marked = vec![false; lines.len()];
    // A line holds an estimated number when changing that number changes
    // the line (and nothing changes the shape of the written file).
    for k in crate::edit::estimate_keys(&text) {
        let v = k.value;
        for other in [v * 2.0, v / 2.0, v + 1.0, v - 1.0] {
            let Ok(edit) = MachineEdit::parse(&format!("{}={other}", k.path)) else {
                continue;
            };
            // An edit that makes the machine impossible tells nothing.
            let Ok(Some(changed)) = written(&[edit]) else {
                continue;
            };
            let changed: Vec<&str> = changed.lines().collect();
            if changed.len() != lines.len() {
                continue;
            }
            for (i, (a, b)) in lines.iter().zip(&changed).enumerate() {
                marked[i] |= a != b;
            }
            break;
        }
    }
    let mut s = String::with_capacity(out.len());
    for (line, estimate) in lines.iter().zip(marked) {
        s.push_str(line);
        if estimate {
            s.push_str("  # ESTIMATE");
        }
        s.push('\n');
    }
    Ok(s)
}

/// [`resolve_machine`] with machine edits applied to the machine file's
/// text before loading (see [`crate::edit`]); with `require_match`, an edit
/// that changes no number of the machine is an error. Returns the machine
/// and, per edit, how many numbers it matched and changed.
pub fn resolve_machine_edited(
    name_or_path: &str,
    edits: &[MachineEdit],
    require_match: bool,
) -> Result<(Machine, Vec<EditCount>), TopoError> {
    if let Some((text, origin)) = source(name_or_path)? {
        return load_edited(&text, &origin, edits, require_match);
    }
    if let Some((name, online)) = crate::online::split_online(name_or_path)? {
        let (m, n) = resolve_machine_edited(name, edits, require_match)?;
        return Ok((crate::online::with_online_list(&m, online)?, n));
    }
    Err(unknown(name_or_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_presets_load() {
        for name in PRESET_NAMES {
            let m = preset(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&m.name, name);
        }
    }

    #[test]
    fn unknown_names() {
        let e = preset("nope").unwrap_err().to_string();
        assert!(e.contains("kunpeng920") && e.contains("exynos5433"), "{e}");
        let e = resolve_machine("/no/such/file.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such file") && e.contains("genoa"), "{e}");
    }

    /// A machine with CPUs offline keeps the ESTIMATE marks of its file.
    #[test]
    fn emitted_online_machines_keep_estimate_marks() {
        use crate::edit::estimate_keys;
        let full = emit_machine_text("power10").unwrap();
        let part = emit_machine_text("power10:online=0-63").unwrap();
        let paths = |t: &str| -> Vec<String> {
            estimate_keys(t)
                .into_iter()
                .map(|k| k.path.replace("memory.", "node.0."))
                .collect()
        };
        let (full, part) = (paths(&full), paths(&part));
        assert!(full.len() > 10, "{full:?}");
        for p in ["c2c.die_ns", "wakeup.ipi_ns", "node.0.mem_latency_ns"] {
            assert!(part.contains(&p.to_string()), "{p}: {part:?}");
        }
        // Every number marked in the file is marked in the smaller machine.
        for p in &full {
            assert!(part.contains(p), "{p} lost: {part:?}");
        }
        // The file is the online CPUs' machine as if it had booted so.
        let m = load_machine_str(&emit_machine_text("power10:online=0-63").unwrap(), "t");
        let mut online = resolve_machine("power10:online=0-63").unwrap();
        assert!(online.booted.is_some());
        online.booted = None;
        assert_eq!(m.unwrap(), online);
    }

    /// `topo --emit-machine` of a machine with CPUs offline writes a file
    /// that loads back to that machine as if it had booted so: the same
    /// CPUs, cores, caches, nodes (those left without CPUs too) and
    /// numbers. Its `topo` text is the restricted machine's, except where
    /// the kernel decided something at boot with every CPU online (the
    /// arch's topology table: POWER10 with one SMT8 core online keeps the
    /// coregroup level MC its 80 CPUs gave it, where a machine booted with
    /// that core alone has none and calls the same domain PKG).
    #[test]
    fn emitted_online_machines_reload_to_the_same_topo() {
        use crate::{build_domains, format_topo, DomainConfig};
        let topo = |m: &Machine| {
            let d = build_domains(m, &DomainConfig::default()).unwrap();
            format_topo(m, &d)
        };
        let check = |name: &str| -> (String, String) {
            let text = emit_machine_text(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let back = load_machine_str(&text, "emitted")
                .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            let online = resolve_machine(name).unwrap();
            let mut as_if_booted = online.clone();
            as_if_booted.booted = None;
            assert_eq!(back, as_if_booted, "{name}");
            (topo(&back), topo(&online))
        };
        for name in [
            "kunpeng920:online=0-7",
            "genoa:online=0-15",
            "kunpeng920:online=0,95",
            "alderlake:online=0-3,16",
            "exynos5422:online=3-5",
            "sapphirerapids:online=0-3,60-63",
        ] {
            let (back, online) = check(name);
            assert_eq!(back, online, "{name}");
        }
        // The kernel keeps the hardware's topology ids, but the model's are
        // indices, renumbered as a machine file numbers them.
        let (back, _) = check("alderlake:online=0-3,16");
        assert!(
            back.contains("\ncpu4 core 2 cluster 2 llc 0 node 0 "),
            "{back}"
        );
        // Nodes without CPUs keep their memory and their distances, but
        // add no NUMA level.
        let (back, _) = check("kunpeng920:online=0,95");
        assert!(
            back.contains("  node 1: no CPUs (in package 0), memory"),
            "{back}"
        );
        assert!(back.contains(" distance 22 level 4\n"), "{back}");
        assert!(!back.contains(" distance 12 "), "{back}");
        // What the arch code listed at boot stays with the restricted machine.
        let (back, online) = check("power10:online=0-7");
        assert_eq!(
            back.replace("domain1 PKG ", "domain1 MC "),
            online,
            "power10:online=0-7"
        );
        for p in PRESET_NAMES {
            let n = preset(p).unwrap().nr_cpus();
            let evens: Vec<String> = (0..n).step_by(2).map(|c| c.to_string()).collect();
            for list in [
                "0".to_string(),
                format!("0,{}", n - 1),
                format!("1-{}", n - 1),
                format!("{}-{}", n / 2, n - 1),
                evens.join(","),
            ] {
                check(&format!("{p}:online={list}"));
            }
        }
    }

    #[test]
    fn kunpeng920_facts() {
        let m = preset("kunpeng920").unwrap();
        assert_eq!(m.nr_cpus(), 96);
        assert_eq!(m.nodes.len(), 4);
        assert_eq!(m.cluster_mask(0).to_list_string(), "0-3");
        assert_eq!(m.llc_mask(0).to_list_string(), "0-23");
        assert_eq!(m.cpu_node_mask(30).to_list_string(), "24-47");
        assert_eq!(m.cpus[95].package, 1);
        assert_eq!(m.distance[1][3], 24);
        let n = &m.nodes[0];
        // The fitted closed-queue model reproduces the [WAYCA] STREAM points.
        let bw = |k: f64| n.mem_bw_peak_bytes_per_s * k / (k + n.mem_half_concurrency);
        assert!((bw(4.0) - 40.8e9).abs() < 0.05e9);
        assert!((bw(24.0) - 63.3e9).abs() < 0.05e9);
        assert!((bw(12.0) - 57.0e9).abs() < 0.1e9);
        // 24 cluster buses + the socket link (Hydra ports).
        assert_eq!(m.links.len(), 25);
        assert_eq!(m.links[0].cpus.to_list_string(), "0-3");
    }
}
