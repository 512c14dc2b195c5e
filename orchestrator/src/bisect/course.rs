//! Where a bisect stands and what it does next, from what its steps
//! measured: pure. First the endpoints (the reference is the lab's state
//! today, not last week's night), more of them while no series is clearly
//! a regression yet; then the search over the candidates, a candidate
//! measured again until `judge` calls it or it has had the most
//! repetitions; at the end the first bad revision and its parent measured
//! once more, apart, and called again (KernelCI's guard): the answer is
//! found only when the culprit is bad again and its parent good again —
//! against the endpoints of the start, or, when the lab has moved since,
//! against the endpoints measured again beside them.

use super::judge::{self, call, overall, regression, Endpoints};
use super::search::{self, Verdict};
use super::series::Samples;
use crate::bisect::decide::Outcome;
use crate::history::series::SeriesKey;
use crate::status::BisectPurpose;

/// What the bisect knows: per revision (0 the good endpoint, the last the
/// bad one), its pooled samples and whether its build failed, and the
/// confirming steps' samples apart.
#[derive(Clone, Debug, Default)]
pub struct Course {
    pub measured: Vec<Samples>,
    /// How many measure runs each revision's `measured` is of (a run may
    /// bring none of the followed series: it still counts).
    pub rounds: Vec<usize>,
    pub skipped: Vec<bool>,
    /// Revision → the samples of its confirming steps, and their runs.
    pub confirmed: std::collections::BTreeMap<usize, Samples>,
    pub confirm_rounds: std::collections::BTreeMap<usize, usize>,
    pub max_reps: usize,
    pub threshold_pct: f64,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Measure { revision: usize, purpose: BisectPurpose },
    Done(Answer),
}

/// How a bisect ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// No followed series is worse at the bad endpoint by the threshold.
    NoRegression,
    /// The first bad revision, confirmed.
    Found(usize),
    /// The first bad revision is one of these (`search::Next::Among`).
    Among(Vec<usize>),
    /// The first bad revision the search found did not measure as it did
    /// a second time (or its parent did not).
    Unconfirmed { first_bad: usize, why: String },
    /// The endpoints measured no followed series in common: nothing to
    /// compare (a metric glob that matches nothing, a step renamed).
    NothingFollowed,
}

impl Course {
    /// A bisect over `revisions` revisions, nothing measured yet.
    pub fn new(revisions: usize, max_reps: usize, threshold_pct: f64) -> Course {
        Course {
            measured: vec![Samples::new(); revisions],
            rounds: vec![0; revisions],
            skipped: vec![false; revisions],
            confirmed: Default::default(),
            confirm_rounds: Default::default(),
            max_reps,
            threshold_pct,
        }
    }

    /// Where a measure run of revision `i` for `purpose` goes, counted.
    pub fn pool(&mut self, i: usize, purpose: BisectPurpose) -> &mut Samples {
        match purpose {
            BisectPurpose::Confirm => {
                *self.confirm_rounds.entry(i).or_default() += 1;
                self.confirmed.entry(i).or_default()
            }
            _ => {
                self.rounds[i] += 1;
                &mut self.measured[i]
            }
        }
    }

    fn last(&self) -> usize {
        self.measured.len() - 1
    }

    /// Revision `i` is the good or the bad endpoint.
    pub fn is_endpoint(&self, i: usize) -> bool {
        i == 0 || i == self.last()
    }

    /// The endpoints as measured at the start: (good, bad).
    fn start_ends(&self) -> (&Samples, &Samples) {
        (&self.measured[0], &self.measured[self.last()])
    }

    /// The endpoints a step of `purpose` is called against: for a
    /// confirmation, [`Course::confirm_ends`]; else those of the start.
    pub fn ends_for(&self, purpose: BisectPurpose) -> (&Samples, &Samples) {
        match purpose {
            BisectPurpose::Confirm => self.confirm_ends(),
            _ => self.start_ends(),
        }
    }

    /// The endpoints the confirmation is called against: those measured
    /// again once both are, else those of the start.
    fn confirm_ends(&self) -> (&Samples, &Samples) {
        match self.confirmed.get(&0).zip(self.confirmed.get(&self.last())) {
            Some(fresh) => fresh,
            None => self.start_ends(),
        }
    }

    /// What revision `i`'s confirming samples are so far, against
    /// [`Course::confirm_ends`].
    pub fn confirm_call(&self, i: usize, signals: &[SeriesKey]) -> Option<Verdict> {
        let samples = self.confirmed.get(&i)?;
        let rounds = self.confirm_rounds.get(&i).copied().unwrap_or(0);
        self.call_against(self.confirm_ends(), samples, rounds, signals)
    }

    /// The series that regressed between the endpoints, and those that
    /// may yet: undecided, with room for more repetitions.
    pub fn signals(&self) -> (Vec<SeriesKey>, Vec<SeriesKey>) {
        let (good, bad) = self.start_ends();
        let room = self.rounds[0].max(self.rounds[self.last()]) < self.max_reps;
        let (mut signals, mut undecided) = (Vec::new(), Vec::new());
        for (key, g) in good {
            let Some(b) = bad.get(key) else { continue };
            let e = Endpoints { good: &g.values, bad: &b.values, better: g.better };
            match regression(e, self.threshold_pct).map(|r| r.outcome) {
                Some(Outcome::Different) => signals.push(key.clone()),
                Some(Outcome::Unknown) if room && g.values.len().min(b.values.len()) < self.max_reps => {
                    undecided.push(key.clone())
                }
                _ => {}
            }
        }
        (signals, undecided)
    }

    /// What `samples` (of `rounds` measure runs) are against the endpoints
    /// on `signals`; `None`: more repetitions. A series with the most
    /// samples, or after the most runs, is called or undecided; one a run
    /// did not bring is undecided (more runs will not bring it).
    pub fn call(&self, samples: &Samples, rounds: usize, signals: &[SeriesKey]) -> Option<Verdict> {
        self.call_against(self.start_ends(), samples, rounds, signals)
    }

    /// [`Course::call`] against endpoints `(good, bad)`.
    fn call_against(
        &self,
        (good, bad): (&Samples, &Samples),
        samples: &Samples,
        rounds: usize,
        signals: &[SeriesKey],
    ) -> Option<Verdict> {
        overall(signals.iter().map(|k| {
            let (Some(g), Some(b)) = (good.get(k), bad.get(k)) else { return Some(Verdict::Undecided) };
            let e = Endpoints { good: &g.values, bad: &b.values, better: g.better };
            match samples.get(k) {
                Some(c) => {
                    let at_most = c.values.len() >= self.max_reps || rounds >= self.max_reps;
                    call(e, &c.values, at_most).and_then(|c| c.verdict)
                }
                None if rounds > 0 => Some(Verdict::Undecided),
                None => None,
            }
        }))
    }

    /// Each revision's verdict so far (endpoints: none).
    pub fn verdicts(&self, signals: &[SeriesKey]) -> Vec<Option<Verdict>> {
        (0..self.measured.len())
            .map(|i| match i {
                _ if i == 0 || i == self.last() => None,
                _ if self.skipped[i] => Some(Verdict::Skip),
                _ if self.rounds[i] == 0 => None,
                _ => self.call(&self.measured[i], self.rounds[i], signals),
            })
            .collect()
    }

    pub fn next(&self) -> Action {
        let measure = |revision, purpose| Action::Measure { revision, purpose };
        for end in [0, self.last()] {
            if self.rounds[end] == 0 {
                return measure(end, BisectPurpose::Endpoint);
            }
        }
        let bad = &self.measured[self.last()];
        if !self.measured[0].keys().any(|k| bad.contains_key(k)) {
            return Action::Done(Answer::NothingFollowed);
        }
        let (signals, undecided) = self.signals();
        if signals.is_empty() {
            if undecided.is_empty() {
                return Action::Done(Answer::NoRegression);
            }
            // The endpoint with fewer samples of the undecided series.
            let n = |i: usize| undecided.iter().map(|k| self.measured[i][k].values.len()).min().unwrap_or(0);
            let fewer = if n(self.last()) < n(0) { self.last() } else { 0 };
            return measure(fewer, BisectPurpose::Endpoint);
        }
        let known = self.verdicts(&signals);
        // A candidate measured and not called yet is measured again first.
        if let Some(i) = (1..self.last()).find(|&i| self.rounds[i] > 0 && known[i].is_none()) {
            return measure(i, BisectPurpose::Candidate);
        }
        match search::next(&known) {
            search::Next::Measure(i) => measure(i, BisectPurpose::Candidate),
            search::Next::Among(among) => Action::Done(Answer::Among(among)),
            search::Next::Found(first_bad) => self.confirm(first_bad, &signals),
        }
    }

    /// The first bad revision and its parent, measured again apart: each
    /// until called, then the answer. When either comes out otherwise, the
    /// lab may have moved since the endpoints were measured (a load spike
    /// then, a disk warmed up since): the endpoints are measured again
    /// too, once, beside the confirmation, and it is called against them.
    /// Either way the answer stands only with the culprit bad and its
    /// parent good, measured now.
    fn confirm(&self, first_bad: usize, signals: &[SeriesKey]) -> Action {
        let last = self.last();
        let first = match self.confirm_against(self.start_ends(), first_bad, signals) {
            Ok(wrong) if wrong.is_empty() => return Action::Done(Answer::Found(first_bad)),
            Ok(wrong) => wrong,
            Err(more) => return more,
        };
        let Some(fresh) = self.confirmed.get(&0).zip(self.confirmed.get(&last)) else {
            let end = if self.confirmed.contains_key(&0) { last } else { 0 };
            return Action::Measure { revision: end, purpose: BisectPurpose::Confirm };
        };
        // Measured again as often as at the start, at most, while they do
        // not yet differ on every signal as they did then.
        if !signals.iter().all(|k| self.differ(fresh, k)) {
            // Each up to its own count at the start (which differ when
            // one end was measured more while a series was undecided).
            let runs = |i: usize| self.confirm_rounds.get(&i).copied().unwrap_or(0);
            let short = [0, last].into_iter().filter(|&i| runs(i) < self.rounds[i]).min_by_key(|&i| runs(i));
            if let Some(end) = short {
                return Action::Measure { revision: end, purpose: BisectPurpose::Confirm };
            }
            return Action::Done(Answer::Unconfirmed {
                first_bad,
                why: format!(
                    "{}; the endpoints measured again no longer differ by {}% or more",
                    first.join("; "),
                    self.threshold_pct
                ),
            });
        }
        match self.confirm_against(fresh, first_bad, signals) {
            Ok(again) if again.is_empty() => Action::Done(Answer::Found(first_bad)),
            Ok(again) => Action::Done(Answer::Unconfirmed {
                first_bad,
                why: format!("{}; against the endpoints measured again, {}", first.join("; "), again.join("; ")),
            }),
            Err(more) => more,
        }
    }

    /// Whether endpoints `(good, bad)` differ on series `k` as a signal does.
    fn differ(&self, (good, bad): (&Samples, &Samples), k: &SeriesKey) -> bool {
        let (Some(g), Some(b)) = (good.get(k), bad.get(k)) else { return false };
        let e = Endpoints { good: &g.values, bad: &b.values, better: g.better };
        regression(e, self.threshold_pct).is_some_and(|r| r.outcome == Outcome::Different)
    }

    /// What the culprit's and its parent's confirming samples came out as
    /// against endpoints `ends`, where not what the search found; `Err`:
    /// which to measure again first.
    fn confirm_against(
        &self,
        ends: (&Samples, &Samples),
        first_bad: usize,
        signals: &[SeriesKey],
    ) -> Result<Vec<String>, Action> {
        let mut wrong = Vec::new();
        for (i, want) in [(first_bad, Verdict::Bad), (first_bad - 1, Verdict::Good)] {
            let empty = Samples::new();
            let again = self.confirmed.get(&i).unwrap_or(&empty);
            let rounds = self.confirm_rounds.get(&i).copied().unwrap_or(0);
            match (rounds, self.call_against(ends, again, rounds, signals)) {
                (1.., Some(got)) if got == want => {}
                (1.., Some(got)) => wrong.push(format!("revision {i} measured {got} again (it was {want})")),
                _ => return Err(Action::Measure { revision: i, purpose: BisectPurpose::Confirm }),
            }
        }
        Ok(wrong)
    }
}

/// One followed series' figures at a step: its samples' n, mean and CI95,
/// and each comparison with the endpoints (none for an endpoint).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Figures {
    pub series: String,
    pub n: usize,
    pub mean: f64,
    pub ci95: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_good: Option<crate::bisect::decide::Comparison>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_bad: Option<crate::bisect::decide::Comparison>,
}

impl Course {
    /// `samples`' figures on each of `signals` (each followed series for
    /// an endpoint, before there are signals), compared with `ends` (the
    /// endpoints its verdict is called against, [`Course::ends_for`];
    /// none for an endpoint).
    pub fn figures(
        &self,
        samples: &Samples,
        signals: &[SeriesKey],
        ends: Option<(&Samples, &Samples)>,
    ) -> Vec<Figures> {
        let keys: Vec<&SeriesKey> = match ends.is_none() || signals.is_empty() {
            true => samples.keys().collect(),
            false => signals.iter().collect(),
        };
        keys.into_iter()
            .filter_map(|k| {
                let c = samples.get(k)?;
                let s = crate::stats::Summary::of(&c.values)?;
                let called = ends.and_then(|(good, bad)| {
                    let e = Endpoints { good: &good.get(k)?.values, bad: &bad.get(k)?.values, better: c.better };
                    call(e, &c.values, false)
                });
                Some(Figures {
                    series: k.describe(),
                    n: s.n,
                    mean: s.mean,
                    ci95: s.ci95,
                    vs_good: called.map(|c| c.vs_good),
                    vs_bad: called.map(|c| c.vs_bad),
                })
            })
            .collect()
    }
}

/// The endpoints' figures per series, for a bisect that found no
/// regression to say why: each series' regression test.
pub fn endpoint_figures(c: &Course) -> Vec<(SeriesKey, judge::Regression)> {
    let (good, bad) = c.start_ends();
    good.iter()
        .filter_map(|(k, g)| {
            let b = bad.get(k)?;
            let e = Endpoints { good: &g.values, bad: &b.values, better: g.better };
            Some((k.clone(), regression(e, c.threshold_pct)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::series::Sampled;
    use super::*;
    use benchrig_wire::args::Better;
    use rand::{RngExt, SeedableRng};

    /// The tool: 40 commits after the good one; commit 23 makes it
    /// 4× slower, commit 30 a further 1%, commit 11 does not build. Each
    /// measure run gives 5 repetitions of one series with a 2% spread.
    struct Lab {
        rng: rand::rngs::ChaCha8Rng,
        /// (revision, purpose) of every step, in order.
        steps: Vec<(usize, BisectPurpose)>,
    }

    impl Lab {
        fn mean(rev: usize) -> f64 {
            let slow = if rev >= 23 { 25.0 } else { 100.0 };
            if rev >= 30 {
                slow * 0.99
            } else {
                slow
            }
        }

        fn run(&mut self, rev: usize) -> Samples {
            self.run_at(rev, 1.0)
        }

        /// A run with the lab at `speed` of what it was (0.5: half as fast).
        fn run_at(&mut self, rev: usize, speed: f64) -> Samples {
            let mut out = Samples::new();
            let key = SeriesKey {
                host: "hdd".into(),
                play: "fsync".into(),
                cell: "-".into(),
                step: "write".into(),
                metric: "throughput".into(),
            };
            let values = (0..5)
                .map(|_| {
                    let (u1, u2): (f64, f64) = (self.rng.random::<f64>().max(1e-12), self.rng.random());
                    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                    Self::mean(rev) * speed * (1.0 + 0.02 * z)
                })
                .collect();
            out.insert(key, Sampled { unit: "MB/s".into(), better: Better::Higher, values });
            out
        }

        /// Bisects revisions `from..=to` of the tool to its answer.
        fn bisect(seed: u64, from: usize, to: usize) -> (Answer, Vec<(usize, BisectPurpose)>) {
            Self::bisect_drifting(seed, from, to, |_, _, _| 1.0)
        }

        /// The same on a lab whose speed at the n-th step (for a purpose, of
        /// a revision) is `speed(n, purpose, revision)`.
        fn bisect_drifting(
            seed: u64,
            from: usize,
            to: usize,
            speed: impl Fn(usize, BisectPurpose, usize) -> f64,
        ) -> (Answer, Vec<(usize, BisectPurpose)>) {
            let mut lab = Lab { rng: rand::rngs::ChaCha8Rng::seed_from_u64(seed), steps: Vec::new() };
            let mut c = Course::new(to - from + 1, 40, 5.0);
            let answer = lab.drive(&mut c, from, speed);
            (answer, lab.steps)
        }

        /// Takes course `c` (of revisions from `from`) on to its answer.
        fn drive(&mut self, c: &mut Course, from: usize, speed: impl Fn(usize, BisectPurpose, usize) -> f64) -> Answer {
            for _ in 0..200 {
                match c.next() {
                    Action::Done(answer) => return answer,
                    Action::Measure { revision, purpose } => {
                        self.steps.push((from + revision, purpose));
                        if from + revision == 11 {
                            c.skipped[revision] = true;
                            continue;
                        }
                        let got = self.run_at(from + revision, speed(self.steps.len(), purpose, from + revision));
                        Self::add(c.pool(revision, purpose), got);
                    }
                }
            }
            panic!("no answer in 200 steps: {:?}", self.steps);
        }

        fn add(into: &mut Samples, got: Samples) {
            for (k, s) in got {
                into.entry(k).or_insert_with(|| Sampled { values: vec![], ..s.clone() }).values.extend(s.values);
            }
        }
    }

    #[test]
    fn the_four_times_slower_commit_is_found_confirmed_in_few_candidates() {
        for seed in 0..20 {
            let (answer, steps) = Lab::bisect(seed, 0, 40);
            assert_eq!(answer, Answer::Found(23), "seed {seed}: {steps:?}");
            let mut candidates: Vec<usize> =
                steps.iter().filter(|(_, p)| *p == BisectPurpose::Candidate).map(|(r, _)| *r).collect();
            candidates.dedup();
            // ⌈log2 40⌉ + 3 measured candidates at most.
            assert!(candidates.len() <= 9, "seed {seed}: {candidates:?}");
            let confirms: Vec<usize> =
                steps.iter().filter(|(_, p)| *p == BisectPurpose::Confirm).map(|(r, _)| *r).collect();
            assert!(confirms.contains(&23) && confirms.contains(&22), "seed {seed}: {steps:?}");
        }
    }

    #[test]
    fn a_lab_that_slowed_by_confirmation_time_is_measured_again_at_its_endpoints() {
        // Half as fast from the confirmation on: the culprit's parent now
        // measures nearer the bad endpoint of the start than the good one.
        for seed in 0..10 {
            let (answer, steps) = Lab::bisect_drifting(seed, 0, 40, |_, p, _| match p {
                BisectPurpose::Confirm => 0.5,
                _ => 1.0,
            });
            assert_eq!(answer, Answer::Found(23), "seed {seed}: {steps:?}");
            let confirms: Vec<usize> =
                steps.iter().filter(|(_, p)| *p == BisectPurpose::Confirm).map(|(r, _)| *r).collect();
            assert!(confirms.contains(&0) && confirms.contains(&40), "the endpoints again: {steps:?}");
        }
        // A steady lab confirms without them.
        let (_, steps) = Lab::bisect(3, 0, 40);
        assert!(!steps.contains(&(0, BisectPurpose::Confirm)), "{steps:?}");
        // The culprit next to an endpoint: its confirmation is that
        // endpoint's measurement again, and the answer still stands.
        for (from, to, first_bad) in [(22, 23, 1), (22, 25, 1), (20, 23, 3)] {
            for speed in [1.0, 0.5] {
                let (answer, steps) = Lab::bisect_drifting(5, from, to, |_, p, _| match p {
                    BisectPurpose::Confirm => speed,
                    _ => 1.0,
                });
                assert_eq!(answer, Answer::Found(first_bad), "{from}..={to} at {speed}: {steps:?}");
            }
        }
    }

    #[test]
    fn endpoints_that_no_longer_differ_leave_the_answer_unconfirmed() {
        // From the confirmation on, every revision is as fast as the good one.
        let (answer, steps) = Lab::bisect_drifting(4, 0, 40, |_, p, rev| match p {
            BisectPurpose::Confirm => 100.0 / Lab::mean(rev),
            _ => 1.0,
        });
        let Answer::Unconfirmed { why, .. } = answer else { panic!("{answer:?} {steps:?}") };
        assert!(why.ends_with("the endpoints measured again no longer differ by 5% or more"), "{why}");
        // Each endpoint measured again as often as at the start, no more.
        let again = |r: usize| steps.iter().filter(|s| **s == (r, BisectPurpose::Confirm)).count();
        let first = |r: usize| steps.iter().filter(|s| **s == (r, BisectPurpose::Endpoint)).count();
        assert_eq!((again(0), again(40)), (first(0), first(40)), "{steps:?}");
    }

    #[test]
    fn each_endpoint_is_measured_again_up_to_its_own_count_at_the_start() {
        // The bad end measured three times at the start (more repetitions
        // while a series was undecided), the good one once; from the
        // confirmation on, every revision is as fast as the good one.
        let mut lab = Lab { rng: rand::rngs::ChaCha8Rng::seed_from_u64(6), steps: Vec::new() };
        let mut c = Course::new(41, 40, 5.0);
        let good = lab.run(0);
        Lab::add(c.pool(0, BisectPurpose::Endpoint), good);
        for _ in 0..3 {
            let bad = lab.run(40);
            Lab::add(c.pool(40, BisectPurpose::Endpoint), bad);
        }
        let answer = lab.drive(&mut c, 0, |_, p, rev| match p {
            BisectPurpose::Confirm => 100.0 / Lab::mean(rev),
            _ => 1.0,
        });
        assert!(matches!(answer, Answer::Unconfirmed { .. }), "{answer:?} {:?}", lab.steps);
        let again = |r: usize| lab.steps.iter().filter(|s| **s == (r, BisectPurpose::Confirm)).count();
        // 0 once more as the culprit's parent would count too: none here,
        // as the culprit (23) is no neighbour of it.
        assert_eq!((again(0), again(40)), (1, 3), "{:?}", lab.steps);
    }

    #[test]
    fn a_lab_that_slowed_mid_search_never_names_a_wrong_commit() {
        // Half as fast from the fourth step: the search goes wrong; the
        // confirmation, against endpoints measured again, says so.
        for seed in 0..10 {
            let (answer, steps) = Lab::bisect_drifting(seed, 0, 40, |n, _, _| if n >= 4 { 0.5 } else { 1.0 });
            match answer {
                Answer::Found(i) => assert_eq!(i, 23, "seed {seed}: {steps:?}"),
                Answer::Unconfirmed { why, .. } => {
                    assert!(why.contains("against the endpoints measured again"), "{why}")
                }
                other => panic!("seed {seed}: {other:?} {steps:?}"),
            }
        }
    }

    #[test]
    fn a_range_without_the_slow_commit_has_no_regression_though_it_has_the_one_percent() {
        let (answer, steps) = Lab::bisect(1, 24, 40);
        assert_eq!(answer, Answer::NoRegression, "{steps:?}");
        assert!(steps.iter().all(|(_, p)| *p == BisectPurpose::Endpoint));
    }

    #[test]
    fn runs_that_bring_nothing_end_the_bisect_instead_of_looping() {
        // The endpoints measure no followed series (a glob matching nothing).
        let mut c = Course::new(5, 10, 5.0);
        for end in [0, 4] {
            assert_eq!(c.next(), Action::Measure { revision: end, purpose: BisectPurpose::Endpoint });
            c.pool(end, BisectPurpose::Endpoint);
        }
        assert_eq!(c.next(), Action::Done(Answer::NothingFollowed));
        // A candidate whose run brought none of the signals is undecided
        // after one run, not measured forever.
        let mut lab = Lab { rng: rand::rngs::ChaCha8Rng::seed_from_u64(9), steps: Vec::new() };
        let mut c = Course::new(3, 10, 5.0);
        let (good, bad) = (lab.run(0), lab.run(30));
        c.pool(0, BisectPurpose::Endpoint).extend(good);
        c.pool(2, BisectPurpose::Endpoint).extend(bad);
        assert_eq!(c.next(), Action::Measure { revision: 1, purpose: BisectPurpose::Candidate });
        c.pool(1, BisectPurpose::Candidate);
        assert_eq!(c.next(), Action::Done(Answer::Among(vec![1, 2])));
    }

    #[test]
    fn the_broken_build_is_skipped_where_the_search_visits_it() {
        // 0..=23: the first middle is 11, which does not build; 12 is next.
        let (answer, steps) = Lab::bisect(2, 0, 23);
        assert_eq!(answer, Answer::Found(23), "{steps:?}");
        assert_eq!(steps.iter().filter(|(r, _)| *r == 11).count(), 1, "tried once: {steps:?}");
        assert_eq!(steps[2..4], [(11, BisectPurpose::Candidate), (12, BisectPurpose::Candidate)]);
    }
}
