//! Otava's significance test of a split: the two-sided Student's t-test
//! with pooled variance (scipy's `ttest_ind_from_stats(equal_var=True)`),
//! fed *population* standard deviations (`np.std`, ddof 0), as Otava 0.8.0
//! feeds it. Means and deviations are summed the way numpy sums (pairwise),
//! so they are the figures Otava reports, to the bit; the p-value comes from
//! statrs' regularized incomplete beta function, within about 1e-12 of
//! scipy's `stdtr`.

use statrs::function::beta::checked_beta_reg;

/// What Otava keeps of a change point's test: the p-value and the two
/// sides' means and population standard deviations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TTestStats {
    /// Two-sided; NaN when a side holds a NaN (or both sides are constant
    /// and equal), which no threshold accepts.
    pub pvalue: f64,
    pub mean_before: f64,
    pub mean_after: f64,
    /// Population standard deviation (ddof 0); 0 for a single point.
    pub std_before: f64,
    pub std_after: f64,
}

impl TTestStats {
    /// `after / before - 1`; 0 when the mean before is 0 (Otava's rule).
    pub fn forward_rel(&self) -> f64 {
        if self.mean_before == 0.0 {
            0.0
        } else {
            self.mean_after / self.mean_before - 1.0
        }
    }

    /// `before / after - 1`; 0 when the mean after is 0.
    pub fn backward_rel(&self) -> f64 {
        if self.mean_after == 0.0 {
            0.0
        } else {
            self.mean_before / self.mean_after - 1.0
        }
    }

    /// The change in percent of the mean before (+ is an increase).
    pub fn forward_change_pct(&self) -> f64 {
        self.forward_rel() * 100.0
    }

    pub fn backward_change_pct(&self) -> f64 {
        self.backward_rel() * 100.0
    }

    /// The larger relative change of the two directions, which merge
    /// compares with `min_magnitude`. Python's `max(f, b)`: `f` unless `b`
    /// is greater, so a NaN `f` stays NaN and a NaN `b` is ignored
    /// (`f64::max` would ignore either).
    pub fn magnitude(&self) -> f64 {
        let (f, b) = (self.forward_rel().abs(), self.backward_rel().abs());
        if b > f {
            b
        } else {
            f
        }
    }
}

/// Otava's `TTestSignificanceTester.compare(left, right)`. Both sides hold a
/// point on every path that calls it (a change point is never at either end
/// of its segment); Otava raises `ValueError` otherwise.
pub(super) fn ttest(left: &[f64], right: &[f64]) -> TTestStats {
    assert!(!left.is_empty() && !right.is_empty(), "a t-test needs a point on each side");
    let (n1, n2) = (left.len(), right.len());
    let (m1, m2) = (mean(left), mean(right));
    let s1 = if n1 >= 2 { pop_std(left, m1) } else { 0.0 };
    let s2 = if n2 >= 2 { pop_std(right, m2) } else { 0.0 };
    // Otava's own rule: two single points are never significant.
    let pvalue = if n1 + n2 > 2 { pooled_pvalue(m1, s1, n1, m2, s2, n2) } else { 1.0 };
    TTestStats { pvalue, mean_before: m1, mean_after: m2, std_before: s1, std_after: s2 }
}

/// The test of the change point `indexes[k]` against its neighbours in
/// `indexes` (sorted): before it `[previous, index)`, after `[index, next)`,
/// the series' ends at the ends. Otava's `get_intervals` and
/// `change_point`.
pub(super) fn around(series: &[f64], indexes: &[usize], k: usize) -> TTestStats {
    let before = if k == 0 { 0 } else { indexes[k - 1] };
    let after = indexes.get(k + 1).copied().unwrap_or(series.len());
    ttest(&series[before..indexes[k]], &series[indexes[k]..after])
}

/// scipy's `_equal_var_ttest_denom` and `_ttest_ind_from_stats`, operation
/// for operation. Division is IEEE: a difference over a zero denominator is
/// ±inf (p 0), zero over zero NaN (p NaN).
fn pooled_pvalue(m1: f64, s1: f64, n1: usize, m2: f64, s2: f64, n2: usize) -> f64 {
    // scipy zeroes the variance of a one-point side (it is undefined; its
    // (n-1) factor cancels).
    let v1 = if n1 == 1 { 0.0 } else { s1 * s1 };
    let v2 = if n2 == 1 { 0.0 } else { s2 * s2 };
    let df = (n1 + n2) as f64 - 2.0;
    let svar = ((n1 - 1) as f64 * v1 + (n2 - 1) as f64 * v2) / df;
    let denom = (svar * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    two_sided(df, (m1 - m2) / denom)
}

/// `2·stdtr(df, -|t|)` = I_{df/(df+t²)}(df/2, 1/2). Where that x is close to
/// 1 (small |t|) it is computed as `1 - I_{t²/(df+t²)}(1/2, df/2)`: statrs
/// would otherwise form `1 - x` itself, losing digits, and round any x
/// within 1e-15 of 1 to a p-value of exactly 1.
fn two_sided(df: f64, t: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    let tt = t * t;
    let a = df / 2.0;
    let x = df / (df + tt);
    // statrs' own switch point for the symmetric transform.
    let p = if x < (a + 1.0) / (a + 2.5) {
        checked_beta_reg(a, 0.5, x)
    } else {
        checked_beta_reg(0.5, a, tt / (df + tt)).map(|q| 1.0 - q)
    };
    // Unreachable: df >= 1 and both arguments lie in [0, 1].
    p.unwrap_or(f64::NAN)
}

/// `np.mean`: numpy's pairwise sum over the count.
pub(super) fn mean(v: &[f64]) -> f64 {
    sum(v) / v.len() as f64
}

/// `np.std` (ddof 0): the mean, then the pairwise sum of squared
/// deviations over the count, as numpy's `_var` does.
fn pop_std(v: &[f64], mean: f64) -> f64 {
    let squares: Vec<f64> = v
        .iter()
        .map(|x| {
            let d = x - mean;
            d * d
        })
        .collect();
    (sum(&squares) / v.len() as f64).sqrt()
}

/// numpy's reduction buffer: its sums go block by block of this many values.
const BUFSIZE: usize = 8192;

/// `np.sum` of an f64 array: the reduction starts from the identity 0.0 (so
/// a sum of -0.0s is +0.0) and adds numpy's pairwise sum of each block of
/// `BUFSIZE` values in turn (checked against numpy 2.2.0 beyond 8192).
pub(super) fn sum(v: &[f64]) -> f64 {
    let mut acc = 0.0;
    for block in v.chunks(BUFSIZE) {
        acc += pairwise(block);
    }
    acc
}

/// numpy's `pairwise_sum` (loops_utils.h): a plain loop below 8 values, 8
/// accumulators up to 128, halves (at a multiple of 8) above. Its rounding
/// differs from a sequential sum in the last bits, which is why it is
/// copied rather than approximated.
fn pairwise(v: &[f64]) -> f64 {
    let n = v.len();
    if n < 8 {
        let mut res = 0.0;
        for x in v {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
        let mut i = 8;
        while i < n - n % 8 {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += v[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &v[i..] {
            res += x;
        }
        res
    } else {
        let half = n / 2;
        let half = half - half % 8;
        pairwise(&v[..half]) + pairwise(&v[half..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of very different sizes, where the order of additions shows.
    fn spread(n: usize) -> Vec<f64> {
        (0..n).map(|i| 1.0 / (i + 1) as f64 + (i % 5) as f64 * 1e10 - 2e10 + (i % 3) as f64 * 0.1).collect()
    }

    fn sequential(v: &[f64]) -> f64 {
        v.iter().fold(0.0, |a, x| a + x)
    }

    #[test]
    fn sums_round_as_numpy_sums() {
        // (n, np.sum, np.mean, np.std) from numpy 2.2.0 on `spread(n)`.
        let numpy = [
            (5, 2.6833267211914062, 0.5366653442382813, 14142135623.483461),
            (8, -29999999996.582146, -3749999999.572768, 13169567190.938309),
            (9, -19999999996.271034, -2222222221.807893, 13146843962.317965),
            (17, -29999999994.960457, -1764705882.0564976, 14239668749.2454),
            (128, -29999999981.86686, -234374999.85833484, 14112541172.97976),
            (129, -19999999981.659103, -155038759.547745, 14086361325.260027),
            (300, 36.28263473510742, 0.1209421157836914, 14142135623.72577),
            (1000, 107.385498046875, 0.107385498046875, 14142135623.729322),
            // Past numpy's 8192-value buffer: blocks summed in turn.
            (8192, -29999999171.311543, -3662109.273841741, 14142566726.7367),
            (8193, -29999999171.11142, -3661662.293556868, 14141703612.044338),
            (20000, 2010.381721496582, 0.1005190860748291, 14142135623.730877),
        ];
        for (n, s, m, sd) in numpy {
            let v = spread(n);
            assert_eq!(sum(&v), s, "sum of {n}");
            assert_eq!(mean(&v), m, "mean of {n}");
            assert_eq!(pop_std(&v, mean(&v)), sd, "std of {n}");
        }
        // Where numpy's order matters: a sequential sum differs for these.
        for n in [8, 9, 129, 300, 1000] {
            assert_ne!(sequential(&spread(n)), sum(&spread(n)), "n = {n}");
        }
        // ... and one pairwise sum over all of them for these.
        for n in [8193, 20000] {
            assert_ne!(0.0 + pairwise(&spread(n)), sum(&spread(n)), "n = {n}");
        }
    }

    #[test]
    fn a_sum_of_negative_zeros_is_positive_zero() {
        assert!(sum(&[-0.0; 10]).is_sign_positive());
        assert!(sum(&[-0.0; 3]).is_sign_positive());
    }

    #[test]
    fn two_sided_p_values_match_scipy() {
        // (df, t, 2*scipy.special.stdtr(df, -|t|)) from scipy 1.16.3.
        let scipy = [
            (1.0, 0.5, 0.7048327646991336),
            (3.0, -2.5, 0.08770664700806555),
            (10.0, 1e-6, 0.9999992217832321),
            (10.0, 3e-8, 0.9999999766534969),
            (28.0, 2.0, 0.05528523764195692),
            (58.0, 7.5, 4.2327796006962144e-10),
            (98.0, 15.0, 3.9903536053480805e-27),
            (98.0, 40.0, 1.6633877203685742e-62),
            (400.0, 3.3, 0.0010535523147004815),
            (2000.0, 0.01, 0.9920222847139208),
            (5.0, 1e-12, 0.9999999999992408),
        ];
        for (df, t, p) in scipy {
            let ours = two_sided(df, t);
            assert!(((ours - p) / p).abs() < 1e-12, "df {df} t {t}: {ours} vs scipy {p}");
        }
        assert_eq!(two_sided(10.0, 0.0), 1.0);
        assert_eq!(two_sided(10.0, f64::INFINITY), 0.0);
        assert_eq!(two_sided(10.0, f64::NEG_INFINITY), 0.0);
        assert!(two_sided(10.0, f64::NAN).is_nan());
    }

    #[test]
    fn the_test_is_pooled_and_fed_population_deviations() {
        // scipy.stats.ttest_ind_from_stats(2.0, np.std([1,2,3]), 3,
        // 5.0, np.std([4,5,6,5]), 4) -> p = 0.0034157309066534217; with
        // sample deviations (ttest_ind) it would be 0.0071.
        let st = ttest(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0, 5.0]);
        assert_eq!((st.mean_before, st.mean_after), (2.0, 5.0));
        assert_eq!(st.std_before, (2.0f64 / 3.0).sqrt());
        assert_eq!(st.std_after, 0.5f64.sqrt());
        assert!((st.pvalue - 0.0034157309066534217).abs() < 1e-15, "{}", st.pvalue);
    }

    #[test]
    fn a_change_point_is_tested_between_its_neighbours() {
        let series = [1.0, 2.0, 10.0, 11.0, 12.0, 30.0, 31.0];
        let idx = [2, 5];
        assert_eq!(around(&series, &idx, 0), ttest(&[1.0, 2.0], &[10.0, 11.0, 12.0]));
        assert_eq!(around(&series, &idx, 1), ttest(&[10.0, 11.0, 12.0], &[30.0, 31.0]));
        assert_eq!(around(&series, &[3], 0), ttest(&[1.0, 2.0, 10.0], &[11.0, 12.0, 30.0, 31.0]));
    }

    #[test]
    fn degenerate_sides() {
        // One point against one: Otava's p = 1.
        assert_eq!(ttest(&[1.0], &[2.0]).pvalue, 1.0);
        // A single point has no spread; against a constant side that differs: t = inf.
        let st = ttest(&[1.0, 1.0], &[9.0]);
        assert_eq!((st.pvalue, st.std_before, st.std_after), (0.0, 0.0, 0.0));
        // Equal constants: 0/0.
        assert!(ttest(&[3.0, 3.0], &[3.0, 3.0, 3.0]).pvalue.is_nan());
        // A NaN on one side: its mean is NaN, so is p.
        let st = ttest(&[1.0, f64::NAN], &[2.0, 2.5]);
        assert!(st.mean_before.is_nan() && st.pvalue.is_nan());
    }

    fn stats(m1: f64, m2: f64) -> TTestStats {
        TTestStats { pvalue: 0.0, mean_before: m1, mean_after: m2, std_before: 0.0, std_after: 0.0 }
    }

    #[test]
    fn relative_changes_and_magnitude() {
        let st = stats(10.0, 12.0);
        assert_eq!(st.forward_rel(), 12.0 / 10.0 - 1.0);
        assert_eq!(st.forward_change_pct(), (12.0 / 10.0 - 1.0) * 100.0);
        assert_eq!(st.backward_change_pct(), (10.0 / 12.0 - 1.0) * 100.0);
        assert_eq!(st.magnitude(), 12.0 / 10.0 - 1.0);
        // A drop: the backward change is the larger.
        assert_eq!(stats(12.0, 10.0).magnitude(), 12.0 / 10.0 - 1.0);
        // A zero mean makes its direction 0, not inf.
        assert_eq!(stats(0.0, 5.0).forward_rel(), 0.0);
        assert_eq!(stats(0.0, 5.0).magnitude(), 1.0);
        assert_eq!(stats(5.0, 0.0).magnitude(), 1.0);
        assert_eq!(stats(0.0, 0.0).magnitude(), 0.0);
    }

    #[test]
    fn magnitude_keeps_pythons_nan_order() {
        // Forward NaN, backward 0 (the mean after is 0): Python's max keeps
        // its first argument, NaN; f64::max would say 0.
        let st = stats(f64::NAN, 0.0);
        assert!(st.forward_rel().is_nan() && st.backward_rel() == 0.0);
        assert!(st.magnitude().is_nan());
        // Forward 0 (the mean before is 0), backward NaN: NaN is never
        // greater, so 0.
        let st = stats(0.0, f64::NAN);
        assert!(st.backward_rel().is_nan());
        assert_eq!(st.magnitude(), 0.0);
    }
}
