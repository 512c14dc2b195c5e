//! What a step needs of its host ([`Action::host_needs`]: a filesystem its
//! kernel must support, then programs), asked of this host before the step
//! does anything: the list the planner asked the host's facts, so the two
//! cannot disagree. The kernel first: without it, a tool would not help.

use crate::state::HostState;
use crate::{cmd, kernel};
use benchrig_wire::facts::not_installed;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::Action;

pub fn check(st: &HostState, action: &Action) -> Result<(), AgentError> {
    let needs = action.host_needs();
    if let Some(fstype) = needs.kernel {
        kernel::supports_filesystem(&st.view, fstype)?;
    }
    match needs.tools.iter().find(|t| cmd::which(t).is_none()) {
        Some(tool) => Err(AgentError::unsupported(not_installed(tool, "this host", &crate::facts::distribution()))),
        None => Ok(()),
    }
}

/// Whether dispatch asks before the step starts. `filesystem` and `mount`
/// ask themselves, after what they refuse outright (an unlisted device, a
/// scratch of the wrong kind, a local source): a refusal says more than a
/// missing tool, and no module is loaded for a step that is refused.
pub fn asked_by_dispatch(action: &Action) -> bool {
    !matches!(action, Action::Filesystem(_) | Action::Mount(_))
}
