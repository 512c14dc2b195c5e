//! The little SQL the store needs, as one surface both adapters (`sqlite`,
//! `postgres`) and the dialect switch (`db::Db`) offer: statements written
//! once with `?N` placeholders, values of four kinds (`value`), rows as
//! lists of them. Each adapter supplies the two calls that differ; the rest
//! is written here once, so the dialects cannot drift apart in it.

use super::error::StoreError;
use super::value::{Row, Val, ValRef};

/// What `Sql::for_each` hands each row to.
pub type EachRow<'f> = &'f mut dyn FnMut(&[ValRef<'_>]) -> Result<(), StoreError>;

pub trait Sql {
    /// A statement that returns no rows; the number of rows it changed.
    /// Without parameters it may be several statements (migrations).
    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError>;

    /// Column names and rows.
    fn query_named(&mut self, sql: &str, params: &[Val]) -> Result<(Vec<String>, Vec<Row>), StoreError>;

    /// Each row in turn, its values borrowed (no string copied): for the
    /// reads of a year of rows, where allocating them was most of the time.
    fn for_each(&mut self, sql: &str, params: &[Val], f: EachRow<'_>) -> Result<(), StoreError>;

    /// The column that orders `hosts` as they were added (inventory order).
    fn hosts_order(&self) -> &'static str;

    /// An expression for the database's own time in unix seconds: the one
    /// clock every runner of a shared database agrees on (leases).
    fn unix_now_expr(&self) -> &'static str;

    /// The database's time, in unix seconds.
    fn unix_now(&mut self) -> Result<i64, StoreError> {
        let expr = self.unix_now_expr();
        let row = self.query_one(&format!("SELECT {expr}"), &[])?;
        row.and_then(|r| r.opt_int(0)).ok_or_else(|| StoreError::Answer("the database told no time".into()))
    }

    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StoreError> {
        Ok(self.query_named(sql, params)?.1)
    }

    fn query_one(&mut self, sql: &str, params: &[Val]) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// An INSERT … RETURNING id (both dialects have RETURNING).
    fn insert(&mut self, sql: &str, params: &[Val]) -> Result<i64, StoreError> {
        let row = self.query_one(&format!("{sql} RETURNING id"), params)?;
        row.and_then(|r| r.opt_int(0)).ok_or_else(|| StoreError::Answer("an insert returned no id".into()))
    }

    /// BEGIN a transaction that holds the database's writer lock from its
    /// first statement to COMMIT, so a read-then-write in it cannot
    /// interleave with another client's (SQLite's BEGIN IMMEDIATE,
    /// PostgreSQL's transaction-scoped advisory lock).
    fn begin_exclusive(&mut self) -> Result<(), StoreError>;

    /// BEGIN a transaction that writes.
    fn begin(&mut self) -> Result<(), StoreError> {
        self.execute("BEGIN", &[]).map(|_| ())
    }

    /// Run `f` in one transaction: all of it is stored, or none.
    fn transaction<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, StoreError>) -> Result<T, StoreError>
    where
        Self: Sized,
    {
        self.begin()?;
        self.commit_or_roll_back(f)
    }

    /// [`Sql::transaction`], begun with [`Sql::begin_exclusive`]: for
    /// decisions two clients must not both make (who holds a host).
    fn exclusive_transaction<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, StoreError>) -> Result<T, StoreError>
    where
        Self: Sized,
    {
        self.begin_exclusive()?;
        self.commit_or_roll_back(f)
    }

    /// `f` inside the transaction just begun, then COMMIT, or ROLLBACK on an error.
    fn commit_or_roll_back<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, StoreError>) -> Result<T, StoreError>
    where
        Self: Sized,
    {
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
}
