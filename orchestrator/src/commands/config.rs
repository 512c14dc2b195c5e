//! `benchrig config`: the settings in effect and where each came from, as
//! `ansible-config dump` prints them.

use crate::cli::{Cli, ConfigArgs};
use crate::exit_code;
use crate::settings::{self, ConfigFile, Source};
use clap::CommandFactory;

pub fn run(args: ConfigArgs, file: &ConfigFile) -> anyhow::Result<i32> {
    match &file.path {
        Some(p) => outln!("config file: {}", p.display())?,
        None => {
            let looked: Vec<String> = file.looked_in.iter().map(|p| p.display().to_string()).collect();
            outln!("config file: none (looked for {})", looked.join(", "))?
        }
    }
    let rows: Vec<[String; 3]> = settings::effective(&Cli::command(), file, |var| std::env::var(var).ok())
        .into_iter()
        .filter(|e| !args.only_changed || e.source != Source::Default)
        .map(|e| {
            let value = match e.setting {
                _ if e.values.is_empty() => "(none: this machine)".to_string(),
                // A URL's password stays out of the terminal's scrollback.
                settings::Setting::Db => crate::store::redacted_url(&e.values.join(",")),
                _ => e.values.join(","),
            };
            [e.setting.key().to_string(), value, e.source.to_string()]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (key_w, value_w) = (width(0).max(3), width(1).max(5));
    outln!("{:key_w$}  {:value_w$}  FROM", "KEY", "VALUE")?;
    for [key, value, from] in &rows {
        outln!("{key:key_w$}  {value:value_w$}  {from}")?;
    }
    Ok(exit_code::OK)
}
