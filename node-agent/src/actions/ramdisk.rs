//! A tmpfs to hold a source tree in RAM, usable as a `target` like a scratch device.

use crate::cmd;
use crate::state::{HostState, Mounted};
use benchrig_wire::args::RamdiskArgs;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::StepOutput;

pub fn run(st: &mut HostState, args: &RamdiskArgs) -> Result<StepOutput, AgentError> {
    if st.scratch.iter().any(|s| s.name == args.name) {
        return Err(AgentError::bad_request(format!(
            "ramdisk name `{}` is also a scratch device name; pick another",
            args.name
        )));
    }
    let good = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if args.name.is_empty() || args.name.starts_with('.') || !args.name.chars().all(good) {
        return Err(AgentError::bad_request(format!("bad ramdisk name `{}`", args.name)));
    }
    if st.mounted.iter().any(|m| m.scratch == args.name) {
        st.release(Some(&args.name)).map_err(AgentError::failed)?;
    }
    let mountpoint = st.work_dir.join("ram").join(&args.name);
    std::fs::create_dir_all(&mountpoint)
        .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", mountpoint.display())))?;
    let mp = mountpoint.to_string_lossy();
    let argv = ["mount", "-t", "tmpfs", "-o", &format!("size={},mode=0755", args.size.0), "benchrig-ram", &mp];
    st.mount(&argv, &mountpoint).and_then(|out| cmd::succeeded(&argv, out)).map_err(AgentError::failed)?;
    st.mounted.push(Mounted {
        scratch: args.name.clone(),
        mountpoint: mountpoint.clone(),
        devices: Vec::new(),
        mounted_by_us: true,
        created_dir: false,
        loop_devices: Vec::new(),
    });
    let mut out = StepOutput::default();
    out.info.insert("mountpoint".into(), mp.into_owned().into());
    out.info.insert("size".into(), args.size.0.into());
    Ok(out)
}
