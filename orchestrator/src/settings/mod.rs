//! The defaults users repeat on every command (inventory, database, forks,
//! lease term, report format, colour), from a config file and environment
//! variables, as Ansible users expect of `ansible.cfg` and `ANSIBLE_*`.
//!
//! Precedence, highest first: a flag, its environment variable (clap's own
//! `env`, declared in `cli.rs` beside each flag), the config file (which
//! becomes the flag's default, [`apply`]), the built-in default. One table,
//! [`Setting`], names each setting's key, variable and flag; a test holds
//! the table and `cli.rs` to each other.

mod file;

pub use file::{candidates, load, named, ConfigFile, Located};

use clap::{Arg, Command};
use std::path::PathBuf;

/// A setting the config file may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumIter)]
pub enum Setting {
    Inventory,
    Db,
    Forks,
    LeaseTerm,
    ReportFormat,
    Color,
}

impl Setting {
    /// Its key in the config file.
    pub fn key(self) -> &'static str {
        match self {
            Setting::Inventory => "inventory",
            Setting::Db => "db",
            Setting::Forks => "forks",
            Setting::LeaseTerm => "lease_term",
            Setting::ReportFormat => "report_format",
            Setting::Color => "color",
        }
    }

    /// The environment variable that overrides the file (and that the flag
    /// declares as its `env`).
    pub fn env(self) -> &'static str {
        match self {
            Setting::Inventory => "BENCHRIG_INVENTORY",
            Setting::Db => "BENCHRIG_DB",
            Setting::Forks => "BENCHRIG_FORKS",
            Setting::LeaseTerm => "BENCHRIG_LEASE_TERM",
            Setting::ReportFormat => "BENCHRIG_REPORT_FORMAT",
            Setting::Color => "BENCHRIG_COLOR",
        }
    }

    /// The flag's clap id, and the one command it belongs to when other
    /// commands have a flag of that id that means something else
    /// (`compare --format` is not the report's format).
    fn arg(self) -> (&'static str, Option<&'static str>) {
        match self {
            Setting::Inventory => ("inventory", None),
            Setting::Db => ("db", None),
            Setting::Forks => ("forks", None),
            Setting::LeaseTerm => ("lease_term", None),
            Setting::ReportFormat => ("format", Some("report")),
            Setting::Color => ("color", None),
        }
    }

    /// Whether a value is a path, read relative to the config file's
    /// directory, as Ansible reads `inventory` in ansible.cfg.
    fn is_path(self) -> bool {
        matches!(self, Setting::Inventory | Setting::Db)
    }

    pub fn all() -> impl Iterator<Item = Setting> {
        <Setting as strum::IntoEnumIterator>::iter()
    }

    pub fn from_key(key: &str) -> Option<Setting> {
        Setting::all().find(|s| s.key() == key)
    }

    /// Whether `arg` of the command named `command` is this setting's flag.
    fn is_flag(self, command: &str, arg: &Arg) -> bool {
        let (id, only_in) = self.arg();
        arg.get_id() == id && only_in.is_none_or(|c| c == command)
    }
}

/// Each setting's flag in `root`'s commands: (command name, the flag).
/// The same walk [`apply`] makes; `benchrig config` reads built-in
/// defaults and help from it.
pub fn flags(root: &Command, setting: Setting) -> Vec<(String, Arg)> {
    fn walk(cmd: &Command, setting: Setting, out: &mut Vec<(String, Arg)>) {
        for arg in cmd.get_arguments() {
            if setting.is_flag(cmd.get_name(), arg) {
                out.push((cmd.get_name().to_string(), arg.clone()));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, setting, out);
        }
    }
    let mut out = Vec::new();
    walk(root, setting, &mut out);
    out
}

/// `root` with the config file's values as the defaults of their flags, in
/// every command that has them (clap then lets the environment and the
/// command line override them).
pub fn apply(root: Command, file: &ConfigFile) -> Command {
    fn walk(cmd: Command, file: &ConfigFile) -> Command {
        let name = cmd.get_name().to_string();
        cmd.mut_args(|arg| match file.values.iter().find(|v| v.setting.is_flag(&name, &arg)) {
            Some(v) => arg.default_values(v.values.clone()),
            None => arg,
        })
        .mut_subcommands(|sub| walk(sub, file))
    }
    walk(root, file)
}

/// Where a setting's value in effect came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The flag's built-in default.
    Default,
    /// The config file, at this line.
    File(PathBuf, u32),
    /// This environment variable.
    Env(&'static str),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(path, line) => write!(f, "{}:{line}", path.display()),
            Source::Env(var) => write!(f, "env {var}"),
        }
    }
}

/// A setting's value in effect for a command given no flag for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effective {
    pub setting: Setting,
    /// Empty: none (the inventory's default is this machine).
    pub values: Vec<String>,
    pub source: Source,
}

/// Every setting's value in effect and its source, given the config file
/// and the environment (`env`), in the order clap applies them.
pub fn effective(root: &Command, file: &ConfigFile, env: impl Fn(&str) -> Option<String>) -> Vec<Effective> {
    Setting::all()
        .map(|setting| {
            if let Some(v) = env(setting.env()).filter(|v| !v.is_empty()) {
                // Whole, as clap takes it: `a.yml,b.yml` (files) or
                // `web1,web2,` (hosts) is the inventory's to read.
                return Effective { setting, values: vec![v], source: Source::Env(setting.env()) };
            }
            if let (Some(v), Some(path)) = (file.get(setting), &file.path) {
                return Effective { setting, values: v.values.clone(), source: Source::File(path.clone(), v.line) };
            }
            let values = flags(root, setting)
                .first()
                .map(|(_, arg)| arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            Effective { setting, values, source: Source::Default }
        })
        .collect()
}

#[cfg(test)]
mod tests;
