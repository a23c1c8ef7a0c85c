//! The one course of every snapshot change (`snapshot`, `rollback`, `deleteSnapshot`): sight the
//! guest (waiting out a lock), read its snapshot tree, refuse what PVE would refuse, send the change
//! and follow its task, wait until the guest is unlocked and in the state the change implies, read
//! the tree again and judge it. Each method says only what differs, as a [`SnapshotChange`].

use super::evidence::{has_budget_left, locked_out, settle_evidence, sight_to_change, Evidence};
use super::locate::Located;
use super::reference::GuestRef;
use super::seen::{Marks, Reading};
use super::snapshots::{tree_of, tree_request, tree_write, SnapshotTree, TreeSeen};
use super::target::Target;
use crate::args::ArgError;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::pve::request::PveRequest;
use crate::run::Run;

/// What the tree before a change decides for the steps after it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// The snapshot the guest descended from (a new snapshot's parent).
    pub parent: Option<String>,
    /// The power state the guest settles in once the change is done (a rollback's), besides
    /// being unlocked; `None`: only unlocked.
    pub end: Option<Target>,
}

/// What one snapshot method changes, and how it knows the change happened. Object-safe: the one
/// course below runs every method through `Box<dyn SnapshotChange>`, so it is compiled once.
pub trait SnapshotChange {
    /// What the change does to a guest, in messages: "snapshot", "roll back", ….
    fn does(&self) -> &'static str;

    /// The guest it changes.
    fn target(&self) -> &GuestRef;

    /// Refuses, before anything is sent, what PVE would refuse (from the tree and the guest).
    fn plan(&self, label: &str, ev: &Evidence, before: &SnapshotTree) -> Result<Plan, String>;

    /// The request that makes the change.
    fn request(&self, kind: GuestKind, at: &Located) -> PveRequest;

    /// The change in words, for the task's messages.
    fn action(&self, label: &str) -> String;

    /// What the guest shows once the change has settled, in words.
    fn settled_text(&self, plan: &Plan, kind: GuestKind) -> String;

    /// The verdict on the tree after the change: the summary, or why it did not happen. A
    /// warning it adds to `ev` is logged by the course.
    fn judge(
        &self,
        ev: &mut Evidence,
        label: &str,
        plan: Plan,
        after: &SnapshotTree,
    ) -> Result<String, String>;
}

/// The parsed arguments of one snapshot method, or the argument error.
pub type Parsed = Result<Box<dyn SnapshotChange>, ArgError>;

/// Runs one snapshot method: its parsed arguments, or the argument error, to an outcome holding
/// the guest's record, the last tree observed and the verdict. The course itself, the same code
/// for every method: the arguments boxed behind the trait, so the three methods share this one
/// future, not one each (issue 32). The change is a labeled block, not a nested async fn: `tree`
/// keeps the last tree observed, for the record, whatever the verdict.
pub async fn run_change<H: Host>(run: &Run<'_, H>, parsed: Parsed) -> Outcome {
    let change = match parsed {
        Ok(change) => change,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, change.target(), change.does()).await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let mut tree = None;
    let label = ev.label(run);
    let verdict = 'change: {
        let answer = run.pve().call(&tree_request(run.kind, &ev.at, false)).await;
        let before = or_break!('change, TreeSeen::read(run, &ev, answer));
        let plan = change.plan(&label, &ev, &before.tree);
        tree = Some(before);
        let plan = or_break!('change, plan);
        let request = change.request(run.kind, &ev.at);
        let action = change.action(&label);
        or_break!('change, ev.trail.run(&run.pve(), &request, format_args!("{action}"), None, false).await);
        let kind = run.kind;
        let end = plan.end;
        let settled = &|s: &_| end.is_none_or(|t| t.reached(kind, s));
        let waited = settle_evidence(run, &mut ev, run.wait_budget_ms(), settled).await;
        // What it should have settled in, written only when it did not (not held across the wait).
        let locked = |why| locked_out(run, &ev, &change.settled_text(&plan, kind), why);
        or_break!('change, waited.map_err(locked));
        let answer = run.pve().call(&tree_request(run.kind, &ev.at, false)).await;
        let after = TreeSeen::read(run, &ev, answer).inspect_err(|_| {
            if let Some(before) = tree.as_mut() {
                before.unreadable = true;
            }
        });
        let after = or_break!('change, after);
        let warned = ev.trail.warnings.len();
        let verdict = change.judge(&mut ev, &label, plan, &after.tree);
        for warning in ev.trail.warnings.iter().skip(warned) {
            run.warn(warning);
        }
        tree = Some(after);
        verdict
    };
    // The outcome, in this course rather than an async fn of its own (issue 32): the guest's state
    // record, the last tree observed (if any), then the verdict. After a failure, a tree read
    // before the change is read again (a snapshot half made, or marked `snapstate: delete`, shows
    // in the record); one that cannot be read again is recorded as read before the change.
    let changes = ev.trail.changes();
    let failed = verdict.is_err();
    let mut outcome = ev.outcome(run, verdict).await;
    if let Some(mut seen) = tree {
        let stale = seen.reading.predates(changes);
        if failed && stale && !seen.unreadable && has_budget_left(run) {
            let answer = run.pve().call(&tree_request(run.kind, &ev.at, true)).await;
            if let Ok(tree) = answer.and_then(tree_of) {
                let reading = Reading::at(run.host.now_ms(), changes.sent);
                seen = TreeSeen {
                    tree,
                    reading,
                    unreadable: false,
                };
            }
        }
        let marks = Marks::of(seen.reading, changes);
        outcome
            .writes
            .push(tree_write(run, &ev.at, &seen.tree, marks));
    }
    outcome
}
