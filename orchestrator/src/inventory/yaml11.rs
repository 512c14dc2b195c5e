//! YAML scalars typed as Ansible's loader (PyYAML, YAML 1.1) types them, for
//! inventory values. serde-saphyr's inference differs on a few plain scalars
//! (`y`/`n` are booleans there, `0o17` an int and `017` a float; `12:30` is
//! text), so a plain scalar is read again from its source text with PyYAML's
//! implicit resolvers. Quoted, tagged, aliased and block scalars keep what
//! the parser made of them, as do keys.

use crate::yaml::{Node, Value};
use regex::Regex;
use serde_json::Value as Json;
use std::sync::LazyLock;

static BOOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$").unwrap()
});
static INT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$").unwrap()
});
static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*)$").unwrap()
});
static NULL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:~|null|Null|NULL|)$").unwrap());
/// PyYAML's timestamp resolver: such a plain scalar is a date, not text.
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$").unwrap()
});

/// What PyYAML loads a value node as when that is not text (`"an integer"`,
/// `"a date"`, ...), or `None` for text. Ansible's yaml inventory plugin
/// accepts a string where it wants a mapping, so text must be told from
/// what only looks like it here (`hosts: 2024-01-01` is a date to Ansible).
pub fn not_text(node: &Node) -> Option<&'static str> {
    match &node.value {
        Value::Seq(_) | Value::Map(_) | Value::Null => Some(node.type_name()),
        _ => match plain_text(node) {
            Some(raw) => kind_of(&raw),
            None => (!matches!(node.value, Value::Str(_))).then(|| node.type_name()),
        },
    }
}

/// The same for a mapping key, which the tree keeps as the text written:
/// `42:` is an integer to PyYAML, `~:` null, `"42":` text.
pub fn key_not_text(key: &Node) -> Option<&'static str> {
    plain_key_text(key).and_then(|raw| kind_of(&raw))
}

/// The type PyYAML gives a plain scalar, when not text.
fn kind_of(raw: &str) -> Option<&'static str> {
    match resolve(raw)? {
        Json::Bool(_) => Some("a boolean"),
        Json::Null => Some("null"),
        Json::Number(n) if n.is_f64() => Some("a number"),
        Json::Number(_) => Some("an integer"),
        _ if TIMESTAMP.is_match(raw) => Some("a date"),
        _ => None,
    }
}

/// The text of a plain (unquoted, untagged, one-line) key at its position.
fn plain_key_text(key: &Node) -> Option<String> {
    let line = key.loc.line_text()?;
    let col = (key.loc.col as usize).checked_sub(1)?;
    let before: String = line.chars().take(col).collect();
    let rest: String = line.chars().skip(col).collect();
    let tagged = before.split_whitespace().last().is_some_and(|w| w.starts_with('!'));
    if tagged || rest.starts_with(['\'', '"', '!', '&', '*', '|', '>', '[', '{', '?']) {
        return None;
    }
    let text = key.scalar_text()?;
    let raw = if text.is_empty() {
        // A null key is read as empty text: find which null it was written as.
        let word = rest.split(|c: char| c == ':' || c == ',' || c == '}' || c.is_whitespace()).next()?;
        NULL.is_match(word).then(|| word.to_string())?
    } else {
        text
    };
    let after = rest.strip_prefix(raw.as_str())?;
    (after.is_empty() || after.starts_with([':', ',', '}', ' ', '\t'])).then_some(raw)
}

/// The node as JSON, plain scalars resolved as PyYAML does.
pub fn to_json(node: &Node) -> Json {
    convert(node)
}

fn convert(node: &Node) -> Json {
    match &node.value {
        Value::Seq(items) => Json::Array(items.iter().map(convert).collect()),
        Value::Map(m) => {
            Json::Object(m.iter().map(|(k, v)| (k.scalar_text().unwrap_or_default(), convert(v))).collect())
        }
        Value::Null => Json::Null,
        _ => match plain_text(node) {
            Some(raw) => resolve(&raw).unwrap_or_else(|| node.to_json()),
            None => node.to_json(),
        },
    }
}

/// Whether the document before a scalar leaves a `[` or `{` open (flow
/// collections may span lines): then `,`, `]` and `}` end the scalar.
/// Quotes and comments are skipped; a stray bracket in a block scalar could
/// fool it, which [`plain_text`] guards against.
fn in_flow(before: &str) -> bool {
    let (mut depth, mut quote, mut comment, mut prev) = (0i32, None, false, '\n');
    for c in before.chars() {
        match (comment, quote, c) {
            (true, _, '\n') => comment = false,
            (true, _, _) => {}
            (false, None, '#') if prev.is_whitespace() => comment = true,
            (false, None, '\'' | '"') => quote = Some(c),
            (false, Some(q), c) if c == q => quote = None,
            (false, Some('"'), '\n') | (false, Some('\''), '\n') if depth == 0 => quote = None,
            (false, None, '[' | '{') => depth += 1,
            (false, None, ']' | '}') => depth = (depth - 1).max(0),
            _ => {}
        }
        prev = c;
    }
    depth > 0
}

/// The text of a one-line plain scalar at the node's position, or `None` for
/// anything else (then the parser's value stands).
fn plain_text(node: &Node) -> Option<String> {
    let line = node.loc.line_text()?;
    let col = (node.loc.col as usize).checked_sub(1)?;
    let before: String = line.chars().take(col).collect();
    let rest: String = line.chars().skip(col).collect();
    let text = &node.loc.src.text;
    let line_start: usize =
        text.split_inclusive('\n').take((node.loc.line as usize).saturating_sub(1)).map(str::len).sum();
    // A tag (`!!str 123`) may stand before the position the parser gives.
    let tagged = before.split_whitespace().last().is_some_and(|w| w.starts_with('!'));
    if tagged || rest.starts_with(['\'', '"', '!', '&', '*', '|', '>', '[', '{']) {
        return None;
    }
    let mut end = rest.find(" #").unwrap_or(rest.len());
    // Scanning the document is only needed when a flow terminator follows.
    let has_terminator = rest[..end].contains([',', ']', '}']);
    if has_terminator && in_flow(&format!("{}{before}", &text[..line_start.min(text.len())])) {
        end = end.min(rest.find([',', ']', '}']).unwrap_or(rest.len()));
    }
    // A boolean or number has no space, comma or bracket in it, flow or not.
    if !matches!(node.value, Value::Str(_)) {
        end = end.min(rest.find(|c: char| c.is_whitespace() || ",]}".contains(c)).unwrap_or(rest.len()));
    }
    let raw = rest[..end].trim_end().to_string();
    // A text value that is not the whole of it spans lines: leave it alone.
    match &node.value {
        Value::Str(s) if *s != raw => None,
        _ => Some(raw),
    }
}

/// PyYAML's implicit resolvers, in its order: bool, float, int, null, else text.
fn resolve(raw: &str) -> Option<Json> {
    if BOOL.is_match(raw) {
        return Some(Json::Bool(matches!(raw.to_ascii_lowercase().as_str(), "yes" | "true" | "on")));
    }
    let (neg, body) = match raw.as_bytes().first() {
        Some(b'-') => (true, &raw[1..]),
        Some(b'+') => (false, &raw[1..]),
        _ => (false, raw),
    };
    let digits = body.replace('_', "");
    if FLOAT.is_match(raw) {
        let f = if digits.contains(':') { sexagesimal(&digits)? } else { digits.to_ascii_lowercase().parse().ok()? };
        return Some(Json::from(if neg { -f } else { f }));
    }
    if INT.is_match(raw) {
        let n: i128 = if digits == "0" {
            0
        } else if let Some(b) = digits.strip_prefix("0b") {
            i128::from_str_radix(b, 2).ok()?
        } else if let Some(x) = digits.strip_prefix("0x") {
            i128::from_str_radix(x, 16).ok()?
        } else if digits.starts_with('0') {
            i128::from_str_radix(&digits, 8).ok()?
        } else if digits.contains(':') {
            sexagesimal(&digits)? as i128
        } else {
            digits.parse().ok()?
        };
        let n = if neg { -n } else { n };
        return Some(
            i64::try_from(n)
                .map(Json::from)
                .or_else(|_| u64::try_from(n).map(Json::from))
                .unwrap_or(Json::from(n as f64)),
        );
    }
    if NULL.is_match(raw) {
        return Some(Json::Null);
    }
    Some(Json::String(raw.to_string()))
}

/// `1:30` is 90 (base 60, as YAML 1.1 has it).
fn sexagesimal(s: &str) -> Option<f64> {
    s.split(':').try_fold(0.0, |acc, part| Some(acc * 60.0 + part.parse::<f64>().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value_of(text: &str) -> Json {
        let node = crate::yaml::parse_str("t.yml", text).unwrap();
        to_json(&node)
    }

    #[test]
    fn scalars_as_pyyaml_types_them() {
        let v = value_of(
            "a: y\nb: n\nc: yes\nd: Off\ne: 017\nf: 0o17\ng: 0x1F\nh: 1_000\ni: 12:30\nj: 1e3\nk: 1.0e+3\n\
             l: '017'\nr: !!str 123\nm: [y, 017, 'n']\nn: {p: on, q: 010}\no: 2.50 # comment\np: ~\nq: 1.10\n",
        );
        assert_eq!(
            v,
            json!({"a": "y", "b": "n", "c": true, "d": false, "e": 15, "f": "0o17", "g": 31, "h": 1000,
                   "i": 750, "j": "1e3", "k": 1000.0, "l": "017", "r": "123", "m": ["y", 15, "n"], "n": {"p": true, "q": 8},
                   "o": 2.5, "p": null, "q": 1.1})
        );
    }

    #[test]
    fn flow_mappings_across_lines() {
        let v =
            value_of("d:\n  - { path: /dev/sdb, name: 'a,b',\n      serial: X, wipe: true, n: 017 }\n  - {t: 12:30}\n");
        assert_eq!(
            v,
            json!({"d": [{"path": "/dev/sdb", "name": "a,b", "serial": "X", "wipe": true, "n": 15}, {"t": 750}]})
        );
    }

    #[test]
    fn what_is_not_text_to_pyyaml() {
        let node = crate::yaml::parse_str(
            "t.yml",
            "42: 1\n~: 2\nyes: 3\n2024-01-01: 4\n\"42\": 5\ny: 6\n1.5: 7\nweb1:2222: 8\n0x10: 9\n!!str 7: 10\n",
        )
        .unwrap();
        let keys: Vec<Option<&str>> = node.as_map().unwrap().iter().map(|(k, _)| key_not_text(k)).collect();
        assert_eq!(
            keys,
            [
                Some("an integer"),
                Some("null"),
                Some("a boolean"),
                Some("a date"),
                None,
                None,
                Some("a number"),
                None,
                Some("an integer"),
                None
            ]
        );
        let node = crate::yaml::parse_str(
            "t.yml",
            "a: 192.168.0.2\nb: 42\nc: '42'\nd: y\ne: on\nf: 2024-01-01\ng: [x]\nh: >-\n  x\n  y\ni: !!str 1\nj: 12:30\n",
        )
        .unwrap();
        let values: Vec<Option<&str>> = node.as_map().unwrap().iter().map(|(_, v)| not_text(v)).collect();
        assert_eq!(
            values,
            [
                None,
                Some("an integer"),
                None,
                None,
                Some("a boolean"),
                Some("a date"),
                Some("a list"),
                None,
                None,
                Some("an integer")
            ]
        );
    }

    #[test]
    fn multi_line_and_block_scalars_stay_as_parsed() {
        let v = value_of("a: |\n  yes\nb: plain\n  continued\n");
        assert_eq!(v, json!({"a": "yes\n", "b": "plain continued"}));
    }
}
