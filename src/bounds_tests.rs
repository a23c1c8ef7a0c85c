//! A bound is a bound (issue 23): every wait's requests and pauses end by its deadline, so a
//! `timeoutSec`/`taskTimeoutSec` is met within one request's time, whatever PVE takes to answer.
//! Driven through `dispatch::run_method` with the scripted clock, where an answer can take time
//! (`Answer::Slow`) and a request that outlives its timeout is given up at the timeout.

use crate::dispatch::run_method;
use crate::outcome::{Outcome, Verdict};
use crate::testing::{api_args, block_on, Answer, ScriptedHost};
use serde_json::{json, Value};

const STATUS: &str = "GET /nodes/pve1/qemu/100/status/current";
const PING: &str = "POST /nodes/pve1/qemu/100/agent/ping";
const STOP_UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmstop:100:root@pam!t:";

pub(crate) fn run(host: &ScriptedHost, method: &str, globals: Value, args: Value) -> Outcome {
    let mut all = api_args(globals);
    for (k, v) in args.as_object().unwrap() {
        all[k] = v.clone();
    }
    block_on(run_method(host, "qemu", method, &all))
}

fn failed(outcome: &Outcome) -> &str {
    match &outcome.verdict {
        Verdict::Failed { message } => message,
        Verdict::Succeeded { summary } => panic!("expected a failure, got success: {summary}"),
    }
}

pub(crate) fn slow(ms: u64, answer: Answer) -> Answer {
    Answer::Slow(ms, Box::new(answer))
}

/// A running VM 100 on pve1 whose agent is configured.
fn running_vm(host: &ScriptedHost) {
    host.data(
        STATUS,
        json!({"status": "running", "qmpstatus": "running", "tags": "swamp", "agent": 1}),
    );
}

#[test]
fn wait_ready_without_an_agent_ends_at_its_timeout_though_each_ping_takes_3_s() {
    // PVE's ping of an agent that is down times out after 3 s (qga_check_running), then says so.
    let host = ScriptedHost::new();
    running_vm(&host);
    let down = Answer::Error(500, "QEMU guest agent is not running".into());
    host.on(PING, [slow(3_000, down)]);
    let outcome = run(
        &host,
        "waitReady",
        json!({}),
        json!({"vmid": 100, "timeoutSec": 8}),
    );
    assert!(
        failed(&outcome).contains("does not answer ping"),
        "{outcome:?}"
    );
    assert!(
        host.elapsed_ms() <= 8_000.0,
        "timeoutSec 8 took {} ms",
        host.elapsed_ms()
    );
}

#[test]
fn wait_ready_whose_ping_never_answers_ends_at_its_timeout_not_at_request_timeout_sec() {
    let host = ScriptedHost::new();
    running_vm(&host);
    host.on(PING, [slow(600_000, Answer::Data(json!({"result": {}})))]);
    let outcome = run(
        &host,
        "waitReady",
        json!({"requestTimeoutSec": 30}),
        json!({"vmid": 100, "timeoutSec": 5}),
    );
    assert!(
        failed(&outcome).contains("after 5 s (timeoutSec)"),
        "{outcome:?}"
    );
    assert!(host.elapsed_ms() <= 5_000.0, "{} ms", host.elapsed_ms());
}

/// waitReady (timeoutSec 6) of VM 100 whose agent is up and lists `interfaces`, each answer taking
/// 2.5 s; returns the outcome and how long the run took on the scripted clock.
fn wait_ready_with_slow_interfaces(interfaces: Value) -> (Outcome, f64) {
    let host = ScriptedHost::new();
    running_vm(&host);
    host.data(PING, json!({"result": {}}));
    host.data(
        "GET /nodes/pve1/qemu/100/agent/info",
        json!({"result": {"version": "9.2"}}),
    );
    host.on(
        "GET /nodes/pve1/qemu/100/agent/network-get-interfaces",
        [slow(2_500, Answer::Data(json!({ "result": interfaces })))],
    );
    let outcome = run(
        &host,
        "waitReady",
        json!({}),
        json!({"vmid": 100, "timeoutSec": 6}),
    );
    (outcome, host.elapsed_ms())
}

#[test]
fn wait_ready_whose_interfaces_answer_slowly_ends_at_its_timeout() {
    let (outcome, elapsed) =
        wait_ready_with_slow_interfaces(json!([{"name": "eth0", "ip-addresses": []}]));
    assert!(failed(&outcome).contains("no IPv4 address"), "{outcome:?}");
    assert!(elapsed <= 6_000.0, "{elapsed} ms");
}

#[test]
fn wait_ready_whose_agent_lists_only_lo_and_whose_last_read_is_cut_says_no_address() {
    // A read the wait's end cuts short is not the agent going away: the answers before it said
    // which address is missing (here: the agent listed nothing but `lo`).
    let (outcome, _) = wait_ready_with_slow_interfaces(json!([{"name": "lo", "ip-addresses": [
        {"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8}]}]));
    let message = failed(&outcome);
    assert!(message.contains("no IPv4 address"), "{message}");
    assert!(!message.contains("stopped answering"), "{message}");
}

#[test]
fn a_cloud_init_wait_ends_at_wait_readys_timeout() {
    let host = ScriptedHost::new();
    running_vm(&host);
    host.data(PING, json!({"result": {}}));
    let up = json!({"result": [{"name": "eth0", "ip-addresses": [
        {"ip-address": "10.0.0.5", "ip-address-type": "ipv4", "prefix": 24}]}]});
    host.data("GET /nodes/pve1/qemu/100/agent/network-get-interfaces", up);
    host.data("POST /nodes/pve1/qemu/100/agent/exec", json!({"pid": 7}));
    // cloud-init never ends; each status answer takes 700 ms.
    host.on(
        "GET /nodes/pve1/qemu/100/agent/exec-status",
        [slow(700, Answer::Data(json!({"exited": 0})))],
    );
    let outcome = run(
        &host,
        "waitReady",
        json!({}),
        json!({"vmid": 100, "timeoutSec": 4, "cloudInit": true}),
    );
    assert!(failed(&outcome).contains("cloud-init"), "{outcome:?}");
    assert!(host.elapsed_ms() <= 4_000.0, "{} ms", host.elapsed_ms());
}

#[test]
fn a_stop_whose_state_reads_hang_ends_within_task_timeout_sec() {
    let host = ScriptedHost::new();
    let hung = slow(600_000, Answer::Data(json!({"status": "stopped"})));
    host.on(
        STATUS,
        [
            Answer::Data(json!({"status": "running", "qmpstatus": "running", "tags": "swamp"})),
            hung,
        ],
    );
    host.data("POST /nodes/pve1/qemu/100/status/stop", json!(STOP_UPID));
    host.data(
        &format!("GET /nodes/pve1/tasks/{STOP_UPID}/status"),
        json!({"status": "stopped", "exitstatus": "OK"}),
    );
    let outcome = run(
        &host,
        "stop",
        json!({"taskTimeoutSec": 5, "requestTimeoutSec": 30}),
        json!({"vmid": 100}),
    );
    assert!(failed(&outcome).contains("not within 5"), "{outcome:?}");
    assert!(host.elapsed_ms() <= 5_000.0, "{} ms", host.elapsed_ms());
    let record = &outcome.writes[0].data;
    assert_eq!(
        record["observedBeforeMutation"], true,
        "no read answered after the stop: the state is the one before it, marked"
    );
}

#[test]
fn a_slow_read_with_time_left_is_still_retried() {
    // The cut is only at the end: a transient fault early in a wait keeps the client's retries.
    let host = ScriptedHost::new();
    running_vm(&host);
    let reset = Answer::Fail(crate::host::HostError {
        kind: crate::host::HostErrorKind::Network,
        message: "connection reset by peer".into(),
    });
    host.on(PING, [reset, Answer::Data(json!({"result": {}}))]);
    host.data("GET /nodes/pve1/qemu/100/agent/info", json!({"result": {}}));
    let up = json!({"result": [{"name": "eth0", "ip-addresses": [
        {"ip-address": "10.0.0.5", "ip-address-type": "ipv4", "prefix": 24}]}]});
    host.data("GET /nodes/pve1/qemu/100/agent/network-get-interfaces", up);
    let outcome = run(
        &host,
        "waitReady",
        json!({}),
        json!({"vmid": 100, "timeoutSec": 60}),
    );
    assert!(outcome.is_success(), "{outcome:?}");
}

const MIGRATE_UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmigrate:100:root@pam!t:";

/// A stopped VM 100 on pve1 that PVE may migrate to pve2, whose migrate task ends OK at once;
/// `resources` are the answers of `/cluster/resources` after it.
pub(crate) fn migratable(host: &ScriptedHost, resources: impl IntoIterator<Item = Answer>) {
    host.data(STATUS, json!({"status": "stopped", "tags": "swamp"}));
    host.data(
        "GET /nodes/pve1/qemu/100/migrate",
        json!({"running": 0, "allowed_nodes": ["pve2"], "local_disks": [], "local_resources": []}),
    );
    host.data("POST /nodes/pve1/qemu/100/migrate", json!(MIGRATE_UPID));
    host.data(
        &format!("GET /nodes/pve1/tasks/{MIGRATE_UPID}/status"),
        json!({"status": "stopped", "exitstatus": "OK"}),
    );
    host.on("GET /cluster/resources", resources);
}

#[test]
fn a_migration_that_never_arrives_fails_within_the_one_task_timeout_sec() {
    let host = ScriptedHost::new();
    // The task itself takes 3 s of the 5 s budget; the arrival gets what is left, not 5 s more.
    host.on(
        &format!("GET /nodes/pve1/tasks/{MIGRATE_UPID}/status"),
        [
            slow(3_000, Answer::Data(json!({"status": "running"}))),
            Answer::Data(json!({"status": "stopped", "exitstatus": "OK"})),
        ],
    );
    migratable(
        &host,
        [Answer::Data(
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        )],
    );
    let outcome = run(
        &host,
        "migrate",
        json!({"taskTimeoutSec": 5}),
        json!({"vmid": 100, "targetNode": "pve2"}),
    );
    assert!(
        failed(&outcome).contains("was not seen on node pve2"),
        "{outcome:?}"
    );
    assert!(host.elapsed_ms() <= 5_000.0, "{} ms", host.elapsed_ms());
}

#[test]
fn a_delete_whose_absence_check_hangs_ends_within_task_timeout_sec() {
    let upid = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmdestroy:100:root@pam!t:";
    let host = ScriptedHost::new();
    host.data(STATUS, json!({"status": "stopped", "tags": "swamp"}));
    host.data("DELETE /nodes/pve1/qemu/100", json!(upid));
    host.data(
        &format!("GET /nodes/pve1/tasks/{upid}/status"),
        json!({"status": "stopped", "exitstatus": "OK"}),
    );
    host.on(
        "GET /cluster/nextid",
        [slow(600_000, Answer::Data(json!(100)))],
    );
    let outcome = run(
        &host,
        "delete",
        json!({"taskTimeoutSec": 5, "requestTimeoutSec": 30}),
        json!({"vmid": 100}),
    );
    assert!(
        failed(&outcome).contains("absence could not be confirmed before taskTimeoutSec"),
        "{outcome:?}"
    );
    assert!(host.elapsed_ms() <= 5_000.0, "{} ms", host.elapsed_ms());
}
