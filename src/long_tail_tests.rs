//! Native tests of the long-tail rules (issue 10), driven through `dispatch::run_method` with a
//! scripted host: locks are "not yet", only known states are observations, one wait budget,
//! secrets scrubbed from every echo, bounded quotes, records that match their schema.

use crate::dispatch::run_method;
use crate::host::LogLevel;
use crate::outcome::{Outcome, Verdict};
use crate::poll::ANSWER_MS;
use crate::testing::{api_args, block_on, Answer, ScriptedHost};
use serde_json::{json, Value};

const SECRET: &str = "SECRET-in-tests";
const STOP_UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmstop:100:root@pam!t:";

fn run(host: &ScriptedHost, model: &str, method: &str, args: Value) -> Outcome {
    let mut all = api_args(json!({"taskTimeoutSec": 5}));
    for (k, v) in args.as_object().unwrap() {
        all[k] = v.clone();
    }
    block_on(run_method(host, model, method, &all))
}

fn message(outcome: &Outcome) -> &str {
    match &outcome.verdict {
        Verdict::Failed { message } => message,
        Verdict::Succeeded { summary } => panic!("expected a failure, got success: {summary}"),
    }
}

fn summary(outcome: &Outcome) -> &str {
    match &outcome.verdict {
        Verdict::Succeeded { summary } => summary,
        Verdict::Failed { message } => panic!("expected a success, got: {message}"),
    }
}

fn vm(host: &ScriptedHost, status: Value) {
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": 100, "type": "qemu", "node": "pve1", "name": "web"}]),
    );
    host.data("GET /nodes/pve1/qemu/100/status/current", status);
    host.data(
        "GET /nodes/pve1/qemu/100/config",
        json!({"smbios1": "uuid=u-1"}),
    );
}

/// Everything the run said: records, verdict and log lines, as one text.
fn everything_said(host: &ScriptedHost, outcome: &Outcome) -> String {
    let logs: Vec<String> = host.logs.borrow().iter().map(|(_, m)| m.clone()).collect();
    format!(
        "{}\n{}",
        serde_json::to_string(outcome).unwrap(),
        logs.join("\n")
    )
}

#[test]
fn stop_of_a_stopped_but_locked_guest_waits_for_the_lock_before_succeeding() {
    let host = ScriptedHost::new();
    vm(
        &host,
        json!({"status": "stopped", "tags": "swamp", "lock": "backup"}),
    );
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [
            Answer::Data(json!({"status": "stopped", "tags": "swamp", "lock": "backup"})),
            Answer::Data(json!({"status": "stopped", "tags": "swamp", "lock": "backup"})),
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
        ],
    );
    let outcome = run(&host, "qemu", "stop", json!({"vmid": 100}));
    assert!(summary(&outcome).contains("already stopped"));
    assert_eq!(
        outcome.writes[0].data.get("lock"),
        None,
        "the record shows the cleared lock"
    );
}

#[test]
fn a_change_waits_out_a_lock_that_clears_inside_the_budget_then_acts() {
    const START_UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmstart:100:root@pam!t:";
    let host = ScriptedHost::new();
    vm(
        &host,
        json!({"status": "stopped", "tags": "swamp", "lock": "backup"}),
    );
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [
            Answer::Data(json!({"status": "stopped", "tags": "swamp", "lock": "backup"})),
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
        ],
    );
    host.data("POST /nodes/pve1/qemu/100/status/start", json!(START_UPID));
    host.data(
        &format!("GET /nodes/pve1/tasks/{START_UPID}/status"),
        json!({"status": "stopped", "exitstatus": "OK"}),
    );
    let outcome = run(&host, "qemu", "start", json!({"vmid": 100}));
    assert!(summary(&outcome).contains("is running"), "{outcome:?}");
    assert_eq!(
        host.routes_called()
            .iter()
            .filter(|r| *r == "POST /nodes/pve1/qemu/100/status/start")
            .count(),
        1,
        "the start is sent once the lock is gone"
    );
    assert_eq!(outcome.writes[0].data.get("lock"), None);
}

#[test]
fn a_lock_that_outlasts_the_budget_fails_naming_it() {
    let host = ScriptedHost::new();
    vm(
        &host,
        json!({"status": "stopped", "tags": "swamp", "lock": "snapshot"}),
    );
    let outcome = run(&host, "qemu", "stop", json!({"vmid": 100}));
    let message = message(&outcome);
    assert!(message.contains("still locked: snapshot"), "{message}");
    assert!(message.contains("VM is locked (snapshot)"), "{message}");
    assert_eq!(outcome.writes[0].data["lock"], "snapshot");
}

/// A clone re-run's target: PVE says VMID 300 is taken, and it lists guest web2 there.
fn clone_target_exists(host: &ScriptedHost) {
    host.on(
        "GET /cluster/nextid",
        [Answer::Error(
            400,
            "Parameter verification failed. (vmid: VM 300 already exists)".into(),
        )],
    );
    host.data(
        "GET /cluster/resources",
        json!([{"vmid": 300, "type": "qemu", "node": "pve1", "name": "web2"}]),
    );
    host.data("GET /nodes/pve1/qemu/300/config", json!({}));
}

#[test]
fn a_re_run_of_clone_that_finds_the_guest_under_lock_clone_is_not_done() {
    let host = ScriptedHost::new();
    clone_target_exists(&host);
    host.data(
        "GET /nodes/pve1/qemu/300/status/current",
        json!({"status": "stopped", "name": "web2", "tags": "swamp", "lock": "clone"}),
    );
    let args = json!({"templateId": 9000, "vmid": 300, "name": "web2"});
    let outcome = run(&host, "qemu", "clone", args);
    let message = message(&outcome);
    assert!(message.contains("it is locked (clone)"), "{message}");
    assert!(message.contains("not counted as done"), "{message}");
    assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
}

#[test]
fn a_re_run_of_clone_waits_for_the_lock_and_then_counts_the_finished_guest() {
    let host = ScriptedHost::new();
    clone_target_exists(&host);
    let locked = json!({"status": "stopped", "name": "web2", "tags": "swamp", "lock": "clone"});
    host.on(
        "GET /nodes/pve1/qemu/300/status/current",
        [
            Answer::Data(locked.clone()),
            Answer::Data(locked),
            Answer::Data(json!({"status": "stopped", "name": "web2", "tags": "swamp"})),
        ],
    );
    let args = json!({"templateId": 9000, "vmid": 300, "name": "web2"});
    let outcome = run(&host, "qemu", "clone", args);
    assert!(summary(&outcome).contains("already is the requested clone"));
}

#[test]
fn lookup_of_a_status_outside_pves_set_fails_and_writes_nothing() {
    for status in [json!("unknown"), json!(""), json!("paused")] {
        let host = ScriptedHost::new();
        vm(&host, json!({ "status": status }));
        let outcome = run(&host, "qemu", "lookup", json!({"vmid": 100}));
        assert!(
            message(&outcome).contains("not one of PVE's states"),
            "{status}"
        );
        assert!(outcome.writes.is_empty(), "{status}");
    }
}

#[test]
fn sync_writes_the_determined_guests_and_fails_naming_the_others() {
    let host = ScriptedHost::new();
    host.data(
        "GET /nodes/pve1/qemu",
        json!([
            {"vmid": 100, "status": "running", "qmpstatus": "running", "name": "a"},
            {"vmid": 101, "status": "unknown", "name": "b"},
            {"vmid": 102, "status": "running", "qmpstatus": "", "name": "c"}
        ]),
    );
    let outcome = run(&host, "qemu", "sync", json!({}));
    let message = message(&outcome);
    assert!(
        message.contains("\"vmid\":101") && message.contains("\"vmid\":102"),
        "{message}"
    );
    let written: Vec<&str> = outcome.writes.iter().map(|w| w.instance.as_str()).collect();
    assert_eq!(written, vec!["vm-100"]);
    assert!(!serde_json::to_string(&outcome.writes)
        .unwrap()
        .contains("unknown"));
}

#[test]
fn lookup_and_sync_say_in_the_summary_that_a_guest_is_locked() {
    let host = ScriptedHost::new();
    vm(&host, json!({"status": "stopped", "lock": "clone"}));
    let outcome = run(&host, "qemu", "lookup", json!({"vmid": 100}));
    assert!(summary(&outcome).contains("locked (clone)"));
    host.data(
        "GET /nodes/pve1/qemu",
        json!([{"vmid": 100, "status": "stopped", "lock": "migrate", "name": "web"}]),
    );
    let outcome = run(&host, "qemu", "sync", json!({}));
    assert!(
        summary(&outcome).contains("locked (an operation on them has not finished): 100 (migrate)")
    );
}

#[test]
fn a_task_that_ends_just_inside_the_budget_leaves_its_effect_only_the_rest() {
    let host = ScriptedHost::new();
    vm(
        &host,
        json!({"status": "running", "qmpstatus": "running", "tags": "swamp"}),
    );
    host.data("POST /nodes/pve1/qemu/100/status/stop", json!(STOP_UPID));
    // Ten polls of a running task take part of the 5 s budget; the wait for the effect gets only
    // the rest, its last read one read's time (ANSWER_MS) before the budget's end.
    let mut polls = vec![Answer::Data(json!({"status": "running"})); 10];
    polls.push(Answer::Data(
        json!({"status": "stopped", "exitstatus": "OK"}),
    ));
    host.on(&format!("GET /nodes/pve1/tasks/{STOP_UPID}/status"), polls);
    let started = host.elapsed_ms();
    let outcome = run(&host, "qemu", "stop", json!({"vmid": 100}));
    let waited = host.elapsed_ms() - started;
    assert!(message(&outcome).contains("did not reach status stopped"));
    assert!(
        (5_000.0 - ANSWER_MS..=5_300.0).contains(&waited),
        "one budget of 5 s, waited {waited} ms"
    );
}

#[test]
fn delete_spends_one_budget_on_stop_destroy_and_the_absence_check() {
    let host = ScriptedHost::new();
    let upid = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmdestroy:100:root@pam!t:";
    vm(
        &host,
        json!({"status": "running", "qmpstatus": "running", "tags": "swamp"}),
    );
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
        ],
    );
    host.data("POST /nodes/pve1/qemu/100/status/stop", json!(STOP_UPID));
    let mut polls = vec![Answer::Data(json!({"status": "running"})); 9];
    polls.push(Answer::Data(
        json!({"status": "stopped", "exitstatus": "OK"}),
    ));
    host.on(&format!("GET /nodes/pve1/tasks/{STOP_UPID}/status"), polls);
    host.data("DELETE /nodes/pve1/qemu/100", json!(upid));
    host.data(
        &format!("GET /nodes/pve1/tasks/{upid}/status"),
        json!({"status": "running"}),
    );
    let started = host.elapsed_ms();
    let outcome = run(&host, "qemu", "delete", json!({"vmid": 100}));
    let waited = host.elapsed_ms() - started;
    assert!(message(&outcome).contains("still running after taskTimeoutSec=5s"));
    assert!(
        waited <= 5_300.0,
        "stop and destroy share 5 s, waited {waited} ms"
    );
}

#[test]
fn a_401_echoing_the_authorization_header_is_scrubbed_everywhere() {
    let host = ScriptedHost::new();
    let header = format!("PVEAPIToken=root@pam!t={SECRET}");
    host.on(
        "GET /cluster/resources",
        [Answer::Error(
            401,
            format!("authentication failure: got header '{header}'"),
        )],
    );
    let outcome = run(&host, "qemu", "lookup", json!({"vmid": 100}));
    let said = everything_said(&host, &outcome);
    assert!(!said.contains(SECRET), "{said}");
    assert!(message(&outcome).contains("authentication failure: got header '***'"));
}

#[test]
fn a_200_body_echoing_the_token_is_scrubbed_from_the_record() {
    let host = ScriptedHost::new();
    vm(&host, json!({"status": "running", "qmpstatus": "running"}));
    host.data(
        "GET /nodes/pve1/qemu/100/pending",
        json!([{"key": "description", "value": format!("proxy saw {SECRET} and {}", "U0VDUkVULWluLXRlc3Rz")}]),
    );
    let outcome = run(&host, "qemu", "getConfig", json!({"vmid": 100}));
    let said = everything_said(&host, &outcome);
    assert!(
        !said.contains(SECRET) && !said.contains("U0VDUkVULWluLXRlc3Rz"),
        "{said}"
    );
}

#[test]
fn a_task_log_echoing_a_password_the_method_sent_is_scrubbed() {
    let host = ScriptedHost::new();
    vm(
        &host,
        json!({"status": "running", "qmpstatus": "running", "tags": "swamp"}),
    );
    host.data("POST /nodes/pve1/qemu/100/status/stop", json!(STOP_UPID));
    host.data(
        &format!("GET /nodes/pve1/tasks/{STOP_UPID}/status"),
        json!({"status": "stopped", "exitstatus": "stop failed"}),
    );
    host.data(
        &format!("GET /nodes/pve1/tasks/{STOP_UPID}/log"),
        json!([{"n": 1, "t": format!("token {SECRET} password=hunter2-long")}]),
    );
    let outcome = run(
        &host,
        "qemu",
        "stop",
        json!({"vmid": 100, "password": "hunter2-long"}),
    );
    let said = everything_said(&host, &outcome);
    assert!(
        !said.contains(SECRET) && !said.contains("hunter2-long"),
        "{said}"
    );
    assert!(message(&outcome).contains("token *** password=***"));
}

#[test]
fn a_200_kb_message_is_quoted_bounded_keeping_the_reason() {
    let host = ScriptedHost::new();
    let huge = format!("VM 100 is locked (backup){}", "x".repeat(200_000));
    host.on("GET /cluster/resources", [Answer::Error(500, huge)]);
    let outcome = run(&host, "qemu", "lookup", json!({"vmid": 100}));
    let message = message(&outcome);
    assert!(message.contains("VM 100 is locked (backup)xxx"));
    assert!(message.contains("more characters]"), "the cut is marked");
    assert!(message.len() < 4_000, "{} bytes", message.len());
    assert!(host.logs.borrow().iter().all(|(_, m)| m.len() < 4_000));
}

#[test]
fn huge_numbers_become_numbers_or_are_left_out_never_null() {
    let host = ScriptedHost::new();
    vm(
        &host,
        json!({"status": "running", "qmpstatus": "running", "cpu": 1e308, "maxmem": 18446744073709551616.0_f64,
            "mem": 9007199254740993_u64, "maxdisk": -1, "uptime": 1.5}),
    );
    let outcome = run(&host, "qemu", "lookup", json!({"vmid": 100}));
    let record = &outcome.writes[0].data;
    let nulls: Vec<&String> = record
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, v)| v.is_null())
        .map(|(k, _)| k)
        .collect();
    assert!(nulls.is_empty(), "{nulls:?}");
    assert_eq!(record.get("cpuPct"), None);
    assert_eq!(record.get("maxMemBytes"), None);
    assert!(
        record["memBytes"].is_f64(),
        "beyond 2^53 it is the nearest float"
    );
}

#[test]
fn the_log_never_carries_the_secret_even_at_debug() {
    let host = ScriptedHost::new();
    host.on(
        "GET /cluster/resources",
        [Answer::Error(
            502,
            format!("upstream said Authorization: PVEAPIToken=root@pam!t={SECRET}"),
        )],
    );
    let _ = run(&host, "qemu", "lookup", json!({"vmid": 100}));
    assert!(host
        .logs
        .borrow()
        .iter()
        .any(|(l, _)| *l == LogLevel::Debug));
    assert!(host.logs.borrow().iter().all(|(_, m)| !m.contains(SECRET)));
}

/// A stop whose answer is lost: the connection reset after the request went out.
fn lost_stop(host: &ScriptedHost) {
    host.on(
        "POST /nodes/pve1/qemu/100/status/stop",
        [Answer::Fail(crate::host::HostError {
            kind: crate::host::HostErrorKind::Network,
            message: "connection reset by peer".into(),
        })],
    );
}

#[test]
fn a_lost_stop_answer_reads_the_state_again_and_says_the_outcome_is_unknown() {
    let host = ScriptedHost::new();
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
        ],
    );
    lost_stop(&host);
    let outcome = run(&host, "qemu", "stop", json!({"vmid": 100}));
    assert!(message(&outcome).contains("is unknown"));
    let record = &outcome.writes[0].data;
    assert_eq!(record["status"], "stopped", "read after the lost answer");
    assert_eq!(record["outcome"], "unknown");
    assert_eq!(record["observedBeforeMutation"], false);
}

#[test]
fn a_lost_stop_answer_whose_re_read_fails_keeps_the_old_state_marked_as_before_it() {
    let host = ScriptedHost::new();
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
            Answer::Error(403, "Permission check failed (/vms/100, VM.Audit)".into()),
        ],
    );
    lost_stop(&host);
    let outcome = run(&host, "qemu", "stop", json!({"vmid": 100}));
    assert!(message(&outcome).contains("is unknown"));
    let record = &outcome.writes[0].data;
    assert_eq!(record["status"], "running");
    assert_eq!(record["outcome"], "unknown");
    assert_eq!(record["observedBeforeMutation"], true);
    assert!(record["observedAt"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
}

#[test]
fn a_config_change_whose_read_back_failed_is_recorded_as_unknown() {
    let host = ScriptedHost::new();
    vm(&host, json!({"status": "running", "qmpstatus": "running"}));
    host.data("PUT /nodes/pve1/qemu/100/config", Value::Null);
    host.on(
        "GET /nodes/pve1/qemu/100/pending",
        [Answer::Error(500, "cluster not ready - no quorum?".into())],
    );
    let outcome = run(
        &host,
        "qemu",
        "setConfig",
        json!({"vmid": 100, "config": {"cores": 2}}),
    );
    assert!(message(&outcome).contains("could not be read back"));
    assert_eq!(outcome.writes[0].data["outcome"], "unknown");
    // The guest's state was read again after the failure: current, not marked as before.
    assert_eq!(outcome.writes[0].data["observedBeforeMutation"], false);
}

#[test]
fn a_verified_stop_records_the_state_read_after_it_without_caveats() {
    let host = ScriptedHost::new();
    vm(
        &host,
        json!({"status": "running", "qmpstatus": "running", "tags": "swamp"}),
    );
    host.on(
        "GET /nodes/pve1/qemu/100/status/current",
        [
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
            Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
        ],
    );
    host.data("POST /nodes/pve1/qemu/100/status/stop", json!(STOP_UPID));
    host.data(
        &format!("GET /nodes/pve1/tasks/{STOP_UPID}/status"),
        json!({"status": "stopped", "exitstatus": "OK"}),
    );
    let outcome = run(&host, "qemu", "stop", json!({"vmid": 100}));
    assert!(summary(&outcome).contains("is stopped"));
    let record = &outcome.writes[0].data;
    assert_eq!(record.get("outcome"), None);
    assert_eq!(record.get("observedBeforeMutation"), None);
}
