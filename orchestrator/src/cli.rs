//! The command line, as in the product brief: Ansible's flags where Ansible
//! has them. Every argument has a line of help and every option a heading
//! (a test below holds both); `--db` is defined once (`DbArgs`) and parsed
//! into a `DbLocation`.

use crate::store::{redacted_url, DbLocation};
use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsStr;
use std::path::PathBuf;

/// `--lease-term`'s default, as `run` and `bisect` show it: the
/// duration `run::leases::DEFAULT_TERM` is (a test holds them equal).
pub const LEASE_TERM: &str = "2m";

// The headings `--help` groups options under.
const INVENTORY: &str = "Inventory";
const PLAYBOOK: &str = "Playbook";
const CHECK_ONLY: &str = "Check only";
const ACTIONS: &str = "Actions";
const EXECUTION: &str = "Execution";
const DATABASE: &str = "Database";
const COMPARISON: &str = "Comparison";
const SELECTION: &str = "Selection";
const OUTPUT: &str = "Output";
const ALERTS: &str = "Alerts";
const LOGGING: &str = "Logging";
const CONFIG: &str = "Configuration";
const CONNECTION: &str = "Connection";
const BISECT: &str = "Bisect";

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// When standard error is a terminal and NO_COLOR is not set.
    Auto,
    Always,
    Never,
}

#[derive(Parser, Debug)]
#[command(
    name = "benchrig",
    version = benchrig_wire::VERSION,
    about = "Storage and filesystem experiments across a lab of Linux hosts",
    after_help = crate::exit_code::HELP
)]
pub struct Cli {
    /// More log output (-v info from every host, -vv debug, -vvv trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true, help_heading = LOGGING)]
    pub verbose: u8,
    /// Only errors and the final table.
    #[arg(short, long, global = true, help_heading = LOGGING)]
    pub quiet: bool,
    /// Colour in log lines: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(long, value_enum, default_value = "auto", env = "BENCHRIG_COLOR", global = true, help_heading = LOGGING)]
    pub color: ColorChoice,
    /// Read defaults from this config file instead of the first of ./benchrig.toml, ~/.config/benchrig/config.toml, /etc/benchrig/config.toml.
    #[arg(long, value_name = "FILE", env = "BENCHRIG_CONFIG", global = true, help_heading = CONFIG)]
    pub config: Option<PathBuf>,
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
    Runs(RunsArgs),
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
    /// Each metric across the runs of a playbook: which run a change arrived with, how much, what else changed.
    History(HistoryArgs),
    /// Which revision made a metric worse: build and measure revisions between a good and a bad one, decided by statistics.
    Bisect(BisectArgs),
    /// Delete old runs' samples, monitor series and artifacts, keeping each run's summaries for history.
    Prune(PruneArgs),
    /// Mark a run as a baseline (`prune` keeps it whole), or unmark it.
    Mark(MarkArgs),
    /// The results as a static site: an index of nights, each run's report and comparison, each playbook's history.
    Site(SiteArgs),
    /// Unmount, detach and remove what benchrig left on hosts; boot a host a killed run left on a kernel under test back to its own.
    Cleanup(HostsArgs),
    /// Agent round-trip times per host (and deploy + facts time).
    Ping(PingArgs),
    /// The lab's hosts in the database: who holds which since when; release or quarantine one.
    Lab(LabArgs),
    /// Shell completion for bash, zsh, fish, elvish or PowerShell, on stdout (`benchrig completions bash > ~/.local/share/bash-completion/completions/benchrig`).
    Completions(CompletionsArgs),
    /// Man pages: benchrig(1) on stdout, or one page per command into --dir.
    Man(ManArgs),
    /// The settings in effect (inventory, database, forks, …) and where each came from: flag default, config file, environment.
    Config(ConfigArgs),
    /// A JSON Schema on stdout, for editors (`benchrig schema playbook > benchrig-playbook.schema.json`).
    Schema(SchemaArgs),
    /// Every action and workload (arguments, metrics) and every playbook key, as `ansible-doc` (`benchrig doc seq_read`).
    Doc(DocArgs),
}

#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// Which format's schema.
    #[arg(value_enum)]
    pub what: SchemaKind,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum SchemaKind {
    /// The playbook format (draft 2020-12), from the tables the parser reads.
    Playbook,
}

#[derive(Args, Debug)]
pub struct DocArgs {
    /// An action or workload (`seq_read`), or `play` for every playbook key; without it, a line for each.
    pub name: Option<String>,
    /// How to print it: `md` without NAME is the whole reference, as docs/reference.md holds it.
    #[arg(long, value_enum, default_value = "text", help_heading = OUTPUT)]
    pub format: DocFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocFormat {
    /// For the terminal.
    Text,
    /// Markdown.
    Md,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// Only the settings a config file or the environment changed (as `ansible-config dump --only-changed`).
    #[arg(long, help_heading = OUTPUT)]
    pub only_changed: bool,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write benchrig.1 and a page per command (benchrig-run.1, …) into this directory instead.
    #[arg(long, value_name = "DIR", help_heading = OUTPUT)]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    pub action: Option<LabAction>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Subcommand, Debug)]
pub enum LabAction {
    /// Every host a run holds or that is quarantined (the default).
    List,
    /// Let go of a host's lease by hand (its run is gone and you will not wait for the lease to lapse).
    Release {
        /// The inventory hostname.
        host: String,
    },
    /// Set a host aside: no run takes it (each leaves it out, saying why) until `unquarantine`.
    Quarantine {
        /// The inventory hostname.
        host: String,
        /// Why, shown to every run that leaves it out.
        #[arg(long, help_heading = ACTIONS)]
        reason: String,
    },
    /// Take a quarantined host back into the lab.
    Unquarantine {
        /// The inventory hostname.
        host: String,
    },
}

#[derive(Args, Debug, Clone)]
pub struct HostsArgs {
    /// Inventory file or directory (YAML or INI, as Ansible's), or a list of hosts (`web1,web2:2222,`, as Ansible's host_list). Repeatable; files may be comma-separated. Without it: this machine.
    #[arg(short = 'i', long = "inventory", env = "BENCHRIG_INVENTORY", help_heading = INVENTORY)]
    pub inventory: Vec<PathBuf>,
    /// Limit to hosts matching this pattern (as ansible's --limit).
    #[arg(short = 'l', long = "limit", help_heading = INVENTORY)]
    pub limit: Option<String>,
    /// How many hosts to work on at once.
    #[arg(short = 'f', long = "forks", default_value_t = 50, env = "BENCHRIG_FORKS", help_heading = EXECUTION)]
    pub forks: usize,
    /// Ask for the password sudo wants on hosts that become (as ansible-playbook's): at the terminal, or one line on stdin. A host's ansible_become_password wins.
    #[arg(short = 'K', long = "ask-become-pass", help_heading = CONNECTION)]
    pub ask_become_pass: bool,
    /// Log in as this user where the inventory names none (as ansible's -u; a host's ansible_user wins).
    #[arg(short = 'u', long = "user", value_name = "REMOTE_USER", help_heading = CONNECTION)]
    pub user: Option<String>,
    /// Log in with this key where the inventory names none (as ansible's --private-key; ansible_ssh_private_key_file wins).
    #[arg(long = "private-key", visible_alias = "key-file", value_name = "FILE", help_heading = CONNECTION)]
    pub private_key: Option<PathBuf>,
    /// Run the agent as root through sudo on every host (as ansible's -b; a host's ansible_become wins, a play's become_user too).
    #[arg(short = 'b', long = "become", help_heading = CONNECTION)]
    pub r#become: bool,
    /// With --become: this user instead of root.
    #[arg(long = "become-user", value_name = "USER", help_heading = CONNECTION)]
    pub become_user: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// What `run` and `plan` share: its hosts, extra variables, tags (the
/// playbook itself is each one's positional argument: `run --resume`
/// needs none).
#[derive(Args, Debug)]
pub struct PlaybookArgs {
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// Extra variables: key=value, a YAML/JSON mapping, or @file. Always win. Repeatable.
    #[arg(short = 'e', long = "extra-vars", help_heading = PLAYBOOK)]
    pub extra_vars: Vec<String>,
    /// Only steps (or plays) with these tags (comma-separated, repeatable; `all`, `tagged`, `untagged`).
    #[arg(short = 't', long = "tags", help_heading = PLAYBOOK)]
    pub tags: Vec<String>,
    /// Leave out steps with these tags (wins over --tags).
    #[arg(long = "skip-tags", help_heading = PLAYBOOK)]
    pub skip_tags: Vec<String>,
    /// Only list the hosts each play would run on.
    #[arg(long, help_heading = CHECK_ONLY)]
    pub list_hosts: bool,
    /// Only list each play's steps (after --tags / --skip-tags) with their tags.
    #[arg(long, help_heading = CHECK_ONLY)]
    pub list_tasks: bool,
    /// Only list each play's tags and its steps' (as ansible-playbook's --list-tags).
    #[arg(long, help_heading = CHECK_ONLY)]
    pub list_tags: bool,
    /// Only check the playbook, the inventory and the plan; touch no host.
    #[arg(long, help_heading = CHECK_ONLY)]
    pub syntax_check: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The playbook: plays with their matrix and steps (YAML).
    #[arg(required_unless_present = "resume")]
    pub playbook: Option<PathBuf>,
    #[command(flatten)]
    pub play: PlaybookArgs,
    /// A name for the run, usable wherever a run id is.
    #[arg(long, help_heading = DATABASE)]
    pub name: Option<String>,
    /// Complete RUN (id, name or `last`) in place: only what it lacks, planned from the playbook, extra vars, limit and tags stored with it.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["playbook", "name", "extra_vars", "limit", "tags", "skip_tags", "list_hosts", "list_tasks", "list_tags", "syntax_check"], help_heading = EXECUTION)]
    pub resume: Option<String>,
    /// Touch no host: print the plan as `benchrig plan` does (ansible-playbook's --check, without connecting).
    #[arg(long, conflicts_with = "resume", help_heading = CHECK_ONLY)]
    pub check: bool,
    /// With --resume: also run again the cells that failed on a step of their own.
    #[arg(long, requires = "resume", conflicts_with = "playbook", help_heading = EXECUTION)]
    pub retry_failed: bool,
    /// Wait this long (30s, 10m, 2h) for hosts another run holds, instead of exiting at once (exit code 5).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = humantime::parse_duration, help_heading = EXECUTION)]
    pub wait_for_hosts: std::time::Duration,
    /// How long the run's hold on a host lasts without a heartbeat: how long a killed benchrig keeps its hosts from others.
    #[arg(long, value_name = "DURATION", default_value = LEASE_TERM, env = "BENCHRIG_LEASE_TERM", value_parser = humantime::parse_duration, help_heading = EXECUTION)]
    pub lease_term: std::time::Duration,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The playbook: plays with their matrix and steps (YAML).
    pub playbook: PathBuf,
    #[command(flatten)]
    pub play: PlaybookArgs,
}

#[derive(Args, Debug)]
pub struct FactsArgs {
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// One JSON object, host name → facts.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InventoryArgs {
    /// Inventory file or directory (YAML or INI, as Ansible's), or a list of hosts (`web1,web2:2222,`, as Ansible's host_list). Repeatable; files may be comma-separated. Without it: this machine.
    #[arg(short = 'i', long = "inventory", env = "BENCHRIG_INVENTORY", help_heading = INVENTORY)]
    pub inventory: Vec<PathBuf>,
    /// Every group and host with its variables, as JSON (as `ansible-inventory --list`; the default).
    #[arg(long, group = "mode", help_heading = ACTIONS)]
    pub list: bool,
    /// The groups from GROUP down with their hosts, as a tree (as `ansible-inventory --graph`).
    #[arg(long, group = "mode", help_heading = ACTIONS)]
    pub graph: bool,
    /// One host's variables, as JSON (as `ansible-inventory --host`).
    #[arg(long, group = "mode", value_name = "HOST", help_heading = ACTIONS)]
    pub host: Option<String>,
    /// The hosts a pattern selects, in the order a play runs them (as `ansible PATTERN --list-hosts`).
    #[arg(long, group = "mode", value_name = "PATTERN", help_heading = ACTIONS)]
    pub list_hosts: Option<String>,
    /// Only hosts matching this pattern (as ansible-inventory's: `--list` and `--list-hosts`; `--host` and `--graph` ignore it).
    #[arg(short = 'l', long = "limit", help_heading = INVENTORY)]
    pub limit: Option<String>,
    /// The group `--graph` starts at (as ansible-inventory's pattern argument).
    #[arg(value_name = "GROUP", default_value = "all")]
    pub group: String,
}

/// The one definition of `--db`, flattened into every command that stores or reads runs.
#[derive(Args, Debug, Clone)]
pub struct DbArgs {
    /// Results database: a SQLite file, or a postgres:// (postgresql://) URL.
    // Global: `benchrig lab release HOST --db …` reads as naturally as `lab --db …`.
    #[arg(long, global = true, default_value = "benchrig.db", env = "BENCHRIG_DB", value_parser = DbLocationParser, help_heading = DATABASE)]
    pub db: DbLocation,
}

/// `--db`'s value: a SQLite path or a PostgreSQL URL (`DbLocation::parse`).
/// A refused value is quoted with its password redacted, which clap's own
/// `try_map` errors would not do.
#[derive(Clone)]
struct DbLocationParser;

impl TypedValueParser for DbLocationParser {
    type Value = DbLocation;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<DbLocation, clap::Error> {
        let refuse = |e: String| {
            // clap builds its "invalid value" error only inside a parser: let
            // one fail on the redacted value, so the message keeps clap's form.
            let shown = redacted_url(&value.to_string_lossy());
            let failing = clap::builder::StringValueParser::new().try_map(move |_| Err::<DbLocation, _>(e.clone()));
            match failing.parse_ref(cmd, arg, OsStr::new(&shown)) {
                Err(e) => e,
                Ok(_) => unreachable!("the parser always fails"),
            }
        };
        let db = DbLocation::parse(value).map_err(|e| refuse(e.to_string()))?;
        // A password on the command line is in every local user's `ps`; in
        // BENCHRIG_DB it is readable by this user alone (/proc/PID/environ).
        let from_env = std::env::var_os("BENCHRIG_DB").is_some_and(|v| v == value);
        if let (DbLocation::Postgres(url), false) = (&db, from_env) {
            if redacted_url(url) != *url {
                return Err(refuse(
                    "a password in --db is shown to every user of this machine by `ps`; leave it out of the URL \
                     and give it in PGPASSWORD, ~/.pgpass (as libpq reads them) or the whole URL in BENCHRIG_DB"
                        .into(),
                ));
            }
        }
        Ok(db)
    }
}

#[derive(Args, Debug)]
pub struct RunsArgs {
    /// Only runs of this playbook (its path as the run stored it, or its file name).
    #[arg(long, help_heading = SELECTION)]
    pub playbook: Option<String>,
    /// Only runs whose name matches this glob (`nightly-*`).
    #[arg(long, value_name = "GLOB", help_heading = SELECTION)]
    pub name: Option<String>,
    /// Only runs in this state.
    #[arg(long, value_parser = run_status(), help_heading = SELECTION)]
    pub status: Option<crate::status::RunStatus>,
    /// Only runs started at or after this time (RFC 3339, or a date: 2026-11-01).
    #[arg(long, value_name = "TIME", help_heading = SELECTION)]
    pub from: Option<String>,
    /// Only runs started before this time.
    #[arg(long, value_name = "TIME", help_heading = SELECTION)]
    pub to: Option<String>,
    /// At most this many runs, the newest.
    #[arg(long, value_name = "N", help_heading = SELECTION)]
    pub last: Option<usize>,
    /// A JSON array of the runs (id, name, playbook, started, finished, status, hosts, cells) instead of the table.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--status`: one of the stored words, listed in `--help`.
fn run_status() -> impl TypedValueParser<Value = crate::status::RunStatus> {
    use strum::VariantNames;
    clap::builder::PossibleValuesParser::new(crate::status::RunStatus::VARIANTS)
        .map(|s| s.parse().expect("a possible value is a status"))
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
    /// The report model: hosts with facts, cells with every sample and their summaries.
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
    /// Run id, run name, or `last`.
    pub run: String,
    /// The report's format.
    #[arg(long = "format", value_enum, default_value = "json", env = "BENCHRIG_REPORT_FORMAT", help_heading = OUTPUT)]
    pub format: ReportFormat,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output", help_heading = OUTPUT)]
    pub output: Option<PathBuf>,
    /// For junit: a run to compare with (`auto`: the newest earlier ok run of the same playbook on the same hosts); a cell with a regressed metric fails.
    #[arg(long, help_heading = COMPARISON)]
    pub baseline: Option<String>,
    /// With --baseline: ignore changes under this many percent.
    #[arg(long, default_value_t = 0.0, help_heading = COMPARISON)]
    pub threshold: f64,
    /// With --baseline: significance level of the two-sided tests.
    #[arg(long, default_value_t = 0.05, help_heading = COMPARISON)]
    pub alpha: f64,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct PingArgs {
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// Round trips per host.
    #[arg(short = 'n', long, default_value_t = 200, help_heading = EXECUTION)]
    pub count: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// An aligned table for the terminal.
    Table,
    /// A markdown table, for a pull request or a CI job summary.
    Md,
    /// Every row with its figures, for scripts.
    Json,
    /// One self-contained page: per step and metric a chart of every run's mean with CI95, then the verdicts.
    Html,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// BASE NEW (ids, names or `last`); NEW alone compares it with its automatic baseline: the newest earlier ok run of the same playbook on the same hosts; BASE and several more: each compared with BASE, in one table across the runs (as mmtests' compare-kernels).
    #[arg(required = true, num_args = 1.., value_name = "RUN")]
    pub runs: Vec<String>,
    /// Ignore changes smaller than this many percent of the baseline's mean.
    #[arg(long, default_value_t = 0.0, help_heading = COMPARISON)]
    pub threshold: f64,
    /// Significance level of the two-sided tests.
    #[arg(long, default_value_t = 0.05, help_heading = COMPARISON)]
    pub alpha: f64,
    /// Exit with 3 when a metric regressed significantly beyond the threshold.
    #[arg(long, help_heading = COMPARISON)]
    pub fail_on_regression: bool,
    /// How to print the comparison.
    #[arg(long = "format", value_enum, default_value = "table", help_heading = OUTPUT)]
    pub format: CompareFormat,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output", help_heading = OUTPUT)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct PruneArgs {
    /// Prune runs started longer ago than this (`90d`, `12weeks`, `1y`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, help_heading = SELECTION)]
    pub older_than: Option<std::time::Duration>,
    /// Keep the newest N runs of each playbook whole, however old.
    #[arg(long, value_name = "N", help_heading = SELECTION)]
    pub keep_last: Option<usize>,
    /// Say what would be pruned and how much, and change nothing.
    #[arg(long, help_heading = EXECUTION)]
    pub dry_run: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("mark").required(true).args(["baseline", "no_baseline"])))]
pub struct MarkArgs {
    /// Run id, run name, or `last`.
    pub run: String,
    /// Keep it whole: `prune` never touches a baseline.
    #[arg(long, help_heading = ACTIONS)]
    pub baseline: bool,
    /// No longer a baseline.
    #[arg(long, help_heading = ACTIONS)]
    pub no_baseline: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    /// An aligned table for the terminal.
    Table,
    /// Markdown, for a CI job summary.
    Md,
    /// Every series with its points, splits and changes.
    Json,
    /// One self-contained page: a small trend chart per series, a large one per series with a change.
    Html,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,
    #[command(flatten)]
    pub query: HistoryQuery,
    /// Exit with 3 when a regression nobody acknowledged arrived with one of the last --since runs, or is reported by this --alert.
    #[arg(long, help_heading = COMPARISON)]
    pub fail_on_regression: bool,
    /// With --fail-on-regression: how many of the newest runs count.
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = COMPARISON)]
    pub since: usize,
    /// Report each regression once: those not reported before nor acknowledged are posted to each --webhook and stamped reported in the database; a later call leaves them out.
    #[arg(long, help_heading = ALERTS)]
    pub alert: bool,
    /// With --alert: POST the new regressions here as JSON (`text` for Slack-style receivers, `changes` for scripts). Repeatable.
    #[arg(long, value_name = "URL", requires = "alert", help_heading = ALERTS)]
    pub webhook: Vec<String>,
    /// How to print the history.
    #[arg(long = "format", value_enum, default_value = "table", help_heading = OUTPUT)]
    pub format: HistoryFormat,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BisectArgs {
    #[command(subcommand)]
    pub action: Option<BisectAction>,
    #[command(flatten)]
    pub start: BisectStart,
}

#[derive(Args, Debug)]
pub struct BisectStart {
    /// A revision that measures well (a commit, a tag, or a version of --versions).
    #[arg(long, required_unless_present = "resume", help_heading = BISECT)]
    pub good: Option<String>,
    /// A later revision that measures worse.
    #[arg(long, required_unless_present = "resume", help_heading = BISECT)]
    pub bad: Option<String>,
    /// The git repository the revisions are in (read on this machine; first parents only).
    #[arg(long, value_name = "PATH", conflicts_with = "versions", required_unless_present_any = ["versions", "resume"], help_heading = BISECT)]
    pub repo: Option<PathBuf>,
    /// A file of versions, one a line, oldest first (`#` comments), instead of --repo.
    #[arg(long, value_name = "FILE", help_heading = BISECT)]
    pub versions: Option<PathBuf>,
    /// Run before each revision is measured, with `-e rev=REVISION`; a failed run skips the revision.
    #[arg(long, value_name = "PLAYBOOK", help_heading = BISECT)]
    pub build: Option<PathBuf>,
    /// Run for each revision (again for more repetitions), with `-e rev=REVISION`.
    #[arg(long, value_name = "PLAYBOOK", required_unless_present = "resume", help_heading = BISECT)]
    pub measure: Option<PathBuf>,
    /// The metrics followed: a glob over a metric's name (`throughput`, `*time`), or its step's name and it (`write throughput`). Repeatable.
    #[arg(long, value_name = "GLOB", required_unless_present = "resume", help_heading = BISECT)]
    pub metric: Vec<String>,
    /// The most samples a series of one revision gets; past it, a revision still neither good nor bad is undecided.
    #[arg(long, value_name = "N", default_value_t = 30, help_heading = BISECT)]
    pub max_reps: usize,
    /// A change smaller than this many percent is not a regression.
    #[arg(long, value_name = "PCT", default_value_t = 5.0, help_heading = BISECT)]
    pub threshold: f64,
    /// A name for the bisect, usable wherever its id is.
    #[arg(long, help_heading = DATABASE)]
    pub name: Option<String>,
    /// Go on with a bisect stopped part way (its id or name): the steps stored are not measured again.
    #[arg(long, value_name = "BISECT", conflicts_with_all = ["good", "bad", "repo", "versions", "build", "measure", "metric", "name", "extra_vars", "limit"], help_heading = EXECUTION)]
    pub resume: Option<String>,
    /// Extra variables for both playbooks, beside `rev`: key=value, a YAML/JSON mapping, or @file. Repeatable.
    #[arg(short = 'e', long = "extra-vars", help_heading = PLAYBOOK)]
    pub extra_vars: Vec<String>,
    #[command(flatten)]
    pub hosts: HostsArgs,
    /// Wait this long (30s, 10m, 2h) for hosts another run holds, instead of exiting at once (exit code 5).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = humantime::parse_duration, help_heading = EXECUTION)]
    pub wait_for_hosts: std::time::Duration,
    /// How long the bisect's hold on a host lasts without a heartbeat.
    #[arg(long, value_name = "DURATION", default_value = LEASE_TERM, env = "BENCHRIG_LEASE_TERM", value_parser = humantime::parse_duration, help_heading = EXECUTION)]
    pub lease_term: std::time::Duration,
}

#[derive(Subcommand, Debug)]
pub enum BisectAction {
    /// A bisect's record: each step's revision, runs, verdict and figures, and its answer.
    Show(BisectShowArgs),
    /// Every bisect in the database.
    List(BisectListArgs),
}

#[derive(Args, Debug)]
pub struct BisectShowArgs {
    /// The bisect's id or name.
    pub bisect: String,
    /// How to print it.
    #[arg(long = "format", value_enum, default_value = "table", help_heading = OUTPUT)]
    pub format: BisectFormat,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BisectFormat {
    /// A step a line: revision, purpose, runs, verdict, the first followed series' mean and p-values.
    Table,
    /// The same as a Markdown table, with the answer's commit.
    Md,
    /// Everything: the recipe, the revisions, each step with every followed series' figures, the answer.
    Json,
    /// One self-contained page: the answer, a chart per followed series over the measured revisions, the steps.
    Html,
}

#[derive(Args, Debug)]
pub struct BisectListArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Subcommand, Debug)]
pub enum HistoryAction {
    /// Acknowledge a change by its id (the history's ID column): it no longer fails --fail-on-regression, nor is it alerted.
    Ack(AckArgs),
}

#[derive(Args, Debug)]
pub struct AckArgs {
    /// The change's id, as the history printed it. Repeatable.
    #[arg(required = true, value_name = "ID")]
    pub ids: Vec<String>,
    /// Why: kept with the acknowledgement and shown beside the change.
    #[arg(long, value_name = "TEXT", help_heading = ALERTS)]
    pub note: Option<String>,
    /// The history the ids come from, chosen as for `benchrig history`.
    #[command(flatten)]
    pub query: HistoryQuery,
}

/// How a history finds changes (Otava's settings and benchrig's guards).
#[derive(Args, Debug, Clone)]
pub struct ChangeSettings {
    /// Otava's window: the points each E-Divisive pass looks at.
    #[arg(long, default_value_t = 50, help_heading = COMPARISON)]
    pub window: usize,
    /// Otava's significance: a change point's t-test p-value must be below this.
    #[arg(long, default_value_t = 0.001, help_heading = COMPARISON)]
    pub max_pvalue: f64,
    /// Ignore changes smaller than this many percent (Otava's min_magnitude).
    #[arg(long, value_name = "PCT", default_value_t = 0.0, help_heading = COMPARISON)]
    pub min_change: f64,
    /// A change needs at least this many runs on each side.
    #[arg(long, default_value_t = 1, help_heading = COMPARISON)]
    pub min_points: usize,
    /// A series whose newest points vary more than this (CV, percent) is unstable: listed apart, never a regression.
    #[arg(long, value_name = "PCT", default_value_t = 10.0, help_heading = COMPARISON)]
    pub max_cv: f64,
}

/// Which runs and metrics a history reads, and how it finds changes.
#[derive(Args, Debug)]
pub struct HistoryQuery {
    /// The runs of this playbook (its path as runs stored it, or its file name); default: the newest run's path, exactly.
    #[arg(long, help_heading = SELECTION)]
    pub playbook: Option<String>,
    /// Only runs whose name matches this glob (`nightly-*`).
    #[arg(long, value_name = "GLOB", help_heading = SELECTION)]
    pub name: Option<String>,
    /// Only runs started at or after this time (RFC 3339, or a date: 2026-11-01).
    #[arg(long, value_name = "TIME", help_heading = SELECTION)]
    pub from: Option<String>,
    /// Only runs started before this time.
    #[arg(long, value_name = "TIME", help_heading = SELECTION)]
    pub to: Option<String>,
    /// At most this many runs, the newest.
    #[arg(long, default_value_t = 100, help_heading = SELECTION)]
    pub last: usize,
    /// Only metrics matching this glob (`throughput`, `*_ms`). Repeatable.
    #[arg(long, value_name = "GLOB", help_heading = SELECTION)]
    pub metric: Vec<String>,
    #[command(flatten)]
    pub settings: ChangeSettings,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct SiteArgs {
    /// The site's directory (made if missing). A second call writes what changed: new runs, the history pages, the index.
    #[arg(short = 'o', long = "output", value_name = "DIR", help_heading = OUTPUT)]
    pub output: PathBuf,
    /// Comparisons with the baseline: changes under PCT percent are unchanged (as `compare --threshold`).
    #[arg(long, value_name = "PCT", default_value_t = 0.0, help_heading = COMPARISON)]
    pub threshold: f64,
    /// Comparisons with the baseline: the significance level (as `compare --alpha`).
    #[arg(long, default_value_t = 0.05, help_heading = COMPARISON)]
    pub alpha: f64,
    /// History pages: at most this many runs of each playbook, the newest.
    #[arg(long, default_value_t = 100, help_heading = COMPARISON)]
    pub last: usize,
    /// Reports and comparisons of the newest N runs of each playbook (and of baselines); an older run's are taken out of the site and it is still listed. 0: every run's. (A night of 100 hosts is about 17 MB of pages; GitHub Pages takes 1 GB.)
    #[arg(long, value_name = "N", default_value_t = 30, help_heading = OUTPUT)]
    pub keep_last: usize,
    /// History pages: how changes are found, as for `history`.
    #[command(flatten)]
    pub settings: ChangeSettings,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Run id, run name, or `last`.
    pub run: String,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output", help_heading = OUTPUT)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every argument of every command (and `help`'s own) with what `--help` shows for it.
    fn every_argument(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Arg)>) {
        for arg in cmd.get_arguments() {
            out.push((format!("{path} {}", arg.get_id()), arg.clone()));
        }
        for sub in cmd.get_subcommands() {
            every_argument(sub, format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_has_help_and_every_option_a_heading() {
        let mut cmd = Cli::command();
        cmd.build();
        let mut args = Vec::new();
        every_argument(&cmd, "benchrig".into(), &mut args);
        // clap's own --help and --version are described by clap and head the list.
        let ours: Vec<_> = args.iter().filter(|(_, a)| !["help", "version"].contains(&a.get_id().as_str())).collect();
        assert!(ours.len() > 50, "every subcommand was walked: {}", ours.len());
        let undescribed: Vec<&str> =
            ours.iter().filter(|(_, a)| a.get_help().is_none()).map(|(p, _)| p.as_str()).collect();
        assert_eq!(undescribed, Vec::<&str>::new(), "arguments without help");
        let unheaded: Vec<&str> = ours
            .iter()
            .filter(|(_, a)| !a.is_positional() && a.get_help_heading().is_none())
            .map(|(p, _)| p.as_str())
            .collect();
        assert_eq!(unheaded, Vec::<&str>::new(), "options without a heading");
    }

    #[test]
    fn dash_f_is_forks_wherever_it_is_as_in_ansible() {
        let mut cmd = Cli::command();
        cmd.build();
        let mut args = Vec::new();
        every_argument(&cmd, "benchrig".into(), &mut args);
        let f: Vec<(String, String)> = args
            .iter()
            .filter(|(_, a)| a.get_short() == Some('f'))
            .map(|(p, a)| (p.clone(), a.get_id().to_string()))
            .collect();
        assert!(f.len() >= 5, "run, plan, facts, ping and cleanup take -f: {f:?}");
        assert!(f.iter().all(|(_, id)| id == "forks"), "-f is not --forks in: {f:?}");
        assert!(Cli::try_parse_from(["benchrig", "report", "last", "-f", "md"]).is_err());
        assert!(Cli::try_parse_from(["benchrig", "report", "last", "--format", "md"]).is_ok());
    }

    fn db_of(args: &[&str]) -> Result<DbLocation, clap::Error> {
        let cli = Cli::try_parse_from(args)?;
        Ok(match cli.command {
            Command::Runs(a) => a.db.db,
            Command::Run(a) => a.play.hosts.db.db,
            Command::Cleanup(a) => a.db.db,
            other => panic!("not in this test: {other:?}"),
        })
    }

    #[test]
    fn db_is_a_sqlite_path_or_a_postgres_url() {
        let db = |v: &str| db_of(&["benchrig", "runs", "--db", v]).unwrap();
        assert_eq!(db("r.db"), DbLocation::Sqlite("r.db".into()));
        assert_eq!(db("postgres://b@h/lab"), DbLocation::Postgres("postgres://b@h/lab".into()));
        assert_eq!(db("postgresql://b@h/lab"), DbLocation::Postgres("postgresql://b@h/lab".into()));
        // The same definition wherever hosts are worked on.
        assert_eq!(db_of(&["benchrig", "run", "p.yml", "--db", "x.db"]).unwrap(), DbLocation::Sqlite("x.db".into()));
        assert_eq!(db_of(&["benchrig", "cleanup", "--db", "x.db"]).unwrap(), DbLocation::Sqlite("x.db".into()));
        if std::env::var_os("BENCHRIG_DB").is_none() {
            assert_eq!(db_of(&["benchrig", "runs"]).unwrap(), DbLocation::Sqlite("benchrig.db".into()));
        }
    }

    #[test]
    fn a_password_in_db_on_the_command_line_is_refused_without_showing_it() {
        for url in ["postgres://bench:s3cret@h/lab", "postgresql://bench@h/lab?password=s3cret"] {
            let e = db_of(&["benchrig", "runs", "--db", url]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
            let text = e.render().to_string();
            assert!(
                text.contains("shown to every user of this machine by `ps`") && text.contains("PGPASSWORD"),
                "{text}"
            );
            assert!(!text.contains("s3cret"), "{text}");
        }
    }

    #[test]
    fn another_url_scheme_is_a_usage_error_that_shows_no_password() {
        let e = db_of(&["benchrig", "runs", "--db", "mysql://bench:s3cret@h/lab"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        let text = e.render().to_string();
        assert!(text.contains("invalid value 'mysql://bench:***@h/lab' for '--db <DB>'"), "{text}");
        assert!(text.contains("postgres://") && text.contains("SQLite file"), "names the accepted forms: {text}");
        assert!(!text.contains("s3cret"), "{text}");
    }
}
