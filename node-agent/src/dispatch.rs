//! A step's [`Action`] to the agent function that carries it out: the one
//! table of every action and workload, above `actions/` and `workloads/`,
//! so neither needs the other.

use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::{actions, needs, workloads};
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{Action, StepOutput};

/// Run one step. A step cancelled while it waited in the queue does not start.
/// What the monitors saw during its timed region (if the request asked for
/// them) goes into its output here, whichever workload it was.
pub fn run(st: &mut HostState, ctx: &StepCtx, action: &Action) -> Result<StepOutput, AgentError> {
    ctx.check_cancel()?;
    if needs::asked_by_dispatch(action) {
        needs::check(st, action)?;
    }
    let mut out = step(st, ctx, action)?;
    // `benchrig doc` lists the metrics of the action's row: every test that
    // runs a step through here holds the workload to them.
    debug_assert!(
        out.metrics.iter().all(|m| action.declares(m)),
        "{}: metrics its row in the action table does not declare: {:?}",
        action.name(),
        out.metrics.iter().filter(|m| !action.declares(m)).collect::<Vec<_>>()
    );
    if out.monitors.is_none() {
        out.monitors = ctx.watch.take().map(Box::new);
    }
    Ok(out)
}

fn step(st: &mut HostState, ctx: &StepCtx, action: &Action) -> Result<StepOutput, AgentError> {
    match action {
        Action::Filesystem(a) => actions::filesystem::run(st, ctx, a),
        Action::Volume(a) => actions::volume::make(st, ctx, a),
        Action::VolumeAdd(a) => actions::volume::add(st, ctx, a),
        Action::VolumeRemove(a) => actions::volume::remove(st, ctx, a),
        Action::Ramdisk(a) => actions::ramdisk::run(st, a),
        Action::Mount(a) => actions::mount::run(st, a),
        Action::NfsExport(a) => actions::nfs_export::run(st, ctx, a),
        Action::Service(a) => actions::service::run(ctx, a),
        Action::Unmount(a) => actions::unmount::run(st, a),
        Action::DropCaches(_) => actions::drop_caches::run(st, ctx),
        Action::Cleanup(_) => actions::cleanup::run(st),
        Action::Noop(_) => Ok(StepOutput::default()),
        Action::Tune(a) => actions::tune::run(st, a),
        Action::Tree(a) => workloads::tree::run(st, ctx, a),
        Action::SeqWrite(a) => workloads::seq_write::run(st, ctx, a),
        Action::SeqRead(a) => workloads::seq_read::run(st, ctx, a),
        Action::AclCheck(a) => workloads::acl_check::run(st, ctx, a),
        Action::CopyTree(a) => workloads::copy_tree::run(st, ctx, a),
        Action::ListTree(a) => workloads::list_tree::run(st, ctx, a),
        Action::ReadTree(a) => workloads::read_tree::run(st, ctx, a),
        Action::ColdRead(a) => workloads::cold_read::run(st, ctx, a),
        Action::Raw(a) => workloads::raw::run(st, ctx, a),
        Action::Exec(a) => workloads::exec::run(st, ctx, a),
        Action::Fio(a) => workloads::fio::run(st, ctx, a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::Outbox;
    use crate::state::Mounted;
    use crate::sysfs::SysView;
    use serde_json::json;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn every_workload_that_runs_unprivileged_reports_exactly_what_its_row_declares() {
        let (t, u) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut st = HostState::new(SysView::real());
        st.set_work_dir(t.path().join("work"));
        std::fs::create_dir_all(&st.work_dir).unwrap();
        for (name, dir) in [("u", &u), ("t", &t)] {
            st.mounted.push(Mounted {
                scratch: name.into(),
                mountpoint: dir.path().to_path_buf(),
                devices: vec![],
                mounted_by_us: false,
                created_dir: false,
                loop_devices: vec![],
            });
        }
        let out = Outbox::new(Box::new(std::io::sink()));
        let cancel = AtomicBool::new(false);
        let ctx = StepCtx::new(1, &out, &cancel);
        // In a playbook's order; none drops the host's caches or needs root.
        // acl_check, cold_read, raw, volume_add/remove and fio run in
        // `tests/` (root, loop devices, fio), through `run` and its check.
        let steps = [
            ("tree", json!({"target": "t", "files": 20, "dirs": 3, "size": "4k"})),
            ("list_tree", json!({"target": "t", "cold": false})),
            ("read_tree", json!({"target": "t", "cold": false})),
            ("copy_tree", json!({"from": "t", "to": "u", "sync": false})),
            ("seq_write", json!({"target": "t", "size": "1M", "fsync": false})),
            ("seq_read", json!({"target": "t", "cold": false})),
            (
                "exec",
                json!({"command": "echo 42 ops", "metrics": [{"name": "ops", "unit": "op", "regex": "(\\d+) ops"}]}),
            ),
        ];
        for (name, args) in steps {
            let action = Action::from_parts(name, args).unwrap();
            let reported = run(&mut st, &ctx, &action).unwrap_or_else(|e| panic!("{name}: {e:?}")).metrics;
            let mut declared: Vec<&str> = Action::metrics(name).unwrap().iter().map(|d| d.name).collect();
            if Action::metrics_argument(name).is_some() {
                declared.push("ops");
            }
            let names: Vec<&str> = reported.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, declared, "{name}: reported, and declared in its row of the action table");
            assert!(reported.iter().all(|m| action.declares(m)), "{name}: {reported:?}");
        }
    }
}
