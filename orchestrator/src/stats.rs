//! Summaries of a metric's samples: n, mean, sample standard deviation,
//! median, MAD, min, max, CV, a 95% confidence interval of the mean
//! (Student t), and which samples are outliers by the modified z-score
//! (flagged, never dropped: a slow repetition is a result too).

use statrs::distribution::{ContinuousCDF, StudentsT};

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for a single sample.
    pub sd: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// None below two samples, where no interval exists.
    pub ci95: Option<(f64, f64)>,
    /// Median absolute deviation from the median (unscaled, as scipy's default).
    pub mad: f64,
    /// Coefficient of variation, sd / |mean| (None for a zero mean).
    pub cv: Option<f64>,
    /// Indexes (in the order given) of samples whose modified z-score
    /// 0.6745·|x − median| / MAD exceeds 3.5 (Iglewicz and Hoaglin).
    pub outliers: Vec<usize>,
}

/// Fewer samples than this make a summary worth a warning.
pub const FEW: usize = 3;

/// The modified z-score beyond which a sample is flagged.
const OUTLIER_Z: f64 = 3.5;

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The median of `values`; none without any.
pub fn median(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| median_of_sorted(&sorted(values)))
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

impl Summary {
    pub fn of(values: &[f64]) -> Option<Summary> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd =
            if n > 1 { (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
        let sorted = sorted(values);
        let median = median_of_sorted(&sorted);
        let mad = median_of_sorted(&self::sorted(&values.iter().map(|v| (v - median).abs()).collect::<Vec<_>>()));
        let outliers = if mad > 0.0 {
            (0..n).filter(|&i| 0.6745 * (values[i] - median).abs() / mad > OUTLIER_Z).collect()
        } else {
            Vec::new()
        };
        let cv = (mean != 0.0).then(|| sd / mean.abs());
        let ci95 = (n > 1).then(|| {
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).map(|d| d.inverse_cdf(0.975)).unwrap_or(f64::NAN);
            let half = t * sd / (n as f64).sqrt();
            (mean - half, mean + half)
        });
        Some(Summary { n, mean, sd, median, min: sorted[0], max: sorted[n - 1], ci95, mad, cv, outliers })
    }

    pub fn few(&self) -> bool {
        self.n < FEW
    }

    /// Half the CI95's width as a share of the mean (adaptive repetition's yardstick).
    pub fn ci_half_width_pct(&self) -> Option<f64> {
        let (lo, hi) = self.ci95?;
        (self.mean != 0.0).then(|| (hi - lo) / 2.0 / self.mean.abs() * 100.0)
    }
}

/// Sample skewness (adjusted Fisher-Pearson, as scipy's `skew(bias=False)`).
pub fn skewness(values: &[f64]) -> Option<f64> {
    let n = values.len() as f64;
    if values.len() < 3 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n;
    let m2 = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let m3 = values.iter().map(|v| (v - mean).powi(3)).sum::<f64>() / n;
    if m2 == 0.0 {
        return Some(0.0);
    }
    let g1 = m3 / m2.powf(1.5);
    Some(g1 * (n * (n - 1.0)).sqrt() / (n - 2.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_values() {
        // scipy: mean 5, sd 2.138089935299395, t(7, .975) = 2.3646242510102993
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.n, s.mean, s.median, s.min, s.max), (8, 5.0, 4.5, 2.0, 9.0));
        assert!((s.sd - 2.138089935299395).abs() < 1e-12);
        let (lo, hi) = s.ci95.unwrap();
        let half = 2.3646242510102993 * 2.138089935299395 / 8f64.sqrt();
        assert!((lo - (5.0 - half)).abs() < 1e-9 && (hi - (5.0 + half)).abs() < 1e-9, "{lo} {hi}");
    }

    #[test]
    fn one_sample_has_no_interval() {
        let s = Summary::of(&[3.0]).unwrap();
        assert_eq!((s.sd, s.ci95), (0.0, None));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn mad_skew_and_outliers_as_scipy() {
        // scipy: median_abs_deviation = 1.0, skew(bias=False) = 2.7009186895769766
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0, 30.0];
        let s = Summary::of(&x).unwrap();
        assert_eq!(s.mad, 1.0);
        assert!((skewness(&x).unwrap() - 2.7009186895769766).abs() < 1e-12);
        // 0.6745·|x − 5| / 1 > 3.5 for 30 and for 9 (2.698: no), 2 (2.0235: no).
        assert_eq!(s.outliers, [8]);
        assert!(!s.few());
        assert!(Summary::of(&[1.0, 2.0]).unwrap().few());
        assert!((s.cv.unwrap() - s.sd / s.mean).abs() < 1e-15);
        assert!(Summary::of(&[3.0, 3.0, 3.0]).unwrap().outliers.is_empty(), "no spread, no outliers");
    }
}
