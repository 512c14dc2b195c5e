//! The little SQL the store needs, over SQLite or PostgreSQL: statements
//! written once with `?N` placeholders (rewritten to `$N` for PostgreSQL),
//! values of four kinds, rows as lists of them.

use super::{postgres::Pg, StoreError};

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
        match self.0.get(i) {
            Some(Val::Real(v)) => *v,
            Some(Val::Int(v)) => *v as f64,
            _ => f64::NAN,
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
    /// A TEXT column holding JSON.
    pub fn json(&self, i: usize) -> Option<serde_json::Value> {
        self.opt_text(i).and_then(|t| serde_json::from_str(&t).ok())
    }
}

/// One open database.
pub enum Db {
    Sqlite(rusqlite::Connection),
    Postgres(Pg),
}

/// `?7` → `$7`, outside string literals (our statements have none with `?`).
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

impl Db {
    pub fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        match self {
            Db::Sqlite(c) => Ok(c.execute(sql, rusqlite::params_from_iter(params.iter().map(sqlite_value)))? as u64),
            Db::Postgres(p) => p.execute(&dollar_placeholders(sql), params),
        }
    }

    /// Column names and rows.
    pub fn query_named(&mut self, sql: &str, params: &[Val]) -> Result<(Vec<String>, Vec<Row>), StoreError> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare(sql)?;
                let names: Vec<String> = st.column_names().map(|s| s.to_string()).collect();
                let n = names.len();
                let rows = st.query_map(rusqlite::params_from_iter(params.iter().map(sqlite_value)), |r| {
                    (0..n).map(|i| r.get_ref(i).map(from_sqlite)).collect::<Result<Vec<_>, _>>().map(Row)
                })?;
                Ok((names, rows.collect::<Result<_, _>>()?))
            }
            Db::Postgres(p) => p.query(&dollar_placeholders(sql), params),
        }
    }

    pub fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StoreError> {
        Ok(self.query_named(sql, params)?.1)
    }

    pub fn query_one(&mut self, sql: &str, params: &[Val]) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// An INSERT … RETURNING id.
    pub fn insert(&mut self, sql: &str, params: &[Val]) -> Result<i64, StoreError> {
        let row = self.query_one(&format!("{sql} RETURNING id"), params)?;
        row.and_then(|r| r.opt_int(0)).ok_or_else(|| StoreError::Export("an insert returned no id".into()))
    }

    /// Run `f` in one transaction: all of it is stored, or none.
    pub fn transaction<T>(&mut self, f: impl FnOnce(&mut Db) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.execute("BEGIN", &[])?;
        match f(self) {
            Ok(v) => {
                self.execute("COMMIT", &[])?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.execute("ROLLBACK", &[]);
                Err(e)
            }
        }
    }

    /// The column that orders `hosts` as they were added: SQLite's rowid,
    /// PostgreSQL's `seq` (schema).
    pub fn hosts_order(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "rowid",
            Db::Postgres(_) => "seq",
        }
    }
}

fn sqlite_value(v: &Val) -> rusqlite::types::Value {
    use rusqlite::types::Value as S;
    match v {
        Val::Null => S::Null,
        Val::Int(i) => S::Integer(*i),
        Val::Real(f) => S::Real(*f),
        Val::Text(t) => S::Text(t.clone()),
    }
}

fn from_sqlite(v: rusqlite::types::ValueRef) -> Val {
    use rusqlite::types::ValueRef as R;
    match v {
        R::Null | R::Blob(_) => Val::Null,
        R::Integer(i) => Val::Int(i),
        R::Real(f) => Val::Real(f),
        R::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_become_dollars() {
        assert_eq!(super::dollar_placeholders("a = ?1 AND b IN (?2, ?10) -- ?"), "a = $1 AND b IN ($2, $10) -- ?");
    }
}
