//! The PostgreSQL adapter, for a lab whose runners share one database
//! (`--db postgres://…`). tokio-postgres's connection is driven by a thread
//! of its own, so the store's synchronous calls can wait on the client from
//! anywhere — inside the run's tokio tasks too — as they wait on SQLite.
//! The dialect's bits live here: `?N` placeholders become `$N`, values go
//! to whatever column type a statement has, migrations run under an
//! advisory lock, and `hosts.seq` keeps the hosts' insertion order. TLS is
//! libpq's `sslmode` and its files (`tls`), with rustls.

use super::error::StoreError;
use super::sql::{EachRow, Sql};
use super::tls;
use super::value::{Row, Val, ValRef};
use bytes::BytesMut;
use tokio_postgres::config::Host;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::Socket;
use tokio_postgres_rustls::MakeRustlsConnect;

pub struct Pg {
    client: tokio_postgres::Client,
    /// Each statement prepared once per connection: a run stores thousands
    /// of rows with a handful of statements, and preparing each time was a
    /// second round trip per row (a night of 100 hosts took 10.6 s).
    prepared: std::collections::HashMap<String, tokio_postgres::Statement>,
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
    /// Connect to the server and database `url` names (libpq's URL form),
    /// over TLS as its `sslmode` and libpq's variables say (`tls`). Errors
    /// name the URL with its password redacted.
    pub fn connect(url: &str) -> Result<Pg, StoreError> {
        Pg::connect_in(url, |var| std::env::var(var).ok())
    }

    /// [`Pg::connect`] with `env` for libpq's TLS variables and `HOME`.
    fn connect_in(url: &str, env: impl Fn(&str) -> Option<String>) -> Result<Pg, StoreError> {
        let shown = super::location::redacted_url(url);
        let fail = |what: String| StoreError::Postgres(format!("{shown}: {what}"));
        let (url, params) = tls::split_url(url);
        let params = params.or_env(&env);
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| fail(tls::chain(&e)))?;
        if let Some(note) = super::pgpass::fill_password(&mut config) {
            tracing::warn!("{note}");
        }
        // libpq: a socket is never TLS.
        let over_tcp =
            !config.get_hostaddrs().is_empty() || config.get_hosts().iter().any(|h| matches!(h, Host::Tcp(_)));
        let home = env("HOME").filter(|h| !h.is_empty()).map(std::path::PathBuf::from);
        let plan = tls::plan(&params, home.as_deref(), over_tcp).map_err(|e| fail(e.to_string()))?;
        let rustls = match plan.mode {
            tls::SslMode::Disable => None,
            _ => Some(MakeRustlsConnect::new(plan.client_config().map_err(|e| fail(e.to_string()))?)),
        };
        let attempts = plan.attempts();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("postgres".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(Failed::Other(e.to_string())));
                        return;
                    }
                };
                match rustls {
                    None => rt.block_on(serve(config, attempts, tokio_postgres::NoTls, tx)),
                    Some(rustls) => rt.block_on(serve(config, attempts, rustls, tx)),
                }
            })
            .map_err(|e| fail(e.to_string()))?;
        match rx.recv() {
            Ok(Ok(client)) => Ok(Pg { client, prepared: Default::default() }),
            Ok(Err(Failed::Connecting(e))) => Err(fail(plan.explain(&e))),
            Ok(Err(Failed::Other(e))) => Err(fail(e)),
            Err(e) => Err(fail(e.to_string())),
        }
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

/// What the connection's thread sends back: the client, or why not.
type Connected = Result<tokio_postgres::Client, Failed>;

enum Failed {
    /// tokio-postgres's error, for `Plan::explain`.
    Connecting(tokio_postgres::Error),
    /// The thread's runtime could not start.
    Other(String),
}

/// Connect with each of `attempts` in turn, the next only after the server
/// refused the one before (`allow`), send the client back on `tx`, then
/// drive the connection until the client is dropped.
async fn serve<T>(
    mut config: tokio_postgres::Config,
    attempts: &[tokio_postgres::config::SslMode],
    tls: T,
    tx: std::sync::mpsc::Sender<Connected>,
) where
    T: MakeTlsConnect<Socket> + Clone,
{
    for (i, mode) in attempts.iter().enumerate() {
        config.ssl_mode(*mode);
        match config.connect(tls.clone()).await {
            Ok((client, connection)) => {
                let _ = tx.send(Ok(client));
                let _ = connection.await;
                return;
            }
            Err(e) if e.as_db_error().is_some() && i + 1 < attempts.len() => continue,
            Err(e) => {
                let _ = tx.send(Err(Failed::Connecting(e)));
                return;
            }
        }
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

impl Pg {
    /// `sql` (with `$n` placeholders) prepared, from the cache when it was before.
    fn prepare(&mut self, sql: &str) -> Result<tokio_postgres::Statement, StoreError> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let statement = futures_executor::block_on(self.client.prepare(sql)).map_err(pg_err)?;
        self.prepared.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }
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
        let statement = self.prepare(sql)?;
        futures_executor::block_on(self.client.execute(&statement, &refs)).map_err(pg_err)
    }

    fn query_named(&mut self, sql: &str, params: &[Val]) -> Result<(Vec<String>, Vec<Row>), StoreError> {
        let statement = self.prepare(&dollar_placeholders(sql))?;
        let names = statement.columns().iter().map(|c| c.name().to_string()).collect();
        let mut rows = Vec::new();
        self.for_each(sql, params, &mut |values| {
            rows.push(Row(values.iter().map(|&v| Val::from(v)).collect()));
            Ok(())
        })?;
        Ok((names, rows))
    }

    fn for_each(&mut self, sql: &str, params: &[Val], f: EachRow<'_>) -> Result<(), StoreError> {
        let sql = &dollar_placeholders(sql);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let statement = self.prepare(sql)?;
        let rows = futures_executor::block_on(self.client.query(&statement, &refs)).map_err(pg_err)?;
        for r in &rows {
            let values = (0..r.len())
                .map(|i| {
                    let v = match *r.columns()[i].type_() {
                        Type::INT8 => r.try_get::<_, Option<i64>>(i).map(|v| v.map(ValRef::Int)),
                        Type::INT4 => r.try_get::<_, Option<i32>>(i).map(|v| v.map(|v| ValRef::Int(v as i64))),
                        Type::FLOAT8 => r.try_get::<_, Option<f64>>(i).map(|v| v.map(ValRef::Real)),
                        _ => r.try_get::<_, Option<&str>>(i).map(|v| v.map(ValRef::Text)),
                    };
                    v.map(|v| v.unwrap_or(ValRef::Null)).map_err(pg_err)
                })
                .collect::<Result<Vec<_>, _>>()?;
            f(&values)?;
        }
        Ok(())
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
    use super::Pg;
    use std::path::{Path, PathBuf};

    #[test]
    fn placeholders_become_dollars() {
        assert_eq!(super::dollar_placeholders("a = ?1 AND b IN (?2, ?10) -- ?"), "a = $1 AND b IN ($2, $10) -- ?");
    }

    /// Where ci/postgres.sh puts the TLS side of its server: `tcp.url`
    /// (role benchrig_tls and its password, localhost), `ca.crt` that signed
    /// the server's certificate, `wrong-ca.crt` that signed nothing of it,
    /// `client.crt`/`.key` for role benchrig_cert.
    const TLS_DIR: &str = "/var/tmp/benchrig-pg";

    /// The server's TCP URL, with `user` for benchrig_tls and `query` added;
    /// None (the test is skipped) when no server is named.
    fn tls_url(user: &str, query: &str) -> Option<String> {
        if std::env::var_os("BENCHRIG_TEST_POSTGRES").is_none() {
            eprintln!("BENCHRIG_TEST_POSTGRES is not set: PostgreSQL over TLS is not tried");
            return None;
        }
        let file = Path::new(TLS_DIR).join("tcp.url");
        let url = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (`ci/postgres.sh up` writes it)", file.display()));
        let url = url.trim().replacen("://benchrig_tls:", &format!("://{user}:"), 1);
        Some(format!("{url}?{query}"))
    }

    fn file(name: &str) -> String {
        Path::new(TLS_DIR).join(name).display().to_string()
    }

    /// A home of its own and no libpq variable, so nothing of the user
    /// running the tests (a `~/.postgresql/root.crt`, `PGSSLMODE`) counts.
    struct Env {
        home: tempfile::TempDir,
        vars: Vec<(&'static str, String)>,
    }

    impl Env {
        fn new() -> Env {
            Env { home: tempfile::tempdir().unwrap(), vars: vec![] }
        }

        fn with(mut self, var: &'static str, value: &str) -> Env {
            self.vars.push((var, value.into()));
            self
        }

        /// `~/.postgresql/root.crt` a copy of `from`.
        fn root_crt(self, from: &str) -> Env {
            let dir = self.home.path().join(".postgresql");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(from, dir.join("root.crt")).unwrap();
            self
        }

        fn home(&self) -> PathBuf {
            self.home.path().into()
        }

        fn connect(&self, url: &str) -> Result<Pg, String> {
            let home = self.home().display().to_string();
            Pg::connect_in(url, |var| match var {
                "HOME" => Some(home.clone()),
                _ => self.vars.iter().find(|(v, _)| *v == var).map(|(_, value)| value.clone()),
            })
            .map_err(|e| e.to_string())
        }
    }

    /// What the server says of this connection: is it TLS?
    fn ssl(pg: &Pg) -> bool {
        let row = futures_executor::block_on(
            pg.client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]),
        )
        .unwrap();
        row.get(0)
    }

    /// The password of `url`, never shown in an error.
    fn password(url: &str) -> &str {
        let creds = &url[url.find("://").unwrap() + 3..url.rfind('@').unwrap()];
        creds.split_once(':').unwrap().1
    }

    #[test]
    fn verify_full_with_the_servers_ca_connects_over_tls() {
        let ca = file("ca.crt");
        let Some(url) = tls_url("benchrig_tls", &format!("sslmode=verify-full&sslrootcert={ca}")) else { return };
        let pg = Env::new().connect(&url).unwrap();
        assert!(ssl(&pg), "verify-full, and the server says the connection is not TLS");
        // The same through libpq's variables, the URL naming neither.
        let url = url.split_once('?').unwrap().0;
        let pg = Env::new().with("PGSSLMODE", "verify-full").with("PGSSLROOTCERT", &ca).connect(url).unwrap();
        assert!(ssl(&pg), "PGSSLMODE=verify-full, and the connection is not TLS");
    }

    #[test]
    fn verify_full_with_another_ca_is_refused_as_a_certificate_error_naming_the_url_without_its_password() {
        let wrong = file("wrong-ca.crt");
        let Some(url) = tls_url("benchrig_tls", &format!("sslmode=verify-full&sslrootcert={wrong}")) else { return };
        let e = Env::new().connect(&url).err().expect("a server whose CA is not the root certificate was believed");
        assert!(e.contains("certificate verify failed") && e.contains("UnknownIssuer"), "{e}");
        assert!(e.contains("benchrig_tls:***@localhost") && !e.contains(password(&url)), "{e}");
        // verify-ca checks the same chain.
        let url = url.replace("verify-full", "verify-ca");
        let e = Env::new().connect(&url).err().expect("verify-ca believed a server of another CA");
        assert!(e.contains("certificate verify failed"), "{e}");
    }

    #[test]
    fn a_host_name_not_in_the_certificate_is_refused_by_verify_full_and_taken_by_verify_ca() {
        let ca = file("ca.crt");
        let Some(url) = tls_url("benchrig_tls", &format!("sslmode=verify-full&sslrootcert={ca}&hostaddr=127.0.0.1"))
        else {
            return;
        };
        // The server at 127.0.0.1, reached as a name its certificate does not have.
        let url = url.replacen("@localhost:", "@benchrig-elsewhere.invalid:", 1);
        let e = Env::new().connect(&url).err().expect("verify-full took a certificate made out to another name");
        assert!(e.contains("certificate verify failed") && e.contains("benchrig-elsewhere.invalid"), "{e}");
        let pg = Env::new().connect(&url.replace("verify-full", "verify-ca")).unwrap();
        assert!(ssl(&pg));
    }

    #[test]
    fn sslmode_disable_connects_without_tls_and_require_with_it() {
        let Some(url) = tls_url("benchrig_tls", "sslmode=disable") else { return };
        assert!(!ssl(&Env::new().connect(&url).unwrap()), "sslmode=disable, and the connection is TLS");
        // No root certificate: encrypted, the certificate not checked (libpq's require).
        let url = url.replace("disable", "require");
        assert!(ssl(&Env::new().connect(&url).unwrap()), "sslmode=require, and the connection is not TLS");
        // The default, prefer, takes TLS when the server has it.
        let url = url.split_once('?').unwrap().0;
        assert!(ssl(&Env::new().connect(url).unwrap()), "sslmode=prefer (the default), and no TLS");
    }

    #[test]
    fn require_with_a_root_certificate_in_home_checks_the_chain_as_libpq_does() {
        let Some(url) = tls_url("benchrig_tls", "sslmode=require") else { return };
        let e = Env::new()
            .root_crt(&file("wrong-ca.crt"))
            .connect(&url)
            .err()
            .expect("require ignored ~/.postgresql/root.crt");
        assert!(
            e.contains("certificate verify failed") && e.contains("because") && e.contains("root.crt exists"),
            "{e}"
        );
        let pg = Env::new().root_crt(&file("ca.crt")).connect(&url).unwrap();
        assert!(ssl(&pg));
    }

    #[test]
    fn a_role_pg_hba_allows_only_over_tls_is_refused_without_it_and_allow_retries_with_tls() {
        let Some(url) = tls_url("benchrig_tls_only", "sslmode=disable") else { return };
        let e = Env::new().connect(&url).err().expect("the server let a TLS-only role in without TLS");
        assert!(e.contains("pg_hba.conf rejects connection") && e.contains("no encryption"), "{e}");
        let pg = Env::new().connect(&url.replace("disable", "allow")).unwrap();
        assert!(ssl(&pg), "allow: the server refused the plain connection, and the next was not TLS");
    }

    #[test]
    fn a_client_certificate_logs_in_where_pg_hba_asks_for_one() {
        let ca = file("ca.crt");
        let Some(url) = tls_url("benchrig_cert", &format!("sslmode=verify-full&sslrootcert={ca}")) else { return };
        let e = Env::new().connect(&url).err().expect("role benchrig_cert came in without a certificate");
        assert!(e.contains("requires a valid client certificate"), "{e}");
        let with = format!("{url}&sslcert={}&sslkey={}", file("client.crt"), file("client.key"));
        let pg = Env::new().connect(&with).unwrap();
        assert!(ssl(&pg));
    }

    #[test]
    fn a_socket_is_never_tls_whatever_sslmode_says() {
        let Ok(base) = std::env::var("BENCHRIG_TEST_POSTGRES") else {
            eprintln!("BENCHRIG_TEST_POSTGRES is not set: the socket's sslmode is not tried");
            return;
        };
        assert!(base.contains("%2F") && !base.contains('?'), "ci/postgres.sh's URL is a socket's: {base}");
        let pg = Env::new().connect(&format!("{base}?sslmode=require")).unwrap();
        assert!(!ssl(&pg));
        let e =
            Env::new().connect(&format!("{base}?sslmode=verify-fully")).err().expect("an unknown sslmode was taken");
        assert!(e.contains("unknown sslmode `verify-fully`"), "{e}");
    }

    /// A server that answers TLS's request with `N`, as one without TLS does.
    #[test]
    fn a_server_without_tls_is_refused_when_sslmode_requires_it() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut request = [0u8; 8];
            conn.read_exact(&mut request).unwrap();
            conn.write_all(b"N").unwrap();
            request
        });
        let url = format!("postgres://bench:s3cret@127.0.0.1:{port}/lab?sslmode=require");
        let e = Env::new().connect(&url).err().expect("connected to a server with no TLS");
        assert_eq!(
            e,
            format!("postgresql: postgres://bench:***@127.0.0.1:{port}/lab?sslmode=require: server does not support TLS but sslmode=require")
        );
        // Length 8, code 80877103: SSLRequest.
        assert_eq!(server.join().unwrap(), [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
    }
}
