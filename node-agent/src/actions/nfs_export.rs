//! `nfs_export`: serve a directory of a filesystem this session mounted over
//! the kernel NFS server. Only what the agent mounted can be exported, and
//! the export goes with its mount (see `state.rs`). It goes to the
//! `clients` the step names (the agent has none of its own: in a role
//! play the planner names the cell's other hosts), with `root_squash`
//! unless its options say otherwise, and the mount is first remounted
//! `nosuid,nodev`, so a client cannot plant setuid programs or devices on
//! the server.

use crate::exports::{self, Export};
use crate::outbox::StepCtx;
use crate::services;
use crate::state::HostState;
use crate::{cmd, facts};
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{NfsExportArgs, ServiceState, StepOutput};
use serde_json::json;
use std::path::{Component, Path};

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &NfsExportArgs) -> Result<StepOutput, AgentError> {
    let bad = |m: String| AgentError::bad_request(m);
    let dir = Path::new(&args.dir);
    if !dir.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(bad(format!("nfs_export: `dir` must be relative and stay inside the mount: `{}`", args.dir)));
    }
    // exports(5) syntax: a client or option with blanks, parentheses or a
    // comment sign would change the line's meaning.
    let plain = |s: &str| !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || "()#,\"".contains(c));
    if args.clients.split_whitespace().next().is_none() {
        return Err(bad("nfs_export: no `clients`: name who may mount it (a host, a network, or `*`)".into()));
    }
    if let Some(c) = args.clients.split_whitespace().find(|c| !plain(c)) {
        return Err(bad(format!("nfs_export: bad client `{c}` in `clients`")));
    }
    if let Some(o) = args.options.iter().find(|o| !plain(o)) {
        return Err(bad(format!("nfs_export: bad option `{o}`")));
    }
    let mountpoint = st.target(Some(&args.target))?.mountpoint.clone();
    let path = mountpoint.join(dir);
    if !path.is_dir() {
        return Err(AgentError::failed(format!("nfs_export: {} is not a directory", path.display())));
    }
    if st.exports.iter().any(|e| e.path == path) {
        return Err(AgentError::failed(format!("nfs_export: {} is already exported by this session", path.display())));
    }

    // What a client writes (as root, with no_root_squash) must not become
    // a setuid program or a device node on this host.
    let mountpoint = mountpoint.to_string_lossy().into_owned();
    cmd::run_ok(&["mount", "-o", "remount,nosuid,nodev", &mountpoint])
        .map_err(|e| AgentError::failed(format!("nfs_export: remounting {mountpoint} nosuid,nodev: {e}")))?;

    let started_server = !services::nfsd_running();
    let server = services::nfs_server_name();
    if started_server {
        super::service::control(ctx, server, ServiceState::Started)?;
    }
    let line = exports::line(&path, &args.clients, &args.options);
    let export = Export {
        target: args.target.clone(),
        file: exports::file_for(&args.target),
        path: path.clone(),
        clients: args.clients.clone(),
        started_server,
    };
    // Registered first: whatever happens next, release undoes it.
    st.exports.push(export.clone());
    exports::add(&export, &line).map_err(AgentError::failed)?;
    if !exports::is_exported(&path) {
        return Err(AgentError::failed(format!("nfs_export: `exportfs -ra` did not export {}", path.display())));
    }

    let mut out = StepOutput::default();
    let info = &mut out.info;
    info.insert("export".into(), line.into());
    info.insert("path".into(), path.to_string_lossy().into_owned().into());
    info.insert("server".into(), server.into());
    info.insert("server_started_here".into(), started_server.into());
    let options = st.view.mountinfo().into_iter().find(|m| m.target == mountpoint).map(|m| m.options);
    info.insert("mount_options".into(), json!(options));
    let read = |f: &str| std::fs::read_to_string(Path::new("/proc/fs/nfsd").join(f)).ok().map(|t| t.trim().to_string());
    info.insert("nfsd_versions".into(), json!(read("versions")));
    info.insert("nfsd_threads".into(), json!(read("threads")));
    info.insert("kernel".into(), facts::kernel_release().into());
    Ok(out)
}
