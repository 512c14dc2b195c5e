//! YAML read into a tree that remembers where every node came from, so any
//! later check (unknown key, wrong type, bad template) can point at
//! file:line:column and quote the line.
//!
//! Parsed with serde-saphyr (see ARCHITECTURE.md for why not serde_yaml).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::diagnostic::{did_you_mean, ConfigError, Loc, SourceFile};

#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Clone, Debug)]
pub struct Node {
    pub value: Value,
    pub loc: Loc,
}

impl Node {
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The value under a string key of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
    }

    /// A mapping, or an error saying what was expected where.
    pub fn expect_map(&self, what: &str) -> Result<&[(Node, Node)], ConfigError> {
        match &self.value {
            Value::Map(m) => Ok(m),
            // `key:` with nothing after it is an empty mapping, as in Ansible.
            Value::Null => Ok(&[]),
            _ => Err(self.error(format!("{what} must be a mapping, found {}", self.type_name()))),
        }
    }

    pub fn expect_seq(&self, what: &str) -> Result<&[Node], ConfigError> {
        match &self.value {
            Value::Seq(s) => Ok(s),
            Value::Null => Ok(&[]),
            _ => Err(self.error(format!("{what} must be a list, found {}", self.type_name()))),
        }
    }

    pub fn expect_str(&self, what: &str) -> Result<&str, ConfigError> {
        self.as_str().ok_or_else(|| self.error(format!("{what} must be a string, found {}", self.type_name())))
    }

    /// A scalar as text (keys and INI-like values), if it is one.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Null => Some(String::new()),
            _ => None,
        }
    }

    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::at(&self.loc, message)
    }

    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map(J::Number).unwrap_or(J::Null),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(s) => J::Array(s.iter().map(Node::to_json).collect()),
            Value::Map(m) => {
                J::Object(m.iter().map(|(k, v)| (k.scalar_text().unwrap_or_default(), v.to_json())).collect())
            }
        }
    }
}

/// How deeply collections may nest. Far past any playbook or inventory (a
/// group in an inventory's tree costs two levels), and shallow enough for a
/// small stack: serde-saphyr deserializes recursively, tens of KiB of stack
/// a level in a debug build, and its default of 64 overflowed a 2 MiB thread
/// stack at about 55 levels (`[[[[...`, found by fuzzing).
pub const MAX_DEPTH: usize = 32;

/// Parse a YAML document, keeping every node's position.
pub fn parse_str(name: &str, text: &str) -> Result<Node, ConfigError> {
    let src = Arc::new(SourceFile { name: name.to_string(), text: text.to_string() });
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.flow_nesting_limit = MAX_DEPTH;
    let options = serde_saphyr::options! { with_snippet: false, budget: Some(budget) };
    let raw: Spanned<Raw> = serde_saphyr::from_str_with_options(text, options).map_err(|e| {
        let (line, col) = e.location().map(|l| (l.line() as u32, l.column() as u32)).unwrap_or((0, 0));
        let loc = Loc { src: src.clone(), line, col };
        let msg = e.to_string();
        // saphyr prefixes its own "line N column M: "; we print the location ourselves.
        let msg = msg.split_once(": ").filter(|(p, _)| p.starts_with("line ")).map(|(_, m)| m).unwrap_or(&msg);
        if msg.starts_with("budget breached: Depth") || msg.starts_with("recursion limit exceeded") {
            return ConfigError::at(&loc, format!("invalid YAML: nested more than {MAX_DEPTH} levels deep"));
        }
        // ... and often suffixes " at line N, column M" (or more locations) too.
        let msg = msg.lines().next().unwrap_or_default();
        let msg = msg.split(" at line ").next().unwrap_or(msg);
        // saphyr's limits on size and alias expansion ("billion laughs").
        if let Some(breach) = msg.strip_prefix("budget breached: ") {
            return ConfigError::at(&loc, format!("invalid YAML: too large once aliases are expanded ({breach})"));
        }
        if let Some(key) = msg.strip_prefix("duplicate mapping key: ") {
            let key = key.split(", set DuplicateKeyPolicy").next().unwrap_or(key);
            return ConfigError::at(&loc, format!("invalid YAML: duplicate key `{key}`"));
        }
        // saphyr points at the scalar or block the tab broke, often a line
        // before the tab itself: point at the first tab indenting a line.
        if msg.contains("found a tab") || msg.contains("tabs") {
            let tab = text.lines().enumerate().skip(line.saturating_sub(1) as usize).find_map(|(i, l)| {
                let lead = &l[..l.len() - l.trim_start_matches([' ', '\t']).len()];
                lead.find('\t').map(|c| (i as u32 + 1, c as u32 + 1))
            });
            if let Some((line, col)) = tab {
                return ConfigError::at(&Loc { src: src.clone(), line, col }, "invalid YAML: a tab in indentation")
                    .with_hint("YAML indents with spaces only");
            }
        }
        ConfigError::at(&loc, format!("invalid YAML: {msg}"))
    })?;
    Ok(convert(raw, &src))
}

pub fn parse_file(path: &Path) -> Result<Node, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::file(&name, format!("cannot read: {e}")))?;
    parse_str(&name, &text)
}

fn convert(s: Spanned<Raw>, src: &Arc<SourceFile>) -> Node {
    let loc = Loc { src: src.clone(), line: s.referenced.line() as u32, col: s.referenced.column() as u32 };
    let value = match s.value {
        Raw::Null => Value::Null,
        Raw::Bool(b) => Value::Bool(b),
        Raw::Int(i) => Value::Int(i),
        Raw::Float(f) => Value::Float(f),
        Raw::Str(s) => Value::Str(s),
        Raw::Seq(items) => Value::Seq(items.into_iter().map(|i| convert(i, src)).collect()),
        Raw::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| {
                    let key = Node {
                        value: Value::Str(k.value.0),
                        loc: Loc {
                            src: src.clone(),
                            line: k.referenced.line() as u32,
                            col: k.referenced.column() as u32,
                        },
                    };
                    (key, convert(v, src))
                })
                .collect(),
        ),
    };
    Node { value, loc }
}

/// What serde-saphyr hands us: any YAML value, each child with its span.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<KeyText>, Spanned<Raw>)>),
}

/// Mapping keys are read as the text written, so `y:` stays the key `y`
/// (saphyr's YAML 1.1 inference would make it `true`). A null key (`~:`) is
/// the empty text rather than a parse error; whoever cares (an inventory's
/// host and group names) tells it from `"":` by its source text.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<String>::deserialize(d).map(|k| KeyText(k.unwrap_or_default()))
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Raw;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_unit<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_none<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
                Raw::deserialize(d)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
                Ok(Raw::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
                Ok(Raw::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
                i64::try_from(v).map(Raw::Int).or(Ok(Raw::Float(v as f64)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
                Ok(Raw::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
                Ok(Raw::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Raw, E> {
                Ok(Raw::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Raw::Seq(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
                let mut v = Vec::new();
                while let Some(entry) = a.next_entry()? {
                    v.push(entry);
                }
                Ok(Raw::Map(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Error for a key that is not one of `valid`, with a suggestion when one is close.
pub fn unknown_key(key: &Node, context: &str, valid: &[&str]) -> ConfigError {
    let name = key.scalar_text().unwrap_or_default();
    key.error(format!("unknown key `{name}` in {context}")).with_hint(did_you_mean(&name, valid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_kept() {
        let n = parse_str("p.yml", "a: 1\nb:\n  - x\n  - {c: true}\n").unwrap();
        let b = n.get("b").unwrap();
        let items = b.as_seq().unwrap();
        assert_eq!((items[1].loc.line, items[1].loc.col), (4, 5));
        let c = items[1].get("c").unwrap();
        assert!(matches!(c.value, Value::Bool(true)));
        assert_eq!(n.to_json(), serde_json::json!({"a": 1, "b": ["x", {"c": true}]}));
    }

    #[test]
    fn merge_keys_and_ansible_booleans() {
        let n = parse_str("p.yml", "base: &b {x: 1}\nother:\n  <<: *b\n  y: yes\n").unwrap();
        assert_eq!(n.get("other").unwrap().to_json(), serde_json::json!({"x": 1, "y": true}));
    }

    #[test]
    fn syntax_error_names_file_line_column() {
        let e = parse_str("bad.yml", "a: 1\n- b\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("bad.yml", 2));
        let shown = e.to_string();
        assert!(shown.starts_with("bad.yml:2:"), "{shown}");
        assert!(shown.contains("| - b"), "{shown}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        // Found by fuzzing: 60 nested `[` overflowed a 2 MiB thread stack in a debug build.
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                assert!(parse_str("ok.yml", &deep(MAX_DEPTH)).is_ok());
                for n in [MAX_DEPTH + 1, 60, 100, 300, 100_000] {
                    let e = parse_str("deep.yml", &deep(n)).unwrap_err();
                    assert_eq!((e.line, e.col), (1, MAX_DEPTH as u32 + 1), "{n}: {e}");
                    assert!(e.message.contains("nested more than 32 levels"), "{n}: {e}");
                }
                let block: String = (0..100).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
                assert!(parse_str("deep.yml", &block).unwrap_err().message.contains("nested more than"));
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut bomb = String::from("l0: &l0 [lol, lol]\n");
        for d in 1..10 {
            bomb += &format!("l{d}: &l{d} [{}]\n", vec![format!("*l{}", d - 1); 10].join(", "));
        }
        let e = parse_str("bomb.yml", &bomb).unwrap_err();
        assert!(e.message.starts_with("invalid YAML: too large once aliases are expanded ("), "{e}");
        assert!(!e.message.contains(" at line "), "{e}");
    }

    #[test]
    fn duplicate_keys_are_an_error() {
        let e = parse_str("d.yml", "a: 1\na: 2\n").unwrap_err();
        assert_eq!((e.line, e.col, e.message.as_str()), (2, 1, "invalid YAML: duplicate key `a`"));
    }

    #[test]
    fn a_tab_is_pointed_at_where_it_is() {
        // saphyr reports the scalar before the tab (1:10 here).
        let e = parse_str("t.yml", "- hosts: all\n\trepeat: 3\n").unwrap_err();
        assert_eq!((e.line, e.col, e.message.as_str()), (2, 1, "invalid YAML: a tab in indentation"), "{e}");
        let e = parse_str("t.yml", "a:\n  b: 1\n  \tc: 2\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 3), "{e}");
    }

    #[test]
    fn saphyr_locations_are_not_repeated_in_the_message() {
        let e = parse_str("i.yml", "- a:\n    - b\n   - c\n").unwrap_err();
        assert!(!e.message.contains(" at line "), "{e}");
    }

    #[test]
    fn error_display_points_at_the_column() {
        let n = parse_str("p.yml", "play:\n  repaet: 3\n").unwrap();
        let key = &n.get("play").unwrap().as_map().unwrap()[0].0;
        let e = unknown_key(key, "a play", &["name", "repeat", "hosts"]);
        assert_eq!(e.to_string(), "p.yml:2:3: unknown key `repaet` in a play\n  |\n2 |   repaet: 3\n  |   ^\n  = help: did you mean `repeat`?");
    }
}
