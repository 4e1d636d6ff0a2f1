//! Summary statistics following mmtests' conventions (`bin/lib/MMTests/Stat.pm`,
//! `Summarise.pm`, `Compare.pm`).
//!
//! Every function here is total: it never panics and never returns NaN or an
//! infinity.
//!
//! - Non-finite inputs (NaN, ±inf) are ignored, as if they were not in the slice.
//! - A statistic that does not exist for the input (the mean of nothing, the sample
//!   standard deviation of one value, the harmonic mean of negative values) is
//!   `None`. Statistics that mmtests turns into 0 in that case (`coeffvar`, the
//!   percent differences) return 0 here too.
//! - A result too large for `f64` is clamped to `±f64::MAX`.

use serde::{Deserialize, Serialize};

/// `qnorm(0.975)`: the two-sided 95% normal quantile mmtests gets from R (≈ 1.96).
pub const Z_975: f64 = 1.959_963_984_540_054;

/// The percentage of best samples kept by the `BHmean-95` / `BAmean-95` rows.
pub const BEST_PERCENT: f64 = 95.0;

/// Which mean summarises a metric. mmtests uses the harmonic mean for metrics where
/// higher is better (rates) and the arithmetic mean otherwise (times, latencies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeanKind {
    /// Harmonic mean (`hmean`).
    Hmean,
    /// Arithmetic mean (`amean`).
    Amean,
}

impl MeanKind {
    /// `Hmean` when higher is better, else `Amean` (mmtests).
    pub fn for_metric(higher_is_better: bool) -> Self {
        if higher_is_better {
            MeanKind::Hmean
        } else {
            MeanKind::Amean
        }
    }

    /// The name used in results.json: `"hmean"` or `"amean"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MeanKind::Hmean => "hmean",
            MeanKind::Amean => "amean",
        }
    }

    /// Mean row label in comparison tables: `Hmean` / `Amean`.
    pub fn label(self) -> &'static str {
        match self {
            MeanKind::Hmean => "Hmean",
            MeanKind::Amean => "Amean",
        }
    }

    /// Spread row label: `HStddev` / `Stddev` (mmtests since commit 8a0e63a2 labels
    /// the harmonic spread `HStddev`).
    pub fn stddev_label(self) -> &'static str {
        match self {
            MeanKind::Hmean => "HStddev",
            MeanKind::Amean => "Stddev",
        }
    }

    /// Coefficient-of-variation row label: `HCoeffVar` / `CoeffVar`.
    pub fn coeffvar_label(self) -> &'static str {
        match self {
            MeanKind::Hmean => "HCoeffVar",
            MeanKind::Amean => "CoeffVar",
        }
    }

    /// Best-95% mean row label: `BHmean-95` / `BAmean-95`.
    pub fn best_label(self) -> &'static str {
        match self {
            MeanKind::Hmean => "BHmean-95",
            MeanKind::Amean => "BAmean-95",
        }
    }

    /// This kind of mean of `xs` ([`hmean`] or [`amean`]).
    pub fn mean(self, xs: &[f64]) -> Option<f64> {
        match self {
            MeanKind::Hmean => hmean(xs),
            MeanKind::Amean => amean(xs),
        }
    }

    /// The spread that goes with this mean ([`hstddev`] or [`stddev`]).
    pub fn stddev(self, xs: &[f64]) -> Option<f64> {
        match self {
            MeanKind::Hmean => hstddev(xs),
            MeanKind::Amean => stddev(xs),
        }
    }
}

/// Replace NaN by 0 and ±inf by ±`f64::MAX`; also turns -0.0 into 0.0.
pub fn clamp_finite(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        0.0
    } else if x == f64::INFINITY {
        f64::MAX
    } else if x == f64::NEG_INFINITY {
        -f64::MAX
    } else {
        x
    }
}

/// The finite values of `xs`, in order.
pub fn finite(xs: &[f64]) -> Vec<f64> {
    xs.iter().copied().filter(|x| x.is_finite()).collect()
}

fn max_abs(xs: &[f64]) -> f64 {
    xs.iter().fold(0.0_f64, |m, x| m.max(x.abs()))
}

/// Arithmetic mean. `None` when there is no finite value.
pub fn amean(xs: &[f64]) -> Option<f64> {
    let v = finite(xs);
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let sum: f64 = v.iter().sum();
    if sum.is_finite() {
        return Some(clamp_finite(sum / n));
    }
    // The plain sum overflowed: sum scaled values instead.
    let scale = max_abs(&v);
    let scaled: f64 = v.iter().map(|x| x / scale).sum();
    Some(clamp_finite(scaled / n * scale))
}

/// Harmonic mean `n / Σ 1/x`.
///
/// `None` when there is no finite value or any value is negative (mmtests returns
/// NaN for any value ≤ 0). A zero value gives `Some(0.0)`, the limit of the harmonic
/// mean as that value goes to 0 (a run with no throughput drags the mean to 0).
pub fn hmean(xs: &[f64]) -> Option<f64> {
    let v = finite(xs);
    if v.is_empty() || v.iter().any(|&x| x < 0.0) {
        return None;
    }
    if v.contains(&0.0) {
        return Some(0.0);
    }
    let inv: f64 = v.iter().map(|x| 1.0 / x).sum();
    // `inv` is > 0 here; it may be +inf for subnormal inputs, giving 0.
    Some(clamp_finite(v.len() as f64 / inv))
}

/// Sample standard deviation (divisor n−1), mmtests' `Stddev` of an `Amean`.
/// `None` for fewer than two finite values.
pub fn stddev(xs: &[f64]) -> Option<f64> {
    let v = finite(xs);
    if v.len() < 2 {
        return None;
    }
    let mean = amean(&v)?;
    let dof = (v.len() - 1) as f64;
    let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
    if ss.is_finite() {
        return Some(clamp_finite((ss / dof).sqrt()));
    }
    // Overflow: work on values scaled into [-1, 1].
    let scale = max_abs(&v);
    let m = mean / scale;
    let ss: f64 = v.iter().map(|x| (x / scale - m) * (x / scale - m)).sum();
    Some(clamp_finite((ss / dof).sqrt() * scale))
}

/// mmtests' spread of a harmonic mean `H` (shown as `HStddev`):
/// `sqrt(Σ(1/x − 1/H)² · H⁴ / n)`.
///
/// Computed in the algebraically identical, overflow-free form
/// `H · sqrt(Σ(H/x − 1)² / n)` (note 0 < H/x ≤ n). `None` for fewer than two
/// finite values, or when [`hmean`] is `None` or 0 (a zero value makes 1/x
/// infinite).
pub fn hstddev(xs: &[f64]) -> Option<f64> {
    let v = finite(xs);
    if v.len() < 2 {
        return None;
    }
    let h = hmean(&v)?;
    if h == 0.0 {
        return None;
    }
    let n = v.len() as f64;
    let ss: f64 = v
        .iter()
        .map(|x| {
            let d = h / x - 1.0;
            d * d
        })
        .sum();
    Some(clamp_finite(h * (ss / n).sqrt()))
}

/// Coefficient of variation in percent, `100 · stddev / mean`; 0 when the mean is
/// 0 or either input is not finite (mmtests: NaN stddev counts as 0, mean 0 → 0).
pub fn coeffvar(stddev: f64, mean: f64) -> f64 {
    if !stddev.is_finite() || !mean.is_finite() || mean == 0.0 {
        return 0.0;
    }
    clamp_finite(stddev * 100.0 / mean)
}

/// Smallest finite value.
pub fn min(xs: &[f64]) -> Option<f64> {
    finite(xs).into_iter().reduce(f64::min)
}

/// Largest finite value.
pub fn max(xs: &[f64]) -> Option<f64> {
    finite(xs).into_iter().reduce(f64::max)
}

/// How many of `n` samples the best-`percent` means keep: mmtests'
/// `int(n * percent / 100)`, i.e. rounded **down**, but at least 1 (and 0 for
/// n = 0). With 10 samples `BHmean-95` keeps 9, with 20 it keeps 19, with 1 it
/// keeps 1.
pub fn best_count(n: usize, percent: f64) -> usize {
    if n == 0 {
        return 0;
    }
    let p = if percent.is_nan() {
        0.0
    } else {
        percent.clamp(0.0, 100.0)
    };
    let count = (n as f64 * p / 100.0).floor() as usize;
    count.clamp(1, n)
}

/// Sort finite values best first: descending when higher is better, ascending
/// otherwise (mmtests sorts the data this way before summarising).
pub fn sorted_best_first(xs: &[f64], higher_is_better: bool) -> Vec<f64> {
    let mut v = finite(xs);
    if higher_is_better {
        v.sort_by(|a, b| b.total_cmp(a));
    } else {
        v.sort_by(|a, b| a.total_cmp(b));
    }
    v
}

/// mmtests' `BHmean-P` / `BAmean-P`: the metric's mean (harmonic when higher is
/// better, arithmetic otherwise) of the best [`best_count`]`(n, percent)` samples;
/// for higher-is-better the lowest samples are dropped, otherwise the highest.
pub fn best_mean(xs: &[f64], percent: f64, higher_is_better: bool) -> Option<f64> {
    let v = sorted_best_first(xs, higher_is_better);
    let keep = best_count(v.len(), percent);
    MeanKind::for_metric(higher_is_better).mean(&v[..keep])
}

/// Percentile by mmtests' rank rule: sort ascending, take the value at rank
/// `int(n · p / 100)` (1-based, rounded down, at least 1). `p` is clamped to
/// [0, 100]. `None` when there is no finite value.
pub fn percentile(xs: &[f64], p: f64) -> Option<f64> {
    let v = sorted_best_first(xs, false);
    if v.is_empty() {
        return None;
    }
    let rank = best_count(v.len(), p);
    Some(v[rank - 1])
}

/// mmtests' `pdiff` for higher-is-better values: `new/base·100 − 100`.
///
/// Edge cases: equal values → 0; `base == 0` (and `new != 0`) → 100 as in mmtests;
/// non-finite input → 0. Unlike mmtests (which returns 0 when `new == 0`, treating
/// it as missing data) `new == 0` gives the true −100.
pub fn pdiff(new: f64, base: f64) -> f64 {
    if !new.is_finite() || !base.is_finite() || new == base {
        return 0.0;
    }
    if base == 0.0 {
        return 100.0;
    }
    let r = new * 100.0 / base;
    let r = if r.is_finite() { r } else { new / base * 100.0 };
    clamp_finite(r - 100.0)
}

/// mmtests' `pndiff` for lower-is-better values: `100 − new/base·100`.
///
/// Edge cases as mmtests: equal values → 0; `new == 0` → 100; `base == 0` → −99;
/// non-finite input → 0.
pub fn pndiff(new: f64, base: f64) -> f64 {
    if !new.is_finite() || !base.is_finite() || new == base {
        return 0.0;
    }
    if new == 0.0 {
        return 100.0;
    }
    if base == 0.0 {
        return -99.0;
    }
    let r = new * 100.0 / base;
    let r = if r.is_finite() { r } else { new / base * 100.0 };
    clamp_finite(100.0 - r)
}

/// Percent change of `new` against `base`, positive meaning better: [`pdiff`] when
/// higher is better, else [`pndiff`].
pub fn change_pct(new: f64, base: f64, higher_is_better: bool) -> f64 {
    if higher_is_better {
        pdiff(new, base)
    } else {
        pndiff(new, base)
    }
}

/// Half-width of mmtests' interval `mean ± qnorm(0.975)·stddev` (σ is *not*
/// divided by √n). 0 for a non-finite stddev.
pub fn ci_half_width(stddev: f64) -> f64 {
    if stddev.is_finite() {
        clamp_finite(Z_975 * stddev.abs())
    } else {
        0.0
    }
}

/// The interval `(mean − h, mean + h)` with `h = `[`ci_half_width`]`(stddev)`.
pub fn mean_ci(mean: f64, stddev: f64) -> (f64, f64) {
    let h = ci_half_width(stddev);
    (clamp_finite(mean - h), clamp_finite(mean + h))
}

/// mmtests' `cidiff`: the distance between two means in units of the sum of the
/// facing interval half-widths (`(new − base) / (new-side + base-side)`). Two
/// intervals overlap iff `|cidiff| ≤ 1`.
///
/// When the facing half-widths sum to 0 mmtests returns the raw difference; so does
/// this function. Non-finite input → 0.
pub fn cidiff(new: f64, new_ci: (f64, f64), base: f64, base_ci: (f64, f64)) -> f64 {
    let diff = new - base;
    let cisum = if new < base {
        (new_ci.1 - new) + (base - base_ci.0)
    } else {
        (new - new_ci.0) + (base_ci.1 - base)
    };
    if !diff.is_finite() || !cisum.is_finite() {
        return 0.0;
    }
    if cisum == 0.0 {
        return clamp_finite(diff);
    }
    clamp_finite(diff / cisum)
}

/// mmtests' current significance rule (commit 8cd087ae): each run's interval is
/// `mean ± qnorm(0.975)·stddev`; the difference is significant iff the intervals do
/// not overlap (`|cidiff| > 1`).
///
/// Choices where mmtests is undefined or quirky:
/// - a missing stddev (fewer than two samples; mmtests gets NaN and no interval) →
///   not significant;
/// - both stddevs 0 (identical repeated samples): the intervals are points, so the
///   result is significant iff the means differ (mmtests would star iff the raw
///   difference exceeds 1 in the metric's unit);
/// - non-finite means → not significant.
pub fn significant(
    new_mean: f64,
    new_stddev: Option<f64>,
    base_mean: f64,
    base_stddev: Option<f64>,
) -> bool {
    let (Some(ns), Some(bs)) = (new_stddev, base_stddev) else {
        return false;
    };
    if !new_mean.is_finite() || !base_mean.is_finite() {
        return false;
    }
    let cisum = ci_half_width(ns) + ci_half_width(bs);
    if cisum == 0.0 {
        return new_mean != base_mean;
    }
    cidiff(
        new_mean,
        mean_ci(new_mean, ns),
        base_mean,
        mean_ci(base_mean, bs),
    )
    .abs()
        > 1.0
}

/// All the mmtests "Multiops" statistics of one set of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of finite samples.
    pub n: usize,
    /// Which mean `mean`, `stddev` and `best_mean` are.
    pub kind: MeanKind,
    /// `Min`.
    pub min: Option<f64>,
    /// `Hmean` / `Amean`.
    pub mean: Option<f64>,
    /// `HStddev` / `Stddev` (see [`hstddev`], [`stddev`]).
    pub stddev: Option<f64>,
    /// `HCoeffVar` / `CoeffVar` in percent (0 when undefined).
    pub coeffvar: f64,
    /// `Max`.
    pub max: Option<f64>,
    /// `BHmean-95` / `BAmean-95`.
    pub best_mean: Option<f64>,
}

impl Summary {
    /// Summarise `xs` for a metric where higher is (or is not) better.
    pub fn new(xs: &[f64], higher_is_better: bool) -> Self {
        let kind = MeanKind::for_metric(higher_is_better);
        let v = finite(xs);
        let mean = kind.mean(&v);
        let stddev = kind.stddev(&v);
        Summary {
            n: v.len(),
            kind,
            min: min(&v),
            mean,
            stddev,
            coeffvar: coeffvar(stddev.unwrap_or(0.0), mean.unwrap_or(0.0)),
            max: max(&v),
            best_mean: best_mean(&v, BEST_PERCENT, higher_is_better),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn means_by_hand() {
        assert!(close(hmean(&[1.0, 2.0, 4.0]).unwrap(), 12.0 / 7.0));
        assert!(close(amean(&[1.0, 2.0, 4.0]).unwrap(), 7.0 / 3.0));
        assert!(close(hmean(&[5.0]).unwrap(), 5.0));
        assert_eq!(hmean(&[]), None);
        assert_eq!(amean(&[]), None);
        assert_eq!(hmean(&[3.0, 0.0]), Some(0.0));
        assert_eq!(hmean(&[3.0, -1.0]), None);
        // NaN and infinities are ignored.
        assert!(close(
            amean(&[1.0, f64::NAN, 3.0, f64::INFINITY]).unwrap(),
            2.0
        ));
        assert_eq!(amean(&[f64::NAN]), None);
        // Overflowing sums still give the right mean.
        assert!(close(amean(&[f64::MAX, f64::MAX]).unwrap(), f64::MAX));
    }

    #[test]
    fn stddevs_by_hand() {
        // Sample stddev of 2,4,4,4,5,5,7,9: mean 5, Σd² = 32, /7.
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(stddev(&xs).unwrap(), (32.0_f64 / 7.0).sqrt()));
        assert_eq!(stddev(&[1.0]), None);
        assert_eq!(stddev(&[]), None);
        assert_eq!(stddev(&[3.0, 3.0]), Some(0.0));
        // Hmean spread of 1,2,4: H = 12/7, Σ(1/x − 1/H)² = 42/144,
        // sqrt(42/144 · H⁴ / 3) = (12/7)·sqrt(2/7).
        let expected = 12.0 / 7.0 * (2.0_f64 / 7.0).sqrt();
        assert!(close(hstddev(&[1.0, 2.0, 4.0]).unwrap(), expected));
        // Same via the literal mmtests formula.
        let h = 12.0 / 7.0;
        let ss: f64 = [1.0_f64, 2.0, 4.0]
            .iter()
            .map(|x| (1.0 / x - 1.0 / h).powi(2))
            .sum();
        assert!(close(expected, (ss * h.powi(4) / 3.0).sqrt()));
        assert_eq!(hstddev(&[1.0]), None);
        assert_eq!(hstddev(&[0.0, 1.0]), None);
        assert_eq!(hstddev(&[2.0, 2.0]), Some(0.0));
        assert!(stddev(&[f64::MAX, -f64::MAX]).unwrap().is_finite());
    }

    #[test]
    fn coeffvar_min_max() {
        assert!(close(coeffvar(2.0, 8.0), 25.0));
        assert_eq!(coeffvar(2.0, 0.0), 0.0);
        assert_eq!(coeffvar(f64::NAN, 3.0), 0.0);
        assert_eq!(min(&[3.0, 1.0, 2.0]), Some(1.0));
        assert_eq!(max(&[3.0, 1.0, 2.0]), Some(3.0));
        assert_eq!(min(&[]), None);
        assert_eq!(max(&[f64::NAN]), None);
    }

    #[test]
    fn best_means_keep_int_95_percent() {
        assert_eq!(best_count(0, 95.0), 0);
        assert_eq!(best_count(1, 95.0), 1);
        assert_eq!(best_count(10, 95.0), 9);
        assert_eq!(best_count(19, 95.0), 18);
        assert_eq!(best_count(20, 95.0), 19);
        assert_eq!(best_count(40, 95.0), 38);
        let xs = [10.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        // Higher is better: drop the lowest (1), harmonic mean of 2..=10.
        let kept = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(
            best_mean(&xs, 95.0, true).unwrap(),
            hmean(&kept).unwrap()
        ));
        // Lower is better: drop the highest (10), arithmetic mean of 1..=9 = 5.
        assert!(close(best_mean(&xs, 95.0, false).unwrap(), 5.0));
        assert_eq!(best_mean(&[], 95.0, true), None);
        assert_eq!(best_mean(&[4.0], 95.0, false), Some(4.0));
    }

    #[test]
    fn percentiles() {
        let xs: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), Some(5.0));
        assert_eq!(percentile(&xs, 95.0), Some(9.0));
        assert_eq!(percentile(&xs, 100.0), Some(10.0));
        assert_eq!(percentile(&xs, 0.0), Some(1.0));
        assert_eq!(percentile(&xs, f64::NAN), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn change_sign_conventions() {
        // Higher is better: more is positive.
        assert!(close(pdiff(110.0, 100.0), 10.0));
        assert!(close(pdiff(90.0, 100.0), -10.0));
        assert!(close(change_pct(110.0, 100.0, true), 10.0));
        // Lower is better: less is positive.
        assert!(close(pndiff(90.0, 100.0), 10.0));
        assert!(close(pndiff(110.0, 100.0), -10.0));
        assert!(close(change_pct(90.0, 100.0, false), 10.0));
        assert!(close(change_pct(110.0, 100.0, false), -10.0));
        // Baseline against itself.
        assert_eq!(change_pct(7.0, 7.0, true), 0.0);
        assert_eq!(change_pct(7.0, 7.0, false), 0.0);
        // Zeros.
        assert_eq!(pdiff(0.0, 0.0), 0.0);
        assert_eq!(pdiff(5.0, 0.0), 100.0);
        assert_eq!(pdiff(0.0, 5.0), -100.0);
        assert_eq!(pndiff(0.0, 5.0), 100.0);
        assert_eq!(pndiff(5.0, 0.0), -99.0);
        assert_eq!(pdiff(f64::NAN, 1.0), 0.0);
        assert!(pdiff(f64::MAX, f64::MIN_POSITIVE).is_finite());
        // The published example: 29929.64 → 32932.68 is +10.03%.
        assert_eq!(format!("{:.2}", pdiff(32932.68, 29929.64)), "10.03");
    }

    #[test]
    fn significance_rule() {
        // Intervals 100 ± 1.96 and 110 ± 1.96 do not overlap.
        assert!(significant(110.0, Some(1.0), 100.0, Some(1.0)));
        assert!(significant(90.0, Some(1.0), 100.0, Some(1.0)));
        // 100 ± 9.8 and 110 ± 9.8 overlap.
        assert!(!significant(110.0, Some(5.0), 100.0, Some(5.0)));
        // Just apart / just overlapping around half-width sum 10.
        let s = 5.0 / Z_975;
        assert!(significant(110.001, Some(s), 100.0, Some(s)));
        assert!(!significant(109.999, Some(s), 100.0, Some(s)));
        // Asymmetric spreads: only the facing half-widths matter.
        assert!(significant(100.0, Some(1.0), 110.0, Some(4.0)));
        assert!(!significant(100.0, Some(1.0), 110.0, Some(5.0)));
        // Undefined spreads are never significant.
        assert!(!significant(200.0, None, 100.0, Some(1.0)));
        assert!(!significant(200.0, Some(1.0), 100.0, None));
        // Zero spreads: points differ iff the means differ.
        assert!(significant(0.5, Some(0.0), 0.3, Some(0.0)));
        assert!(!significant(0.5, Some(0.0), 0.5, Some(0.0)));
        assert!(!significant(f64::NAN, Some(1.0), 0.5, Some(0.0)));
        // cidiff itself.
        assert!(close(
            cidiff(110.0, (108.0, 112.0), 100.0, (98.0, 102.0)),
            2.5
        ));
        assert!(close(
            cidiff(90.0, (88.0, 92.0), 100.0, (98.0, 102.0)),
            -2.5
        ));
        assert_eq!(cidiff(3.0, (3.0, 3.0), 1.0, (1.0, 1.0)), 2.0);
    }

    #[test]
    fn summary_of_samples() {
        let s = Summary::new(&[1.0, 2.0, 4.0], true);
        assert_eq!(s.n, 3);
        assert_eq!(s.kind, MeanKind::Hmean);
        assert_eq!(s.min, Some(1.0));
        assert_eq!(s.max, Some(4.0));
        assert!(close(s.mean.unwrap(), 12.0 / 7.0));
        assert!(close(s.coeffvar, 100.0 * (2.0_f64 / 7.0).sqrt()));
        // 3 samples keep int(2.85) = 2 best: 4 and 2.
        assert!(close(s.best_mean.unwrap(), 8.0 / 3.0));
        let e = Summary::new(&[], false);
        assert_eq!(e.n, 0);
        assert_eq!(e.mean, None);
        assert_eq!(e.coeffvar, 0.0);
    }
}
