//! Text tables in the layout of mmtests' `compare-kernels.sh` (`Compare.pm`,
//! `PrintGeneric.pm`), and a one-table summary of many experiments.
//!
//! Comparison table layout (one per experiment):
//!
//! ```text
//!                                kunpeng920             kunpeng920
//!                                   vanilla                cluster
//! Min       copy-4      29800.10 (   0.00%)    32900.40 (  10.40%)
//! Hmean     copy-4      29905.75 (   0.00%)    32930.27 *  10.11%*
//! ...
//! ```
//!
//! - Two header lines: mmtests splits each run name `<kernel>-<variant>` at the
//!   first '-'; a schedlab run is `<machine>-<config>`, so line 1 is the machine and
//!   line 2 the config. Columns are the configs, baseline first.
//! - Rows are grouped by statistic, then by operation (as mmtests prints them):
//!   `Min`, `Hmean`/`Amean`, `HStddev`/`Stddev`, `HCoeffVar`/`CoeffVar`, `Max`,
//!   `BHmean-95`/`BAmean-95`. The `H` spread labels are those of current mmtests
//!   (commit 8a0e63a2) for the harmonic spread formula.
//! - The operation is `<metric>-<param values>` (e.g. `copy-4`, `tput-1-60` for
//!   params `{jvms: 1, users: 60}` in key order; just `<metric>` without params).
//!   Operations are ordered by metric (as listed), then params in order of first
//!   appearance among the rows.
//! - Every value is followed by its change against the baseline column,
//!   `(   0.00%)` for the baseline. Means/min/max/best compare with pdiff or pndiff
//!   by the metric's direction; Stddev and CoeffVar always with pndiff (smaller
//!   spread is positive). Positive is always better.
//! - The mean row of a significant row (see [`crate::stats::significant`]) shows
//!   stars instead of parentheses: `32932.68 *  10.03%*`.
//! - Undefined statistics (missing row, stddev of one sample, …) print as 0 with
//!   `(   0.00%)`, as mmtests does.
//! - Values use 2 decimals (mmtests' default) unless the smallest non-zero mean is
//!   below 1, in which case enough decimals for 3 significant digits (at most 6);
//!   [`TableOptions::precision`] overrides. Value fields are 12 wide (mmtests'
//!   default) or wider when a value needs it. Trailing spaces are trimmed.

use std::fmt::Write as _;

use crate::results::{ExperimentResult, Params, Row};
use crate::stats::{self, MeanKind, Summary};

/// Width of the percentage field inside `( … %)`, mmtests' `_CompareLength`.
const COMPARE_LEN: usize = 7;
/// mmtests' default value field width.
const FIELD_LEN: usize = 12;

/// Options for [`render_experiment`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// Decimals for values; `None` picks them from the data (see module docs).
    pub precision: Option<usize>,
    /// Print a title line `<name>: <workload> on <machine>` above the table.
    pub title: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            precision: None,
            title: true,
        }
    }
}

/// Options for [`render_summary`].
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOptions {
    /// Tolerance of [`agrees`], in percentage points.
    pub tolerance_pct: f64,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions { tolerance_pct: 2.0 }
    }
}

/// Whether our change agrees with a published change (both in percent, positive =
/// better): they are within `tolerance_pct` points of each other, or both are
/// beyond the tolerance in the same direction (a clear improvement, or a clear
/// regression, on both sides). Non-finite input never agrees.
pub fn agrees(ours: f64, published: f64, tolerance_pct: f64) -> bool {
    if !ours.is_finite() || !published.is_finite() {
        return false;
    }
    let tol = if tolerance_pct.is_finite() {
        tolerance_pct.abs()
    } else {
        0.0
    };
    (ours - published).abs() <= tol
        || (ours > tol && published > tol)
        || (ours < -tol && published < -tol)
}

/// A parameter value as printed: strings without quotes, numbers as JSON.
fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The operation label of a row: `<metric>-<v1>-<v2>…` (param values in key order),
/// or `<metric>` without params.
pub fn op_label(metric: &str, params: &Params) -> String {
    let mut s = metric.to_string();
    for v in params.values() {
        s.push('-');
        s.push_str(&value_text(v));
    }
    s
}

/// Params as `k=v,k=v`, or `-` when there are none.
pub fn params_text(params: &Params) -> String {
    if params.is_empty() {
        return "-".to_string();
    }
    params
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// `x` with `prec` decimals; a result that reads as zero never carries a minus
/// sign (`-0.00` becomes `0.00`).
fn fixed(x: f64, prec: usize) -> String {
    let s = format!("{:.*}", prec, stats::clamp_finite(x));
    match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    }
}

/// One (metric, params) operation of an experiment.
struct Op<'a> {
    metric: &'a str,
    higher: bool,
    params: &'a Params,
}

/// Operations in table order: metrics as listed (then unlisted ones in order of
/// appearance), params in order of first appearance.
fn operations(exp: &ExperimentResult) -> Vec<Op<'_>> {
    let mut metrics: Vec<&str> = exp.metrics.iter().map(|m| m.name.as_str()).collect();
    for r in &exp.rows {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    let mut ops = Vec::new();
    for metric in metrics {
        let higher = exp.higher_is_better(metric);
        let mut seen: Vec<&Params> = Vec::new();
        for r in exp.rows.iter().filter(|r| r.metric == metric) {
            if !seen.contains(&&r.params) {
                seen.push(&r.params);
                ops.push(Op {
                    metric,
                    higher,
                    params: &r.params,
                });
            }
        }
    }
    ops
}

/// Columns: baseline first, then listed configs, then configs only rows name.
fn columns(exp: &ExperimentResult) -> Vec<&str> {
    let mut cols = vec![exp.baseline.as_str()];
    for c in exp
        .configs
        .iter()
        .map(String::as_str)
        .chain(exp.rows.iter().map(|r| r.config.as_str()))
    {
        if !cols.contains(&c) {
            cols.push(c);
        }
    }
    cols
}

fn find_row<'a>(exp: &'a ExperimentResult, op: &Op<'_>, config: &str) -> Option<&'a Row> {
    exp.rows
        .iter()
        .find(|r| r.metric == op.metric && r.config == config && r.params == *op.params)
}

/// Decimals for an experiment's values: 2, or enough for 3 significant digits of
/// the smallest non-zero |mean| when it is below 1 (at most 6).
pub fn auto_precision(exp: &ExperimentResult) -> usize {
    let smallest = exp
        .rows
        .iter()
        .map(|r| r.mean.abs())
        .filter(|m| m.is_finite() && *m > 0.0)
        .fold(f64::INFINITY, f64::min);
    if smallest >= 1.0 {
        return 2;
    }
    let lead_zeros = (-smallest.log10()).floor();
    let digits = if lead_zeros.is_finite() && lead_zeros >= 0.0 {
        lead_zeros as usize + 3
    } else {
        6
    };
    digits.clamp(2, 6)
}

#[derive(Clone, Copy)]
enum Stat {
    Min,
    Mean,
    Stddev,
    CoeffVar,
    Max,
    Best,
}

impl Stat {
    const ALL: [Stat; 6] = [
        Stat::Min,
        Stat::Mean,
        Stat::Stddev,
        Stat::CoeffVar,
        Stat::Max,
        Stat::Best,
    ];

    fn label(self, kind: MeanKind) -> &'static str {
        match self {
            Stat::Min => "Min",
            Stat::Mean => kind.label(),
            Stat::Stddev => kind.stddev_label(),
            Stat::CoeffVar => kind.coeffvar_label(),
            Stat::Max => "Max",
            Stat::Best => kind.best_label(),
        }
    }

    fn value(self, s: &Summary) -> Option<f64> {
        match self {
            Stat::Min => s.min,
            Stat::Mean => s.mean,
            Stat::Stddev => s.stddev,
            Stat::CoeffVar => s.stddev.map(|_| s.coeffvar),
            Stat::Max => s.max,
            Stat::Best => s.best_mean,
        }
    }

    fn compare(self, new: f64, base: f64, higher: bool) -> f64 {
        match self {
            Stat::Stddev | Stat::CoeffVar => stats::pndiff(new, base),
            _ => stats::change_pct(new, base, higher),
        }
    }
}

/// Render one experiment as an mmtests compare-kernels table (see module docs).
pub fn render_experiment(exp: &ExperimentResult, opts: &TableOptions) -> String {
    let prec = opts
        .precision
        .unwrap_or_else(|| auto_precision(exp))
        .min(17);
    let ops = operations(exp);
    let cols = columns(exp);

    // cells[stat][op][col] = (value, pct, starred)
    let mut cells: Vec<Vec<Vec<(f64, f64, bool)>>> = Vec::new();
    for stat in Stat::ALL {
        let mut per_op = Vec::new();
        for op in &ops {
            let rows: Vec<Option<&Row>> = cols.iter().map(|c| find_row(exp, op, c)).collect();
            let sums: Vec<Option<Summary>> = rows
                .iter()
                .map(|r| r.map(|r| Summary::new(&r.samples, op.higher)))
                .collect();
            let base = sums[0].as_ref().and_then(|s| stat.value(s));
            let line = sums
                .iter()
                .zip(&rows)
                .enumerate()
                .map(|(i, (s, r))| {
                    let v = s.as_ref().and_then(|s| stat.value(s));
                    // A spread that prints as zero is compared as zero, so a
                    // tiny baseline spread gives no enormous percentage.
                    let shown = |x: f64| {
                        let scale = 10f64.powi(prec as i32);
                        if matches!(stat, Stat::Stddev | Stat::CoeffVar) && (x * scale).abs() < 0.5
                        {
                            0.0
                        } else {
                            x
                        }
                    };
                    let pct = match (v, base) {
                        (Some(v), Some(b)) => stat.compare(shown(v), shown(b), op.higher),
                        _ => 0.0,
                    };
                    let star =
                        matches!(stat, Stat::Mean) && i > 0 && r.is_some_and(|r| r.significant);
                    (stats::clamp_finite(v.unwrap_or(0.0)), pct, star)
                })
                .collect();
            per_op.push(line);
        }
        cells.push(per_op);
    }

    // Wide enough for every value, and for every config name in the header
    // (a column is the field, the bracketed change and 4 separators).
    let name_len = cols.iter().map(|c| c.len() + 1).max().unwrap_or(0);
    let field_len = cells
        .iter()
        .flatten()
        .flatten()
        .map(|(v, _, _)| fixed(*v, prec).len() + 1)
        .fold(FIELD_LEN, usize::max)
        .max(name_len.saturating_sub(COMPARE_LEN + 4));
    let stat_len = ops
        .iter()
        .flat_map(|op| {
            let kind = MeanKind::for_metric(op.higher);
            Stat::ALL.map(|s| s.label(kind).len())
        })
        .max()
        .unwrap_or(0);
    let labels: Vec<String> = ops
        .iter()
        .map(|op| op_label(op.metric, op.params))
        .collect();
    let op_len = labels.iter().map(String::len).max().unwrap_or(0);

    let mut out = String::new();
    if opts.title {
        let _ = writeln!(out, "{}: {} on {}", exp.name, exp.workload, exp.machine);
    }
    let col_len = field_len + COMPARE_LEN + 4;
    for header in [exp.machine.as_str(), ""] {
        let mut line = format!("{:w$}", "", w = stat_len + 1 + op_len);
        for c in &cols {
            let text = if header.is_empty() { c } else { header };
            let _ = write!(line, "{text:>col_len$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for (stat, per_op) in Stat::ALL.iter().zip(&cells) {
        for ((op, label), line_cells) in ops.iter().zip(&labels).zip(per_op) {
            let kind = MeanKind::for_metric(op.higher);
            let mut line = format!("{:<stat_len$} {:<op_len$}", stat.label(kind), label);
            for &(v, pct, star) in line_cells {
                let (v, pct) = (fixed(v, prec), fixed(pct, 2));
                let (open, close) = if star { ('*', '*') } else { ('(', ')') };
                let _ = write!(line, "{v:>field_len$} {open}{pct:>COMPARE_LEN$}%{close}");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// Render several experiments' tables, separated by blank lines.
pub fn render_experiments(exps: &[ExperimentResult], opts: &TableOptions) -> String {
    exps.iter()
        .map(|e| render_experiment(e, opts))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The unrounded mean of a row's samples (0 when undefined).
fn mean_of(row: &Row, higher: bool) -> f64 {
    MeanKind::for_metric(higher)
        .mean(&row.samples)
        .unwrap_or(0.0)
}

/// A percentage with 2 decimals and an explicit sign (`+0.00` for zero).
fn signed(pct: f64) -> String {
    let s = fixed(pct, 2);
    if s.starts_with('-') {
        s
    } else {
        format!("+{s}")
    }
}

/// One table summarising many experiments: for every non-baseline row,
/// `experiment | params | metric | config | baseline mean | mean | change% |
/// published% | agree`.
///
/// Means are recomputed from the samples (unrounded, as in the comparison
/// tables) and printed at the experiment's [`auto_precision`]; `change%` carries a `*` when significant; `published%` is
/// the row's `published_change_pct` (set with
/// [`ExperimentResult::set_published`]) or `-`; `agree` is `yes`/`no` by
/// [`agrees`], `-` without a published figure. When any published figure exists a
/// last line counts the agreements.
pub fn render_summary(exps: &[ExperimentResult], opts: &SummaryOptions) -> String {
    let header = [
        "experiment",
        "params",
        "metric",
        "config",
        "baseline",
        "mean",
        "change%",
        "published%",
        "agree",
    ];
    // Columns aligned right (numbers) or left (text).
    let right = [false, false, false, false, true, true, true, true, false];
    let mut table: Vec<[String; 9]> = vec![header.map(String::from)];
    let (mut with_published, mut agreeing) = (0usize, 0usize);
    for exp in exps {
        let prec = auto_precision(exp);
        let cols = columns(exp);
        for op in operations(exp) {
            let base = find_row(exp, &op, cols[0]);
            for config in &cols[1..] {
                let Some(row) = find_row(exp, &op, config) else {
                    continue;
                };
                let published = row.published_change_pct.filter(|p| p.is_finite());
                let agree = published.map(|p| agrees(row.change_pct, p, opts.tolerance_pct));
                if let Some(a) = agree {
                    with_published += 1;
                    agreeing += usize::from(a);
                }
                let unit = exp.metric(op.metric).map_or("", |m| m.unit.as_str());
                let metric = if unit.is_empty() {
                    op.metric.to_string()
                } else {
                    format!("{} ({unit})", op.metric)
                };
                table.push([
                    exp.name.clone(),
                    params_text(op.params),
                    metric,
                    (*config).to_string(),
                    base.map_or("-".to_string(), |b| fixed(mean_of(b, op.higher), prec)),
                    fixed(mean_of(row, op.higher), prec),
                    format!(
                        "{}{}",
                        signed(row.change_pct),
                        if row.significant { "*" } else { " " }
                    ),
                    published.map_or("-".to_string(), signed),
                    match agree {
                        Some(true) => "yes",
                        Some(false) => "no",
                        None => "-",
                    }
                    .to_string(),
                ]);
            }
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| table.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (n, r) in table.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let w = widths[i];
            if right[i] {
                let _ = write!(line, "{cell:>w$}");
            } else {
                let _ = write!(line, "{cell:<w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if n == 0 {
            let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    if with_published > 0 {
        let _ = writeln!(
            out,
            "{agreeing}/{with_published} rows agree with the published change \
             (within {t:.1} points of it, or both beyond ±{t:.1} in the same direction); \
             * = significant",
            t = opts.tolerance_pct
        );
    } else {
        out.push_str("* = significant (mean ± 1.96·stddev intervals do not overlap)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_rule() {
        assert!(agrees(10.0, 10.03, 2.0));
        assert!(agrees(3.0, 12.0, 2.0));
        assert!(agrees(-3.0, -12.0, 2.0));
        assert!(agrees(0.5, -1.2, 2.0));
        assert!(!agrees(1.0, 10.0, 2.0));
        assert!(!agrees(5.0, -5.0, 2.0));
        assert!(!agrees(f64::NAN, 1.0, 2.0));
    }

    #[test]
    fn labels() {
        let p = crate::results::params([("jvms", serde_json::json!(1)), ("users", 60.into())]);
        assert_eq!(op_label("tput", &p), "tput-1-60");
        assert_eq!(params_text(&p), "jvms=1,users=60");
        let b = crate::results::params([("bench", "flac")]);
        assert_eq!(op_label("runtime", &b), "runtime-flac");
        assert_eq!(op_label("score", &Params::new()), "score");
        assert_eq!(params_text(&Params::new()), "-");
    }
}
