//! SVG plots of an experiment's results, in the spirit of mmtests' graphs:
//! per metric, the mean of every config across the experiment's points
//! (with ± one spread as whiskers), and below it, where published changes are
//! known, our change against the published one for each compared config.
//!
//! An experiment whose points have two or more parameters is split into one
//! plot per value of its first parameter (e.g. `exynos5422-parsec`: one plot
//! per benchmark, threads along the x axis). Plots are rendered from
//! results.json rows only, so `schedlab plot` can redraw any results file.

use crate::results::{ExperimentResult, Row};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One rendered plot: a file stem (`<experiment>-<metric>[-<key>-<value>]`)
/// and its SVG document.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub stem: String,
    pub svg: String,
}

/// Errors while drawing (the SVG backend writes to memory, so these mean
/// malformed input such as an empty series).
#[derive(Debug, thiserror::Error)]
#[error("plotting {stem}: {reason}")]
pub struct PlotError {
    pub stem: String,
    pub reason: String,
}

const WIDTH: u32 = 900;
const HEIGHT_ONE: u32 = 420;
const HEIGHT_TWO: u32 = 720;

/// A colour per config, in config order (baseline first).
fn colour(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 6] = [
        RGBColor(0x44, 0x44, 0x44),
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0x94, 0x67, 0xbd),
        RGBColor(0xff, 0x7f, 0x0e),
    ];
    PALETTE[i % PALETTE.len()]
}

/// A parameter value as a label (`4`, `streamcluster`).
fn value_label(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// File-name-safe text.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The rows of one plot: a group (value of the split key) of one metric.
struct Group<'a> {
    title: String,
    stem: String,
    /// x labels in order of first appearance.
    points: Vec<String>,
    rows: Vec<(usize, &'a Row)>,
}

fn groups<'a>(e: &'a ExperimentResult, metric: &str) -> Vec<Group<'a>> {
    let rows: Vec<&Row> = e.rows.iter().filter(|r| r.metric == metric).collect();
    let split_key = rows
        .first()
        .filter(|r| r.params.len() >= 2)
        .and_then(|r| r.params.keys().next().cloned());
    let mut out: Vec<Group> = Vec::new();
    for r in rows {
        let (gname, label) = match &split_key {
            Some(k) => {
                let g = r.params.get(k).map(value_label).unwrap_or_default();
                let rest: Vec<String> = r
                    .params
                    .iter()
                    .filter(|(key, _)| *key != k)
                    .map(|(key, v)| format!("{key}={}", value_label(v)))
                    .collect();
                (format!("{k}={g}"), rest.join(","))
            }
            None => {
                let all: Vec<String> = r
                    .params
                    .iter()
                    .map(|(key, v)| format!("{key}={}", value_label(v)))
                    .collect();
                (String::new(), all.join(","))
            }
        };
        let gi = match out.iter().position(|g| g.title == gname) {
            Some(i) => i,
            None => {
                let stem = if gname.is_empty() {
                    slug(&format!("{}-{metric}", e.name))
                } else {
                    slug(&format!("{}-{metric}-{}", e.name, gname.replace('=', "-")))
                };
                out.push(Group {
                    title: gname.clone(),
                    stem,
                    points: Vec::new(),
                    rows: Vec::new(),
                });
                out.len() - 1
            }
        };
        let g = &mut out[gi];
        let label = if label.is_empty() { "-".into() } else { label };
        let xi = match g.points.iter().position(|p| *p == label) {
            Some(i) => i,
            None => {
                g.points.push(label);
                g.points.len() - 1
            }
        };
        g.rows.push((xi, r));
    }
    out
}

/// Short x labels: `threads=4` → `4` when every label has the same key.
fn short_labels(points: &[String]) -> (String, Vec<String>) {
    let key = points
        .first()
        .and_then(|p| p.split_once('=').map(|(k, _)| k.to_string()));
    match key {
        Some(k)
            if points.iter().all(|p| {
                p.split_once('=')
                    .is_some_and(|(pk, v)| pk == k && !v.contains(','))
            }) =>
        {
            let vals = points
                .iter()
                .map(|p| p.split_once('=').map_or(p.clone(), |(_, v)| v.to_string()))
                .collect();
            (k, vals)
        }
        _ => ("point".into(), points.to_vec()),
    }
}

fn range(values: impl Iterator<Item = f64>, include_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if include_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    let pad = ((hi - lo) * 0.08)
        .max(hi.abs().max(lo.abs()) * 0.02)
        .max(1e-9);
    (lo - pad, hi + pad)
}

/// Renders every plot of an experiment.
pub fn plot_experiment(e: &ExperimentResult) -> Result<Vec<Plot>, PlotError> {
    let mut plots = Vec::new();
    for m in &e.metrics {
        for g in groups(e, &m.name) {
            if g.rows.is_empty() {
                continue;
            }
            let unit = if m.unit.is_empty() {
                String::new()
            } else {
                format!(" ({})", m.unit)
            };
            let better = if m.higher_is_better {
                "higher is better"
            } else {
                "lower is better"
            };
            // An ad-hoc comparison is named by its workload too.
            let name = if e.name == "compare" {
                format!("compare ({})", e.workload)
            } else {
                e.name.clone()
            };
            let title = if g.title.is_empty() {
                format!("{name} on {}: {}{unit}, {better}", e.machine, m.name)
            } else {
                format!(
                    "{name} on {}, {}: {}{unit}, {better}",
                    e.machine, g.title, m.name
                )
            };
            let svg =
                draw(e, &g, &title, &format!("{}{unit}", m.name)).map_err(|reason| PlotError {
                    stem: g.stem.clone(),
                    reason,
                })?;
            plots.push(Plot {
                stem: g.stem.clone(),
                svg,
            });
        }
    }
    Ok(plots)
}

fn draw(e: &ExperimentResult, g: &Group, title: &str, y_desc: &str) -> Result<String, String> {
    let has_published = g.rows.iter().any(|(_, r)| r.published_change_pct.is_some());
    let height = if has_published {
        HEIGHT_TWO
    } else {
        HEIGHT_ONE
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| x.to_string())?;
        let root = root
            .titled(title, ("sans-serif", 18))
            .map_err(|x| x.to_string())?;
        let (top, bottom) = if has_published {
            let (a, b) = root.split_vertically(height * 52 / 100);
            (a, Some(b))
        } else {
            (root, None)
        };
        means_panel(e, g, &top, y_desc)?;
        if let Some(b) = bottom {
            change_panel(e, g, &b)?;
        }
        top.present().map_err(|x| x.to_string())?;
    }
    Ok(svg)
}

/// A chart of one panel: points along x (categorical), values along y.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Builds a panel's axes: the points' labels along x, `y_range` along y.
fn panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    points: &[String],
    y_desc: &str,
    (lo, hi): (f64, f64),
) -> Result<Chart<'a, 'b>, String> {
    let (x_desc, labels) = short_labels(points);
    let n = points.len();
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), lo..hi)
        .map_err(|x| x.to_string())?;
    let fmt = x_formatter(&labels);
    chart
        .configure_mesh()
        .x_labels(n.min(40))
        .x_label_formatter(&fmt)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(|x| x.to_string())?;
    Ok(chart)
}

/// Draws the legend of the series drawn so far.
fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|x| x.to_string())
}

fn x_formatter(labels: &[String]) -> impl Fn(&f64) -> String + '_ {
    move |x: &f64| {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        labels.get(i as usize).cloned().unwrap_or_default()
    }
}

fn means_panel(
    e: &ExperimentResult,
    g: &Group,
    area: &DrawingArea<SVGBackend, Shift>,
    y_desc: &str,
) -> Result<(), String> {
    let y_range = range(
        g.rows
            .iter()
            .flat_map(|(_, r)| [r.mean - r.stddev, r.mean + r.stddev]),
        false,
    );
    let mut chart = panel(area, &g.points, y_desc, y_range)?;
    for (ci, config) in e.configs.iter().enumerate() {
        let c = colour(ci);
        let mut pts: Vec<(usize, &Row)> = g
            .rows
            .iter()
            .filter(|(_, r)| r.config == *config)
            .map(|(x, r)| (*x, *r))
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by_key(|(x, _)| *x);
        let line: Vec<(f64, f64)> = pts.iter().map(|(x, r)| (*x as f64, r.mean)).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))
            .map_err(|x| x.to_string())?
            .label(config.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(line.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(|x| x.to_string())?;
        chart
            .draw_series(pts.iter().filter(|(_, r)| r.stddev > 0.0).map(|(x, r)| {
                ErrorBar::new_vertical(
                    *x as f64,
                    r.mean - r.stddev,
                    r.mean,
                    r.mean + r.stddev,
                    c.stroke_width(1),
                    6,
                )
            }))
            .map_err(|x| x.to_string())?;
    }
    legend(&mut chart)
}

fn change_panel(
    e: &ExperimentResult,
    g: &Group,
    area: &DrawingArea<SVGBackend, Shift>,
) -> Result<(), String> {
    let n = g.points.len();
    let compared: Vec<(usize, &Row)> = g
        .rows
        .iter()
        .filter(|(_, r)| r.config != e.baseline)
        .map(|(x, r)| (*x, *r))
        .collect();
    let y_range = range(
        compared
            .iter()
            .flat_map(|(_, r)| [Some(r.change_pct), r.published_change_pct])
            .flatten(),
        true,
    );
    let y_desc = format!("change vs {} (%, + = better)", e.baseline);
    let mut chart = panel(area, &g.points, &y_desc, y_range)?;
    chart
        .draw_series(LineSeries::new(
            [(-0.5, 0.0), (n as f64 - 0.5, 0.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(|x| x.to_string())?;
    for (ci, config) in e.configs.iter().enumerate() {
        if *config == e.baseline {
            continue;
        }
        let c = colour(ci);
        let mut pts: Vec<(usize, &Row)> = compared
            .iter()
            .filter(|(_, r)| r.config == *config)
            .copied()
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by_key(|(x, _)| *x);
        let ours: Vec<(f64, f64)> = pts.iter().map(|(x, r)| (*x as f64, r.change_pct)).collect();
        chart
            .draw_series(LineSeries::new(ours.clone(), c.stroke_width(2)))
            .map_err(|x| x.to_string())?
            .label(format!("{config} (ours)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(ours.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(|x| x.to_string())?;
        let published: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|(x, r)| r.published_change_pct.map(|p| (*x as f64, p)))
            .collect();
        if published.is_empty() {
            continue;
        }
        chart
            .draw_series(DashedLineSeries::new(
                published.clone(),
                6,
                4,
                c.stroke_width(1),
            ))
            .map_err(|x| x.to_string())?
            .label(format!("{config} (published)"))
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (7, 0)], c.stroke_width(1))
                    + PathElement::new(vec![(11, 0), (18, 0)], c.stroke_width(1))
            });
        chart
            .draw_series(
                published
                    .iter()
                    .map(|&p| Circle::new(p, 4, c.stroke_width(1))),
            )
            .map_err(|x| x.to_string())?;
    }
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{params, MetricSpec};

    fn experiment(with_published: bool) -> ExperimentResult {
        let mut rows = Vec::new();
        for bench in ["a", "b"] {
            for threads in [1, 2, 4] {
                for (config, base) in [("vanilla", 10.0), ("patched", 8.0)] {
                    rows.push((
                        params([
                            ("bench", serde_json::json!(bench)),
                            ("threads", serde_json::json!(threads)),
                        ]),
                        config.to_string(),
                        "time".to_string(),
                        vec![base / threads as f64, base / threads as f64 * 1.02],
                    ));
                }
            }
        }
        let mut e = ExperimentResult::from_samples(
            "demo",
            "exynos5422",
            "parsec",
            "vanilla",
            vec!["vanilla".into(), "patched".into()],
            vec![MetricSpec::new("time", "s", false)],
            rows,
        );
        if with_published {
            let p = params([
                ("bench", serde_json::json!("a")),
                ("threads", serde_json::json!(2)),
            ]);
            assert!(e.set_published(&p, "patched", "time", 15.0));
        }
        e
    }

    #[test]
    fn two_parameter_experiments_split_by_the_first_one() {
        let plots = plot_experiment(&experiment(false)).expect("plots");
        let stems: Vec<&str> = plots.iter().map(|p| p.stem.as_str()).collect();
        assert_eq!(stems, ["demo-time-bench-a", "demo-time-bench-b"]);
        for p in &plots {
            assert!(p.svg.starts_with("<svg"), "{}", &p.svg[..40]);
            assert!(p.svg.contains("vanilla") && p.svg.contains("patched"));
            // threads along x, as short labels.
            assert!(p.svg.contains("\n4\n</text>"));
            assert!(!p.svg.contains("published"));
        }
    }

    #[test]
    fn published_changes_get_their_own_panel() {
        let plots = plot_experiment(&experiment(true)).expect("plots");
        assert!(plots[0].svg.contains("patched (published)"));
        assert!(plots[0].svg.contains("change vs vanilla"));
        assert!(!plots[1].svg.contains("published"));
    }

    #[test]
    fn plots_are_deterministic() {
        let a = plot_experiment(&experiment(true)).expect("plots");
        let b = plot_experiment(&experiment(true)).expect("plots");
        assert_eq!(a, b);
    }
}
