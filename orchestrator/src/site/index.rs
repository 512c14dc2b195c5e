//! The site's front page: a line per playbook (its history page, what its
//! history found, how many series are too noisy to judge), then the
//! nights, newest first: a line per run with its status, its report, its
//! comparison with its baseline and the changes history found arriving
//! with it.

use super::manifest::Written;
use super::{compare_path, report_path};
use crate::report::page::{self, esc};
use crate::status::RunStatus;
use crate::store::RunRow;

/// A playbook's line.
pub struct PlaybookLine {
    pub playbook: String,
    /// Its history page, from the site's root.
    pub history: String,
    pub runs: usize,
    pub regressions: usize,
    pub improvements: usize,
    /// Regressions nobody acknowledged (`history ack`).
    pub open: usize,
    pub unstable: usize,
}

/// A run's line.
pub struct NightLine<'a> {
    pub run: &'a RunRow,
    pub written: Option<&'a Written>,
    /// Its playbook's history page.
    pub history: String,
    /// Changes history found arriving with this run (stable series only).
    pub regressions: usize,
    pub improvements: usize,
}

fn a(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(text))
}

/// "2 regressions, 1 improvement", red when one regressed; "-" for none.
fn changes(regressions: usize, improvements: usize) -> String {
    let mut words = Vec::new();
    if regressions > 0 {
        words.push(format!("<span class=\"bad\">{regressions} regression(s)</span>"));
    }
    if improvements > 0 {
        words.push(format!("<span class=\"good\">{improvements} improvement(s)</span>"));
    }
    if words.is_empty() {
        "-".into()
    } else {
        words.join(", ")
    }
}

pub fn render(playbooks: &[PlaybookLine], nights: &[NightLine]) -> String {
    let mut out = page::head("benchrig results");
    out += &format!("<p class=\"meta\">{} playbook(s), {} run(s)</p>\n", playbooks.len(), nights.len());
    out += "<h2>Playbooks</h2>\n<table><tr><th>playbook</th><th>runs</th><th>changes in its history</th>\
            <th>open regressions</th><th>unstable series</th></tr>\n";
    for p in playbooks {
        out += &format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n{}\">{}</td><td class=\"n\">{}</td></tr>\n",
            a(&p.history, &p.playbook),
            p.runs,
            changes(p.regressions, p.improvements),
            if p.open > 0 { " bad" } else { "" },
            p.open,
            p.unstable
        );
    }
    out += "</table>\n<h2>Nights</h2>\n<table><tr><th>date</th><th>run</th><th>playbook</th><th>status</th>\
            <th>against its baseline</th><th>changes found</th></tr>\n";
    for n in nights {
        let r = n.run;
        let label = r.name.clone().unwrap_or_else(|| format!("run {}", r.id));
        let report = match n.written {
            Some(w) if w.report => a(&report_path(r.id), &label),
            Some(w) if w.dropped => format!("{} (report not kept)", esc(&label)),
            _ if r.pruned.is_some() => format!("{} (pruned)", esc(&label)),
            _ => esc(&label),
        };
        let against = match n.written.and_then(|w| w.compare.as_ref()) {
            Some(c) => {
                let text = format!("{} regressed, {} improved (run {})", c.regressed, c.improved, c.baseline);
                let class = if c.regressed > 0 { "bad" } else { "" };
                format!("<span class=\"{class}\">{}</span>", a(&compare_path(r.id), &text))
            }
            None => "-".into(),
        };
        let status_class = match r.status {
            RunStatus::Ok => "good",
            RunStatus::Running => "",
            _ => "bad",
        };
        out += &format!(
            "<tr><td>{}</td><td>{report}</td><td>{}</td><td class=\"{status_class}\">{}</td><td>{against}</td><td>{}</td></tr>\n",
            esc(r.started.get(..10).unwrap_or(&r.started)),
            a(&n.history, &r.playbook),
            r.status,
            changes(n.regressions, n.improvements)
        );
    }
    out + "</table>\n" + page::TAIL
}

#[cfg(test)]
mod tests {
    use super::super::manifest::Compared;
    use super::*;

    fn run(id: i64, status: RunStatus, pruned: bool) -> RunRow {
        let started = format!("2026-12-0{id}T00:00:00Z");
        let mut r = crate::store::testing::run_row(id, &format!("night-{id}"), "p.yml", &started, status);
        r.pruned = pruned.then(|| "y".into());
        r
    }

    #[test]
    fn each_night_links_what_it_has_and_says_what_it_has_not() {
        let (old, new, failed) =
            (run(1, RunStatus::Ok, true), run(2, RunStatus::Ok, false), run(3, RunStatus::Failed, false));
        let compared = Written {
            state: "s".into(),
            report: true,
            compare: Some(Compared { baseline: 1, regressed: 2, improved: 0 }),
            dropped: false,
        };
        let plain = Written { state: "s".into(), report: true, compare: None, dropped: false };
        let line = |run, written| NightLine {
            run,
            written,
            history: "history/p-yml.html".into(),
            regressions: 0,
            improvements: 0,
        };
        let mut nights = vec![line(&failed, Some(&plain)), line(&new, Some(&compared)), line(&old, None)];
        nights[1].regressions = 3;
        let pb = PlaybookLine {
            playbook: "p.yml".into(),
            history: "history/p-yml.html".into(),
            runs: 3,
            regressions: 3,
            improvements: 1,
            open: 3,
            unstable: 0,
        };
        let html = render(&[pb], &nights);
        assert!(html.contains("<a href=\"runs/2.html\">night-2</a>"), "{html}");
        assert!(html.contains("<a href=\"compare/2.html\">2 regressed, 0 improved (run 1)</a>"), "{html}");
        assert!(html.contains("night-1 (pruned)") && !html.contains("runs/1.html"), "{html}");
        assert!(html.contains("<td class=\"bad\">failed</td>"), "{html}");
        assert!(html.contains("3 regression(s)") && html.contains("1 improvement(s)"), "{html}");
        assert!(html.contains("<a href=\"history/p-yml.html\">p.yml</a>"));
        assert!(html.contains(page::CSP) && !html.contains("href=\"/"), "relative links, no request");
    }
}
