//! Host patterns, as in `hosts:` and `-l`: `all`, `*`, groups, hosts, `a:b`
//! (union), `a:&b` (intersection), `a:!b` (exclusion), globs, `~regex`, and
//! `@file` (one pattern a line).

use super::Inventory;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PatternError {
    #[error("bad regular expression in host pattern `{0}`: {1}")]
    Regex(String, String),
    #[error("cannot read host list {0}: {1}")]
    File(String, String),
}

/// The hosts a pattern selects, in inventory order.
pub fn select(inv: &Inventory, pattern: &str) -> Result<Vec<String>, PatternError> {
    let mut terms = split(pattern);
    // Only exclusions or intersections (`!old`): as Ansible, start from all hosts.
    if terms.iter().all(|t| t.starts_with('&') || t.starts_with('!')) {
        terms.insert(0, "all".into());
    }
    let mut chosen: Vec<String> = Vec::new();
    // Ansible's order: unions first, then intersections, then exclusions.
    for t in terms.iter().filter(|t| !t.starts_with('&') && !t.starts_with('!')) {
        for h in matches(inv, t)? {
            if !chosen.contains(&h) {
                chosen.push(h);
            }
        }
    }
    for t in terms.iter().filter(|t| t.starts_with('&')) {
        let keep = matches(inv, &t[1..])?;
        chosen.retain(|h| keep.contains(h));
    }
    for t in terms.iter().filter(|t| t.starts_with('!')) {
        let drop = matches(inv, &t[1..])?;
        chosen.retain(|h| !drop.contains(h));
    }
    Ok(inv.hosts.keys().filter(|h| chosen.contains(h)).cloned().collect())
}

/// Split on `,` and on `:` outside brackets (ranges) and not in an IPv6-looking term.
fn split(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in pattern.split(',') {
        let part = part.trim();
        // A regex, or an IPv6 address, is one term whatever its colons.
        if part.starts_with('~') || part.trim_start_matches(['!', '&']).parse::<std::net::Ipv6Addr>().is_ok() {
            out.push(part.to_string());
            continue;
        }
        let mut cur = String::new();
        let mut depth = 0;
        for c in part.chars() {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                ':' if depth == 0 => {
                    out.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        out.push(cur);
    }
    out.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

fn matches(inv: &Inventory, term: &str) -> Result<Vec<String>, PatternError> {
    if let Some(file) = term.strip_prefix('@') {
        let text = std::fs::read_to_string(file).map_err(|e| PatternError::File(file.into(), e.to_string()))?;
        let mut out = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            // As Ansible, a list's lines are patterns, not further lists; reading
            // them as lists let a file naming itself recurse until the stack overflowed.
            if line.starts_with('@') {
                return Err(PatternError::File(file.into(), format!("`{line}`: a host list cannot name another list")));
            }
            out.extend(matches(inv, line)?);
        }
        return Ok(out);
    }
    if term == "all" || term == "*" {
        return Ok(inv.hosts.keys().cloned().collect());
    }
    let is_regex = term.starts_with('~');
    let matcher: Box<dyn Fn(&str) -> bool> = if is_regex {
        let re = regex::Regex::new(&term[1..]).map_err(|e| PatternError::Regex(term.into(), regex_error(&e)))?;
        Box::new(move |s| re.is_match(s))
    } else if term.contains(['*', '?', '[']) {
        let re =
            regex::Regex::new(&glob_to_regex(term)).map_err(|e| PatternError::Regex(term.into(), regex_error(&e)))?;
        Box::new(move |s| re.is_match(s))
    } else {
        let t = term.to_string();
        Box::new(move |s| s == t)
    };
    let mut out = Vec::new();
    let groups: Vec<&String> = inv.groups.keys().filter(|g| matcher(g)).collect();
    for g in &groups {
        out.extend(inv.hosts_of_group(g));
    }
    // As Ansible: host names are tried when no group matched, or the term is a glob/regex.
    if groups.is_empty() || is_regex || term.contains(['.', '*', '?', '[']) {
        out.extend(inv.hosts.keys().filter(|h| matcher(h)).cloned());
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

fn glob_to_regex(glob: &str) -> String {
    let mut re = String::from("^");
    for c in glob.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' | ']' => re.push(c),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    re
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab() -> Inventory {
        let mut inv = Inventory::default();
        for (g, h) in [("old", "old1"), ("fast", "fast1"), ("fast", "fast2"), ("ssd", "fast2"), ("ssd", "db.lab")] {
            inv.add_host_to_group(g, h);
        }
        inv.add_child("all", "old");
        inv
    }

    #[test]
    fn unions_intersections_exclusions() {
        let inv = lab();
        assert_eq!(select(&inv, "all").unwrap(), ["old1", "fast1", "fast2", "db.lab"]);
        assert_eq!(select(&inv, "old:fast").unwrap(), ["old1", "fast1", "fast2"]);
        assert_eq!(select(&inv, "fast:&ssd").unwrap(), ["fast2"]);
        assert_eq!(select(&inv, "all:!fast").unwrap(), ["old1", "db.lab"]);
        assert_eq!(select(&inv, "!fast:all").unwrap(), ["old1", "db.lab"], "exclusions apply last");
        assert_eq!(select(&inv, "old1,fast2").unwrap(), ["old1", "fast2"]);
        assert_eq!(select(&inv, "!fast").unwrap(), ["old1", "db.lab"], "only exclusions start from all");
        assert_eq!(select(&inv, "old1:fast1:fast2:db.lab").unwrap(), ["old1", "fast1", "fast2", "db.lab"]);
    }

    #[test]
    fn globs_and_regex() {
        let inv = lab();
        assert_eq!(select(&inv, "fast*").unwrap(), ["fast1", "fast2"]);
        assert_eq!(select(&inv, "~^(old|db)").unwrap(), ["old1", "db.lab"]);
        assert_eq!(select(&inv, "*.lab").unwrap(), ["db.lab"]);
        assert!(select(&inv, "nothing").unwrap().is_empty());
        assert!(matches!(select(&inv, "~("), Err(PatternError::Regex(..))));
    }

    #[test]
    fn at_file() {
        let inv = lab();
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), "fast1\n# comment\nold\n").unwrap();
        assert_eq!(select(&inv, &format!("@{}", f.path().display())).unwrap(), ["old1", "fast1"]);
    }

    #[test]
    fn a_list_naming_itself_is_an_error_not_a_stack_overflow() {
        let inv = lab();
        let f = tempfile::NamedTempFile::new().unwrap();
        let me = format!("@{}", f.path().display());
        std::fs::write(f.path(), format!("fast1\n{me}\n")).unwrap();
        let e = select(&inv, &me).unwrap_err();
        assert!(e.to_string().contains("cannot name another list"), "{e}");
    }
}
