//! `snapshot`: takes a snapshot and succeeds only when the list shows it under its name with the
//! parent the guest had (the `current` entry now descending from it), complete (no `snapstate`),
//! and the guest no longer locked. `vmstate` (VMs) saves the RAM of a running VM; PVE ignores it for
//! a stopped one, and the record shows what was saved.

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

/// The arguments of `snapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotArgs {
    pub target: GuestRef,
    pub name: String,
    pub description: Option<String>,
    pub vmstate: bool,
}

impl SnapshotArgs {
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let name: String = fields.required("name")?;
        check_name(kind, "name", &name, true)?;
        let vmstate = match kind {
            GuestKind::Qemu => fields.or("vmstate", false)?,
            GuestKind::Lxc => false,
        };
        let description: Option<String> = fields.optional("description")?;
        // No argv can carry a NUL, so it could never reach pvesh over ssh: refused on both transports.
        if description.as_ref().is_some_and(|d| d.contains('\0')) {
            return Err(ArgError::new("description", "must not contain NUL"));
        }
        Ok(SnapshotArgs {
            target: GuestRef::parse(&fields)?,
            name,
            description,
            vmstate,
        })
    }
}

/// Runs `snapshot`.
pub async fn snapshot<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match SnapshotArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "snapshot").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let mut tree = None;
    let verdict = take(run, &mut ev, &args, &mut tree).await;
    snapshot_outcome(run, &ev, tree.as_ref(), verdict).await
}

async fn take<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &SnapshotArgs,
    tree: &mut Option<SnapshotTree>,
) -> Result<String, String> {
    let label = ev.label(run);
    let before = read_tree_of(run, ev).await?;
    let parent = before.current_parent.clone();
    *tree = Some(before);
    // What PVE's snapshot_prepare dies with, refused before anything is sent.
    if ev.status.template == Some(true) {
        return Err(format!(
            "{label}: you can't take a snapshot if it's a template (PVE's rule)"
        ));
    }
    if tree.as_ref().is_some_and(|t| t.find(&args.name).is_some()) {
        return Err(format!(
            "{label}: snapshot name '{}' already used",
            args.name
        ));
    }
    let request = endpoints::snapshot_create(
        &ev.at.node,
        run.kind,
        ev.at.vmid,
        &args.name,
        args.description.as_deref(),
        args.vmstate,
    );
    let action = format!("snapshot {label} as {:?}", args.name);
    ev.trail.run(&run.pve(), &request, &action).await?;
    await_unlocked(run, ev, |_| true, "the snapshot lock released").await?;
    let after = read_tree_of(run, ev).await?;
    *tree = Some(after.clone());
    let Some(taken) = after.find(&args.name) else {
        return Err(format!(
            "the snapshot task ended successfully, but the snapshot list of {label} does not hold {:?} ({})",
            args.name,
            after.describe()
        ));
    };
    if let Some(state) = &taken.snapstate {
        return Err(format!(
            "snapshot {:?} of {label} is incomplete (snapstate {state})",
            args.name
        ));
    }
    if taken.parent != parent || after.current_parent.as_deref() != Some(args.name.as_str()) {
        return Err(format!(
            "snapshot {:?} of {label} is listed with parent {:?} and the guest descends from {:?}; expected parent {:?} and the guest descending from the new snapshot",
            args.name, taken.parent, after.current_parent, parent
        ));
    }
    let ram = match (args.vmstate, taken.vmstate) {
        (_, true) => " with its RAM",
        (true, false) => {
            ev.warn(run, format!("vmstate: true, but snapshot {:?} holds no RAM (PVE saves it only for a running VM)", args.name));
            ""
        }
        (false, false) => "",
    };
    Ok(format!("{label} has snapshot {:?}{ram}", args.name))
}
