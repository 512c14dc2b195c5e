//! Byte sizes as people write them in playbooks: `4k`, `1M`, `1MiB`, `2G`, `4096`.
//!
//! All suffixes are powers of 1024, as in fio (`kb_base=1024`) and dd's `K`/`M`,
//! so `bs: 4k` means what a storage engineer expects.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a size (expected a number of bytes or a number with k, M, G or T, e.g. 4k, 256M)")]
pub struct BadSize(pub String);

impl ByteSize {
    pub fn parse(s: &str) -> Result<Self, BadSize> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
        let (num, suffix) = t.split_at(split);
        let shift = match suffix.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            _ => return Err(BadSize(s.to_string())),
        };
        let bad = || BadSize(s.to_string());
        if num.is_empty() {
            return Err(bad());
        }
        if let Ok(n) = num.parse::<u64>() {
            return n.checked_mul(1u64 << shift).map(ByteSize).ok_or_else(bad);
        }
        // 1.5G is fine; a fraction of a byte is not.
        let f: f64 = num.parse().map_err(|_| bad())?;
        let bytes = f * (1u64 << shift) as f64;
        if !bytes.is_finite() || bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
            return Err(bad());
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "k")];
        for (shift, unit) in UNITS {
            let m = 1u64 << shift;
            if self.0 >= m && self.0.is_multiple_of(m) {
                return write!(f, "{}{}", self.0 / m, unit);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(ByteSize(n)),
            Raw::S(s) => ByteSize::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

/// What [`ByteSize::parse`] takes, as a JSON Schema pattern (ECMA-262): the
/// playbook schema's sizes. Whole bytes and 64 bits are checked by the parse only.
pub const SIZE_PATTERN: &str = r"^\s*([0-9]+\.?[0-9]*|\.[0-9]+)\s*([bB]|[kKmMgGtT]([iI]?[bB])?)?\s*$";

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ByteSize {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteSize".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // `title` and `x-unit` (an annotation validators ignore) are what
        // `benchrig doc` shows as a size argument's type and unit.
        schemars::json_schema!({
            "title": "size",
            "x-unit": "bytes",
            "description": "A size: bytes, or a number with k, M, G or T, powers of 1024 as in fio (`4k`, `256M`, `1.5G`).",
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": SIZE_PATTERN}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_binary() {
        assert_eq!(ByteSize::parse("4096").unwrap().0, 4096);
        assert_eq!(ByteSize::parse("4k").unwrap().0, 4096);
        assert_eq!(ByteSize::parse("4K").unwrap().0, 4096);
        assert_eq!(ByteSize::parse("1M").unwrap().0, 1 << 20);
        assert_eq!(ByteSize::parse("1MiB").unwrap().0, 1 << 20);
        assert_eq!(ByteSize::parse("2G").unwrap().0, 2 << 30);
        assert_eq!(ByteSize::parse("1.5G").unwrap().0, 3 << 29);
        assert_eq!(ByteSize::parse(" 512 ").unwrap().0, 512);
    }

    #[test]
    fn nonsense_is_refused() {
        for s in ["", "k", "4x", "-1", "1.5", "0.3k", "99999999999999999999T", "4 kk"] {
            assert!(ByteSize::parse(s).is_err(), "{s:?} should not parse");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["4k", "1M", "3G", "512", "1T", "1025"] {
            assert_eq!(ByteSize::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn deserializes_from_number_or_string() {
        let a: ByteSize = serde_json::from_str("4096").unwrap();
        let b: ByteSize = serde_json::from_str("\"4k\"").unwrap();
        assert_eq!(a, b);
        assert!(serde_json::from_str::<ByteSize>("\"4q\"").is_err());
    }
}
