//! Sensitivity to a machine's estimates: rerun experiments with each number
//! their machine files mark ESTIMATE scaled down and up, and report which
//! shape verdicts change and how far the changes against the baseline move.
//!
//! A simulated table is only as good as the numbers behind it. The presets
//! cite a source for every measured number and mark the rest ESTIMATE; a
//! machine imported from sysfs is mostly estimates. This module answers
//! "does my conclusion depend on them?" by brute force: one edited rerun per
//! estimate and direction (`schedlab reproduce --sensitivity`, `schedlab
//! compare --sensitivity`). An edit applies only to the experiments whose
//! machine marks that number as an estimate.

use crate::experiments::{run_all, ExperimentDef, Options};
use crate::published::{params_label, shape_claims};
use rayon::prelude::*;
use schedlab_report::{ExperimentResult, RowMove, SensitivityEntry, VerdictChange};
use schedlab_topo::{estimate_keys, machine_text, resolve_machine_edited, MachineEdit};
use std::collections::BTreeMap;

/// One edited rerun: the edit and the experiments (indices into the defs)
/// whose machine marks its number as an estimate.
#[derive(Debug, Clone)]
pub struct PlannedEdit {
    pub edit: MachineEdit,
    pub defs: Vec<usize>,
}

/// What `--sensitivity` will run, and the edits it cannot (an edit that makes
/// a machine impossible, e.g. an SMT speed above 1).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub edits: Vec<PlannedEdit>,
    /// (edit, machine, reason).
    pub skipped: Vec<(String, String, String)>,
}

impl Plan {
    /// Simulations the edited reruns take.
    pub fn runs(&self, defs: &[ExperimentDef]) -> u64 {
        self.edits
            .iter()
            .flat_map(|e| &e.defs)
            .map(|&i| (defs[i].points.len() * defs[i].configs.len() * defs[i].repetitions) as u64)
            .sum()
    }
}

/// `2`, `0.5`, `1.25`: a factor as an edit writes it.
fn factor_text(f: f64) -> String {
    let s = format!("{f:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Every ESTIMATE number of the experiments' machines (or, with `keys`,
/// exactly those paths wherever a machine has them, estimate or not),
/// divided and multiplied by `factor` (> 1), on top of the run's own
/// `base_edits`.
pub fn plan(
    defs: &[ExperimentDef],
    base_edits: &[MachineEdit],
    factor: f64,
    keys: Option<&[String]>,
) -> Result<Plan, String> {
    let mut plan = Plan::default();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut machines: Vec<&str> = defs.iter().map(|d| d.machine.as_str()).collect();
    machines.sort_unstable();
    machines.dedup();
    for machine in machines {
        let text = machine_text(machine).map_err(|e| e.to_string())?;
        let paths: Vec<String> = match keys {
            Some(k) => k.to_vec(),
            None => estimate_keys(&text).into_iter().map(|k| k.path).collect(),
        };
        for path in paths {
            for f in [1.0 / factor, factor] {
                let edit = MachineEdit::parse(&format!("{path}*{}", factor_text(f)))
                    .map_err(|e| e.to_string())?;
                let mut all = base_edits.to_vec();
                all.push(edit.clone());
                match resolve_machine_edited(machine, &all, false) {
                    // A chosen key this machine does not have.
                    Ok((_, n)) if n.last().is_some_and(|c| c.matched == 0) => continue,
                    // Scaling zeros (an idle state's 0 ns residency) runs the
                    // same machine again: say so instead of reporting it as
                    // tested (`run --machine-edit` refuses such an edit).
                    Ok((_, n)) if n.last().is_some_and(|c| c.changed == 0) => {
                        let matched = n.last().map_or(0, |c| c.matched);
                        plan.skipped.push((
                            edit.text.clone(),
                            machine.to_string(),
                            format!(
                                "changes nothing: {}",
                                schedlab_topo::edit::unchanged(&edit, matched)
                            ),
                        ));
                        continue;
                    }
                    Ok((m, _)) => {
                        // An edit that unfits a configuration (S5's schemes
                        // on CPUs edited to one capacity) is not a run.
                        let unfit = defs
                            .iter()
                            .filter(|d| d.machine == machine)
                            .flat_map(|d| &d.configs)
                            .find_map(|c| {
                                let cfg = crate::configs::resolve(c, m.arch).ok()?;
                                crate::configs::check_machine(&cfg, &m).err()
                            });
                        if let Some(e) = unfit {
                            plan.skipped
                                .push((edit.text.clone(), machine.to_string(), e));
                            continue;
                        }
                    }
                    Err(e) => {
                        plan.skipped
                            .push((edit.text.clone(), machine.to_string(), e.to_string()));
                        continue;
                    }
                }
                let slot = *index.entry(edit.text.clone()).or_insert_with(|| {
                    plan.edits.push(PlannedEdit {
                        edit,
                        defs: Vec::new(),
                    });
                    plan.edits.len() - 1
                });
                let users = defs
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| d.machine == machine)
                    .map(|(i, _)| i);
                plan.edits[slot].defs.extend(users);
            }
        }
    }
    for e in &mut plan.edits {
        e.defs.sort_unstable();
    }
    Ok(plan)
}

/// The results of one edited rerun, in the order of its `defs`.
#[derive(Debug, Clone)]
pub struct EditOutcome {
    pub edit: String,
    pub defs: Vec<usize>,
    pub results: Vec<ExperimentResult>,
}

/// Runs the plan: one `run_all` per edit over the experiments it concerns,
/// with the run's own edits first. The edits run concurrently (rayon nests
/// them with the runs inside), so no core waits for the slowest run of one
/// edit; the outcomes keep the plan's order.
pub fn run(
    defs: &[ExperimentDef],
    plan: &Plan,
    opts: &Options,
    progress: crate::experiments::Progress,
) -> Result<Vec<EditOutcome>, String> {
    plan.edits
        .par_iter()
        .map(|p| {
            let subset: Vec<ExperimentDef> = p.defs.iter().map(|&i| defs[i].clone()).collect();
            let mut o = opts.clone();
            o.machine_edits.push(p.edit.clone());
            let results = run_all(&subset, &o, progress).map_err(|e| format!("{}: {e}", p.edit))?;
            Ok(EditOutcome {
                edit: p.edit.text.clone(),
                defs: p.defs.clone(),
                results,
            })
        })
        .collect()
}

/// How one edited rerun differs from the unedited results (`base`, indexed
/// like the defs).
pub fn entry(
    defs: &[ExperimentDef],
    base: &[ExperimentResult],
    o: &EditOutcome,
) -> SensitivityEntry {
    let mut machines: Vec<String> = Vec::new();
    for &i in &o.defs {
        if !machines.contains(&defs[i].machine) {
            machines.push(defs[i].machine.clone());
        }
    }
    let mut e = SensitivityEntry {
        edit: o.edit.clone(),
        machines,
        skipped: None,
        verdict_changes: Vec::new(),
        largest_move: None,
        largest_moves: Vec::new(),
        sign_flips: 0,
        no_sample_moved: true,
    };
    let mut best = -1.0;
    for (&i, r) in o.defs.iter().zip(&o.results) {
        let b = &base[i];
        let mut best_here: Option<(f64, RowMove)> = None;
        for c in shape_claims(&r.name) {
            if let (Some(was), Some(now)) = ((c.check)(b), (c.check)(r)) {
                if was.holds != now.holds {
                    e.verdict_changes.push(VerdictChange {
                        experiment: r.name.clone(),
                        claim: c.description.to_string(),
                        holds: now.holds,
                    });
                }
            }
        }
        // Every sample the same to the bit: the runs never read the number.
        let bits = |row: &schedlab_report::Row| -> Vec<u64> {
            row.samples.iter().map(|x| x.to_bits()).collect()
        };
        e.no_sample_moved &= r.rows.len() == b.rows.len()
            && r.rows.iter().zip(&b.rows).all(|(x, y)| {
                x.config == y.config
                    && x.metric == y.metric
                    && x.params == y.params
                    && bits(x) == bits(y)
            });
        for row in r.rows.iter().filter(|row| row.config != r.baseline) {
            let Some(br) = b.rows.iter().find(|x| {
                x.config == row.config && x.metric == row.metric && x.params == row.params
            }) else {
                continue;
            };
            let d = (row.change_pct - br.change_pct).abs();
            if best_here.as_ref().is_none_or(|(x, _)| d > *x) {
                best_here = Some((
                    d,
                    RowMove {
                        experiment: r.name.clone(),
                        params: row.params.clone(),
                        config: row.config.clone(),
                        metric: row.metric.clone(),
                        change_pct: br.change_pct,
                        edited_change_pct: row.change_pct,
                    },
                ));
            }
            if row.significant
                && br.significant
                && row.change_pct.signum() != br.change_pct.signum()
            {
                e.sign_flips += 1;
            }
        }
        if let Some((d, m)) = best_here {
            if d > best {
                best = d;
                e.largest_move = Some(m.clone());
            }
            e.largest_moves.push(m);
        }
    }
    if e.no_sample_moved {
        // Nothing moved: a "largest" move of zero would name an arbitrary row.
        e.largest_move = None;
        e.largest_moves.clear();
    }
    e
}

/// Every rerun's entry, then the skipped edits'.
pub fn entries(
    defs: &[ExperimentDef],
    base: &[ExperimentResult],
    plan: &Plan,
    outcomes: &[EditOutcome],
) -> Vec<SensitivityEntry> {
    let mut v: Vec<SensitivityEntry> = outcomes.iter().map(|o| entry(defs, base, o)).collect();
    v.extend(
        plan.skipped
            .iter()
            .map(|(edit, machine, why)| SensitivityEntry {
                edit: edit.clone(),
                machines: vec![machine.clone()],
                skipped: Some(why.clone()),
                verdict_changes: Vec::new(),
                largest_move: None,
                largest_moves: Vec::new(),
                sign_flips: 0,
                no_sample_moved: false,
            }),
    );
    v
}

/// The `== Sensitivity` section of a report; `keys` as given to [`plan`].
pub fn render(
    defs: &[ExperimentDef],
    entries: &[SensitivityEntry],
    factor: f64,
    keys: Option<&[String]>,
) -> String {
    let what = match keys {
        Some(k) => k.join(", "),
        None => "every number marked ESTIMATE in the machines".to_string(),
    };
    let mut t = format!(
        "== Sensitivity: {what}, scaled by 1/{f} and {f} (one rerun each, same seeds)\n",
        f = factor_text(factor)
    );
    if entries.is_empty() {
        t.push_str("(the machines mark no number ESTIMATE)\n");
    }
    let claims = defs.iter().any(|d| !shape_claims(&d.name).is_empty());
    let (mut ran, mut changed) = (0, 0);
    for e in entries {
        let head = format!("{:<40} [{}]", e.edit, e.machines.join(","));
        if let Some(why) = &e.skipped {
            t.push_str(&format!("{head} skipped: {why}\n"));
            continue;
        }
        ran += 1;
        let verdicts = if !claims {
            String::new()
        } else if e.verdict_changes.is_empty() {
            "no verdict changes; ".to_string()
        } else {
            changed += 1;
            e.verdict_changes
                .iter()
                .map(|v| {
                    let now = if v.holds {
                        "now holds"
                    } else {
                        "NO LONGER HOLDS"
                    };
                    format!("{} \"{}\" {now}", v.experiment, v.claim)
                })
                .collect::<Vec<_>>()
                .join("; ")
                + "; "
        };
        let largest = match &e.largest_move {
            _ if e.no_sample_moved => {
                "no sample changed: the runs do not depend on this number".into()
            }
            // Printed to two decimals, nothing moved.
            Some(m)
                if format!("{:+.2}", m.change_pct) == format!("{:+.2}", m.edited_change_pct) =>
            {
                "no compared change moved by 0.01 points or more".into()
            }
            Some(m) => {
                let p = params_label(&m.params);
                let p = if p.is_empty() {
                    String::new()
                } else {
                    format!(" {p}")
                };
                format!(
                    "largest move {}{p} {} {}: {:+.2}% -> {:+.2}%",
                    m.experiment, m.config, m.metric, m.change_pct, m.edited_change_pct
                )
            }
            None => "no compared rows".into(),
        };
        t.push_str(&format!(
            "{head} {verdicts}{largest}; significant sign flips: {}\n",
            e.sign_flips
        ));
    }
    if claims {
        t.push_str(&format!(
            "{changed} of {ran} edits change a shape verdict\n"
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::get;

    #[test]
    fn the_plan_halves_and_doubles_each_estimate_of_each_machine() {
        let defs = vec![
            get("exynos5433-mixed", true).unwrap(),
            get("kunpeng920-stream", true).unwrap(),
            get("alderlake-single", true).unwrap(),
        ];
        let p = plan(&defs, &[], 2.0, None).unwrap();
        let texts: Vec<&str> = p.edits.iter().map(|e| e.edit.text.as_str()).collect();
        assert!(texts.contains(&"wakeup.ipi_ns*0.5") && texts.contains(&"wakeup.ipi_ns*2"));
        // Both machines mark their wake-up costs ESTIMATE.
        let ipi = p
            .edits
            .iter()
            .find(|e| e.edit.text == "wakeup.ipi_ns*2")
            .unwrap();
        assert_eq!(ipi.defs, vec![0, 1, 2]);
        // The A53's capacity is an estimate on the 5433 only.
        let cap = p
            .edits
            .iter()
            .find(|e| e.edit.text == "core_type.0.capacity*2")
            .unwrap();
        assert_eq!(cap.defs, vec![0]);
        // Alder Lake's P-core SMT speed 0.62 doubled leaves (0, 1]: skipped.
        assert!(p
            .skipped
            .iter()
            .any(|(e, m, _)| e == "core_type.0.smt_thread_speed*2" && m == "alderlake"));
        assert!(p
            .edits
            .iter()
            .any(|e| e.edit.text == "core_type.0.smt_thread_speed*0.5" && e.defs == vec![2]));
        let bw = p
            .edits
            .iter()
            .find(|e| e.edit.text == "core_type.0.core_bw_bytes_per_s*2")
            .unwrap();
        // The 5433's and Alder Lake's are estimates; Kunpeng's 12.4 GB/s is measured.
        assert_eq!(bw.defs, vec![0, 2]);
    }

    #[test]
    fn chosen_keys_are_varied_where_a_machine_has_them_estimate_or_not() {
        let defs = vec![
            get("exynos5433-mixed", true).unwrap(),
            get("kunpeng920-stream", true).unwrap(),
        ];
        let keys = vec!["c2c.cluster_ns".to_string(), "memory.no_such".to_string()];
        let p = plan(&defs, &[], 2.0, Some(&keys)).unwrap();
        let texts: Vec<&str> = p.edits.iter().map(|e| e.edit.text.as_str()).collect();
        assert_eq!(texts, vec!["c2c.cluster_ns*0.5", "c2c.cluster_ns*2"]);
        // Kunpeng's cluster latency is measured, and varied all the same.
        assert!(p.edits.iter().all(|e| e.defs == vec![0, 1]));
        assert!(p.skipped.is_empty());
    }

    /// Scaling a number that is 0 (Kunpeng's WFI residency) runs the same
    /// machine: skipped as changing nothing, not reported as tested.
    #[test]
    fn an_edit_that_changes_nothing_is_skipped() {
        let defs = vec![get("kunpeng920-stream", true).unwrap()];
        let keys = vec!["idle_state.0.residency_ns".to_string()];
        let p = plan(&defs, &[], 2.0, Some(&keys)).unwrap();
        assert!(p.edits.is_empty());
        assert_eq!(p.skipped.len(), 2);
        assert!(p
            .skipped
            .iter()
            .all(|(_, m, why)| m == "kunpeng920" && why.contains("changes nothing")));
    }

    #[test]
    fn a_shift_reports_verdict_changes_and_the_largest_move() {
        let mut d = get("exynos5433-mixed", true).unwrap();
        d.repetitions = 1;
        let opts = Options {
            quick: true,
            checked: false,
            ..Options::default()
        };
        let base = run_all(std::slice::from_ref(&d), &opts, &|_, _| {}).unwrap();
        let p = Plan {
            edits: vec![PlannedEdit {
                edit: MachineEdit::parse("wakeup.ipi_ns*4").unwrap(),
                defs: vec![0],
            }],
            skipped: Vec::new(),
        };
        let out = run(std::slice::from_ref(&d), &p, &opts, &|_, _| {}).unwrap();
        let defs = std::slice::from_ref(&d);
        let e = entry(defs, &base, &out[0]);
        let m = e.largest_move.clone().unwrap();
        assert_eq!(
            (m.experiment.as_str(), m.config.as_str()),
            ("exynos5433-mixed", "hperf-hmp")
        );
        assert_ne!(
            m.change_pct, m.edited_change_pct,
            "slower IPIs move the comparison"
        );
        assert_eq!(e.machines, vec!["exynos5433".to_string()]);
        assert_eq!(e.largest_moves, vec![m.clone()], "one experiment, one move");
        // The same results are no shift at all.
        let same = EditOutcome {
            edit: "x".into(),
            defs: vec![0],
            results: base.clone(),
        };
        let e = entry(defs, &base, &same);
        assert!(e.verdict_changes.is_empty() && e.sign_flips == 0);
        assert!(
            e.no_sample_moved,
            "the same samples: the number is not read"
        );
        assert!(!entry(defs, &base, &out[0]).no_sample_moved);
        assert!(render(defs, std::slice::from_ref(&e), 2.0, None).contains("no sample changed"));
        // Nothing moved, so no row is named as the largest move.
        assert!(e.largest_move.is_none() && e.largest_moves.is_empty());
        let text = render(defs, &entries(defs, &base, &p, &out), 2.0, None);
        assert!(
            text.contains("wakeup.ipi_ns*4") && text.contains("[exynos5433]"),
            "{text}"
        );
    }
}
