//! Machine files: the TOML format of `docs/machine-format.md`, its loader and its
//! validation.
//!
//! A file describes the CPUs in one of three ways, exactly one of which must be
//! present:
//! - `[shape]`: a regular machine by counts (packages, dies, LLCs, clusters, cores,
//!   threads), e.g. Kunpeng 920;
//! - `[[core_group]]`: a list of homogeneous groups of cores, each with its own core
//!   type and placement, e.g. Alder Lake's P-cores and E-core clusters;
//! - `[[cpu]]`: one entry per CPU with explicit ids (what `machine_to_toml` and the
//!   sysfs import write).
//!
//! Everything else (core types, caches, memory, links, latencies) is shared by the
//! three forms. Loading never panics: every problem becomes a one-line
//! [`TopoError`] naming the origin, the field and the reason.

use crate::cpumask::{CpuId, CpuMask, MAX_CPUS};
use crate::error::{one_line, TopoError};
use crate::machine::{
    Arch, C2cLatency, CacheInfo, CoreType, CpuInfo, IdleState, Machine, NodeInfo, SharedLink,
    WakeupCosts,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Largest accepted bandwidth, bytes/s (10 TB/s): anything above is a typo.
const MAX_BW_BYTES_PER_S: f64 = 1e13;
/// Largest accepted latency or cost, ns (1 s).
const MAX_NS: u32 = 1_000_000_000;
/// Largest accepted frequency, MHz.
pub(crate) const MAX_FREQ_MHZ: u32 = 100_000;
/// Largest accepted cache size (1 TiB) and line size.
pub(crate) const MAX_CACHE_BYTES: u64 = 1 << 40;
pub(crate) const MAX_LINE_BYTES: u32 = 4096;
/// Largest cache level.
pub(crate) const MAX_CACHE_LEVEL: u32 = 8;
/// Largest SLIT entry (255 means "unreachable" in ACPI and is refused).
pub(crate) const MAX_DISTANCE: u32 = 254;

// ---------------------------------------------------------------------------
// The file format (serde side).

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMachine {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    arch: Option<String>,
    #[serde(default)]
    core_type: Vec<FileCoreType>,
    #[serde(default)]
    shape: Option<FileShape>,
    #[serde(default)]
    core_group: Vec<FileCoreGroup>,
    #[serde(default)]
    cpu: Vec<FileCpu>,
    #[serde(default)]
    cache: Vec<FileCache>,
    #[serde(default)]
    memory: Option<FileMemory>,
    #[serde(default)]
    node: Vec<FileNode>,
    #[serde(default)]
    numa: Option<FileNuma>,
    #[serde(default)]
    link: Vec<FileLink>,
    c2c: FileC2c,
    wakeup: FileWakeup,
    #[serde(default)]
    idle_state: Vec<FileIdleState>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCoreType {
    name: String,
    capacity: i64,
    freq_max_mhz: i64,
    #[serde(default)]
    smt_thread_speed: Option<f64>,
    core_bw_bytes_per_s: f64,
    #[serde(default)]
    asym_prio: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    #[serde(default = "one")]
    packages: i64,
    #[serde(default = "one")]
    dies_per_package: i64,
    #[serde(default = "one")]
    llcs_per_die: i64,
    #[serde(default = "one")]
    clusters_per_llc: i64,
    #[serde(default = "one")]
    cores_per_cluster: i64,
    #[serde(default = "one")]
    threads_per_core: i64,
    #[serde(default = "one")]
    nodes_per_package: i64,
    #[serde(default = "one")]
    packages_per_node: i64,
    core_type: String,
    #[serde(default)]
    numbering: Option<String>,
}

fn one() -> i64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCoreGroup {
    core_type: String,
    cores: i64,
    #[serde(default = "one")]
    threads_per_core: i64,
    #[serde(default = "one")]
    cores_per_cluster: i64,
    #[serde(default)]
    package: i64,
    #[serde(default)]
    die: i64,
    #[serde(default)]
    node: i64,
    #[serde(default)]
    llc: Option<i64>,
    #[serde(default)]
    llc_per: Option<String>,
    #[serde(default)]
    cpus: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCpu {
    id: i64,
    core: i64,
    #[serde(default)]
    cluster: Option<i64>,
    llc: i64,
    #[serde(default)]
    die: i64,
    #[serde(default)]
    package: i64,
    #[serde(default)]
    node: i64,
    core_type: String,
    #[serde(default)]
    capacity: Option<i64>,
    #[serde(default)]
    freq_max_mhz: Option<i64>,
    #[serde(default)]
    asym_prio: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a size: a whole number of bytes or a text such as \"512K\" or \"1.25MiB\""
)]
enum SizeSpec {
    Bytes(i64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCache {
    level: i64,
    #[serde(default)]
    kind: Option<String>,
    size: SizeSpec,
    #[serde(default)]
    line_bytes: Option<i64>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    cpus: Option<String>,
    #[serde(default)]
    core_type: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMemory {
    mem_bw_peak_bytes_per_s: f64,
    mem_half_concurrency: f64,
    mem_latency_ns: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileNode {
    id: i64,
    #[serde(default)]
    mem_bw_peak_bytes_per_s: Option<f64>,
    #[serde(default)]
    mem_half_concurrency: Option<f64>,
    #[serde(default)]
    mem_latency_ns: Option<i64>,
    /// For a node without CPUs: the package its memory hangs off.
    #[serde(default)]
    package: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileNuma {
    distance: Vec<Vec<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLink {
    name: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    cpus: Option<String>,
    #[serde(default)]
    core_type: Option<String>,
    bw_bytes_per_s: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileC2c {
    #[serde(default)]
    smt_ns: Option<i64>,
    #[serde(default)]
    cluster_ns: Option<i64>,
    llc_ns: i64,
    #[serde(default)]
    die_ns: Option<i64>,
    #[serde(default)]
    node_ns: Option<i64>,
    #[serde(default)]
    package_ns: Option<i64>,
    remote_package_ns: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileWakeup {
    ipi_ns: i64,
    wakeup_path_ns: i64,
    #[serde(default)]
    balance_pass_ns: Option<i64>,
    #[serde(default)]
    balance_pass_per_cpu_ns: Option<i64>,
    #[serde(default)]
    balance_refused_ns: Option<i64>,
    // The short form of a machine without `[[idle_state]]` tables (kept for
    // files written before them): one exit latency, and how the states poll.
    #[serde(default)]
    idle_exit_ns: Option<i64>,
    #[serde(default)]
    idle_polls: Option<bool>,
    #[serde(default)]
    idle_poll_below_ns: Option<i64>,
    #[serde(default)]
    idle_poll_gives_up: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIdleState {
    name: String,
    exit_ns: i64,
    residency_ns: i64,
    #[serde(default)]
    polls: bool,
    #[serde(default)]
    poll_loop: bool,
    #[serde(default)]
    poll_limit_ns: Option<i64>,
    #[serde(default)]
    disabled: bool,
}

// ---------------------------------------------------------------------------
// Public entry points.

/// Parses and validates a machine file's text. `origin` names the input in error
/// messages (a path, `preset:NAME`, ...).
pub fn load_machine_str(text: &str, origin: &str) -> Result<Machine, TopoError> {
    let file: FileMachine = toml::from_str(text).map_err(|e| toml_error(origin, text, &e))?;
    // Names and values quoted from the file may hold escaped line breaks.
    build_machine(file, origin).map_err(TopoError::into_one_line)
}

/// Reads, parses and validates a machine file.
pub fn load_machine_file(path: &Path) -> Result<Machine, TopoError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TopoError::Io {
        origin: origin.clone(),
        reason: e.to_string(),
    })?;
    load_machine_str(&text, &origin)
}

/// One-line rendering of a TOML error: the key at the error's span (when the span
/// covers a key or value; for a missing key, the table that lacks it and the key),
/// the line number and toml's own message.
fn toml_error(origin: &str, text: &str, e: &toml::de::Error) -> TopoError {
    // No TOML document starts with `{`; a JSON one (a run report, an
    // rt-app file) does.
    if text.trim_start().starts_with('{') {
        return TopoError::Parse {
            origin: origin.to_string(),
            field: "(file)".to_string(),
            reason: "not a TOML machine file: it starts with `{` like JSON (machine files \
                     are TOML, docs/machine-format.md; `schedlab topo PRESET --emit-machine` \
                     writes one)"
                .to_string(),
        };
    }
    let msg = plain_types(&one_line(e.message()));
    let (field, line) = match e.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let end = span.end.min(text.len()).max(start);
            let line = text
                .get(..start)
                .map(|s| s.matches('\n').count() + 1)
                .unwrap_or(1);
            // The span's first line: a table's span runs on to its last key.
            let first = text
                .get(start..end)
                .and_then(|s| s.lines().next())
                .unwrap_or("")
                .trim();
            if let Some(key) = msg
                .strip_prefix("missing field `")
                .and_then(|k| k.strip_suffix('`'))
            {
                return missing_key_error(origin, text, start, line, first, key);
            }
            // The key whose value or name the span points into: the text before `=` on
            // the span's line, or the span itself when it is a bare key or a header.
            let line_start = text
                .get(..start)
                .and_then(|s| s.rfind('\n'))
                .map_or(0, |p| p + 1);
            let line_end = text
                .get(start..)
                .and_then(|s| s.find('\n'))
                .map_or(text.len(), |p| start + p);
            let line_text = text.get(line_start..line_end).unwrap_or("");
            let key = match line_text.split_once('=') {
                // `key = value` inside a table: the table's name first.
                Some((k, _)) if !k.trim().is_empty() => match enclosing_table(text, line_start) {
                    Some(t) => format!("{t}.{}", k.trim()),
                    None => k.trim().to_string(),
                },
                // A line that is not TOML names no field.
                _ if text.parse::<toml::Table>().is_err() => "(syntax)".to_string(),
                _ => match table_header(text, start, first) {
                    Some((name, _)) => name,
                    None => first.trim_matches(|c| c == '[' || c == ']').to_string(),
                },
            };
            let key = if key.is_empty() || key.len() > 60 {
                "?".to_string()
            } else {
                one_line(&key)
            };
            (key, line)
        }
        None => ("?".to_string(), 0),
    };
    TopoError::Parse {
        origin: origin.to_string(),
        field,
        reason: if line > 0 {
            format!("{msg} (line {line})")
        } else {
            msg
        },
    }
}

/// serde names the integer a field wants by its Rust type (`expected u64`);
/// a machine file's author reads "a whole number" (TOML writes `1e3` and
/// `1000.0` as floats, never as integers).
fn plain_types(msg: &str) -> String {
    let mut out = msg.to_string();
    for ty in ["i64", "u64", "i32", "u32", "u16", "u8", "usize"] {
        out = out.replace(
            &format!("expected {ty}"),
            "expected a whole number (no decimal point or exponent)",
        );
    }
    out
}

/// A required key that serde found missing, named with the table that lacks it
/// (`link[0].name`, `memory.mem_latency_ns`, `name` at the top level). `first`
/// is the first line of the error's span, which toml sets to the table: its
/// header, an inline table, a dotted key, or the whole top level (from 0).
fn missing_key_error(
    origin: &str,
    text: &str,
    start: usize,
    line: usize,
    first: &str,
    key: &str,
) -> TopoError {
    let (field, reason) = if let Some((name, header)) = table_header(text, start, first) {
        (
            format!("{name}.{key}"),
            format!("required but missing (table {header} at line {line})"),
        )
    } else if first.starts_with('{') {
        // `link = [{...}]`: the key before `=` on the line.
        let line_start = text
            .get(..start)
            .and_then(|s| s.rfind('\n'))
            .map_or(0, |p| p + 1);
        let table = text
            .get(line_start..start)
            .and_then(|s| s.split_once('='))
            .map(|(k, _)| k.trim())
            .filter(|k| !k.is_empty())
            .unwrap_or("?");
        (
            format!("{table}.{key}"),
            format!("required but missing (inline table at line {line})"),
        )
    } else if start > 0 && !first.is_empty() && first.chars().all(is_key_char) {
        // A table made by a dotted key (`wakeup.ipi_ns = 1`).
        (
            format!("{first}.{key}"),
            format!("required but missing (table `{first}` at line {line})"),
        )
    } else if is_blank(text) {
        (
            key.to_string(),
            "the file is empty: a machine file needs `name`, [[core_type]], one of [shape], \
             [[core_group]] or [[cpu]], [memory], [c2c] and [wakeup] (docs/machine-format.md)"
                .to_string(),
        )
    } else if matches!(key, "c2c" | "wakeup") {
        (
            key.to_string(),
            format!("required table [{key}] is missing"),
        )
    } else {
        (
            key.to_string(),
            "required but missing (top-level keys go before the first [table] header)".to_string(),
        )
    };
    TopoError::Parse {
        origin: origin.to_string(),
        field: one_line(&field),
        reason,
    }
}

/// Characters of a bare or dotted TOML key.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Nothing but blank lines and comments.
fn is_blank(text: &str) -> bool {
    text.lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
}

/// The table header `line` is, if it is one: `[[link]]` gives
/// `("link[N]", "[[link]]")`, N counting the `[[link]]` headers before byte
/// `start`; `[memory]` gives `("memory", "[memory]")`.
fn table_header(text: &str, start: usize, line: &str) -> Option<(String, String)> {
    let header_name = |l: &str, open: &str, close: &str| -> Option<String> {
        let (name, _) = l.trim().strip_prefix(open)?.split_once(close)?;
        let name = name.trim();
        (!name.is_empty() && !name.contains('[')).then(|| name.to_string())
    };
    if let Some(name) = header_name(line, "[[", "]]") {
        let index = text
            .get(..start)
            .unwrap_or("")
            .lines()
            .filter(|l| header_name(l, "[[", "]]").as_deref() == Some(name.as_str()))
            .count();
        return Some((format!("{name}[{index}]"), format!("[[{name}]]")));
    }
    header_name(line, "[", "]").map(|name| (name.clone(), format!("[{name}]")))
}

/// The name of the table whose body holds the line starting at byte
/// `line_start` (`cache[0]`, `memory`), if a header comes before it.
fn enclosing_table(text: &str, line_start: usize) -> Option<String> {
    // The last header line before it, and where that line starts.
    let mut header = None;
    let mut at = 0;
    for line in text.get(..line_start)?.split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            header = Some((at, line.trim_end()));
        }
        at += line.len();
    }
    let (start, line) = header?;
    table_header(text, start, line).map(|(name, _)| name)
}

// ---------------------------------------------------------------------------
// Validation helpers.

fn int_in(origin: &str, field: &str, v: i64, lo: i64, hi: i64) -> Result<i64, TopoError> {
    if v < lo || v > hi {
        Err(TopoError::invalid(
            origin,
            field,
            format!("{v} is out of range {lo}..={hi}"),
        ))
    } else {
        Ok(v)
    }
}

fn u32_in(origin: &str, field: &str, v: i64, lo: u32, hi: u32) -> Result<u32, TopoError> {
    int_in(origin, field, v, i64::from(lo), i64::from(hi)).map(|v| v as u32)
}

/// Most idle states a driver registers (`CPUIDLE_STATE_MAX`).
const MAX_IDLE_STATES: usize = 10;

/// The machine's idle states: its `[[idle_state]]` tables, or, without
/// them, the states the short form in `[wakeup]` describes (one exit
/// latency for all; `idle_polls`: the states keep the polling flag;
/// `idle_poll_below_ns`: a deeper state that does not poll, with that
/// target residency; `idle_poll_gives_up`: the polling state is a loop
/// that gives up after it).
fn idle_states(
    origin: &str,
    w: &FileWakeup,
    tables: &[FileIdleState],
) -> Result<Vec<IdleState>, TopoError> {
    let short_form = [
        ("wakeup.idle_exit_ns", w.idle_exit_ns.is_some()),
        ("wakeup.idle_polls", w.idle_polls.is_some()),
        ("wakeup.idle_poll_below_ns", w.idle_poll_below_ns.is_some()),
        ("wakeup.idle_poll_gives_up", w.idle_poll_gives_up.is_some()),
    ];
    if !tables.is_empty() {
        if let Some((field, _)) = short_form.iter().find(|(_, given)| *given) {
            return Err(TopoError::invalid(
                origin,
                *field,
                "the machine lists its [[idle_state]] tables: give their exit_ns and polls there instead",
            ));
        }
        return idle_state_tables(origin, tables);
    }
    let Some(exit) = w.idle_exit_ns else {
        return Err(TopoError::invalid(
            origin,
            "idle_state",
            "no idle states: give [[idle_state]] tables (or wakeup.idle_exit_ns)",
        ));
    };
    let exit_ns = u32_in(origin, "wakeup.idle_exit_ns", exit, 0, MAX_NS)?;
    let polls = w.idle_polls.unwrap_or(false);
    let below_ns = u32_in(
        origin,
        "wakeup.idle_poll_below_ns",
        w.idle_poll_below_ns.unwrap_or(0),
        0,
        MAX_NS,
    )?;
    let gives_up = w.idle_poll_gives_up.unwrap_or(false);
    if !polls && (below_ns > 0 || gives_up) {
        return Err(TopoError::invalid(
            origin,
            "wakeup.idle_poll_below_ns",
            "describes a polling idle state, but idle_polls is false",
        ));
    }
    if gives_up && below_ns == 0 {
        return Err(TopoError::invalid(
            origin,
            "wakeup.idle_poll_gives_up",
            "the polling state gives up after idle_poll_below_ns, which is 0",
        ));
    }
    let state = |name: &str, residency_ns: u32, polls: bool, poll_loop: bool| IdleState {
        poll_loop,
        poll_limit_ns: if poll_loop { below_ns } else { 0 },
        ..IdleState::new(name, exit_ns, residency_ns, polls)
    };
    Ok(if below_ns == 0 {
        vec![state(if polls { "C1" } else { "WFI" }, 0, polls, false)]
    } else {
        vec![
            state(if gives_up { "snooze" } else { "C1" }, 0, true, gives_up),
            state("C2", below_ns, false, false),
        ]
    })
}

/// Validates `[[idle_state]]` tables (cpuidle's own rules and what the
/// governor assumes: at most ten states, shallowest first, a polling loop
/// only as the first).
fn idle_state_tables(origin: &str, tables: &[FileIdleState]) -> Result<Vec<IdleState>, TopoError> {
    if tables.len() > MAX_IDLE_STATES {
        return Err(TopoError::invalid(
            origin,
            "idle_state",
            format!(
                "{} states, at most {MAX_IDLE_STATES} (CPUIDLE_STATE_MAX)",
                tables.len()
            ),
        ));
    }
    let mut out: Vec<IdleState> = Vec::with_capacity(tables.len());
    for (i, t) in tables.iter().enumerate() {
        let field = |k: &str| format!("idle_state[{i}].{k}");
        if t.name.trim().is_empty() {
            return Err(TopoError::invalid(origin, field("name"), "empty name"));
        }
        let exit_ns = u32_in(origin, &field("exit_ns"), t.exit_ns, 0, MAX_NS)?;
        let residency_ns = u32_in(origin, &field("residency_ns"), t.residency_ns, 0, MAX_NS)?;
        if t.poll_loop && !t.polls {
            return Err(TopoError::invalid(
                origin,
                field("poll_loop"),
                "a polling loop keeps the polling flag: set polls = true",
            ));
        }
        if t.poll_loop && i > 0 {
            return Err(TopoError::invalid(
                origin,
                field("poll_loop"),
                "only the first idle state may be a polling loop",
            ));
        }
        let poll_limit_ns = match t.poll_limit_ns {
            Some(_) if !t.poll_loop => {
                return Err(TopoError::invalid(
                    origin,
                    field("poll_limit_ns"),
                    "only a polling loop (poll_loop = true) has a time limit",
                ))
            }
            Some(v) => u32_in(origin, &field("poll_limit_ns"), v, 1, MAX_NS)?,
            None => 0,
        };
        if let Some(prev) = out.last() {
            if residency_ns < prev.residency_ns {
                return Err(TopoError::invalid(
                    origin,
                    field("residency_ns"),
                    format!(
                        "{residency_ns} is below the previous state's {}: list states shallowest first",
                        prev.residency_ns
                    ),
                ));
            }
        }
        if out.iter().any(|s| s.name == t.name) {
            return Err(TopoError::invalid(
                origin,
                field("name"),
                format!("'{}' names two states", t.name),
            ));
        }
        out.push(IdleState {
            name: t.name.clone(),
            exit_ns,
            residency_ns,
            polls: t.polls,
            poll_loop: t.poll_loop,
            poll_limit_ns,
            disabled: t.disabled,
        });
    }
    Ok(out)
}

fn float_in(origin: &str, field: &str, v: f64, lo: f64, hi: f64) -> Result<f64, TopoError> {
    if !v.is_finite() || v < lo || v > hi {
        Err(TopoError::invalid(
            origin,
            field,
            format!("{v} is out of range {lo:e}..={hi:e}"),
        ))
    } else {
        Ok(v)
    }
}

fn positive_bw(origin: &str, field: &str, v: f64) -> Result<f64, TopoError> {
    if !v.is_finite() || v <= 0.0 || v > MAX_BW_BYTES_PER_S {
        Err(TopoError::invalid(
            origin,
            field,
            format!("{v} must be a bandwidth in bytes/s in (0, {MAX_BW_BYTES_PER_S:e}]"),
        ))
    } else {
        Ok(v)
    }
}

fn parse_cpulist(origin: &str, field: &str, s: &str) -> Result<Vec<CpuId>, TopoError> {
    // Ordered list (order matters for core groups), kernel list syntax.
    let mut out = Vec::new();
    let t = s.trim();
    if t.is_empty() {
        return Ok(out);
    }
    for part in t.split(',') {
        let part = part.trim();
        let bad = || {
            TopoError::invalid(
                origin,
                field,
                format!("`{part}` is not a CPU or range below {MAX_CPUS} (e.g. `0-3,8`)"),
            )
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<usize>().map_err(|_| bad())?,
                b.trim().parse::<usize>().map_err(|_| bad())?,
            ),
            None => {
                let v = part.parse::<usize>().map_err(|_| bad())?;
                (v, v)
            }
        };
        if a > b || b >= MAX_CPUS {
            return Err(bad());
        }
        if out.len() + (b - a + 1) > MAX_CPUS {
            return Err(TopoError::invalid(
                origin,
                field,
                format!("more than {MAX_CPUS} CPUs"),
            ));
        }
        for c in a..=b {
            out.push(c as CpuId);
        }
    }
    Ok(out)
}

/// The bytes of a size text (`512K`, `1.25M`), when it is one: machine
/// edits scale a cache size written so.
pub(crate) fn size_text_bytes(t: &str) -> Option<u64> {
    parse_size("", "", &SizeSpec::Text(t.to_string())).ok()
}

/// `64K`, `1.25M`, `24MiB`, `512 KiB`, `2G` (binary units) or a plain byte count.
fn parse_size(origin: &str, field: &str, s: &SizeSpec) -> Result<u64, TopoError> {
    let bytes = match s {
        SizeSpec::Bytes(b) => {
            if *b <= 0 {
                return Err(TopoError::invalid(origin, field, "must be positive"));
            }
            *b as u64
        }
        SizeSpec::Text(t) => {
            let t = t.trim();
            let split = t
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(t.len());
            let (num, unit) = t.split_at(split);
            let v: f64 = num.parse().map_err(|_| {
                TopoError::invalid(origin, field, format!("`{t}` is not a size like `64K`"))
            })?;
            let mult: f64 = match unit.trim().to_ascii_uppercase().as_str() {
                "" | "B" => 1.0,
                "K" | "KB" | "KIB" => 1024.0,
                "M" | "MB" | "MIB" => 1024.0 * 1024.0,
                "G" | "GB" | "GIB" => 1024.0 * 1024.0 * 1024.0,
                _ => {
                    return Err(TopoError::invalid(
                        origin,
                        field,
                        format!("unknown unit in `{t}` (use K, M or G)"),
                    ))
                }
            };
            let b = v * mult;
            if !b.is_finite() || b < 1.0 {
                return Err(TopoError::invalid(origin, field, "must be positive"));
            }
            if b > MAX_CACHE_BYTES as f64 {
                return Err(TopoError::invalid(origin, field, "larger than 1 TiB"));
            }
            b.round() as u64
        }
    };
    if bytes > MAX_CACHE_BYTES {
        return Err(TopoError::invalid(origin, field, "larger than 1 TiB"));
    }
    Ok(bytes)
}

// ---------------------------------------------------------------------------
// Building the CPU list.

/// One CPU before densification: user-visible keys for every level.
#[derive(Clone, Debug)]
struct RawCpu {
    core: u64,
    cluster: u64,
    llc: u64,
    die: u64,
    package: u64,
    node: u64,
    core_type: u16,
    capacity: Option<u16>,
    freq: Option<u32>,
    prio: Option<u32>,
}

fn core_type_index(
    origin: &str,
    field: &str,
    types: &[CoreType],
    name: &str,
) -> Result<u16, TopoError> {
    types
        .iter()
        .position(|t| t.name == name)
        .map(|i| i as u16)
        .ok_or_else(|| {
            let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
            TopoError::invalid(
                origin,
                field,
                format!(
                    "no core type named `{name}` (defined: {})",
                    names.join(", ")
                ),
            )
        })
}

/// Places `cpus` (in order) into the table, checking overlaps.
fn place(
    origin: &str,
    field: &str,
    table: &mut BTreeMap<u16, RawCpu>,
    id: CpuId,
    cpu: RawCpu,
) -> Result<(), TopoError> {
    if table.insert(id, cpu).is_some() {
        return Err(TopoError::invalid(
            origin,
            field,
            format!("CPU {id} is described twice"),
        ));
    }
    Ok(())
}

fn cpus_from_shape(
    origin: &str,
    s: &FileShape,
    types: &[CoreType],
    table: &mut BTreeMap<u16, RawCpu>,
) -> Result<(), TopoError> {
    let m = MAX_CPUS as i64;
    let packages = int_in(origin, "shape.packages", s.packages, 1, m)?;
    let dies = int_in(origin, "shape.dies_per_package", s.dies_per_package, 1, m)?;
    let llcs = int_in(origin, "shape.llcs_per_die", s.llcs_per_die, 1, m)?;
    let clusters = int_in(origin, "shape.clusters_per_llc", s.clusters_per_llc, 1, m)?;
    let cores = int_in(origin, "shape.cores_per_cluster", s.cores_per_cluster, 1, m)?;
    let threads = int_in(origin, "shape.threads_per_core", s.threads_per_core, 1, 64)?;
    let npp = int_in(origin, "shape.nodes_per_package", s.nodes_per_package, 1, m)?;
    let ppn = int_in(origin, "shape.packages_per_node", s.packages_per_node, 1, m)?;
    let total = [packages, dies, llcs, clusters, cores, threads]
        .iter()
        .try_fold(1i64, |acc, &v| acc.checked_mul(v).filter(|&p| p <= m));
    let Some(total) = total else {
        return Err(TopoError::invalid(
            origin,
            "shape",
            format!("more than {MAX_CPUS} CPUs"),
        ));
    };
    if npp > 1 && ppn > 1 {
        return Err(TopoError::invalid(
            origin,
            "shape.packages_per_node",
            "cannot be combined with nodes_per_package > 1",
        ));
    }
    let llcs_per_pkg = dies * llcs;
    if llcs_per_pkg % npp != 0 {
        return Err(TopoError::invalid(
            origin,
            "shape.nodes_per_package",
            format!("{npp} does not divide the package's {llcs_per_pkg} LLCs"),
        ));
    }
    if packages % ppn != 0 {
        return Err(TopoError::invalid(
            origin,
            "shape.packages_per_node",
            format!("{ppn} does not divide the {packages} packages"),
        ));
    }
    let ct = core_type_index(origin, "shape.core_type", types, &s.core_type)?;
    let split = match s.numbering.as_deref().unwrap_or("adjacent") {
        "adjacent" => false,
        "split" => true,
        other => {
            return Err(TopoError::invalid(
                origin,
                "shape.numbering",
                format!("`{other}` is not `adjacent` or `split`"),
            ))
        }
    };
    let nr_cores = total / threads;
    let mut core = 0i64;
    for p in 0..packages {
        for d in 0..dies {
            for l in 0..llcs {
                let llc_in_pkg = d * llcs + l;
                let node = if ppn > 1 {
                    p / ppn
                } else {
                    p * npp + llc_in_pkg / (llcs_per_pkg / npp)
                };
                let llc = (p * dies + d) * llcs + l;
                for c in 0..clusters {
                    let cluster = llc * clusters + c;
                    for _ in 0..cores {
                        for t in 0..threads {
                            let id = if split {
                                t * nr_cores + core
                            } else {
                                core * threads + t
                            };
                            let raw = RawCpu {
                                core: core as u64,
                                cluster: cluster as u64,
                                llc: llc as u64,
                                die: (p * dies + d) as u64,
                                package: p as u64,
                                node: node as u64,
                                core_type: ct,
                                capacity: None,
                                freq: None,
                                prio: None,
                            };
                            place(origin, "shape", table, id as CpuId, raw)?;
                        }
                        core += 1;
                    }
                }
            }
        }
    }
    Ok(())
}

fn cpus_from_groups(
    origin: &str,
    groups: &[FileCoreGroup],
    types: &[CoreType],
    table: &mut BTreeMap<u16, RawCpu>,
) -> Result<(), TopoError> {
    let m = MAX_CPUS as i64;
    // Keys are made unique across groups by an offset per group.
    let mut core_base: u64 = 0;
    let mut cluster_base: u64 = 0;
    let mut next_free: i64 = 0;
    // Per-core / per-cluster LLCs get keys above any explicit LLC id.
    let mut llc_auto: u64 = 1 << 32;
    for (gi, g) in groups.iter().enumerate() {
        let f = |name: &str| format!("core_group[{gi}].{name}");
        let cores = int_in(origin, &f("cores"), g.cores, 1, m)?;
        let threads = int_in(origin, &f("threads_per_core"), g.threads_per_core, 1, 64)?;
        let cpc = int_in(origin, &f("cores_per_cluster"), g.cores_per_cluster, 1, m)?;
        if cores % cpc != 0 {
            return Err(TopoError::invalid(
                origin,
                f("cores_per_cluster"),
                format!("{cpc} does not divide the group's {cores} cores"),
            ));
        }
        let n = cores
            .checked_mul(threads)
            .filter(|&n| n <= m)
            .ok_or_else(|| {
                TopoError::invalid(origin, f("cores"), format!("more than {MAX_CPUS} CPUs"))
            })?;
        let package = int_in(origin, &f("package"), g.package, 0, m)? as u64;
        let die = int_in(origin, &f("die"), g.die, 0, m)? as u64;
        let node = int_in(origin, &f("node"), g.node, 0, m)? as u64;
        let llc_id = match g.llc {
            Some(v) => int_in(origin, &f("llc"), v, 0, m)? as u64,
            None => (1u64 << 40) + gi as u64,
        };
        let llc_per = match g.llc_per.as_deref() {
            None | Some("group") => 0u8,
            Some("cluster") => 1,
            Some("core") => 2,
            Some(other) => {
                return Err(TopoError::invalid(
                    origin,
                    f("llc_per"),
                    format!("`{other}` is not `group`, `cluster` or `core`"),
                ))
            }
        };
        if llc_per != 0 && g.llc.is_some() {
            return Err(TopoError::invalid(
                origin,
                f("llc"),
                "cannot be combined with llc_per",
            ));
        }
        let ct = core_type_index(origin, &f("core_type"), types, &g.core_type)?;
        let ids: Vec<CpuId> = match &g.cpus {
            Some(list) => {
                let ids = parse_cpulist(origin, &f("cpus"), list)?;
                if ids.len() as i64 != n {
                    return Err(TopoError::invalid(
                        origin,
                        f("cpus"),
                        format!(
                            "lists {} CPUs but the group has {cores}x{threads} = {n}",
                            ids.len()
                        ),
                    ));
                }
                ids
            }
            None => {
                if next_free + n > m {
                    return Err(TopoError::invalid(
                        origin,
                        f("cores"),
                        format!("more than {MAX_CPUS} CPUs"),
                    ));
                }
                (next_free..next_free + n).map(|c| c as CpuId).collect()
            }
        };
        for (k, &id) in ids.iter().enumerate() {
            let k = k as u64;
            let core_in_group = k / threads as u64;
            let cluster_in_group = core_in_group / cpc as u64;
            let llc = match llc_per {
                0 => llc_id,
                1 => llc_auto + cluster_in_group,
                _ => llc_auto + core_in_group,
            };
            let raw = RawCpu {
                core: core_base + core_in_group,
                cluster: cluster_base + cluster_in_group,
                llc,
                die,
                package,
                node,
                core_type: ct,
                capacity: None,
                freq: None,
                prio: None,
            };
            place(origin, &f("cpus"), table, id, raw)?;
            next_free = next_free.max(i64::from(id) + 1);
        }
        core_base += cores as u64;
        cluster_base += (cores / cpc) as u64;
        llc_auto += cores as u64;
    }
    Ok(())
}

fn cpus_from_list(
    origin: &str,
    list: &[FileCpu],
    types: &[CoreType],
    table: &mut BTreeMap<u16, RawCpu>,
) -> Result<(), TopoError> {
    let m = MAX_CPUS as i64;
    if list.len() > MAX_CPUS {
        return Err(TopoError::invalid(
            origin,
            "cpu",
            format!("more than {MAX_CPUS} CPUs"),
        ));
    }
    for (i, c) in list.iter().enumerate() {
        let f = |name: &str| format!("cpu[{i}].{name}");
        let id = int_in(origin, &f("id"), c.id, 0, m - 1)? as CpuId;
        let big = i64::from(u32::MAX);
        let core = int_in(origin, &f("core"), c.core, 0, big)? as u64;
        let cluster = match c.cluster {
            Some(v) => int_in(origin, &f("cluster"), v, 0, big)? as u64,
            None => core + (1 << 40),
        };
        let ct = core_type_index(origin, &f("core_type"), types, &c.core_type)?;
        let raw = RawCpu {
            core,
            cluster,
            llc: int_in(origin, &f("llc"), c.llc, 0, big)? as u64,
            die: int_in(origin, &f("die"), c.die, 0, big)? as u64,
            package: int_in(origin, &f("package"), c.package, 0, big)? as u64,
            node: int_in(origin, &f("node"), c.node, 0, m)? as u64,
            core_type: ct,
            capacity: match c.capacity {
                Some(v) => Some(u32_in(origin, &f("capacity"), v, 1, 1024)? as u16),
                None => None,
            },
            freq: match c.freq_max_mhz {
                Some(v) => Some(u32_in(origin, &f("freq_max_mhz"), v, 1, MAX_FREQ_MHZ)?),
                None => None,
            },
            prio: match c.asym_prio {
                Some(v) => Some(u32_in(origin, &f("asym_prio"), v, 0, u32::MAX)?),
                None => None,
            },
        };
        place(origin, &f("id"), table, id, raw)?;
    }
    Ok(())
}

/// The package number of `key`, a package no CPU is in, among `seen` (the
/// keys of such packages met so far, in order): numbered after the CPUs'
/// `nr_packages`, in order of first mention.
pub(crate) fn cpuless_package<T: PartialEq>(seen: &mut Vec<T>, key: T, nr_packages: u32) -> u32 {
    let k = match seen.iter().position(|x| *x == key) {
        Some(k) => k,
        None => {
            seen.push(key);
            seen.len() - 1
        }
    };
    nr_packages + k as u32
}

/// Renumbers keys densely in order of first appearance by CPU id.
pub(crate) fn densify(keys: impl Iterator<Item = u64>) -> Vec<u32> {
    let mut map: BTreeMap<u64, u32> = BTreeMap::new();
    keys.map(|k| {
        let next = map.len() as u32;
        *map.entry(k).or_insert(next)
    })
    .collect()
}

// ---------------------------------------------------------------------------
// The whole machine.

fn build_machine(f: FileMachine, origin: &str) -> Result<Machine, TopoError> {
    if f.name.trim().is_empty() {
        return Err(TopoError::invalid(origin, "name", "must not be empty"));
    }
    let arch = match f.arch.as_deref().unwrap_or("arm64") {
        "x86" | "x86_64" => Arch::X86,
        "arm64" | "arm" | "aarch64" | "riscv" => Arch::Arm64,
        "powerpc" | "ppc64" | "ppc64le" => Arch::PowerPc,
        other => {
            return Err(TopoError::invalid(
                origin,
                "arch",
                format!(
                    "`{other}` is not `x86` (alias `x86_64`), `arm64` (aliases `aarch64`, \
                     `arm`, `riscv`) or `powerpc` (aliases `ppc64`, `ppc64le`)"
                ),
            ))
        }
    };

    // Core types.
    if f.core_type.is_empty() {
        return Err(TopoError::invalid(
            origin,
            "core_type",
            "at least one [[core_type]] is needed",
        ));
    }
    if f.core_type.len() > 64 {
        return Err(TopoError::invalid(
            origin,
            "core_type",
            "more than 64 core types",
        ));
    }
    let mut types = Vec::new();
    let mut type_attr = Vec::new();
    for (i, t) in f.core_type.iter().enumerate() {
        let fl = |name: &str| format!("core_type[{i}].{name}");
        if t.name.trim().is_empty() {
            return Err(TopoError::invalid(origin, fl("name"), "must not be empty"));
        }
        if types.iter().any(|x: &CoreType| x.name == t.name) {
            return Err(TopoError::invalid(
                origin,
                fl("name"),
                format!("`{}` defined twice", t.name),
            ));
        }
        let cap = u32_in(origin, &fl("capacity"), t.capacity, 1, 1024)? as u16;
        let freq = u32_in(origin, &fl("freq_max_mhz"), t.freq_max_mhz, 1, MAX_FREQ_MHZ)?;
        let prio = u32_in(origin, &fl("asym_prio"), t.asym_prio, 0, u32::MAX)?;
        let speed = match t.smt_thread_speed {
            Some(v) => {
                if !v.is_finite() || v <= 0.0 || v > 1.0 {
                    return Err(TopoError::invalid(
                        origin,
                        fl("smt_thread_speed"),
                        format!("{v} is not in (0, 1]"),
                    ));
                }
                v
            }
            None => 1.0,
        };
        let bw = positive_bw(origin, &fl("core_bw_bytes_per_s"), t.core_bw_bytes_per_s)?;
        types.push(CoreType {
            name: t.name.clone(),
            smt_thread_speed: speed,
            core_bw_bytes_per_s: bw,
        });
        type_attr.push((cap, freq, prio));
    }

    // CPUs.
    let forms = [
        f.shape.is_some(),
        !f.core_group.is_empty(),
        !f.cpu.is_empty(),
    ];
    let nforms = forms.iter().filter(|&&b| b).count();
    if nforms == 0 {
        return Err(TopoError::invalid(
            origin,
            "shape",
            "no CPUs: give one of [shape], [[core_group]] or [[cpu]]",
        ));
    }
    if nforms > 1 {
        return Err(TopoError::invalid(
            origin,
            "shape",
            "give only one of [shape], [[core_group]] or [[cpu]]",
        ));
    }
    let mut table: BTreeMap<u16, RawCpu> = BTreeMap::new();
    if let Some(s) = &f.shape {
        cpus_from_shape(origin, s, &types, &mut table)?;
    } else if !f.core_group.is_empty() {
        cpus_from_groups(origin, &f.core_group, &types, &mut table)?;
    } else {
        cpus_from_list(origin, &f.cpu, &types, &mut table)?;
    }
    let n = table.len();
    if n == 0 {
        return Err(TopoError::invalid(origin, "cpu", "no CPUs"));
    }
    if n > MAX_CPUS {
        return Err(TopoError::invalid(
            origin,
            "cpu",
            format!("{n} CPUs, more than {MAX_CPUS}"),
        ));
    }
    // Dense ids 0..n.
    for (expect, &id) in table.keys().enumerate() {
        if id as usize != expect {
            return Err(TopoError::invalid(
                origin,
                "cpus",
                format!("CPU {expect} is missing (CPU ids must be 0..{n} without gaps)"),
            ));
        }
    }
    let raws: Vec<RawCpu> = table.into_values().collect();
    let cores = densify(raws.iter().map(|r| r.core));
    let clusters = densify(raws.iter().map(|r| r.cluster));
    let llcs = densify(raws.iter().map(|r| r.llc));
    let dies = densify(raws.iter().map(|r| r.die));
    let packages = densify(raws.iter().map(|r| r.package));
    let mut cpus = Vec::with_capacity(n);
    for (i, r) in raws.iter().enumerate() {
        let (cap, freq, prio) = type_attr[r.core_type as usize];
        cpus.push(CpuInfo {
            id: i as CpuId,
            core: cores[i],
            cluster: clusters[i],
            llc: llcs[i],
            die: dies[i],
            package: packages[i],
            node: r.node as u32,
            capacity: r.capacity.unwrap_or(cap),
            freq_max_mhz: r.freq.unwrap_or(freq),
            asym_prio: r.prio.unwrap_or(prio),
            core_type: r.core_type,
        });
    }

    // Nodes must be dense 0..k: the nodes of the CPUs, and those a `[[node]]`
    // entry gives, which may have no CPUs (memory only, as a CXL memory
    // expander, or a node whose CPUs are all offline).
    for (i, o) in f.node.iter().enumerate() {
        int_in(origin, &format!("node[{i}].id"), o.id, 0, MAX_CPUS as i64)?;
        if f.node.iter().take(i).any(|x| x.id == o.id) {
            return Err(TopoError::invalid(
                origin,
                format!("node[{i}].id"),
                format!("node {} given twice", o.id),
            ));
        }
    }
    let mut node_ids: Vec<u32> = cpus.iter().map(|c| c.node).collect();
    node_ids.extend(f.node.iter().map(|o| o.id as u32));
    node_ids.sort_unstable();
    node_ids.dedup();
    let nr_nodes = node_ids.len();
    for (expect, &id) in node_ids.iter().enumerate() {
        if id as usize != expect {
            let nr = node_ids.last().map_or(0, |&l| l + 1);
            return Err(TopoError::invalid(
                origin,
                "node",
                format!(
                    "node {expect} has neither CPUs nor a [[node]] entry (node ids must be 0..{nr} without gaps)"
                ),
            ));
        }
    }

    check_nesting(origin, &cpus)?;

    // Memory per node.
    let mut nodes = Vec::with_capacity(nr_nodes);
    let nr_packages = packages.iter().map(|&p| p + 1).max().unwrap_or(0);
    let mut cpuless_packages: Vec<u64> = Vec::new();
    for id in 0..nr_nodes as u32 {
        let over = f.node.iter().find(|x| x.id == i64::from(id));
        let base = f.memory.as_ref();
        let fld = |name: &str| match over {
            Some(_) => format!("node[id={id}].{name}"),
            None => format!("memory.{name}"),
        };
        // A node's value, else the `[memory]` default, else an error.
        let missing = |name: &str| {
            TopoError::invalid(
                origin,
                format!("memory.{name}"),
                format!("missing for node {id}"),
            )
        };
        let peak = over
            .and_then(|o| o.mem_bw_peak_bytes_per_s)
            .or(base.map(|b| b.mem_bw_peak_bytes_per_s))
            .ok_or_else(|| missing("mem_bw_peak_bytes_per_s"))?;
        let half = over
            .and_then(|o| o.mem_half_concurrency)
            .or(base.map(|b| b.mem_half_concurrency))
            .ok_or_else(|| missing("mem_half_concurrency"))?;
        let lat = over
            .and_then(|o| o.mem_latency_ns)
            .or(base.map(|b| b.mem_latency_ns))
            .ok_or_else(|| missing("mem_latency_ns"))?;
        let node_cpus = CpuMask::from_cpus(cpus.iter().filter(|c| c.node == id).map(|c| c.id));
        // A package key as the CPUs' are written: one of theirs takes its
        // number; another is a package without online CPUs, numbered after
        // theirs in order of first mention.
        let package = match over.and_then(|o| o.package) {
            None => None,
            Some(_) if !node_cpus.is_empty() => {
                return Err(TopoError::invalid(
                    origin,
                    fld("package"),
                    format!("node {id} has CPUs: its package is theirs"),
                ))
            }
            Some(p) => {
                let p = int_in(origin, &fld("package"), p, 0, i64::from(u32::MAX))? as u64;
                Some(match raws.iter().position(|r| r.package == p) {
                    Some(i) => packages[i],
                    None => cpuless_package(&mut cpuless_packages, p, nr_packages),
                })
            }
        };
        nodes.push(NodeInfo {
            id,
            cpus: node_cpus,
            package,
            mem_bw_peak_bytes_per_s: positive_bw(origin, &fld("mem_bw_peak_bytes_per_s"), peak)?,
            mem_half_concurrency: float_in(origin, &fld("mem_half_concurrency"), half, 1e-3, 1e6)?,
            mem_latency_ns: u32_in(origin, &fld("mem_latency_ns"), lat, 1, MAX_NS)?,
        });
    }

    // Distance table.
    let distance = match f.numa.as_ref().map(|n| &n.distance) {
        None if nr_nodes == 1 => vec![vec![10]],
        None => {
            return Err(TopoError::invalid(
                origin,
                "numa.distance",
                format!("missing: {nr_nodes} nodes need a {nr_nodes}x{nr_nodes} table"),
            ))
        }
        Some(t) => check_distance(origin, t, nr_nodes)?,
    };

    // Caches.
    let mut caches = Vec::new();
    for (i, c) in f.cache.iter().enumerate() {
        let fl = |name: &str| format!("cache[{i}].{name}");
        let level = u32_in(origin, &fl("level"), c.level, 1, MAX_CACHE_LEVEL)? as u8;
        let kind = match c.kind.as_deref().unwrap_or("Unified") {
            "Data" | "data" => "Data",
            "Instruction" | "instruction" => "Instruction",
            "Unified" | "unified" => "Unified",
            other => {
                return Err(TopoError::invalid(
                    origin,
                    fl("kind"),
                    format!("`{other}` is not Data, Instruction or Unified"),
                ))
            }
        };
        let size = parse_size(origin, &fl("size"), &c.size)?;
        let line = match c.line_bytes {
            Some(v) => u32_in(origin, &fl("line_bytes"), v, 1, MAX_LINE_BYTES)?,
            None => 64,
        };
        let filter = match &c.core_type {
            Some(name) => Some(core_type_index(origin, &fl("core_type"), &types, name)?),
            None => None,
        };
        for span in instances(
            origin,
            &fl("scope"),
            &fl("cpus"),
            &c.scope,
            &c.cpus,
            &cpus,
            filter,
        )? {
            caches.push(CacheInfo {
                level,
                kind: kind.to_string(),
                size_bytes: size,
                line_bytes: line,
                cpus: span,
            });
        }
    }
    check_caches(origin, &caches, &cpus)?;

    // Links.
    let mut links = Vec::new();
    for (i, l) in f.link.iter().enumerate() {
        let fl = |name: &str| format!("link[{i}].{name}");
        if l.name.trim().is_empty() {
            return Err(TopoError::invalid(origin, fl("name"), "must not be empty"));
        }
        let bw = positive_bw(origin, &fl("bw_bytes_per_s"), l.bw_bytes_per_s)?;
        let filter = match &l.core_type {
            Some(name) => Some(core_type_index(origin, &fl("core_type"), &types, name)?),
            None => None,
        };
        let spans = instances(
            origin,
            &fl("scope"),
            &fl("cpus"),
            &l.scope,
            &l.cpus,
            &cpus,
            filter,
        )?;
        let many = spans.len() > 1;
        for (k, span) in spans.into_iter().enumerate() {
            links.push(SharedLink {
                name: if many {
                    format!("{}{k}", l.name)
                } else {
                    l.name.clone()
                },
                cpus: span,
                bw_bytes_per_s: bw,
            });
        }
    }

    let c2c = {
        let g = |name: &str, v: i64| u32_in(origin, &format!("c2c.{name}"), v, 0, MAX_NS);
        let llc = g("llc_ns", f.c2c.llc_ns)?;
        let remote = g("remote_package_ns", f.c2c.remote_package_ns)?;
        let opt = |name: &str, v: Option<i64>, dflt: u32| match v {
            Some(v) => g(name, v),
            None => Ok(dflt),
        };
        let cluster = opt("cluster_ns", f.c2c.cluster_ns, llc)?;
        let smt = opt("smt_ns", f.c2c.smt_ns, cluster)?;
        let package = opt("package_ns", f.c2c.package_ns, remote)?;
        let node = opt("node_ns", f.c2c.node_ns, package)?;
        let die = opt("die_ns", f.c2c.die_ns, node)?;
        C2cLatency {
            smt_ns: smt,
            cluster_ns: cluster,
            llc_ns: llc,
            die_ns: die,
            node_ns: node,
            package_ns: package,
            remote_package_ns: remote,
        }
    };
    let wakeup = WakeupCosts {
        ipi_ns: u32_in(origin, "wakeup.ipi_ns", f.wakeup.ipi_ns, 0, MAX_NS)?,
        wakeup_path_ns: u32_in(
            origin,
            "wakeup.wakeup_path_ns",
            f.wakeup.wakeup_path_ns,
            0,
            MAX_NS,
        )?,
        balance_pass_ns: u32_in(
            origin,
            "wakeup.balance_pass_ns",
            f.wakeup
                .balance_pass_ns
                .unwrap_or(i64::from(crate::machine::DEFAULT_BALANCE_PASS_NS)),
            0,
            MAX_NS,
        )?,
        balance_pass_per_cpu_ns: u32_in(
            origin,
            "wakeup.balance_pass_per_cpu_ns",
            f.wakeup
                .balance_pass_per_cpu_ns
                .unwrap_or(i64::from(crate::machine::DEFAULT_BALANCE_PASS_PER_CPU_NS)),
            0,
            1_000_000,
        )?,
        balance_refused_ns: u32_in(
            origin,
            "wakeup.balance_refused_ns",
            f.wakeup
                .balance_refused_ns
                .unwrap_or(i64::from(crate::machine::DEFAULT_BALANCE_REFUSED_NS)),
            0,
            MAX_NS,
        )?,
        idle_states: idle_states(origin, &f.wakeup, &f.idle_state)?,
    };

    Ok(Machine {
        name: f.name,
        description: f.description,
        arch,
        cpus,
        core_types: types,
        caches,
        nodes,
        distance,
        links,
        c2c,
        wakeup,
        booted: None,
    })
}

/// The CPU sets a `scope` or `cpus` key describes: one set per instance of the scope.
fn instances(
    origin: &str,
    scope_field: &str,
    cpus_field: &str,
    scope: &Option<String>,
    list: &Option<String>,
    cpus: &[CpuInfo],
    filter: Option<u16>,
) -> Result<Vec<CpuMask>, TopoError> {
    let keep = |c: &&CpuInfo| !matches!(filter, Some(t) if t != c.core_type);
    match (scope, list) {
        (Some(_), Some(_)) => Err(TopoError::invalid(
            origin,
            scope_field,
            "give either scope or cpus, not both",
        )),
        (None, None) => Err(TopoError::invalid(
            origin,
            scope_field,
            "missing: give scope or cpus",
        )),
        (None, Some(l)) => {
            let ids = parse_cpulist(origin, cpus_field, l)?;
            if ids.is_empty() {
                return Err(TopoError::invalid(origin, cpus_field, "empty CPU list"));
            }
            if let Some(bad) = ids.iter().find(|&&c| c as usize >= cpus.len()) {
                return Err(TopoError::invalid(
                    origin,
                    cpus_field,
                    format!("CPU {bad} does not exist (the machine has {})", cpus.len()),
                ));
            }
            Ok(vec![CpuMask::from_cpus(ids)])
        }
        (Some(s), None) => {
            let key: fn(&CpuInfo) -> u32 = match s.as_str() {
                "thread" | "cpu" => |c| u32::from(c.id),
                "core" => |c| c.core,
                "cluster" => |c| c.cluster,
                "llc" => |c| c.llc,
                "die" => |c| c.die,
                "package" => |c| c.package,
                "node" => |c| c.node,
                "machine" => |_| 0,
                other => {
                    return Err(TopoError::invalid(
                        origin,
                        scope_field,
                        format!(
                            "`{other}` is not one of thread, core, cluster, llc, die, package, node, machine"
                        ),
                    ))
                }
            };
            let mut by_key: BTreeMap<u32, CpuMask> = BTreeMap::new();
            for c in cpus.iter().filter(keep) {
                by_key.entry(key(c)).or_default().set(c.id);
            }
            // In order of first CPU.
            let mut v: Vec<CpuMask> = by_key.into_values().collect();
            v.sort_by_key(|m| m.first());
            Ok(v)
        }
    }
}

/// Checks that the levels nest: a core lies in one LLC, die, package and node; an
/// LLC lies in one die... (cluster may be wider than the LLC, as on POWER10 where
/// each 4-thread small core has its own L2/L3 and the cluster is the SMT8 core).
fn check_nesting(origin: &str, cpus: &[CpuInfo]) -> Result<(), TopoError> {
    type Key = fn(&CpuInfo) -> u32;
    let levels: [(&str, Key); 6] = [
        ("core", |c| c.core),
        ("cluster", |c| c.cluster),
        ("llc", |c| c.llc),
        ("die", |c| c.die),
        ("package", |c| c.package),
        ("node", |c| c.node),
    ];
    // (inner, outer) pairs that must nest.
    let pairs: [(usize, usize); 10] = [
        (0, 1),
        (1, 5),
        (0, 2),
        (0, 3),
        (0, 4),
        (0, 5),
        (1, 3),
        (2, 3),
        (3, 4),
        (2, 5),
    ];
    for (inner, outer) in pairs {
        let (iname, ik) = levels[inner];
        let (oname, ok) = levels[outer];
        let mut seen: BTreeMap<u32, (u32, CpuId)> = BTreeMap::new();
        for c in cpus {
            let (i, o) = (ik(c), ok(c));
            match seen.get(&i) {
                Some(&(o2, first)) if o2 != o => {
                    let reason = if oname == "node" && iname == "llc" {
                        format!(
                            "a last-level cache is shared by CPUs of different nodes (CPU {first} on node {o2}, CPU {} on node {o})",
                            c.id
                        )
                    } else {
                        format!(
                            "{iname} {i} spans two {oname}s (CPU {first} in {oname} {o2}, CPU {} in {oname} {o})",
                            c.id
                        )
                    };
                    return Err(TopoError::invalid(origin, iname, reason));
                }
                Some(_) => {}
                None => {
                    seen.insert(i, (o, c.id));
                }
            }
        }
    }
    // A cluster either lies inside one LLC or is made of whole LLCs (POWER10), so
    // that CLS and MC spans nest (topology_span_sane()).
    let mut llc_of_cluster: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for c in cpus {
        let v = llc_of_cluster.entry(c.cluster).or_default();
        if !v.contains(&c.llc) {
            v.push(c.llc);
        }
    }
    for (cl, llcs) in &llc_of_cluster {
        if llcs.len() > 1 {
            for c in cpus {
                if llcs.contains(&c.llc) && c.cluster != *cl {
                    return Err(TopoError::invalid(
                        origin,
                        "cluster",
                        format!(
                            "cluster {cl} spans several LLCs but LLC {} also has CPU {} outside it: clusters and LLCs must nest",
                            c.llc, c.id
                        ),
                    ));
                }
            }
        }
    }
    // SMT siblings share a core type.
    let mut ty: BTreeMap<u32, u16> = BTreeMap::new();
    for c in cpus {
        if let Some(&t) = ty.get(&c.core) {
            if t != c.core_type {
                return Err(TopoError::invalid(
                    origin,
                    "core_type",
                    format!("CPU {} has another core type than its SMT siblings", c.id),
                ));
            }
        } else {
            ty.insert(c.core, c.core_type);
        }
    }
    Ok(())
}

fn check_caches(origin: &str, caches: &[CacheInfo], cpus: &[CpuInfo]) -> Result<(), TopoError> {
    for (i, c) in caches.iter().enumerate() {
        let mut nodes = c.cpus.iter().map(|id| cpus[id as usize].node);
        if let Some(first) = nodes.next() {
            if let Some(other) = nodes.find(|&n| n != first) {
                return Err(TopoError::invalid(
                    origin,
                    "cache",
                    format!(
                        "L{} instance {i} (CPUs {}) is shared by CPUs of different nodes ({first} and {other})",
                        c.level,
                        c.cpus.to_list_string()
                    ),
                ));
            }
        }
    }
    // Instances of one level and kind must not overlap.
    for (i, a) in caches.iter().enumerate() {
        for b in caches.iter().skip(i + 1) {
            if a.level == b.level && a.kind == b.kind && a.cpus.intersects(&b.cpus) {
                return Err(TopoError::invalid(
                    origin,
                    "cache",
                    format!(
                        "two L{} {} instances overlap (CPUs {} and {})",
                        a.level,
                        a.kind,
                        a.cpus.to_list_string(),
                        b.cpus.to_list_string()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn check_distance(origin: &str, t: &[Vec<i64>], n: usize) -> Result<Vec<Vec<u32>>, TopoError> {
    if t.len() != n {
        return Err(TopoError::invalid(
            origin,
            "numa.distance",
            format!("has {} rows but the machine has {n} nodes", t.len()),
        ));
    }
    let mut out = vec![vec![0u32; n]; n];
    for (a, row) in t.iter().enumerate() {
        if row.len() != n {
            return Err(TopoError::invalid(
                origin,
                format!("numa.distance[{a}]"),
                format!("has {} entries but the machine has {n} nodes", row.len()),
            ));
        }
        for (b, &v) in row.iter().enumerate() {
            let f = format!("numa.distance[{a}][{b}]");
            if a == b {
                if v != 10 {
                    return Err(TopoError::invalid(
                        origin,
                        f,
                        format!("{v}: the diagonal must be 10"),
                    ));
                }
            } else if !(11..=i64::from(MAX_DISTANCE)).contains(&v) {
                return Err(TopoError::invalid(
                    origin,
                    f,
                    format!("{v}: distances between nodes must be in 11..={MAX_DISTANCE}"),
                ));
            }
            out[a][b] = v as u32;
        }
    }
    for (a, row) in out.iter().enumerate() {
        for (b, &v) in row.iter().enumerate().take(a) {
            let w = out[b][a];
            if v != w {
                return Err(TopoError::invalid(
                    origin,
                    format!("numa.distance[{a}][{b}]"),
                    format!(
                        "{v} differs from numa.distance[{b}][{a}] = {w}: the table must be symmetric"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"
name = "mini"
arch = "x86"
[[core_type]]
name = "c"
capacity = 1024
freq_max_mhz = 3000
smt_thread_speed = 0.6
core_bw_bytes_per_s = 10e9
[shape]
packages = 2
cores_per_cluster = 2
threads_per_core = 2
core_type = "c"
nodes_per_package = 1
[[cache]]
level = 3
size = "8M"
scope = "package"
[memory]
mem_bw_peak_bytes_per_s = 50e9
mem_half_concurrency = 2
mem_latency_ns = 100
[numa]
distance = [[10, 21], [21, 10]]
[c2c]
llc_ns = 30
remote_package_ns = 120
[wakeup]
ipi_ns = 1000
idle_exit_ns = 1000
wakeup_path_ns = 1000
"#;

    #[test]
    fn mini_loads() {
        let m = load_machine_str(MINI, "mini.toml").unwrap();
        assert_eq!(m.nr_cpus(), 8);
        assert_eq!(m.cpus[1].core, 0);
        assert_eq!(m.cpus[4].package, 1);
        assert_eq!(m.cpus[4].node, 1);
        assert_eq!(m.caches.len(), 2);
        assert_eq!(m.c2c.smt_ns, 30);
        assert_eq!(m.c2c.node_ns, 120);
        assert_eq!(m.arch, Arch::X86);
    }

    fn err(text: &str) -> String {
        load_machine_str(text, "f.toml").unwrap_err().to_string()
    }

    /// MINI with `tables` as its idle states instead of the short form.
    fn with_idle_tables(tables: &str) -> String {
        MINI.replace("idle_exit_ns = 1000\n", "") + tables
    }

    #[test]
    fn idle_state_tables_load_and_are_checked() {
        let ok = with_idle_tables(
            "[[idle_state]]\nname = \"POLL\"\nexit_ns = 0\nresidency_ns = 0\npolls = true\npoll_loop = true\n\
             [[idle_state]]\nname = \"C6\"\nexit_ns = 100000\nresidency_ns = 400000\ndisabled = true\n",
        );
        let m = load_machine_str(&ok, "f.toml").unwrap();
        let st = &m.wakeup.idle_states;
        assert_eq!(st.len(), 2);
        assert!(st[0].poll_loop && st[0].polls && st[0].poll_limit_ns == 0);
        assert!(st[1].disabled && !st[1].polls && st[1].exit_ns == 100_000);
        let state = |name: &str, extra: &str| {
            format!(
                "[[idle_state]]\nname = \"{name}\"\nexit_ns = 1000\nresidency_ns = 1000\n{extra}"
            )
        };
        let cases = [
            (state("A", "poll_loop = true\n"), "idle_state[0].poll_loop"),
            (
                state("A", "polls = true\n") + &state("B", "polls = true\npoll_loop = true\n"),
                "idle_state[1].poll_loop",
            ),
            (
                state("A", "poll_limit_ns = 5\n"),
                "idle_state[0].poll_limit_ns",
            ),
            (
                state("A", "").replace("residency_ns = 1000", "residency_ns = 9000")
                    + &state("B", ""),
                "idle_state[1].residency_ns",
            ),
            (state("A", "") + &state("A", ""), "idle_state[1].name"),
            (state(" ", ""), "idle_state[0].name"),
            (
                state("A", "").replace("exit_ns = 1000", "exit_ns = -1"),
                "idle_state[0].exit_ns",
            ),
            (
                (0..11).map(|i| state(&format!("S{i}"), "")).collect(),
                "idle_state",
            ),
        ];
        for (tables, field) in cases {
            let e = err(&with_idle_tables(&tables));
            assert!(e.contains(field) && !e.contains('\n'), "{field}: {e}");
        }
        // Both forms, or neither.
        let e = err(&(MINI.to_string() + &state("A", "")));
        assert!(e.contains("wakeup.idle_exit_ns"), "{e}");
        let e = err(&with_idle_tables(""));
        assert!(
            e.contains("idle_state") && e.contains("no idle states"),
            "{e}"
        );
    }

    #[test]
    fn the_short_form_describes_the_same_states() {
        let m = load_machine_str(MINI, "f.toml").unwrap();
        assert_eq!(m.wakeup.idle_states.len(), 1);
        assert!(!m.wakeup.idle_states[0].polls);
        let pseries = MINI.replace(
            "idle_exit_ns = 1000\n",
            "idle_exit_ns = 1000\nidle_polls = true\nidle_poll_below_ns = 100000\nidle_poll_gives_up = true\n",
        );
        let st = load_machine_str(&pseries, "f.toml")
            .unwrap()
            .wakeup
            .idle_states;
        assert_eq!(st.len(), 2);
        assert!(st[0].poll_loop && st[0].poll_limit_ns == 100_000);
        assert!(!st[1].polls && st[1].residency_ns == 100_000 && st[1].exit_ns == 1000);
    }

    /// The balance-pass costs are optional: defaults when absent, checked
    /// when given.
    #[test]
    fn balance_pass_costs_default_and_are_range_checked() {
        let m = load_machine_str(MINI, "f.toml").unwrap();
        assert_eq!(m.wakeup.balance_pass_ns_for(10), 2_000 + 50 * 10);
        assert_eq!(m.wakeup.balance_refused_ns, 100);
        let given = MINI.replace(
            "wakeup_path_ns = 1000\n",
            "wakeup_path_ns = 1000\nbalance_pass_ns = 500\nbalance_pass_per_cpu_ns = 7\nbalance_refused_ns = 0\n",
        );
        let w = load_machine_str(&given, "f.toml").unwrap().wakeup;
        assert_eq!(w.balance_pass_ns_for(4), 528);
        assert_eq!(w.balance_refused_ns, 0);
        let huge = MINI.replace(
            "wakeup_path_ns = 1000\n",
            "wakeup_path_ns = 1000\nbalance_pass_per_cpu_ns = 2000000\n",
        );
        let e = err(&huge);
        assert!(e.contains("wakeup.balance_pass_per_cpu_ns"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    /// A `[[node]]` entry may name a node without CPUs (memory only, or
    /// every CPU offline); its memory comes from the entry or `[memory]`,
    /// the distance table covers it, and it adds no NUMA level. Node ids
    /// stay dense.
    #[test]
    fn nodes_without_cpus() {
        let three = MINI.replace(
            "[numa]\ndistance = [[10, 21], [21, 10]]",
            "[[node]]\nid = 2\nmem_latency_ns = 300\n\
                 [numa]\ndistance = [[10, 21, 15], [21, 10, 15], [15, 15, 10]]",
        );
        let m = load_machine_str(&three, "f.toml").unwrap();
        assert_eq!(m.nodes.len(), 3);
        assert!(m.nodes[2].cpus.is_empty());
        assert_eq!(m.nodes[2].mem_latency_ns, 300);
        assert_eq!(m.nodes[1].mem_latency_ns, 100);
        assert_eq!(m.distance[2][0], 15);
        assert_eq!(
            crate::sysfs::machine_to_toml(&m)
                .matches("[[node]]")
                .count(),
            3
        );
        let d = crate::build_domains(&m, &crate::DomainConfig::default()).unwrap();
        let top = d.cpus[0].domains.last().unwrap();
        // SMT, MC, PKG, NODE, then NUMA at 21 alone (no level for 15).
        let top = (top.name.as_str(), top.numa_distance, top.level);
        assert_eq!(top, ("NUMA", 21, 4));
        // Still 2x2: the table misses node 2.
        let e = err(&three.replace(
            "[[10, 21, 15], [21, 10, 15], [15, 15, 10]]",
            "[[10, 21], [21, 10]]",
        ));
        assert!(
            e.contains("field `numa.distance`") && e.contains("3 nodes"),
            "{e}"
        );
        // Its package: the nearest CPU node's, or the one it names (a CPU
        // package's key, or one no CPU has, numbered after theirs); a node
        // with CPUs names none.
        assert_eq!(m.node_package(2), m.node_package(0));
        let pkg = |p: &str| three.replace("id = 2\n", &format!("id = 2\npackage = {p}\n"));
        let far = load_machine_str(&pkg("7"), "f.toml").unwrap();
        let nr = far.cpus.iter().map(|c| c.package + 1).max().unwrap();
        assert_eq!(far.node_package(2), Some(nr));
        let text = crate::sysfs::machine_to_toml(&far);
        assert_eq!(load_machine_str(&text, "again").unwrap(), far);
        let e = err(&MINI.replace("[numa]", "[[node]]\nid = 0\npackage = 0\n[numa]"));
        assert!(e.contains("node 0 has CPUs: its package is theirs"), "{e}");
        // A gap: node 2 is neither a CPU's nor an entry's.
        let e = err(&three.replace("id = 2", "id = 3"));
        assert!(
            e.contains("field `node`: node 2 has neither CPUs nor a [[node]] entry (node ids must be 0..4 without gaps)"),
            "{e}"
        );
        for (id, why) in [
            ("-1", "-1 is out of range 0..="),
            ("9999", "9999 is out of range"),
        ] {
            let e = err(&three.replace("id = 2", &format!("id = {id}")));
            assert!(e.contains("field `node[0].id`: ") && e.contains(why), "{e}");
        }
        let e = err(&three.replace("[[node]]\nid = 2", "[[node]]\nid = 2\n[[node]]\nid = 2"));
        assert!(e.contains("field `node[1].id`: node 2 given twice"), "{e}");
    }

    #[test]
    fn errors_are_one_line_and_name_origin_and_field() {
        let cases = [
            (MINI.replace("capacity = 1024", "capacity = 0"), "capacity"),
            (
                MINI.replace("capacity = 1024", "capacity = 2000"),
                "capacity",
            ),
            (
                MINI.replace("name = \"mini\"", "name = \"mini\"\ncolour = 1"),
                "colour",
            ),
            (
                MINI.replace("[[21, 10]]", "[[22, 10]]")
                    .replace("[10, 21], [21, 10]", "[10, 21], [22, 10]"),
                "numa.distance[1][0]",
            ),
            (
                MINI.replace("[10, 21], [21, 10]", "[11, 21], [21, 10]"),
                "numa.distance[0][0]",
            ),
            (
                MINI.replace("[10, 21], [21, 10]", "[10, 21]"),
                "numa.distance",
            ),
            (MINI.replace("packages = 2", "packages = 300"), "shape"),
            (
                MINI.replace("packages = 2", "packages = 0"),
                "shape.packages",
            ),
            (
                MINI.replace("scope = \"package\"", "scope = \"machine\""),
                "cache",
            ),
            (
                MINI.replace("core_type = \"c\"\nnodes", "core_type = \"d\"\nnodes"),
                "shape.core_type",
            ),
            (MINI.replace("mem_latency_ns = 100", ""), "mem_latency_ns"),
        ];
        for (text, field) in cases {
            let e = err(&text);
            assert!(e.starts_with("f.toml: "), "{e}");
            assert!(e.contains(field), "{field}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_missing_key_names_its_table_and_the_key_on_one_line() {
        let link = format!("{MINI}[[link]]\nscope = \"cluster\"\nbw_bytes_per_s = 1e9\n");
        let two_types = MINI.replace(
            "[shape]",
            "[[core_type]]\nname = \"d\"\nfreq_max_mhz = 1000\ncore_bw_bytes_per_s = 1e9\n[shape]",
        );
        let cases = [
            (
                link,
                "f.toml: field `link[0].name`: required but missing (table [[link]] at line 33)",
            ),
            (
                two_types,
                "f.toml: field `core_type[1].capacity`: required but missing (table [[core_type]] at line 10)",
            ),
            (
                MINI.replace("ipi_ns = 1000", ""),
                "f.toml: field `wakeup.ipi_ns`: required but missing (table [wakeup] at line 29)",
            ),
            (
                MINI.replace("name = \"mini\"", ""),
                "f.toml: field `name`: required but missing (top-level keys go before the first [table] header)",
            ),
            (
                MINI.replace("[wakeup]\nipi_ns = 1000\nidle_exit_ns = 1000\nwakeup_path_ns = 1000\n", ""),
                "f.toml: field `wakeup`: required table [wakeup] is missing",
            ),
            (
                MINI.replace("arch = \"x86\"", "arch = \"x86\"\ncore_group = [{cores = 2}]"),
                "f.toml: field `core_group.core_type`: required but missing (inline table at line 4)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(err(&text), want);
        }
        for empty in ["", "\n\n", "# nothing\n  # here\n"] {
            let e = err(empty);
            assert!(
                e.starts_with("f.toml: field `name`: the file is empty"),
                "{e}"
            );
            assert!(e.contains("[wakeup]") && !e.contains('\n'), "{e}");
        }
    }

    /// A value of the wrong type names its key with its table; a line that
    /// is not TOML names no field.
    #[test]
    fn a_bad_value_names_its_table_and_a_bad_line_names_no_field() {
        let cases = [
            (
                MINI.replace("size = \"8M\"", "size = 8.5"),
                "f.toml: field `cache[0].size`: expected a size: a whole number of bytes or a text such as \"512K\" or \"1.25MiB\" (line 18)",
            ),
            (
                MINI.replace("capacity = 1024", "capacity = 1024.5"),
                "f.toml: field `core_type[0].capacity`: invalid type: floating point `1024.5`, expected a whole number (no decimal point or exponent) (line 6)",
            ),
            (
                MINI.replace("mem_latency_ns = 100", "mem_latency_ns = \"a\""),
                "f.toml: field `memory.mem_latency_ns`: invalid type: string \"a\", expected a whole number (no decimal point or exponent) (line 23)",
            ),
            (
                MINI.replace("[wakeup]", "this is not toml [[["),
                "f.toml: field `(syntax)`: expected `.`, `=` (line 29)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(err(&text), want);
        }
    }

    #[test]
    fn quoted_line_breaks_stay_out_of_messages() {
        for text in [
            MINI.replace("core_type = \"c\"\nnodes", "core_type = \"c\\nd\"\nnodes"),
            MINI.replace("name = \"mini\"", "name = \"mini\"\n\"a\\nb\" = 1"),
            MINI.replace("mem_latency_ns = 100", "mem_latency_ns = [1,\n2]"),
            MINI.replace("llc_ns = 30", "llc_ns = '''\n30'''"),
            MINI.replace("[c2c]", "[[c2c]]"),
            MINI.replace("name = \"mini\"", "name = \"mini\"\r\ncolour = 1\r"),
        ] {
            let e = err(&text);
            assert!(!e.contains('\n') && !e.contains('\r'), "{e}");
            assert!(!e.contains("field `?`"), "{e}");
        }
    }

    #[test]
    fn arch_aliases_load_and_the_error_lists_them() {
        for (alias, arch) in [
            ("x86_64", Arch::X86),
            ("aarch64", Arch::Arm64),
            ("arm", Arch::Arm64),
            ("riscv", Arch::Arm64),
            ("ppc64", Arch::PowerPc),
            ("ppc64le", Arch::PowerPc),
        ] {
            let text = MINI.replace("arch = \"x86\"", &format!("arch = \"{alias}\""));
            assert_eq!(load_machine_str(&text, "f").unwrap().arch, arch, "{alias}");
        }
        let e = err(&MINI.replace("arch = \"x86\"", "arch = \"mips\""));
        for name in ["x86_64", "aarch64", "arm`", "riscv", "ppc64le"] {
            assert!(e.contains(name), "{name}: {e}");
        }
    }

    #[test]
    fn overlapping_and_missing_cpus() {
        let base = MINI.split("[shape]").next().unwrap_or("").to_string();
        let tail = MINI.split_once("[[cache]]").map(|(_, t)| t).unwrap_or("");
        let tail = format!(
            "[[cache]]{}",
            tail.replace("scope = \"package\"", "scope = \"core\"")
        );
        let overlap = format!(
            "{base}[[core_group]]\ncore_type = \"c\"\ncores = 2\ncpus = \"0-1\"\n[[core_group]]\ncore_type = \"c\"\ncores = 2\ncpus = \"1-2\"\n{tail}"
        );
        let e = err(&overlap);
        assert!(e.contains("CPU 1 is described twice"), "{e}");
        let missing =
            format!("{base}[[core_group]]\ncore_type = \"c\"\ncores = 2\ncpus = \"0,2\"\n{tail}");
        let e = err(&missing);
        assert!(e.contains("CPU 1 is missing"), "{e}");
    }

    #[test]
    fn sizes() {
        let p = |s: &str| parse_size("o", "f", &SizeSpec::Text(s.into()));
        assert_eq!(p("64K"), Ok(65536));
        assert_eq!(p("1.25M"), Ok(1310720));
        assert_eq!(p("24 MiB"), Ok(24 << 20));
        assert!(p("-1K").is_err());
        assert!(p("3X").is_err());
        assert!(p("").is_err());
    }

    #[test]
    fn garbage_is_an_error() {
        for t in ["", "[[[", "name = 3", "name = \"x\"\n[shape]\n", "\u{0}"] {
            assert!(load_machine_str(t, "g").is_err());
        }
    }
}
