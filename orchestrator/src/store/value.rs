//! What goes into a statement and comes out of a row, whichever database
//! holds it: values of the four kinds both dialects store (`Val`), rows as
//! lists of them (`Row`), and their conversions from Rust values and to and
//! from JSON (an export is rows as JSON). A leaf: nothing from the store.

use serde_json::{json, Value as Json};

#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<i64> for Val {
    fn from(v: i64) -> Self {
        Val::Int(v)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Self {
        Val::Int(v as i64)
    }
}
impl From<usize> for Val {
    fn from(v: usize) -> Self {
        Val::Int(v as i64)
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Self {
        Val::Real(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Self {
        Val::Text(v.to_string())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Self {
        Val::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Self {
        Val::Text(v.clone())
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Self {
        v.map_or(Val::Null, Into::into)
    }
}

/// A column's value in an export document.
impl From<Val> for Json {
    fn from(v: Val) -> Self {
        match v {
            Val::Null => Json::Null,
            Val::Int(x) => json!(x),
            Val::Real(x) => json!(x),
            Val::Text(t) => Json::String(t),
        }
    }
}

impl Val {
    /// A column's value read from an export document. Whole numbers are
    /// integers; a boolean is 0 or 1 and a list or an object is its JSON
    /// text, as no column holds them but a hand-written document may.
    pub fn from_json(v: &Json) -> Val {
        match v {
            Json::Null => Val::Null,
            Json::Bool(b) => Val::Int(*b as i64),
            Json::Number(n) => n.as_i64().map(Val::Int).unwrap_or_else(|| Val::Real(n.as_f64().unwrap_or(f64::NAN))),
            Json::String(s) => Val::Text(s.clone()),
            other => Val::Text(other.to_string()),
        }
    }
}

/// A value of a row read in place (`Sql::for_each`): text borrowed from
/// the database's buffer, not copied.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValRef<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
}

impl From<ValRef<'_>> for Val {
    fn from(v: ValRef<'_>) -> Val {
        match v {
            ValRef::Null => Val::Null,
            ValRef::Int(i) => Val::Int(i),
            ValRef::Real(f) => Val::Real(f),
            ValRef::Text(s) => Val::Text(s.to_string()),
        }
    }
}

impl ValRef<'_> {
    pub fn int(self) -> i64 {
        match self {
            ValRef::Int(v) => v,
            ValRef::Real(v) => v as i64,
            _ => 0,
        }
    }
    pub fn opt_real(self) -> Option<f64> {
        match self {
            ValRef::Real(v) => Some(v),
            ValRef::Int(v) => Some(v as f64),
            _ => None,
        }
    }
    pub fn real(self) -> f64 {
        self.opt_real().unwrap_or(f64::NAN)
    }
    pub fn text(&self) -> &str {
        match self {
            ValRef::Text(s) => s,
            _ => "",
        }
    }
}

/// A result row, read by position.
pub struct Row(pub Vec<Val>);

impl Row {
    pub fn int(&self, i: usize) -> i64 {
        self.opt_int(i).unwrap_or_default()
    }
    pub fn opt_int(&self, i: usize) -> Option<i64> {
        match self.0.get(i)? {
            Val::Int(v) => Some(*v),
            Val::Real(v) => Some(*v as i64),
            _ => None,
        }
    }
    pub fn real(&self, i: usize) -> f64 {
        self.opt_real(i).unwrap_or(f64::NAN)
    }
    /// A REAL column that may be NULL.
    pub fn opt_real(&self, i: usize) -> Option<f64> {
        match self.0.get(i)? {
            Val::Real(v) => Some(*v),
            Val::Int(v) => Some(*v as f64),
            _ => None,
        }
    }
    pub fn text(&self, i: usize) -> String {
        self.opt_text(i).unwrap_or_default()
    }
    pub fn opt_text(&self, i: usize) -> Option<String> {
        match self.0.get(i)? {
            Val::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
    /// A TEXT column moved out of the row (empty for NULL): for a reader
    /// that owns the row, one allocation a string rather than two.
    pub fn take_text(&mut self, i: usize) -> String {
        match self.0.get_mut(i) {
            Some(Val::Text(s)) => std::mem::take(s),
            _ => String::new(),
        }
    }
    /// A TEXT column holding JSON.
    pub fn json(&self, i: usize) -> Option<serde_json::Value> {
        self.opt_text(i).and_then(|t| serde_json::from_str(&t).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_every_kind() {
        for v in [Val::Null, Val::Int(-3), Val::Real(2.5), Val::Text("x".into())] {
            assert_eq!(Val::from_json(&Json::from(v.clone())), v);
        }
        assert_eq!(Val::from_json(&json!(true)), Val::Int(1));
        assert_eq!(Val::from_json(&json!({"a": 1})), Val::Text(r#"{"a":1}"#.into()));
    }
}
