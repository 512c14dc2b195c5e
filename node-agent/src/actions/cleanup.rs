//! `benchrig cleanup`: undo what an earlier session could not (killed
//! orchestrator, crashed host): mounts under the work dir, loop devices
//! backed by benchrig's images, per-cell directories and NFS exports of dead agents.

use crate::scratch;
use crate::state::HostState;
use crate::undo::{detach_loop, unmount};
use benchrig_wire::messages::AgentError;
use benchrig_wire::scratch::ScratchKind;
use benchrig_wire::steps::StepOutput;
use std::path::PathBuf;

pub fn run(st: &mut HostState) -> Result<StepOutput, AgentError> {
    st.release(None).map_err(AgentError::failed)?;
    // NFS exports of dead agents first: nfsd keeps an exported filesystem busy.
    let stale = crate::exports::remove_stale().map_err(AgentError::failed)?;
    let mnt = st.work_dir.join("mnt");
    let mut targets: Vec<String> =
        st.view.mountinfo().into_iter().map(|m| m.target).filter(|t| PathBuf::from(t).starts_with(&mnt)).collect();
    // Deepest first, so nested mounts come off before their parents.
    targets.sort_by_key(|t| std::cmp::Reverse(t.len()));
    targets.dedup();
    let mut unmounted = Vec::new();
    for t in &targets {
        unmount(t.as_ref()).map_err(|e| AgentError::failed(e.to_string()))?;
        let _ = std::fs::remove_dir(t);
        unmounted.push(t.clone());
    }
    let mut detached = Vec::new();
    for s in st.scratch.iter().filter(|s| s.kind == ScratchKind::Image) {
        for name in scratch::image_loop_devices(&st.view, s) {
            let dev = PathBuf::from("/dev").join(&name);
            detach_loop(&dev).map_err(AgentError::failed)?;
            detached.push(dev.display().to_string());
        }
    }
    // Per-cell directories of directory scratches whose agent is gone.
    let mut removed = Vec::new();
    for s in st.scratch.iter().filter(|s| s.kind == ScratchKind::Directory) {
        for entry in std::fs::read_dir(scratch::expand_home(&s.path)).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix("benchrig-").and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists()) {
                std::fs::remove_dir_all(entry.path())
                    .map_err(|e| AgentError::failed(format!("remove {}: {e}", entry.path().display())))?;
                removed.push(entry.path().display().to_string());
            }
        }
    }
    removed.extend(stale);
    let mut out = StepOutput::default();
    out.info.insert("unmounted".into(), unmounted.into());
    out.info.insert("detached".into(), detached.into());
    out.info.insert("removed".into(), removed.into());
    Ok(out)
}
