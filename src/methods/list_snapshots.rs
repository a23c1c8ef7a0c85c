//! `listSnapshots`: records the guest's snapshot tree as `GET …/snapshot` shows it, as
//! `<vm|ct>-<vmid>-snapshots`.

use crate::args::Fields;
use crate::guest::locate::{
    absent_message, as_guest_read, refused, send_where_it_lives, GuestRead, Located,
};
use crate::guest::reference::GuestRef;
use crate::guest::seen::Marks;
use crate::guest::snapshots::{tree_of, tree_write};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::run::Run;
use serde_json::Value;

/// Runs `listSnapshots`.
pub async fn list_snapshots<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let target = match Fields::of(args, "").and_then(|f| GuestRef::parse(&f)) {
        Ok(target) => target,
        Err(e) => return Failure::from(e).into(),
    };
    // One request where the guest lives, its answer read by the plain `tree_of` (issue 32).
    let list = |at: &Located| endpoints::snapshot_list(&at.node, run.kind, at.vmid);
    let placed = send_where_it_lives(run, &target, &list).await;
    match placed.and_then(|placed| as_guest_read(run.kind, "the snapshots", placed)) {
        Ok(GuestRead::Read {
            at,
            value: (_, data),
        }) => {
            let tree = match tree_of(data) {
                Ok(tree) => tree,
                Err(error) => return refused(run.kind, "the snapshots", &at, &error).into(),
            };
            let summary = format!(
                "{} {} on node {}: {}",
                run.kind.noun(),
                at.vmid,
                at.node,
                tree.describe()
            );
            Outcome::succeeded(vec![tree_write(run, &at, &tree, Marks::default())], summary)
        }
        Ok(GuestRead::Absent { vmid }) => Failure(absent_message(
            run.kind,
            vmid,
            ": it has no snapshots to list",
        ))
        .into(),
        Err(failure) => failure.into(),
    }
}
