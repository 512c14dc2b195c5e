//! Every exit code benchrig ends with, in one place: scripts and nightly
//! jobs branch on them, so each means one thing. `benchrig --help` and
//! README.md list them ([`HELP`]); keep the three in step.
//!
//! They follow Ansible's where Ansible has one (2 failed, 4 unreachable),
//! and the shell's for signals (128 + the signal number). A bad flag is 1,
//! not clap's own 2: `main` parses with `try_get_matches_from`. SIGPIPE
//! stays ignored, so a closed stdout is an `io::Error` (commands print with
//! `out!`/`outln!`, which return it) that `main` ends on quietly with 141.

/// Everything asked for was done: every cell ok, no regression found.
pub const OK: i32 = 0;

/// A usage or configuration error: an unknown flag or a bad value on the
/// command line, a playbook or inventory that does not parse or plan, a
/// database that cannot be opened. Reported before any host is touched,
/// where it can be.
pub const USAGE: i32 = 1;

/// A cell failed (or `facts`, `ping`, `cleanup` failed on a host): the
/// benchmark ran, and something in it did not work.
pub const CELL_FAILED: i32 = 2;

/// `compare --fail-on-regression` found a metric that regressed.
pub const REGRESSED: i32 = 3;

/// A host could not be reached, or was lost during the run.
pub const UNREACHABLE: i32 = 4;

/// `run` could not have its hosts: another run holds one (a lease in the
/// store), and `--wait-for-hosts` was 0 or ran out. Nothing ran; try later.
pub const HOSTS_BUSY: i32 = 5;

/// A play's kernel did not boot on a host (`kernel:`): its cells there
/// are `not_booted`, and the host is back on its own kernel. The kernel
/// under test is the finding, more serious than a failed cell.
pub const NOT_BOOTED: i32 = 6;

/// Interrupted (Ctrl-C; 128 + SIGINT): the running steps were cancelled and
/// torn down, and what did not run is stored as skipped.
pub const INTERRUPTED: i32 = 130;

/// Standard output was closed early (`benchrig runs | head`; 128 +
/// SIGPIPE, what the shell shows for a `cat` killed that way). Quiet:
/// whoever closed it did not want the rest.
pub const BROKEN_PIPE: i32 = 141;

/// Least to most serious. A regression is a measured result; a failed cell
/// is a result missing; an unreachable host is every cell of it missing; a
/// usage error means nothing meaningful ran; an interruption or a closed
/// stdout means nobody is waiting for the verdict.
const SEVERITY: [i32; 9] =
    [OK, REGRESSED, CELL_FAILED, NOT_BOOTED, UNREACHABLE, HOSTS_BUSY, USAGE, INTERRUPTED, BROKEN_PIPE];

fn severity(code: i32) -> usize {
    // A code not in the table is a bug elsewhere; let it through rather than hide it.
    SEVERITY.iter().position(|&c| c == code).unwrap_or(SEVERITY.len())
}

/// The most serious of `codes` (OK when there are none): a run with a
/// failed cell and an unreachable host exits with UNREACHABLE.
pub fn most_serious(codes: impl IntoIterator<Item = i32>) -> i32 {
    codes.into_iter().max_by_key(|&c| severity(c)).unwrap_or(OK)
}

/// The code for an error that ended a command: BROKEN_PIPE when stdout was
/// closed under it (an `io::Error` of that kind anywhere in the chain),
/// HOSTS_BUSY when another run holds its hosts, else USAGE.
pub fn for_error(e: &anyhow::Error) -> i32 {
    if is_broken_pipe(e) {
        BROKEN_PIPE
    } else if e.chain().any(|c| c.is::<QuitAtOnce>()) {
        INTERRUPTED
    } else if e.chain().any(|c| c.is::<crate::store::HostsBusy>()) {
        HOSTS_BUSY
    } else {
        USAGE
    }
}

/// A second Ctrl-C: the command stopped waiting for its teardown.
#[derive(Debug, thiserror::Error)]
#[error("interrupted again: quit without waiting for the teardown (each agent undoes its own as its channel closes)")]
pub struct QuitAtOnce;

pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// The table `benchrig --help` ends with.
pub const HELP: &str = "\
Exit codes:
  0    ok: every cell ok, no regression found
  1    usage or configuration error (bad flag, playbook, inventory, database)
  2    a cell failed (facts, ping, cleanup: a host failed; bisect: the culprit did not confirm)
  3    compare --fail-on-regression found a regression (bisect: no regression in the range)
  4    a host was unreachable (wins over 2)
  5    run: another run holds a host (see --wait-for-hosts, benchrig lab)
  6    run: a play's kernel did not boot on a host (wins over 2; 4 wins over it)
  130  interrupted (Ctrl-C)
  141  stdout was closed early (broken pipe)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_serious_code_wins_whatever_the_order() {
        assert_eq!(most_serious([]), OK);
        assert_eq!(most_serious([OK, OK]), OK);
        assert_eq!(most_serious([CELL_FAILED, OK]), CELL_FAILED);
        assert_eq!(most_serious([REGRESSED, CELL_FAILED]), CELL_FAILED);
        // Ansible's rule: unreachable beats failed, in either order.
        assert_eq!(most_serious([CELL_FAILED, UNREACHABLE]), UNREACHABLE);
        assert_eq!(most_serious([UNREACHABLE, CELL_FAILED]), UNREACHABLE);
        assert_eq!(most_serious([UNREACHABLE, USAGE, CELL_FAILED]), USAGE);
        assert_eq!(most_serious([INTERRUPTED, UNREACHABLE, CELL_FAILED]), INTERRUPTED);
        assert_eq!(most_serious([BROKEN_PIPE, INTERRUPTED]), BROKEN_PIPE);
        // Each code outranks every one before it in SEVERITY.
        for (i, &a) in SEVERITY.iter().enumerate() {
            for &b in &SEVERITY[..i] {
                assert_eq!(most_serious([a, b]), a, "{a} over {b}");
                assert_eq!(most_serious([b, a]), a, "{a} over {b}");
            }
        }
    }

    #[test]
    fn the_help_table_lists_every_code() {
        for code in SEVERITY {
            assert!(HELP.lines().any(|l| l.trim_start().starts_with(&format!("{code} "))), "{code} missing");
        }
    }

    #[test]
    fn a_broken_pipe_is_found_anywhere_in_the_chain() {
        let pipe = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(for_error(&anyhow::Error::from(pipe())), BROKEN_PIPE);
        assert_eq!(for_error(&anyhow::Error::from(pipe()).context("writing the table").context("run 3")), BROKEN_PIPE);
        // Wrapped inside another error type, reached through source().
        #[derive(Debug, thiserror::Error)]
        #[error("report")]
        struct Wrap(#[source] std::io::Error);
        assert_eq!(for_error(&anyhow::Error::from(Wrap(pipe()))), BROKEN_PIPE);
        assert_eq!(for_error(&anyhow::anyhow!("no hosts matched")), USAGE);
        assert_eq!(for_error(&anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::NotFound))), USAGE);
    }
}
