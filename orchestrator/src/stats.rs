//! Summaries of a metric's samples: n, mean, sample standard deviation,
//! median, min, max and a 95% confidence interval of the mean (Student t).

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
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        let ci95 = (n > 1).then(|| {
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).map(|d| d.inverse_cdf(0.975)).unwrap_or(f64::NAN);
            let half = t * sd / (n as f64).sqrt();
            (mean - half, mean + half)
        });
        Some(Summary { n, mean, sd, median, min: sorted[0], max: sorted[n - 1], ci95 })
    }
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
}
