//! Property: whatever the samples (empty, zeros, negative, huge, tiny, NaN, inf),
//! building an experiment, its JSON and its tables never panics, and the JSON holds
//! only finite numbers (no `null`, which is how serde_json writes NaN/inf).

use proptest::prelude::*;
use schedlab_report::{
    params, render_experiment, render_summary, stats, ExperimentResult, MetricSpec, Results,
    SummaryOptions, TableOptions,
};

fn sample() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(f64::MAX),
        Just(-f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(1.0),
        0.0..1e6_f64,
        -1e6..1e6_f64,
        any::<f64>(),
    ]
}

fn samples() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(sample(), 0..8)
}

fn check_finite(v: &serde_json::Value) -> Result<(), String> {
    match v {
        serde_json::Value::Null => Err("null in JSON".into()),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(()),
            _ => Err(format!("bad number {n}")),
        },
        serde_json::Value::Array(a) => a.iter().try_for_each(check_finite),
        serde_json::Value::Object(o) => o.values().try_for_each(check_finite),
        _ => Ok(()),
    }
}

proptest! {
    #[test]
    fn never_nan_or_inf(
        a in samples(), b in samples(), c in samples(), d in samples(),
        published in sample(),
    ) {
        let p = params([("threads", 4)]);
        let mut e = ExperimentResult::from_samples(
            "exp", "machine", "workload", "base",
            vec!["base".into(), "new".into()],
            vec![MetricSpec::new("rate", "MB/s", true), MetricSpec::new("time", "s", false)],
            vec![
                (p.clone(), "base".into(), "rate".into(), a.clone()),
                (p.clone(), "new".into(), "rate".into(), b.clone()),
                (p.clone(), "base".into(), "time".into(), c.clone()),
                (p.clone(), "new".into(), "time".into(), d.clone()),
            ],
        );
        e.set_published(&p, "new", "rate", published);
        let mut r = Results::new("0.1.0");
        r.experiments.push(e.clone());
        let text = r.to_json_pretty();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(check_finite(&v), Ok(()));
        prop_assert_eq!(Results::from_json(&text).unwrap(), r);

        for out in [
            render_experiment(&e, &TableOptions::default()),
            render_experiment(&e, &TableOptions { precision: Some(0), title: false }),
            render_summary(&[e.clone()], &SummaryOptions::default()),
        ] {
            let lower = out.to_lowercase();
            prop_assert!(!lower.contains("nan") && !lower.contains("inf"), "{}", out);
        }

        // The statistics themselves.
        for xs in [&a, &b, &c, &d] {
            for hib in [true, false] {
                let s = stats::Summary::new(xs, hib);
                for x in [s.min, s.mean, s.stddev, s.max, s.best_mean, Some(s.coeffvar)]
                    .into_iter()
                    .flatten()
                {
                    prop_assert!(x.is_finite());
                }
            }
            for p in [0.0, 50.0, 95.0, 100.0] {
                prop_assert!(stats::percentile(xs, p).into_iter().all(f64::is_finite));
            }
        }
        for (x, y) in [(a.first(), b.first()), (c.first(), d.first())] {
            let (x, y) = (*x.unwrap_or(&0.0), *y.unwrap_or(&0.0));
            prop_assert!(stats::pdiff(x, y).is_finite());
            prop_assert!(stats::pndiff(x, y).is_finite());
            prop_assert!(stats::cidiff(x, (x - 1.0, x + 1.0), y, (y, y)).is_finite());
            let _ = stats::significant(x, Some(x), y, Some(y));
        }
    }
}
