//! The one course of every snapshot change (`snapshot`, `rollback`, `deleteSnapshot`): sight the
//! guest (waiting out a lock), read its snapshot tree, refuse what PVE would refuse, send the change
//! and follow its task, wait until the guest is unlocked and in the state the change implies, read
//! the tree again and judge it. Each method says only what differs, as a [`SnapshotChange`].

use super::evidence::{await_unlocked, sight_to_change, Evidence};
use super::locate::Located;
use super::reference::GuestRef;
use super::snapshots::{snapshot_outcome, SnapshotTree, TreeSeen};
use crate::args::ArgError;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::pve::request::PveRequest;
use crate::pve::responses::GuestStatus;
use crate::run::Run;

/// What one snapshot method changes, and how it knows the change happened.
pub trait SnapshotChange {
    /// What the tree before decides and the later steps need (a rollback's end state, a new
    /// snapshot's parent).
    type Plan;

    /// What the change does to a guest, in messages: "snapshot", "roll back", ….
    const DOES: &'static str;

    /// The guest it changes.
    fn target(&self) -> &GuestRef;

    /// Refuses, before anything is sent, what PVE would refuse (from the tree and the guest).
    fn plan(&self, label: &str, ev: &Evidence, before: &SnapshotTree)
        -> Result<Self::Plan, String>;

    /// The request that makes the change.
    fn request(&self, kind: GuestKind, at: &Located) -> PveRequest;

    /// The change in words, for the task's messages.
    fn action(&self, label: &str) -> String;

    /// What the guest shows once the change has settled, besides being unlocked (default: nothing
    /// more), and that in words.
    fn settled(&self, _plan: &Self::Plan, _kind: GuestKind, _status: &GuestStatus) -> bool {
        true
    }
    fn settled_text(&self, plan: &Self::Plan, kind: GuestKind) -> String;

    /// The verdict on the tree after the change: the summary, or why it did not happen.
    fn judge<H: Host>(
        &self,
        run: &Run<'_, H>,
        ev: &mut Evidence,
        label: &str,
        plan: Self::Plan,
        after: &SnapshotTree,
    ) -> Result<String, String>;
}

/// Runs one snapshot method: its parsed arguments, or the argument error, to an outcome holding
/// the guest's record, the last tree observed and the verdict.
pub async fn run_change<H: Host, C: SnapshotChange>(
    run: &Run<'_, H>,
    parsed: Result<C, ArgError>,
) -> Outcome {
    let change = match parsed {
        Ok(change) => change,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, change.target(), C::DOES).await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let mut tree = None;
    let verdict = apply(run, &mut ev, &change, &mut tree).await;
    snapshot_outcome(run, &ev, tree, verdict).await
}

/// The change itself; `tree` keeps the last tree observed, for the record, whatever the verdict.
async fn apply<H: Host, C: SnapshotChange>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    change: &C,
    tree: &mut Option<TreeSeen>,
) -> Result<String, String> {
    let label = ev.label(run);
    let before = TreeSeen::read(run, ev).await?;
    let plan = change.plan(&label, ev, &before.tree);
    *tree = Some(before);
    let plan = plan?;
    let request = change.request(run.kind, &ev.at);
    ev.trail
        .run(&run.pve(), &request, &change.action(&label))
        .await?;
    let kind = run.kind;
    let wanted = change.settled_text(&plan, kind);
    await_unlocked(run, ev, |s| change.settled(&plan, kind, s), &wanted).await?;
    let after = TreeSeen::read(run, ev).await.inspect_err(|_| {
        if let Some(before) = tree.as_mut() {
            before.unreadable = true;
        }
    })?;
    let verdict = change.judge(run, ev, &label, plan, &after.tree);
    *tree = Some(after);
    verdict
}
