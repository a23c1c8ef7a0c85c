//! `deleteSnapshot`: removes a snapshot and succeeds only when the list no longer holds it and the
//! guest is unlocked (PVE keeps a `snapshot-delete` lock while it works). `force` removes it from
//! the config even if removing a disk snapshot fails (PVE's `force`).

use crate::args::{ArgError, Fields};
use crate::guest::evidence::Evidence;
use crate::guest::locate::Located;
use crate::guest::reference::GuestRef;
use crate::guest::snapshot_change::{run_change, Plan, SnapshotChange};
use crate::guest::snapshots::{check_name, SnapshotTree};
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::request::PveRequest;
use crate::run::Run;
use serde_json::Value;
use std::future::Future;

/// The arguments of `deleteSnapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteSnapshotArgs {
    pub target: GuestRef,
    pub name: String,
    pub force: bool,
}

impl DeleteSnapshotArgs {
    /// Always inlined into its one caller, [`delete_snapshot_change`] (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let name = fields.required_text("name")?;
        check_name(kind, "name", name, false)?;
        Ok(DeleteSnapshotArgs {
            target: GuestRef::parse(&fields)?,
            name: name.to_string(),
            force: fields.flag_or("force", false)?,
        })
    }
}

/// Runs `deleteSnapshot`: the arguments parsed (reading nothing) before the course, whose one future
/// (`run_change`) every snapshot method shares.
pub fn delete_snapshot<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
    run_change(run, delete_snapshot_change(run.kind, args))
}

/// `deleteSnapshot`'s change, from its arguments. Dispatch's argument check reads them through it too, so
/// the parser has one caller and builds the arguments in their box (issue 32).
pub fn delete_snapshot_change(
    kind: GuestKind,
    args: &Value,
) -> Result<Box<dyn SnapshotChange>, ArgError> {
    DeleteSnapshotArgs::parse(kind, args).map(|args| Box::new(args) as Box<dyn SnapshotChange>)
}

impl SnapshotChange for DeleteSnapshotArgs {
    fn does(&self) -> &'static str {
        "delete a snapshot of"
    }

    fn target(&self) -> &GuestRef {
        &self.target
    }

    fn plan(&self, label: &str, _ev: &Evidence, before: &SnapshotTree) -> Result<Plan, String> {
        before.existing(label, &self.name).map(|_| Plan::default())
    }

    fn request(&self, kind: GuestKind, at: &Located) -> PveRequest {
        endpoints::snapshot_delete(&at.node, kind, at.vmid, &self.name, self.force)
    }

    fn action(&self, label: &str) -> String {
        format!("delete snapshot {:?} of {label}", self.name)
    }

    fn settled_text(&self, _plan: &Plan, _kind: GuestKind) -> String {
        "the snapshot-delete lock released".to_string()
    }

    fn judge(
        &self,
        _ev: &mut Evidence,
        label: &str,
        _plan: Plan,
        after: &SnapshotTree,
    ) -> Result<String, String> {
        if after.find(&self.name).is_some() {
            return Err(format!(
                "the snapshot delete task ended successfully, but {label} still lists snapshot {:?}",
                self.name
            ));
        }
        Ok(format!("snapshot {:?} of {label} is gone", self.name))
    }
}
