//! The config file's precedence, from the real binary: a flag over its
//! BENCHRIG_* variable over the config file over the built-in default, and
//! ./benchrig.toml over ~/.config/benchrig/config.toml; `--config` and
//! BENCHRIG_CONFIG name one. Each case checks where `benchrig runs` put its
//! database (a real effect, not only what `benchrig config` says) and what
//! `benchrig config` says about it.

mod common;

use common::transcript;
use std::path::Path;
use std::process::{Command, Output};

/// `benchrig ARGS` in `cwd` with HOME at `home`, no BENCHRIG_* from this
/// process, and `env` set.
fn benchrig(cwd: &Path, home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchrig"));
    cmd.args(args).current_dir(cwd).env("HOME", home).env_remove("XDG_CONFIG_HOME").env("NO_COLOR", "1");
    for (k, _) in std::env::vars() {
        if k.starts_with("BENCHRIG_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("run benchrig");
    transcript(args, &out);
    out
}

struct Dirs {
    _tmp: tempfile::TempDir,
    cwd: std::path::PathBuf,
    home: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let (cwd, home) = (tmp.path().join("work"), tmp.path().join("home"));
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(home.join(".config/benchrig")).unwrap();
    Dirs { _tmp: tmp, cwd, home }
}

/// Which of `names` (in `dir`) `benchrig runs` created as its database.
fn created<'a>(dir: &Path, names: &[&'a str]) -> Vec<&'a str> {
    names.iter().copied().filter(|n| dir.join(n).exists()).collect()
}

/// `benchrig config`'s line for `key`: (value, from).
fn config_line(d: &Dirs, env: &[(&str, &str)], key: &str) -> (String, String) {
    let out = benchrig(&d.cwd, &d.home, env, &["config"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(key)).unwrap_or_else(|| panic!("{text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[1].to_string(), words[2..].join(" "))
}

#[test]
fn flag_over_environment_over_working_directory_file_over_home_file_over_default() {
    let d = dirs();
    let home_file = d.home.join(".config/benchrig/config.toml");
    let home_db = d.home.join("home.db");
    std::fs::write(&home_file, format!("db = \"{}\"\nforks = 9\n", home_db.display())).unwrap();
    let db_names = ["benchrig.db", "cwd.db", "env.db", "flag.db"];
    let runs = |env: &[(&str, &str)], extra: &[&str]| {
        let args: Vec<&str> = ["runs"].iter().copied().chain(extra.iter().copied()).collect();
        assert_eq!(benchrig(&d.cwd, &d.home, env, &args).status.code(), Some(0));
    };

    // 1. Only ~/.config/benchrig/config.toml: its db.
    runs(&[], &[]);
    assert!(home_db.exists(), "the home file's db was not used");
    assert_eq!(created(&d.cwd, &db_names), Vec::<&str>::new());
    assert_eq!(config_line(&d, &[], "db"), (home_db.display().to_string(), format!("{}:1", home_file.display())));
    assert_eq!(config_line(&d, &[], "forks"), ("9".into(), format!("{}:2", home_file.display())));

    // 2. ./benchrig.toml wins over the home file (the whole file: no merge,
    //    as the first file found is the one read), its path relative to it.
    std::fs::write(d.cwd.join("benchrig.toml"), "db = \"cwd.db\"\n").unwrap();
    runs(&[], &[]);
    assert_eq!(created(&d.cwd, &db_names), ["cwd.db"]);
    assert_eq!(config_line(&d, &[], "forks"), ("50".into(), "default".into()));

    // 3. BENCHRIG_DB wins over the file.
    runs(&[("BENCHRIG_DB", "env.db")], &[]);
    assert_eq!(created(&d.cwd, &db_names), ["cwd.db", "env.db"]);
    assert_eq!(config_line(&d, &[("BENCHRIG_DB", "env.db")], "db"), ("env.db".into(), "env BENCHRIG_DB".into()));

    // 4. The flag wins over both.
    runs(&[("BENCHRIG_DB", "env.db")], &["--db", "flag.db"]);
    assert_eq!(created(&d.cwd, &db_names), ["cwd.db", "env.db", "flag.db"]);

    // 5. --config and BENCHRIG_CONFIG name the file; --config wins.
    let named = d.cwd.join("named.toml");
    std::fs::write(&named, "db = \"named.db\"\n").unwrap();
    let other = d.cwd.join("other.toml");
    std::fs::write(&other, "db = \"other.db\"\n").unwrap();
    runs(&[("BENCHRIG_CONFIG", other.to_str().unwrap())], &["--config", named.to_str().unwrap()]);
    assert!(d.cwd.join("named.db").exists() && !d.cwd.join("other.db").exists());
    runs(&[("BENCHRIG_CONFIG", other.to_str().unwrap())], &[]);
    assert!(d.cwd.join("other.db").exists());
    // No file at all: the built-in default, ./benchrig.db.
    std::fs::remove_file(d.cwd.join("benchrig.toml")).unwrap();
    std::fs::remove_file(&home_file).unwrap();
    runs(&[], &[]);
    assert!(d.cwd.join("benchrig.db").exists());
    assert_eq!(config_line(&d, &[], "db"), ("benchrig.db".into(), "default".into()));
}

#[test]
fn a_bad_value_stops_every_command_at_its_line_and_an_unknown_key_only_warns() {
    let d = dirs();
    std::fs::write(d.cwd.join("benchrig.toml"), "forks = 4\nlease_term = \"soon\"\n").unwrap();
    let out = benchrig(&d.cwd, &d.home, &[], &["runs"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("benchrig.toml:2:14: invalid value 'soon'"), "{err}");
    assert!(!d.cwd.join("benchrig.db").exists(), "a bad config file changed nothing");

    std::fs::write(d.cwd.join("benchrig.toml"), "forks = 4\nfrks = 5\n").unwrap();
    let out = benchrig(&d.cwd, &d.home, &[], &["runs"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("benchrig.toml:2:1: unknown key `frks`, ignored") && err.contains("`forks`"), "{err}");
}
