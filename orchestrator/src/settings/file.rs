//! Finding and reading the config file: `--config FILE` or
//! `BENCHRIG_CONFIG`, else the first of `benchrig.toml` (working directory),
//! `$XDG_CONFIG_HOME/benchrig/config.toml` (`~/.config/…`),
//! `/etc/benchrig/config.toml`. TOML, top-level keys only. An unknown key is
//! a located warning with a did-you-mean; a bad value is an error with
//! file:line:column, checked by the flag's own value parser.

use super::Setting;
use crate::diagnostic::{did_you_mean, ConfigError, Loc, SourceFile};
use clap::Command;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::de::{DeTable, DeValue};

/// The config file read, if any: each setting it holds, with where.
#[derive(Debug, Default)]
pub struct ConfigFile {
    pub path: Option<PathBuf>,
    /// Where it was looked for when none was named.
    pub looked_in: Vec<PathBuf>,
    pub values: Vec<Located>,
    /// Unknown keys: reported, not fatal (a newer benchrig's key in a shared file).
    pub warnings: Vec<ConfigError>,
}

/// One setting's value(s) as the flag would take them, and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub setting: Setting,
    pub values: Vec<String>,
    pub line: u32,
}

impl ConfigFile {
    pub fn get(&self, setting: Setting) -> Option<&Located> {
        self.values.iter().find(|v| v.setting == setting)
    }
}

/// Where a config file is looked for, in order, when none is named.
pub fn candidates(cwd: &Path, home: Option<&Path>, xdg_config_home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![cwd.join("benchrig.toml")];
    // XDG: an empty or relative XDG_CONFIG_HOME is ignored.
    match (xdg_config_home.filter(|p| p.is_absolute()), home) {
        (Some(xdg), _) => out.push(xdg.join("benchrig/config.toml")),
        (None, Some(home)) => out.push(home.join(".config/benchrig/config.toml")),
        (None, None) => {}
    }
    out.push(PathBuf::from("/etc/benchrig/config.toml"));
    out
}

/// The file `--config` names on this command line (before any `--`), else
/// `BENCHRIG_CONFIG`. Read before clap parses, since the file's values
/// become clap's defaults; clap still defines and checks `--config`.
pub fn named(args: &[OsString], env: Option<OsString>) -> Option<PathBuf> {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if a == "--config" {
            return it.next().map(PathBuf::from);
        }
        if let Some(v) = a.to_str().and_then(|s| s.strip_prefix("--config=")) {
            return Some(PathBuf::from(v));
        }
    }
    env.filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Read the named file (which must exist) or the first candidate that
/// exists; none is no error. `root` is the command line's definition: each
/// value is checked by its flag's parser.
pub fn load(named: Option<&Path>, candidates: &[PathBuf], root: &Command) -> Result<ConfigFile, ConfigError> {
    let path = match named {
        Some(p) => p.to_path_buf(),
        None => match candidates.iter().find(|p| p.is_file()) {
            Some(p) => p.clone(),
            None => return Ok(ConfigFile { looked_in: candidates.to_vec(), ..ConfigFile::default() }),
        },
    };
    let name = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ConfigError::file(&name, format!("cannot read config file: {e}")))?;
    let mut file = parse(&name, &text, root)?;
    // Paths in the file are the file's, as Ansible reads ansible.cfg's.
    let dir = path.parent().unwrap_or(Path::new("."));
    for v in &mut file.values {
        if v.setting.is_path() {
            for value in &mut v.values {
                let is_url = value.starts_with("postgres://") || value.starts_with("postgresql://");
                if v.setting == Setting::Inventory {
                    // Its files, not a list of hosts (`inventory = "web1,web2,"`).
                    *value = crate::inventory::anchored(Path::new(value.as_str()), dir).display().to_string();
                } else if !is_url && Path::new(value.as_str()).is_relative() {
                    *value = dir.join(&*value).display().to_string();
                }
            }
        }
    }
    file.path = Some(path);
    Ok(file)
}

/// Parse a config file's text (`name` for messages).
pub fn parse(name: &str, text: &str, root: &Command) -> Result<ConfigFile, ConfigError> {
    let src = Arc::new(SourceFile { name: name.into(), text: text.into() });
    let at = |offset: usize| locate(&src, offset);
    let table = DeTable::parse(text).map_err(|e| match e.span() {
        Some(span) => ConfigError::at(&at(span.start), format!("not TOML: {}", e.message())),
        None => ConfigError::file(name, format!("not TOML: {}", e.message())),
    })?;
    let keys: Vec<&str> = Setting::all().map(Setting::key).collect();
    let mut file = ConfigFile::default();
    for (key, value) in table.get_ref() {
        let loc = at(key.span().start);
        let Some(setting) = Setting::from_key(key.get_ref()) else {
            let mut warning = ConfigError::at(&loc, format!("unknown key `{}`, ignored", key.get_ref()));
            warning = match value.get_ref() {
                DeValue::Table(_) => warning.with_hint(format!(
                    "benchrig's keys are top-level ({}): take them out of the [{}] table",
                    keys.join(", "),
                    key.get_ref()
                )),
                _ => warning.with_hint(did_you_mean(key.get_ref(), &keys)),
            };
            file.warnings.push(warning);
            continue;
        };
        let values = strings(setting, value.get_ref()).ok_or_else(|| {
            ConfigError::at(&at(value.span().start), format!("`{}` {}", setting.key(), expected(setting)))
        })?;
        for v in &values {
            check(setting, v, root).map_err(|why| ConfigError::at(&at(value.span().start), why))?;
        }
        file.values.push(Located { setting, values, line: loc.line });
    }
    Ok(file)
}

fn locate(src: &Arc<SourceFile>, offset: usize) -> Loc {
    let before = &src.text[..offset.min(src.text.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    Loc { src: src.clone(), line, col }
}

/// A value as the flag's words, if it has the type the setting takes.
fn strings(setting: Setting, value: &DeValue) -> Option<Vec<String>> {
    match (setting, value) {
        (Setting::Forks, DeValue::Integer(i)) if i.radix() == 10 => Some(vec![i.as_str().replace('_', "")]),
        (Setting::Forks, _) => None,
        (Setting::Inventory, DeValue::Array(items)) => {
            items.iter().map(|v| v.get_ref().as_str().map(str::to_string)).collect()
        }
        (_, DeValue::String(s)) => Some(vec![s.to_string()]),
        _ => None,
    }
}

fn expected(setting: Setting) -> &'static str {
    match setting {
        Setting::Forks => "is a whole number (forks = 20)",
        Setting::Inventory => "is a path or a list of paths (inventory = [\"lab.yml\", \"group_vars_dir\"])",
        Setting::LeaseTerm => "is a duration in a string (lease_term = \"5m\")",
        _ => "is a string",
    }
}

/// Check a value with the flag's own value parser, so the file accepts
/// exactly what the command line does.
fn check(setting: Setting, value: &str, root: &Command) -> Result<(), String> {
    if setting == Setting::Db && crate::store::redacted_url(value) != value {
        return Err("a password in the config file: leave it out of the URL and give it in PGPASSWORD or \
                    ~/.pgpass (as libpq reads them), or the whole URL in BENCHRIG_DB"
            .into());
    }
    let Some((_, arg)) = super::flags(root, setting).into_iter().next() else {
        return Ok(());
    };
    // The flag alone in a command of its own: clap's ValueParser::parse_ref
    // is not public, and this checks delimiters and possible values too.
    let flag = format!("--{}={value}", arg.get_long().unwrap_or_default());
    let probe = Command::new(root.get_name().to_string()).arg(arg.env(None::<&str>));
    probe.try_get_matches_from([root.get_name(), flag.as_str()]).map(drop).map_err(|e| {
        // clap's message, as the flag would get it, without its "error: "
        // and its pointer to --help.
        let text = e.render().to_string();
        let lines: Vec<&str> =
            text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("For more information")).collect();
        let joined = lines.join(" ");
        joined.strip_prefix("error: ").unwrap_or(&joined).to_string()
    })
}
