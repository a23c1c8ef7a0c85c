//! The wasm build of the core end to end over real HTTP, under Node with `wasm-bindgen-test`: a
//! wasm-side host whose HTTP is gloo-net (fetch) runs methods against the PVE simulator in front of
//! a real qemu-ga. `scripts/with_simulator.ts` starts that simulator for the layer and hands its URL
//! and token to the build (`PVE_SIM_URL`, `PVE_SIM_TOKEN_ID`, `PVE_SIM_TOKEN_SECRET`); without them
//! every test here fails saying so.
#![cfg(target_arch = "wasm32")]

use gloo_net::http::{Method, RequestBuilder};
use proxmox_core::dispatch::run_method;
use proxmox_core::host::{
    Host, HostError, HostErrorKind, HttpRequest, HttpResponse, LogLevel, ProcessOutput,
    ProcessRequest,
};
use proxmox_core::outcome::{Outcome, Verdict};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen(inline_js = r#"
export function sleepMs(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = sleepMs)]
    fn sleep_ms(ms: f64) -> js_sys::Promise;
}

/// A host for the wasm build: fetch through gloo-net, timers and clock from JS, records in memory.
#[derive(Default)]
struct FetchHost {
    records: RefCell<HashMap<String, Value>>,
    logs: RefCell<Vec<String>>,
}

fn network(message: impl std::fmt::Display) -> HostError {
    HostError {
        kind: HostErrorKind::Network,
        message: message.to_string(),
    }
}

impl Host for FetchHost {
    async fn http(&self, request: HttpRequest) -> Result<HttpResponse, HostError> {
        let method = match request.method {
            "GET" => Method::GET,
            "POST" => Method::POST,
            "PUT" => Method::PUT,
            "DELETE" => Method::DELETE,
            other => return Err(network(format!("no fetch method {other}"))),
        };
        let mut builder = RequestBuilder::new(&request.url).method(method);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let built = match request.body {
            Some(body) => builder.body(body),
            None => builder.build(),
        }
        .map_err(network)?;
        let response = built.send().await.map_err(network)?;
        Ok(HttpResponse {
            status: response.status(),
            status_text: response.status_text(),
            body: response.text().await.map_err(network)?,
        })
    }

    async fn run(&self, _request: ProcessRequest) -> Result<ProcessOutput, HostError> {
        Err(HostError {
            kind: HostErrorKind::Spawn,
            message: "no local programs in this host".into(),
        })
    }

    async fn sleep(&self, ms: u64) {
        let _ = wasm_bindgen_futures::JsFuture::from(sleep_ms(ms as f64)).await;
    }

    fn now_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.logs.borrow_mut().push(format!("{level:?}: {message}"));
    }

    async fn read_record(&self, instance: &str) -> Result<Option<Value>, HostError> {
        Ok(self.records.borrow().get(instance).cloned())
    }

    async fn list_records(&self, _spec: &str) -> Result<Option<Vec<String>>, HostError> {
        Ok(Some(self.records.borrow().keys().cloned().collect()))
    }

    fn aborted(&self) -> bool {
        false
    }
}

/// The simulator's global arguments, from the build's environment.
fn global_args() -> Value {
    let (Some(url), Some(id), Some(secret)) = (
        option_env!("PVE_SIM_URL"),
        option_env!("PVE_SIM_TOKEN_ID"),
        option_env!("PVE_SIM_TOKEN_SECRET"),
    ) else {
        panic!("PVE_SIM_URL, PVE_SIM_TOKEN_ID and PVE_SIM_TOKEN_SECRET were not set at build time: run through scripts/with_simulator.ts (./test.sh does)");
    };
    json!({
        "name": "wasm",
        "transport": {"kind": "api", "node": "pve1", "apiUrl": url, "tokenId": id, "tokenSecret": secret},
        "pollIntervalSec": 1,
        "taskTimeoutSec": 30,
    })
}

/// Runs `method` of the qemu model with `args` over the global arguments, keeping what it wrote.
async fn run(host: &FetchHost, method: &str, args: Value) -> Outcome {
    let mut merged = global_args();
    if let (Some(target), Some(more)) = (merged.as_object_mut(), args.as_object()) {
        target.extend(more.clone());
    }
    let outcome = run_method(host, "qemu", method, &merged).await;
    for write in &outcome.writes {
        host.records
            .borrow_mut()
            .insert(write.instance.clone(), write.data.clone());
    }
    outcome
}

fn written<'a>(outcome: &'a Outcome, instance: &str) -> &'a Value {
    &outcome
        .writes
        .iter()
        .find(|w| w.instance == instance)
        .unwrap_or_else(|| panic!("{instance} not written: {:?}", outcome.verdict))
        .data
}

fn succeeded(outcome: &Outcome) -> bool {
    matches!(outcome.verdict, Verdict::Succeeded { .. })
}

#[wasm_bindgen_test]
async fn lookup_over_fetch_records_the_live_state_and_identity() {
    let host = FetchHost::default();
    let outcome = run(&host, "lookup", json!({"vmid": 100})).await;
    assert!(succeeded(&outcome), "{:?}", outcome.verdict);
    let record = written(&outcome, "vm-100");
    assert_eq!(record["status"], "running");
    assert_eq!(record["name"], "web");
    assert_eq!(
        record["identity"]["smbiosUuid"],
        "00000000-0000-4000-8000-000000000100"
    );
}

#[wasm_bindgen_test]
async fn guest_exec_over_fetch_runs_in_the_real_agent_and_succeeds_on_exit_0() {
    let host = FetchHost::default();
    let command = json!({"vmid": 100, "command": ["sh", "-c", "echo from-wasm"]});
    let outcome = run(&host, "guestExec", command).await;
    assert!(succeeded(&outcome), "{:?}", outcome.verdict);
    let exec = written(&outcome, "vm-100-exec");
    assert_eq!(exec["exitCode"], 0);
    assert_eq!(exec["stdout"], "from-wasm\n");
}

#[wasm_bindgen_test]
async fn guest_exec_over_fetch_fails_on_exit_42_with_the_code_recorded() {
    let host = FetchHost::default();
    let command = json!({"vmid": 100, "command": ["sh", "-c", "exit 42"]});
    let outcome = run(&host, "guestExec", command).await;
    let Verdict::Failed { message } = &outcome.verdict else {
        panic!("exit 42 must fail: {:?}", outcome.verdict);
    };
    assert!(message.contains("exited with code 42"), "{message}");
    assert_eq!(written(&outcome, "vm-100-exec")["exitCode"], 42);
}

#[wasm_bindgen_test]
async fn start_over_fetch_follows_the_task_and_observes_the_vm_running() {
    let host = FetchHost::default();
    let outcome = run(&host, "start", json!({"vmid": 102})).await;
    assert!(succeeded(&outcome), "{:?}", outcome.verdict);
    let record = written(&outcome, "vm-102");
    assert_eq!(record["status"], "running");
    assert!(
        record["lastTask"]
            .as_str()
            .unwrap_or("")
            .contains(":qmstart:102:"),
        "{record}"
    );
}

#[wasm_bindgen_test]
async fn lookup_over_fetch_of_a_vmid_no_node_has_records_its_confirmed_absence() {
    let host = FetchHost::default();
    let outcome = run(&host, "lookup", json!({"vmid": 999})).await;
    assert!(succeeded(&outcome), "{:?}", outcome.verdict);
    assert_eq!(written(&outcome, "vm-999")["present"], false);
}
