//! A PostgreSQL password that is not in the URL, found where libpq finds
//! it: `PGPASSWORD`, then the password file (`PGPASSFILE`, else
//! `~/.pgpass`). A password in `--db` itself would be in every user's `ps`
//! (`cli::DbLocationParser` refuses one there). Written by hand because
//! tokio-postgres reads neither, and libpq's rules are a few lines: fields
//! `host:port:database:user:password`, `*` for any, `\` escaping `:` and `\`,
//! `localhost` also matching a Unix socket, a file readable by group or
//! others ignored.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use tokio_postgres::config::{Config, Host};

/// Give `config` the password libpq would use, when its URL has none; a
/// note on why a password file was passed over, for a warning.
pub fn fill_password(config: &mut Config) -> Option<String> {
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass")));
    fill_from(config, std::env::var_os("PGPASSWORD"), file)
}

/// [`fill_password`] with the environment's two answers given.
fn fill_from(config: &mut Config, env: Option<OsString>, file: Option<PathBuf>) -> Option<String> {
    if config.get_password().is_some() {
        return None;
    }
    if let Some(p) = env.filter(|p| !p.is_empty()) {
        config.password(p.as_encoded_bytes());
        return None;
    }
    let file = file?;
    let meta = std::fs::metadata(&file).ok()?;
    if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0 {
        return Some(format!(
            "{} is readable by group or others and is not used (libpq's rule): chmod 0600 it",
            file.display()
        ));
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        // libpq: `localhost` in the file matches a socket connection too.
        Some(Host::Unix(_)) | None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or_default().to_string();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    if let Some(p) = lookup(&text, &host, port, &db, &user) {
        config.password(p);
    }
    None
}

/// The password of the first line of a password file that matches.
fn lookup(text: &str, host: &str, port: u16, db: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    text.lines().filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty()).find_map(|line| {
        let f = fields(line);
        let [h, p, d, u, password] = <[String; 5]>::try_from(f).ok()?;
        let is = |field: &str, value: &str| field == "*" || field == value;
        (is(&h, host) && is(&p, &port) && is(&d, db) && is(&u, user)).then_some(password)
    })
}

/// A line's fields: split at `:`, with `\:` and `\\` for the characters.
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut().expect("one field").extend(chars.next()),
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().expect("one field").push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_file_is_read_as_libpq_reads_it() {
        let text = "# lab\n\
                    db1:5432:lab:bench:first\n\
                    *:5433:*:bench:any\\:host\n\
                    localhost:*:lab:ci:sock\\\\et\n\
                    db1:5432:lab:*:fallback\n";
        assert_eq!(lookup(text, "db1", 5432, "lab", "bench").as_deref(), Some("first"));
        assert_eq!(lookup(text, "elsewhere", 5433, "x", "bench").as_deref(), Some("any:host"));
        assert_eq!(lookup(text, "localhost", 5432, "lab", "ci").as_deref(), Some("sock\\et"));
        assert_eq!(lookup(text, "db1", 5432, "lab", "ci").as_deref(), Some("fallback"), "the first match wins");
        assert_eq!(lookup(text, "db2", 5432, "lab", "bench"), None);
        assert_eq!(lookup("a:b:c\n", "a", 1, "c", "d"), None, "a short line matches nothing");
        assert_eq!(fields("h:1:d:u:pa:ss"), ["h", "1", "d", "u", "pa:ss"], "the password keeps a `:`");
    }

    #[test]
    fn the_password_comes_from_the_url_then_pgpassword_then_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "h:5432:lab:bench:from-file\n").unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let with = |url: &str, env: Option<&str>| {
            let mut c: Config = url.parse().unwrap();
            let note = fill_from(&mut c, env.map(OsString::from), Some(file.clone()));
            (c.get_password().map(|p| String::from_utf8_lossy(p).into_owned()), note)
        };
        assert_eq!(with("postgres://bench:inurl@h/lab", None).0.as_deref(), Some("inurl"));
        assert_eq!(with("postgres://bench@h/lab", None).0.as_deref(), Some("from-file"));
        assert_eq!(with("postgres://bench@h/lab", Some("")).0.as_deref(), Some("from-file"), "an empty one is none");
        assert_eq!(with("postgres://bench@h/lab", Some("from-env")).0.as_deref(), Some("from-env"));
        assert_eq!(with("postgres://bench@h:5433/lab", None).0, None, "another port matches no line");
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let (password, note) = with("postgres://bench@h/lab", None);
        assert_eq!(password, None);
        assert!(note.unwrap().contains("readable by group or others"));
    }
}
