//! The command line, as in the product brief: Ansible's flags where Ansible has them.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "benchrig",
    version,
    about = "Storage and filesystem experiments across a lab of Linux hosts",
    after_help = crate::exit_code::HELP
)]
pub struct Cli {
    /// More log output (-v info from every host, -vv debug, -vvv trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors and the final table.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a playbook: push the agent, run every cell, store every sample.
    Run(RunArgs),
    /// The expanded matrix per host, without touching any host.
    Plan(PlanArgs),
    /// Push the agent and print each host's facts.
    Facts(FactsArgs),
    /// The resolved inventory, as `ansible-inventory` prints it.
    Inventory(InventoryArgs),
    /// List stored runs (oldest first; the id is the first column).
    Runs(DbArgs),
    /// One run's summary table.
    Show(ShowArgs),
    /// A run's report in a machine- or human-readable format.
    Report(ReportArgs),
    /// Write a run with everything stored about it as JSON (for `import` elsewhere).
    Export(ExportArgs),
    /// Add an exported run to this database (under a new id).
    Import(ImportArgs),
    /// Compare two runs metric by metric: improved, regressed, unchanged, not comparable.
    Compare(CompareArgs),
    /// Unmount, detach and remove what benchrig left on hosts.
    Cleanup(HostsArgs),
    /// Agent round-trip times per host (and deploy + facts time).
    Ping(PingArgs),
}

#[derive(Args, Debug, Clone)]
pub struct HostsArgs {
    /// Inventory file or directory (YAML or INI, as Ansible's). Repeatable. Without it: this machine.
    #[arg(short = 'i', long = "inventory")]
    pub inventory: Vec<PathBuf>,
    /// Limit to hosts matching this pattern (as ansible's --limit).
    #[arg(short = 'l', long = "limit")]
    pub limit: Option<String>,
    /// How many hosts to work on at once.
    #[arg(short = 'f', long = "forks", default_value_t = 50)]
    pub forks: usize,
    /// Results database: a SQLite file, or a postgres:// URL.
    #[arg(long, default_value = "benchrig.db", env = "BENCHRIG_DB")]
    pub db: PathBuf,
}

/// What `run` and `plan` share: a playbook, its hosts, extra variables.
#[derive(Args, Debug)]
pub struct PlaybookArgs {
    pub playbook: PathBuf,
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// Extra variables: key=value, a YAML/JSON mapping, or @file. Always win. Repeatable.
    #[arg(short = 'e', long = "extra-vars")]
    pub extra_vars: Vec<String>,
    /// Only steps (or plays) with these tags (comma-separated, repeatable; `all`, `tagged`, `untagged`).
    #[arg(short = 't', long = "tags")]
    pub tags: Vec<String>,
    /// Leave out steps with these tags (wins over --tags).
    #[arg(long = "skip-tags")]
    pub skip_tags: Vec<String>,
    /// Only list the hosts each play would run on.
    #[arg(long)]
    pub list_hosts: bool,
    /// Only list each play's steps (after --tags / --skip-tags) with their tags.
    #[arg(long)]
    pub list_tasks: bool,
    /// Only check the playbook, the inventory and the plan; touch no host.
    #[arg(long)]
    pub syntax_check: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub play: PlaybookArgs,
    /// A name for the run, usable wherever a run id is.
    #[arg(long)]
    pub name: Option<String>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub play: PlaybookArgs,
}

#[derive(Args, Debug)]
pub struct FactsArgs {
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// One JSON object, host name → facts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InventoryArgs {
    #[arg(short = 'i', long = "inventory")]
    pub inventory: Vec<PathBuf>,
    #[arg(long, group = "mode")]
    pub list: bool,
    #[arg(long, group = "mode")]
    pub graph: bool,
    #[arg(long, group = "mode", value_name = "HOST")]
    pub host: Option<String>,
    /// The hosts a pattern selects, in the order a play runs them (as `ansible PATTERN --list-hosts`).
    #[arg(long, group = "mode", value_name = "PATTERN")]
    pub list_hosts: Option<String>,
    /// Only hosts matching this pattern (as ansible-inventory's: `--list` and `--list-hosts`; `--host` and `--graph` ignore it).
    #[arg(short = 'l', long = "limit")]
    pub limit: Option<String>,
    /// The group `--graph` starts at (as ansible-inventory's pattern argument).
    #[arg(value_name = "GROUP", default_value = "all")]
    pub group: String,
}

#[derive(Args, Debug)]
pub struct DbArgs {
    /// Results database: a SQLite file, or a postgres:// URL.
    #[arg(long, default_value = "benchrig.db", env = "BENCHRIG_DB")]
    pub db: PathBuf,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id, run name, or `last`.
    pub run: String,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Json,
    /// Markdown tables per play, and warnings.
    Md,
    /// One self-contained page: tables, SVG charts with CI95, hosts, warnings.
    Html,
    /// One row per sample.
    Csv,
    /// A test case per cell: failed cells (and regressions, with --baseline) fail.
    Junit,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    pub run: String,
    #[arg(short = 'f', long = "format", value_enum, default_value = "json")]
    pub format: ReportFormat,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// For junit: a run to compare with; a cell with a regressed metric fails.
    #[arg(long)]
    pub baseline: Option<String>,
    /// With --baseline: ignore changes under this many percent.
    #[arg(long, default_value_t = 0.0)]
    pub threshold: f64,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct PingArgs {
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// Round trips per host.
    #[arg(short = 'n', long, default_value_t = 200)]
    pub count: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Table,
    /// A markdown table, for a pull request or a CI job summary.
    Md,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline run (id, name or `last`).
    pub base: String,
    /// The run to judge against it.
    pub new: String,
    /// Ignore changes smaller than this many percent of the baseline's mean.
    #[arg(long, default_value_t = 0.0)]
    pub threshold: f64,
    /// Significance level of the two-sided tests.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Exit with 3 when a metric regressed significantly beyond the threshold.
    #[arg(long)]
    pub fail_on_regression: bool,
    #[arg(short = 'f', long = "format", value_enum, default_value = "table")]
    pub format: CompareFormat,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Run id, run name, or `last`.
    pub run: String,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Files written by `benchrig export` (`-` for standard input).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}
