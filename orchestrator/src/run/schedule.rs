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

/// Every visit, in order, for cells with these repetition counts. A cell's
/// visits always go up in repetition number, so its last visit ends it.
pub fn visits(repeats: &[u32], order: CellOrder, seed: u64) -> Vec<Visit> {
    if order == CellOrder::Sequential {
        return repeats.iter().enumerate().map(|(cell, &n)| Visit { cell, reps: 1..=n }).collect();
    }
    // ChaCha8 is specified and portable: the recorded seed replays the order anywhere.
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
    let rounds = repeats.iter().copied().max().unwrap_or(0);
    let mut out = Vec::new();
    for r in 1..=rounds {
        let mut round: Vec<usize> = (0..repeats.len()).filter(|&c| repeats[c] >= r).collect();
        if matches!(order, CellOrder::Shuffled(_)) {
            round.shuffle(&mut rng);
        }
        out.extend(round.into_iter().map(|cell| Visit { cell, reps: r..=r }));
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

    #[test]
    fn sequential_runs_each_cell_to_its_end() {
        assert_eq!(visits(&[3, 2], CellOrder::Sequential, 0), vec![v(0, 1, 3), v(1, 1, 2)]);
    }

    #[test]
    fn interleaved_goes_round_by_round() {
        assert_eq!(
            visits(&[2, 3, 1], CellOrder::Interleaved, 0),
            vec![v(0, 1, 1), v(1, 1, 1), v(2, 1, 1), v(0, 2, 2), v(1, 2, 2), v(1, 3, 3)]
        );
    }

    #[test]
    fn shuffled_is_a_seeded_permutation_of_each_round() {
        let a = visits(&[3; 8], CellOrder::Shuffled(None), 42);
        assert_eq!(a, visits(&[3; 8], CellOrder::Shuffled(None), 42), "the seed replays the order");
        assert_ne!(a, visits(&[3; 8], CellOrder::Shuffled(None), 43));
        assert_ne!(a, visits(&[3; 8], CellOrder::Interleaved, 42), "8! orders: this one is not the identity");
        for round in a.chunks(8) {
            let mut cells: Vec<usize> = round.iter().map(|x| x.cell).collect();
            cells.sort();
            assert_eq!(cells, (0..8).collect::<Vec<_>>());
            assert!(round.iter().all(|x| x.reps == round[0].reps));
        }
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
