//! What a step needs of its host ([`Action::host_needs`]: a filesystem its
//! kernel must support, then programs), asked of this host before the step
//! does anything: the list the planner asked the host's facts, so the two
//! cannot disagree. The kernel first: without it, a tool would not help.

use crate::state::HostState;
use crate::{cmd, kernel};
use benchrig_wire::facts::not_installed;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::Action;
use std::path::PathBuf;

pub fn check(st: &HostState, action: &Action) -> Result<(), AgentError> {
    let needs = action.host_needs();
    if let Some(fstype) = needs.kernel {
        kernel::supports_filesystem(&st.view, fstype)?;
    }
    needs.tools.iter().try_for_each(|t| program(t).map(drop))
}

/// Where `tool` is on this host's PATH, or why the step cannot run here.
/// A workload that runs a program dispatch checked asks here for its path,
/// so the message is the same whoever finds it missing.
pub fn program(tool: &str) -> Result<PathBuf, AgentError> {
    cmd::which(tool)
        .ok_or_else(|| AgentError::unsupported(not_installed(tool, "this host", &crate::facts::distribution())))
}

/// Whether dispatch asks before the step starts. `filesystem` and `mount`
/// ask themselves, after what they refuse outright (an unlisted device, a
/// scratch of the wrong kind, a local source): a refusal says more than a
/// missing tool, and no module is loaded for a step that is refused.
pub fn asked_by_dispatch(action: &Action) -> bool {
    !matches!(action, Action::Filesystem(_) | Action::Mount(_))
}
