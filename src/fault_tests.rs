//! Native tests of the fixes the end-to-end fault matrix (tests/faults/) led to: each one the
//! decision a cell exposed, driven through `dispatch::run_method` with a scripted host.

use crate::dispatch::run_method;
use crate::host::{HostError, HostErrorKind};
use crate::outcome::{Outcome, Verdict};
use crate::testing::{api_args, block_on, Answer, ScriptedHost};
use serde_json::{json, Value};

const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmstart:100:root@pam!t:";

fn run(host: &ScriptedHost, method: &str, args: Value) -> Outcome {
    let mut all = api_args(json!({"taskTimeoutSec": 5}));
    for (k, v) in args.as_object().unwrap() {
        all[k] = v.clone();
    }
    block_on(run_method(host, "qemu", method, &all))
}

fn message(outcome: &Outcome) -> &str {
    match &outcome.verdict {
        Verdict::Failed { message } => message,
        Verdict::Succeeded { summary } => panic!("expected a failure, got success: {summary}"),
    }
}

fn sent(host: &ScriptedHost, route: &str) -> usize {
    host.routes_called().iter().filter(|r| *r == route).count()
}

fn lost(kind: HostErrorKind) -> Answer {
    Answer::Fail(HostError {
        kind,
        message: "connection closed before message completed".into(),
    })
}

/// VM 100 on pve1, `status` as given, with a config holding a uuid and an 8G scsi0.
fn guest(host: &ScriptedHost, status: &str) {
    listed(host, status);
    host.data(
        "GET /nodes/pve1/qemu/100/config",
        json!({"smbios1": "uuid=u-1", "scsi0": "local-lvm:vm-100-disk-0,size=8G"}),
    );
}

/// VM 100 on pve1 without a scripted config (the test scripts its answers).
fn listed(host: &ScriptedHost, status: &str) {
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": 100, "type": "qemu", "node": "pve1", "name": "web"}]),
    );
    host.data(
        "GET /nodes/pve1/qemu/100/status/current",
        json!({"status": status, "qmpstatus": status, "name": "web", "tags": "swamp"}),
    );
}

#[test]
fn a_config_that_is_not_an_object_fails_lookup_instead_of_dropping_the_identity() {
    let host = ScriptedHost::new();
    listed(&host, "running");
    host.on(
        "GET /nodes/pve1/qemu/100/config",
        [Answer::Data(json!("unexpected"))],
    );
    let outcome = run(&host, "lookup", json!({"vmid": 100}));
    assert!(
        message(&outcome).contains("not a guest config"),
        "{outcome:?}"
    );
    assert!(outcome.writes.is_empty());
}

#[test]
fn absence_is_claimed_only_when_nextid_echoes_the_vmid() {
    let host = ScriptedHost::new();
    host.data("GET /cluster/resources", json!([]));
    host.data("GET /cluster/nextid", json!("unexpected"));
    let outcome = run(&host, "lookup", json!({"vmid": 100}));
    assert!(
        message(&outcome).contains("where VMID 100 was expected back"),
        "{outcome:?}"
    );
    assert!(
        outcome.writes.is_empty(),
        "no absent record on a garbled answer"
    );

    let echoed = ScriptedHost::new();
    echoed.data("GET /cluster/resources", json!([]));
    echoed.data("GET /cluster/nextid", json!("100"));
    let outcome = run(&echoed, "lookup", json!({"vmid": 100}));
    assert!(outcome.is_success(), "{outcome:?}");
    assert_eq!(outcome.writes[0].data["status"], "absent");
}

#[test]
fn an_unreadable_cluster_list_names_the_guest_it_was_for() {
    let host = ScriptedHost::new();
    host.on(
        "GET /cluster/resources",
        [Answer::Error(500, "cluster not ready - no quorum?".into())],
    );
    let outcome = run(&host, "lookup", json!({"vmid": 100}));
    assert!(
        message(&outcome).starts_with("could not list the cluster's guests to find VM 100"),
        "{outcome:?}"
    );
}

#[test]
fn a_lost_start_answer_is_sent_once_and_leaves_the_effect_unknown() {
    for answer in [
        lost(HostErrorKind::Network),
        lost(HostErrorKind::Timeout),
        Answer::Data(json!("unexpected")),
    ] {
        let host = ScriptedHost::new();
        guest(&host, "stopped");
        host.on("POST /nodes/pve1/qemu/100/status/start", [answer]);
        let outcome = run(&host, "start", json!({"vmid": 100}));
        let text = message(&outcome);
        assert!(
            text.starts_with("start VM 100 on node pve1: the request was sent, but"),
            "{text}"
        );
        assert!(text.contains("whether PVE carried it out is unknown — it was not sent again"));
        assert!(
            text.contains("check the guest's state (run lookup) and the task list of node pve1")
        );
        assert_eq!(sent(&host, "POST /nodes/pve1/qemu/100/status/start"), 1);
        assert_eq!(
            outcome.writes[0].data["status"], "stopped",
            "only what was observed"
        );
    }
}

#[test]
fn a_refused_start_is_a_plain_refusal() {
    let host = ScriptedHost::new();
    guest(&host, "stopped");
    host.on(
        "POST /nodes/pve1/qemu/100/status/start",
        [Answer::Error(500, "VM is locked (backup)".into())],
    );
    let outcome = run(&host, "start", json!({"vmid": 100}));
    assert!(message(&outcome).starts_with("could not start VM 100 on node pve1: VM is locked"));
    assert!(!message(&outcome).contains("unknown"));
}

#[test]
fn a_failed_task_names_the_action_and_unexpected_status_says_the_effect_is_unknown() {
    let host = ScriptedHost::new();
    guest(&host, "stopped");
    host.data("POST /nodes/pve1/qemu/100/status/start", json!(UPID));
    host.data(
        &format!("GET /nodes/pve1/tasks/{UPID}/status"),
        json!({"status": "stopped", "exitstatus": "unexpected status"}),
    );
    let outcome = run(&host, "start", json!({"vmid": 100}));
    let text = message(&outcome);
    assert!(
        text.starts_with("start VM 100 on node pve1: task qmstart"),
        "{text}"
    );
    assert!(text.contains("PVE lost track of the task"), "{text}");
}

#[test]
fn an_unreadable_task_status_fails_start_saying_it_may_still_finish() {
    let host = ScriptedHost::new();
    guest(&host, "stopped");
    host.data("POST /nodes/pve1/qemu/100/status/start", json!(UPID));
    host.on(
        &format!("GET /nodes/pve1/tasks/{UPID}/status"),
        [Answer::Error(
            403,
            "Permission check failed (/nodes/pve1, Sys.Audit)".into(),
        )],
    );
    let outcome = run(&host, "start", json!({"vmid": 100}));
    let text = message(&outcome);
    assert!(
        text.starts_with("start VM 100 on node pve1: the qmstart task was started"),
        "{text}"
    );
    assert!(text.contains("may still finish"), "{text}");
}

fn shutdown_script(host: &ScriptedHost, task: Answer, after: &str) {
    guest(host, "running");
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
            Answer::Data(json!({"status": after, "qmpstatus": after, "tags": "swamp"})),
        ],
    );
    let upid = UPID.replace("qmstart", "qmshutdown");
    host.data("POST /nodes/pve1/qemu/100/status/shutdown", json!(upid));
    host.on(&format!("GET /nodes/pve1/tasks/{upid}/status"), [task]);
}

#[test]
fn shutdown_whose_task_end_was_not_observed_is_decided_by_the_state_and_says_so() {
    let host = ScriptedHost::new();
    shutdown_script(
        &host,
        Answer::Error(500, "unable to read tail (got timeout)".into()),
        "stopped",
    );
    let outcome = run(&host, "shutdown", json!({"vmid": 100, "timeoutSec": 10}));
    assert!(outcome.is_success(), "{outcome:?}");
    let record = &outcome.writes[0].data;
    assert_eq!(record["status"], "stopped");
    assert!(record["warnings"][0]
        .as_str()
        .unwrap()
        .contains("the shutdown task's end was not observed"));
}

#[test]
fn shutdown_whose_task_failed_reads_the_state_once() {
    let host = ScriptedHost::new();
    shutdown_script(
        &host,
        Answer::Data(
            json!({"status": "stopped", "exitstatus": "VM quit/powerdown failed - got timeout"}),
        ),
        "running",
    );
    let outcome = run(&host, "shutdown", json!({"vmid": 100, "timeoutSec": 10}));
    assert!(message(&outcome).contains("powerdown failed"));
    assert!(
        host.elapsed_ms() < 1_000.0,
        "no waiting after a failed task"
    );
}

#[test]
fn shutdown_whose_task_failed_gives_its_one_state_read_time_to_answer_and_says_what_it_saw() {
    // A real node: the task failed, no budget was left, and the one state read after it went out
    // with no time to answer ("not within 0s"). It takes 50 ms here: it is answered and named.
    let host = ScriptedHost::new();
    guest(&host, "running");
    let after = json!({"status": "running", "qmpstatus": "running", "tags": "swamp",
        "ha": {"managed": 1, "state": "started"}});
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [Answer::Slow(50, Box::new(Answer::Data(after)))],
    );
    let upid = UPID.replace("qmstart", "qmshutdown");
    host.data("POST /nodes/pve1/qemu/100/status/shutdown", json!(upid));
    host.data(
        &format!("GET /nodes/pve1/tasks/{upid}/status"),
        json!({"status": "stopped", "exitstatus": "VM quit/powerdown failed - got timeout"}),
    );
    let outcome = run(&host, "shutdown", json!({"vmid": 100, "timeoutSec": 10}));
    let text = message(&outcome);
    assert!(
        text.contains("not at its one read (no time was left to wait); last observed: status running, qmpstatus running, HA-managed (HA state started)"),
        "{text}"
    );
}

fn exec_script(host: &ScriptedHost, statuses: Vec<Answer>) {
    guest(host, "running");
    host.data("POST /nodes/pve1/qemu/100/agent/exec", json!({"pid": 7}));
    host.on("GET /nodes/pve1/qemu/100/agent/exec-status", statuses);
}

#[test]
fn a_command_recorded_as_timed_out_was_seen_running_at_its_timeout_sec() {
    let host = ScriptedHost::new();
    exec_script(&host, vec![Answer::Data(json!({"exited": 0}))]);
    let outcome = run(
        &host,
        "guestExec",
        json!({"vmid": 100, "command": ["sleep", "5"], "timeoutSec": 1}),
    );
    assert!(
        message(&outcome).contains("did not finish within timeoutSec=1s"),
        "{outcome:?}"
    );
    let record = &outcome.writes[0].data;
    assert_eq!(record["timedOut"], true);
    let duration = record["durationMs"].as_u64().unwrap_or_default();
    assert!(duration >= 1_000, "seen running only until {duration} ms");
    // And the wait ended within one read's time after the bound.
    assert!(
        host.elapsed_ms() <= 1_000.0 + crate::poll::ANSWER_MS,
        "{}",
        host.elapsed_ms()
    );
}

#[test]
fn an_exec_status_without_exited_is_polled_again_like_an_unreadable_one() {
    let host = ScriptedHost::new();
    exec_script(
        &host,
        vec![
            Answer::Data(json!("unexpected")),
            Answer::Data(json!({"exited": 1, "exitcode": 0, "out-data": "ok\n"})),
        ],
    );
    let outcome = run(
        &host,
        "guestExec",
        json!({"vmid": 100, "command": ["true"]}),
    );
    assert!(outcome.is_success(), "{outcome:?}");
    assert_eq!(outcome.writes[0].data["stdout"], "ok\n");
}

#[test]
fn a_lost_result_says_why_and_that_the_command_may_still_run() {
    let host = ScriptedHost::new();
    exec_script(
        &host,
        vec![Answer::Error(
            500,
            "Agent error: Invalid parameter 'pid'".into(),
        )],
    );
    let outcome = run(
        &host,
        "guestExec",
        json!({"vmid": 100, "command": ["true"]}),
    );
    let text = message(&outcome);
    assert!(
        text.contains("the agent no longer knows the process"),
        "{text}"
    );
    assert!(
        text.contains("it may still be running in the guest"),
        "{text}"
    );
    assert_eq!(outcome.writes[0].data["outcome"], "resultLost");

    let refused = ScriptedHost::new();
    exec_script(
        &refused,
        vec![Answer::Error(
            403,
            "Permission check failed (/vms/100, VM.GuestAgent.Unrestricted)".into(),
        )],
    );
    let outcome = run(
        &refused,
        "guestExec",
        json!({"vmid": 100, "command": ["true"]}),
    );
    let text = message(&outcome);
    assert!(text.contains("the API token lacks the privilege"), "{text}");
    assert!(!text.contains("no longer knows"), "{text}");
}

#[test]
fn a_lost_exec_answer_may_have_run_and_is_not_sent_again() {
    let host = ScriptedHost::new();
    guest(&host, "running");
    host.on(
        "POST /nodes/pve1/qemu/100/agent/exec",
        [Answer::Error(502, "Bad Gateway".into())],
    );
    let outcome = run(
        &host,
        "guestExec",
        json!({"vmid": 100, "command": ["true"]}),
    );
    assert!(
        message(&outcome).contains("the command may have run in the guest; it was not sent again")
    );
    assert_eq!(sent(&host, "POST /nodes/pve1/qemu/100/agent/exec"), 1);
    assert_eq!(outcome.writes[0].data["outcome"], "unconfirmed");
}

#[test]
fn resize_reads_a_garbled_config_as_unreadable_not_as_a_missing_disk() {
    let host = ScriptedHost::new();
    listed(&host, "stopped");
    host.on(
        "GET /nodes/pve1/qemu/100/config",
        [
            Answer::Data(json!({"smbios1": "uuid=u-1"})),
            Answer::Data(json!("unexpected")),
        ],
    );
    let outcome = run(&host, "resizeDisk", json!({"vmid": 100, "size": "+1G"}));
    let text = message(&outcome);
    assert!(
        text.starts_with("could not read the config of VM 100"),
        "{text}"
    );
    assert!(!text.contains("has no disk"), "{text}");
}

#[test]
fn resize_whose_size_cannot_be_read_back_warns_against_growing_again() {
    let host = ScriptedHost::new();
    listed(&host, "stopped");
    let config = json!({"smbios1": "uuid=u-1", "scsi0": "local-lvm:vm-100-disk-0,size=8G"});
    host.on(
        "GET /nodes/pve1/qemu/100/config",
        [
            Answer::Data(config.clone()),
            Answer::Data(config),
            Answer::Error(500, "got timeout".into()),
        ],
    );
    let upid = UPID.replace("qmstart", "resize");
    host.data("PUT /nodes/pve1/qemu/100/resize", json!(upid));
    host.data(
        &format!("GET /nodes/pve1/tasks/{upid}/status"),
        json!({"status": "stopped", "exitstatus": "OK"}),
    );
    let outcome = run(&host, "resizeDisk", json!({"vmid": 100, "size": "+1G"}));
    let text = message(&outcome);
    assert!(
        text.contains("ended, but its size could not be read back"),
        "{text}"
    );
    assert!(
        text.contains("a relative size (+N) would grow the disk again"),
        "{text}"
    );
}

#[test]
fn a_lost_config_change_is_unknown_and_points_at_getconfig() {
    let host = ScriptedHost::new();
    guest(&host, "stopped");
    host.on(
        "PUT /nodes/pve1/qemu/100/config",
        [lost(HostErrorKind::Network)],
    );
    let outcome = run(
        &host,
        "setConfig",
        json!({"vmid": 100, "config": {"memory": 2048}}),
    );
    let text = message(&outcome);
    assert!(
        text.contains("whether PVE carried it out is unknown"),
        "{text}"
    );
    assert!(text.contains("run getConfig"), "{text}");
    assert_eq!(sent(&host, "PUT /nodes/pve1/qemu/100/config"), 1);
}

#[test]
fn sync_quotes_a_garbled_node_list_and_flags_an_unreadable_identity() {
    let host = ScriptedHost::new();
    host.data("GET /nodes", json!("unexpected"));
    let outcome = run(&host, "sync", json!({"scope": "cluster"}));
    assert!(message(&outcome)
        .contains("GET /nodes answered \"unexpected\" where a list of nodes was expected"));

    let host = ScriptedHost::new();
    host.data(
        "GET /nodes/pve1/qemu",
        json!([{"vmid": 100, "name": "web", "status": "running", "qmpstatus": "running"}]),
    );
    host.data("GET /nodes/pve1/qemu/100/config", json!("unexpected"));
    // A stored record naming another guest is what makes sync read the config (identity check).
    host.records.borrow_mut().insert(
        "vm-100".into(),
        json!({"vmid": 100, "present": true, "name": "old-name"}),
    );
    let outcome = run(&host, "sync", json!({}));
    assert!(outcome.is_success(), "{outcome:?}");
    assert!(outcome.writes[0].data["warnings"][0]
        .as_str()
        .unwrap()
        .contains("identity not checked"));
}

#[test]
fn another_node_unreachable_is_retried_then_named() {
    let host = ScriptedHost::new();
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": 100, "type": "qemu", "node": "pve2"}]),
    );
    host.on(
        "GET /nodes/pve2/qemu/100/status/current",
        [Answer::Error(595, "no route to host".into())],
    );
    let outcome = run(&host, "lookup", json!({"vmid": 100}));
    let text = message(&outcome);
    assert!(text.contains("no route to host (HTTP 595)"), "{text}");
    assert!(
        text.contains("could not reach the node this request is for"),
        "{text}"
    );
    assert_eq!(sent(&host, "GET /nodes/pve2/qemu/100/status/current"), 3);
}

#[test]
fn garbled_node_reads_quote_the_answer() {
    let host = ScriptedHost::new();
    host.data("GET /nodes/pve1/status", json!({"uptime": 5}));
    host.data("GET /nodes/pve1/disks/list", json!("unexpected"));
    let outcome = run(&host, "nodeStatus", json!({}));
    assert!(
        message(&outcome).contains("answered \"unexpected\" where a list of disks was expected")
    );
    assert_eq!(outcome.writes[0].data["disksAvailable"], false);

    let host = ScriptedHost::new();
    host.data("GET /version", json!("unexpected"));
    let outcome = run(&host, "check:transport-reachable", json!({}));
    assert!(message(&outcome).contains("answered \"unexpected\", without a version"));
}
