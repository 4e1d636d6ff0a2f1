//! Exact histograms of integer samples.

use std::collections::BTreeMap;

/// Every sample of a run kept as counts per distinct value (µs latencies,
/// request counts): percentiles, minimum, maximum and count come out exactly
/// as from a sorted list of all samples, in memory bounded by the number of
/// distinct values rather than by the run's length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hist {
    counts: BTreeMap<u64, u64>,
    n: u64,
}

impl Hist {
    pub fn add(&mut self, v: u64) {
        *self.counts.entry(v).or_insert(0) += 1;
        self.n += 1;
    }

    /// Number of samples.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn min(&self) -> Option<u64> {
        self.counts.keys().next().copied()
    }

    pub fn max(&self) -> Option<u64> {
        self.counts.keys().next_back().copied()
    }

    /// Sum of all samples.
    pub fn sum(&self) -> u128 {
        self.counts
            .iter()
            .map(|(&v, &c)| u128::from(v) * u128::from(c))
            .sum()
    }

    /// Samples at or below `v`.
    pub fn count_le(&self, v: u64) -> u64 {
        self.counts.range(..=v).map(|(_, &c)| c).sum()
    }

    /// The `p`th percentile as schbench computes it: the smallest value with
    /// at least p% of the samples at or below it (rank ⌈p·n/100⌉, at least 1).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil() as u64;
        let rank = rank.clamp(1, self.n);
        let mut seen = 0;
        for (&v, &c) in &self.counts {
            seen += c;
            if seen >= rank {
                return Some(v);
            }
        }
        self.max()
    }
}

impl FromIterator<u64> for Hist {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut h = Hist::default();
        for v in iter {
            h.add(v);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The percentile of a sorted list, as schbench takes it.
    fn sorted_percentile(sorted: &[u64], p: f64) -> Option<u64> {
        if sorted.is_empty() {
            return None;
        }
        let n = sorted.len();
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        Some(sorted[rank.clamp(1, n) - 1])
    }

    proptest! {
        #[test]
        fn agrees_with_a_sorted_list(v in proptest::collection::vec(0u64..50, 0..300), p in 0.0f64..=100.0) {
            let h: Hist = v.iter().copied().collect();
            let mut s = v.clone();
            s.sort_unstable();
            prop_assert_eq!(h.percentile(p), sorted_percentile(&s, p));
            prop_assert_eq!(h.len(), s.len() as u64);
            prop_assert_eq!(h.min(), s.first().copied());
            prop_assert_eq!(h.max(), s.last().copied());
            for x in [0, 10, 49] {
                prop_assert_eq!(h.count_le(x), s.partition_point(|&y| y <= x) as u64);
            }
            prop_assert_eq!(h.sum(), s.iter().map(|&x| u128::from(x)).sum::<u128>());
        }
    }
}
