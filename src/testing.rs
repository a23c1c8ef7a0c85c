//! A scripted host for native tests: answers by route, keeps a virtual clock, records every request.
//! Sleeping advances the virtual clock instantly, so timeouts and backoff are tested without waiting.

use crate::host::{
    Host, HostError, HttpRequest, HttpResponse, LogLevel, ProcessOutput, ProcessRequest,
};
use crate::outcome::{Outcome, Verdict};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// HTTP 200 with `{"data": value}`.
    Data(Value),
    /// An HTTP error with PVE's JSON message.
    Error(u16, String),
    /// The host could not complete the request.
    Fail(HostError),
    /// The answer comes after this many ms of the virtual clock — or, past the request's timeout,
    /// never: the host gives up at the timeout (a timeout error).
    Slow(u64, Box<Answer>),
}

/// A host whose HTTP answers come from a script keyed by `"GET /path"` (no query, no `/api2/json`).
/// A route's last answer repeats; earlier ones are used once each, in order.
#[derive(Default)]
pub struct ScriptedHost {
    routes: RefCell<HashMap<String, VecDeque<Answer>>>,
    pub requests: RefCell<Vec<HttpRequest>>,
    pub logs: RefCell<Vec<(LogLevel, String)>>,
    pub records: RefCell<HashMap<String, Value>>,
    /// The selection evaluator (a stand-in for swamp's CEL): the expression and a guest's fields.
    #[allow(clippy::type_complexity)]
    pub selector: Option<Box<dyn Fn(&str, &Value) -> Result<bool, String>>>,
    /// The fields each `select` was asked about, in order.
    pub selections: RefCell<Vec<Value>>,
    /// The files stored (spec, name, text); `None`: a host that stores no files.
    pub files: Option<RefCell<Vec<(String, String, String)>>>,
    /// The instances of each `read_records` call, in order.
    pub record_batches: RefCell<Vec<Vec<String>>>,
    clock: RefCell<f64>,
}

impl ScriptedHost {
    pub fn new() -> Self {
        let host = ScriptedHost::default();
        *host.clock.borrow_mut() = 1_700_000_000_000.0;
        host
    }

    /// Adds answers to a route, e.g. `host.on("GET /version", [Answer::Data(json!({"version": "9"}))])`.
    pub fn on(&self, route: &str, answers: impl IntoIterator<Item = Answer>) -> &Self {
        self.routes
            .borrow_mut()
            .entry(route.to_string())
            .or_default()
            .extend(answers);
        self
    }

    /// Shorthand for one data answer.
    pub fn data(&self, route: &str, value: Value) -> &Self {
        self.on(route, [Answer::Data(value)])
    }

    /// Answers `route` with `value` only, in place of what was scripted for it before.
    pub fn set(&self, route: &str, value: Value) -> &Self {
        self.routes.borrow_mut().remove(route);
        self.data(route, value)
    }

    /// The form body of the first request sent with `method` (e.g. `"POST"`); empty when none.
    pub fn first_body(&self, method: &str) -> String {
        self.requests
            .borrow()
            .iter()
            .find(|r| r.method == method)
            .and_then(|r| r.body.clone())
            .unwrap_or_default()
    }

    /// Every request but the reads, as `"<METHOD> <path after marker> <body>"`, in order: what a
    /// method wrote, with the part of the URL its tests hold constant cut off.
    pub fn writes_after(&self, marker: &str) -> Vec<String> {
        let requests = self.requests.borrow();
        let sent = requests.iter().filter(|r| r.method != "GET");
        sent.map(|r| {
            let path = r.url.rsplit(marker).next().unwrap_or_default();
            let body = r.body.clone().unwrap_or_default();
            format!("{} {path} {body}", r.method)
        })
        .collect()
    }

    /// The `"GET /path"` routes requested, in order.
    pub fn routes_called(&self) -> Vec<String> {
        self.requests.borrow().iter().map(route_of).collect()
    }

    /// The form body of the first request sent with HTTP `method` (tests only: panics when none).
    pub fn body_of(&self, method: &str) -> String {
        let requests = self.requests.borrow();
        let sent = requests.iter().find(|r| r.method == method);
        sent.and_then(|r| r.body.clone())
            .unwrap_or_else(|| panic!("no {method} request with a body was sent"))
    }

    /// Virtual milliseconds since the host was created.
    pub fn elapsed_ms(&self) -> f64 {
        *self.clock.borrow() - 1_700_000_000_000.0
    }
}

fn route_of(request: &HttpRequest) -> String {
    let path = request.url.split("/api2/json").nth(1).unwrap_or("");
    let path = path.split('?').next().unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    format!("{} {decoded}", request.method)
}

/// What PVE answers for a guest path of a guest that is not on that node (no script for it): its
/// config file does not exist there (qemu-server and pve-container load the config first).
fn not_here(route: &str) -> Option<String> {
    let path = route.split_once(' ')?.1;
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["nodes", node, kind @ ("qemu" | "lxc"), vmid, ..] if vmid.parse::<u32>().is_ok() => {
            let dir = match *kind {
                "qemu" => "qemu-server",
                _ => "lxc",
            };
            Some(format!(
                "Configuration file 'nodes/{node}/{dir}/{vmid}.conf' does not exist"
            ))
        }
        _ => None,
    }
}

impl Host for ScriptedHost {
    async fn http(&self, request: HttpRequest) -> Result<HttpResponse, HostError> {
        let route = route_of(&request);
        let request_timeout = request.timeout_ms;
        self.requests.borrow_mut().push(request);
        let answer = {
            let mut routes = self.routes.borrow_mut();
            match routes.get_mut(&route) {
                Some(queue) if queue.len() > 1 => queue.pop_front(),
                Some(queue) => queue.front().cloned(),
                None => None,
            }
        };
        let mut answer = answer;
        while let Some(Answer::Slow(ms, inner)) = answer {
            if ms > request_timeout {
                *self.clock.borrow_mut() += request_timeout as f64;
                return Err(HostError {
                    kind: crate::host::HostErrorKind::Timeout,
                    message: format!("no answer within {request_timeout} ms"),
                });
            }
            *self.clock.borrow_mut() += ms as f64;
            answer = Some(*inner);
        }
        match answer {
            // Unwrapped by the loop above.
            Some(Answer::Slow(..)) => Err(HostError {
                kind: crate::host::HostErrorKind::Internal,
                message: "a slow answer left unwrapped".into(),
            }),
            Some(Answer::Data(data)) => Ok(HttpResponse {
                status: 200,
                status_text: "OK".into(),
                body: json!({ "data": data }).to_string(),
            }),
            Some(Answer::Error(status, message)) => Ok(HttpResponse {
                status,
                status_text: String::new(),
                body: json!({ "data": null, "message": message }).to_string(),
            }),
            Some(Answer::Fail(error)) => Err(error),
            None if not_here(&route).is_some() => Ok(HttpResponse {
                status: 500,
                status_text: String::new(),
                body: json!({ "data": null, "message": not_here(&route) }).to_string(),
            }),
            None => Ok(HttpResponse {
                status: 501,
                status_text: String::new(),
                body:
                    json!({ "data": null, "message": format!("Method '{route}' not implemented") })
                        .to_string(),
            }),
        }
    }

    async fn run(&self, request: ProcessRequest) -> Result<ProcessOutput, HostError> {
        Err(HostError {
            kind: crate::host::HostErrorKind::Spawn,
            message: format!("no processes in tests: {:?}", request.argv),
        })
    }

    async fn sleep(&self, ms: u64) {
        *self.clock.borrow_mut() += ms as f64;
    }

    fn now_ms(&self) -> f64 {
        *self.clock.borrow()
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.logs.borrow_mut().push((level, message.to_string()));
    }

    async fn read_record(&self, instance: &str) -> Result<Option<Value>, HostError> {
        Ok(self.records.borrow().get(instance).cloned())
    }

    async fn read_records(&self, instances: &[String]) -> Result<Vec<Option<Value>>, HostError> {
        self.record_batches.borrow_mut().push(instances.to_vec());
        let records = self.records.borrow();
        Ok(instances.iter().map(|i| records.get(i).cloned()).collect())
    }

    async fn list_records(&self, _spec: &str) -> Result<Option<Vec<String>>, HostError> {
        let mut names: Vec<String> = self.records.borrow().keys().cloned().collect();
        names.sort();
        Ok(Some(names))
    }

    fn select(&self, expression: &str, fields: &str) -> Result<bool, String> {
        let fields: Value = serde_json::from_str(fields).map_err(|e| e.to_string())?;
        self.selections.borrow_mut().push(fields.clone());
        match &self.selector {
            Some(select) => select(expression, &fields),
            None => Err("no selector in this test".into()),
        }
    }

    async fn write_file(
        &self,
        spec: &str,
        name: &str,
        text: &str,
    ) -> Result<Option<String>, HostError> {
        let Some(files) = &self.files else {
            return Ok(None);
        };
        let file = (spec.to_string(), name.to_string(), text.to_string());
        files.borrow_mut().push(file);
        Ok(Some(name.to_string()))
    }

    fn aborted(&self) -> bool {
        false
    }
}

/// Runs a future whose every await is immediately ready (the scripted host never waits).
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
    }
}

/// Runs `method` of `model` (`qemu`, `lxc`) through the dispatcher, `args` merged over
/// [`api_args`].
pub fn run_method(host: &ScriptedHost, model: &str, method: &str, args: Value) -> Outcome {
    block_on(crate::dispatch::run_method(
        host,
        model,
        method,
        &api_args(args),
    ))
}

/// The message of a failed outcome; panics on a success (tests only).
pub fn failure_of(outcome: &Outcome) -> &str {
    match &outcome.verdict {
        Verdict::Failed { message } => message,
        other => panic!("expected a failure: {other:?}"),
    }
}

/// The summary of a succeeded outcome; panics on a failure (tests only).
pub fn summary_of(outcome: &Outcome) -> &str {
    match &outcome.verdict {
        Verdict::Succeeded { summary } => summary,
        other => panic!("expected a success: {other:?}"),
    }
}

/// Global arguments for the api transport against the scripted host.
pub fn api_args(extra: Value) -> Value {
    let mut args = json!({
        "name": "test",
        "transport": {"kind": "api", "node": "pve1", "apiUrl": "https://pve1:8006", "tokenId": "root@pam!t", "tokenSecret": "SECRET-in-tests"},
        "pollIntervalSec": 1,
    });
    if let (Some(target), Some(more)) = (args.as_object_mut(), extra.as_object()) {
        for (k, v) in more {
            target.insert(k.clone(), v.clone());
        }
    }
    args
}

/// Runs one method through the dispatch table (global arguments parsed, then the method), as the
/// wasm boundary does: the one way the methods' unit tests run a method.
pub fn run_method_of(
    kind: crate::pve::endpoints::GuestKind,
    host: &ScriptedHost,
    method: &str,
    args: &Value,
) -> crate::outcome::Outcome {
    let model = match kind {
        crate::pve::endpoints::GuestKind::Qemu => "qemu",
        crate::pve::endpoints::GuestKind::Lxc => "lxc",
    };
    block_on(crate::dispatch::run_method(host, model, method, args))
}
