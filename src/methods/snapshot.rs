//! `snapshot`: takes a snapshot and succeeds only when the list shows it under its name with the
//! parent the guest had (the `current` entry now descending from it), complete (no `snapstate`),
//! and the guest no longer locked. `vmstate` (VMs) saves the RAM of a running VM; PVE ignores it for
//! a stopped one, and the record shows what was saved.

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

/// The arguments of `snapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotArgs {
    pub target: GuestRef,
    pub name: String,
    pub description: Option<String>,
    pub vmstate: bool,
}

impl SnapshotArgs {
    /// Always inlined into its one caller, [`snapshot_change`] (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let name = fields.required_text("name")?;
        check_name(kind, "name", name, true)?;
        let vmstate = match kind {
            GuestKind::Qemu => fields.flag_or("vmstate", false)?,
            GuestKind::Lxc => false,
        };
        let description = fields.text("description")?;
        // No argv can carry a NUL, so it could never reach pvesh over ssh: refused on both transports.
        if description.as_ref().is_some_and(|d| d.contains('\0')) {
            return Err(ArgError::new("description", "must not contain NUL"));
        }
        Ok(SnapshotArgs {
            target: GuestRef::parse(&fields)?,
            name: name.to_string(),
            description: description.map(str::to_string),
            vmstate,
        })
    }
}

/// Runs `snapshot`: the arguments parsed (reading nothing) before the course, whose one future
/// (`run_change`) every snapshot method shares.
pub fn snapshot<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
    run_change(run, snapshot_change(run.kind, args))
}

/// `snapshot`'s change, from its arguments. Dispatch's argument check reads them through it too, so
/// the parser has one caller and builds the arguments in their box (issue 32).
pub fn snapshot_change(kind: GuestKind, args: &Value) -> Result<Box<dyn SnapshotChange>, ArgError> {
    SnapshotArgs::parse(kind, args).map(|args| Box::new(args) as Box<dyn SnapshotChange>)
}

impl SnapshotChange for SnapshotArgs {
    fn does(&self) -> &'static str {
        "snapshot"
    }

    fn target(&self) -> &GuestRef {
        &self.target
    }

    /// The snapshot the guest descended from becomes the new one's parent.
    fn plan(&self, label: &str, ev: &Evidence, before: &SnapshotTree) -> Result<Plan, String> {
        // What PVE's snapshot_prepare dies with, refused before anything is sent.
        if ev.status.template == Some(true) {
            return Err(format!(
                "{label}: you can't take a snapshot if it's a template (PVE's rule)"
            ));
        }
        if before.find(&self.name).is_some() {
            return Err(format!(
                "{label}: snapshot name '{}' already used",
                self.name
            ));
        }
        Ok(Plan {
            parent: before.current_parent.clone(),
            end: None,
        })
    }

    fn request(&self, kind: GuestKind, at: &Located) -> PveRequest {
        endpoints::snapshot_create(
            &at.node,
            kind,
            at.vmid,
            &self.name,
            self.description.as_deref(),
            self.vmstate,
        )
    }

    fn action(&self, label: &str) -> String {
        format!("snapshot {label} as {:?}", self.name)
    }

    fn settled_text(&self, _plan: &Plan, _kind: GuestKind) -> String {
        "the snapshot lock released".to_string()
    }

    fn judge(
        &self,
        ev: &mut Evidence,
        label: &str,
        plan: Plan,
        after: &SnapshotTree,
    ) -> Result<String, String> {
        let parent = plan.parent;
        let Some(taken) = after.find(&self.name) else {
            return Err(format!(
                "the snapshot task ended successfully, but the snapshot list of {label} does not hold {:?} ({})",
                self.name,
                after.describe()
            ));
        };
        if let Some(state) = &taken.snapstate {
            return Err(format!(
                "snapshot {:?} of {label} is incomplete (snapstate {state})",
                self.name
            ));
        }
        if taken.parent != parent || after.current_parent.as_deref() != Some(self.name.as_str()) {
            return Err(format!(
                "snapshot {:?} of {label} is listed with parent {} and the guest descends from {}; expected parent {} and the guest descending from the new snapshot",
                self.name,
                crate::debug_text::option(taken.parent.as_deref()),
                crate::debug_text::option(after.current_parent.as_deref()),
                crate::debug_text::option(parent.as_deref())
            ));
        }
        let ram = match (self.vmstate, taken.vmstate) {
            (_, true) => " with its RAM",
            (true, false) => {
                ev.trail.warnings.push(format!("vmstate: true, but snapshot {:?} holds no RAM (PVE saves it only for a running VM)", self.name));
                ""
            }
            (false, false) => "",
        };
        Ok(format!("{label} has snapshot {:?}{ram}", self.name))
    }
}
