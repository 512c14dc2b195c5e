//! Host patterns, as in `hosts:` and `-l`, evaluated as Ansible's
//! `InventoryManager` does: `all`, `*`, groups, hosts, `a:b` or `a,b` (union),
//! `a:&b` (intersection), `a:!b` (exclusion), fnmatch globs, `~regex`
//! (matched at the start, as Python's `re.match`), subscripts (`web[0]`,
//! `web[1:3]`), and `@file` in a limit (one pattern a line).

use super::Inventory;
use indexmap::IndexSet;
use regex::Regex;
use std::collections::HashSet;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PatternError {
    #[error("bad regular expression in host pattern `{0}`: {1}")]
    Regex(String, String),
    #[error("cannot read host list {0}: {1}")]
    File(String, String),
    #[error("no hosts matched the subscripted pattern `{0}`")]
    Subscript(String),
}

/// The hosts a pattern selects, in Ansible's order: the terms' order, each
/// group's hosts as [`Inventory::hosts_of_group`] gives them, each host once.
pub fn select(inv: &Inventory, pattern: &str) -> Result<Vec<String>, PatternError> {
    evaluate(inv, &split(pattern))
}

/// The hosts a `--limit` allows: a pattern whose `@file` terms are replaced
/// by the file's lines, each line one term (Ansible's `subset`).
pub fn limit(inv: &Inventory, pattern: &str) -> Result<Vec<String>, PatternError> {
    let mut terms = Vec::new();
    for t in split(pattern) {
        match t.strip_prefix('@') {
            Some(file) => {
                let text = std::fs::read_to_string(file).map_err(|e| PatternError::File(file.into(), e.to_string()))?;
                terms.extend(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from));
            }
            None => terms.push(t),
        }
    }
    evaluate(inv, &terms)
}

/// Unions first, then intersections, then exclusions; only `&`/`!` terms start from `all`.
fn evaluate(inv: &Inventory, terms: &[String]) -> Result<Vec<String>, PatternError> {
    let kind = |t: &String| match t.chars().next() {
        Some('&') => 1,
        Some('!') => 2,
        _ => 0,
    };
    let mut ordered: Vec<&String> = terms.iter().filter(|t| kind(t) == 0).collect();
    let all = "all".to_string();
    if ordered.is_empty() {
        ordered.push(&all);
    }
    ordered.extend(terms.iter().filter(|t| kind(t) == 1));
    ordered.extend(terms.iter().filter(|t| kind(t) == 2));
    // Each host once, where it first came: a set in insertion order, whose
    // `retain` keeps that order, so selecting stays linear in hosts.
    let mut hosts: IndexSet<String> = IndexSet::new();
    for t in ordered {
        // A term naming a host is that host, even when a group has the name too.
        if inv.hosts.contains_key(t.as_str()) {
            hosts.insert(t.clone());
            continue;
        }
        let that = match_one(inv, &t[if kind(t) == 0 { 0 } else { 1 }..])?;
        match kind(t) {
            1 => {
                let that: HashSet<&String> = that.iter().collect();
                hosts.retain(|h| that.contains(h));
            }
            2 => {
                let that: HashSet<&String> = that.iter().collect();
                hosts.retain(|h| !that.contains(h));
            }
            _ => hosts.extend(that),
        }
    }
    Ok(hosts.into_iter().collect())
}

/// Ansible's `split_host_pattern`: commas if there are any; else one term if
/// it reads as an address (a host, an IP, a range, with an optional port);
/// else `:` and whitespace separate, outside `[...]`.
fn split(pattern: &str) -> Vec<String> {
    let parts: Vec<String> = if pattern.contains(',') {
        pattern.split(',').map(String::from).collect()
    } else if is_address(pattern.trim()) {
        vec![pattern.to_string()]
    } else {
        let re = Regex::new(r"(?:[^\s:\[\]]|\[[^\]]*\])+").expect("valid regex");
        re.find_iter(pattern).map(|m| m.as_str().to_string()).collect()
    };
    parts.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// What Ansible's `parse_address(.., allow_ranges=True)` accepts: an IPv6
/// address (bracketed when a port follows), or a host name or IPv4 address
/// (with `[a:b]` ranges) and an optional `:port`.
fn is_address(s: &str) -> bool {
    if s.parse::<std::net::Ipv6Addr>().is_ok() {
        return true;
    }
    if let Some(rest) = s.strip_prefix('[') {
        if let Some((v6, port)) = rest.split_once("]:") {
            return v6.parse::<std::net::Ipv6Addr>().is_ok() && is_port(port);
        }
    }
    let host = Regex::new(r"^(?:[A-Za-z0-9_-]|\[[A-Za-z0-9]+:[A-Za-z0-9]+(?::[0-9]+)?\])+(?:\.(?:[A-Za-z0-9_-]|\[[A-Za-z0-9]+:[A-Za-z0-9]+(?::[0-9]+)?\])+)*\.?$")
        .expect("valid regex");
    match s.rsplit_once(':') {
        Some((h, port)) if is_port(port) && !h.ends_with(['[', ':']) && host.is_match(h) => true,
        _ => host.is_match(s),
    }
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// One term without its `&`/`!`: its matches, cut by a subscript if it has one.
fn match_one(inv: &Inventory, term: &str) -> Result<Vec<String>, PatternError> {
    let (expr, subscript) = split_subscript(term);
    let hosts = enumerate(inv, expr)?;
    let Some((start, end)) = subscript else { return Ok(hosts) };
    if hosts.is_empty() {
        return Ok(hosts);
    }
    let n = hosts.len() as i64;
    Ok(match end {
        // `[i]`: one host, negative from the end, as Python indexes.
        None => {
            let i = if start < 0 { n + start } else { start };
            if !(0..n).contains(&i) {
                return Err(PatternError::Subscript(term.into()));
            }
            vec![hosts[i as usize].clone()]
        }
        // `[a:b]` is inclusive; `[a:]` runs to the end; out of range is cut (Python slicing).
        Some(end) => {
            let end = if end == -1 { n - 1 } else { end };
            let (a, b) = (start.clamp(0, n) as usize, end.saturating_add(1).clamp(0, n) as usize);
            hosts.get(a..b.max(a)).unwrap_or_default().to_vec()
        }
    })
}

/// `web[1]`, `web[0:2]`, `web[1:]` (end -1 meaning the last); not for a regex.
fn split_subscript(term: &str) -> (&str, Option<(i64, Option<i64>)>) {
    if term.starts_with('~') {
        return (term, None);
    }
    let re = Regex::new(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)[:-]([0-9]*))\]$").expect("valid regex");
    let Some(c) = re.captures(term) else { return (term, None) };
    let base = c.get(1).map_or(term, |m| m.as_str());
    let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<i64>().ok());
    match (num(2), num(3)) {
        (Some(i), _) => (base, Some((i, None))),
        // Python's `if end:` treats an end of 0 as "just the start".
        (None, Some(a)) => match c.get(4).map(|m| m.as_str()).unwrap_or("") {
            "" => (base, Some((a, Some(-1)))),
            e => match e.parse::<i64>().unwrap_or(0) {
                0 => (base, Some((a, None))),
                e => (base, Some((a, Some(e)))),
            },
        },
        _ => (term, None),
    }
}

/// Groups whose name matches give all their hosts; host names are tried when
/// no group matched, or the term is a glob or regex (or has a dot).
fn enumerate(inv: &Inventory, term: &str) -> Result<Vec<String>, PatternError> {
    let re = match term.strip_prefix('~') {
        Some(r) => Regex::new(&format!("^(?:{r})")),
        None => Regex::new(&fnmatch_to_regex(term)),
    }
    .map_err(|e| PatternError::Regex(term.into(), regex_error(&e)))?;
    let mut out = Vec::new();
    let groups: Vec<&String> = inv.groups.keys().filter(|g| re.is_match(g)).collect();
    for g in &groups {
        out.extend(inv.hosts_of_group(g));
    }
    if groups.is_empty() || term.starts_with('~') || term.contains(['.', '?', '*', '[']) {
        out.extend(inv.hosts.keys().filter(|h| re.is_match(h)).cloned());
    }
    Ok(out)
}

/// The regex crate's own words on one line (its message draws the pattern
/// with a caret over several lines, which reads badly inside ours).
fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text.lines().last().unwrap_or_default();
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}

/// Python's `fnmatch.translate`: `*`, `?`, `[seq]`, `[!seq]`; the whole name must match.
fn fnmatch_to_regex(glob: &str) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut re = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                // The class ends at the first `]` after a leading `!` or `]`.
                let mut j = i;
                if chars.get(j) == Some(&'!') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    re.push_str(r"\[");
                    continue;
                }
                let mut class: String = chars[i..j].iter().collect();
                i = j + 1;
                let negated = class.starts_with('!');
                if negated {
                    class.remove(0);
                }
                re.push('[');
                if negated {
                    re.push('^');
                }
                for (k, ch) in class.chars().enumerate() {
                    // `-` keeps making ranges; what else is special in a Rust class is escaped.
                    if matches!(ch, '\\' | '[' | ']' | '&' | '~' | '|') || (ch == '^' && k == 0 && !negated) {
                        re.push('\\');
                    }
                    re.push(ch);
                }
                re.push(']');
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push_str(r"\z");
    re
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab() -> Inventory {
        let mut inv = Inventory::empty();
        for (g, h) in [("old", "old1"), ("fast", "fast1"), ("fast", "fast2"), ("ssd", "fast2"), ("ssd", "db.lab")] {
            inv.add_host_to_group(g, h);
        }
        for g in ["old", "fast", "ssd"] {
            inv.add_child("all", g);
        }
        inv
    }

    #[test]
    fn unions_intersections_exclusions_in_ansible_order() {
        let inv = lab();
        assert_eq!(select(&inv, "all").unwrap(), ["old1", "fast1", "fast2", "db.lab"]);
        assert_eq!(select(&inv, "fast:old").unwrap(), ["fast1", "fast2", "old1"], "terms keep their order");
        assert_eq!(select(&inv, "fast:&ssd").unwrap(), ["fast2"]);
        assert_eq!(select(&inv, "all:!fast").unwrap(), ["old1", "db.lab"]);
        assert_eq!(select(&inv, "!fast:all").unwrap(), ["old1", "db.lab"], "exclusions apply last");
        assert_eq!(select(&inv, "fast2,old1").unwrap(), ["fast2", "old1"]);
        assert_eq!(select(&inv, "!fast").unwrap(), ["old1", "db.lab"], "only exclusions start from all");
        assert_eq!(select(&inv, "fast old").unwrap(), ["fast1", "fast2", "old1"], "whitespace separates too");
    }

    #[test]
    fn globs_regex_and_subscripts() {
        let inv = lab();
        assert_eq!(select(&inv, "fast*").unwrap(), ["fast1", "fast2"]);
        assert_eq!(select(&inv, "~(old|db)").unwrap(), ["old1", "db.lab"]);
        assert_eq!(select(&inv, "~ast").unwrap(), Vec::<String>::new(), "a regex matches at the start");
        assert_eq!(select(&inv, "*.lab").unwrap(), ["db.lab"]);
        assert_eq!(select(&inv, "fast[!1]").unwrap(), ["fast2"]);
        assert_eq!(select(&inv, "fast[1]").unwrap(), ["fast2"], "a subscript, not a range");
        assert_eq!(select(&inv, "fast[-1]").unwrap(), ["fast2"]);
        assert_eq!(select(&inv, "all[1:2]").unwrap(), ["fast1", "fast2"]);
        assert_eq!(select(&inv, "fast[5]"), Err(PatternError::Subscript("fast[5]".into())));
        assert!(select(&inv, "nothing").unwrap().is_empty());
        assert!(matches!(select(&inv, "~("), Err(PatternError::Regex(..))));
    }

    /// `evaluate` as it was: lists, scanned for what they hold.
    fn evaluate_by_scan(inv: &Inventory, terms: &[String]) -> Result<Vec<String>, PatternError> {
        let kind = |t: &String| match t.chars().next() {
            Some('&') => 1,
            Some('!') => 2,
            _ => 0,
        };
        let mut ordered: Vec<&String> = terms.iter().filter(|t| kind(t) == 0).collect();
        let all = "all".to_string();
        if ordered.is_empty() {
            ordered.push(&all);
        }
        ordered.extend(terms.iter().filter(|t| kind(t) == 1));
        ordered.extend(terms.iter().filter(|t| kind(t) == 2));
        let mut hosts: Vec<String> = Vec::new();
        for t in ordered {
            if inv.hosts.contains_key(t.as_str()) {
                hosts.push(t.clone());
                continue;
            }
            let that = match_one(inv, &t[if kind(t) == 0 { 0 } else { 1 }..])?;
            match kind(t) {
                1 => hosts.retain(|h| that.contains(h)),
                2 => hosts.retain(|h| !that.contains(h)),
                _ => hosts.extend(that.into_iter().filter(|h| !hosts.contains(h)).collect::<Vec<_>>()),
            }
        }
        let mut unique: Vec<String> = Vec::new();
        for h in hosts {
            if !unique.contains(&h) {
                unique.push(h);
            }
        }
        Ok(unique)
    }

    #[test]
    fn selecting_through_sets_gives_what_the_scans_gave_in_the_same_order() {
        let mut compared = 0;
        for (name, inv, patterns) in crate::inventory::tests::inventories_to_compare() {
            for p in patterns.iter().filter(|p| !p.contains('@')) {
                assert_eq!(select(&inv, p), evaluate_by_scan(&inv, &split(p)), "{name}: `{p}`");
                compared += 1;
            }
        }
        assert!(compared > 500, "only {compared} patterns compared");
    }

    #[test]
    fn at_file_only_in_a_limit() {
        let inv = lab();
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), "fast1\n\nold\n!fast2\n").unwrap();
        let at = format!("@{}", f.path().display());
        assert_eq!(limit(&inv, &at).unwrap(), ["fast1", "old1"]);
        assert!(select(&inv, &at).unwrap().is_empty(), "a play's hosts: has no @file");
    }

    #[test]
    fn a_list_naming_itself_is_a_pattern_not_a_recursion() {
        // As Ansible's `subset`: a list's lines are patterns, never read as
        // further lists, so a file naming itself cannot recurse; its `@` line
        // matches no host.
        let inv = lab();
        let f = tempfile::NamedTempFile::new().unwrap();
        let me = format!("@{}", f.path().display());
        std::fs::write(f.path(), format!("fast1\n{me}\n")).unwrap();
        assert_eq!(limit(&inv, &me).unwrap(), ["fast1"]);
    }

    #[test]
    fn huge_subscripts_are_cut_as_python_slices() {
        let inv = lab();
        assert_eq!(select(&inv, "fast[0:9223372036854775807]").unwrap(), ["fast1", "fast2"]);
        assert!(matches!(select(&inv, "fast[-9223372036854775808]"), Err(PatternError::Subscript(..))));
    }

    #[test]
    fn regex_errors_are_one_line() {
        let e = select(&lab(), "web:~(unclosed").unwrap_err().to_string();
        assert_eq!(e, "bad regular expression in host pattern `~(unclosed`: unclosed group");
    }

    #[test]
    fn addresses_are_one_term() {
        assert_eq!(split("fe80::1"), ["fe80::1"]);
        assert_eq!(split("node[1:3]"), ["node[1:3]"]);
        assert_eq!(split("web1:2222"), ["web1:2222"]);
        assert_eq!(split("a:b:!c"), ["a", "b", "!c"]);
        assert_eq!(split("a:b,c"), ["a:b", "c"]);
    }
}
