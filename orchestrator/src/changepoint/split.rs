//! Otava's split pass (`analysis.split`): detect change points in sliding
//! windows and pool them, the "weak" change points, each then tested
//! against its neighbours over the whole series. Windows overlap so that a
//! change near one window's edge is well inside another's.

use super::detect::detect;
use super::energy::Split;
use super::ttest::around;
use super::ChangePoint;

/// The weak change points of `series`, ascending, found with `threshold`
/// (the first-pass p-value) in windows of `window_len` (at least 2).
pub(super) fn split(series: &[f64], window_len: usize, threshold: f64) -> Vec<ChangePoint> {
    let found = windows(series.len(), window_len, |start, end| {
        let mut found = detect(&series[start..end], threshold);
        for f in &mut found {
            f.index += start;
        }
        found
    });
    let indexes: Vec<usize> = found.iter().map(|f| f.index).collect();
    found
        .iter()
        .enumerate()
        .map(|(k, f)| ChangePoint { index: f.index, qhat: f.qhat, stats: around(series, &indexes, k) })
        .collect()
}

/// Runs `detect(start, end)` (which returns series indexes, ascending) over
/// Otava's windows of a series of `n` points, and pools what it finds,
/// sorted. The next window starts at the last change point this one found,
/// or half a window on if that is later: `[0, 50)`, `[25, 60)`, `[50, 60)`
/// for 60 points and nothing found. A change point two windows find keeps
/// the `qhat` of the first.
fn windows(n: usize, window_len: usize, mut detect: impl FnMut(usize, usize) -> Vec<Split>) -> Vec<Split> {
    let step = window_len / 2;
    let mut start = 0;
    let mut weak: Vec<Split> = Vec::new();
    while start < n {
        let end = start.saturating_add(window_len).min(n);
        let found = detect(start, end);
        let last = found.last().map_or(0, |f| f.index);
        start = last.max(start.saturating_add(step));
        for f in found {
            if !weak.iter().any(|w| w.index == f.index) {
                weak.push(f);
            }
        }
    }
    weak.sort_by_key(|f| f.index);
    weak
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visited(n: usize, window_len: usize, finds: &[(usize, &[usize])]) -> (Vec<(usize, usize)>, Vec<usize>) {
        let mut seen = Vec::new();
        let weak = windows(n, window_len, |start, end| {
            seen.push((start, end));
            let hits = finds.iter().find(|(s, _)| *s == start).map_or(&[][..], |(_, h)| *h);
            hits.iter().map(|&index| Split { index, qhat: start as f64 }).collect()
        });
        (seen, weak.iter().map(|w| w.index).collect())
    }

    #[test]
    fn windows_slide_by_half_a_window() {
        assert_eq!(visited(60, 50, &[]).0, [(0, 50), (25, 60), (50, 60)]);
        assert_eq!(visited(0, 50, &[]).0, []);
        // An odd window steps by its floor half; the last windows shrink.
        assert_eq!(visited(7, 3, &[]).0, [(0, 3), (1, 4), (2, 5), (3, 6), (4, 7), (5, 7), (6, 7)]);
    }

    #[test]
    fn a_window_starts_at_the_last_change_point_found_when_that_is_further() {
        // [0, 50) finds 10 and 40: the next window starts at 40, not 25.
        let (seen, weak) = visited(100, 50, &[(0, &[10, 40]), (40, &[12])]);
        assert_eq!(seen, [(0, 50), (40, 90), (65, 100), (90, 100)]);
        assert_eq!(weak, [10, 12, 40]);
        // A change point behind the step does not pull the window back.
        let (seen, _) = visited(100, 50, &[(0, &[5])]);
        assert_eq!(seen[1], (25, 75));
    }

    #[test]
    fn a_change_point_found_twice_is_kept_once_with_its_first_qhat() {
        let weak = windows(100, 50, |start, _| {
            let hit = |index| Split { index, qhat: start as f64 };
            match start {
                0 => vec![hit(30)],
                30 => vec![hit(30), hit(70)],
                _ => vec![],
            }
        });
        assert_eq!(weak, [Split { index: 30, qhat: 0.0 }, Split { index: 70, qhat: 30.0 }]);
    }

    #[test]
    fn weak_change_points_are_tested_against_their_pooled_neighbours() {
        // Three levels; each weak point's stats span its neighbours over
        // the whole series, not the window that found it.
        let series: Vec<f64> = (0..90).map(|i| [10.0, 20.0, 30.0][i / 30] + ((i * 37) % 11) as f64 / 10.0).collect();
        let weak = split(&series, 50, 0.01);
        let idx: Vec<usize> = weak.iter().map(|c| c.index).collect();
        assert_eq!(idx, [30, 60]);
        assert_eq!(weak[0].stats, around(&series, &idx, 0));
        assert_eq!(weak[0].stats.mean_after, super::super::ttest::mean(&series[30..60]));
    }
}
