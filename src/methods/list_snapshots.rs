//! `listSnapshots`: records the guest's snapshot tree as `GET …/snapshot` shows it, as
//! `<vm|ct>-<vmid>-snapshots`.

use crate::args::Fields;
use crate::guest::locate::{absent_message, act_where_it_lives, as_guest_read, GuestRead, Located};
use crate::guest::reference::GuestRef;
use crate::guest::seen::Marks;
use crate::guest::snapshots::{read_tree, tree_write};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::run::Run;
use serde_json::Value;

/// Runs `listSnapshots`.
pub async fn list_snapshots<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let target = match Fields::of(args, "").and_then(|f| GuestRef::parse(&f)) {
        Ok(target) => target,
        Err(e) => return Failure::from(e).into(),
    };
    let read = async |at: &Located| read_tree(&run.pve(), run.kind, at, false).await;
    let placed = act_where_it_lives(run, &target, read).await;
    match placed.and_then(|placed| as_guest_read(run.kind, "the snapshots", placed)) {
        Ok(GuestRead::Read { at, value: tree }) => {
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
