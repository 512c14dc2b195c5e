//! Progress lines for people, one per event worth seeing, prefixed with the host.
//! Kept apart from tracing so `-q` silences progress but not errors.

use std::io::Write;

#[derive(Clone, Copy)]
pub struct Reporter {
    pub quiet: bool,
}

impl Reporter {
    pub fn line(&self, host: &str, msg: impl AsRef<str>) {
        if !self.quiet {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "[{host}] {}", msg.as_ref());
        }
    }

    pub fn note(&self, msg: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", msg.as_ref());
        }
    }
}
