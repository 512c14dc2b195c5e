//! Where the results database is, as `--db` (or `BENCHRIG_DB`) names it: a
//! SQLite file, or a PostgreSQL server by URL. Shown with a URL's password
//! redacted, so no error or log line carries it.

use std::ffi::OsStr;
use std::fmt;
use std::path::PathBuf;

/// The URL schemes tokio-postgres connects to (libpq's two spellings).
const POSTGRES_SCHEMES: &[&str] = &["postgres://", "postgresql://"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbLocation {
    /// A SQLite file, created when missing.
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL, as libpq reads it.
    Postgres(String),
}

#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum LocationError {
    #[error(
        "a {scheme}:// URL names no database benchrig can use; give a SQLite file or a postgres:// (postgresql://) URL"
    )]
    UnknownScheme { scheme: String },
}

impl DbLocation {
    /// A value that starts like a URL (`scheme://`) must be PostgreSQL's;
    /// anything else is a SQLite file, non-UTF-8 paths included.
    pub fn parse(value: &OsStr) -> Result<DbLocation, LocationError> {
        let Some(text) = value.to_str() else { return Ok(DbLocation::Sqlite(value.into())) };
        if POSTGRES_SCHEMES.iter().any(|s| text.starts_with(s)) {
            return Ok(DbLocation::Postgres(text.to_string()));
        }
        match url_scheme(text) {
            Some(scheme) => Err(LocationError::UnknownScheme { scheme: scheme.to_string() }),
            None => Ok(DbLocation::Sqlite(value.into())),
        }
    }

    /// The SQLite file, if that is what this is.
    pub fn sqlite_path(&self) -> Option<&std::path::Path> {
        match self {
            DbLocation::Sqlite(p) => Some(p),
            DbLocation::Postgres(_) => None,
        }
    }
}

impl std::str::FromStr for DbLocation {
    type Err = LocationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DbLocation::parse(OsStr::new(s))
    }
}

/// A path as it always was shown; a URL without its password.
impl fmt::Display for DbLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbLocation::Sqlite(p) => write!(f, "{}", p.display()),
            DbLocation::Postgres(url) => f.write_str(&redacted_url(url)),
        }
    }
}

/// `scheme` of `scheme://…` (RFC 3986: a letter, then letters, digits, `+-.`).
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))).then_some(scheme)
}

/// A URL with its password replaced by `***`, wherever libpq reads one: in
/// `user:password@` and as a `password=` parameter. The credentials run to
/// the last `@` before the parameters (tokio-postgres stops at the first):
/// a password with an unencoded `@` is hidden whole, not in part.
pub fn redacted_url(url: &str) -> String {
    let Some((head, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find('?').unwrap_or(rest.len());
    let (creds, rest) = match rest[..authority_end].rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let mut out = format!("{head}://");
    if let Some(creds) = creds {
        match creds.split_once(':') {
            Some((user, _)) => out.push_str(&format!("{user}:***@")),
            None => out.push_str(&format!("{creds}@")),
        }
    }
    let (before, params) = match rest.split_once('?') {
        Some((b, p)) => (b, Some(p)),
        None => (rest, None),
    };
    out.push_str(before);
    if let Some(params) = params {
        let params: Vec<String> = params
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((key, _)) if percent_decoded(key) == "password" => format!("{key}=***"),
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// `%XX` decoded (a key spelt `pass%77ord` is still the password).
pub(super) fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<DbLocation, LocationError> {
        s.parse()
    }

    #[test]
    fn a_path_is_sqlite_and_either_postgres_scheme_is_postgres() {
        assert_eq!(parse("benchrig.db"), Ok(DbLocation::Sqlite("benchrig.db".into())));
        assert_eq!(parse("/var/lib/x:y/r.db"), Ok(DbLocation::Sqlite("/var/lib/x:y/r.db".into())));
        assert_eq!(parse("./postgres"), Ok(DbLocation::Sqlite("./postgres".into())));
        for url in ["postgres://bench@dbhost/lab", "postgresql://root@%2Fvar%2Frun%2Fpostgresql/t"] {
            assert_eq!(parse(url), Ok(DbLocation::Postgres(url.into())));
        }
        use std::os::unix::ffi::OsStrExt;
        let odd = OsStr::from_bytes(b"r\xff.db");
        assert_eq!(DbLocation::parse(odd), Ok(DbLocation::Sqlite(odd.into())), "a non-UTF-8 path is still a file");
    }

    #[test]
    fn another_scheme_is_refused_naming_the_accepted_forms() {
        let e = parse("mysql://u:p@h/d").unwrap_err();
        assert_eq!(e, LocationError::UnknownScheme { scheme: "mysql".into() });
        let text = e.to_string();
        assert!(text.contains("mysql://") && text.contains("SQLite file") && text.contains("postgresql://"), "{text}");
        assert!(parse("sqlite:///tmp/x.db").is_err(), "no sqlite:// either: a path is the SQLite form");
    }

    #[test]
    fn passwords_are_redacted_wherever_libpq_reads_them() {
        let shown = |s: &str| DbLocation::Postgres(s.into()).to_string();
        assert_eq!(shown("postgres://bench:s3cret@dbhost:5432/lab"), "postgres://bench:***@dbhost:5432/lab");
        assert_eq!(shown("postgres://bench@dbhost/lab"), "postgres://bench@dbhost/lab");
        assert_eq!(shown("postgres://dbhost/lab?sslmode=disable"), "postgres://dbhost/lab?sslmode=disable");
        assert_eq!(
            shown("postgresql://u@h/d?password=s3cret&application_name=b&pass%77ord=x"),
            "postgresql://u@h/d?password=***&application_name=b&pass%77ord=***"
        );
        assert_eq!(shown("postgres://u:p@ss@h/d"), "postgres://u:***@h/d", "an unencoded @ hides no part of it");
        assert_eq!(redacted_url("mysql://u:p@h/d"), "mysql://u:***@h/d");
        assert_eq!(DbLocation::Sqlite("a:b@c.db".into()).to_string(), "a:b@c.db", "a path is shown as it is");
    }
}
