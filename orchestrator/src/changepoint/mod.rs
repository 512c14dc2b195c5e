//! Change points in a series of results, as Apache Otava 0.8.0 finds them
//! (`otava.analysis.compute_change_points`, the default, non-incremental
//! path of `otava analyze`): a port, figure for figure, so that benchrig
//! and Otava flag the same commits.
//!
//! Two passes. `split` runs E-Divisive means (`energy`: the split that
//! maximises the energy statistic Q over τ and κ; `detect`: bisection until
//! the best split's t-test fails) in overlapping windows of `window_len`
//! points, with a relaxed first-pass p-value, and pools the "weak" change
//! points. `merge` then removes the weakest (highest p, then smallest
//! relative change) until every one passes `max_pvalue` and
//! `min_magnitude`. The test (`ttest`) is Student's pooled t-test on
//! population standard deviations, Otava's choice.
//!
//! Hand-written because no maintained crate implements E-Divisive means,
//! let alone Otava's windowed t-test variant (`edivisive` 0.1.0 is one
//! 2021 release of another variant; `changepoint` has BOCPD only).
//! Otava's quirks are kept where they change results: κ is maximised too
//! (not fixed at the end), the p-value thresholds are `<=` in split and `<`
//! in merge, Python's first-wins `max`/`min` with NaN, and merge's stale
//! left neighbour (see `merge`). `tests/changepoint_parity.rs` checks the
//! port against Otava itself: the same change points, means, deviations
//! and qhat to the bit; p-values within about 1e-12 (statrs against scipy),
//! so only a p-value that close to a threshold could be judged otherwise.
//! Otava's incremental mode (`new_data`, `old_weak_cp`) is not ported.

mod detect;
mod energy;
mod merge;
mod split;
mod ttest;

pub use ttest::TTestStats;

/// Otava's options, with its defaults (`AnalysisOptions`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Points per sliding window (at least 2); windows overlap by half.
    pub window_len: usize,
    /// A change point is kept when its p-value is below this.
    pub max_pvalue: f64,
    /// ... and its relative change (`TTestStats::magnitude`) above this.
    pub min_magnitude: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { window_len: 50, max_pvalue: 0.001, min_magnitude: 0.0 }
    }
}

/// A change point: the series is different from `index` on (the first
/// point after the change; never 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    /// The energy statistic of the split in the window that first found it
    /// (informational; not comparable across windows).
    pub qhat: f64,
    /// The t-test against the neighbouring change points (or the series'
    /// ends), as merge left it: possibly stale (see `merge`), as in Otava.
    pub stats: TTestStats,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangePointError {
    #[error("window length {0} is too short: a window must hold at least 2 points")]
    WindowTooShort(usize),
}

/// The change points of `series`, ascending by index.
///
/// A NaN or an infinity makes every window holding it find nothing, and
/// the segments around it test as NaN; no error, as in Otava.
pub fn change_points(series: &[f64], opts: &Options) -> Result<Vec<ChangePoint>, ChangePointError> {
    if opts.window_len < 2 {
        return Err(ChangePointError::WindowTooShort(opts.window_len));
    }
    let weak = split::split(series, opts.window_len, first_pass_pvalue(opts.max_pvalue));
    Ok(merge::merge(weak, series, opts.max_pvalue, opts.min_magnitude))
}

/// The split pass's threshold: looser than `max_pvalue`, so that merge has
/// candidates to weed (10× below 0.05, 2× below 0.5, else the same).
pub fn first_pass_pvalue(max_pvalue: f64) -> f64 {
    if max_pvalue < 0.05 {
        max_pvalue * 10.0
    } else if max_pvalue < 0.5 {
        max_pvalue * 2.0
    } else {
        max_pvalue
    }
}

#[cfg(test)]
mod tests;
