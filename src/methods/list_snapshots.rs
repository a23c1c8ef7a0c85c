//! `listSnapshots`: records the guest's snapshot tree as `GET …/snapshot` shows it, as
//! `<vm|ct>-<vmid>-snapshots`.

use crate::guest::locate::Located;
use crate::guest::seen::Marks;
use crate::guest::snapshots::{tree_of, tree_write};
use crate::host::Host;
use crate::methods::get_config::{read_guest, target_of, GuestReading};
use crate::outcome::Outcome;
use crate::pve::endpoints;
use crate::pve::error::PveError;
use crate::pve::request::PveRequest;
use crate::run::Run;
use serde_json::Value;
use std::future::Future;

/// Runs `listSnapshots`: one read of `GET …/snapshot` where the guest lives, through
/// `getConfig`'s one future ([`read_guest`]).
pub fn list_snapshots<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
    let reading = GuestReading {
        request: endpoints::snapshot_list,
        what: "the snapshots",
        absent: ": it has no snapshots to list",
        record: listed,
    };
    read_guest(run, target_of(args), reading)
}

/// The snapshots record of the guest at `at`, from the tree it answered.
fn listed<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    _: &PveRequest,
    data: Value,
) -> Result<Outcome, PveError> {
    let tree = tree_of(data)?;
    let summary = format!(
        "{} {} on node {}: {}",
        run.kind.noun(),
        at.vmid,
        at.node,
        tree.describe()
    );
    Ok(Outcome::succeeded(
        vec![tree_write(run, at, &tree, Marks::default())],
        summary,
    ))
}

#[cfg(test)]
mod tests {
    use crate::outcome::{Outcome, Verdict};
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, failure_of, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn run_list(host: &ScriptedHost) -> Outcome {
        let args = api_args(json!({"vmid": 100}));
        run_method_of(GuestKind::Qemu, host, "listSnapshots", &args)
    }

    fn on_node(host: &ScriptedHost, node: &str) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": node}]),
        );
    }

    #[test]
    fn the_tree_is_recorded_where_the_guest_lives() {
        let host = ScriptedHost::new();
        on_node(&host, "pve2");
        host.data(
            "GET /nodes/pve2/qemu/100/snapshot",
            json!([{"name": "base"}, {"name": "current", "parent": "base"}]),
        );
        let outcome = run_list(&host);
        let Verdict::Succeeded { summary } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            summary.starts_with("VM 100 on node pve2: base"),
            "{summary}"
        );
        assert_eq!(outcome.writes.len(), 1);
    }

    #[test]
    fn an_absent_guest_fails_without_a_record() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/resources", json!([]));
        host.data("GET /cluster/nextid", json!("100"));
        let outcome = run_list(&host);
        assert!(outcome.writes.is_empty());
        let message = failure_of(&outcome);
        assert!(
            message.ends_with(": it has no snapshots to list"),
            "{message}"
        );
    }

    #[test]
    fn a_list_that_is_no_tree_fails_naming_the_read() {
        let host = ScriptedHost::new();
        on_node(&host, "pve1");
        host.on(
            "GET /nodes/pve1/qemu/100/snapshot",
            [Answer::Data(json!({"not": "a list"}))],
        );
        let outcome = run_list(&host);
        let message = failure_of(&outcome);
        assert!(
            message.contains("read the snapshots of VM 100 on node pve1"),
            "{message}"
        );
    }
}
