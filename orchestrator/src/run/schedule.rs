//! The order a host runs a play's cells in (`cell_order`), and the batches
//! its hosts run in (`serial`). Pure: the shuffle's seed comes in.

use crate::playbook::{Batch, CellOrder};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::ops::RangeInclusive;

/// One stretch of a cell's repetitions, run between its setup and teardown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visit {
    pub cell: usize,
    pub reps: RangeInclusive<u32>,
}

/// Visits that run on one setup, one after another: a single visit, or
/// (`fresh: round`) the visits of one round whose cells have identical
/// setups.
pub type Group = Vec<Visit>;

/// Which cells may share a setup: equal numbers for equal keys (a cell's
/// `Cell::shared_setup`), numbered in order of first appearance; `None`
/// (a cell that never shares) stays `None`.
pub fn classes<K: PartialEq>(keys: &[Option<K>]) -> Vec<Option<usize>> {
    let mut seen: Vec<&K> = Vec::new();
    keys.iter()
        .map(|k| {
            let k = k.as_ref()?;
            Some(seen.iter().position(|s| *s == k).unwrap_or_else(|| {
                seen.push(k);
                seen.len() - 1
            }))
        })
        .collect()
}

/// Every visit, in order and grouped, for cells with these repetition
/// counts and setup `classes` (see [`classes`]). A cell's visits always go
/// up in repetition number, so its last visit ends it.
///
/// Sequential order runs each cell to its end: one group a cell (classes
/// are not used; the planner refuses `fresh: round` there). Otherwise each
/// round r holds every cell's repetition r; within it the cells of one
/// class form one group, placed where its first cell comes, so a group is
/// contiguous. Shuffled, the groups of a round are shuffled, then the
/// visits within each group of several, all from the seed. With no class
/// (every cell `fresh: cell`) every group is one visit and the order is
/// the one a plain per-round shuffle gives.
pub fn visits(repeats: &[u32], classes: &[Option<usize>], order: CellOrder, seed: u64) -> Vec<Group> {
    if order == CellOrder::Sequential {
        return repeats.iter().enumerate().map(|(cell, &n)| vec![Visit { cell, reps: 1..=n }]).collect();
    }
    // ChaCha8 is specified and portable: the recorded seed replays the order anywhere.
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
    let rounds = repeats.iter().copied().max().unwrap_or(0);
    let mut out = Vec::new();
    for r in 1..=rounds {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of_class: Vec<(usize, usize)> = Vec::new();
        for cell in (0..repeats.len()).filter(|&c| repeats[c] >= r) {
            let class = classes.get(cell).copied().flatten();
            match class.and_then(|k| group_of_class.iter().find(|(c, _)| *c == k)) {
                Some(&(_, g)) => groups[g].push(cell),
                None => {
                    if let Some(k) = class {
                        group_of_class.push((k, groups.len()));
                    }
                    groups.push(vec![cell]);
                }
            }
        }
        if matches!(order, CellOrder::Shuffled(_)) {
            groups.shuffle(&mut rng);
            // A group of one is left alone, so the RNG is drawn exactly as
            // a shuffle of single cells draws it (a recorded seed replays).
            for g in groups.iter_mut().filter(|g| g.len() > 1) {
                g.shuffle(&mut rng);
            }
        }
        out.extend(groups.into_iter().map(|g| g.into_iter().map(|cell| Visit { cell, reps: r..=r }).collect()));
    }
    out
}

/// Split hosts into `serial` batches, as Ansible does: each entry a count
/// or a share of all the play's hosts (rounded down, at least one); the
/// last entry repeats until every host has a batch. No entries: one batch.
pub fn batches(hosts: &[String], serial: &[Batch]) -> Vec<Vec<String>> {
    if serial.is_empty() {
        return vec![hosts.to_vec()];
    }
    let total = hosts.len();
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < total {
        let size = match serial[i.min(serial.len() - 1)] {
            Batch::Hosts(n) => n,
            Batch::Percent(p) => ((total as f64 * p / 100.0).floor() as usize).max(1),
        }
        .max(1);
        let end = (at + size).min(total);
        out.push(hosts[at..end].to_vec());
        at = end;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(cell: usize, a: u32, b: u32) -> Visit {
        Visit { cell, reps: a..=b }
    }

    /// The visits without their grouping.
    fn flat(groups: Vec<Group>) -> Vec<Visit> {
        groups.into_iter().flatten().collect()
    }

    /// Cell numbers per group.
    fn cells(groups: &[Group]) -> Vec<Vec<usize>> {
        groups.iter().map(|g| g.iter().map(|x| x.cell).collect()).collect()
    }

    #[test]
    fn sequential_runs_each_cell_to_its_end() {
        assert_eq!(flat(visits(&[3, 2], &[], CellOrder::Sequential, 0)), vec![v(0, 1, 3), v(1, 1, 2)]);
        let shared = visits(&[3, 2], &[Some(0), Some(0)], CellOrder::Sequential, 0);
        assert_eq!(cells(&shared), [[0], [1]], "sequential never groups");
    }

    #[test]
    fn interleaved_goes_round_by_round() {
        assert_eq!(
            flat(visits(&[2, 3, 1], &[], CellOrder::Interleaved, 0)),
            vec![v(0, 1, 1), v(1, 1, 1), v(2, 1, 1), v(0, 2, 2), v(1, 2, 2), v(1, 3, 3)]
        );
    }

    /// The order before groups existed: each round shuffled as it is.
    fn ungrouped_shuffle(repeats: &[u32], seed: u64) -> Vec<Visit> {
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::new();
        for r in 1..=repeats.iter().copied().max().unwrap_or(0) {
            let mut round: Vec<usize> = (0..repeats.len()).filter(|&c| repeats[c] >= r).collect();
            round.shuffle(&mut rng);
            out.extend(round.into_iter().map(|cell| Visit { cell, reps: r..=r }));
        }
        out
    }

    #[test]
    fn shuffled_is_a_seeded_permutation_of_each_round() {
        let a = flat(visits(&[3; 8], &[], CellOrder::Shuffled(None), 42));
        assert_eq!(a, flat(visits(&[3; 8], &[], CellOrder::Shuffled(None), 42)), "the seed replays the order");
        assert_ne!(a, flat(visits(&[3; 8], &[], CellOrder::Shuffled(None), 43)));
        assert_ne!(
            a,
            flat(visits(&[3; 8], &[], CellOrder::Interleaved, 42)),
            "8! orders: this one is not the identity"
        );
        for round in a.chunks(8) {
            let mut cells: Vec<usize> = round.iter().map(|x| x.cell).collect();
            cells.sort();
            assert_eq!(cells, (0..8).collect::<Vec<_>>());
            assert!(round.iter().all(|x| x.reps == round[0].reps));
        }
    }

    #[test]
    fn without_shared_setups_the_order_is_the_one_a_seed_gave_before_groups() {
        for seed in [0, 1, 42, 7_777] {
            let repeats = [3, 1, 2, 3, 3, 2];
            assert_eq!(flat(visits(&repeats, &[], CellOrder::Shuffled(None), seed)), ungrouped_shuffle(&repeats, seed));
            let lone = [None, None, Some(0), None, Some(1), None];
            assert_eq!(
                flat(visits(&repeats, &lone, CellOrder::Shuffled(None), seed)),
                ungrouped_shuffle(&repeats, seed),
                "classes of one cell each group nothing"
            );
        }
    }

    #[test]
    fn identical_setups_of_a_round_form_one_group_where_its_first_cell_was() {
        // Cells 0, 2 and 3 share a setup; 1 has its own; 4 never shares.
        let classes = [Some(0), Some(1), Some(0), Some(0), None];
        let g = visits(&[2, 2, 2, 1, 2], &classes, CellOrder::Interleaved, 0);
        assert_eq!(cells(&g), vec![vec![0, 2, 3], vec![1], vec![4], vec![0, 2], vec![1], vec![4]]);
        assert!(g[0].iter().all(|x| x.reps == (1..=1)) && g[3].iter().all(|x| x.reps == (2..=2)));
    }

    #[test]
    fn shuffled_groups_stay_contiguous_and_replay_from_the_seed() {
        // 12 cells in 3 setup classes of 4 (fs × 4 codecs), 3 rounds.
        let classes: Vec<Option<usize>> = (0..12).map(|c| Some(c / 4)).collect();
        let a = visits(&[3; 12], &classes, CellOrder::Shuffled(None), 9);
        assert_eq!(a, visits(&[3; 12], &classes, CellOrder::Shuffled(None), 9), "the seed replays it");
        assert_ne!(a, visits(&[3; 12], &classes, CellOrder::Shuffled(None), 10));
        assert_eq!(a.len(), 9, "3 groups a round");
        for (i, round) in a.chunks(3).enumerate() {
            let mut all: Vec<usize> = round.iter().flatten().map(|x| x.cell).collect();
            all.sort();
            assert_eq!(all, (0..12).collect::<Vec<_>>(), "round {} holds every cell once", i + 1);
            for g in round {
                assert_eq!(g.len(), 4);
                assert!(g.iter().all(|x| classes[x.cell] == classes[g[0].cell]), "one class a group: {g:?}");
                assert!(g.iter().all(|x| x.reps == ((i as u32 + 1)..=(i as u32 + 1))));
            }
        }
        // Both levels are shuffled: some round's group order, and some group's inner order, differ from plan order.
        let firsts: Vec<usize> = a.iter().map(|g| g[0].cell / 4).collect();
        assert!(firsts.chunks(3).any(|r| r != [0, 1, 2]), "groups shuffled: {firsts:?}");
        assert!(a.iter().any(|g| g.windows(2).any(|w| w[0].cell > w[1].cell)), "visits within a group shuffled");
    }

    #[test]
    fn classes_number_equal_keys_alike_in_order_of_first_appearance() {
        let keys = [Some("ext4"), None, Some("xfs"), Some("ext4"), None, Some("xfs"), Some("btrfs")];
        assert_eq!(classes(&keys), [Some(0), None, Some(1), Some(0), None, Some(1), Some(2)]);
        assert_eq!(classes::<&str>(&[]), Vec::<Option<usize>>::new());
    }

    fn hosts(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("h{i}")).collect()
    }

    fn sizes(b: Vec<Vec<String>>) -> Vec<usize> {
        b.iter().map(Vec::len).collect()
    }

    #[test]
    fn serial_batches_as_ansible() {
        assert_eq!(sizes(batches(&hosts(5), &[])), [5]);
        assert_eq!(sizes(batches(&hosts(5), &[Batch::Hosts(2)])), [2, 2, 1]);
        assert_eq!(sizes(batches(&hosts(10), &[Batch::Percent(30.0)])), [3, 3, 3, 1]);
        assert_eq!(sizes(batches(&hosts(3), &[Batch::Percent(10.0)])), [1, 1, 1], "at least one host");
        assert_eq!(sizes(batches(&hosts(9), &[Batch::Hosts(1), Batch::Percent(50.0)])), [1, 4, 4]);
        assert_eq!(batches(&hosts(3), &[Batch::Hosts(2)])[1], ["h3"]);
    }
}
