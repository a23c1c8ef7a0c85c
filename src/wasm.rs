//! The JavaScript boundary: the only module that knows about wasm-bindgen.
//!
//! JS calls `runMethod(model, method, argsJson, host)`; the core calls back into `host` for every
//! effect. Errors cross as real `Error`s. Data crosses as JSON text, parsed once on the other
//! side: one string per outcome instead of one conversion per field (a 1,000-guest sync hands
//! over 1,000 records), and no serializer generic over every type that crosses.

use crate::dispatch;
use crate::host::{
    Host, HostError, HostErrorKind, HttpRequest, HttpResponse, LogLevel, ProcessOutput,
    ProcessRequest,
};
use crate::watch::Shared;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(typescript_custom_section)]
const TS_HOST: &'static str = r#"
/** The effects the core asks of its host. Promises reject with `{kind, message}` (HostError). */
export interface CoreHost {
  http(request: { method: string; url: string; headers: [string, string][]; body?: string; timeoutMs: number; caCert?: string; skipTlsVerify: boolean }): Promise<{ status: number; statusText: string; body: string }>;
  run(request: { argv: string[]; timeoutMs: number }): Promise<{ code: number | null; stdout: string; stderr: string }>;
  sleep(ms: number): Promise<void>;
  now(): number;
  log(level: "debug" | "info" | "warning" | "error", message: string): void;
  readRecord(instance: string): Promise<unknown>;
  /** The latest stored versions of several records, in order (null for one not stored or not
   * readable). Optional: without it the core reads them one by one. */
  readRecords?(instances: string[]): Promise<unknown[]>;
  /** Instance names of this definition's stored records of one resource spec; null when unknown. */
  listRecords?(spec: string): Promise<string[] | null>;
  /** Whether a guest's fields (JSON text) satisfy a selection expression; throws why not. */
  select?(expression: string, fields: string): unknown;
  /** Stores a text as a file output of the model's file spec; the name stored under, or null
   * when the host stores no files. */
  writeFile?(spec: string, name: string, text: string): Promise<string | null>;
  aborted(): boolean;
}
/** What a method run produced: records to write first, then the verdict (`runMethod` hands it
 * over as its JSON text). */
export interface CoreOutcome {
  writes: { spec: string; instance: string; data: unknown }[];
  verdict: { status: "succeeded"; summary: string } | { status: "failed"; message: string };
}
"#;

#[wasm_bindgen]
extern "C" {
    /// The JS object implementing `CoreHost`.
    #[wasm_bindgen(typescript_type = "CoreHost")]
    pub type JsHost;

    /// The host's promise itself, awaited by a [`HostCall`] (as `run`'s).
    #[wasm_bindgen(method, catch)]
    fn http(this: &JsHost, request: JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn run(this: &JsHost, request: JsValue) -> Result<js_sys::Promise, JsValue>;
    /// The host's promise itself: [`Pause`] awaits it with no state machine around it.
    #[wasm_bindgen(method, catch)]
    fn sleep(this: &JsHost, ms: f64) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method)]
    fn now(this: &JsHost) -> f64;
    #[wasm_bindgen(method)]
    fn log(this: &JsHost, level: &str, message: &str);
    /// The host's promises of stored records, each awaited by a [`HostCall`] (as `http`'s).
    #[wasm_bindgen(method, catch, js_name = readRecord)]
    fn read_record(this: &JsHost, instance: &str) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method, catch, js_name = readRecords)]
    fn read_records(this: &JsHost, instances: JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method, catch, js_name = listRecords)]
    fn list_records(this: &JsHost, spec: &str) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn select(this: &JsHost, expression: &str, fields: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = writeFile)]
    fn write_file(
        this: &JsHost,
        spec: &str,
        name: &str,
        text: &str,
    ) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method)]
    fn aborted(this: &JsHost) -> bool;
}

thread_local! {
    /// What every run of this wasm instance (this process: `js/_lib/core.ts` shares one instance
    /// between the models) shares about the nodes it talks to.
    static PROCESS: Rc<Shared> = Rc::new(Shared::default());
}

/// Runs one method. `args_json` is `JSON.stringify({...globalArgs, ...methodArgs})`; the result
/// is the `CoreOutcome` as JSON text.
#[wasm_bindgen(js_name = runMethod)]
pub async fn run_method(
    model: String,
    method: String,
    args_json: String,
    host: JsHost,
) -> Result<String, JsError> {
    // JSON text, not a converted object: integers stay integers for the argument rules.
    let args: Value = serde_json::from_str(&args_json)
        .map_err(|e| JsError::new(&format!("arguments are not JSON: {e}")))?;
    let shared = PROCESS.with(Rc::clone);
    let outcome = dispatch::run_method_in(&WasmHost(host), &shared, &model, &method, &args).await;
    Ok(outcome.json())
}

/// Applies a method's argument rules without running it: the error, or `undefined` when valid.
/// Tests use it to prove the zod schemas and the core's rules agree.
#[wasm_bindgen(js_name = validateArguments)]
pub fn validate_arguments(model: &str, method: &str, args_json: &str) -> Option<String> {
    match serde_json::from_str::<Value>(args_json) {
        Ok(args) => dispatch::validate_arguments(model, method, &args).err(),
        Err(e) => Some(format!("arguments are not JSON: {e}")),
    }
}

/// A request as the JS object its JSON text makes.
fn to_js(text: &str) -> Result<JsValue, HostError> {
    js_sys::JSON::parse(text).map_err(|_| internal("request not serializable".into()))
}

/// A JS value the host returned, as JSON (`JSON.stringify`, then parsed here).
fn json_of(value: &JsValue, what: &str) -> Result<Value, HostError> {
    let unreadable = || internal(format!("the host returned a {what} the core cannot read"));
    let text = js_sys::JSON::stringify(value).map_err(|_| unreadable())?;
    serde_json::from_str(&String::from(text)).map_err(|_| unreadable())
}

/// Instance names as the host takes them (a JS array), for [`Host::read_records`].
fn js_names(instances: &[String]) -> JsValue {
    let names = js_sys::Array::new();
    for instance in instances {
        names.push(&JsValue::from_str(instance));
    }
    names.into()
}

/// The records the host read ([`Host::read_records`]): `null` for one it could not.
fn records_of(value: &JsValue) -> Result<Vec<Option<Value>>, HostError> {
    let Value::Array(list) = json_of(value, "record list")? else {
        return Err(internal(
            "the host returned records that are not a list".into(),
        ));
    };
    let mut records = Vec::with_capacity(list.len());
    for record in list {
        records.push(Some(record).filter(|r| !r.is_null()));
    }
    Ok(records)
}

/// A record the host read ([`Host::read_record`]): `null` or `undefined` when it is not stored.
fn record_of(value: &JsValue) -> Result<Option<Value>, HostError> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    json_of(value, "record").map(Some)
}

/// The record names the host listed ([`Host::list_records`]): `null` or `undefined` when it
/// cannot list them.
fn names_of(value: &JsValue) -> Result<Option<Vec<String>>, HostError> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    match json_of(value, "record list")? {
        Value::Array(names) if names.iter().all(Value::is_string) => {
            let mut listed = Vec::with_capacity(names.len());
            for name in &names {
                listed.extend(name.as_str().map(str::to_string));
            }
            Ok(Some(listed))
        }
        _ => Err(internal(
            "the host returned a record list the core cannot read".into(),
        )),
    }
}

/// A field of an object the host returned.
fn field(object: &JsValue, name: &str) -> JsValue {
    js_sys::Reflect::get(object, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

fn internal(message: String) -> HostError {
    HostError {
        kind: HostErrorKind::Internal,
        message,
    }
}

/// A host rejection: `{kind, message}` from our host, anything else as an internal error.
fn host_error(value: JsValue) -> HostError {
    let kind = match field(&value, "kind").as_string().as_deref() {
        Some("network") => Some(HostErrorKind::Network),
        Some("timeout") => Some(HostErrorKind::Timeout),
        Some("tls") => Some(HostErrorKind::Tls),
        Some("spawn") => Some(HostErrorKind::Spawn),
        Some("aborted") => Some(HostErrorKind::Aborted),
        Some("internal") => Some(HostErrorKind::Internal),
        _ => None,
    };
    if let (Some(kind), Some(message)) = (kind, field(&value, "message").as_string()) {
        return HostError { kind, message };
    }
    let message = value
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| value.as_string())
        .unwrap_or_else(|| "the host failed without a message".to_string());
    internal(message)
}

/// The host's answer to an HTTP request ([`Host::http`]).
fn response_of(answer: &JsValue) -> Result<HttpResponse, HostError> {
    let status = field(answer, "status").as_f64();
    let Some(status) = status.filter(|s| (0.0..=999.0).contains(s)) else {
        return Err(internal(
            "the host returned an HTTP response without a status".into(),
        ));
    };
    Ok(HttpResponse {
        status: status as u16,
        status_text: field(answer, "statusText").as_string().unwrap_or_default(),
        body: field(answer, "body").as_string().unwrap_or_default(),
    })
}

/// What the host's run of a process returned ([`Host::run`]).
fn output_of(output: &JsValue) -> Result<ProcessOutput, HostError> {
    let count = |name: &str| field(output, name).as_f64().map(|n| n as usize);
    let code = field(output, "code");
    Ok(ProcessOutput {
        code: code.as_f64().map(|c| c as i32),
        stdout: field(output, "stdout").as_string().unwrap_or_default(),
        stderr: field(output, "stderr").as_string().unwrap_or_default(),
        stdout_bytes: count("stdoutBytes"),
        stderr_bytes: count("stderrBytes"),
    })
}

/// A host call's promise and how its value reads ([`Host::http`], [`Host::run`]): polled as it
/// is, not through an async function's state machine (the request engine awaits one for every
/// request, issue 32). A call the host refused at once is its error, handed over on the first poll.
struct HostCall<T> {
    promise: Result<JsFuture, Option<HostError>>,
    read: fn(&JsValue) -> Result<T, HostError>,
}

impl<T> HostCall<T> {
    fn new(
        promise: Result<js_sys::Promise, HostError>,
        read: fn(&JsValue) -> Result<T, HostError>,
    ) -> Self {
        HostCall {
            promise: promise.map(JsFuture::from).map_err(Some),
            read,
        }
    }
}

impl<T> Future for HostCall<T> {
    type Output = Result<T, HostError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let call = self.get_mut();
        // Only the reading is instantiated for every `T` (issue 32).
        match settled(&mut call.promise, cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(value)) => Poll::Ready((call.read)(&value)),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        }
    }
}

/// A [`HostCall`]'s promise polled: its value once settled, or the host's error.
fn settled(
    promise: &mut Result<JsFuture, Option<HostError>>,
    cx: &mut Context<'_>,
) -> Poll<Result<JsValue, HostError>> {
    let promise = match promise {
        Ok(promise) => promise,
        Err(refused) => {
            let polled_again = || internal("a host call was awaited after it ended".into());
            return Poll::Ready(Err(refused.take().unwrap_or_else(polled_again)));
        }
    };
    Pin::new(promise)
        .poll(cx)
        .map(|settled| settled.map_err(host_error))
}

/// A host pause ([`Host::sleep`]): the host's promise awaited as it is — every wait of the core
/// pauses through it, so it is a plain poll, not an async function's state machine (issue 32).
struct Pause(Option<JsFuture>);

impl Future for Pause {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.0.as_mut() {
            // A failed sleep (a rejection, or a throw: no promise) only shortens a pause; the poll
            // loop checks the clock and abort itself.
            Some(promise) => Pin::new(promise).poll(cx).map(drop),
            None => Poll::Ready(()),
        }
    }
}

struct WasmHost(JsHost);

impl WasmHost {
    /// Whether the host implements an optional function: calling a missing one would trap.
    fn declares(&self, name: &str) -> bool {
        js_sys::Reflect::get(&self.0, &JsValue::from_str(name)).is_ok_and(|f| f.is_function())
    }

    /// The promise of an optional function's call (`call`), or — the host does not declare
    /// `name` — one of `null` (nothing stored, nothing listed).
    fn declared(
        &self,
        name: &str,
        call: impl FnOnce() -> Result<js_sys::Promise, JsValue>,
    ) -> Result<js_sys::Promise, HostError> {
        match self.declares(name) {
            true => call().map_err(host_error),
            false => Ok(js_sys::Promise::resolve(&JsValue::NULL)),
        }
    }
}

impl Host for WasmHost {
    fn http(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, HostError>> {
        let promise = to_js(&request.json()).and_then(|js| self.0.http(js).map_err(host_error));
        HostCall::new(promise, response_of)
    }

    fn run(
        &self,
        request: ProcessRequest,
    ) -> impl Future<Output = Result<ProcessOutput, HostError>> {
        let promise = to_js(&request.json()).and_then(|js| self.0.run(js).map_err(host_error));
        HostCall::new(promise, output_of)
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        Pause(self.0.sleep(ms as f64).ok().map(JsFuture::from))
    }

    fn now_ms(&self) -> f64 {
        self.0.now()
    }

    fn log(&self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
        };
        self.0.log(level, message);
    }

    fn read_record(
        &self,
        instance: &str,
    ) -> impl Future<Output = Result<Option<Value>, HostError>> {
        HostCall::new(self.0.read_record(instance).map_err(host_error), record_of)
    }

    /// One crossing for all of them: the records come back as one array, read as one JSON text.
    async fn read_records(&self, instances: &[String]) -> Result<Vec<Option<Value>>, HostError> {
        if !self.declares("readRecords") {
            return Ok(crate::host::read_one_by_one(self, instances).await);
        }
        let promise = self.0.read_records(js_names(instances));
        HostCall::new(promise.map_err(host_error), records_of).await
    }

    fn list_records(
        &self,
        spec: &str,
    ) -> impl Future<Output = Result<Option<Vec<String>>, HostError>> {
        HostCall::new(
            self.declared("listRecords", || self.0.list_records(spec)),
            names_of,
        )
    }

    fn select(&self, expression: &str, fields: &str) -> Result<bool, String> {
        if !self.declares("select") {
            return Err("this host cannot evaluate selection expressions".into());
        }
        match self.0.select(expression, fields) {
            Ok(value) => value
                .as_bool()
                .ok_or_else(|| "it does not yield a bool (true or false)".into()),
            Err(e) => Err(host_error(e).message),
        }
    }

    fn write_file(
        &self,
        spec: &str,
        name: &str,
        text: &str,
    ) -> impl Future<Output = Result<Option<String>, HostError>> {
        let promise = self.declared("writeFile", || self.0.write_file(spec, name, text));
        HostCall::new(promise, |stored| Ok(stored.as_string()))
    }

    fn aborted(&self) -> bool {
        self.0.aborted()
    }
}

/// The module's allocator: talc instead of std's dlmalloc, 3.7 KB smaller in the shipped module
/// (issue 32) and as fast on the 1,000-guest sync (tests/bench/core_child.ts, measured side by
/// side). wasm32-unknown-unknown without atomics: one thread, as the module always runs.
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
