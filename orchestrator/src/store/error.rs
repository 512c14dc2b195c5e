//! Everything the store can fail with, whichever database is behind it.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {path}: {source}")]
    Open { path: String, source: rusqlite::Error },
    #[error("database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("no run `{0}` in the database (see `benchrig runs`)")]
    NoSuchRun(String),
    #[error("no bisect `{0}` in the database (see `benchrig bisect list`)")]
    NoSuchBisect(String),
    /// `path` is the location as `DbLocation` shows it: a URL's password redacted.
    #[error("database {path} was written by a newer benchrig (schema {found}, this one knows {known})")]
    TooNew { path: String, found: i64, known: i64 },
    #[error("writing the report: {0}")]
    Export(String),
    /// An export file `import` refuses.
    #[error("import: {0}")]
    Import(String),
    /// The database answered without what the statement promises.
    #[error("database: {0}")]
    Answer(String),
    #[error("postgresql: {0}")]
    Postgres(String),
    #[error("database: `{0}` is no status (or `better`) this benchrig knows")]
    UnknownStatus(String),
    /// A `monitor_series` row that does not read as a `MonitorSeries`.
    #[error("database: the monitor series of cell {cell} is unreadable: {why}")]
    BadSeries { cell: i64, why: String },
}
