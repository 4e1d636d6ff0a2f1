//! `results.json`, schema `schedlab.results/1` (see the project's contract).
//!
//! Serialisation is deterministic: struct fields are written in declaration order
//! (the contract's order), `params` is a [`BTreeMap`] (keys sorted), rows keep the
//! order in which they were first given, floats are printed by `serde_json`.
//!
//! Rounding (applied by [`ExperimentResult::from_samples`]; `samples` are never
//! rounded):
//! - `mean` and `stddev`: 6 significant digits ([`round_sig`]);
//! - `change_pct` (and `published_change_pct`): 2 decimals ([`round_dp`]), as the
//!   tables print them.
//!
//! `change_pct` and `significant` are computed from the unrounded means and
//! spreads, so they agree with the text tables.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::stats::{self, MeanKind};

/// The value of the `schema` field.
pub const SCHEMA: &str = "schedlab.results/1";

/// Significant digits kept in `mean` and `stddev`.
pub const MEAN_SIG_DIGITS: usize = 6;

/// Decimals kept in `change_pct`.
pub const PCT_DECIMALS: usize = 2;

/// An experiment's parameter values for one row, e.g. `{"threads": 4}`.
pub type Params = BTreeMap<String, serde_json::Value>;

/// Build [`Params`] from pairs: `params([("threads", 4)])`.
pub fn params<K, V, I>(pairs: I) -> Params
where
    K: Into<String>,
    V: Into<serde_json::Value>,
    I: IntoIterator<Item = (K, V)>,
{
    pairs
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
}

/// Errors reading or writing results.json.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not valid JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Valid JSON whose field at `field` (a path such as
    /// `experiments[0].rows[3].samples[1]`) is not what results.json holds.
    #[error("field `{field}`: {reason}")]
    Field {
        /// Where in the document.
        field: String,
        /// serde's words for what is wrong.
        reason: String,
    },
    /// The document is JSON but not an object.
    #[error("the document is not a JSON object (a schedlab results.json is one)")]
    NotObject,
    /// The `schema` field names another format, or is missing.
    #[error("field `schema`: expected \"{SCHEMA}\", found {}", if found.is_empty() { "none".to_string() } else { format!("{found:?}") })]
    Schema {
        /// The schema the document names ("" when it names none).
        found: String,
    },
}

/// The path (`experiments[0].rows[3].samples[1]`) of the JSON value at
/// 1-based `line` and `column` of `text`, where serde_json reports an error:
/// the keys and indices of the containers open there (empty at the top).
fn json_path_at(text: &str, line: usize, column: usize) -> String {
    enum Frame {
        Obj(Option<String>),
        Arr(usize),
    }
    let (mut l, mut c) = (1usize, 0usize);
    let mut stack: Vec<Frame> = Vec::new();
    let mut chars = text.chars();
    let mut key_next = false;
    while let Some(ch) = chars.next() {
        if ch == '\n' {
            l += 1;
            c = 0;
        } else {
            c += 1;
        }
        if (l, c) >= (line, column) {
            break;
        }
        match ch {
            '{' => {
                stack.push(Frame::Obj(None));
                key_next = true;
            }
            '[' => stack.push(Frame::Arr(0)),
            '}' | ']' => {
                stack.pop();
            }
            ',' => match stack.last_mut() {
                Some(Frame::Arr(i)) => *i += 1,
                Some(Frame::Obj(_)) => key_next = true,
                None => {}
            },
            '"' => {
                let mut s = String::new();
                while let Some(x) = chars.next() {
                    c += 1;
                    match x {
                        '\\' => {
                            if let Some(y) = chars.next() {
                                c += 1;
                                s.push(y);
                            }
                        }
                        '"' => break,
                        _ => s.push(x),
                    }
                }
                if key_next {
                    if let Some(Frame::Obj(k)) = stack.last_mut() {
                        *k = Some(s);
                    }
                    key_next = false;
                }
            }
            _ => {}
        }
    }
    let mut path = String::new();
    for f in &stack {
        match f {
            Frame::Obj(Some(k)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
            }
            Frame::Obj(None) => {}
            Frame::Arr(i) => path.push_str(&format!("[{i}]")),
        }
    }
    path
}

/// A results.json document's `schema` field, read without building the rest of
/// the document. Only a JSON object deserialises: anything else is a data error.
struct Head {
    schema: Option<serde_json::Value>,
}

impl<'de> Deserialize<'de> for Head {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Head;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Head, A::Error> {
                let mut schema = None;
                while let Some(key) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "schema" && schema.is_none() {
                        schema = Some(m.next_value::<serde_json::Value>()?);
                    } else {
                        m.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(Head { schema })
            }
        }
        d.deserialize_map(V)
    }
}

/// The whole results.json document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The schedlab version that wrote the file.
    pub version: String,
    /// One entry per experiment run.
    pub experiments: Vec<ExperimentResult>,
    /// The `--machine-edit`s the runs were made with (absent when none):
    /// results of edited machines are not the presets' results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_edits: Vec<String>,
    /// The `--feature`/`--tunable` switches appended to every configuration
    /// (absent when none): the configurations keep their names but are
    /// not the published ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_switches: Vec<String>,
    /// `--sensitivity`'s reruns, one per estimate edit (absent without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitivity: Vec<SensitivityEntry>,
}

/// One `--sensitivity` rerun: an edit of the numbers marked ESTIMATE and how
/// the results moved against the unedited runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensitivityEntry {
    /// The machine edit, e.g. `wakeup.ipi_ns*2`.
    pub edit: String,
    /// The machines it applied to (those that mark the number ESTIMATE).
    pub machines: Vec<String>,
    /// Why the edit was not run (it makes a machine impossible); then the
    /// fields below are empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Shape claims whose verdict changed.
    pub verdict_changes: Vec<VerdictChange>,
    /// The row whose change against the baseline moved most.
    pub largest_move: Option<RowMove>,
    /// The same per experiment, in the run's order.
    #[serde(default)]
    pub largest_moves: Vec<RowMove>,
    /// Rows significant in both runs whose change changed sign.
    pub sign_flips: usize,
    /// Every sample of the rerun equals the unedited run's to the bit: the
    /// runs never read the number (written only when true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_sample_moved: bool,
}

/// A shape claim whose verdict an edit changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictChange {
    pub experiment: String,
    pub claim: String,
    /// The verdict under the edit.
    pub holds: bool,
}

/// A row's change against the baseline, unedited and edited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowMove {
    pub experiment: String,
    pub params: Params,
    pub config: String,
    pub metric: String,
    pub change_pct: f64,
    pub edited_change_pct: f64,
}

impl Results {
    /// An empty document for schedlab `version` (pass the binary's
    /// `env!("CARGO_PKG_VERSION")`).
    pub fn new(version: impl Into<String>) -> Self {
        Results {
            schema: SCHEMA.to_string(),
            version: version.into(),
            experiments: Vec::new(),
            machine_edits: Vec::new(),
            config_switches: Vec::new(),
            sensitivity: Vec::new(),
        }
    }

    /// Pretty-printed JSON followed by a newline.
    pub fn to_json_pretty(&self) -> String {
        // Serialising these types cannot fail: maps have string keys and every
        // float is finite (non-finite floats would become `null`, not an error).
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parse a results.json document, checking `schema` first.
    ///
    /// The check reads only the top-level `schema` value and skips the rest
    /// without building it, so a large document is held once, in its typed form.
    pub fn from_json(text: &str) -> Result<Self, ReportError> {
        let head: Head = serde_json::from_str(text).map_err(|e| match e.classify() {
            // A document that is not an object has no schema to name.
            serde_json::error::Category::Data => ReportError::NotObject,
            _ => ReportError::Json(e),
        })?;
        match head.schema {
            Some(serde_json::Value::String(s)) if s == SCHEMA => {
                serde_json::from_str(text).map_err(|e| match e.classify() {
                    // A value of the wrong kind, or one that does not parse:
                    // name where.
                    serde_json::error::Category::Data | serde_json::error::Category::Syntax => {
                        let msg = e.to_string();
                        let reason = msg
                            .rsplit_once(" at line ")
                            .map_or(msg.as_str(), |(r, _)| r)
                            .to_string();
                        let field = json_path_at(text, e.line(), e.column());
                        if field.is_empty() {
                            ReportError::Json(e)
                        } else {
                            ReportError::Field {
                                field,
                                reason: format!("{reason} (line {})", e.line()),
                            }
                        }
                    }
                    _ => ReportError::Json(e),
                })
            }
            Some(serde_json::Value::String(found)) => Err(ReportError::Schema { found }),
            Some(other) => Err(ReportError::Schema {
                found: other.to_string(),
            }),
            None => Err(ReportError::Schema {
                found: String::new(),
            }),
        }
    }

    /// Write [`Results::to_json_pretty`] to `path` atomically: the text goes to a
    /// temporary file next to it which is then renamed, so a failure leaves no
    /// partial file behind.
    pub fn write_json(&self, path: &Path) -> Result<(), ReportError> {
        write_atomically(path, |f| {
            f.write_all(self.to_json_pretty().as_bytes())
                .and_then(|()| f.sync_all())
        })
        .map_err(|(path, source)| ReportError::Io { path, source })
    }
}

/// The temporary file an output at `path` is written to before it is
/// renamed into place: `path` with `.tmp` appended to its file name.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// `path` exists and is neither a regular file nor a directory: a device
/// such as `/dev/null`, or a FIFO. Such an output is written in place.
pub fn is_special_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes `path` through [`tmp_path`]: `write` fills the temporary file,
/// which is then renamed over `path`; on any failure the temporary file is
/// removed, so no partial output is left. A symbolic link is written
/// through: the file it points to is replaced, not the link. A path that
/// exists and is neither a regular file nor a directory (`/dev/null`, a
/// FIFO) is opened and written in place, as a shell redirection would. The
/// error names the file that failed.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), (PathBuf, std::io::Error)> {
    let resolved = path
        .is_symlink()
        .then(|| std::fs::canonicalize(path).ok())
        .flatten();
    let path = resolved.as_deref().unwrap_or(path);
    if is_special_file(path) {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| (path.to_path_buf(), e))?;
        return write(&mut f).map_err(|e| (path.to_path_buf(), e));
    }
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(|e| (tmp.clone(), e))?;
        write(&mut f).map_err(|e| (tmp.clone(), e))?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(|e| (path.to_path_buf(), e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// One metric an experiment reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// e.g. `copy`.
    pub name: String,
    /// e.g. `MB/s`.
    pub unit: String,
    /// Rates are higher-is-better (summarised by `hmean`), times and latencies not.
    pub higher_is_better: bool,
}

impl MetricSpec {
    /// A metric spec.
    pub fn new(name: impl Into<String>, unit: impl Into<String>, higher_is_better: bool) -> Self {
        MetricSpec {
            name: name.into(),
            unit: unit.into(),
            higher_is_better,
        }
    }
}

/// One experiment: a machine, a workload, several configs compared to a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResult {
    /// Experiment name, e.g. `kunpeng920-stream`.
    pub name: String,
    /// Machine preset.
    pub machine: String,
    /// Workload name.
    pub workload: String,
    /// The config the others are compared with; first in `configs`.
    pub baseline: String,
    /// Config names, baseline first.
    pub configs: Vec<String>,
    /// The metrics reported.
    pub metrics: Vec<MetricSpec>,
    /// One row per (params, config, metric).
    pub rows: Vec<Row>,
    /// Remarks about the whole experiment (omitted when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the runs were: the set-up the experiment mirrors, how many
    /// repetitions, and whether it was a `--quick` run (whose shorter runs
    /// keep the contract's parameter values as labels). Omitted when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub setup: String,
    /// The seed of each repetition, per point, the same under every
    /// configuration: `schedlab run --seed S` with the point's workload and
    /// a configuration reruns that repetition. Omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<PointSeeds>,
}

/// The repetitions' seeds of one point of an experiment, with what `run`
/// needs besides the experiment's machine and a configuration to rerun one:
/// `schedlab run --machine MACHINE --workload WORKLOAD [--cpus CPUS]
/// [--mem-node NODE] --config CONFIG --seed SEED`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointSeeds {
    /// The point's parameter values, as in its rows.
    pub params: Params,
    /// The point's workload as `run --workload` takes it.
    pub workload: String,
    /// The CPUs the workload was restricted to (`--cpus`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// Its memory node (`--mem-node`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_node: Option<u32>,
    /// Repetition i's seed at index i, in decimal: a string, since seeds
    /// use all 64 bits and JSON readers that hold numbers as doubles (jq,
    /// JavaScript) would round them past 2^53 and rerun another seed.
    pub seeds: Vec<String>,
}

/// The samples and summary of one (params, config, metric).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Parameter values, e.g. `{"threads": 4}`.
    pub params: Params,
    /// Config name.
    pub config: String,
    /// Metric name.
    pub metric: String,
    /// Per-repetition values (finite; unrounded).
    pub samples: Vec<f64>,
    /// `hmean` or `amean` of the samples; 0 when undefined (no samples, or
    /// negative samples for an `hmean`).
    pub mean: f64,
    /// Which mean: `hmean` for higher-is-better metrics, else `amean`.
    pub mean_kind: MeanKind,
    /// The mean's spread: mmtests' harmonic spread for `hmean`, the sample (n−1)
    /// standard deviation for `amean`; 0 when undefined (fewer than 2 samples).
    pub stddev: f64,
    /// Percent change against the baseline row with the same params and metric,
    /// positive = better; 0 for baseline rows and rows without a baseline.
    pub change_pct: f64,
    /// Whether the mean ± 1.96·stddev intervals of this row and its baseline do
    /// not overlap (see [`stats::significant`]); false for baseline rows.
    pub significant: bool,
    /// The published change for this row, when known (omitted otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_change_pct: Option<f64>,
    /// Why a value is a placeholder (omitted when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Row {
    /// The metric's full statistics of this row's samples.
    pub fn summary(&self) -> stats::Summary {
        stats::Summary::new(&self.samples, self.mean_kind == MeanKind::Hmean)
    }
}

/// One input row for [`ExperimentResult::from_samples`]: params, config, metric,
/// per-repetition samples.
pub type SampleRow = (Params, String, String, Vec<f64>);

/// Round to `digits` significant digits (decimal rounding, deterministic);
/// non-finite values become 0 / ±`f64::MAX` as in [`stats::clamp_finite`].
pub fn round_sig(x: f64, digits: usize) -> f64 {
    let x = stats::clamp_finite(x);
    if x == 0.0 {
        return 0.0;
    }
    let digits = digits.clamp(1, 17);
    let s = format!("{:.*e}", digits - 1, x);
    stats::clamp_finite(s.parse().unwrap_or(x))
}

/// Round to `decimals` decimal places (deterministic); non-finite values become
/// 0 / ±`f64::MAX`.
pub fn round_dp(x: f64, decimals: usize) -> f64 {
    let x = stats::clamp_finite(x);
    let s = format!("{:.*}", decimals.min(17), x);
    stats::clamp_finite(s.parse().unwrap_or(x))
}

impl ExperimentResult {
    /// Build an experiment from raw samples, computing each row's mean (`hmean`
    /// for higher-is-better metrics, else `amean`), stddev, `change_pct` against
    /// the baseline row with the same params and metric, and `significant`.
    ///
    /// Total, with these normalisations (each recorded in `notes` or a row's
    /// `note`):
    /// - `baseline` is moved (or added) to the front of `configs`; configs used by
    ///   samples but not listed are appended in order of first use;
    /// - metrics used by samples but not in `metrics` are appended as lower-is-better
    ///   with an empty unit;
    /// - non-finite samples (NaN, ±inf, not representable in JSON) are dropped;
    /// - input rows with the same (params, config, metric) are merged (samples
    ///   concatenated) into the first one's position.
    pub fn from_samples(
        name: impl Into<String>,
        machine: impl Into<String>,
        workload: impl Into<String>,
        baseline: impl Into<String>,
        configs: Vec<String>,
        metrics: Vec<MetricSpec>,
        samples: Vec<SampleRow>,
    ) -> Self {
        let baseline = baseline.into();
        let mut notes = Vec::new();
        let mut configs_out = vec![baseline.clone()];
        for c in configs {
            if !configs_out.contains(&c) {
                configs_out.push(c);
            }
        }
        let mut metrics = metrics;

        // Merge duplicate keys, keep first-appearance order. (`serde_json::Value`
        // is not `Ord`, so keys are found by a linear scan; experiments are small.)
        struct Merged {
            params: Params,
            config: String,
            metric: String,
            samples: Vec<f64>,
            dropped: usize,
        }
        let mut merged: Vec<Merged> = Vec::new();
        for (p, config, metric, xs) in samples {
            if !configs_out.contains(&config) {
                notes.push(format!("config `{config}` was not listed in configs"));
                configs_out.push(config.clone());
            }
            if !metrics.iter().any(|m| m.name == metric) {
                notes.push(format!(
                    "metric `{metric}` was not listed in metrics; assumed lower-is-better"
                ));
                metrics.push(MetricSpec::new(metric.clone(), "", false));
            }
            let i = match merged
                .iter()
                .position(|m| m.params == p && m.config == config && m.metric == metric)
            {
                Some(i) => i,
                None => {
                    merged.push(Merged {
                        params: p,
                        config,
                        metric,
                        samples: Vec::new(),
                        dropped: 0,
                    });
                    merged.len() - 1
                }
            };
            let entry = &mut merged[i];
            for x in xs {
                if x.is_finite() {
                    entry.samples.push(x);
                } else {
                    entry.dropped += 1;
                }
            }
        }

        let higher = |metric: &str| {
            metrics
                .iter()
                .find(|m| m.name == metric)
                .is_some_and(|m| m.higher_is_better)
        };
        // Unrounded (mean, stddev) per merged row.
        let unrounded: Vec<(Option<f64>, Option<f64>)> = merged
            .iter()
            .map(|m| {
                let kind = MeanKind::for_metric(higher(&m.metric));
                (kind.mean(&m.samples), kind.stddev(&m.samples))
            })
            .collect();

        let rows = merged
            .iter()
            .zip(&unrounded)
            .map(|(m, &(mean, sd))| {
                let hib = higher(&m.metric);
                let kind = MeanKind::for_metric(hib);
                let mut row_notes = Vec::new();
                if m.dropped > 0 {
                    row_notes.push(format!("{} non-finite sample(s) dropped", m.dropped));
                }
                if m.samples.is_empty() {
                    row_notes.push("no samples".to_string());
                } else if mean.is_none() {
                    row_notes.push("hmean undefined for negative samples; mean set to 0".into());
                }
                let (change_pct, significant) = if m.config == baseline {
                    (0.0, false)
                } else {
                    let base = merged.iter().zip(&unrounded).find(|(b, _)| {
                        b.config == baseline && b.metric == m.metric && b.params == m.params
                    });
                    match base {
                        Some((_, &(base_mean, base_sd))) => match (mean, base_mean) {
                            (Some(x), Some(b)) => (
                                stats::change_pct(x, b, hib),
                                stats::significant(x, sd, b, base_sd),
                            ),
                            _ => (0.0, false),
                        },
                        None => {
                            row_notes.push("no baseline row to compare with".to_string());
                            (0.0, false)
                        }
                    }
                };
                Row {
                    params: m.params.clone(),
                    config: m.config.clone(),
                    metric: m.metric.clone(),
                    samples: m.samples.clone(),
                    mean: round_sig(mean.unwrap_or(0.0), MEAN_SIG_DIGITS),
                    mean_kind: kind,
                    stddev: round_sig(sd.unwrap_or(0.0), MEAN_SIG_DIGITS),
                    change_pct: round_dp(change_pct, PCT_DECIMALS),
                    significant,
                    published_change_pct: None,
                    note: (!row_notes.is_empty()).then(|| row_notes.join("; ")),
                }
            })
            .collect();

        notes.dedup();
        ExperimentResult {
            name: name.into(),
            machine: machine.into(),
            workload: workload.into(),
            baseline,
            configs: configs_out,
            metrics,
            rows,
            notes,
            setup: String::new(),
            seeds: Vec::new(),
        }
    }

    /// The spec of metric `name`.
    pub fn metric(&self, name: &str) -> Option<&MetricSpec> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Whether higher is better for metric `name` (false for unknown metrics).
    pub fn higher_is_better(&self, metric: &str) -> bool {
        self.metric(metric).is_some_and(|m| m.higher_is_better)
    }

    /// The row for (params, config, metric).
    pub fn row(&self, params: &Params, config: &str, metric: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.params == *params && r.config == config && r.metric == metric)
    }

    /// The baseline row with the same params and metric as `row`.
    pub fn baseline_row(&self, row: &Row) -> Option<&Row> {
        self.row(&row.params, &self.baseline, &row.metric)
    }

    /// Record the published change (percent, positive = better) for a row, rounded
    /// like `change_pct`. Returns false (and changes nothing) when there is no such
    /// row or `change_pct` is not finite.
    pub fn set_published(
        &mut self,
        params: &Params,
        config: &str,
        metric: &str,
        change_pct: f64,
    ) -> bool {
        if !change_pct.is_finite() {
            return false;
        }
        match self
            .rows
            .iter_mut()
            .find(|r| r.params == *params && r.config == config && r.metric == metric)
        {
            Some(r) => {
                r.published_change_pct = Some(round_dp(change_pct, PCT_DECIMALS));
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_like() -> ExperimentResult {
        let t4 = params([("threads", 4)]);
        ExperimentResult::from_samples(
            "kunpeng920-stream",
            "kunpeng920",
            "stream",
            "vanilla",
            vec!["vanilla".into(), "cluster".into()],
            vec![MetricSpec::new("copy", "MB/s", true)],
            vec![
                (
                    t4.clone(),
                    "vanilla".into(),
                    "copy".into(),
                    vec![29800.1, 30011.7],
                ),
                (t4, "cluster".into(), "copy".into(), vec![32900.4, 32960.2]),
            ],
        )
    }

    #[test]
    fn builder_computes_contract_fields() {
        let e = stream_like();
        assert_eq!(e.rows.len(), 2);
        let base = &e.rows[0];
        assert_eq!(base.mean_kind, MeanKind::Hmean);
        assert_eq!(base.change_pct, 0.0);
        assert!(!base.significant);
        let hm = stats::hmean(&[29800.1, 30011.7]).unwrap();
        assert_eq!(base.mean, round_sig(hm, 6));
        let new = &e.rows[1];
        assert!(new.change_pct > 10.0 && new.change_pct < 10.2);
        assert!(new.significant);
        assert_eq!(e.baseline_row(new), Some(base));
    }

    #[test]
    fn lower_is_better_sign() {
        let p = Params::new();
        let e = ExperimentResult::from_samples(
            "x",
            "m",
            "w",
            "a",
            vec!["a".into(), "b".into(), "c".into()],
            vec![MetricSpec::new("time", "s", false)],
            vec![
                (p.clone(), "a".into(), "time".into(), vec![10.0, 10.0]),
                (p.clone(), "b".into(), "time".into(), vec![9.0, 9.0]),
                (p.clone(), "c".into(), "time".into(), vec![11.0, 11.0]),
            ],
        );
        assert_eq!(e.rows[0].mean_kind, MeanKind::Amean);
        assert_eq!(e.rows[1].change_pct, 10.0);
        assert_eq!(e.rows[2].change_pct, -10.0);
        assert!(e.rows[1].significant && e.rows[2].significant);
    }

    #[test]
    fn normalisations() {
        let p = params([("n", 1)]);
        let e = ExperimentResult::from_samples(
            "x",
            "m",
            "w",
            "base",
            vec!["other".into()],
            vec![],
            vec![
                (p.clone(), "other".into(), "lat".into(), vec![1.0, f64::NAN]),
                (p.clone(), "new".into(), "lat".into(), vec![2.0]),
                (p.clone(), "other".into(), "lat".into(), vec![3.0]),
            ],
        );
        assert_eq!(e.configs, ["base", "other", "new"]);
        assert_eq!(e.metrics, [MetricSpec::new("lat", "", false)]);
        assert_eq!(e.rows.len(), 2);
        assert_eq!(e.rows[0].samples, [1.0, 3.0]);
        assert!(e.rows[0]
            .note
            .as_deref()
            .unwrap()
            .contains("no baseline row"));
        assert!(e.rows[0].note.as_deref().unwrap().contains("1 non-finite"));
        assert_eq!(e.notes.len(), 2);
    }

    #[test]
    fn rounding() {
        assert_eq!(round_sig(29905.834, 6), 29905.8);
        assert_eq!(round_sig(0.000_512_345_67, 6), 0.000_512_346);
        assert_eq!(round_sig(-0.0, 6), 0.0);
        assert_eq!(round_sig(f64::NAN, 6), 0.0);
        assert_eq!(round_dp(10.034_999, 2), 10.03);
        assert_eq!(round_dp(-0.001, 2).to_bits(), 0.0_f64.to_bits());
        assert_eq!(round_dp(f64::INFINITY, 2), f64::MAX);
    }

    #[test]
    fn json_round_trip_and_schema_check() {
        let mut r = Results::new("0.1.0");
        r.experiments.push(stream_like());
        let text = r.to_json_pretty();
        assert_eq!(Results::from_json(&text).unwrap(), r);
        let other = text.replace(SCHEMA, "schedlab.run/1");
        assert!(matches!(
            Results::from_json(&other),
            Err(ReportError::Schema { .. })
        ));
        assert!(matches!(Results::from_json("{"), Err(ReportError::Json(_))));
        assert!(matches!(
            Results::from_json("[1]"),
            Err(ReportError::NotObject)
        ));
        assert!(matches!(
            Results::from_json("5"),
            Err(ReportError::NotObject)
        ));
        assert!(matches!(
            Results::from_json(r#"{"x": [1, {"y": 2}], "schema": 3}"#),
            Err(ReportError::Schema { found }) if found == "3"
        ));
        // A value of the wrong kind is named by its path in the document.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["experiments"][0]["rows"][1]["samples"][1] = serde_json::json!("NaN");
        let bad = serde_json::to_string_pretty(&v).unwrap();
        let e = Results::from_json(&bad).unwrap_err();
        assert!(
            matches!(&e, ReportError::Field { field, .. } if field == "experiments[0].rows[1].samples[1]"),
            "{e}"
        );
        assert!(e.to_string().contains("expected f64"), "{e}");
        // No schema at all reads as such, not as an empty string.
        let none = Results::from_json(r#"{"experiments": []}"#).unwrap_err();
        assert!(none.to_string().ends_with("found none"), "{none}");
    }

    /// The path of the value at a line and column: keys of the objects and
    /// indices of the arrays open there, through strings with escapes.
    #[test]
    fn json_paths_follow_keys_and_indices() {
        let text = "{\"a\": [1, {\"b\\\"q\": [true, \"x,]\"]}], \"c\": 2}";
        let at = |needle: &str| {
            let col = text.find(needle).unwrap() + needle.len();
            json_path_at(text, 1, col)
        };
        assert_eq!(at("\"x,]\""), "a[1].b\"q[1]");
        assert_eq!(at("true"), "a[1].b\"q[0]");
        assert_eq!(at("[1"), "a[0]");
        assert_eq!(at("\"c\": 2"), "c");
    }

    #[test]
    fn write_json_is_atomic() {
        let dir = std::env::temp_dir().join(format!("schedlab-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.json");
        let r = Results::new("0.1.0");
        r.write_json(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r.to_json_pretty());
        assert!(!dir.join("results.json.tmp").exists());
        let bad = dir.join("missing-dir").join("results.json");
        assert!(matches!(r.write_json(&bad), Err(ReportError::Io { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn published_figures() {
        let mut e = stream_like();
        let t4 = params([("threads", 4)]);
        assert!(e.set_published(&t4, "cluster", "copy", 10.034));
        assert!(!e.set_published(&t4, "nope", "copy", 1.0));
        assert!(!e.set_published(&t4, "cluster", "copy", f64::NAN));
        assert_eq!(e.rows[1].published_change_pct, Some(10.03));
    }
}
