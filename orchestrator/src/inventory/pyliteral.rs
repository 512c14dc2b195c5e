//! Python literals, as Ansible's INI plugin reads inline host variables
//! (`ast.literal_eval`): numbers, strings, True/False/None, lists, tuples,
//! dicts. By hand because it is small and no crate parses Python literals
//! into JSON values.

use serde_json::{Map, Value as Json};

/// How deeply lists, tuples and dicts may nest. Python's own parser stops
/// near 200 levels (Ansible then keeps the text a string, as we do); the
/// limit keeps a line of `[[[[...` from overflowing the stack.
pub const MAX_DEPTH: usize = 100;

/// The value, or `None` when the text is not a Python literal (then Ansible keeps it a string).
pub fn parse(text: &str) -> Option<Json> {
    let mut p = Parser { s: text.as_bytes(), i: 0, depth: 0 };
    let v = p.value()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    /// Whitespace and `#` comments, which Python's tokenizer skips alike.
    fn ws(&mut self) {
        while let Some(&c) = self.s.get(self.i) {
            if c == b'#' {
                while self.s.get(self.i).is_some_and(|&c| c != b'\n') {
                    self.i += 1;
                }
            } else if c.is_ascii_whitespace() {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Json> {
        self.ws();
        let c = *self.s.get(self.i)?;
        if matches!(c, b'[' | b'(' | b'{') {
            if self.depth >= MAX_DEPTH {
                return None;
            }
            self.depth += 1;
            let v = if c == b'{' { self.dict() } else { self.seq(c) };
            self.depth -= 1;
            return v;
        }
        match c {
            b'\'' | b'"' => self.string().map(Json::String),
            _ => self.atom(),
        }
    }

    fn seq(&mut self, open: u8) -> Option<Json> {
        let close = if open == b'[' { b']' } else { b')' };
        self.i += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Some(Json::Array(items));
            }
            items.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(close).then_some(Json::Array(items));
            }
        }
    }

    fn dict(&mut self) -> Option<Json> {
        self.i += 1;
        let mut m = Map::new();
        loop {
            if self.eat(b'}') {
                return Some(Json::Object(m));
            }
            let key = match self.value()? {
                Json::String(s) => s,
                other => other.to_string(),
            };
            if !self.eat(b':') {
                return None;
            }
            m.insert(key, self.value()?);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(Json::Object(m));
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let q = self.s[self.i];
        self.i += 1;
        let mut out = Vec::new();
        while let Some(&c) = self.s.get(self.i) {
            self.i += 1;
            match c {
                _ if c == q => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = *self.s.get(self.i)?;
                    self.i += 1;
                    out.push(match e {
                        b'n' => b'\n',
                        b't' => b'\t',
                        other => other,
                    });
                }
                _ => out.push(c),
            }
        }
        None
    }

    fn atom(&mut self) -> Option<Json> {
        let start = self.i;
        while self.i < self.s.len() && !b",:]})#".contains(&self.s[self.i]) && !self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        match word {
            "True" => Some(Json::Bool(true)),
            "False" => Some(Json::Bool(false)),
            "None" => Some(Json::Null),
            _ => number(word),
        }
    }
}

/// A Python int or float literal, with its sign (`ast.literal_eval` allows
/// unary `+`/`-`): `0x1f`, `0o17`, `0b101`, `1_000`, `2.5`, `.5`, `1e3`.
/// A decimal int with a leading zero (`010`) is a syntax error in Python,
/// so it is no number (and stays a string).
fn number(word: &str) -> Option<Json> {
    let (neg, body) = match word.as_bytes().first()? {
        b'-' => (true, &word[1..]),
        b'+' => (false, &word[1..]),
        _ => (false, word),
    };
    // Underscores only between digits, as Python's grammar has them.
    if body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return None;
    }
    let digits = body.replace('_', "");
    let lower = digits.to_ascii_lowercase();
    let radix = [("0x", 16), ("0o", 8), ("0b", 2)].into_iter().find(|(p, _)| lower.starts_with(p));
    let int = match radix {
        Some((p, r)) => Some(u128::from_str_radix(&lower[p.len()..], r).ok()?),
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0') {
                return None;
            }
            digits.parse::<u128>().ok()
        }
        None => None,
    };
    if let Some(n) = int {
        return Some(int_json(neg, n));
    }
    let float_ok = digits.bytes().all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
        && digits.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'.');
    let f: f64 = digits.parse().ok().filter(|f: &f64| f.is_finite() && float_ok)?;
    Some(Json::from(if neg { -f } else { f }))
}

/// An int as JSON: exact while it fits i64/u64 (as Python's json prints it), else the nearest float.
fn int_json(neg: bool, n: u128) -> Json {
    match (neg, i64::try_from(n), u64::try_from(n)) {
        (true, Ok(i), _) => Json::from(-i),
        (false, _, Ok(u)) => Json::from(u),
        _ => Json::from(if neg { -(n as f64) } else { n as f64 }),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, MAX_DEPTH};
    use serde_json::json;

    #[test]
    fn literals() {
        assert_eq!(parse("3"), Some(json!(3)));
        assert_eq!(parse("2.5"), Some(json!(2.5)));
        assert_eq!(parse("True"), Some(json!(true)));
        assert_eq!(parse("None"), Some(json!(null)));
        assert_eq!(parse("'x y'"), Some(json!("x y")));
        assert_eq!(
            parse("[{'path': '/dev/sdb', \"name\": 'hdd0', 'wipe': True}, (1, 2)]"),
            Some(json!([{"path": "/dev/sdb", "name": "hdd0", "wipe": true}, [1, 2]]))
        );
        assert_eq!(parse("{}"), Some(json!({})));
    }

    #[test]
    fn numbers_as_python_reads_them() {
        assert_eq!(parse("-7"), Some(json!(-7)));
        assert_eq!(parse("0"), Some(json!(0)));
        assert_eq!(parse("0x1F"), Some(json!(31)));
        assert_eq!(parse("0o17"), Some(json!(15)));
        assert_eq!(parse("1_000"), Some(json!(1000)));
        assert_eq!(parse("12345678901234567890"), Some(json!(12345678901234567890u64)));
        assert_eq!(parse(".5"), Some(json!(0.5)));
        assert_eq!(parse("3."), Some(json!(3.0)));
        assert_eq!(parse("1e3"), Some(json!(1000.0)));
        assert_eq!(parse("42 # a comment"), Some(json!(42)));
        // A leading zero is a syntax error in Python 3: the text stays a string.
        for s in ["010", "1__0", "_1", "inf", "nan", "1e", "0x"] {
            assert_eq!(parse(s), None, "{s}");
        }
    }

    #[test]
    fn not_literals_stay_strings_for_the_caller() {
        for s in ["true", "yes", "hello", "/dev/sdb", "[1, 2", "{'a' 1}", "1.2.3", "'open"] {
            assert_eq!(parse(s), None, "{s}");
        }
    }

    #[test]
    fn deep_nesting_stays_a_string_instead_of_overflowing_the_stack() {
        // 100 000 `[` used to recurse until the stack overflowed, aborting the process.
        for open in ["[", "(", "{'k': "] {
            assert_eq!(parse(&open.repeat(100_000)), None, "{open}");
        }
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_some());
        let deeper = format!("[{ok}]");
        assert_eq!(parse(&deeper), None);
    }
}
