//! `benchrig completions SHELL` and `benchrig man`: generated from the same
//! clap definition that parses the command line, so they cannot drift
//! from it (clap_complete, clap_mangen). A release ships their output.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::exit_code;
use clap::CommandFactory;
use std::io::Write;

pub fn completions(args: CompletionsArgs) -> anyhow::Result<i32> {
    let mut text = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "benchrig", &mut text);
    std::io::stdout().write_all(&text)?;
    Ok(exit_code::OK)
}

pub fn man(args: ManArgs) -> anyhow::Result<i32> {
    let cmd = Cli::command();
    match args.dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut page)?;
            std::io::stdout().write_all(&page)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            clap_mangen::generate_to(cmd, &dir)?;
            let mut pages: Vec<String> = std::fs::read_dir(&dir)?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".1"))
                .collect();
            pages.sort();
            outln!("{}: {}", dir.display(), pages.join(" "))?;
        }
    }
    Ok(exit_code::OK)
}
