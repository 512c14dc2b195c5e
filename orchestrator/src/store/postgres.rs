//! The PostgreSQL adapter, for a lab whose runners share one database
//! (`--db postgres://…`). tokio-postgres's connection is driven by a thread
//! of its own, so the store's synchronous calls can wait on the client from
//! anywhere — inside the run's tokio tasks too — as they wait on SQLite.
//! The dialect's bits live here: `?N` placeholders become `$N`, values go
//! to whatever column type a statement has, migrations run under an
//! advisory lock, and `hosts.seq` keeps the hosts' insertion order.

use super::error::StoreError;
use super::sql::Sql;
use super::value::{Row, Val};
use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type};

pub struct Pg {
    client: tokio_postgres::Client,
}

fn pg_err(e: tokio_postgres::Error) -> StoreError {
    // The server's own message (and detail) says what is wrong.
    let text = match e.as_db_error() {
        Some(db) => format!("{}{}", db.message(), db.detail().map(|d| format!(" ({d})")).unwrap_or_default()),
        None => e.to_string(),
    };
    StoreError::Postgres(text)
}

/// The advisory lock lease decisions hold for their transaction.
const EXCLUSIVE_LOCK: i64 = 7420002;

/// The advisory lock migrations hold (any number no other client uses).
const MIGRATION_LOCK: i64 = 7420001;

impl Pg {
    /// Connect to the server and database `url` names (libpq's URL form).
    pub fn connect(url: &str) -> Result<Pg, StoreError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(pg_err)?;
        if let Some(note) = super::pgpass::fill_password(&mut config) {
            tracing::warn!("{note}");
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("postgres".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(StoreError::Postgres(e.to_string())));
                        return;
                    }
                };
                rt.block_on(async move {
                    match config.connect(tokio_postgres::NoTls).await {
                        Ok((client, connection)) => {
                            let _ = tx.send(Ok(client));
                            // Drives the connection until the client is dropped.
                            let _ = connection.await;
                        }
                        Err(e) => {
                            let _ = tx.send(Err(pg_err(e)));
                        }
                    }
                });
            })
            .map_err(|e| StoreError::Postgres(e.to_string()))?;
        let client = rx.recv().map_err(|e| StoreError::Postgres(e.to_string()))??;
        Ok(Pg { client })
    }

    /// Bring the database to the schema of `migrations`, recorded in
    /// `benchrig_schema`, under an advisory lock so two orchestrators
    /// starting on a new database do not both create it. `shown` names the
    /// database in errors (its password redacted).
    pub fn migrate(&mut self, migrations: &[&str], shown: &str) -> Result<(), StoreError> {
        self.execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"), &[])?;
        let result = (|| {
            self.execute("CREATE TABLE IF NOT EXISTS benchrig_schema (version BIGINT NOT NULL)", &[])?;
            let current = self
                .query_one("SELECT MAX(version) FROM benchrig_schema", &[])?
                .and_then(|r| r.opt_int(0))
                .unwrap_or(0);
            let known = migrations.len() as i64;
            if current > known {
                return Err(StoreError::TooNew { path: shown.to_string(), found: current, known });
            }
            for (i, sql) in migrations.iter().enumerate().skip(current as usize) {
                self.transaction(|db| {
                    db.execute(sql, &[])?;
                    db.execute("INSERT INTO benchrig_schema (version) VALUES (?1)", &[Val::Int(i as i64 + 1)])
                })?;
            }
            Ok(())
        })();
        self.execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"), &[])?;
        result
    }
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

impl Sql for Pg {
    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        let sql = &dollar_placeholders(sql);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        if params.is_empty() {
            // BEGIN / COMMIT and DDL: the simple protocol, several statements allowed.
            futures_executor::block_on(self.client.batch_execute(sql)).map_err(pg_err)?;
            return Ok(0);
        }
        futures_executor::block_on(self.client.execute(sql, &refs)).map_err(pg_err)
    }

    fn query_named(&mut self, sql: &str, params: &[Val]) -> Result<(Vec<String>, Vec<Row>), StoreError> {
        let sql = &dollar_placeholders(sql);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let statement = futures_executor::block_on(self.client.prepare(sql)).map_err(pg_err)?;
        let names = statement.columns().iter().map(|c| c.name().to_string()).collect();
        let rows = futures_executor::block_on(self.client.query(&statement, &refs)).map_err(pg_err)?;
        let rows = rows
            .iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| {
                        let v = match *r.columns()[i].type_() {
                            Type::INT8 => r.try_get::<_, Option<i64>>(i).map(|v| v.map(Val::Int)),
                            Type::INT4 => r.try_get::<_, Option<i32>>(i).map(|v| v.map(|v| Val::Int(v as i64))),
                            Type::FLOAT8 => r.try_get::<_, Option<f64>>(i).map(|v| v.map(Val::Real)),
                            _ => r.try_get::<_, Option<String>>(i).map(|v| v.map(Val::Text)),
                        };
                        v.map(|v| v.unwrap_or(Val::Null)).map_err(pg_err)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Row)
            })
            .collect::<Result<_, _>>()?;
        Ok((names, rows))
    }

    /// A BIGSERIAL the schema adds for it (PostgreSQL keeps no row order).
    fn hosts_order(&self) -> &'static str {
        "seq"
    }

    // The server's clock, not the transaction's start (`now()`).
    fn unix_now_expr(&self) -> &'static str {
        "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS BIGINT)"
    }

    /// Row locks cannot lock a row not there yet (a host never leased), so
    /// every exclusive transaction takes one advisory lock instead.
    fn begin_exclusive(&mut self) -> Result<(), StoreError> {
        self.execute(&format!("BEGIN; SELECT pg_advisory_xact_lock({EXCLUSIVE_LOCK})"), &[]).map(|_| ())
    }
}

/// A value goes to whatever column type the statement has there: the store
/// writes integers into DOUBLE PRECISION columns now and then (a whole
/// number of seconds), and that is fine.
impl ToSql for Val {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self, ty) {
            (Val::Null, _) => Ok(IsNull::Yes),
            (Val::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Val::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Val::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Val::Real(f), &Type::FLOAT8) => f.to_sql(ty, out),
            (Val::Text(s), _) => s.to_sql(ty, out),
            (Val::Int(i), _) => i.to_string().to_sql(ty, out),
            (Val::Real(f), _) => f.to_string().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_become_dollars() {
        assert_eq!(super::dollar_placeholders("a = ?1 AND b IN (?2, ?10) -- ?"), "a = $1 AND b IN ($2, $10) -- ?");
    }
}
