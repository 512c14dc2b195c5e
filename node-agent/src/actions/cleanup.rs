//! `benchrig cleanup`: undo what an earlier session could not (killed
//! orchestrator, crashed host): mounts under the work dir and loop devices
//! backed by benchrig's images.

use super::{expand_home, failed};
use crate::state::{detach_loop, unmount, HostState};
use benchrig_wire::messages::AgentError;
use benchrig_wire::scratch::ScratchKind;
use benchrig_wire::steps::StepOutput;
use std::path::PathBuf;

pub fn run(st: &mut HostState) -> Result<StepOutput, AgentError> {
    st.release(None).map_err(failed)?;
    let mnt = st.work_dir.join("mnt");
    let mut targets: Vec<String> =
        st.view.mountinfo().into_iter().map(|m| m.target).filter(|t| PathBuf::from(t).starts_with(&mnt)).collect();
    // Deepest first, so nested mounts come off before their parents.
    targets.sort_by_key(|t| std::cmp::Reverse(t.len()));
    targets.dedup();
    let mut unmounted = Vec::new();
    for t in &targets {
        unmount(t.as_ref()).map_err(failed)?;
        let _ = std::fs::remove_dir(t);
        unmounted.push(t.clone());
    }
    let images: Vec<PathBuf> = st
        .scratch
        .iter()
        .filter(|s| s.kind == ScratchKind::Image)
        .map(|s| expand_home(&s.path).canonicalize().unwrap_or_else(|_| expand_home(&s.path)))
        .collect();
    let mut detached = Vec::new();
    for entry in std::fs::read_dir(st.view.sys.join("class/block")).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let backing = st.view.read(&entry.path().join("loop/backing_file"));
        if backing.is_some_and(|b| images.iter().any(|i| i.as_os_str() == b.as_str())) {
            let dev = PathBuf::from("/dev").join(&name);
            detach_loop(&dev).map_err(failed)?;
            detached.push(dev.display().to_string());
        }
    }
    let mut out = StepOutput::default();
    out.info.insert("unmounted".into(), unmounted.into());
    out.info.insert("detached".into(), detached.into());
    Ok(out)
}
