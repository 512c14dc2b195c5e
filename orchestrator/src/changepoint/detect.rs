//! The change points of one window: E-Divisive's bisection with Otava's
//! t-test as the stopping rule (`ChangePointDetector.get_change_points`).
//! Each round takes the best split of every segment between the change
//! points found so far, keeps the best of those if its t-test passes, and
//! otherwise stops: the first best candidate that is not significant ends
//! the window, even if another segment holds a significant one.

use super::energy::{best_split, Split};
use super::ttest::ttest;

/// The change points of window `w`, window-local and ascending, each with
/// the `qhat` it was found with. Significant means `p <= threshold`, so a
/// NaN p-value (a NaN in the window, or a constant one) ends the search.
pub(super) fn detect(w: &[f64], threshold: f64) -> Vec<Split> {
    let mut found: Vec<Split> = Vec::new();
    loop {
        // Python's max over the segments' candidates: the first stays
        // unless a later one is greater, so a NaN first stays.
        let mut best: Option<(Split, usize, usize)> = None;
        let mut lo = 0;
        for hi in found.iter().map(|f| f.index).chain([w.len()]) {
            if hi - lo > 1 {
                let cand = best_split(w, lo, hi);
                if best.is_none_or(|(b, _, _)| cand.qhat > b.qhat) {
                    best = Some((cand, lo, hi));
                }
            }
            lo = hi;
        }
        let Some((cand, lo, hi)) = best else { break };
        if ttest(&w[lo..cand.index], &w[cand.index..hi]).pvalue <= threshold {
            let at = found.partition_point(|f| f.index < cand.index);
            found.insert(at, cand);
        } else {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two steps over a repeating pattern of small integers.
    fn steps() -> Vec<f64> {
        (0..45)
            .map(|i| ((i * 7) % 5) as f64 + if i < 15 { 0.0 } else { 3.0 } + if i < 30 { 0.0 } else { -5.0 })
            .collect()
    }

    #[test]
    fn finds_what_otavas_detector_finds() {
        // ChangePointDetector(TTestSignificanceTester(0.01),
        // PairDistanceCalculator).get_change_points(w, 0, len(w)): 30 first
        // (the larger qhat), then 16 in [0, 30).
        assert_eq!(
            detect(&steps(), 0.01),
            [Split { index: 16, qhat: 21.985641025641023 }, Split { index: 30, qhat: 31.850246305418718 }]
        );
    }

    #[test]
    fn the_first_best_candidate_that_fails_ends_the_window() {
        // 30 is the best split, with p = 5.1e-7: above 1e-12, so nothing at all.
        assert_eq!(detect(&steps(), 1e-12), []);
        assert_eq!(detect(&steps(), 5.1e-7), [Split { index: 30, qhat: 31.850246305418718 }]);
    }

    #[test]
    fn a_tie_between_segments_goes_to_the_first() {
        // After the split at 8, [0, 8) and [8, 14) both have qhat 4: the
        // first wins and passes (p 0); [8, 14)'s split would have failed
        // and ended the window with [8] alone.
        let w = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1000.0, 1000.0, 1000.0, 1001.0, 1002.0, 1003.0];
        assert_eq!(best_split(&w, 0, 8).qhat, best_split(&w, 8, 14).qhat);
        assert_eq!(detect(&w, 0.01), [Split { index: 4, qhat: 4.0 }, Split { index: 8, qhat: 6853.5836734693885 }]);
    }

    #[test]
    fn significant_includes_the_threshold_and_nan_never_is() {
        // [1, 1, 9]: zero spread on both sides, different means, p = 0.
        assert_eq!(detect(&[1.0, 1.0, 9.0], 0.0), [Split { index: 2, qhat: 10.666666666666666 }]);
        // A constant window: p = NaN, even against a threshold of 1.
        assert_eq!(detect(&[5.0; 20], 1.0), []);
        let mut w = vec![1.0; 10];
        w.push(f64::NAN);
        w.extend([2.0; 10]);
        assert_eq!(detect(&w, 1.0), []);
    }

    #[test]
    fn windows_too_short_to_split_yield_nothing() {
        assert_eq!(detect(&[], 0.5), []);
        assert_eq!(detect(&[3.0], 0.5), []);
        // Two points: one against one, p = 1 by Otava's rule.
        assert_eq!(detect(&[3.0, 4.0], 0.99), []);
        assert_eq!(detect(&[3.0, 4.0], 1.0), [Split { index: 1, qhat: 1.0 }]);
    }
}
