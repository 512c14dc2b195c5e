//! Whether two sets of samples differ, by Chromium Pinpoint's rule
//! (catapult's `pinpoint/models/compare/compare.py`): p is the smaller of
//! the Kolmogorov-Smirnov and the Mann-Whitney p-values (KS sees a change
//! of spread, Mann-Whitney a shift among ties); p ≤ 0.01 is different; p
//! above a high threshold is the same, the threshold falling as the
//! change looked for grows against the samples' spread and as the samples
//! grow (`thresholds`: a real change that size would give a higher p only
//! 1% of the time); in between is unknown, and more repetitions decide.
//! Pure.

use super::thresholds::PERFORMANCE;
use crate::significance::{kolmogorov_smirnov, mann_whitney};

/// At or below it, two samples differ.
pub const LOW_THRESHOLD: f64 = 0.01;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Same,
    Different,
    /// Neither yet: more samples decide.
    Unknown,
}

/// Two samples compared, with the figures that decided it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    pub outcome: Outcome,
    /// The smaller of `p_ks` and `p_mwu`.
    pub p: f64,
    pub p_ks: f64,
    pub p_mwu: f64,
    /// Above it, the same (`thresholds`).
    pub high: f64,
    /// The change looked for in interquartile ranges of the samples.
    pub magnitude_iqr: f64,
}

/// `a` against `b`, looking for a change of `magnitude` (in the metric's
/// unit: the endpoints' difference); none while a side has no sample.
pub fn compare(a: &[f64], b: &[f64], magnitude: f64) -> Option<Comparison> {
    let p_ks = kolmogorov_smirnov(a, b)?.p;
    let p_mwu = mann_whitney(a, b)?.p;
    let p = p_ks.min(p_mwu);
    let iqr = iqr(a).max(iqr(b));
    // No spread at all: any change stands out of it.
    let magnitude_iqr = if magnitude == 0.0 {
        0.0
    } else if iqr > 0.0 {
        (magnitude / iqr).abs()
    } else {
        f64::INFINITY
    };
    let high = high_threshold(magnitude_iqr, (a.len() + b.len()) / 2);
    let outcome = if p <= LOW_THRESHOLD {
        Outcome::Different
    } else if p <= high {
        Outcome::Unknown
    } else {
        Outcome::Same
    };
    Some(Comparison { outcome, p, p_ks, p_mwu, high, magnitude_iqr })
}

/// The threshold for a change of `magnitude_iqr` interquartile ranges and
/// samples of `n` (Pinpoint's `HighThreshold`: the row of the magnitude's
/// tenth, truncated, within 0.3–4.0; past a row's end, its last value).
pub fn high_threshold(magnitude_iqr: f64, n: usize) -> f64 {
    // The small epsilon keeps 0.7 (6.999… tenths in binary) in its row.
    let tenths = (magnitude_iqr * 10.0 + 1e-9).floor();
    let row = PERFORMANCE[(tenths.clamp(3.0, 40.0) as usize) - 3];
    row[n.clamp(1, row.len()) - 1]
}

/// The interquartile range with Pinpoint's percentiles (C = 1/2: the
/// closest ranks interpolated); 0 for fewer than two values.
fn iqr(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let index = (v.len() as f64 * q - 0.5).clamp(0.0, (v.len() - 1) as f64);
        let (lo, hi) = (index.floor(), index.ceil());
        if lo == hi {
            v[lo as usize]
        } else {
            v[lo as usize] * (hi - index) + v[hi as usize] * (index - lo)
        }
    };
    at(0.75) - at(0.25)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(from: u32, to: u32) -> Vec<f64> {
        (from..to).map(f64::from).collect()
    }

    /// catapult's `compare_test.py` (performance mode, magnitude 1 IQR,
    /// 10 a side): its three cases, one of each outcome.
    #[test]
    fn pinpoints_own_cases_come_out_as_there() {
        // Magnitude 1 IQR: range(10)'s IQR is 5 (C = 1/2 percentiles).
        assert_eq!(iqr(&range(0, 10)), 5.0);
        let by = |b: Vec<f64>| compare(&range(0, 10), &b, 5.0).unwrap();
        assert_eq!(by(range(7, 17)).outcome, Outcome::Different);
        let unknown = by(range(3, 13));
        assert_eq!(unknown.outcome, Outcome::Unknown, "{unknown:?}");
        assert!(unknown.p <= unknown.high && unknown.high == 0.5708, "{unknown:?}");
        let same = by(range(0, 10));
        assert_eq!(same.outcome, Outcome::Same);
        assert!(same.p > same.high);
    }

    #[test]
    fn the_high_threshold_falls_with_the_change_and_the_samples() {
        // Pinpoint's HighThreshold('performance', m, n), from its table.
        assert_eq!(high_threshold(1.0, 10), 0.5708);
        assert_eq!(high_threshold(0.7, 20), 0.5793);
        assert_eq!(high_threshold(0.1, 1), 1.0, "under 0.3: the 0.3 row");
        assert_eq!(high_threshold(9.0, 1000), 0.0002, "over 4.0: the 4.0 row, its last value");
        assert!(high_threshold(2.0, 5) < high_threshold(1.0, 5));
        assert!(high_threshold(1.0, 30) < high_threshold(1.0, 10));
    }

    #[test]
    fn no_sample_decides_nothing_and_no_spread_makes_any_change_large() {
        assert_eq!(compare(&[], &[1.0], 1.0), None);
        let c = compare(&[5.0; 6], &[5.0; 6], 1.0).unwrap();
        assert_eq!((c.outcome, c.magnitude_iqr), (Outcome::Same, f64::INFINITY));
    }
}
