//! Reports of a stored run: JSON (the model), markdown from it, CSV (a row a
//! sample) and JUnit (a test case a cell) from the store.

pub mod charts;
pub mod csv;
pub mod html;
pub mod json;
pub mod junit;
pub mod md;
