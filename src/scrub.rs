//! Secrets out of everything a run says. PVE, or a proxy in front of it, may send back what it was
//! given — the `Authorization` header in a 401 page, the token in a JSON message, a password in a
//! task log — so every text that arrives is scrubbed before the core reads it, and every log line,
//! error and record is scrubbed again before it leaves (see [`crate::dispatch`]).
//!
//! What counts as a secret: the token secret, and every string argument whose name says it is one
//! (`tokenSecret`, `password`, `cipassword`, …, at any depth). Each is searched for raw,
//! percent-encoded (either hex case, `+` for space), JSON- and Rust-escaped, and base64-encoded
//! (standard and URL-safe, padded or not); for the token also base64 of `tokenid=secret` and of the
//! whole `PVEAPIToken=tokenid=secret` header value. Secrets shorter than [`MIN_SECRET_CHARS`] are not
//! searched for: replacing every `ab` in a record would destroy it without hiding anything.

use crate::host::{
    Host, HostError, HttpRequest, HttpResponse, LogLevel, ProcessOutput, ProcessRequest,
};
use crate::outcome::{Outcome, Verdict};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;

/// What JavaScript's `encodeURIComponent` leaves as it is (a proxy may percent-encode either way).
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// What replaces a secret.
pub const REDACTED: &str = "***";

/// The shortest secret that is searched for in echoes.
pub const MIN_SECRET_CHARS: usize = 4;

/// The forms of a run's secrets, longest first (so a longer form is replaced before its parts).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrubber {
    needles: Vec<String>,
}

impl Scrubber {
    /// The secrets of one run: every secret-named string in its merged arguments, and the token.
    pub fn for_args(args: &Value) -> Scrubber {
        let mut secrets = Vec::new();
        collect_secrets(args, &mut secrets);
        let mut scrubber = Scrubber::default();
        for secret in &secrets {
            scrubber.add_forms(secret);
        }
        let transport = args.get("transport");
        let text = |key: &str| transport.and_then(|t| t.get(key)).and_then(Value::as_str);
        if let (Some(id), Some(secret)) = (text("tokenId"), text("tokenSecret")) {
            if secret.chars().count() >= MIN_SECRET_CHARS {
                let pair = format!("{id}={secret}");
                for whole in [format!("PVEAPIToken={pair}"), pair] {
                    scrubber.add_base64(&whole);
                    scrubber.add_percent(&whole);
                    scrubber.needles.push(whole);
                }
            }
        }
        scrubber
            .needles
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        scrubber.needles.dedup();
        scrubber
    }

    fn add_forms(&mut self, secret: &str) {
        if secret.chars().count() < MIN_SECRET_CHARS {
            return;
        }
        let json = serde_json::to_string(secret).unwrap_or_default();
        let debug = format!("{secret:?}");
        let forms = [
            secret.to_string(),
            form_encoded(secret),
            json.trim_matches('"').to_string(),
            debug.trim_matches('"').to_string(),
        ];
        self.needles.extend(forms);
        self.add_percent(secret);
        self.add_base64(secret);
    }

    /// Percent-encodings of `text`: every byte but letters and digits, or as `encodeURIComponent`
    /// does; upper- and lower-case hex.
    fn add_percent(&mut self, text: &str) {
        for set in [NON_ALPHANUMERIC, URI_COMPONENT] {
            let percent = utf8_percent_encode(text, set).to_string();
            self.needles.push(lower_hex_escapes(&percent));
            self.needles.push(percent);
        }
    }

    fn add_base64(&mut self, text: &str) {
        let standard = base64(text.as_bytes(), STANDARD);
        let url_safe = base64(text.as_bytes(), URL_SAFE);
        for form in [standard, url_safe] {
            self.needles.push(form.trim_end_matches('=').to_string());
            self.needles.push(form);
        }
    }

    /// `text` with every form of every secret replaced by [`REDACTED`].
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for needle in &self.needles {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), REDACTED);
            }
        }
        out
    }

    /// Scrubs every string in a JSON value (keys included), in place.
    pub fn value(&self, value: &mut Value) {
        if self.needles.is_empty() {
            return;
        }
        match value {
            Value::String(s) if self.needles.iter().any(|n| s.contains(n.as_str())) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                let dirty: Vec<String> = map
                    .keys()
                    .filter(|k| self.needles.iter().any(|n| k.contains(n.as_str())))
                    .cloned()
                    .collect();
                for key in dirty {
                    if let Some(v) = map.remove(&key) {
                        map.insert(self.text(&key), v);
                    }
                }
                map.values_mut().for_each(|v| self.value(v));
            }
            _ => {}
        }
    }
}

impl Scrubber {
    /// An outcome with every record, summary and message scrubbed: the last line of defence.
    pub fn outcome(&self, mut outcome: Outcome) -> Outcome {
        for write in &mut outcome.writes {
            self.value(&mut write.data);
            write.instance = self.text(&write.instance);
        }
        outcome.verdict = match outcome.verdict {
            Verdict::Succeeded { summary } => Verdict::Succeeded {
                summary: self.text(&summary),
            },
            Verdict::Failed { message } => Verdict::Failed {
                message: self.text(&message),
            },
        };
        outcome
    }
}

/// The host as a run sees it: every log line is scrubbed before the host gets it.
pub struct ScrubbedHost<'a, H: Host> {
    pub inner: &'a H,
    pub scrub: &'a Scrubber,
}

impl<H: Host> Host for ScrubbedHost<'_, H> {
    async fn http(&self, request: HttpRequest) -> Result<HttpResponse, HostError> {
        self.inner.http(request).await
    }
    async fn run(&self, request: ProcessRequest) -> Result<ProcessOutput, HostError> {
        self.inner.run(request).await
    }
    async fn sleep(&self, ms: u64) {
        self.inner.sleep(ms).await
    }
    fn now_ms(&self) -> f64 {
        self.inner.now_ms()
    }
    fn log(&self, level: LogLevel, message: &str) {
        self.inner.log(level, &self.scrub.text(message));
    }
    async fn read_record(&self, instance: &str) -> Result<Option<Value>, HostError> {
        self.inner.read_record(instance).await
    }
    async fn list_records(&self, spec: &str) -> Result<Option<Vec<String>>, HostError> {
        self.inner.list_records(spec).await
    }
    fn aborted(&self) -> bool {
        self.inner.aborted()
    }
}

/// Argument names that hold a secret.
fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("password") || lower.contains("secret")
}

fn collect_secrets(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match v {
                    Value::String(s) if is_secret_name(key) => out.push(s.clone()),
                    _ => collect_secrets(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_secrets(v, out)),
        _ => {}
    }
}

fn lower_hex_escapes(percent: &str) -> String {
    let mut out = String::with_capacity(percent.len());
    let mut chars = percent.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            out.extend(chars.by_ref().take(2).map(|h| h.to_ascii_lowercase()));
        }
    }
    out
}

/// `application/x-www-form-urlencoded` of one value (space as `+`).
fn form_encoded(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with padding (RFC 4648) over `alphabet`.
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &str = "5f3c1a2b-9d8e-4f70-a1b2-c3d4e5f6a7b8";

    fn scrubber() -> Scrubber {
        Scrubber::for_args(&json!({
            "transport": {"kind": "api", "tokenId": "root@pam!swamp", "tokenSecret": SECRET},
            "config": {"cipassword": "hunter2 and more"},
            "password": "ct root pw",
            "name": "not a secret"
        }))
    }

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        assert_eq!(base64(b"", STANDARD), "");
        assert_eq!(base64(b"f", STANDARD), "Zg==");
        assert_eq!(base64(b"fo", STANDARD), "Zm8=");
        assert_eq!(base64(b"foobar", STANDARD), "Zm9vYmFy");
        assert_eq!(base64(&[0xfb, 0xff], URL_SAFE), "-_8=");
    }

    #[test]
    fn the_token_secret_is_scrubbed_in_every_recognisable_form() {
        let s = scrubber();
        let header = format!("PVEAPIToken=root@pam!swamp={SECRET}");
        for echoed in [
            SECRET.to_string(),
            header.clone(),
            utf8_percent_encode(&header, NON_ALPHANUMERIC).to_string(),
            lower_hex_escapes(&utf8_percent_encode(&header, NON_ALPHANUMERIC).to_string()),
            base64(SECRET.as_bytes(), STANDARD),
            base64(format!("root@pam!swamp={SECRET}").as_bytes(), STANDARD),
            base64(header.as_bytes(), STANDARD),
            base64(header.as_bytes(), URL_SAFE)
                .trim_end_matches('=')
                .to_string(),
        ] {
            let text = s.text(&format!("401 echo: <{echoed}> end"));
            assert!(!text.contains(SECRET), "{text}");
            assert!(text.contains(REDACTED), "{echoed} → {text}");
            assert!(text.starts_with("401 echo: <") && text.ends_with("> end"));
        }
    }

    #[test]
    fn password_arguments_are_scrubbed_raw_encoded_and_escaped() {
        let s = scrubber();
        for echoed in [
            "hunter2 and more",
            "hunter2+and+more",
            "hunter2%20and%20more",
            "ct root pw",
        ] {
            assert_eq!(s.text(&format!("x {echoed} y")), "x *** y", "{echoed}");
        }
        assert_eq!(s.text("not a secret"), "not a secret");
    }

    #[test]
    fn every_string_of_a_record_is_scrubbed_keys_included() {
        let s = scrubber();
        let mut record = json!({"log": [format!("token {SECRET}")], SECRET: 1, "n": 5});
        s.value(&mut record);
        assert_eq!(record, json!({"log": ["token ***"], "***": 1, "n": 5}));
    }

    #[test]
    fn short_secrets_are_not_searched_for() {
        let s = Scrubber::for_args(&json!({"password": "ab"}));
        assert_eq!(s.text("a bab"), "a bab");
    }
}
