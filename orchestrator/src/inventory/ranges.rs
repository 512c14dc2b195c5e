//! Host ranges as Ansible writes them: `node[01:16]`, `db-[a:f].lab`, `x[0:10:2]`.

/// Expand every `[start:end(:step)]` in a host name; a name without one is itself.
pub fn expand(pattern: &str) -> Result<Vec<String>, String> {
    let Some(open) = pattern.find('[') else { return Ok(vec![pattern.to_string()]) };
    let close = pattern[open..].find(']').map(|c| c + open).ok_or_else(|| format!("`{pattern}`: unclosed `[`"))?;
    let (head, range, tail) = (&pattern[..open], &pattern[open + 1..close], &pattern[close + 1..]);
    let parts: Vec<&str> = range.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(format!("`{pattern}`: a range is [start:end] or [start:end:step]"));
    }
    let step: usize = match parts.get(2) {
        Some(s) => s.parse().ok().filter(|&s| s > 0).ok_or_else(|| format!("`{pattern}`: bad step `{s}`"))?,
        None => 1,
    };
    let (beg, end) = (parts[0], parts[1]);
    let items: Vec<String> = if let (Ok(b), Ok(e)) = (beg.parse::<u64>(), end.parse::<u64>()) {
        if b > e {
            return Err(format!("`{pattern}`: range start is after its end"));
        }
        // A leading zero fixes the width: [01:16] gives 01..16.
        let width = if beg.len() > 1 && beg.starts_with('0') { beg.len() } else { 0 };
        (b..=e).step_by(step).map(|n| format!("{n:0width$}")).collect()
    } else if beg.len() == 1
        && end.len() == 1
        && beg.chars().all(|c| c.is_ascii_alphabetic())
        && end.chars().all(|c| c.is_ascii_alphabetic())
    {
        let (b, e) = (beg.as_bytes()[0], end.as_bytes()[0]);
        if b > e {
            return Err(format!("`{pattern}`: range start is after its end"));
        }
        (b..=e).step_by(step).map(|c| (c as char).to_string()).collect()
    } else {
        return Err(format!("`{pattern}`: `[{range}]` is neither a numeric nor an alphabetic range"));
    };
    let mut out = Vec::new();
    for item in items {
        for rest in expand(tail)? {
            out.push(format!("{head}{item}{rest}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn numeric_alpha_step_and_nested() {
        assert_eq!(expand("node[01:03]").unwrap(), ["node01", "node02", "node03"]);
        assert_eq!(expand("db-[a:c].lab").unwrap(), ["db-a.lab", "db-b.lab", "db-c.lab"]);
        assert_eq!(expand("x[0:6:3]").unwrap(), ["x0", "x3", "x6"]);
        assert_eq!(expand("r[1:2]c[1:2]").unwrap(), ["r1c1", "r1c2", "r2c1", "r2c2"]);
        assert_eq!(expand("plain").unwrap(), ["plain"]);
    }

    #[test]
    fn bad_ranges_are_errors() {
        for p in ["n[1:", "n[3:1]", "n[1:2:0]", "n[a:3]", "n[1]"] {
            assert!(expand(p).is_err(), "{p}");
        }
    }
}
