//! Snapshot tests of the rendered tables and of results.json.

use schedlab_report::{
    params, render_experiment, render_summary, ExperimentResult, MetricSpec, Results,
    SummaryOptions, TableOptions,
};

/// A small STREAM-like experiment: two thread counts, two rate metrics.
fn stream() -> ExperimentResult {
    let mut rows = Vec::new();
    for (threads, scale) in [(4, 1.0), (12, 2.5)] {
        let p = params([("threads", threads)]);
        for (metric, base) in [("copy", 29900.0), ("triad", 31000.0)] {
            let b = base * scale;
            rows.push((
                p.clone(),
                "vanilla".to_string(),
                metric.to_string(),
                vec![b, b * 1.004, b * 0.997, b * 1.011, b * 0.992],
            ));
            // cluster: +10% at 4 threads (clear), +0.3% at 12 (noise).
            let gain = if threads == 4 { 1.10 } else { 1.003 };
            rows.push((
                p.clone(),
                "cluster".to_string(),
                metric.to_string(),
                vec![
                    b * gain,
                    b * gain * 0.995,
                    b * gain * 1.006,
                    b * gain * 1.001,
                    b * gain * 0.99,
                ],
            ));
        }
    }
    ExperimentResult::from_samples(
        "kunpeng920-stream",
        "kunpeng920",
        "stream",
        "vanilla",
        vec!["vanilla".into(), "cluster".into()],
        vec![
            MetricSpec::new("copy", "MB/s", true),
            MetricSpec::new("triad", "MB/s", true),
        ],
        rows,
    )
}

/// A lower-is-better experiment with three configs, string params and a config
/// with a single sample (undefined spread).
fn runtime() -> ExperimentResult {
    let mut rows = Vec::new();
    for (bench, base) in [("flac", 0.512), ("pybench", 1.25)] {
        let p = params([("bench", bench)]);
        rows.push((
            p.clone(),
            "vanilla".into(),
            "runtime".into(),
            vec![base, base * 1.01, base * 0.99],
        ));
        rows.push((
            p.clone(),
            "cluster-naive".into(),
            "runtime".into(),
            vec![base * 1.05, base * 1.06, base * 1.04],
        ));
        rows.push((p, "cluster".into(), "runtime".into(), vec![base * 0.9]));
    }
    ExperimentResult::from_samples(
        "alderlake-single",
        "alderlake",
        "single",
        "vanilla",
        vec!["vanilla".into(), "cluster-naive".into(), "cluster".into()],
        vec![MetricSpec::new("runtime", "s", false)],
        rows,
    )
}

#[test]
fn stream_table() {
    insta::assert_snapshot!(render_experiment(&stream(), &TableOptions::default()));
}

#[test]
fn runtime_table() {
    insta::assert_snapshot!(render_experiment(&runtime(), &TableOptions::default()));
}

#[test]
fn summary_table() {
    let mut s = stream();
    s.set_published(&params([("threads", 4)]), "cluster", "copy", 10.03);
    s.set_published(&params([("threads", 4)]), "cluster", "triad", 2.1);
    s.set_published(&params([("threads", 12)]), "cluster", "copy", -8.0);
    let r = runtime();
    insta::assert_snapshot!(render_summary(&[s, r], &SummaryOptions::default()));
}

#[test]
fn results_json() {
    let mut results = Results::new("0.1.0");
    let mut e = ExperimentResult::from_samples(
        "kunpeng920-stream",
        "kunpeng920",
        "stream",
        "vanilla",
        vec!["vanilla".into(), "cluster".into()],
        vec![MetricSpec::new("copy", "MB/s", true)],
        vec![
            (
                params([("threads", 4)]),
                "vanilla".into(),
                "copy".into(),
                vec![29800.1, 30011.7],
            ),
            (
                params([("threads", 4)]),
                "cluster".into(),
                "copy".into(),
                vec![32900.4, 32960.2],
            ),
        ],
    );
    e.set_published(&params([("threads", 4)]), "cluster", "copy", 10.03);
    results.experiments.push(e);
    let text = results.to_json_pretty();
    assert_eq!(Results::from_json(&text).unwrap(), results);
    insta::assert_snapshot!(text);
}

#[test]
fn mmtests_example_line() {
    // The line quoted from a published mmtests comparison.
    let e = ExperimentResult::from_samples(
        "x",
        "m",
        "stream",
        "vanilla",
        vec!["vanilla".into(), "cluster".into()],
        vec![MetricSpec::new("copy", "MB/s", true)],
        vec![
            (
                params([("threads", 4)]),
                "vanilla".into(),
                "copy".into(),
                vec![29929.64; 3],
            ),
            (
                params([("threads", 4)]),
                "cluster".into(),
                "copy".into(),
                vec![32932.68; 3],
            ),
        ],
    );
    let table = render_experiment(
        &e,
        &TableOptions {
            precision: None,
            title: false,
        },
    );
    let line = table.lines().find(|l| l.starts_with("Hmean")).unwrap();
    assert_eq!(
        line,
        "Hmean     copy-4    29929.64 (   0.00%)    32932.68 *  10.03%*"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0].trim(), "m                      m");
    assert_eq!(lines[1].trim(), "vanilla                cluster");
}
