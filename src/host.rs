//! The effects the core needs, injected by whoever runs it (the Deno wrapper, or a fake in tests).
//!
//! The core never performs I/O itself: every request, pause, clock read, log line and stored-record read
//! goes through [`Host`], so each decision can be tested without a network.

use crate::json_text::{self, Object};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::future::Future;

/// One HTTP exchange, fully assembled by the core; the host sends it verbatim.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    /// Header pairs. The `Authorization` header carries the token secret: hosts must never log it.
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_ms: u64,
    /// PEM of the CA that signs the PVE certificate (`caCert`), if any.
    pub ca_cert: Option<String>,
    pub skip_tls_verify: bool,
}

impl HttpRequest {
    /// The request as the JSON text the host is handed: what its derived `Serialize` writes,
    /// written by [`crate::json_text`].
    pub fn json(&self) -> String {
        let headers = self.headers.iter().map(|(name, value)| {
            format!("[{},{}]", json_text::string(name), json_text::string(value))
        });
        Object::new()
            .str("method", self.method)
            .str("url", &self.url)
            .raw("headers", &json_text::array(&mut { headers }))
            .opt_str("body", self.body.as_deref())
            .u64("timeoutMs", self.timeout_ms)
            .opt_str("caCert", self.ca_cert.as_deref())
            .bool("skipTlsVerify", self.skip_tls_verify)
            .end()
    }
}

/// What came back over HTTP, whatever the status.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpResponse {
    pub status: u16,
    #[serde(default)]
    pub status_text: String,
    #[serde(default)]
    pub body: String,
}

/// A local program to run with an explicit argv (never through a shell).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRequest {
    pub argv: Vec<String>,
    pub timeout_ms: u64,
}

impl ProcessRequest {
    /// The request as the JSON text the host is handed (as [`HttpRequest::json`]).
    pub fn json(&self) -> String {
        let argv = self.argv.iter().map(|arg| json_text::string(arg));
        Object::new()
            .raw("argv", &json_text::array(&mut { argv }))
            .u64("timeoutMs", self.timeout_ms)
            .end()
    }
}

/// How a local program ended.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessOutput {
    /// `None` when the program was killed by a signal.
    pub code: Option<i32>,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// How many bytes the program wrote to stdout, counted before decoding (the text replaces an
    /// invalid UTF-8 sequence, so its length is not the count); `None` from a host that does not
    /// count them.
    #[serde(default)]
    pub stdout_bytes: Option<usize>,
    /// The same for stderr.
    #[serde(default)]
    pub stderr_bytes: Option<usize>,
}

/// Why the host could not complete an effect at all (no HTTP status, no exit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HostErrorKind {
    /// Connection refused or reset, DNS failure, broken pipe.
    Network,
    /// No answer within the request's timeout.
    Timeout,
    /// The TLS handshake failed (unknown CA, bad certificate, hostname mismatch).
    Tls,
    /// The local program could not be started.
    Spawn,
    /// The run was aborted by the caller.
    Aborted,
    /// The host itself failed (a record read, a bug).
    Internal,
}

/// An effect the host could not complete, with the host's own words.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct HostError {
    pub kind: HostErrorKind,
    pub message: String,
}

/// Severity of a log line sent to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
}

/// Every effect the core can cause. Futures are not `Send`: the wasm host is single-threaded.
pub trait Host {
    /// Performs one HTTP exchange.
    fn http(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, HostError>>;
    /// Runs one local program (the ssh client).
    fn run(
        &self,
        request: ProcessRequest,
    ) -> impl Future<Output = Result<ProcessOutput, HostError>>;
    /// Waits; returns early when the run is aborted.
    fn sleep(&self, ms: u64) -> impl Future<Output = ()>;
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> f64;
    /// Sends one line to the user's log.
    fn log(&self, level: LogLevel, message: &str);
    /// [`Host::log`] of a line given as `format_args!`: formatted here, once, not into a text of
    /// its own at every call site (issue 32).
    fn log_args(&self, level: LogLevel, message: std::fmt::Arguments<'_>) {
        self.log(level, &std::fmt::format(message));
    }
    /// The latest stored version of a record of this model definition, if any.
    fn read_record(&self, instance: &str)
        -> impl Future<Output = Result<Option<Value>, HostError>>;
    /// The latest stored versions of several records, in order: `None` for one that is not stored
    /// or cannot be read. `Err` only when the host could not answer for them at all (a host that
    /// reads them together and failed). The default reads them one by one and never errs.
    fn read_records(
        &self,
        instances: &[String],
    ) -> impl Future<Output = Result<Vec<Option<Value>>, HostError>> {
        async move { Ok(read_one_by_one(self, instances).await) }
    }
    /// The instance names of this model definition's stored records of resource spec `spec`
    /// (swamp: `ctx.dataRepository.findAllForModel`); `None` when the host cannot list them.
    fn list_records(
        &self,
        _spec: &str,
    ) -> impl Future<Output = Result<Option<Vec<String>>, HostError>> {
        async { Ok(None) }
    }
    /// Whether a guest's fields (a JSON object's text) satisfy a selection expression (swamp: CEL,
    /// evaluated in `ctx.createCelEnvironment()`); `Err` with the evaluator's words when the
    /// expression does not compile or does not yield a bool. A host without an evaluator refuses.
    fn select(&self, _expression: &str, _fields: &str) -> Result<bool, String> {
        Err("this host cannot evaluate selection expressions".into())
    }
    /// Stores `text` as a file output of the model's file spec `spec` named `name` (swamp:
    /// `ctx.createFileWriter(spec, name).writeText(text)`); the name it was stored under, or `None`
    /// from a host that cannot store files (a swamp without `createFileWriter`).
    fn write_file(
        &self,
        _spec: &str,
        _name: &str,
        _text: &str,
    ) -> impl Future<Output = Result<Option<String>, HostError>> {
        async { Ok(None) }
    }
    /// Whether the caller aborted the run (`ctx.signal`).
    fn aborted(&self) -> bool;
}

/// Records read one `read_record` at a time, in order; one that cannot be read counts as not
/// stored (`None`), as a sync treats it.
pub async fn read_one_by_one<H: Host + ?Sized>(
    host: &H,
    instances: &[String],
) -> Vec<Option<Value>> {
    let mut records = Vec::with_capacity(instances.len());
    for instance in instances {
        records.push(host.read_record(instance).await.ok().flatten());
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_json_text_is_what_serde_derives() {
        let mut request = HttpRequest {
            method: "POST",
            url: "https://pve:8006/api2/json/nodes?x=\"1\"".into(),
            headers: vec![
                ("Authorization".into(), "PVEAPIToken=a@pam!t=s\\é".into()),
                (
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
            ],
            body: Some("a=1&b=\n".into()),
            timeout_ms: 30_000,
            ca_cert: Some("-----BEGIN CERTIFICATE-----\nMII\n".into()),
            skip_tls_verify: true,
        };
        assert_eq!(request.json(), serde_json::to_string(&request).unwrap());
        (request.body, request.ca_cert, request.skip_tls_verify) = (None, None, false);
        request.headers.clear();
        assert_eq!(request.json(), serde_json::to_string(&request).unwrap());
        for argv in [
            vec![],
            vec!["ssh".to_string(), "-o".into(), "a \"b\"\u{7f}".into()],
        ] {
            let run = ProcessRequest {
                argv,
                timeout_ms: u64::MAX,
            };
            assert_eq!(run.json(), serde_json::to_string(&run).unwrap());
        }
    }
}
