//! Published figures of the reference patch sets (patch-sets.md), used only to
//! print them next to ours. Nothing in the simulation reads them.

use schedlab_report::Params;

/// Published % change (positive = better) of `config` against the baseline at
/// `params`, per metric, where the cover letter gives one.
pub fn published_changes(
    experiment: &str,
    params: &Params,
    config: &str,
) -> Option<Vec<(&'static str, f64)>> {
    match (experiment, config) {
        ("kunpeng920-stream", "cluster") => {
            let threads = params.get("threads")?.as_u64()?;
            // S1 cover letter, STREAM on one node, Hmean MB/s change with CLS.
            let row: [f64; 4] = match threads {
                4 => [10.03, 9.54, 19.85, 17.41],
                6 => [5.08, 4.98, 12.11, 12.35],
                12 => [2.24, 1.73, 2.97, 2.89],
                _ => return None,
            };
            Some(vec![
                ("copy", row[0]),
                ("scale", row[1]),
                ("add", row[2]),
                ("triad", row[3]),
            ])
        }
        ("kunpeng920-pbzip2", "cluster") => {
            let t = params.get("threads")?.as_u64()?;
            let pct = match t {
                2 => 2.52,
                5 => 2.23,
                8 => 3.47,
                12 => 4.37,
                21 => 5.26,
                30 => 4.10,
                48 => 2.17,
                79 => 0.66,
                96 => 1.62,
                _ => return None,
            };
            Some(vec![("tput", pct)])
        }
        ("kunpeng920-pbzip2-node", "cluster") => {
            let t = params.get("threads")?.as_u64()?;
            let pct = match t {
                2 => 2.03,
                4 => 5.62,
                6 => 8.31,
                8 => 5.95,
                12 => 2.83,
                18 => -0.27,
                24 => -0.32,
                _ => return None,
            };
            Some(vec![("tput", pct)])
        }
        ("kunpeng920-kernbench", "cluster") => {
            // Elapsed time, positive = faster (the cover letter gives no
            // per-row user/system figures).
            let t = params.get("threads")?.as_u64()?;
            let pct = match t {
                24 => 0.23,
                48 => 0.38,
                96 => 0.08,
                _ => return None,
            };
            Some(vec![("elsp", pct)])
        }
        _ => None,
    }
}

/// Published absolute baseline figures for experiment tables (MB/s etc.),
/// `(params value, metric, vanilla, patched)`.
pub fn published_absolute(experiment: &str) -> &'static [(u64, &'static str, f64, f64)] {
    match experiment {
        "kunpeng920-stream" => &[
            (4, "copy", 29929.64, 32932.68),
            (4, "scale", 29861.10, 32710.58),
            (4, "add", 27034.42, 32400.68),
            (4, "triad", 27225.26, 31965.36),
            (6, "copy", 40330.24, 42377.68),
            (6, "scale", 40196.42, 42197.90),
            (6, "add", 37427.00, 41960.78),
            (6, "triad", 37841.36, 42513.64),
            (12, "copy", 52639.82, 53818.04),
            (12, "scale", 52350.30, 53253.38),
            (12, "add", 53607.68, 55198.82),
            (12, "triad", 54776.66, 56360.40),
        ],
        _ => &[],
    }
}

/// A qualitative claim about an experiment's outcome, as patch-sets.md states
/// the shape to reproduce; evaluated on our results (display only).
pub struct ShapeClaim {
    pub description: &'static str,
    pub check: fn(&schedlab_report::ExperimentResult) -> Option<bool>,
}

/// Our change % (positive = better) for `config` at `param = value`, metric.
pub fn change_at(
    r: &schedlab_report::ExperimentResult,
    config: &str,
    metric: &str,
    param: &str,
    value: u64,
) -> Option<f64> {
    r.rows
        .iter()
        .find(|row| {
            row.config == config
                && row.metric == metric
                && row.params.get(param).and_then(|v| v.as_u64()) == Some(value)
        })
        .map(|row| row.change_pct)
}

/// The shape claims of an experiment.
pub fn shape_claims(experiment: &str) -> Vec<ShapeClaim> {
    match experiment {
        "kunpeng920-stream" => vec![
            ShapeClaim {
                description: "cluster beats vanilla at 4 threads (copy)",
                check: |r| Some(change_at(r, "cluster", "copy", "threads", 4)? > 0.0),
            },
            ShapeClaim {
                description: "the gain shrinks from 4 to 6 to 12 threads (copy)",
                check: |r| {
                    let g4 = change_at(r, "cluster", "copy", "threads", 4)?;
                    let g6 = change_at(r, "cluster", "copy", "threads", 6)?;
                    let g12 = change_at(r, "cluster", "copy", "threads", 12)?;
                    Some(g4 > g6 && g6 >= g12)
                },
            },
            ShapeClaim {
                description: "magnitude at 4 threads within 2x of the published +10.03% (copy)",
                check: |r| {
                    let g = change_at(r, "cluster", "copy", "threads", 4)?;
                    Some(g > 10.03 / 2.0 && g < 10.03 * 2.0)
                },
            },
        ],
        "kunpeng920-pbzip2-node" => vec![
            ShapeClaim {
                description: "cluster gains at medium load (4-8 threads on 24 CPUs)",
                check: |r| {
                    let best = [4, 6, 8]
                        .iter()
                        .filter_map(|&t| change_at(r, "cluster", "tput", "threads", t))
                        .fold(f64::MIN, f64::max);
                    Some(best > 0.0)
                },
            },
            ShapeClaim {
                description:
                    "the gain shrinks as the node fills up (24 threads below the 4-8 best)",
                check: |r| {
                    let best = [4, 6, 8]
                        .iter()
                        .filter_map(|&t| change_at(r, "cluster", "tput", "threads", t))
                        .fold(f64::MIN, f64::max);
                    Some(change_at(r, "cluster", "tput", "threads", 24)? < best)
                },
            },
        ],
        "kunpeng920-kernbench" => vec![ShapeClaim {
            description: "near zero for CPU-bound work (|elapsed change| < 1% at every -j)",
            check: |r| {
                let all = [24, 48, 96]
                    .iter()
                    .map(|&t| change_at(r, "cluster", "elsp", "threads", t))
                    .collect::<Option<Vec<f64>>>()?;
                Some(all.iter().all(|g| g.abs() < 1.0))
            },
        }],
        _ => Vec::new(),
    }
}
