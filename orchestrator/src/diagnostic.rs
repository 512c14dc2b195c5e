//! What a person is told when a file they wrote is wrong: where
//! (`SourceFile`, `Loc`: file, line, column), what (`ConfigError`, which
//! quotes the line and points at the column), and what they may have meant
//! (`suggest`, `did_you_mean`). Every parser reports through it.

use std::fmt;
use std::sync::Arc;

/// A source file kept in memory for quoting lines in errors.
#[derive(Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

#[derive(Clone, Debug)]
pub struct Loc {
    pub src: Arc<SourceFile>,
    pub line: u32,
    pub col: u32,
}

impl Loc {
    pub fn line_text(&self) -> Option<&str> {
        self.src.text.lines().nth(self.line.checked_sub(1)? as usize)
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.src.name, self.line, self.col)
    }
}

/// A problem in a file a person wrote: where, what, and maybe a hint.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub message: String,
    /// The line, to quote (boxed: the error stays small enough to return by value).
    pub quoted: Option<Box<str>>,
    pub hint: Option<String>,
    /// Set when the problem is a template's undefined values.
    pub undefined: Option<Box<Undefined>>,
}

/// Values a template used that its context lacked: which, and the template
/// as the error shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undefined {
    pub missing: Vec<String>,
    pub template: String,
}

impl Undefined {
    /// Whether the template names `word` as a whole word: a variable
    /// (`facts.cpus`) or an attribute (`hostvars[h].facts`), not a longer
    /// name that contains it (`facts_size`).
    pub fn names(&self, word: &str) -> bool {
        let boundary = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        self.template.match_indices(word).any(|(at, _)| {
            boundary(self.template[..at].chars().next_back())
                && boundary(self.template[at + word.len()..].chars().next())
        })
    }
}

impl ConfigError {
    pub fn at(loc: &Loc, message: impl Into<String>) -> Self {
        ConfigError {
            file: loc.src.name.clone(),
            line: loc.line,
            col: loc.col,
            message: message.into(),
            quoted: loc.line_text().map(Box::from),
            hint: None,
            undefined: None,
        }
    }

    /// An error about a whole file (it cannot be read, say).
    pub fn file(file: &str, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.into(),
            line: 0,
            col: 0,
            message: message.into(),
            quoted: None,
            hint: None,
            undefined: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_undefined(mut self, undefined: Undefined) -> Self {
        self.undefined = Some(Box::new(undefined));
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "{}: {}", self.file, self.message);
        }
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.col, self.message)?;
        if let Some(q) = &self.quoted {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            write!(f, "\n{pad} |\n{num} | {q}\n{pad} | {}^", " ".repeat(self.col.saturating_sub(1) as usize))?;
        }
        if let Some(h) = &self.hint {
            write!(f, "\n  = help: {h}")?;
        }
        Ok(())
    }
}

/// The candidates closest to a misspelt `word`, if any is close enough to suggest.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .collect();
    let best = scored.iter().map(|(d, _)| *d).min();
    scored.into_iter().filter(|(d, _)| Some(*d) == best).map(|(_, c)| c).collect()
}

/// "did you mean `x`?" for a near miss, or the full list when nothing is near.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    let quoted = |v: &[&str]| v.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>();
    match suggest(word, candidates.iter().copied()).as_slice() {
        [] => format!("valid: {}", quoted(candidates).join(", ")),
        [one] => format!("did you mean `{one}`?"),
        many => format!("did you mean one of {}?", quoted(many).join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undefined_value_names_a_word_only_as_a_whole_word() {
        let u = |t: &str| Undefined { missing: vec![], template: t.into() };
        assert!(u("{{ facts.cpus * 2 }}").names("facts"));
        assert!(u("when: hostvars[roles.server].facts.memory_bytes > 0").names("facts"));
        assert!(!u("{{ facts_size }}").names("facts"));
        assert!(!u("{{ myfacts.cpus }}").names("facts"));
    }
}
