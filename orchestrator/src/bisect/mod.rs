//! `benchrig bisect`: which revision made a metric worse, decided by
//! statistics. Its pure parts so far: `decide` compares two sets of
//! samples by Chromium Pinpoint's rule (`thresholds` is Pinpoint's table);
//! `judge` picks the series that regressed between the endpoints and
//! calls a candidate good, bad or undecided against them; `search` picks
//! the next revision (git bisect's halving, skips to a neighbour, never a
//! guess); `course` is where a bisect stands and what it measures next
//! (the endpoints first, a candidate until called, the culprit and its
//! parent again at the end); `series` gathers a measure run's followed
//! series; `recipe` is what a bisect was asked, stored as it is;
//! `revisions` lists the revisions from a git repository's first-parent
//! line or a versions file. `commands::bisect` drives the runs.

pub mod course;
pub mod decide;
pub mod judge;
pub mod recipe;
pub mod revisions;
pub mod search;
pub mod series;
mod thresholds;
