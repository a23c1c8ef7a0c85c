//! Every record tells the truth after a failure (issue 24), in the core with the scripted host: a
//! state presented as current was read after the run's last change, or carries the before mark
//! with its time; a lock or `snapstate` PVE shows after a failed change is in the record.

use crate::bounds_tests::{migratable, run};
use crate::host::{HostError, HostErrorKind};
use crate::outcome::{Outcome, Verdict};
use crate::testing::{Answer, ScriptedHost};
use serde_json::{json, Value};

const STATUS: &str = "GET /nodes/pve1/qemu/100/status/current";
const LIST: &str = "GET /nodes/pve1/qemu/100/snapshot";
const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmsnapshot:100:root@pam!t:";

fn lost() -> Answer {
    Answer::Fail(HostError {
        kind: HostErrorKind::Network,
        message: "connection reset by peer".into(),
    })
}

/// The record written under `instance`.
fn record<'a>(outcome: &'a Outcome, instance: &str) -> &'a Value {
    &outcome
        .writes
        .iter()
        .find(|w| w.instance == instance)
        .unwrap_or_else(|| panic!("no {instance} in {outcome:?}"))
        .data
}

/// A stopped VM 100 holding snapshot `base` it descends from; `status` answers after the first.
fn with_base(host: &ScriptedHost, later: Value, tree_after: Value) {
    host.on(
        STATUS,
        [
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
            Answer::Data(later),
        ],
    );
    host.on(
        LIST,
        [
            Answer::Data(json!([
                {"name": "base", "snaptime": 10, "description": ""},
                {"name": "current", "parent": "base"}])),
            Answer::Data(tree_after),
        ],
    );
}

#[test]
fn a_migration_that_arrived_is_recorded_as_read_after_the_move() {
    let host = ScriptedHost::new();
    migratable(
        &host,
        [Answer::Data(
            json!([{"vmid": 100, "type": "qemu", "node": "pve2"}]),
        )],
    );
    host.data(
        "GET /nodes/pve2/qemu/100/status/current",
        json!({"status": "stopped", "tags": "swamp"}),
    );
    let outcome = run(
        &host,
        "migrate",
        json!({}),
        json!({"vmid": 100, "targetNode": "pve2"}),
    );
    assert!(outcome.is_success(), "{outcome:?}");
    let record = &outcome.writes[0].data;
    assert_eq!(record["node"], "pve2");
    assert!(record.get("observedBeforeMutation").is_none(), "{record}");
    assert!(record.get("observedAt").is_none(), "{record}");
}

#[test]
fn a_snapshot_whose_answer_was_lost_records_the_tree_read_again() {
    let host = ScriptedHost::new();
    with_base(
        &host,
        json!({"status": "stopped", "tags": "swamp", "lock": "snapshot"}),
        json!([{"name": "base", "snaptime": 10},
               {"name": "fresh", "parent": "base", "snapstate": "prepare", "snaptime": 20},
               {"name": "current", "parent": "base"}]),
    );
    host.on("POST /nodes/pve1/qemu/100/snapshot", [lost()]);
    let outcome = run(
        &host,
        "snapshot",
        json!({}),
        json!({"vmid": 100, "name": "fresh"}),
    );
    assert!(!outcome.is_success());
    let tree = record(&outcome, "vm-100-snapshots");
    assert_eq!(tree["snapshots"][1]["name"], "fresh", "{tree}");
    assert_eq!(tree["snapshots"][1]["snapstate"], "prepare");
    assert_eq!(tree["outcome"], "unknown");
    assert_eq!(tree["observedBeforeMutation"], false);
    let guest = record(&outcome, "vm-100");
    assert_eq!(guest["lock"], "snapshot");
    assert_eq!(guest["observedBeforeMutation"], false);
}

#[test]
fn a_snapshot_whose_answer_was_lost_and_list_cannot_be_read_again_is_marked_as_before() {
    let host = ScriptedHost::new();
    let refused = Answer::Error(403, "Permission check failed (/vms/100, VM.Audit)".into());
    host.on(
        STATUS,
        [
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
            refused.clone(),
        ],
    );
    host.on(LIST, [Answer::Data(json!([{"name": "current"}])), refused]);
    host.on("POST /nodes/pve1/qemu/100/snapshot", [lost()]);
    let outcome = run(
        &host,
        "snapshot",
        json!({}),
        json!({"vmid": 100, "name": "fresh"}),
    );
    let tree = record(&outcome, "vm-100-snapshots");
    assert_eq!(tree["snapshots"], json!([]));
    assert_eq!(tree["observedBeforeMutation"], true);
    assert!(tree["observedAt"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
    assert_eq!(record(&outcome, "vm-100")["observedBeforeMutation"], true);
}

/// A rollback or deleteSnapshot of `base` whose task fails.
fn failed_task(host: &ScriptedHost, route: &str) {
    let upid = UPID.replace("qmsnapshot", "qmrollback");
    host.data(route, json!(upid));
    host.data(
        &format!("GET /nodes/pve1/tasks/{upid}/status"),
        json!({"status": "stopped", "exitstatus": "storage error"}),
    );
}

#[test]
fn a_failed_rollback_records_the_rollback_lock_and_the_state_read_after_it() {
    let host = ScriptedHost::new();
    host.on(
        STATUS,
        [
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
            Answer::Data(json!({"status": "stopped", "tags": "swamp", "lock": "rollback"})),
        ],
    );
    host.data(
        LIST,
        json!([{"name": "base", "snaptime": 10}, {"name": "current", "parent": "base"}]),
    );
    failed_task(&host, "POST /nodes/pve1/qemu/100/snapshot/base/rollback");
    let outcome = run(
        &host,
        "rollback",
        json!({}),
        json!({"vmid": 100, "name": "base"}),
    );
    assert!(!outcome.is_success());
    let guest = record(&outcome, "vm-100");
    assert_eq!(guest["status"], "stopped");
    assert_eq!(guest["lock"], "rollback");
    assert!(guest.get("observedBeforeMutation").is_none(), "{guest}");
}

#[test]
fn a_failed_delete_snapshot_records_the_snapstate_and_lock_it_left() {
    let host = ScriptedHost::new();
    with_base(
        &host,
        json!({"status": "stopped", "tags": "swamp", "lock": "snapshot-delete"}),
        json!([{"name": "base", "snaptime": 10, "snapstate": "delete"},
               {"name": "current", "parent": "base"}]),
    );
    failed_task(&host, "DELETE /nodes/pve1/qemu/100/snapshot/base");
    let outcome = run(
        &host,
        "deleteSnapshot",
        json!({}),
        json!({"vmid": 100, "name": "base"}),
    );
    assert!(!outcome.is_success());
    let tree = record(&outcome, "vm-100-snapshots");
    assert_eq!(tree["snapshots"][0]["snapstate"], "delete", "{tree}");
    assert!(tree.get("observedBeforeMutation").is_none());
    assert_eq!(record(&outcome, "vm-100")["lock"], "snapshot-delete");
}

#[test]
fn a_reboot_whose_answer_was_lost_records_the_stopped_moment_it_read_with_an_unknown_outcome() {
    // PVE's qmreboot shuts QEMU down, and `qm cleanup` starts it again moments later: a read
    // between the two shows the guest stopped, with no lock — true then, and all the run knows.
    let host = ScriptedHost::new();
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
    );
    host.data("GET /nodes/pve1/qemu/100/config", json!({}));
    host.on(
        STATUS,
        [
            Answer::Data(
                json!({"status": "running", "qmpstatus": "running", "tags": "swamp", "pid": 10}),
            ),
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
        ],
    );
    host.on("POST /nodes/pve1/qemu/100/status/reboot", [lost()]);
    let outcome = run(&host, "reboot", json!({}), json!({"vmid": 100}));
    let Verdict::Failed { message } = &outcome.verdict else {
        panic!("a reboot whose answer was lost succeeded: {outcome:?}");
    };
    assert!(
        message.contains("whether PVE carried it out is unknown"),
        "{message}"
    );
    let guest = record(&outcome, "vm-100");
    assert_eq!(guest["status"], "stopped", "{guest}");
    assert_eq!(guest["outcome"], "unknown", "{guest}");
    assert_eq!(guest["observedBeforeMutation"], false, "{guest}");
}

#[test]
fn a_file_write_pve_refused_records_no_bytes_written() {
    let host = ScriptedHost::new();
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
    );
    host.on(
        "POST /nodes/pve1/qemu/100/agent/file-write",
        [Answer::Error(500, "QEMU guest agent is not running".into())],
    );
    let args = json!({"vmid": 100, "path": "/etc/motd", "content": "hello", "mode": "0644"});
    let outcome = run(&host, "fileWrite", json!({}), args);
    assert!(!outcome.is_success(), "{outcome:?}");
    let file = record(&outcome, "vm-100-file");
    assert_eq!(file["bytes"], 0, "{file}");
    assert!(file.get("chunks").is_none(), "{file}");
    assert!(file.get("mode").is_none(), "no chmod ran: {file}");
    assert_eq!(file["verified"], false, "{file}");
}

#[test]
fn a_resize_whose_answer_was_lost_records_an_unknown_outcome() {
    let host = ScriptedHost::new();
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
    );
    host.data(STATUS, json!({"status": "stopped", "tags": "swamp"}));
    host.data(
        "GET /nodes/pve1/qemu/100/config",
        json!({"scsi0": "local-lvm:vm-100-disk-0,size=8G"}),
    );
    host.on("PUT /nodes/pve1/qemu/100/resize", [lost()]);
    let args = json!({"vmid": 100, "disk": "scsi0", "size": "+1G"});
    let outcome = run(&host, "resizeDisk", json!({}), args);
    assert!(!outcome.is_success(), "{outcome:?}");
    let guest = record(&outcome, "vm-100");
    assert_eq!(guest["outcome"], "unknown", "{guest}");
}
