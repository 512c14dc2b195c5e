//! Is the difference between two sets of samples more than noise?
//! Welch's t-test (unequal variances) and the Mann-Whitney U test, both
//! two-sided and computed as scipy computes them (`ttest_ind(equal_var=False)`,
//! `mannwhitneyu(method="auto")`), so a figure can be checked against it;
//! and the two-sample Kolmogorov-Smirnov test as Chromium's Pinpoint
//! computes it (asymptotic, with Stephens' correction), for `bisect`.
//!
//! By hand because no maintained crate does both with scipy's conventions
//! (statrs has the distributions, which we use, not the tests).

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Test {
    /// t for Welch (mean of `a` minus mean of `b`), U of `a` for Mann-Whitney.
    pub statistic: f64,
    /// Two-sided.
    pub p: f64,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn var(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

/// Welch's t-test; needs two samples on each side.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Test> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    welch_of(Moments { n: a.len(), mean: mean(a), var: var(a) }, Moments { n: b.len(), mean: mean(b), var: var(b) })
}

/// A set of samples as Welch's test needs it: count, mean, sample variance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    pub n: usize,
    pub mean: f64,
    pub var: f64,
}

impl Moments {
    /// The samples of several sets taken together, from each set's moments
    /// (the law of total variance): what `welch` needs when only summaries
    /// are kept. None without samples.
    pub fn pooled(parts: &[Moments]) -> Option<Moments> {
        let n: usize = parts.iter().map(|m| m.n).sum();
        if n == 0 {
            return None;
        }
        let mean = parts.iter().map(|m| m.n as f64 * m.mean).sum::<f64>() / n as f64;
        let within: f64 = parts.iter().map(|m| m.n.saturating_sub(1) as f64 * m.var).sum();
        let between: f64 = parts.iter().map(|m| m.n as f64 * (m.mean - mean).powi(2)).sum();
        let var = if n > 1 { (within + between) / (n - 1) as f64 } else { 0.0 };
        Some(Moments { n, mean, var })
    }
}

/// Welch's t-test from each side's moments; needs two samples on each side.
pub fn welch_of(a: Moments, b: Moments) -> Option<Test> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let (va, vb) = (a.var / a.n as f64, b.var / b.n as f64);
    let diff = a.mean - b.mean;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        // No spread at all: identical means are the same, others certainly differ.
        return Some(if diff == 0.0 {
            Test { statistic: 0.0, p: 1.0 }
        } else {
            Test { statistic: f64::INFINITY, p: 0.0 }
        });
    }
    let t = diff / se;
    let df = (va + vb).powi(2) / (va.powi(2) / (a.n - 1) as f64 + vb.powi(2) / (b.n - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(Test { statistic: t, p: (2.0 * dist.sf(t.abs())).min(1.0) })
}

/// Mann-Whitney U: exact when both sides have at most 8 samples and there
/// are no ties (scipy's "auto"), else the normal approximation with tie
/// and continuity corrections.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<Test> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let ranks = ranks(a.iter().chain(b).copied().collect());
    let r1: f64 = ranks.values[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let u = u1.max(u2);
    let p = if n1 <= 8 && n2 <= 8 && !ranks.ties {
        exact_sf(n1, n2, u.round() as usize)
    } else {
        let n = (n1 + n2) as f64;
        let mu = (n1 * n2) as f64 / 2.0;
        let s = ((n1 * n2) as f64 / 12.0 * ((n + 1.0) - ranks.tie_term / (n * (n - 1.0)))).sqrt();
        if s == 0.0 {
            return Some(Test { statistic: u1, p: 1.0 });
        }
        let z = (u - mu - 0.5) / s;
        2.0 * Normal::standard().sf(z)
    };
    Some(Test { statistic: u1, p: p.min(1.0) })
}

/// The two-sample Kolmogorov-Smirnov test, two-sided, as Pinpoint
/// computes it (catapult's `kolmogorov_smirnov.py`, after scipy's old
/// `ks_2samp`): D, the largest distance between the two empirical CDFs,
/// and the asymptotic Kolmogorov distribution's survival at
/// (√(n₁n₂/(n₁+n₂)) + 0.12 + 0.11/√…)·D (Stephens' correction). It sees a
/// change of spread that Mann-Whitney misses; `bisect` takes the smaller
/// of the two p-values, as Pinpoint does.
pub fn kolmogorov_smirnov(a: &[f64], b: &[f64]) -> Option<Test> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    x.sort_by(f64::total_cmp);
    y.sort_by(f64::total_cmp);
    // The share of a sorted sample at or below v (bisect_right).
    let cdf = |s: &[f64], v: f64| s.partition_point(|&u| u <= v) as f64 / s.len() as f64;
    let d = x.iter().chain(&y).map(|&v| (cdf(&x, v) - cdf(&y, v)).abs()).fold(0.0, f64::max);
    let en = ((n1 * n2) as f64 / (n1 + n2) as f64).sqrt();
    Some(Test { statistic: d, p: kolmogorov_sf((en + 0.12 + 0.11 / en) * d) })
}

/// The Kolmogorov distribution's survival function, 2Σ(−1)^(r−1)·e^(−2r²y²),
/// summed until a term no longer counts (cephes' `kolmogorov`).
fn kolmogorov_sf(y: f64) -> f64 {
    if y < 1.1e-16 {
        return 1.0;
    }
    let x = -2.0 * y * y;
    let (mut sign, mut p, mut r) = (1.0, 0.0, 1.0f64);
    loop {
        let t = (x * r * r).exp();
        p += sign * t;
        if t == 0.0 || t / p <= 1.1e-16 {
            break;
        }
        r += 1.0;
        sign = -sign;
    }
    p + p
}

struct Ranks {
    values: Vec<f64>,
    ties: bool,
    /// Σ (t³ − t) over groups of t tied values.
    tie_term: f64,
}

/// Ranks from 1, ties given their average rank.
fn ranks(values: Vec<f64>) -> Ranks {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut out = vec![0.0; values.len()];
    let (mut ties, mut tie_term) = (false, 0.0);
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = avg;
        }
        let t = (j - i + 1) as f64;
        if t > 1.0 {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j + 1;
    }
    Ranks { values: out, ties, tie_term }
}

/// Two-sided exact p: 2·P(U ≥ u) under the null, from the count of
/// arrangements giving each U.
fn exact_sf(n1: usize, n2: usize, u: usize) -> f64 {
    let counts = u_counts(n1, n2);
    let total: f64 = counts.iter().sum();
    let tail: f64 = counts.iter().skip(u).sum();
    2.0 * tail / total
}

/// counts[k] = number of orderings of n1 + n2 values with U = k
/// (f(m, n, k) = f(m−1, n, k−n) + f(m, n−1, k)).
fn u_counts(n1: usize, n2: usize) -> Vec<f64> {
    let max = n1 * n2;
    // table[m][n] = counts for sizes m, n
    let mut table: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n2 + 1]; n1 + 1];
    for m in 0..=n1 {
        for n in 0..=n2 {
            let mut c = vec![0.0; m * n + 1];
            if m == 0 || n == 0 {
                c[0] = 1.0;
            } else {
                for (k, slot) in c.iter_mut().enumerate() {
                    let left = if k >= n { table[m - 1][n].get(k - n).copied().unwrap_or(0.0) } else { 0.0 };
                    let right = table[m][n - 1].get(k).copied().unwrap_or(0.0);
                    *slot = left + right;
                }
            }
            table[m][n] = c;
        }
    }
    let mut out = std::mem::take(&mut table[n1][n2]);
    out.resize(max + 1, 0.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    /// catapult's `kolmogorov_smirnov_test.py`, Pinpoint's own vectors.
    #[test]
    fn kolmogorov_smirnov_gives_pinpoints_figures() {
        let range = |a: u32, b: u32| (a..b).map(f64::from).collect::<Vec<_>>();
        let p = |a: &[f64], b: &[f64]| kolmogorov_smirnov(a, b).unwrap().p;
        assert!(close(p(&range(0, 10), &range(20, 30)), 1.8879793657162556e-05, 1e-12));
        assert!(close(p(&range(0, 5), &range(0, 10)), 0.26680230985258474, 1e-12));
        assert!(close(p(&[0.0; 5], &[1.0; 5]), 0.0037813540593701006, 1e-12));
        assert_eq!(p(&[0.0], &[1.0]), 0.2890414283708268);
        assert_eq!(p(&[0.0; 5], &[0.0; 5]), 1.0);
        assert!(kolmogorov_smirnov(&[], &[1.0]).is_none());
    }

    // References computed with scipy (constants at the end), written into the tests.
    #[test]
    fn welch_matches_scipy() {
        // scipy.stats.ttest_ind(a, b, equal_var=False)
        let a = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4];
        let b = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4];
        let t = welch(&a, &b).unwrap();
        assert!(close(t.statistic, REF_WELCH_T, 1e-9), "{t:?}");
        assert!(close(t.p, REF_WELCH_P, 1e-6), "{t:?}");
        assert_eq!(welch(&[1.0, 1.0], &[1.0, 1.0]).unwrap().p, 1.0);
        assert_eq!(welch(&[1.0, 1.0], &[2.0, 2.0]).unwrap().p, 0.0);
        assert!(welch(&[1.0], &[2.0, 3.0]).is_none());
    }

    /// Pooling the moments of parts is the same as the moments of all
    /// their samples, so Welch on pooled summaries is Welch on the samples.
    #[test]
    fn pooled_moments_are_those_of_all_the_samples() {
        let parts = [vec![433.0, 433.1, 355.0], vec![433.5, 433.3], vec![355.1]];
        let m = |v: &[f64]| Moments { n: v.len(), mean: mean(v), var: if v.len() > 1 { var(v) } else { 0.0 } };
        let all: Vec<f64> = parts.concat();
        let pooled = Moments::pooled(&parts.iter().map(|p| m(p)).collect::<Vec<_>>()).unwrap();
        assert_eq!(pooled.n, all.len());
        assert!(close(pooled.mean, mean(&all), 1e-12) && close(pooled.var, var(&all), 1e-9), "{pooled:?}");
        let other = [431.4, 356.0, 356.7];
        let (p, w) = (welch_of(pooled, m(&other)).unwrap(), welch(&all, &other).unwrap());
        assert!(close(p.statistic, w.statistic, 1e-9) && close(p.p, w.p, 1e-9), "{p:?} {w:?}");
        assert_eq!(Moments::pooled(&[]), None);
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        // scipy.stats.mannwhitneyu(a, b, alternative="two-sided") — exact (n <= 8, no ties)
        let t = mann_whitney(&[1.1, 2.2, 3.3, 4.4, 5.5], &[2.5, 6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(t.statistic, REF_MWU_EXACT_U);
        assert!(close(t.p, REF_MWU_EXACT_P, 1e-9), "{t:?}");
        // asymptotic with ties
        let a = [19.0, 22.0, 16.0, 29.0, 24.0, 20.0, 19.0, 22.0, 25.0, 30.0];
        let b = [20.0, 11.0, 17.0, 12.0, 13.0, 19.0, 15.0, 16.0, 18.0, 14.0];
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.statistic, REF_MWU_ASYM_U);
        assert!(close(t.p, REF_MWU_ASYM_P, 1e-9), "{t:?}");
        // three against three can never reach p < 0.05
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(close(t.p, 0.1, 1e-12), "{t:?}");
    }

    #[test]
    fn exact_counts_sum_to_the_binomial() {
        let c = u_counts(4, 3);
        assert_eq!(c.iter().sum::<f64>(), 35.0);
        assert_eq!(c.len(), 13);
        assert_eq!(c[0], 1.0);
        assert_eq!(c[12], 1.0);
    }

    // scipy 1.17.1
    const REF_WELCH_T: f64 = -2.455356398286006;
    const REF_WELCH_P: f64 = 0.021378001462866992;
    const REF_MWU_EXACT_U: f64 = 3.0;
    const REF_MWU_EXACT_P: f64 = 0.030303030303030304;
    const REF_MWU_ASYM_U: f64 = 92.0;
    const REF_MWU_ASYM_P: f64 = 0.0016586363021665101;
}
