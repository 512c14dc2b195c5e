//! `benchrig site -o DIR`: the results as a static site (`crate::site`).
//! Each finished run not yet written (or written from another state of
//! it) gets its report and its comparison with its automatic baseline;
//! every playbook gets its history page, and the index is written last.
//! A page is replaced by a rename, so a web server serving DIR never
//! sends half a page; one whose text is unchanged is left alone.

use crate::cli::{DbArgs, HistoryQuery, SiteArgs};
use crate::compare::{compare, Options, Verdict};
use crate::history::alerts;
use crate::history::analyze::Direction;
use crate::history::html::Links;
use crate::site::index::{NightLine, PlaybookLine};
use crate::site::manifest::{self, Compared, Manifest, Written};
use crate::site::{compare_path, history_path, index, report_path};
use crate::store::{RunRow, Store};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

pub fn run(args: SiteArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let dir = &args.output;
    let manifest_file = dir.join(manifest::FILE);
    let mut manifest: Manifest = match std::fs::read_to_string(&manifest_file) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}; not a site benchrig wrote (remove it to write the site anew)",
                manifest_file.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
        Err(e) => anyhow::bail!("cannot read {}: {e}", manifest_file.display()),
    };
    let runs = store.runs()?;
    let opts = Options { threshold_pct: args.threshold, alpha: args.alpha };
    let mut reports = 0;
    let kept = manifest::kept(&runs, args.keep_last);
    // Pages of runs the site no longer keeps go first (a year of nights
    // is gigabytes of pages: a Pages site holds one).
    let mut dropped = 0;
    for (id, w) in manifest.runs.iter_mut().filter(|(id, w)| !kept.contains(id) && !w.dropped) {
        for page in [report_path(*id), compare_path(*id)] {
            remove(dir, &page)?;
        }
        (w.report, w.compare, w.dropped) = (false, None, true);
        dropped += 1;
    }
    let stale: Vec<&RunRow> = runs.iter().filter(|r| kept.contains(&r.id) && manifest::stale(&manifest, r)).collect();
    for r in stale {
        let json = crate::report::json::build(&store, r.id)?;
        write(dir, &report_path(r.id), &crate::report::html::render(&json))?;
        let compared = match super::compare::automatic_baseline(&store, r.id)? {
            Some(base) => {
                let (_, base_data) = super::compare::load(&store, &base.to_string())?;
                let (_, new_data) = super::compare::load(&store, &r.id.to_string())?;
                let rows = compare(&base_data, &new_data, opts);
                let summary = super::compare::summary(&rows, base, r.id, opts);
                write(dir, &compare_path(r.id), &super::compare::html(&store, (base, r.id), &rows, &summary)?)?;
                let count = |v: Verdict| rows.iter().filter(|x| x.verdict == v).count();
                Some(Compared {
                    baseline: base,
                    regressed: count(Verdict::Regressed),
                    improved: count(Verdict::Improved),
                })
            }
            None => {
                // Written again without a baseline (its own was pruned, say): no stale comparison stays.
                remove(dir, &compare_path(r.id))?;
                None
            }
        };
        manifest
            .runs
            .insert(r.id, Written { state: manifest::state(r), report: true, compare: compared, dropped: false });
        reports += 1;
    }
    // The manifest first: a site cut off here writes these runs once, not twice.
    write(dir, manifest::FILE, &serde_json::to_string_pretty(&manifest)?)?;

    let mut by_playbook: BTreeMap<&str, Vec<&RunRow>> = BTreeMap::new();
    for r in &runs {
        by_playbook.entry(r.playbook.as_str()).or_default().push(r);
    }
    let mut playbooks = Vec::new();
    let mut arrived: HashMap<i64, (usize, usize)> = HashMap::new();
    let mut pages = 0;
    for (playbook, its_runs) in &by_playbook {
        let page = history_path(playbook);
        let query = HistoryQuery {
            playbook: None,
            name: None,
            from: None,
            to: None,
            last: args.last,
            metric: Vec::new(),
            settings: args.settings.clone(),
            db: DbArgs { db: args.db.db.clone() },
        };
        let mut line = PlaybookLine {
            playbook: playbook.to_string(),
            history: page.clone(),
            runs: its_runs.len(),
            regressions: 0,
            improvements: 0,
            open: 0,
            unstable: 0,
        };
        // A playbook with no finished run yet has no history to draw.
        if its_runs.iter().any(|r| r.status != crate::status::RunStatus::Running) {
            // Its page is of this stored path alone: `q.yml`'s is not `dir/q.yml`'s too.
            let exactly = Some(crate::history::select::PlaybookChoice::Stored(playbook.to_string()));
            let (hruns, analyses) = super::history::analysed_of(&store, &query, exactly)?;
            let links = SiteLinks(&manifest);
            pages += write(dir, &page, &crate::history::html::render(&hruns, &analyses, &links))? as usize;
            for (a, c) in crate::history::analyze::stable_changes(&analyses) {
                let counts = arrived.entry(hruns[a.series.points[c.at].run].row.id).or_default();
                match c.direction {
                    Direction::Regression => (counts.0 += 1, line.regressions += 1),
                    Direction::Improvement => (counts.1 += 1, line.improvements += 1),
                };
            }
            line.open = alerts::regressions(&analyses).filter(|(_, c)| c.reported.acked.is_none()).count();
            line.unstable = analyses.iter().filter(|a| a.unstable_cv.is_some()).count();
        }
        playbooks.push(line);
    }
    let nights: Vec<NightLine> = runs
        .iter()
        .rev()
        .map(|r| {
            let (regressions, improvements) = arrived.get(&r.id).copied().unwrap_or_default();
            NightLine {
                run: r,
                written: manifest.runs.get(&r.id),
                history: history_path(&r.playbook),
                regressions,
                improvements,
            }
        })
        .collect();
    write(dir, "index.html", &index::render(&playbooks, &nights))?;
    eprintln!(
        "site: {reports} run(s) written, {} kept from before, {dropped} taken out (--keep-last {}); \
         {pages} of {} history page(s) changed; {}",
        manifest.runs.values().filter(|w| w.report).count() - reports,
        args.keep_last,
        playbooks.len(),
        dir.join("index.html").display()
    );
    Ok(crate::exit_code::OK)
}

/// The history pages' links, from `history/`: a run's report and its
/// comparison, when the site has them.
struct SiteLinks<'a>(&'a Manifest);

impl Links for SiteLinks<'_> {
    fn report(&self, run: &RunRow) -> Option<String> {
        self.0.runs.get(&run.id).filter(|w| w.report).map(|_| format!("../{}", report_path(run.id)))
    }
    fn compare(&self, run: &RunRow) -> Option<String> {
        self.0.runs.get(&run.id)?.compare.as_ref().map(|_| format!("../{}", compare_path(run.id)))
    }
}

/// Remove `dir/rel`, if it is there.
fn remove(dir: &Path, rel: &str) -> anyhow::Result<()> {
    match std::fs::remove_file(dir.join(rel)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            anyhow::bail!("cannot remove {}: {e}", dir.join(rel).display())
        }
        _ => Ok(()),
    }
}

/// Write `text` to `dir/rel` by a rename, unless it already says that.
/// Whether it wrote.
fn write(dir: &Path, rel: &str, text: &str) -> anyhow::Result<bool> {
    let path = dir.join(rel);
    if std::fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(false);
    }
    let parent = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    let tmp = tempfile::NamedTempFile::new_in(parent)
        .map_err(|e| anyhow::anyhow!("cannot write in {}: {e}", parent.display()))?;
    std::fs::write(tmp.path(), text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", tmp.path().display()))?;
    // A web server reads pages as any user: the temporary file's 0600 would hide them.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))?;
    tmp.persist(&path).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(true)
}
