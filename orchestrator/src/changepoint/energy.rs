//! The candidate split of an interval: E-Divisive means' energy statistic
//! Q(τ, κ) (Matteson and James, with α = 1) maximised over both τ and κ, as
//! Otava 0.8.0's `PairDistanceCalculator` computes it.
//!
//! For X = w[s..τ] (n points) and Y = w[τ..κ] (m points),
//! Q = 2/(n+m)·Σ|x−y| − 2m/((n+m)(n−1))·Σ_{i<k}|xᵢ−xₖ| − 2n/((n+m)(m−1))·Σ_{j<k}|yⱼ−yₖ|,
//! a term dropped when its side has one point. Otava evaluates it through
//! cumulative sums (its matrices V, H, A, B, C); this module performs the
//! same floating-point operations in the same order, not the formula
//! above, because a best split is an argmax and the first of two equal
//! values wins: a different rounding could pick another change point, and
//! would report another `qhat`.

/// The best split of an interval: the change point `index` (the first
/// point of Y) and its statistic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Split {
    pub index: usize,
    pub qhat: f64,
}

/// The best split of `w[s..e]` (`e - s >= 2`): the first maximum of Q
/// scanning τ ascending, then κ ascending; if any Q is NaN, the first NaN
/// (numpy's `argmax`). Distances are measured within `w` (Otava's window),
/// and some of the sums run from `w[0]`, not from `w[s]`, as Otava's do.
pub(super) fn best_split(w: &[f64], s: usize, e: usize) -> Split {
    let m = e - s - 1;
    let q = q_matrix(w, s, e);
    let mut best = 0;
    for (i, &v) in q.iter().enumerate().skip(1) {
        if q[best].is_nan() {
            break;
        }
        // numpy's `!(v <= best)`: a greater value, or a NaN.
        if v > q[best] || v.is_nan() {
            best = i;
        }
    }
    Split { index: s + 1 + best / m, qhat: q[best] }
}

/// Q for every τ = s+1+a and κ = s+2+b (a, b in 0..M, M = e−s−1), row-major
/// `[a * M + b]`. Entries with b < a are no split; they are 0, except that
/// Otava's B term there is `0 · Σ V`, NaN when that sum is not finite. This
/// is kept too: it cannot change a result (a window holding a NaN or an
/// infinity yields no change point whatever the split), but it keeps the
/// matrix Otava's.
pub(super) fn q_matrix(w: &[f64], s: usize, e: usize) -> Vec<f64> {
    assert!(e >= s + 2 && e <= w.len(), "interval {s}..{e} of a window of {}", w.len());
    let m = e - s - 1;
    let d = |i: usize, j: usize| (w[i] - w[j]).abs();

    // V[k]: distances from w[s+k+1] back to w[s..=s+k]. Otava sums the whole
    // column from w[0] (its precomputed V) and subtracts the part before s.
    let v: Vec<f64> = (0..m)
        .map(|k| {
            let col = s + k + 1;
            let mut full = 0.0;
            for r in 0..col {
                full += d(r, col);
            }
            let mut before = 0.0;
            for r in 0..s {
                before += d(r, col);
            }
            full - before
        })
        .collect();
    let cum_v = accumulate(&v);

    // H[a][b]: distances from w[s+a] forward to w[s+a+1..=s+b+1] (0 for b < a).
    let mut h = vec![0.0; m * m];
    for a in 0..m {
        let mut acc = 0.0;
        for b in a..m {
            acc += d(s + a, s + b + 1);
            h[a * m + b] = acc;
        }
    }
    // Column sums of H: top-down to row a, and bottom-up from row M−1 to
    // a+1 (numpy's flipud(cumsum(flipud(...))), so descending).
    let mut col_h = h.clone();
    for a in 1..m {
        for b in 0..m {
            col_h[a * m + b] = col_h[(a - 1) * m + b] + h[a * m + b];
        }
    }
    let mut tail_h = vec![0.0; m * m];
    for a in (0..m.saturating_sub(1)).rev() {
        for b in 0..m {
            tail_h[a * m + b] =
                if a == m - 2 { h[(m - 1) * m + b] } else { tail_h[(a + 1) * m + b] + h[(a + 1) * m + b] };
        }
    }

    let mut q = vec![0.0; m * m];
    for a in 0..m {
        for b in 0..m {
            // Integer numerators and denominators, one float division each,
            // as numpy divides two int arrays.
            let a_coef = 2.0 / (b + 2) as f64;
            let shift = if a >= 1 { cum_v[a - 1] } else { 0.0 };
            let big_a = a_coef * if b >= a { col_h[a * m + b] - shift } else { 0.0 };
            let big_b = if a >= 1 && b >= 1 {
                let coef = if b >= a { (2 * (b - a + 1)) as f64 / ((b + 2) * a) as f64 } else { 0.0 };
                coef * cum_v[a - 1]
            } else {
                0.0
            };
            let big_c = if a + 2 <= m && b >= 1 {
                let coef = if b > a { (2 * (a + 1)) as f64 / ((b + 2) * (b - a)) as f64 } else { 0.0 };
                coef * tail_h[a * m + b]
            } else {
                0.0
            };
            q[a * m + b] = (big_a - big_b) - big_c;
        }
    }
    q
}

/// numpy's `cumsum`: the first value as it is, then running sums.
fn accumulate(v: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(v.len());
    for (i, &x) in v.iter().enumerate() {
        out.push(if i == 0 { x } else { out[i - 1] + x });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q(τ, κ) from its definition, to check the cumulative form against.
    fn plain_q(w: &[f64], s: usize, tau: usize, kappa: usize) -> f64 {
        let (x, y) = (&w[s..tau], &w[tau..kappa]);
        let (n, m) = (x.len() as f64, y.len() as f64);
        let cross: f64 = x.iter().flat_map(|a| y.iter().map(move |b| (a - b).abs())).sum();
        let within =
            |v: &[f64]| -> f64 { (0..v.len()).flat_map(|i| (i + 1..v.len()).map(move |k| (v[i] - v[k]).abs())).sum() };
        let xt = if x.len() > 1 { 2.0 * m / ((n + m) * (n - 1.0)) * within(x) } else { 0.0 };
        let yt = if y.len() > 1 { 2.0 * n / ((n + m) * (m - 1.0)) * within(y) } else { 0.0 };
        2.0 / (n + m) * cross - xt - yt
    }

    /// The sawtooth-plus-step series of the golden vectors' `v1` case.
    fn sawtooth() -> Vec<f64> {
        (0..60).map(|i| if i < 30 { 10.0 } else { 12.0 } + ((i * 37) % 11) as f64 / 10.0).collect()
    }

    #[test]
    fn the_cumulative_form_is_the_energy_statistic() {
        let w = sawtooth();
        for (s, e) in [(0, 60), (0, 2), (7, 31), (30, 60), (12, 15)] {
            let m = e - s - 1;
            let q = q_matrix(&w, s, e);
            for a in 0..m {
                for b in 0..m {
                    let got = q[a * m + b];
                    if b < a {
                        assert_eq!(got, 0.0);
                    } else {
                        let want = plain_q(&w, s, s + 1 + a, s + 2 + b);
                        assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "{s}..{e} τ {a} κ {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn best_splits_are_otavas_to_the_bit() {
        // PairDistanceCalculator(np.array(w)).get_candidate_change_point(
        // slice(s, e)) in Otava 0.8.0, on the sawtooth series.
        let w = sawtooth();
        let otava = [
            ((0, 60), 30, 49.020689655172404),
            ((7, 31), 30, 4.42651515151515),
            ((30, 60), 31, 0.7466666666666668),
            ((0, 30), 1, 0.6666666666666665),
            ((12, 15), 14, 0.40000000000000097),
        ];
        for ((s, e), index, qhat) in otava {
            assert_eq!(best_split(&w, s, e), Split { index, qhat }, "{s}..{e}");
        }
        // The same maxima through the plain formula differ in the last bits,
        // so the figures above check the evaluation order.
        assert_eq!(plain_q(&w, 0, 30, 60), 49.02068965517242);
    }

    #[test]
    fn an_interval_of_two_splits_between_them() {
        let w = [3.0, 5.0, 4.5, 1.0];
        assert_eq!(best_split(&w, 1, 3), Split { index: 2, qhat: 0.5 });
        assert_eq!(best_split(&w, 2, 4), Split { index: 3, qhat: 3.5 });
    }

    #[test]
    fn ties_go_to_the_first_in_scan_order() {
        // [0, 0, 1, 1, 2, 2]: Q(τ 2, κ 6) = Q(τ 4, κ 6) = 28/9 (the same
        // float in Otava's order); its argmax takes τ 2.
        let w = [0.0, 0.0, 1.0, 1.0, 2.0, 2.0];
        let m = 5;
        assert_eq!(q_matrix(&w, 0, 6)[m + 4], q_matrix(&w, 0, 6)[3 * m + 4]);
        assert_eq!(best_split(&w, 0, 6), Split { index: 2, qhat: 3.111111111111111 });
        // A constant series: every Q is 0; the first is τ = s+1.
        assert_eq!(best_split(&[2.0; 9], 3, 9), Split { index: 4, qhat: 0.0 });
    }

    #[test]
    fn the_first_nan_wins() {
        let w = [1.0, 1.0, 5.0, f64::NAN, 5.0, 1.0];
        let got = best_split(&w, 0, 6);
        assert!(got.qhat.is_nan());
        assert_eq!(got.index, 1, "Otava: index 1, qhat nan");
        // Otava's Q there has a NaN below the diagonal too (0 · Σ V at τ 4, κ 3).
        assert!(q_matrix(&w, 0, 6)[3 * 5 + 1].is_nan());
        assert_eq!(q_matrix(&w, 0, 6)[3 * 5], 0.0);
    }
}
