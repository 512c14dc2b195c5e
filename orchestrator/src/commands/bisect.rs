//! `benchrig bisect`: the revisions from good to bad (`bisect::revisions`),
//! a record in the store (`store::bisects`), the hosts held for the whole
//! bisect, and each step `bisect::course` asks for run as real runs: the
//! build playbook then the measure playbook with `-e rev=…`, the measure
//! run's followed series gathered into the course, the step stored before
//! the next is taken (so `--resume` measures nothing twice).

use crate::bisect::course::{Action, Answer, Course, Figures};
use crate::bisect::recipe::{Recipe, Source};
use crate::bisect::revisions::{self, Revision};
use crate::bisect::series::gather;
use crate::cli::BisectFormat;
use crate::exit_code;
use crate::progress::Progress;
use crate::report::bisect_html::{Point, Trace};
use crate::run::{self, leases, RunOptions, RunPlan};
use crate::status::{BisectPurpose, BisectStatus, BisectVerdict, HostStatus, RunStatus};
use crate::store::{BisectStepRow, Store};
use std::sync::Arc;

/// How a step's run ended, as the bisect reads it.
enum Ran {
    Ok(i64),
    /// A cell failed: the revision cannot be built or measured.
    Failed(i64),
    /// Interrupted, or a host lost: the bisect stops, resumable.
    Stopped(Stopped),
}

/// Everything a bisect's steps need besides the course.
pub struct Bisect {
    pub store: Store,
    pub id: i64,
    pub recipe: Recipe,
    pub revisions: Vec<Revision>,
    pub progress: Progress,
    pub forks: usize,
    pub connection: crate::session::transport::ConnectionDefaults,
    pub db: crate::store::DbLocation,
    pub lease_term: std::time::Duration,
    /// True after a Ctrl-C: the running step stops, no other starts.
    pub interrupted: tokio::sync::watch::Receiver<bool>,
}

impl Bisect {
    /// The revisions a recipe names.
    pub fn revisions_of(recipe: &Recipe) -> anyhow::Result<Vec<Revision>> {
        Ok(match &recipe.source {
            Source::Git { repo } => revisions::from_git(repo, &recipe.good, &recipe.bad)?,
            Source::Versions { file } => revisions::from_versions(file, &recipe.good, &recipe.bad)?,
        })
    }

    /// The course as the stored steps left it.
    pub fn course(&self) -> anyhow::Result<Course> {
        let metrics = self.metrics()?;
        let mut course = Course::new(self.revisions.len(), self.recipe.max_reps, self.recipe.threshold_pct);
        for step in self.store.bisect_steps(self.id)? {
            let i = step.revision as usize;
            if step.verdict == Some(BisectVerdict::Skip) {
                course.skipped[i] = true;
                continue;
            }
            if let Some(run) = step.measure_run {
                let into = course.pool(i, step.purpose);
                gather(into, &self.store.cells(run)?, &self.store.samples(run)?, &metrics);
            }
        }
        Ok(course)
    }

    fn metrics(&self) -> anyhow::Result<globset::GlobSet> {
        let mut set = globset::GlobSetBuilder::new();
        for m in &self.recipe.metrics {
            set.add(globset::Glob::new(m)?);
        }
        Ok(set.build()?)
    }

    /// The steps until the course is done, holding the hosts throughout.
    pub async fn go(&self, held: Arc<leases::Held>) -> anyhow::Result<(Answer, Course)> {
        let mut course = self.course()?;
        // The revision the hosts have built, as far as this process knows:
        // none at the start (a killed bisect may have built one it never
        // stored), so the first step builds.
        let mut built: Option<usize> = None;
        let metrics = self.metrics()?;
        loop {
            let (revision, purpose) = match course.next() {
                Action::Done(answer) => return Ok((answer, course)),
                Action::Measure { revision, purpose } => (revision, purpose),
            };
            let rev = &self.revisions[revision];
            self.progress.note(format!("bisect {}: {purpose} {} {}", self.id, rev.short(), subject(rev)));
            let mut step = BisectStepRow {
                revision: revision as i64,
                purpose,
                build_run: None,
                measure_run: None,
                verdict: None,
                figures: None,
            };
            // A revision is built unless the hosts have it from the step before.
            if let (Some(build), true) = (&self.recipe.build, built != Some(revision)) {
                match self.run(build, rev, held.clone()).await? {
                    Ran::Ok(run) => (step.build_run, built) = (Some(run), Some(revision)),
                    Ran::Failed(run) if purpose == BisectPurpose::Candidate => {
                        step.build_run = Some(run);
                        step.verdict = Some(BisectVerdict::Skip);
                        course.skipped[revision] = true;
                        built = None;
                        self.store.add_bisect_step(self.id, &step)?;
                        continue;
                    }
                    Ran::Failed(run) if purpose == BisectPurpose::Endpoint => anyhow::bail!(
                        "the {} endpoint {} did not build (run {run}): a bisect needs both endpoints",
                        if revision == 0 { "good" } else { "bad" },
                        rev.short()
                    ),
                    // Built once already: a build that fails now is the lab's
                    // (a full disk, a mirror down), not the revision's.
                    Ran::Failed(run) => anyhow::bail!(
                        "revision {} built before and not again to be confirmed (run {run}); `benchrig bisect --resume {}` tries again",
                        rev.short(),
                        self.id
                    ),
                    Ran::Stopped(stopped) => return Err(stopped.into()),
                }
            }
            match self.run(&self.recipe.measure, rev, held.clone()).await? {
                Ran::Ok(run) => {
                    step.measure_run = Some(run);
                    let into = course.pool(revision, purpose);
                    gather(into, &self.store.cells(run)?, &self.store.samples(run)?, &metrics);
                }
                Ran::Failed(run) if purpose == BisectPurpose::Candidate => {
                    (step.measure_run, step.verdict) = (Some(run), Some(BisectVerdict::Skip));
                    course.skipped[revision] = true;
                }
                Ran::Failed(run) => anyhow::bail!("revision {} failed to measure (run {run})", rev.short()),
                Ran::Stopped(stopped) => return Err(stopped.into()),
            }
            if step.verdict.is_none() {
                let (signals, _) = course.signals();
                let samples = match purpose {
                    BisectPurpose::Confirm => &course.confirmed[&revision],
                    _ => &course.measured[revision],
                };
                // An endpoint measured again to confirm is a reference, not called.
                let endpoint = purpose == BisectPurpose::Endpoint || course.is_endpoint(revision);
                step.verdict = match purpose {
                    _ if endpoint => None,
                    BisectPurpose::Confirm => course.confirm_call(revision, &signals),
                    _ => course.call(samples, course.rounds[revision], &signals),
                };
                let ends = (!endpoint).then(|| course.ends_for(purpose));
                step.figures = Some(serde_json::to_string(&course.figures(samples, &signals, ends))?);
            }
            self.store.add_bisect_step(self.id, &step)?;
        }
    }

    /// One run of `playbook` at revision `rev` on the held hosts.
    async fn run(&self, playbook: &std::path::Path, rev: &Revision, held: Arc<leases::Held>) -> anyhow::Result<Ran> {
        // Interrupted since the last run: no run is begun for nothing.
        if *self.interrupted.borrow() {
            return Ok(Ran::Stopped(Stopped::interrupted(self.id)));
        }
        let r = &self.recipe;
        let result = run::run(RunOptions {
            plan: RunPlan::Playbook(run::Recipe {
                playbook: playbook.to_path_buf(),
                inventory: r.inventory.clone(),
                limit: r.limit.clone(),
                tags: crate::playbook::TagFilter::default(),
                extra_vars: r.vars_for(&rev.id),
                name: Some(format!("bisect-{}-{}", self.id, rev.short())),
            }),
            forks: self.forks,
            db: self.db.clone(),
            progress: self.progress,
            wait_for_hosts: std::time::Duration::ZERO,
            lease_term: self.lease_term,
            connection: self.connection.clone(),
            within: Some(run::Within { held, interrupted: self.interrupted.clone() }),
        })
        .await?;
        let stopped = |code| Stopped { bisect: self.id, run: Some(result.run), code, lost: vec![] };
        Ok(match result.status {
            RunStatus::Ok => Ran::Ok(result.run),
            RunStatus::Failed => Ran::Failed(result.run),
            RunStatus::Unreachable => {
                // Named where the store says; stopped (resumable) whatever it says.
                let hosts = self.store.hosts(result.run).unwrap_or_default();
                let lost = hosts.into_iter().filter(|h| h.status == HostStatus::Unreachable).map(|h| h.name);
                Ran::Stopped(Stopped { lost: lost.collect(), ..stopped(exit_code::UNREACHABLE) })
            }
            RunStatus::Interrupted | RunStatus::Running => Ran::Stopped(stopped(exit_code::INTERRUPTED)),
        })
    }

    /// The record's end and the exit code: 0 found, 3 no regression.
    pub fn finish(&self, answer: &Answer, course: &Course) -> anyhow::Result<i32> {
        let (status, code) = match answer {
            Answer::Found(_) => (BisectStatus::Found, exit_code::OK),
            Answer::Among(_) => (BisectStatus::Ambiguous, exit_code::OK),
            Answer::Unconfirmed { .. } => (BisectStatus::Unconfirmed, exit_code::CELL_FAILED),
            Answer::NoRegression => (BisectStatus::NoRegression, exit_code::REGRESSED),
            Answer::NothingFollowed => (BisectStatus::Failed, exit_code::USAGE),
        };
        let result = match answer {
            Answer::Found(i) => serde_json::json!({"first_bad": self.revisions[*i]}),
            Answer::Among(among) => {
                serde_json::json!({"first_bad_among": among.iter().map(|&i| &self.revisions[i]).collect::<Vec<_>>()})
            }
            Answer::Unconfirmed { first_bad, why } => {
                serde_json::json!({"unconfirmed": self.revisions[*first_bad], "why": why})
            }
            // Said with the figures: each followed series' endpoints.
            Answer::NoRegression => {
                let series: Vec<serde_json::Value> = crate::bisect::course::endpoint_figures(course)
                    .into_iter()
                    .map(|(k, r)| serde_json::json!({"series": k.describe(), "change_pct": r.change_pct, "p": r.comparison.p, "outcome": r.outcome}))
                    .collect();
                serde_json::json!({"no_regression": true, "threshold_pct": self.recipe.threshold_pct, "series": series})
            }
            Answer::NothingFollowed => serde_json::json!({
                "error": "the endpoints measured no followed series in common: check --metric and the measure playbook"
            }),
        };
        self.store.finish_bisect(self.id, status, Some(&result.to_string()))?;
        Ok(code)
    }
}

/// A bisect stopped part way (interrupted, a host lost): resumable, the
/// step it was in measured again, none stored before.
#[derive(Debug, thiserror::Error)]
#[error("bisect {bisect} stopped part way: {}; `benchrig bisect --resume {bisect}` measures this step again{}", self.what(), self.when())]
pub struct Stopped {
    pub bisect: i64,
    /// The step's run it stopped in (none: between runs).
    pub run: Option<i64>,
    /// The exit code: interrupted or a host unreachable.
    pub code: i32,
    pub lost: Vec<String>,
}

impl Stopped {
    fn interrupted(bisect: i64) -> Stopped {
        Stopped { bisect, run: None, code: exit_code::INTERRUPTED, lost: vec![] }
    }

    fn what(&self) -> String {
        match (self.run, self.code == exit_code::UNREACHABLE) {
            (Some(run), true) if self.lost.is_empty() => format!("run {run} lost a host part way"),
            (Some(run), true) => format!("run {run} lost {}", self.lost.join(", ")),
            (Some(run), false) => format!("run {run} was interrupted"),
            (None, _) => "interrupted".to_string(),
        }
    }

    fn when(&self) -> &'static str {
        match (self.code == exit_code::UNREACHABLE, self.lost.len()) {
            (false, _) => "",
            (true, 1) => " once the host is back",
            (true, _) => " once the hosts are back",
        }
    }
}

fn subject(rev: &Revision) -> &str {
    rev.subject.as_deref().unwrap_or("")
}

/// `benchrig bisect …`, `bisect --resume`, `bisect show`, `bisect list`.
pub async fn run(args: crate::cli::BisectArgs, progress: Progress) -> anyhow::Result<i32> {
    use crate::cli::BisectAction;
    match args.action {
        Some(BisectAction::Show(a)) => return show(&Store::open(&a.db.db)?, &a.bisect, a.format),
        Some(BisectAction::List(a)) => return list(&Store::open(&a.db.db)?),
        None => {}
    }
    let a = args.start;
    let store = Store::open(&a.hosts.db.db)?;
    let (id, recipe) = match &a.resume {
        Some(spec) => {
            let row = store.bisect(spec)?;
            if row.status != BisectStatus::Running {
                anyhow::bail!("bisect {} has ended ({}): nothing to resume", row.id, row.status);
            }
            (row.id, serde_json::from_str::<Recipe>(&row.recipe)?)
        }
        None => {
            let recipe = recipe_of(&a)?;
            let revisions = Bisect::revisions_of(&recipe)?;
            let id = store.create_bisect(
                a.name.as_deref(),
                &serde_json::to_string(&recipe)?,
                &serde_json::to_string(&revisions)?,
            )?;
            (id, recipe)
        }
    };
    let revisions: Vec<Revision> = serde_json::from_str(&store.bisect(&id.to_string())?.revisions)?;
    let hosts = hosts_of(&recipe)?;
    let (interrupt, interrupted) = tokio::sync::watch::channel(false);
    let bisect = Bisect {
        store: store.clone(),
        id,
        recipe,
        revisions,
        progress,
        forks: a.hosts.forks,
        connection: super::connection_defaults(&a.hosts)?,
        db: a.hosts.db.db.clone(),
        lease_term: a.lease_term,
        interrupted,
    };
    progress.note(format!(
        "bisect {id}: {} revisions from {} to {} on {}",
        bisect.revisions.len(),
        bisect.revisions[0].short(),
        bisect.revisions[bisect.revisions.len() - 1].short(),
        hosts.join(", ")
    ));
    // Resuming, the leases a killed bisect left name the run it was in.
    let (what, runs) = (format!("bisect {id}"), runs_of(&store, id)?);
    let resuming = a.resume.is_some().then_some(leases::Resumed { what: &what, runs: &runs });
    let ask = leases::Ask { hosts: &hosts, wait: a.wait_for_hosts, term: a.lease_term, resuming };
    let held = Arc::new(leases::hold(&store, &ask, progress).await?);
    // One Ctrl-C handler for the whole bisect (its runs install none). A
    // second Ctrl-C leaves the bisect as it stands, to resume.
    let (quit_tx, quit) = tokio::sync::oneshot::channel();
    run::ctrl_c::listen("the running step", interrupt, quit_tx);
    let went = tokio::select! {
        went = bisect.go(held) => went,
        Ok(()) = quit => return Err(exit_code::QuitAtOnce.into()),
    };
    let (answer, course) = match went {
        Ok(done) => done,
        Err(e) => match e.downcast_ref::<Stopped>() {
            Some(stopped) => {
                tracing::error!("{e}");
                return Ok(stopped.code);
            }
            None => {
                store.finish_bisect(
                    id,
                    BisectStatus::Failed,
                    Some(&serde_json::json!({"error": e.to_string()}).to_string()),
                )?;
                return Err(e);
            }
        },
    };
    let code = bisect.finish(&answer, &course)?;
    show(&store, &id.to_string(), BisectFormat::Table)?;
    Ok(code)
}

/// The runs of bisect `id`, by their names (`bisect-ID-REVISION`): a run
/// killed part way is in none of its steps.
fn runs_of(store: &Store, id: i64) -> anyhow::Result<Vec<i64>> {
    let prefix = format!("bisect-{id}-");
    Ok(store
        .runs()?
        .into_iter()
        .filter(|r| r.name.as_deref().is_some_and(|n| n.starts_with(&prefix)))
        .map(|r| r.id)
        .collect())
}

/// The recipe the command line gives.
fn recipe_of(a: &crate::cli::BisectStart) -> anyhow::Result<Recipe> {
    // Stored absolute: `--resume` may be run from anywhere.
    let cwd = std::env::current_dir()?;
    let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let source = match (&a.repo, &a.versions) {
        (Some(repo), _) => Source::Git { repo: abs(repo) },
        (None, Some(file)) => Source::Versions { file: abs(file) },
        (None, None) => anyhow::bail!("give --repo PATH or --versions FILE"),
    };
    fn required<T: Clone>(v: &Option<T>, flag: &str) -> anyhow::Result<T> {
        v.clone().ok_or_else(|| anyhow::anyhow!("{flag} is required"))
    }
    Ok(Recipe {
        source,
        good: required(&a.good, "--good")?,
        bad: required(&a.bad, "--bad")?,
        build: a.build.as_deref().map(abs),
        measure: abs(&required(&a.measure, "--measure")?),
        metrics: a.metric.clone(),
        inventory: a.hosts.inventory.iter().map(|i| crate::inventory::anchored(i, &cwd)).collect(),
        limit: a.hosts.limit.clone(),
        extra_vars: crate::extra_vars::parse(&a.extra_vars).map_err(anyhow::Error::msg)?,
        max_reps: a.max_reps.max(2),
        threshold_pct: a.threshold,
    })
}

/// Every host the bisect's playbooks run on: held for its whole length.
fn hosts_of(r: &Recipe) -> anyhow::Result<Vec<String>> {
    let mut hosts: Vec<String> = Vec::new();
    let vars = r.vars_for(&r.good);
    let tags = crate::playbook::TagFilter::new(&[], &[]);
    for playbook in r.build.iter().chain(std::iter::once(&r.measure)) {
        let checked = run::check(playbook, &r.inventory, r.limit.as_deref(), &vars, &tags)?;
        for h in checked.hosts.keys() {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
    }
    if hosts.is_empty() {
        anyhow::bail!("no hosts matched (check `hosts:` in the playbooks and --limit)");
    }
    Ok(hosts)
}

/// `bisect list`: a line per bisect.
fn list(store: &Store) -> anyhow::Result<i32> {
    let rows: Vec<Vec<String>> = store
        .bisects()?
        .into_iter()
        .map(|b| {
            vec![
                b.id.to_string(),
                b.name.unwrap_or_else(|| "-".into()),
                crate::human::stamp_to_the_second(&b.started),
                b.status.to_string(),
                b.result.unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    out!("{}", crate::terminal_table::table(&["ID", "NAME", "STARTED", "STATUS", "ANSWER"], &rows))?;
    Ok(exit_code::OK)
}

/// `bisect show`: each step (revision, purpose, runs, verdict, the first
/// followed series' mean and p-values against the endpoints) and the answer.
fn show(store: &Store, spec: &str, format: BisectFormat) -> anyhow::Result<i32> {
    let b = store.bisect(spec)?;
    let revisions: Vec<Revision> = serde_json::from_str(&b.revisions)?;
    let steps = store.bisect_steps(b.id)?;
    let figures = |s: &BisectStepRow| -> Vec<Figures> {
        s.figures.as_deref().and_then(|f| serde_json::from_str(f).ok()).unwrap_or_default()
    };
    if format == BisectFormat::Json {
        let steps: Vec<serde_json::Value> = steps
            .iter()
            .enumerate()
            .map(|(n, s)| {
                serde_json::json!({
                    "step": n + 1,
                    "revision": revisions[s.revision as usize],
                    "purpose": s.purpose,
                    "build_run": s.build_run,
                    "measure_run": s.measure_run,
                    "verdict": s.verdict,
                    "figures": figures(s),
                })
            })
            .collect();
        let parsed = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap_or(serde_json::Value::Null);
        let doc = serde_json::json!({
            "id": b.id,
            "name": b.name,
            "started": b.started,
            "finished": b.finished,
            "status": b.status,
            "recipe": parsed(&b.recipe),
            "revisions": revisions,
            "steps": steps,
            "result": b.result.as_deref().map(parsed),
        });
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(exit_code::OK);
    }
    let header =
        ["STEP", "REVISION", "AT", "PURPOSE", "BUILD", "MEASURE", "VERDICT", "MEAN", "P GOOD", "P BAD", "SUBJECT"];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (n, s) in steps.iter().enumerate() {
        let rev = &revisions[s.revision as usize];
        let run = |r: Option<i64>| r.map_or("-".to_string(), |r| r.to_string());
        let verdict = match (s.purpose, s.verdict) {
            (_, Some(v)) => v.as_str(),
            (BisectPurpose::Endpoint, None) => "-",
            (_, None) => "more",
        };
        let f = figures(s);
        let first = f.first();
        let p = |c: Option<crate::bisect::decide::Comparison>| c.map_or("-".to_string(), |c| format!("{:.2e}", c.p));
        rows.push(vec![
            (n + 1).to_string(),
            rev.short().to_string(),
            s.revision.to_string(),
            s.purpose.to_string(),
            run(s.build_run),
            run(s.measure_run),
            verdict.to_string(),
            first.map_or("-".into(), |f| format!("{:.4} (n {})", f.mean, f.n)),
            p(first.and_then(|f| f.vs_good)),
            p(first.and_then(|f| f.vs_bad)),
            subject(rev).to_string(),
        ]);
    }
    match format {
        BisectFormat::Html => {
            let all: Vec<(usize, Vec<Figures>)> = steps
                .iter()
                .filter(|s| s.purpose != BisectPurpose::Confirm)
                .map(|s| (s.revision as usize, figures(s)))
                .collect();
            let traces = traces(&all);
            let title =
                format!("benchrig bisect {}{}", b.id, b.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default());
            let page = crate::report::bisect_html::render(
                &title,
                &answer_line(&b, &revisions),
                &asked(&b, &revisions),
                &traces,
                &header,
                &rows,
            );
            out!("{page}")?;
            return Ok(exit_code::OK);
        }
        BisectFormat::Md => {
            outln!("# bisect {}: {}\n", b.id, b.status)?;
            outln!("| {} |", header.map(|h| h.to_lowercase()).join(" | "))?;
            outln!("|{}", "---|".repeat(header.len()))?;
            for r in &rows {
                outln!("| {} |", r.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | "))?;
            }
            outln!("")?;
        }
        _ => out!("{}", crate::terminal_table::table(&header, &rows))?,
    }
    outln!("{}", answer_line(&b, &revisions))?;
    Ok(exit_code::OK)
}

/// Each followed series over the measured revisions (by their place in
/// the range), from `steps` (revision, figures; later steps of a revision
/// hold more samples and win).
fn traces(steps: &[(usize, Vec<Figures>)]) -> Vec<Trace> {
    // In the order the series first appear.
    let mut by_series: indexmap::IndexMap<&str, std::collections::BTreeMap<usize, &Figures>> = Default::default();
    for (revision, figures) in steps {
        for f in figures {
            by_series.entry(&f.series).or_default().insert(*revision, f);
        }
    }
    by_series
        .into_iter()
        .map(|(series, points)| Trace {
            series: series.to_string(),
            points: points
                .into_iter()
                .map(|(r, f)| Point { label: r.to_string(), mean: f.mean, ci95: f.ci95 })
                .collect(),
        })
        .collect()
}

/// What a bisect was asked, a line each, as its recipe has it.
fn asked(b: &crate::store::BisectRow, revisions: &[Revision]) -> Vec<String> {
    let Ok(r) = serde_json::from_str::<Recipe>(&b.recipe) else { return vec![] };
    let source = match &r.source {
        Source::Git { repo } => format!("the git repository {} (first parents)", repo.display()),
        Source::Versions { file } => format!("the versions of {}", file.display()),
    };
    let paths = |p: &[std::path::PathBuf]| p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let mut lines = vec![
        format!("{} revisions from {} (good) to {} (bad) of {source}", revisions.len(), r.good, r.bad),
        format!(
            "measured by {} on {}{}",
            r.measure.display(),
            paths(&r.inventory),
            r.limit.as_deref().map(|l| format!(" (-l {l})")).unwrap_or_default()
        ),
        format!(
            "following {}; a change under {}% is none; at most {} samples a series",
            r.metrics.join(", "),
            r.threshold_pct,
            r.max_reps
        ),
        format!(
            "started {}{}",
            crate::report::page::when(&b.started),
            b.finished.as_deref().map(|f| format!(", finished {}", crate::report::page::when(f))).unwrap_or_default()
        ),
    ];
    if let Some(build) = &r.build {
        lines.insert(1, format!("built by {}", build.display()));
    }
    lines
}

/// The answer in a line: the first bad revision with its subject and
/// author, the candidates, or why there is none.
fn answer_line(b: &crate::store::BisectRow, revisions: &[Revision]) -> String {
    let result: serde_json::Value = b.result.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
    let describe = |r: &serde_json::Value| {
        let rev: Option<Revision> = serde_json::from_value(r.clone()).ok();
        rev.map_or("?".into(), |r| {
            let by = r.author.as_deref().map(|a| format!(" ({a})")).unwrap_or_default();
            format!("{} {}{by}", r.id, r.subject.as_deref().unwrap_or(""))
        })
    };
    let head = format!("bisect {}: {}", b.id, b.status);
    match b.status {
        BisectStatus::Found => format!("{head}: the first bad revision is {}", describe(&result["first_bad"])),
        BisectStatus::Ambiguous => {
            let among: Vec<String> = result["first_bad_among"].as_array().into_iter().flatten().map(describe).collect();
            format!("{head}: the first bad revision is one of\n  {}", among.join("\n  "))
        }
        BisectStatus::Unconfirmed => format!(
            "{head}: {} did not confirm: {}",
            describe(&result["unconfirmed"]),
            result["why"].as_str().unwrap_or("")
        ),
        BisectStatus::NoRegression => {
            let figures: Vec<String> = result["series"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| {
                    let f = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
                    format!(
                        "\n  {}: {:+.1}% (p {:.2e}, {})",
                        s["series"].as_str().unwrap_or("?"),
                        f("change_pct"),
                        f("p"),
                        s["outcome"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            let (bad, good) =
                (revisions.last().map_or("?", Revision::short), revisions.first().map_or("?", Revision::short));
            match result["threshold_pct"].as_f64() {
                Some(pct) => format!(
                    "{head}: {bad} is not worse than {good} by {pct}% or more on any followed series (the bad endpoint's median against the good one's):{}",
                    figures.concat()
                ),
                // A record from before the figures were kept.
                None => format!("{head}: {bad} is not worse than {good} by the threshold on any followed series"),
            }
        }
        BisectStatus::Failed => format!("{head}: {}", result["error"].as_str().unwrap_or("")),
        BisectStatus::Running => format!("{head} (stopped part way? `benchrig bisect --resume {}`)", b.id),
    }
}
