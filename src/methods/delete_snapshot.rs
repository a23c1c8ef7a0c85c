//! `deleteSnapshot`: removes a snapshot and succeeds only when the list no longer holds it and the
//! guest is unlocked (PVE keeps a `snapshot-delete` lock while it works). `force` removes it from
//! the config even if removing a disk snapshot fails (PVE's `force`).

use crate::args::{ArgError, Fields};
use crate::guest::evidence::{sight_to_change, Evidence};
use crate::guest::reference::GuestRef;
use crate::guest::settle::await_unlocked;
use crate::guest::snapshots::{check_name, read_tree_of, snapshot_outcome, SnapshotTree};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::{self, GuestKind};
use crate::run::Run;
use serde_json::Value;

/// The arguments of `deleteSnapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteSnapshotArgs {
    pub target: GuestRef,
    pub name: String,
    pub force: bool,
}

impl DeleteSnapshotArgs {
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let name: String = fields.required("name")?;
        check_name(kind, "name", &name, false)?;
        Ok(DeleteSnapshotArgs {
            target: GuestRef::parse(&fields)?,
            name,
            force: fields.or("force", false)?,
        })
    }
}

/// Runs `deleteSnapshot`.
pub async fn delete_snapshot<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match DeleteSnapshotArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "delete a snapshot of").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let mut tree = None;
    let verdict = remove(run, &mut ev, &args, &mut tree).await;
    snapshot_outcome(run, &ev, tree.as_ref(), verdict).await
}

async fn remove<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &DeleteSnapshotArgs,
    tree: &mut Option<SnapshotTree>,
) -> Result<String, String> {
    let label = ev.label(run);
    let before = read_tree_of(run, ev).await?;
    let found = before.existing(&label, &args.name).map(drop);
    *tree = Some(before);
    found?;
    let request =
        endpoints::snapshot_delete(&ev.at.node, run.kind, ev.at.vmid, &args.name, args.force);
    let action = format!("delete snapshot {:?} of {label}", args.name);
    ev.trail.run(&run.pve(), &request, &action).await?;
    await_unlocked(run, ev, |_| true, "the snapshot-delete lock released").await?;
    let after = read_tree_of(run, ev).await?;
    *tree = Some(after.clone());
    if after.find(&args.name).is_some() {
        return Err(format!(
            "the snapshot delete task ended successfully, but {label} still lists snapshot {:?}",
            args.name
        ));
    }
    Ok(format!("snapshot {:?} of {label} is gone", args.name))
}
