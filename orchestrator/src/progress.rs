//! Progress lines for people, one per event worth seeing, prefixed with the host.
//! Kept apart from tracing so `-q` silences progress but not errors. On a
//! terminal they print above the progress bars (see `main`), not through them.

use std::io::Write;

fn print(text: &str) {
    let text = crate::human::printable(text);
    match tracing_indicatif::writer::get_indicatif_stderr_writer() {
        Some(mut w) => {
            let _ = writeln!(w, "{text}");
        }
        None => {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }
}

#[derive(Clone, Copy)]
pub struct Progress {
    pub quiet: bool,
}

impl Progress {
    pub fn line(&self, host: &str, msg: impl AsRef<str>) {
        if !self.quiet {
            print(&format!("[{host}] {}", msg.as_ref()));
        }
    }

    pub fn note(&self, msg: impl AsRef<str>) {
        if !self.quiet {
            print(msg.as_ref());
        }
    }
}

/// A host's progress bar through a play's cells (shown on a terminal only;
/// elsewhere the span is inert).
pub fn host_bar(host: &str, play: &str, visits: usize) -> tracing::Span {
    use tracing_indicatif::span_ext::IndicatifSpanExt;
    // The field's presence (not a value: `= true` is not seen by the filter) asks for a bar.
    let span = tracing::info_span!("host", indicatif.pb_show = tracing::field::Empty, host = %host, play = %play);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{span_fields} {wide_bar} {pos}/{len} visits · {elapsed} · {msg}")
    {
        span.pb_set_style(&style);
    }
    span.pb_set_length(visits as u64);
    span.pb_start();
    span
}
