//! Machine edits: change one number of a machine file before it is loaded,
//! to ask how much a result depends on it (`--machine-edit 'wakeup.ipi_ns*2'`).
//!
//! Many numbers of the presets are estimates (marked ESTIMATE in the files);
//! an edit lets a user move one and rerun an experiment, without copying and
//! editing a preset. An edit is `PATH*FACTOR` (scale a number), `PATH=VALUE`
//! (set a number) or `PATH=true`/`PATH=false` (set a switch, such as an idle
//! state's `disabled`). `PATH` is the dotted key of the machine file
//! (docs/machine-format.md), e.g. `wakeup.ipi_ns`, `c2c.cluster_ns`,
//! `memory.mem_latency_ns`; a segment that names an array of tables
//! (`core_type`, `cache`, `link`, `node`, `idle_state`) applies the rest of the path to
//! every element, so `core_type.core_bw_bytes_per_s*0.5` halves it for every
//! core type, and `link.bw_bytes_per_s*2` doubles every link; a number picks
//! one element (`core_type.0.smt_thread_speed*0.8`, counting from 0 in file
//! order). Integers stay integers (rounded to nearest). The edited machine is
//! validated like any machine file, so an edit that makes it impossible is an
//! error. An edit must change something: [`EditCount`] tells, per edit, how many
//! numbers its path matched and how many of them it gave a new value (a factor
//! of 1, or setting the value a number already has, changes nothing).

use crate::error::TopoError;
use crate::load::load_machine_str;
use crate::machine::Machine;
use std::fmt;

/// What an edit does to the number at its path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EditOp {
    /// Multiply by a finite factor > 0.
    Scale(f64),
    /// Replace by this number.
    Set(f64),
    /// Replace a true/false value (`idle_state.3.disabled=false`).
    SetBool(bool),
}

/// One parsed `PATH*FACTOR` or `PATH=VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineEdit {
    /// The dotted key, split at the dots.
    pub path: Vec<String>,
    pub op: EditOp,
    /// The edit as the user wrote it (for messages and results.json).
    pub text: String,
}

impl fmt::Display for MachineEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn bad_edit(s: &str, reason: impl Into<String>) -> TopoError {
    TopoError::Invalid {
        origin: format!("--machine-edit '{s}'"),
        field: "machine-edit".to_string(),
        reason: reason.into(),
    }
}

impl MachineEdit {
    /// Parses `PATH*FACTOR` or `PATH=VALUE`.
    pub fn parse(s: &str) -> Result<MachineEdit, TopoError> {
        let (path, num, scale) = match (s.split_once('*'), s.split_once('=')) {
            (Some((p, n)), None) => (p, n, true),
            (None, Some((p, n))) => (p, n, false),
            _ => {
                return Err(bad_edit(
                    s,
                    "expected PATH*FACTOR or PATH=VALUE, e.g. wakeup.ipi_ns*2",
                ))
            }
        };
        let path: Vec<String> = path.trim().split('.').map(|p| p.to_string()).collect();
        if path.iter().any(|p| {
            p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }) {
            return Err(bad_edit(
                s,
                "the path must be dotted key names, e.g. wakeup.ipi_ns",
            ));
        }
        if !scale && matches!(num.trim(), "true" | "false") {
            return Ok(MachineEdit {
                path,
                op: EditOp::SetBool(num.trim() == "true"),
                text: s.trim().to_string(),
            });
        }
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| bad_edit(s, format!("'{}' is not a number", num.trim())))?;
        if !v.is_finite() {
            return Err(bad_edit(s, "the number must be finite"));
        }
        if scale && v <= 0.0 {
            return Err(bad_edit(s, "a factor must be greater than 0"));
        }
        Ok(MachineEdit {
            path,
            op: if scale {
                EditOp::Scale(v)
            } else {
                EditOp::Set(v)
            },
            text: s.trim().to_string(),
        })
    }
}

/// What one edit did to one machine file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EditCount {
    /// The numbers at the edit's path (0: the path is not in this machine).
    pub matched: u32,
    /// Those of them the edit gave a new value.
    pub changed: u32,
}

impl std::ops::AddAssign for EditCount {
    fn add_assign(&mut self, o: EditCount) {
        self.matched += o.matched;
        self.changed += o.changed;
    }
}

/// Applies `edits` to a machine file's text. Returns the edited text and,
/// per edit, how many numbers it matched and changed. `origin` names the
/// input in errors.
pub fn apply_edits(
    text: &str,
    origin: &str,
    edits: &[MachineEdit],
) -> Result<(String, Vec<EditCount>), TopoError> {
    let mut doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| TopoError::Parse {
            origin: origin.to_string(),
            field: "-".to_string(),
            reason: e.message().replace('\n', " "),
        })?;
    let mut counts = Vec::with_capacity(edits.len());
    for e in edits {
        counts.push(edit_table(&mut doc, &e.path, e, origin)?);
    }
    let out = toml::to_string(&doc).map_err(|err| TopoError::Invalid {
        origin: origin.to_string(),
        field: "machine-edit".to_string(),
        reason: err.to_string().replace('\n', " "),
    })?;
    Ok((out, counts))
}

fn edit_table(
    t: &mut toml::Table,
    path: &[String],
    e: &MachineEdit,
    origin: &str,
) -> Result<EditCount, TopoError> {
    let Some((key, rest)) = path.split_first() else {
        return Ok(EditCount::default());
    };
    match t.get_mut(key.as_str()) {
        // A switch the file leaves at its default (false) is set by adding
        // it; a key the format does not have is then refused by the loader.
        None if rest.is_empty() => match e.op {
            EditOp::SetBool(b) => {
                t.insert(key.clone(), toml::Value::Boolean(b));
                Ok(EditCount {
                    matched: 1,
                    changed: u32::from(b),
                })
            }
            _ => Ok(EditCount::default()),
        },
        None => Ok(EditCount::default()),
        Some(v) => edit_value(v, rest, e, origin),
    }
}

fn edit_value(
    v: &mut toml::Value,
    rest: &[String],
    e: &MachineEdit,
    origin: &str,
) -> Result<EditCount, TopoError> {
    use toml::Value;
    if rest.is_empty() {
        let wrong = |what: &str| TopoError::Invalid {
            origin: origin.to_string(),
            field: e.path.join("."),
            reason: format!("{what}, not a number: machine edit '{e}' cannot change it"),
        };
        if let EditOp::SetBool(b) = e.op {
            let Value::Boolean(old) = *v else {
                return Err(TopoError::Invalid {
                    origin: origin.to_string(),
                    field: e.path.join("."),
                    reason: format!("not a true/false value: machine edit '{e}' cannot set it"),
                });
            };
            *v = Value::Boolean(b);
            return Ok(EditCount {
                matched: 1,
                changed: u32::from(old != b),
            });
        }
        // The number an old value becomes (true/false returned above).
        let apply = |old: f64| match e.op {
            EditOp::Scale(f) => old * f,
            EditOp::Set(x) => x,
            EditOp::SetBool(_) => old,
        };
        let new = match (*v).clone() {
            Value::Integer(i) => {
                let x = apply(i as f64);
                let r = x.round();
                if !(i64::MIN as f64..=i64::MAX as f64).contains(&r) {
                    return Err(TopoError::Invalid {
                        origin: origin.to_string(),
                        field: e.path.join("."),
                        reason: format!("machine edit '{e}' gives {x:e}, out of range"),
                    });
                }
                Value::Integer(r as i64)
            }
            Value::Float(f) => Value::Float(apply(f)),
            Value::Table(_) => return Err(wrong("a table")),
            Value::Array(_) => return Err(wrong("an array")),
            // A size written with a unit (a cache's `size = "512K"`) is a
            // number of bytes.
            Value::String(s) => match crate::load::size_text_bytes(&s) {
                Some(b) => {
                    let x = apply(b as f64);
                    let r = x.round();
                    if !(1.0..=i64::MAX as f64).contains(&r) {
                        return Err(TopoError::Invalid {
                            origin: origin.to_string(),
                            field: e.path.join("."),
                            reason: format!("machine edit '{e}' gives {x:e} bytes, out of range"),
                        });
                    }
                    if r as u64 == b {
                        return Ok(EditCount {
                            matched: 1,
                            changed: 0,
                        });
                    }
                    Value::Integer(r as i64)
                }
                None => return Err(wrong("a string")),
            },
            Value::Boolean(_) => {
                return Err(wrong("a true/false value (set it with =true or =false)"))
            }
            Value::Datetime(_) => return Err(wrong("a date")),
        };
        let changed = new != *v;
        *v = new;
        return Ok(EditCount {
            matched: 1,
            changed: u32::from(changed),
        });
    }
    match v {
        Value::Table(t) => edit_table(t, rest, e, origin),
        Value::Array(a) => {
            // A number picks one element (`core_type.0.capacity`).
            if let Ok(i) = rest[0].parse::<usize>() {
                return match a.get_mut(i) {
                    Some(x) => edit_value(x, &rest[1..], e, origin),
                    None => Ok(EditCount::default()),
                };
            }
            let mut n = EditCount::default();
            for x in a.iter_mut() {
                if x.is_table() {
                    n += edit_value(x, rest, e, origin)?;
                }
            }
            Ok(n)
        }
        _ => Ok(EditCount::default()),
    }
}

/// Loads a machine file's text with `edits` applied. An edit that changes
/// nothing in this machine (its path names no number, or every number it
/// names keeps its value) is an error when `require_match` is set.
pub fn load_edited(
    text: &str,
    origin: &str,
    edits: &[MachineEdit],
    require_match: bool,
) -> Result<(Machine, Vec<EditCount>), TopoError> {
    // The file as written first: its own errors name its own lines.
    let unedited = load_machine_str(text, origin)?;
    if edits.is_empty() {
        return Ok((unedited, Vec::new()));
    }
    let (edited, counts) = apply_edits(text, origin, edits)?;
    if require_match {
        if let Some((e, n)) = edits.iter().zip(&counts).find(|(_, n)| n.changed == 0) {
            return Err(TopoError::Invalid {
                origin: origin.to_string(),
                field: e.path.join("."),
                reason: if n.matched == 0 {
                    format!("machine edit '{e}': no such number in this machine")
                } else {
                    format!(
                        "machine edit '{e}' changes nothing: {}",
                        unchanged(e, n.matched)
                    )
                },
            });
        }
    }
    let list: Vec<String> = edits.iter().map(|e| e.text.clone()).collect();
    let origin = format!("{origin} (edited: {})", list.join(", "));
    Ok((load_machine_str(&edited, &origin)?, counts))
}

/// Why edit `e`, which matched `matched` numbers or switches, changes none
/// of them.
pub fn unchanged(e: &MachineEdit, matched: u32) -> String {
    match (e.op, matched) {
        (EditOp::SetBool(v), 1) => format!("the switch it names is {v} already"),
        (EditOp::SetBool(v), n) => format!("the {n} switches it names are {v} already"),
        (_, 1) => "the number it names keeps its value".to_string(),
        (_, n) => format!("the {n} numbers it names keep their values"),
    }
}

/// A number of a machine file marked as an estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimateKey {
    /// The dotted path an edit takes (`wakeup.ipi_ns`, `core_type.0.capacity`).
    pub path: String,
    pub value: f64,
}

/// The numbers of a machine file whose line, or whose table's header line,
/// carries the word ESTIMATE in a comment (the presets' and `topo --host
/// --emit-machine`'s convention), in file order. Elements of table arrays are
/// addressed by index (`core_type.1.capacity`).
pub fn estimate_keys(text: &str) -> Vec<EstimateKey> {
    let mut out = Vec::new();
    let mut table = String::new();
    let mut table_estimate = false;
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in text.lines() {
        let (body, comment) = match line.split_once('#') {
            Some((b, c)) => (b.trim(), c),
            None => (line.trim(), ""),
        };
        let estimate = comment.contains("ESTIMATE");
        let header = |open: &str, close: &str| {
            body.strip_prefix(open)
                .and_then(|b| b.strip_suffix(close))
                .filter(|n| n.starts_with(|c: char| c.is_ascii_alphabetic()))
                .map(str::trim)
        };
        if let Some(name) = header("[[", "]]") {
            let i = match counts.iter_mut().find(|(n, _)| n == name) {
                Some((_, k)) => {
                    *k += 1;
                    *k
                }
                None => {
                    counts.push((name.to_string(), 0));
                    0
                }
            };
            table = format!("{name}.{i}");
            table_estimate = estimate;
            continue;
        }
        if let Some(name) = header("[", "]") {
            table = name.to_string();
            table_estimate = estimate;
            continue;
        }
        let Some((key, value)) = body.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !(estimate || table_estimate) {
            continue;
        }
        if let Ok(v) = value.trim().parse::<f64>() {
            if v.is_finite() {
                let path = if table.is_empty() {
                    key.to_string()
                } else {
                    format!("{table}.{key}")
                };
                out.push(EstimateKey { path, value: v });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{preset, preset_text};
    use proptest::prelude::*;

    fn edit(s: &str) -> MachineEdit {
        MachineEdit::parse(s).unwrap()
    }

    fn count(matched: u32, changed: u32) -> EditCount {
        EditCount { matched, changed }
    }

    /// An edit of a switch that already has its value says so in a switch's
    /// words, not a number's.
    #[test]
    fn an_edit_that_changes_nothing_names_a_switch_as_one() {
        let text = preset_text("power10").unwrap();
        let e = load_edited(text, "p", &[edit("idle_state.0.polls=true")], true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the switch it names is true already"), "{e}");
        let e = load_edited(text, "p", &[edit("wakeup.ipi_ns*1")], true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the number it names keeps its value"), "{e}");
    }

    #[test]
    fn the_round_trip_through_an_edit_that_matches_nothing_changes_no_preset() {
        for name in crate::PRESET_NAMES {
            let text = preset_text(name).unwrap();
            let (m, n) = load_edited(text, name, &[edit("no.such_key*2")], false).unwrap();
            assert_eq!(n, vec![count(0, 0)]);
            assert_eq!(m, preset(name).unwrap(), "{name}");
        }
    }

    #[test]
    fn an_online_suffix_keeps_working_with_edits() {
        let (m, n) =
            crate::resolve_machine_edited("power10:online=0-63", &[edit("wakeup.ipi_ns*2")], true)
                .unwrap();
        assert_eq!(n, vec![count(1, 1)]);
        assert_eq!(m.nr_cpus(), 64);
        assert_eq!(
            m.wakeup.ipi_ns,
            2 * preset("power10").unwrap().wakeup.ipi_ns
        );
    }

    #[test]
    fn scales_an_integer_and_keeps_it_an_integer() {
        let text = preset_text("kunpeng920").unwrap();
        let (m, n) = load_edited(text, "k", &[edit("wakeup.ipi_ns*2.5")], true).unwrap();
        assert_eq!(n, vec![count(1, 1)]);
        let base = preset("kunpeng920").unwrap();
        assert_eq!(m.wakeup.ipi_ns, base.wakeup.ipi_ns * 5 / 2);
        // Nothing else moved.
        assert_eq!(m.wakeup.idle_states, base.wakeup.idle_states);
        assert_eq!(m.c2c, base.c2c);
        assert_eq!(m.nr_cpus(), base.nr_cpus());
    }

    #[test]
    fn a_path_through_an_array_of_tables_edits_every_element() {
        let text = preset_text("exynos5422").unwrap();
        let (m, n) = load_edited(
            text,
            "e",
            &[edit("core_type.core_bw_bytes_per_s*0.5")],
            true,
        )
        .unwrap();
        let base = preset("exynos5422").unwrap();
        let k = base.core_types.len() as u32;
        assert_eq!(n, vec![count(k, k)]);
        for (a, b) in m.core_types.iter().zip(&base.core_types) {
            assert!((a.core_bw_bytes_per_s - b.core_bw_bytes_per_s * 0.5).abs() < 1.0);
        }
    }

    #[test]
    fn a_number_in_the_path_picks_one_element() {
        let text = preset_text("alderlake").unwrap();
        let base = preset("alderlake").unwrap();
        let (m, n) =
            load_edited(text, "a", &[edit("core_type.0.smt_thread_speed*1.2")], true).unwrap();
        assert_eq!(n, vec![count(1, 1)]);
        let want = base.core_types[0].smt_thread_speed * 1.2;
        assert!((m.core_types[0].smt_thread_speed - want).abs() < 1e-9);
        assert_eq!(m.core_types[1], base.core_types[1]);
        // Every element: the E-cores' 1.0 would leave (0, 1].
        let e = load_edited(text, "a", &[edit("core_type.smt_thread_speed*1.2")], true);
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("core_type[1].smt_thread_speed"));
        let (_, n) = load_edited(text, "a", &[edit("core_type.9.capacity*2")], false).unwrap();
        assert_eq!(n, vec![count(0, 0)]);
    }

    #[test]
    fn estimate_keys_are_the_numbers_marked_estimate() {
        let keys = estimate_keys(preset_text("alderlake").unwrap());
        let paths: Vec<&str> = keys.iter().map(|k| k.path.as_str()).collect();
        for want in [
            "core_type.0.smt_thread_speed",
            "core_type.1.capacity",
            "memory.mem_latency_ns",
            "wakeup.ipi_ns",
        ] {
            assert!(paths.contains(&want), "{want} in {paths:?}");
        }
        // Measured numbers are not estimates.
        assert!(!paths.contains(&"core_type.0.freq_max_mhz"), "{paths:?}");
        // In every preset, every estimate's path is an edit that changes
        // exactly that number, which the file holds.
        for name in crate::PRESET_NAMES {
            let text = preset_text(name).unwrap();
            let keys = estimate_keys(text);
            assert!(keys.len() >= 3, "{name}: {keys:?}");
            for k in &keys {
                let (_, n) =
                    load_edited(text, name, &[edit(&format!("{}*1", k.path))], false).unwrap();
                assert_eq!(n, vec![count(1, 0)], "{name} {}", k.path);
                let doc: toml::Table = text.parse().unwrap();
                let mut v = toml::Value::Table(doc);
                for seg in k.path.split('.') {
                    v = match v {
                        toml::Value::Table(mut t) => t.remove(seg).unwrap(),
                        toml::Value::Array(mut a) => a.remove(seg.parse().unwrap()),
                        other => panic!("{name} {}: {other:?}", k.path),
                    };
                }
                let held = v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap();
                assert_eq!(held, k.value, "{name} {}", k.path);
            }
        }
        // A header comment marks its whole table; array rows are not headers.
        let text = "name = \"x\"\n[numa]\ndistance = [\n  [10, 20],\n  [20, 10],\n]\n\
                    [c2c]  # ESTIMATE\nsmt_ns = 5\n[wakeup]\nipi_ns = 1  # ESTIMATE\nidle_exit_ns = 2\n";
        let keys = estimate_keys(text);
        assert_eq!(
            keys,
            vec![
                EstimateKey {
                    path: "c2c.smt_ns".into(),
                    value: 5.0
                },
                EstimateKey {
                    path: "wakeup.ipi_ns".into(),
                    value: 1.0
                },
            ]
        );
    }

    #[test]
    fn set_replaces_a_number() {
        let text = preset_text("kunpeng920").unwrap();
        let (m, _) = load_edited(text, "k", &[edit("c2c.cluster_ns=50")], true).unwrap();
        assert_eq!(m.c2c.cluster_ns, 50);
    }

    #[test]
    fn an_edit_that_leaves_every_number_as_it_was_changes_nothing() {
        let text = preset_text("kunpeng920").unwrap();
        for no_op in [
            "c2c.die_ns*1",
            "c2c.die_ns=80",
            "c2c.die_ns=80.2",
            "core_type.0.smt_thread_speed=1.0",
            "core_type.smt_thread_speed*1",
        ] {
            let e = load_edited(text, "k", &[edit(no_op)], true).unwrap_err();
            assert!(e.to_string().contains("changes nothing"), "{no_op}: {e}");
            assert!(!e.to_string().contains('\n'));
            let (m, n) = load_edited(text, "k", &[edit(no_op)], false).unwrap();
            assert_eq!(n, vec![count(1, 0)], "{no_op}");
            assert_eq!(m, preset("kunpeng920").unwrap());
        }
        // One element of several changed is enough.
        let text = preset_text("alderlake").unwrap();
        let (_, n) = load_edited(text, "a", &[edit("core_type.smt_thread_speed=1")], true).unwrap();
        assert_eq!(n, vec![count(2, 1)]);
    }

    #[test]
    fn a_cache_size_written_with_a_unit_is_edited_in_bytes() {
        let text = preset_text("genoa").unwrap();
        let base = preset("genoa").unwrap();
        let (m, n) = load_edited(text, "g", &[edit("cache.size*2")], true).unwrap();
        assert!(n[0].matched > 0 && n[0].changed == n[0].matched);
        for (a, b) in m.caches.iter().zip(&base.caches) {
            assert_eq!(a.size_bytes, 2 * b.size_bytes);
        }
        // The same size set again changes nothing; a zero size is refused.
        let l3 = base.caches.iter().map(|c| c.size_bytes).max().unwrap();
        let set = format!("cache.{}.size={l3}", base.caches.len() - 1);
        assert!(load_edited(text, "g", &[edit(&set)], true).is_err());
        assert!(load_edited(text, "g", &[edit("cache.size*0.0000000001")], true).is_err());
    }

    #[test]
    fn an_edit_with_no_match_is_an_error_only_when_a_match_is_required() {
        let text = preset_text("kunpeng920").unwrap();
        let e = load_edited(text, "k", &[edit("wakeup.no_such_ns*2")], true).unwrap_err();
        assert!(e.to_string().contains("no such number"), "{e}");
        let (_, n) = load_edited(text, "k", &[edit("wakeup.no_such_ns*2")], false).unwrap();
        assert_eq!(n, vec![count(0, 0)]);
    }

    #[test]
    fn an_edit_that_makes_the_machine_impossible_is_a_load_error() {
        let text = preset_text("kunpeng920").unwrap();
        let e = load_edited(text, "k", &[edit("shape.cores_per_cluster=0")], true).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("edited: shape.cores_per_cluster=0"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn non_numbers_and_bad_syntax_are_rejected() {
        let text = preset_text("kunpeng920").unwrap();
        let e = load_edited(text, "k", &[edit("name*2")], true).unwrap_err();
        assert!(e.to_string().contains("a string"), "{e}");
        let e = load_edited(text, "k", &[edit("wakeup*2")], true).unwrap_err();
        assert!(e.to_string().contains("a table"), "{e}");
        for bad in [
            "wakeup.ipi_ns",
            "wakeup.ipi_ns*0",
            "wakeup.ipi_ns*-1",
            "wakeup.ipi_ns*x",
            "wakeup.ipi_ns*inf",
            "wakeup..ipi_ns*2",
            "*2",
            "a*2=3",
        ] {
            assert!(MachineEdit::parse(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        /// Whatever the edit text, parsing and applying it never panics.
        #[test]
        fn edits_never_panic(s in "[a-z_.]{0,24}[*=]?[-0-9.e]{0,8}") {
            if let Ok(e) = MachineEdit::parse(&s) {
                let text = preset_text("alderlake").unwrap();
                let _ = load_edited(text, "a", &[e], false);
            }
        }
    }

    #[test]
    fn a_switch_is_set_even_where_the_file_leaves_it_at_its_default() {
        let m = |edits: &[&str]| {
            let e: Vec<MachineEdit> = edits.iter().map(|x| edit(x)).collect();
            load_edited(preset_text("sapphirerapids").unwrap(), "s", &e, true)
        };
        // SPR's C1E has no `disabled` key; the edit adds it.
        let (m1, n) = m(&["idle_state.2.disabled=true"]).unwrap();
        assert!(m1.wakeup.idle_states[2].disabled);
        assert_eq!(
            n[0],
            EditCount {
                matched: 1,
                changed: 1
            }
        );
        // C6 says `disabled = true`; false switches it on.
        let (m2, _) = m(&["idle_state.3.disabled=false"]).unwrap();
        assert!(!m2.wakeup.idle_states[3].disabled);
        // A misspelt switch reaches the loader, which names it.
        let e = m(&["idle_state.2.disabeld=true"]).unwrap_err().to_string();
        assert!(e.contains("disabeld") && !e.contains('\n'), "{e}");
        // A number must exist to be edited.
        assert!(m(&["idle_state.0.poll_limit_ns=5000"]).is_err());
    }
}
