//! The JS boundary, run in wasm under Node with `wasm-bindgen-test`: a scripted JS host answers the
//! core's requests, and the outcome must come back as JSON text with the right verdict.
#![cfg(target_arch = "wasm32")]

use proxmox_core::wasm::{run_method, JsHost};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen(inline_js = r#"
export function scriptedHost(routes) {
  const log = [];
  return {
    log,
    async http(req) {
      const path = decodeURIComponent(new URL(req.url).pathname.replace("/api2/json", ""));
      const route = routes[`${req.method} ${path}`];
      // A guest path nobody scripted: PVE's answer for a guest that is not on that node.
      const guest = /^\/nodes\/([^/]+)\/(qemu|lxc)\/(\d+)(\/|$)/.exec(path);
      if (route === undefined && guest) {
        const dir = guest[2] === "qemu" ? "qemu-server" : "lxc";
        const message = `Configuration file 'nodes/${guest[1]}/${dir}/${guest[3]}.conf' does not exist`;
        return { status: 500, statusText: "", body: JSON.stringify({ data: null, message }) };
      }
      if (route === undefined) return { status: 501, statusText: "not implemented", body: "{}" };
      if (route.reject) throw route.reject;
      const answer = Array.isArray(route) ? route.shift() : route;
      return { status: answer.status ?? 200, statusText: "", body: JSON.stringify(answer.body) };
    },
    async run() { throw { kind: "spawn", message: "no ssh here" }; },
    async sleep(_ms) {},
    now() { return 1700000000000 + log.length; },
    log(level, message) { log.push(`${level}: ${message}`); },
    async readRecord(_name) { return null; },
    aborted() { return false; },
  };
}
export function selectingHost(routes, answer) {
  const host = scriptedHost(routes);
  host.select = (_expression, fields) => {
    if (answer === "throw") throw new Error(`Unknown variable: nmae (over ${fields.length} bytes)`);
    return answer;
  };
  return host;
}
export function filingHost(routes, fails) {
  const host = scriptedHost(routes);
  // A task is followed by the clock: a pause moves it on.
  let clock = 1700000000000;
  host.now = () => clock;
  host.sleep = async (ms) => { clock += ms; };
  host.files = [];
  host.writeFile = async (spec, name, text) => {
    if (fails) throw new Error("disk full");
    host.files.push([spec, name, text]);
    return name;
  };
  return host;
}
export function field(object, path) {
  const parsed = typeof object === "string" ? JSON.parse(object) : object;
  return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), parsed);
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = scriptedHost)]
    fn scripted_host(routes: JsValue) -> JsHost;
    /// The scripted host with a `select` answering `answer` (`"throw"`: throwing an Error).
    #[wasm_bindgen(js_name = selectingHost)]
    fn selecting_host(routes: JsValue, answer: JsValue) -> JsHost;
    /// The scripted host with a `writeFile` keeping each file in `files` (`fails`: rejecting).
    #[wasm_bindgen(js_name = filingHost)]
    fn filing_host(routes: JsValue, fails: bool) -> JsHost;
    /// A field of a JS object, or of the object a JSON text (the outcome) makes.
    fn field(object: &JsValue, path: &str) -> JsValue;
}

const GLOBAL: &str = r#""name":"t","transport":{"kind":"api","node":"pve1","apiUrl":"http://127.0.0.1:1","tokenId":"root@pam!t","tokenSecret":"secret-xyz"}"#;

fn routes(json: &str) -> JsValue {
    js_sys::JSON::parse(json).unwrap()
}

fn cluster_with_vm_100() -> &'static str {
    r#""GET /cluster/resources": {"body": {"data": [{"vmid": 100, "type": "qemu", "node": "pve2", "name": "web"}]}}"#
}

#[wasm_bindgen_test]
async fn lookup_returns_a_present_record_as_a_plain_object() {
    let host = scripted_host(routes(&format!(
        r#"{{{}, "GET /nodes/pve2/qemu/100/status/current": {{"body": {{"data": {{"status": "running", "qmpstatus": "running", "name": "web"}}}}}},
            "GET /nodes/pve2/qemu/100/config": {{"body": {{"data": {{"smbios1": "uuid=abc"}}}}}}}}"#,
        cluster_with_vm_100()
    )));
    let args = format!(r#"{{{GLOBAL},"vmid":100}}"#);
    let outcome = run_method("qemu".into(), "lookup".into(), args, host)
        .await
        .map(JsValue::from)
        .unwrap();
    assert_eq!(
        field(&outcome, "verdict.status").as_string().as_deref(),
        Some("succeeded")
    );
    assert_eq!(
        field(&outcome, "writes.0.instance").as_string().as_deref(),
        Some("vm-100")
    );
    assert_eq!(
        field(&outcome, "writes.0.data.node").as_string().as_deref(),
        Some("pve2")
    );
    assert_eq!(
        field(&outcome, "writes.0.data.identity.smbiosUuid")
            .as_string()
            .as_deref(),
        Some("abc")
    );
}

#[wasm_bindgen_test]
async fn guest_exec_exit_42_is_a_failed_verdict_with_its_record() {
    let host = scripted_host(routes(&format!(
        r#"{{{}, "POST /nodes/pve2/qemu/100/agent/exec": {{"body": {{"data": {{"pid": 7}}}}}},
            "GET /nodes/pve2/qemu/100/agent/exec-status": [{{"body": {{"data": {{"exited": 0}}}}}},
                {{"body": {{"data": {{"exited": 1, "exitcode": 42, "err-data": "boom"}}}}}}]}}"#,
        cluster_with_vm_100()
    )));
    let args = format!(r#"{{{GLOBAL},"vmid":100,"command":["bash","-c","exit 42"]}}"#);
    let outcome = run_method("qemu".into(), "guestExec".into(), args, host)
        .await
        .map(JsValue::from)
        .unwrap();
    assert_eq!(
        field(&outcome, "verdict.status").as_string().as_deref(),
        Some("failed")
    );
    assert_eq!(
        field(&outcome, "writes.0.data.exitCode").as_f64(),
        Some(42.0)
    );
    assert_eq!(
        field(&outcome, "writes.0.data.stderr")
            .as_string()
            .as_deref(),
        Some("boom")
    );
    let message = field(&outcome, "verdict.message").as_string().unwrap();
    assert!(message.contains("exited with code 42"), "{message}");
}

#[wasm_bindgen_test]
async fn host_rejection_becomes_a_failed_verdict_naming_the_fault() {
    let host = scripted_host(routes(
        r#"{"GET /nodes/pve1/qemu/100/status/current": {"reject": {"kind": "network", "message": "connection refused"}}}"#,
    ));
    let args = format!(r#"{{{GLOBAL},"vmid":100}}"#);
    let outcome = run_method("qemu".into(), "lookup".into(), args, host)
        .await
        .map(JsValue::from)
        .unwrap();
    let message = field(&outcome, "verdict.message").as_string().unwrap();
    assert!(message.contains("connection refused"), "{message}");
    assert!(!message.contains("secret-xyz"));
    assert_eq!(field(&outcome, "writes.length").as_f64(), Some(0.0));
}

#[wasm_bindgen_test]
async fn arguments_that_are_not_json_are_a_js_error_not_a_panic() {
    let host = scripted_host(routes("{}"));
    let error = run_method("qemu".into(), "lookup".into(), "{not json".into(), host)
        .await
        .unwrap_err();
    let value: JsValue = error.into();
    let message = field(&value, "message").as_string().unwrap();
    assert!(message.contains("arguments are not JSON"), "{message}");
}

#[wasm_bindgen_test]
async fn a_bad_vmid_is_refused_naming_the_field() {
    let host = scripted_host(routes("{}"));
    let args = format!(r#"{{{GLOBAL},"vmid":99}}"#);
    let outcome = run_method("qemu".into(), "lookup".into(), args, host)
        .await
        .map(JsValue::from)
        .unwrap();
    let message = field(&outcome, "verdict.message").as_string().unwrap();
    assert!(message.contains("`vmid`"), "{message}");
}

/// The verdict message of a `sync` with `where` on `host`.
async fn where_refusal(host: JsHost) -> String {
    let args = format!(r#"{{{GLOBAL},"where":"nmae == 1"}}"#);
    let outcome = run_method("qemu".into(), "sync".into(), args, host)
        .await
        .map(JsValue::from)
        .unwrap();
    field(&outcome, "verdict.message").as_string().unwrap()
}

#[wasm_bindgen_test]
async fn a_host_without_select_refuses_where_naming_it() {
    let message = where_refusal(scripted_host(routes("{}"))).await;
    assert!(
        message.starts_with("invalid argument `where`")
            && message.ends_with("this host cannot evaluate selection expressions"),
        "{message}"
    );
}

#[wasm_bindgen_test]
async fn a_selector_s_thrown_error_is_the_reason_where_is_refused() {
    let host = selecting_host(routes("{}"), JsValue::from_str("throw"));
    let message = where_refusal(host).await;
    assert!(
        message.starts_with("invalid argument `where`")
            && message.contains("Unknown variable: nmae"),
        "{message}"
    );
}

#[wasm_bindgen_test]
async fn a_selector_answer_that_is_not_a_bool_refuses_where() {
    let host = selecting_host(routes("{}"), JsValue::from_f64(1.0));
    let message = where_refusal(host).await;
    assert!(
        message.ends_with("it does not yield a bool (true or false)"),
        "{message}"
    );
}

const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:vzdump:100:root@pam!t:";

/// waitTask of a task that failed logging a line with the token secret, on a filing host.
async fn failed_wait(fails: bool) -> (JsValue, JsValue) {
    let host = filing_host(
        routes(&format!(
            r#"{{"GET /nodes/pve1/tasks/{UPID}/status": {{"body": {{"data": {{"status": "stopped", "exitstatus": "job errors"}}}}}},
                "GET /nodes/pve1/tasks/{UPID}/log": {{"body": {{"data": [{{"n": 1, "t": "auth secret-xyz rejected"}}]}}}}}}"#
        )),
        fails,
    );
    let host_object = host.clone();
    let args = format!(r#"{{{GLOBAL},"upid":"{UPID}","taskTimeoutSec":5}}"#);
    let outcome = run_method("qemu".into(), "waitTask".into(), args, host)
        .await
        .map(JsValue::from)
        .unwrap();
    (outcome, host_object)
}

#[wasm_bindgen_test]
async fn a_failed_tasks_log_crosses_to_the_hosts_write_file_scrubbed_and_the_record_names_it() {
    let (outcome, host) = failed_wait(false).await;
    let name = "tasklog-pve1-0000AAAA-6571E3A1";
    assert_eq!(
        field(&outcome, "writes.0.data.logFile")
            .as_string()
            .as_deref(),
        Some(name)
    );
    assert_eq!(
        field(&host, "files.0.0").as_string().as_deref(),
        Some("taskLog")
    );
    assert_eq!(field(&host, "files.0.1").as_string().as_deref(), Some(name));
    assert_eq!(
        field(&host, "files.0.2").as_string().as_deref(),
        Some("auth *** rejected\n")
    );
}

#[wasm_bindgen_test]
async fn a_write_file_that_rejects_leaves_the_record_the_tail_and_the_verdict_as_it_was() {
    let (outcome, _) = failed_wait(true).await;
    assert_eq!(
        field(&outcome, "verdict.status").as_string().as_deref(),
        Some("failed")
    );
    assert!(field(&outcome, "writes.0.data.logFile").is_undefined());
    assert_eq!(
        field(&outcome, "writes.0.data.logTail.0")
            .as_string()
            .as_deref(),
        Some("auth *** rejected")
    );
}
