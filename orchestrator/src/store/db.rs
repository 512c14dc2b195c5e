//! The open database, SQLite or PostgreSQL: the one place the store
//! chooses between the two adapters, behind the `Sql` surface both have.

use super::error::StoreError;
use super::location::DbLocation;
use super::postgres::Pg;
use super::schema;
use super::sql::{EachRow, Sql};
use super::sqlite::Sqlite;
use super::value::{Row, Val};

pub enum Db {
    Sqlite(Sqlite),
    Postgres(Pg),
}

impl Db {
    /// Open the database `at` names and bring it to the current schema.
    pub fn open(at: &DbLocation) -> Result<Db, StoreError> {
        // Errors name the database as `DbLocation` shows it: no password.
        let shown = at.to_string();
        match at {
            DbLocation::Sqlite(path) => {
                let db = Sqlite::open(path)?;
                db.migrate(schema::SQLITE_MIGRATIONS, &shown)?;
                Ok(Db::Sqlite(db))
            }
            DbLocation::Postgres(url) => {
                let mut db = Pg::connect(url)?;
                db.migrate(schema::PG_MIGRATIONS, &shown)?;
                Ok(Db::Postgres(db))
            }
        }
    }
}

impl Sql for Db {
    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        match self {
            Db::Sqlite(db) => db.execute(sql, params),
            Db::Postgres(db) => db.execute(sql, params),
        }
    }

    fn query_named(&mut self, sql: &str, params: &[Val]) -> Result<(Vec<String>, Vec<Row>), StoreError> {
        match self {
            Db::Sqlite(db) => db.query_named(sql, params),
            Db::Postgres(db) => db.query_named(sql, params),
        }
    }

    fn for_each(&mut self, sql: &str, params: &[Val], f: EachRow<'_>) -> Result<(), StoreError> {
        match self {
            Db::Sqlite(db) => db.for_each(sql, params, f),
            Db::Postgres(db) => db.for_each(sql, params, f),
        }
    }

    fn hosts_order(&self) -> &'static str {
        match self {
            Db::Sqlite(db) => db.hosts_order(),
            Db::Postgres(db) => db.hosts_order(),
        }
    }

    fn unix_now_expr(&self) -> &'static str {
        match self {
            Db::Sqlite(db) => db.unix_now_expr(),
            Db::Postgres(db) => db.unix_now_expr(),
        }
    }

    fn begin_exclusive(&mut self) -> Result<(), StoreError> {
        match self {
            Db::Sqlite(db) => db.begin_exclusive(),
            Db::Postgres(db) => db.begin_exclusive(),
        }
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        match self {
            Db::Sqlite(db) => db.begin(),
            Db::Postgres(db) => db.begin(),
        }
    }
}
