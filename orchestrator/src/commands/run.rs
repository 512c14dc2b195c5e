//! `benchrig run`: `--syntax-check` / `--list-*` as `plan` has them, else
//! the run stage (`crate::run`), then its table and status line.

use crate::cli::RunArgs;
use crate::extra_vars;
use crate::playbook::TagFilter;
use crate::progress::Progress;
use crate::run::{self, RunOptions};

pub async fn run(args: RunArgs, progress: Progress) -> anyhow::Result<i32> {
    if let Some(done) = super::plan::listing(&args.play) {
        return done;
    }
    let extra_vars = extra_vars::parse(&args.play.extra_vars).map_err(anyhow::Error::msg)?;
    let result = run::run(RunOptions {
        playbook: args.play.playbook,
        inventory: args.play.hosts.inventory,
        limit: args.play.hosts.limit,
        tags: TagFilter::new(&args.play.tags, &args.play.skip_tags),
        extra_vars,
        forks: args.play.hosts.forks,
        db: args.play.hosts.db.db,
        name: args.name,
        progress,
        wait_for_hosts: args.wait_for_hosts,
    })
    .await?;
    out!("{}", result.table)?;
    outln!("run {}: {}", result.run, result.status)?;
    Ok(result.exit_code)
}
