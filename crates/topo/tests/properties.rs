//! Property tests: random valid machines always give well-formed domains, and no
//! input, however malformed, makes the loader panic.

use proptest::prelude::*;
use schedlab_topo::{
    build_domains, load_machine_str, CpuMask, DomainConfig, SdFlags, CONFIG_NAMES,
};

const TAIL: &str = r#"
[memory]
mem_bw_peak_bytes_per_s = 50e9
mem_half_concurrency = 2
mem_latency_ns = 100
[c2c]
llc_ns = 30
remote_package_ns = 120
[wakeup]
ipi_ns = 1000
idle_exit_ns = 1000
wakeup_path_ns = 1000
"#;

#[derive(Debug, Clone)]
struct Shape {
    arch: &'static str,
    packages: u32,
    dies: u32,
    llcs: u32,
    clusters: u32,
    cores: u32,
    threads: u32,
    nodes_per_package: u32,
    split: bool,
    hybrid: bool,
    prios: bool,
    distances: Vec<u32>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        prop::sample::select(vec!["x86", "arm64", "powerpc"]),
        1u32..=3,
        1u32..=2,
        1u32..=2,
        1u32..=3,
        1u32..=3,
        prop::sample::select(vec![1u32, 2, 4]),
        prop::sample::select(vec![1u32, 2]),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(11u32..=40, 36),
    )
        .prop_map(
            |(
                arch,
                packages,
                dies,
                llcs,
                clusters,
                cores,
                threads,
                npp,
                split,
                hybrid,
                prios,
                distances,
            )| {
                Shape {
                    arch,
                    packages,
                    dies,
                    llcs,
                    clusters,
                    cores,
                    threads,
                    nodes_per_package: if (dies * llcs) % npp == 0 { npp } else { 1 },
                    split,
                    hybrid,
                    prios,
                    distances,
                }
            },
        )
}

/// A machine file for the shape: `[shape]` form, or, when hybrid, `[[core_group]]`
/// with two core types per package (big then little).
fn toml_of(s: &Shape) -> String {
    let mut t = format!("name = \"rand\"\narch = \"{}\"\n", s.arch);
    let prio = |p: u32| if s.prios { p } else { 0 };
    t += &format!(
        "[[core_type]]\nname = \"big\"\ncapacity = 1024\nfreq_max_mhz = 3000\nsmt_thread_speed = 0.6\ncore_bw_bytes_per_s = 10e9\nasym_prio = {}\n",
        prio(50)
    );
    t += &format!(
        "[[core_type]]\nname = \"little\"\ncapacity = 400\nfreq_max_mhz = 2000\ncore_bw_bytes_per_s = 5e9\nasym_prio = {}\n",
        prio(20)
    );
    let nodes = if s.hybrid {
        // Per package: one big group (SMT) and one little group (clusters), each
        // its own LLC; node = package.
        for p in 0..s.packages {
            t += &format!(
                "[[core_group]]\ncore_type = \"big\"\ncores = {}\nthreads_per_core = {}\npackage = {p}\ndie = {p}\nnode = {p}\n",
                s.cores, s.threads
            );
            t += &format!(
                "[[core_group]]\ncore_type = \"little\"\ncores = {}\ncores_per_cluster = {}\npackage = {p}\ndie = {p}\nnode = {p}\nllc = {}\n",
                s.cores * s.clusters,
                s.clusters,
                100 + p
            );
        }
        s.packages
    } else {
        t += &format!(
            "[shape]\npackages = {}\ndies_per_package = {}\nllcs_per_die = {}\nclusters_per_llc = {}\ncores_per_cluster = {}\nthreads_per_core = {}\nnodes_per_package = {}\nnumbering = \"{}\"\ncore_type = \"big\"\n",
            s.packages,
            s.dies,
            s.llcs,
            s.clusters,
            s.cores,
            s.threads,
            s.nodes_per_package,
            if s.split { "split" } else { "adjacent" }
        );
        s.packages * s.nodes_per_package
    };
    if nodes > 1 {
        let n = nodes as usize;
        let mut rows = Vec::new();
        for a in 0..n {
            let row: Vec<String> = (0..n)
                .map(|b| {
                    if a == b {
                        "10".to_string()
                    } else {
                        let (x, y) = (a.min(b), a.max(b));
                        s.distances[(x * 6 + y) % 36].to_string()
                    }
                })
                .collect();
            rows.push(format!("[{}]", row.join(", ")));
        }
        t += &format!("[numa]\ndistance = [{}]\n", rows.join(", "));
    }
    t += TAIL;
    t
}

/// Text of TOML's building blocks over several lines: keys with numbers,
/// strings (with escaped line breaks), multi-line strings and arrays, inline
/// tables, table headers, comments and noise.
const TOMLISH: &str = r#"(([a-z_]{1,8} ?= ?(-?[0-9]{1,4}(\.[0-9])?|"[a-z\\n]{0,6}"|'''[a-z\n]{0,6}'''|\[[0-9, \n]{0,8}\]|\{[a-z =0-9,]{0,12}\}|true)|\[\[?[a-z_.]{0,10}\]?\]?|#[ -~]{0,10}|[ -~]{0,10})(\r?\n|\n\n)){0,30}"#;

/// One line of [`TOMLISH`].
const TOMLISH_LINE: &str = r#"[a-z_]{1,12} ?= ?(-?[0-9]{1,4}|"[a-z\\n]{0,6}"|\[[0-9, \n]{0,8}\]|\{[a-z =0-9,]{0,12}\})|\[\[?[a-z_]{0,10}\]?\]?|[ -~]{0,12}"#;

fn is_one_line(msg: &str) -> bool {
    !msg.contains('\n') && !msg.contains('\r')
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_machines_build_sound_domains(s in shape(), ci in 0usize..CONFIG_NAMES.len()) {
        let text = toml_of(&s);
        let m = load_machine_str(&text, "rand.toml").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let cfg = DomainConfig::named(CONFIG_NAMES[ci]).unwrap();
        let d = build_domains(&m, &cfg).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let all = m.all_cpus();
        prop_assert_eq!(d.cpus.len(), m.nr_cpus());
        for c in &d.cpus {
            let me = CpuMask::from_cpus([c.cpu]);
            if m.nr_cpus() > 1 {
                prop_assert!(!c.domains.is_empty(), "cpu{} has no domains\n{}", c.cpu, text);
                prop_assert_eq!(c.domains.last().unwrap().span, all);
            }
            let mut prev = me;
            for dom in &c.domains {
                // Spans nest and hold the CPU.
                prop_assert!(prev.is_subset(&dom.span), "cpu{} {}: spans do not nest\n{}", c.cpu, dom.name, text);
                prop_assert!(dom.span.weight() > 1);
                prev = dom.span;
                // Groups: the local group first; they cover the span; they partition
                // it unless the domain is a NUMA (overlap) one.
                prop_assert!(!dom.groups.is_empty());
                prop_assert!(dom.groups[0].span.test(c.cpu));
                let mut union = CpuMask::new();
                let mut total = 0;
                for g in &dom.groups {
                    prop_assert!(g.span.is_subset(&dom.span));
                    union = union.or(&g.span);
                    total += g.span.weight();
                }
                prop_assert_eq!(union, dom.span, "cpu{} {} groups do not cover\n{}", c.cpu, dom.name, text);
                if !dom.flags.contains(SdFlags::NUMA) {
                    prop_assert_eq!(total, dom.span.weight(), "cpu{} {} groups overlap\n{}", c.cpu, dom.name, text);
                }
                prop_assert!(dom.min_interval_ms >= 1 && dom.max_interval_ms == 2 * dom.min_interval_ms);
            }
            if let Some(l) = c.sd_llc {
                prop_assert!(c.domains[l].flags.contains(SdFlags::SHARE_LLC));
                prop_assert_eq!(c.llc_size, c.domains[l].span.weight());
            }
        }
        // Equal LLC ids <=> same sd_llc span.
        for a in &d.cpus {
            for b in &d.cpus {
                let sa = a.llc().map(|x| x.span).unwrap_or(CpuMask::from_cpus([a.cpu]));
                let sb = b.llc().map(|x| x.span).unwrap_or(CpuMask::from_cpus([b.cpu]));
                prop_assert_eq!(a.llc_id == b.llc_id, sa == sb);
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,400}") {
        if let Err(e) = load_machine_str(&text, "fuzz.toml") {
            prop_assert!(is_one_line(&e.to_string()), "{}", e);
        }
    }

    /// TOML-like text over several lines: every error is one line.
    #[test]
    fn errors_on_toml_like_text_are_one_line(text in TOMLISH) {
        if let Err(e) = load_machine_str(&text, "fuzz.toml") {
            prop_assert!(is_one_line(&e.to_string()), "{}", e);
        }
    }

    /// A valid file with a span or a line deleted, or a random line inserted:
    /// every error is one line.
    #[test]
    fn errors_on_edited_machine_files_are_one_line(
        s in shape(),
        at in 0usize..2000,
        len in 0usize..80,
        line in TOMLISH_LINE,
    ) {
        let text = toml_of(&s);
        let boundary = |i: usize| (0..=i.min(text.len())).rev().find(|&j| text.is_char_boundary(j)).unwrap_or(0);
        let (at, end) = (boundary(at), boundary(at + len));
        // The whole line around `at` (a required key, or a table's header).
        let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
        let line_end = text[at..].find('\n').map_or(text.len(), |p| at + p + 1);
        for edited in [
            format!("{}{}", &text[..at], &text[end..]),
            format!("{}{}", &text[..line_start], &text[line_end..]),
            format!("{}\n{}\n{}", &text[..at], line, &text[at..]),
        ] {
            if let Err(e) = load_machine_str(&edited, "ed.toml") {
                let msg = e.to_string();
                prop_assert!(is_one_line(&msg), "{}", msg);
                prop_assert!(msg.starts_with("ed.toml: field `"), "{}", msg);
                // A syntax error may have no key to name; a missing key always has.
                prop_assert!(!msg.contains("field `?`: required"), "{}", msg);
            }
        }
    }

    #[test]
    fn mutated_machine_files_never_panic(s in shape(), cut in 0usize..2000, ins in "[-=0-9a-z\\[\\]\"\\n., ]{0,12}") {
        let text = toml_of(&s);
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let mutated = format!("{}{}{}", &text[..at], ins, &text[at..]);
        if let Ok(m) = load_machine_str(&mutated, "mut.toml") {
            let _ = build_domains(&m, &DomainConfig::default());
        }
        // Deletions too.
        let end = (at + ins.len()).min(text.len());
        let mut e = end;
        while !text.is_char_boundary(e) {
            e -= 1;
        }
        let deleted = format!("{}{}", &text[..at], &text[e..]);
        if let Ok(m) = load_machine_str(&deleted, "del.toml") {
            let _ = build_domains(&m, &DomainConfig::default());
        }
    }

    #[test]
    fn number_fields_out_of_range_are_errors(v in prop::sample::select(vec![-1i64, 0, 1025, 100_000_000, i64::MAX])) {
        let s = Shape { arch: "arm64", packages: 1, dies: 1, llcs: 1, clusters: 1, cores: 2, threads: 1,
            nodes_per_package: 1, split: false, hybrid: false, prios: false, distances: vec![20; 36] };
        let text = toml_of(&s).replacen("capacity = 1024", &format!("capacity = {v}"), 1);
        prop_assert!(load_machine_str(&text, "x").is_err());
    }
}
