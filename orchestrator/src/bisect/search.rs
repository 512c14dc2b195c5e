//! Which revision a bisect measures next, from what it knows of each:
//! pure. Revisions are in order, 0 the good endpoint and the last the bad
//! one; between the newest good and the oldest bad after it, the untried
//! revision nearest the middle is next (the lower of two as near). A
//! revision whose build failed is skipped and one that stayed undecided
//! is never guessed: the search moves to its nearest neighbour, as `git
//! bisect skip` does, and when only such revisions are left between a good
//! and a bad one, the answer is "one of these".

pub use crate::status::BisectVerdict as Verdict;

/// What the bisect does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Measure revision i.
    Measure(usize),
    /// Revision i is the first bad one; i − 1 is good.
    Found(usize),
    /// The first bad revision is one of these (in order; the last is bad,
    /// the others skipped or undecided).
    Among(Vec<usize>),
}

/// The next step, given each revision's verdict so far (`None`: not
/// tried). The endpoints are taken as good and bad whatever `known` says
/// of them: the bisect checks them before it searches.
pub fn next(known: &[Option<Verdict>]) -> Next {
    let last = known.len().saturating_sub(1);
    let is = |i: usize, v: Verdict| known[i] == Some(v);
    let good = (1..last).rev().find(|&i| is(i, Verdict::Good)).unwrap_or(0);
    let bad = (good + 1..last).find(|&i| is(i, Verdict::Bad)).unwrap_or(last);
    let untried = (good + 1..bad).filter(|&i| known[i].is_none());
    // Nearest the middle: |2i − (good + bad)|, the lower on a tie.
    match untried.min_by_key(|&i| ((2 * i).abs_diff(good + bad), i)) {
        Some(i) => Next::Measure(i),
        None if bad == good + 1 => Next::Found(bad),
        None => Next::Among((good + 1..=bad).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bisects revisions 0..=n whose first bad one is `culprit`, with the
    /// verdict `special` gives for some; the revisions measured, in order,
    /// and the answer.
    fn bisect(n: usize, culprit: usize, special: &dyn Fn(usize) -> Option<Verdict>) -> (Vec<usize>, Next) {
        let mut known = vec![None; n + 1];
        let mut measured = Vec::new();
        loop {
            match next(&known) {
                Next::Measure(i) => {
                    assert!(known[i].is_none() && !measured.contains(&i), "{i} measured once");
                    measured.push(i);
                    let plain = if i >= culprit { Verdict::Bad } else { Verdict::Good };
                    known[i] = Some(special(i).unwrap_or(plain));
                }
                done => return (measured, done),
            }
        }
    }

    #[test]
    fn every_culprit_of_forty_is_found_in_log2_steps() {
        for culprit in 1..=40 {
            let (measured, found) = bisect(40, culprit, &|_| None);
            assert_eq!(found, Next::Found(culprit));
            assert!(measured.len() <= 6, "culprit {culprit}: {measured:?}");
        }
        assert_eq!(bisect(40, 23, &|_| None).0, [20, 30, 25, 22, 23]);
    }

    #[test]
    fn a_skipped_build_moves_the_search_to_its_neighbour() {
        // Revision 20 (the first middle) does not build: 19 is tried instead.
        let skip20 = |i: usize| (i == 20).then_some(Verdict::Skip);
        let (measured, found) = bisect(40, 23, &skip20);
        assert_eq!(found, Next::Found(23));
        assert_eq!(measured[..2], [20, 19]);
        // The culprit's parent is skipped: the answer is one of the two.
        let skip22 = |i: usize| (i == 22).then_some(Verdict::Skip);
        assert_eq!(bisect(40, 23, &skip22).1, Next::Among(vec![22, 23]));
    }

    #[test]
    fn an_undecided_revision_is_never_guessed() {
        let undecided = |i: usize| (i == 23).then_some(Verdict::Undecided);
        let (measured, found) = bisect(40, 23, &undecided);
        assert_eq!(found, Next::Among(vec![23, 24]));
        assert!(measured.contains(&24));
    }

    #[test]
    fn adjacent_endpoints_need_no_measurement() {
        assert_eq!(next(&[None, None]), Next::Found(1));
    }
}
