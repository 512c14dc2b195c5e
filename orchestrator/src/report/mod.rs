//! Reports of a stored run. JSON first; other formats build on the same model.

pub mod json;
