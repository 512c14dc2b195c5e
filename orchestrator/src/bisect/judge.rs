//! What a bisect makes of measurements: which series regressed between
//! the endpoints (the signals it follows), and whether a candidate
//! measures like the good endpoint or the bad one. Pure.
//!
//! A series is a signal when the endpoints differ by `decide`'s rule, the
//! bad one worse in the metric's `better` direction by at least the
//! threshold (a smaller change, however significant, is not what a bisect
//! is for). A candidate is compared with both endpoints, looking for a
//! change the size of the endpoints' own: the same as the good one and not
//! the bad one is good, and the other way round bad; different from both
//! (a second, smaller change on either side of it) is whichever it is
//! nearer; anything else wants more repetitions, and after the most
//! allowed is undecided. Over several signals, one bad series makes the
//! candidate bad (the first revision where any signal regressed), and it
//! is good only when every signal says so.

use super::decide::{compare, Comparison, Outcome};
use super::search::Verdict;
use crate::stats::median;
use benchrig_wire::args::Better;

/// One series' samples at the endpoints.
#[derive(Clone, Copy, Debug)]
pub struct Endpoints<'a> {
    pub good: &'a [f64],
    pub bad: &'a [f64],
    pub better: Better,
}

/// Whether the endpoints' series regressed.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Regression {
    /// `Different` with the bad endpoint worse by the threshold or more:
    /// a signal. `Unknown`: more repetitions of both decide.
    pub outcome: Outcome,
    pub comparison: Comparison,
    /// The bad endpoint's median against the good one's, in percent.
    pub change_pct: f64,
}

/// The endpoints' series compared: a regression of at least
/// `threshold_pct`; `None` while a side has no sample.
pub fn regression(e: Endpoints, threshold_pct: f64) -> Option<Regression> {
    let (g, b) = (median(e.good)?, median(e.bad)?);
    let comparison = compare(e.good, e.bad, b - g)?;
    // From nothing (a count of errors at 0), any change is all of it.
    let change_pct = match g {
        0.0 if b == 0.0 => 0.0,
        0.0 => f64::INFINITY.copysign(b),
        _ => (b / g - 1.0) * 100.0,
    };
    let worse = match e.better {
        Better::Higher => change_pct < 0.0,
        Better::Lower => change_pct > 0.0,
    };
    // Too small or the other way is not a regression, however sure.
    let outcome = match comparison.outcome {
        _ if !worse || change_pct.abs() < threshold_pct => Outcome::Same,
        o => o,
    };
    Some(Regression { outcome, comparison, change_pct })
}

/// A candidate's series against the endpoints': what it is, or `None`
/// when more repetitions should decide.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    pub verdict: Option<Verdict>,
    pub vs_good: Comparison,
    pub vs_bad: Comparison,
}

/// `candidate` against the endpoints of a signal; `at_most` is whether it
/// has had the most repetitions allowed (then undecided, not `None`).
pub fn call(e: Endpoints, candidate: &[f64], at_most: bool) -> Option<Call> {
    let (g, b, c) = (median(e.good)?, median(e.bad)?, median(candidate)?);
    let (vs_good, vs_bad) = (compare(e.good, candidate, b - g)?, compare(e.bad, candidate, b - g)?);
    use Outcome::*;
    let verdict = match (vs_good.outcome, vs_bad.outcome) {
        (Same, Different | Unknown) => Some(Verdict::Good),
        (Different | Unknown, Same) => Some(Verdict::Bad),
        // A second change on one side: the nearer endpoint's.
        (Different, Different) => Some(if (c - g) / (b - g) < 0.5 { Verdict::Good } else { Verdict::Bad }),
        _ if at_most => Some(Verdict::Undecided),
        _ => None,
    };
    Some(Call { verdict, vs_good, vs_bad })
}

/// Several signals' verdicts as the candidate's: bad when one is, good
/// when all are, undecided when none is bad and one stayed undecided;
/// `None` (more repetitions) otherwise.
pub fn overall(verdicts: impl IntoIterator<Item = Option<Verdict>>) -> Option<Verdict> {
    let (mut all_good, mut undecided, mut pending) = (true, false, false);
    for v in verdicts {
        match v {
            Some(Verdict::Bad) => return Some(Verdict::Bad),
            Some(Verdict::Good) => {}
            Some(Verdict::Undecided | Verdict::Skip) => (all_good, undecided) = (false, true),
            None => (all_good, pending) = (false, true),
        }
    }
    match () {
        _ if pending => None,
        _ if undecided => Some(Verdict::Undecided),
        _ if all_good => Some(Verdict::Good),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// `n` samples around `mean` with a `cv` spread (seeded normal draws).
    fn samples(seed: u64, mean: f64, cv: f64, n: usize) -> Vec<f64> {
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
                mean * (1.0 + cv * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos())
            })
            .collect()
    }

    #[test]
    fn a_four_times_slower_tool_is_a_regression_and_one_percent_is_not() {
        let good = samples(1, 100.0, 0.02, 10);
        let slow = samples(2, 25.0, 0.02, 10);
        let r = regression(Endpoints { good: &good, bad: &slow, better: Better::Higher }, 5.0).unwrap();
        assert_eq!(r.outcome, Outcome::Different, "{r:?}");
        assert!((r.change_pct + 75.0).abs() < 3.0, "{r:?}");
        // Faster is no regression; nor is 1% slower, however many samples.
        let fast = samples(3, 400.0, 0.02, 10);
        let faster = regression(Endpoints { good: &good, bad: &fast, better: Better::Higher }, 5.0).unwrap();
        assert_eq!(faster.outcome, Outcome::Same);
        let (g, b) = (samples(4, 100.0, 0.001, 40), samples(5, 99.0, 0.001, 40));
        let one = regression(Endpoints { good: &g, bad: &b, better: Better::Higher }, 5.0).unwrap();
        assert_eq!((one.outcome, one.comparison.outcome), (Outcome::Same, Outcome::Different));
        // Seconds: lower is better, so longer is worse.
        let r = regression(Endpoints { good: &slow, bad: &good, better: Better::Lower }, 5.0).unwrap();
        assert_eq!(r.outcome, Outcome::Different);
        // Errors from none to some: a regression of them all.
        let (none, some) = ([0.0; 8], [3.0, 4.0, 5.0, 3.0, 4.0, 5.0, 4.0, 4.0]);
        let r = regression(Endpoints { good: &none, bad: &some, better: Better::Lower }, 5.0).unwrap();
        assert_eq!((r.outcome, r.change_pct), (Outcome::Different, f64::INFINITY));
    }

    #[test]
    fn a_candidate_is_the_endpoint_it_measures_like() {
        let (good, bad) = (samples(1, 100.0, 0.02, 10), samples(2, 25.0, 0.02, 10));
        let e = Endpoints { good: &good, bad: &bad, better: Better::Higher };
        let verdict = |c: &[f64], at_most| call(e, c, at_most).unwrap().verdict;
        assert_eq!(verdict(&samples(3, 100.0, 0.02, 10), false), Some(Verdict::Good));
        assert_eq!(verdict(&samples(4, 25.0, 0.02, 10), false), Some(Verdict::Bad));
        // After the culprit, a further 1% (the bad endpoint has it too): bad.
        assert_eq!(verdict(&samples(5, 25.25, 0.0005, 10), false), Some(Verdict::Bad));
        // Like both (one repetition as fast as good, one as slow as bad) is
        // neither until the most repetitions, then undecided.
        let both = [100.0, 25.0];
        assert_eq!(verdict(&both, false), None);
        assert_eq!(verdict(&both, true), Some(Verdict::Undecided));
        // Between them, different from both: the nearer one's.
        assert_eq!(verdict(&samples(6, 70.0, 0.01, 10), false), Some(Verdict::Good));
        assert_eq!(verdict(&samples(7, 40.0, 0.01, 10), false), Some(Verdict::Bad));
    }

    #[test]
    fn one_bad_signal_makes_the_candidate_bad_and_all_good_makes_it_good() {
        use Verdict::*;
        assert_eq!(overall([Some(Good), None, Some(Bad)]), Some(Bad));
        assert_eq!(overall([Some(Good), Some(Good)]), Some(Good));
        assert_eq!(overall([Some(Good), None]), None);
        assert_eq!(overall([Some(Good), Some(Undecided)]), Some(Undecided));
    }
}
