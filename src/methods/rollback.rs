//! `rollback`: returns the guest to a snapshot and succeeds only when the guest descends from that
//! snapshot again (`current`'s parent), is unlocked, and is in the state the rollback implies:
//! running when the snapshot holds the VM's RAM or `start` was asked, else stopped (PVE stops the
//! guest before rolling back: AbstractConfig `snapshot_rollback`).

use crate::args::{ArgError, Fields};
use crate::guest::evidence::Evidence;
use crate::guest::locate::Located;
use crate::guest::reference::GuestRef;
use crate::guest::snapshot_change::{run_change, Plan, SnapshotChange};
use crate::guest::snapshots::{check_name, SnapshotTree};
use crate::guest::target::Target;
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::request::PveRequest;
use crate::run::Run;
use serde_json::Value;
use std::future::Future;

/// The arguments of `rollback`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackArgs {
    pub target: GuestRef,
    pub name: String,
    pub start: bool,
}

impl RollbackArgs {
    /// Always inlined into its one caller, [`rollback_change`] (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let name = fields.required_text("name")?;
        check_name(kind, "name", name, false)?;
        Ok(RollbackArgs {
            target: GuestRef::parse(&fields)?,
            name: name.to_string(),
            start: fields.flag_or("start", false)?,
        })
    }
}

/// Runs `rollback`: the arguments parsed (reading nothing) before the course, whose one future
/// (`run_change`) every snapshot method shares.
pub fn rollback<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
    run_change(run, rollback_change(run.kind, args))
}

/// `rollback`'s change, from its arguments. Dispatch's argument check reads them through it too, so
/// the parser has one caller and builds the arguments in their box (issue 32).
pub fn rollback_change(kind: GuestKind, args: &Value) -> Result<Box<dyn SnapshotChange>, ArgError> {
    RollbackArgs::parse(kind, args).map(|args| Box::new(args) as Box<dyn SnapshotChange>)
}

impl SnapshotChange for RollbackArgs {
    /// The state the guest must end in.
    fn does(&self) -> &'static str {
        "roll back"
    }

    fn target(&self) -> &GuestRef {
        &self.target
    }

    /// The guest ends running when the snapshot holds its RAM or `start` asks for it.
    fn plan(&self, label: &str, _ev: &Evidence, before: &SnapshotTree) -> Result<Plan, String> {
        let snap = before.existing(label, &self.name)?;
        if let Some(state) = &snap.snapstate {
            return Err(format!(
                "{label}: unable to rollback to incomplete snapshot (snapstate = {state})"
            ));
        }
        let end = match snap.vmstate || self.start {
            true => Target::Running,
            false => Target::Stopped,
        };
        Ok(Plan {
            parent: None,
            end: Some(end),
        })
    }

    fn request(&self, kind: GuestKind, at: &Located) -> PveRequest {
        endpoints::snapshot_rollback(&at.node, kind, at.vmid, &self.name, self.start)
    }

    fn action(&self, label: &str) -> String {
        format!("roll {label} back to snapshot {:?}", self.name)
    }

    fn settled_text(&self, plan: &Plan, kind: GuestKind) -> String {
        match plan.end {
            Some(end) => format!("the rollback lock released and {}", end.describe(kind)),
            None => "the rollback lock released".to_string(),
        }
    }

    fn judge(
        &self,
        ev: &mut Evidence,
        label: &str,
        _plan: Plan,
        after: &SnapshotTree,
    ) -> Result<String, String> {
        if after.current_parent.as_deref() != Some(self.name.as_str()) {
            return Err(format!(
                "the rollback task ended successfully, but {label} descends from {}, not from snapshot {:?}",
                crate::debug_text::option(after.current_parent.as_deref()),
                self.name
            ));
        }
        Ok(format!(
            "{label} was rolled back to snapshot {:?} and is {}",
            self.name, ev.status.status
        ))
    }
}
