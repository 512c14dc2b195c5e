//! The config file: what it sets, what it refuses (with file, line and
//! column), and that the command line still wins.

use super::*;
use crate::cli::Cli;
use clap::CommandFactory;
use std::ffi::OsString;
use std::path::Path;

fn root() -> Command {
    Cli::command()
}

fn parsed(text: &str) -> Result<ConfigFile, crate::diagnostic::ConfigError> {
    file::parse("benchrig.toml", text, &root())
}

#[test]
fn every_setting_is_a_flag_that_reads_its_environment_variable() {
    for setting in Setting::all() {
        let flags = flags(&root(), setting);
        assert!(!flags.is_empty(), "{setting:?} has no flag");
        for (cmd, arg) in flags {
            assert_eq!(
                arg.get_env().and_then(|e| e.to_str()),
                Some(setting.env()),
                "`{cmd} --{}` does not declare env = {}",
                arg.get_id(),
                setting.env()
            );
        }
    }
    // The report's format only: compare's and history's take other values.
    let formats: Vec<String> = flags(&root(), Setting::ReportFormat).into_iter().map(|(c, _)| c).collect();
    assert_eq!(formats, ["report"]);
}

#[test]
fn a_file_s_values_become_the_flags_defaults_and_the_environment_and_flags_win() {
    use clap::FromArgMatches;
    let file = parsed("forks = 7\nlease_term = \"5m\"\nreport_format = \"md\"\n").unwrap();
    let parse = |args: &[&str]| {
        let m = apply(root(), &file).try_get_matches_from(args).unwrap();
        Cli::from_arg_matches(&m).unwrap()
    };
    let forks = |cli: Cli| match cli.command {
        crate::cli::Command::Facts(a) => a.hosts.forks,
        _ => unreachable!(),
    };
    // The environment is the process's: only the file and the flag here
    // (the precedence of BENCHRIG_* over the file is tests/config.rs').
    if std::env::var_os("BENCHRIG_FORKS").is_none() {
        assert_eq!(forks(parse(&["benchrig", "facts"])), 7);
    }
    assert_eq!(forks(parse(&["benchrig", "facts", "-f", "3"])), 3);
    if std::env::var_os("BENCHRIG_LEASE_TERM").is_none() {
        match parse(&["benchrig", "run", "p.yml"]).command {
            crate::cli::Command::Run(a) => assert_eq!(a.lease_term, std::time::Duration::from_secs(300)),
            _ => unreachable!(),
        }
    }
    if std::env::var_os("BENCHRIG_REPORT_FORMAT").is_none() {
        match parse(&["benchrig", "report", "last"]).command {
            crate::cli::Command::Report(a) => assert_eq!(a.format, crate::cli::ReportFormat::Md),
            _ => unreachable!(),
        }
        // compare's --format is another setting's: untouched.
        match parse(&["benchrig", "compare", "a", "b"]).command {
            crate::cli::Command::Compare(a) => assert_eq!(a.format, crate::cli::CompareFormat::Table),
            _ => unreachable!(),
        }
    }
}

#[test]
fn effective_settings_say_where_each_came_from_env_over_file_over_default() {
    let file = ConfigFile {
        path: Some("/p/benchrig.toml".into()),
        values: vec![
            Located { setting: Setting::Forks, values: vec!["7".into()], line: 1 },
            Located { setting: Setting::Db, values: vec!["/p/r.db".into()], line: 2 },
        ],
        ..ConfigFile::default()
    };
    let env = |var: &str| (var == "BENCHRIG_DB").then(|| "postgres://b@h/lab".to_string());
    let got: Vec<(Setting, Vec<String>, String)> =
        effective(&root(), &file, env).into_iter().map(|e| (e.setting, e.values, e.source.to_string())).collect();
    let want = |s: Setting| got.iter().find(|g| g.0 == s).cloned().unwrap();
    assert_eq!(want(Setting::Db), (Setting::Db, vec!["postgres://b@h/lab".into()], "env BENCHRIG_DB".into()));
    assert_eq!(want(Setting::Forks), (Setting::Forks, vec!["7".into()], "/p/benchrig.toml:1".into()));
    assert_eq!(want(Setting::LeaseTerm), (Setting::LeaseTerm, vec!["2m".into()], "default".into()));
    assert_eq!(want(Setting::Inventory), (Setting::Inventory, vec![], "default".into()));
    let inv = effective(&root(), &file, |v: &str| (v == "BENCHRIG_INVENTORY").then(|| "a.yml,b.yml".to_string()));
    assert_eq!(inv[0].values, ["a.yml,b.yml"], "one -i value: files or hosts, as the inventory reads it");
}

#[test]
fn an_unknown_key_is_a_located_warning_with_a_suggestion() {
    let f = parsed("forks = 5\nlease_trem = \"5m\"\n").unwrap();
    assert_eq!(f.values, [Located { setting: Setting::Forks, values: vec!["5".into()], line: 1 }]);
    let w: Vec<String> = f.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("benchrig.toml:2:1: unknown key `lease_trem`, ignored"), "{}", w[0]);
    assert!(w[0].contains("lease_term"), "suggests the near miss: {}", w[0]);
    // An Ansible habit: a [defaults] table.
    let f = parsed("[defaults]\nforks = 5\n").unwrap();
    assert!(f.values.is_empty());
    assert!(f.warnings[0].to_string().contains("take them out of the [defaults] table"), "{}", f.warnings[0]);
}

#[test]
fn a_bad_value_is_an_error_at_its_line_checked_by_the_flag_s_parser() {
    let err = |text: &str| parsed(text).unwrap_err().to_string();
    let e = err("forks = 4\nlease_term = \"soon\"\n");
    assert!(e.starts_with("benchrig.toml:2:14: invalid value 'soon'"), "{e}");
    let e = err("report_format = \"pdf\"\n");
    assert!(e.starts_with("benchrig.toml:1:17: invalid value 'pdf'") && e.contains("html"), "names the choices: {e}");
    let e = err("\n\nforks = \"many\"\n");
    assert!(e.starts_with("benchrig.toml:3:9: `forks` is a whole number"), "{e}");
    let e = err("db = \"mysql://h/x\"\n");
    assert!(e.starts_with("benchrig.toml:1:6: invalid value") && e.contains("postgres://"), "{e}");
    let e = err("db = \"postgres://bench:s3cret@h/lab\"\n");
    assert!(e.contains("a password in the config file") && e.contains("pgpass"), "{e}");
    assert!(!e.contains("s3cret") || e.contains("s3cret@h/lab\"\n"), "quotes only the line: {e}");
    let e = err("forks = [1\n");
    assert!(e.starts_with("benchrig.toml:1:"), "a TOML syntax error is located too: {e}");
    let e = err("inventory = [\"a.yml\", 3]\n");
    assert!(e.contains("`inventory` is a path or a list of paths"), "{e}");
}

#[test]
fn paths_in_a_file_are_the_file_s_and_urls_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchrig.toml");
    std::fs::write(&path, "inventory = [\"lab.yml\", \"/abs/b.yml\"]\ndb = \"r.db\"\n").unwrap();
    let f = load(Some(&path), &[], &root()).unwrap();
    assert_eq!(
        f.get(Setting::Inventory).unwrap().values,
        [dir.path().join("lab.yml").display().to_string(), "/abs/b.yml".into()]
    );
    assert_eq!(f.get(Setting::Db).unwrap().values, [dir.path().join("r.db").display().to_string()]);
    std::fs::write(&path, "db = \"postgres://b@h/lab\"\n").unwrap();
    assert_eq!(load(Some(&path), &[], &root()).unwrap().get(Setting::Db).unwrap().values, ["postgres://b@h/lab"]);
}

#[test]
fn the_first_file_found_wins_and_a_named_one_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let (cwd, home) = (dir.path().join("cwd"), dir.path().join("home"));
    let c = candidates(&cwd, Some(&home), None);
    assert_eq!(
        c,
        [cwd.join("benchrig.toml"), home.join(".config/benchrig/config.toml"), "/etc/benchrig/config.toml".into()]
    );
    let xdg = dir.path().join("xdg");
    assert_eq!(candidates(&cwd, Some(&home), Some(&xdg))[1], xdg.join("benchrig/config.toml"));
    assert_eq!(candidates(&cwd, Some(&home), Some(Path::new("rel")))[1], home.join(".config/benchrig/config.toml"));
    let only = |forks: &str, p: &Path| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("forks = {forks}\n")).unwrap();
    };
    only("2", &c[1]);
    let picked = |c: &[PathBuf]| load(None, c, &root()).unwrap().get(Setting::Forks).map(|v| v.values[0].clone());
    assert_eq!(picked(&c[..2]).as_deref(), Some("2"));
    only("1", &c[0]);
    assert_eq!(picked(&c[..2]).as_deref(), Some("1"));
    let missing = dir.path().join("nope.toml");
    let e = load(Some(&missing), &c, &root()).unwrap_err().to_string();
    assert!(e.contains("nope.toml") && e.contains("cannot read config file"), "{e}");
    // --config on the command line, before `--`, wins over the variable.
    let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
    assert_eq!(named(&args(&["benchrig", "runs", "--config", "a.toml"]), Some("b.toml".into())), Some("a.toml".into()));
    assert_eq!(named(&args(&["benchrig", "--config=a.toml", "runs"]), None), Some("a.toml".into()));
    assert_eq!(
        named(&args(&["benchrig", "runs", "--", "--config", "a"]), Some("b.toml".into())),
        Some("b.toml".into())
    );
    assert_eq!(named(&args(&["benchrig", "runs"]), Some("".into())), None);
}
