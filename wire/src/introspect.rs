//! The field names a `Deserialize` struct accepts, read from serde itself so
//! the list of valid step arguments can never drift from the structs.
//!
//! By hand because it is a dozen lines; the trick is the one serde-aux uses:
//! a deserializer that records the `fields` serde passes to
//! `deserialize_struct` and then stops.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::cell::Cell;

pub fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let found = Cell::new(None);
    let _ = T::deserialize(Recorder { found: &found });
    found.get().unwrap_or(&[])
}

struct Recorder<'a> {
    found: &'a Cell<Option<&'static [&'static str]>>,
}

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("introspection stop")
    }
}
impl std::error::Error for Stop {}
impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for Recorder<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        self.found.set(Some(fields));
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct S {
        a: u32,
        #[serde(rename = "bee")]
        b: String,
    }

    #[test]
    fn names_as_serde_sees_them() {
        assert_eq!(field_names::<S>(), &["a", "bee"]);
        assert!(field_names::<u32>().is_empty());
    }
}
