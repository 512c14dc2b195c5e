//! `benchrig run`: `--syntax-check` / `--list-*` as `plan` has them, else
//! the run stage (`crate::run`): a new run of a playbook, or `--resume` of
//! a stored one; then its table and status line.

use crate::cli::RunArgs;
use crate::extra_vars;
use crate::playbook::TagFilter;
use crate::progress::Progress;
use crate::run::{self, Recipe, RunOptions, RunPlan};

pub async fn run(args: RunArgs, progress: Progress) -> anyhow::Result<i32> {
    let plan = match (args.resume, args.playbook) {
        (Some(run), _) => {
            let inventory = args.play.hosts.inventory.clone();
            RunPlan::Resume { run, retry_failed: args.retry_failed, inventory }
        }
        (None, Some(playbook)) if args.check => {
            return super::plan::run(crate::cli::PlanArgs { playbook, play: args.play });
        }
        (None, Some(playbook)) => {
            if let Some(done) = super::plan::listing(&playbook, &args.play) {
                return done;
            }
            RunPlan::Playbook(Recipe {
                playbook,
                inventory: args.play.hosts.inventory.clone(),
                limit: args.play.hosts.limit.clone(),
                tags: TagFilter::new(&args.play.tags, &args.play.skip_tags),
                extra_vars: extra_vars::parse(&args.play.extra_vars).map_err(anyhow::Error::msg)?,
                name: args.name,
            })
        }
        (None, None) => unreachable!("clap requires a playbook unless --resume is given"),
    };
    // A resume without -i takes the inventory stored with the run.
    if args.play.hosts.inventory.is_empty() && matches!(plan, RunPlan::Playbook { .. }) {
        let cwd = std::env::current_dir()?;
        let is_root = rustix::process::geteuid().is_root();
        let db = args.play.hosts.db.db.to_string();
        tracing::warn!("{}", crate::inventory::localhost_notice(is_root, &cwd, &db));
    }
    let connection = super::connection_defaults(&args.play.hosts)?;
    let result = run::run(RunOptions {
        plan,
        forks: args.play.hosts.forks,
        db: args.play.hosts.db.db,
        progress,
        wait_for_hosts: args.wait_for_hosts,
        lease_term: args.lease_term,
        connection,
        within: None,
    })
    .await?;
    out!("{}", result.table)?;
    outln!("run {}: {}", result.run, result.status)?;
    Ok(result.exit_code)
}
