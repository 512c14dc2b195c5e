//! The reference (`reference`) laid out: for the terminal (`benchrig doc`,
//! `benchrig doc NAME`, `benchrig doc play`) and as markdown (`--format
//! md`, docs/reference.md).

use super::reference::{ActionDoc, Entry, Level};
use benchrig_wire::args::Better;
use benchrig_wire::metrics::{MetricDecl, Naming, FIO_DIRECTIONS};

/// The width terminal text wraps at.
const WIDTH: usize = 100;

/// `benchrig doc`: a line for each action, workload and play key.
pub fn index(actions: &[ActionDoc], play: &Level) -> String {
    let (workloads, setup): (Vec<&ActionDoc>, Vec<&ActionDoc>) = actions.iter().partition(|a| a.is_workload());
    let names = actions.iter().map(|a| a.name.len()).chain(play.keys.iter().map(|k| k.name.len()));
    let width = names.max().unwrap_or(0) + 2;
    let line = |name: &str, about: &str| format!("  {name:width$}{about}\n");
    let mut out = String::from("Actions (setup and teardown; `benchrig doc NAME` shows one in full):\n");
    setup.iter().for_each(|a| out += &line(a.name, &a.about));
    out += "\nWorkloads (measured: each reports metrics):\n";
    workloads.iter().for_each(|a| out += &line(a.name, &a.about));
    out += "\nA host's `scratch_devices` entries in the inventory: `benchrig doc scratch_devices`.\n";
    out += "\nPlay keys (`benchrig doc play` shows them and every other level's in full):\n";
    play.keys.iter().for_each(|k| out += &line(&k.name, summary(&k.about)));
    out
}

/// A description's first clause, for a listing of one line each.
fn summary(about: &str) -> &str {
    let (mut code, mut depth) = (false, 0);
    for (i, c) in about.char_indices() {
        match c {
            '`' => code = !code,
            '(' if !code => depth += 1,
            ')' if !code => depth -= 1,
            ':' | '.' | ';' if !code && depth == 0 && about[i + 1..].starts_with(' ') => return &about[..i],
            _ => {}
        }
    }
    about.trim_end_matches('.')
}

/// `benchrig doc NAME`: one action or workload in full.
pub fn action(a: &ActionDoc, sizes: &str) -> String {
    let kind = if a.is_workload() { "workload: measured, reports metrics" } else { "action: sets up or tears down" };
    let mut out = format!("{} ({kind})\n\n{}", a.name, wrap(&a.about, 2));
    for check in a.checks() {
        out += &wrap(&format!("{check}."), 2);
    }
    if a.args.is_empty() {
        out += "\nArguments: none.\n";
    } else {
        out += "\nArguments:\n";
        let width = a.args.iter().map(|e| e.name.len()).max().unwrap_or(0) + 2;
        a.args.iter().for_each(|e| out += &entry(e, width));
    }
    if a.is_workload() {
        out += "\nMetrics:\n";
        let width = a.metrics.iter().map(|m| m.shown_name().len()).max().unwrap_or(0).max(4) + 2;
        for m in a.metrics {
            out += &format!("  {:width$}{}, {} is better\n", m.shown_name(), m.unit, better(m.better));
            out += &wrap(m.about, width + 2);
        }
        if let Some(arg) = a.own_metrics {
            out += &format!("  {:width$}{}\n", "…", own_metrics(arg));
        }
        if per_job(a) {
            out += &format!("\n{}", wrap(&per_job_note(), 0));
        }
    }
    if takes_sizes(a) {
        out += &format!("\n{}", wrap(sizes, 0));
    }
    out
}

/// `benchrig doc play`: every level of a playbook and its keys.
pub fn levels(levels: &[Level]) -> String {
    let width = levels.iter().flat_map(|l| &l.keys).map(|k| k.name.len()).max().unwrap_or(0) + 2;
    let mut out = String::new();
    for (i, l) in levels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out += &format!("{} (`{}`)\n{}\n", l.title, l.name, wrap(&l.about, 2));
        l.keys.iter().for_each(|k| out += &entry(k, width));
        for rule in &l.rules {
            out += &wrap(&format!("Rule: {rule}."), 2);
        }
    }
    out
}

/// A key or an argument: its name and what it takes on a line, then what it means.
fn entry(e: &Entry, width: usize) -> String {
    let mut head = e.takes.clone();
    if let Some(unit) = &e.unit {
        head += &format!(" ({unit})");
    }
    if e.required {
        head += "; required";
    } else if let Some(d) = &e.default {
        head += &format!("; default {d}");
    }
    let mut out = format!("  {:width$}{head}\n", e.name);
    out += &wrap(&e.about, width + 2);
    for (value, about) in &e.values {
        out += &wrap(&format!("`{value}`: {about}"), width + 4);
    }
    out
}

fn better(b: Better) -> &'static str {
    b.as_str()
}

fn own_metrics(arg: &str) -> String {
    format!("One more per entry of `{arg}`, with the name, unit and `better` it gives.")
}

/// What `JOB` and `DIRECTION` in a per-job metric's name stand for.
fn per_job_note() -> String {
    let directions: Vec<String> = FIO_DIRECTIONS.iter().map(|d| format!("`{d}`")).collect();
    format!(
        "JOB is the job's name as fio reports it (clones of `numjobs` without `group_reporting`: `name#0`, \
         `name#1`, …); DIRECTION is each of {} that did I/O.",
        directions.join(", ")
    )
}

fn per_job(a: &ActionDoc) -> bool {
    a.metrics.iter().any(|m| m.naming == Naming::PerJobDirection)
}

fn takes_sizes(a: &ActionDoc) -> bool {
    a.args.iter().any(|e| e.unit.as_deref() == Some("bytes"))
}

/// `text` in lines of at most `WIDTH`, each indented by `indent`.
fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent + line.len() + 1 + word.len() > WIDTH {
            out += &format!("{:indent$}{line}\n", "");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line += word;
    }
    if !line.is_empty() {
        out += &format!("{:indent$}{line}\n", "");
    }
    out
}

/// The whole reference as markdown: docs/reference.md.
pub fn markdown(levels: &[Level], actions: &[ActionDoc], sizes: &str) -> String {
    let (workloads, setup): (Vec<&ActionDoc>, Vec<&ActionDoc>) = actions.iter().partition(|a| a.is_workload());
    let mut out = String::from("# benchrig reference\n\n");
    out += "Every playbook key, action and workload: what each takes and does, and the metrics each workload \
            reports. Generated by `benchrig doc --format md` from the tables benchrig's parser reads and the \
            agent reports from: do not edit it, regenerate it with \
            `cargo run -p benchrig -- doc --format md > docs/reference.md` (a test fails when it is not current). \
            On the terminal: `benchrig doc`, `benchrig doc NAME`, `benchrig doc play`.\n\n";
    out += "An action's arguments may also be templates (`{{ size }}`), rendered for each cell before they \
            are checked. ";
    out += &format!("{sizes}\n\n");
    out += "## Contents\n\n";
    let links =
        |titles: Vec<String>| titles.iter().map(|t| format!("[{t}](#{})", slug(t))).collect::<Vec<_>>().join(", ");
    out += &format!(
        "- [Playbook keys](#playbook-keys): {}\n",
        links(levels.iter().map(|l| l.title.to_string()).collect())
    );
    let scratch = super::reference::scratch_devices();
    out += &format!("- [Inventory](#inventory): [{}](#{})\n", scratch.title, slug(scratch.title));
    out += &format!("- [Actions](#actions): {}\n", links(setup.iter().map(|a| format!("`{}`", a.name)).collect()));
    out +=
        &format!("- [Workloads](#workloads): {}\n", links(workloads.iter().map(|a| format!("`{}`", a.name)).collect()));
    out += "\n## Playbook keys\n\n";
    out += &levels_md(levels);
    out += "## Inventory\n\n";
    out += &levels_md(&[scratch]);
    out += "## Actions\n\nThey set up and tear down; they report no metrics.\n\n";
    setup.iter().for_each(|a| out += &action_md(a, sizes));
    out += "## Workloads\n\nMeasured: each reports metrics, stored with every sample.\n\n";
    workloads.iter().for_each(|a| out += &action_md(a, sizes));
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// Every level as markdown, a table of keys each.
pub fn levels_md(levels: &[Level]) -> String {
    let mut out = String::new();
    for l in levels {
        out += &format!("### {}\n\n{}\n\n", l.title, html(&l.about));
        out += "| Key | Takes | Required | Description |\n|---|---|---|---|\n";
        for k in &l.keys {
            out += &row(&[&code(&k.name), &k.takes, yes(k.required), &html(&k.about)]);
        }
        out.push('\n');
        if !l.rules.is_empty() {
            out += "Rules:\n\n";
            l.rules.iter().for_each(|r| out += &format!("- {}.\n", html(r)));
            out.push('\n');
        }
    }
    out
}

/// One action or workload as markdown.
pub fn action_md(a: &ActionDoc, sizes: &str) -> String {
    let mut out = format!("### `{}`\n\n{}\n\n", a.name, html(&a.about));
    for check in a.checks() {
        out += &format!("{}.\n\n", html(&check));
    }
    if a.args.is_empty() {
        out += "Arguments: none.\n\n";
    } else {
        out +=
            "Arguments:\n\n| Argument | Takes | Unit | Default | Required | Description |\n|---|---|---|---|---|---|\n";
        for e in &a.args {
            let mut about = html(&e.about);
            e.values.iter().for_each(|(v, d)| about += &format!("<br>`{v}`: {}", html(d)));
            let default = e.default.as_deref().map(code).unwrap_or_default();
            out +=
                &row(&[&code(&e.name), &e.takes, e.unit.as_deref().unwrap_or(""), &default, yes(e.required), &about]);
        }
        out.push('\n');
        if takes_sizes(a) {
            out += &format!("{sizes}\n\n");
        }
    }
    if a.is_workload() {
        out += "Metrics:\n\n| Metric | Unit | Better | Description |\n|---|---|---|---|\n";
        for m in a.metrics {
            out += &metric_row(m);
        }
        if let Some(arg) = a.own_metrics {
            out += &row(&["…", "", "", &own_metrics(arg)]);
        }
        out.push('\n');
        if per_job(a) {
            out += &format!("{}\n\n", per_job_note());
        }
    }
    out
}

fn metric_row(m: &MetricDecl) -> String {
    row(&[&code(&m.shown_name()), m.unit, better(m.better), &html(m.about)])
}

/// Text outside code spans with `<` escaped, which markdown would take
/// for the start of an HTML tag (`user:<acl_uid>:` would lose its uid).
fn html(text: &str) -> String {
    let mut code = false;
    text.chars()
        .map(|c| {
            code ^= c == '`';
            if c == '<' && !code {
                "&lt;".to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn row(cells: &[&str]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |\n", cells.join(" | "))
}

fn code(s: &str) -> String {
    format!("`{s}`")
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        ""
    }
}

/// A heading's anchor as GitHub makes it: lower case, spaces to hyphens,
/// other punctuation dropped.
fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::reference;

    #[test]
    fn a_listing_line_is_a_descriptions_first_clause() {
        assert_eq!(summary("The hosts the play runs on: a host pattern (`all`)."), "The hosts the play runs on");
        assert_eq!(
            summary("The seed of `cell_order: shuffled` (else: one picked)."),
            "The seed of `cell_order: shuffled` (else: one picked)"
        );
        assert_eq!(summary("Hosts in batches. A number."), "Hosts in batches");
    }

    #[test]
    fn text_wraps_at_the_width_and_keeps_every_word() {
        let text = "word ".repeat(60);
        let wrapped = wrap(&text, 6);
        assert!(wrapped.lines().all(|l| l.len() <= WIDTH && l.starts_with("      w")), "{wrapped}");
        assert_eq!(wrapped.split_whitespace().count(), 60);
    }

    #[test]
    fn an_anchor_is_githubs() {
        assert_eq!(slug("A step's loop_control"), "a-steps-loop_control");
        assert_eq!(slug("`seq_read`"), "seq_read");
        assert_eq!(slug("Playbook keys"), "playbook-keys");
    }

    #[test]
    fn one_workload_in_full_has_its_arguments_and_metrics() {
        let text = action(&reference::action("seq_read").unwrap(), &reference::sizes());
        assert!(text.starts_with("seq_read (workload"), "{text}");
        for want in ["bs", "size (bytes); default 1M", "throughput", "MB/s, higher is better", "A size: "] {
            assert!(text.contains(want), "{want}: {text}");
        }
        let exec = action(&reference::action("exec").unwrap(), "");
        assert!(exec.contains("One more per entry of `metrics`"), "{exec}");
        let drop = action(&reference::action("drop_caches").unwrap(), "");
        assert!(drop.contains("Arguments: none.") && !drop.contains("Metrics"), "{drop}");
    }

    #[test]
    fn a_table_cell_keeps_a_pipe_and_an_angle_bracket_as_written() {
        assert_eq!(row(&["a|b", "c"]), "| a\\|b | c |\n");
        assert_eq!(html("user:<uid>: `a<b`"), "user:&lt;uid>: `a<b`");
    }
}
