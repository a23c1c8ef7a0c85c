//! `rollback`: returns the guest to a snapshot and succeeds only when the guest descends from that
//! snapshot again (`current`'s parent), is unlocked, and is in the state the rollback implies:
//! running when the snapshot holds the VM's RAM or `start` was asked, else stopped (PVE stops the
//! guest before rolling back: AbstractConfig `snapshot_rollback`).

use crate::args::{ArgError, Fields};
use crate::guest::evidence::{sight_to_change, Evidence};
use crate::guest::power::Target;
use crate::guest::reference::GuestRef;
use crate::guest::settle::await_unlocked;
use crate::guest::snapshots::{check_name, read_tree_of, snapshot_outcome, SnapshotTree};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::{self, GuestKind};
use crate::run::Run;
use serde_json::Value;

/// The arguments of `rollback`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackArgs {
    pub target: GuestRef,
    pub name: String,
    pub start: bool,
}

impl RollbackArgs {
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let name: String = fields.required("name")?;
        check_name(kind, "name", &name, false)?;
        Ok(RollbackArgs {
            target: GuestRef::parse(&fields)?,
            name,
            start: fields.or("start", false)?,
        })
    }
}

/// Runs `rollback`.
pub async fn rollback<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match RollbackArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "roll back").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let mut tree = None;
    let verdict = roll_back(run, &mut ev, &args, &mut tree).await;
    snapshot_outcome(run, &ev, tree.as_ref(), verdict).await
}

async fn roll_back<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &RollbackArgs,
    tree: &mut Option<SnapshotTree>,
) -> Result<String, String> {
    let label = ev.label(run);
    let before = read_tree_of(run, ev).await?;
    let found = before.existing(&label, &args.name).cloned();
    *tree = Some(before);
    let snap = found?;
    if let Some(state) = &snap.snapstate {
        return Err(format!(
            "{label}: unable to rollback to incomplete snapshot (snapstate = {state})"
        ));
    }
    let target = match snap.vmstate || args.start {
        true => Target::Running,
        false => Target::Stopped,
    };
    let request =
        endpoints::snapshot_rollback(&ev.at.node, run.kind, ev.at.vmid, &args.name, args.start);
    let action = format!("roll {label} back to snapshot {:?}", args.name);
    ev.trail.run(&run.pve(), &request, &action).await?;
    let kind = run.kind;
    let wanted = format!("the rollback lock released and {}", target.describe(kind));
    await_unlocked(run, ev, |s| target.reached(kind, s), &wanted).await?;
    let after = read_tree_of(run, ev).await?;
    *tree = Some(after.clone());
    if after.current_parent.as_deref() != Some(args.name.as_str()) {
        return Err(format!(
            "the rollback task ended successfully, but {label} descends from {:?}, not from snapshot {:?}",
            after.current_parent, args.name
        ));
    }
    Ok(format!(
        "{label} was rolled back to snapshot {:?} and is {}",
        args.name, ev.status.status
    ))
}
