//! `benchrig`: parse the command line, start logging, hand the command to
//! its module in `commands`, and print an error, once, where one ends it.
//!
//! The config file is read first: its values become the flags' defaults
//! (`settings::apply`). An error becomes its exit code here alone
//! (`exit_code::for_error`). `main` shuts the runtime down and returns its
//! `ExitCode` rather than calling `process::exit`, so every destructor
//! runs: the run's leases are released, and SQLite checkpoints its WAL
//! instead of leaving `-wal` beside the database
//! (`lab/main.rs::quickstart_with_no_inventory_runs_on_this_machine`).

use benchrig::cli::{Cli, ColorChoice, Command};
use benchrig::commands;
use benchrig::exit_code;
use benchrig::progress::Progress;
use benchrig::settings;
use clap::{CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // The config file's values become the flags' defaults, so it is read
    // before clap parses; a bad one ends here, as a usage error.
    let settings = match load_settings(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}", benchrig::human::printable(&e.to_string()));
            return exit(exit_code::USAGE);
        }
    };
    let parsed =
        settings::apply(Cli::command(), &settings).try_get_matches_from(&args).and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        // clap's own `exit()` would end a usage error with 2, which is ours
        // for a failed cell; print exactly what it prints, exit as we say.
        Err(e) => {
            return exit(match e.print() {
                Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => exit_code::BROKEN_PIPE,
                // --help and --version go to stdout and are no error.
                _ if !e.use_stderr() => exit_code::OK,
                _ => exit_code::USAGE,
            });
        }
    };
    init_logging(cli.verbose, cli.quiet, cli.color);
    for warning in &settings.warnings {
        tracing::warn!("{}", benchrig::human::printable(&warning.to_string()));
    }
    let progress = Progress { quiet: cli.quiet };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let code = rt.block_on(dispatch(cli.command, progress, &settings)).unwrap_or_else(|e| {
        let code = exit_code::for_error(&e);
        // `benchrig runs | head`: whoever closed stdout wants no message.
        // (SIGPIPE stays ignored, as Rust leaves it: a dead ssh channel
        // must be an error we handle, not a signal that kills the run.)
        if code != exit_code::BROKEN_PIPE {
            eprintln!("error: {}", benchrig::human::printable(&format!("{e:#}")));
        }
        code
    });
    // Tasks still spawned (a lease's heartbeat, a host's session) hold the
    // store and the run's leases; dropping them releases the leases and
    // closes its connections, so SQLite checkpoints its WAL into the
    // database file instead of leaving `-wal` and `-shm` beside it.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    exit(code)
}

/// One of `exit_code`'s codes, returned from `main` so that every
/// destructor runs on the way out (`process::exit` runs none).
fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The config file `--config` or BENCHRIG_CONFIG names, else the first found.
fn load_settings(args: &[OsString]) -> Result<settings::ConfigFile, benchrig::diagnostic::ConfigError> {
    let named = settings::named(args, std::env::var_os("BENCHRIG_CONFIG"));
    let cwd = std::env::current_dir().unwrap_or_default();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    let candidates = settings::candidates(&cwd, home.as_deref(), xdg.as_deref());
    settings::load(named.as_deref(), &candidates, &Cli::command())
}

async fn dispatch(cmd: Command, progress: Progress, settings: &settings::ConfigFile) -> anyhow::Result<i32> {
    match cmd {
        Command::Run(a) => commands::run::run(a, progress).await,
        Command::Plan(a) => commands::plan::run(a),
        Command::Facts(a) => commands::facts::run(a, progress).await,
        Command::Inventory(a) => commands::inventory::run(a),
        Command::Runs(a) => commands::runs::list(a),
        Command::Show(a) => commands::runs::show(a),
        Command::Report(a) => commands::runs::report(a),
        Command::Export(a) => commands::runs::export(a),
        Command::Import(a) => commands::runs::import(a),
        Command::Compare(a) => commands::compare::run(a),
        Command::History(a) => commands::history::run(a),
        Command::Bisect(a) => commands::bisect::run(a, progress).await,
        Command::Prune(a) => commands::prune::run(a),
        Command::Mark(a) => commands::prune::mark(a),
        Command::Site(a) => commands::site::run(a),
        Command::Cleanup(a) => commands::cleanup::run(a, progress).await,
        Command::Ping(a) => commands::ping::run(a, progress).await,
        Command::Lab(a) => commands::lab::run(a),
        Command::Completions(a) => commands::generate::completions(a),
        Command::Man(a) => commands::generate::man(a),
        Command::Schema(a) => commands::schema::run(a),
        Command::Doc(a) => commands::doc::run(a),
        Command::Config(a) => commands::config::run(a, settings),
    }
}

fn init_logging(verbose: u8, quiet: bool, color: ColorChoice) {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(format!("benchrig={level},warn")));
    let terminal = std::io::stderr().is_terminal();
    // NO_COLOR (no-color.org): set and not empty.
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let ansi = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && !no_color,
    };
    let fmt = tracing_subscriber::fmt::layer().with_ansi(ansi).with_target(false);
    if terminal && !quiet {
        // Progress bars per host; logs and progress lines print above them
        // through the layer's writer instead of tearing them.
        let bars = tracing_indicatif::IndicatifLayer::new();
        let writer = bars.get_stderr_writer();
        tracing_subscriber::registry()
            .with(fmt.with_writer(writer).with_filter(filter))
            .with(bars.with_filter(tracing_indicatif::filter::IndicatifFilter::new(false)))
            .init();
    } else {
        tracing_subscriber::registry().with(fmt.with_writer(std::io::stderr).with_filter(filter)).init();
    }
}
