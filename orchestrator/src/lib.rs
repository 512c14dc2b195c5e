//! benchrig, the orchestrator: reads playbooks and inventories, plans the
//! cells (`plan`), runs them on each host's agent (`run`, `session`) and
//! stores every sample (`store`); the rest reads what is stored (`compare`,
//! `history`, `report`). ARCHITECTURE.md has the map.

/// `print!` / `println!` that return the write's `io::Result` instead of
/// panicking, for `?`: a closed stdout then reaches main's one error path,
/// which ends quietly with `exit_code::BROKEN_PIPE`. What they print may
/// hold a host's text, so control characters go out escaped
/// (`human::printable`). (Defined before the modules so that every one of
/// them sees them.)
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), "{}", $crate::human::printable(&format!($($t)*)))
    }};
}
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), "{}", $crate::human::printable(&format!($($t)*)))
    }};
}

pub mod bisect;
pub mod changepoint;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod configuration;
pub mod diagnostic;
pub mod estimate;
pub mod exit_code;
pub mod extra_vars;
pub mod history;
pub mod human;
pub mod inventory;
pub mod monitors;
pub mod plan;
pub mod playbook;
pub mod profiles;
pub mod progress;
pub mod report;
pub mod retention;
pub mod run;
pub mod selection;
pub mod session;
pub mod settings;
pub mod significance;
pub mod site;
pub mod stats;
pub mod status;
pub mod store;
pub mod system_state;
pub mod template;
pub mod terminal_table;
pub mod webhook;
pub mod yaml;
