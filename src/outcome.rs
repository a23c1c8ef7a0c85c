//! What a method run produces: the records to write (always written first) and the verdict.

use crate::json_text::{array, Object};
use serde::Serialize;
use serde_json::Value;

/// One data version to write with `ctx.writeResource(spec, instance, data)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordWrite {
    pub spec: String,
    pub instance: String,
    pub data: Value,
}

/// Whether the intended effect was observed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum Verdict {
    /// The effect was observed; `summary` says what was seen.
    Succeeded { summary: String },
    /// It was not: `message` says what was expected, what happened, and what to check.
    Failed { message: String },
}

/// The result of one method run. The wrapper writes every record, then throws on `Failed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub writes: Vec<RecordWrite>,
    pub verdict: Verdict,
}

impl Outcome {
    pub fn succeeded(writes: Vec<RecordWrite>, summary: impl Into<String>) -> Self {
        Outcome {
            writes,
            verdict: Verdict::Succeeded {
                summary: summary.into(),
            },
        }
    }

    pub fn failed(writes: Vec<RecordWrite>, message: impl Into<String>) -> Self {
        Outcome {
            writes,
            verdict: Verdict::Failed {
                message: message.into(),
            },
        }
    }

    /// Every number in the records as JavaScript can hold it: an integer beyond 2^53 (PVE may send
    /// `maxmem` 2^64 − 1) becomes the nearest float instead of failing the hand-over — records hold
    /// a number or leave the field out, never `null`.
    pub fn with_js_numbers(mut self) -> Self {
        for write in &mut self.writes {
            js_numbers(&mut write.data);
        }
        self
    }

    pub fn is_success(&self) -> bool {
        matches!(self.verdict, Verdict::Succeeded { .. })
    }

    /// The outcome as the JSON text `runMethod` hands over: what its derived `Serialize` writes,
    /// written by [`crate::json_text`].
    pub fn json(&self) -> String {
        let writes = self.writes.iter().map(|write| {
            Object::new()
                .str("spec", &write.spec)
                .str("instance", &write.instance)
                .value("data", &write.data)
                .end()
        });
        let verdict = match &self.verdict {
            Verdict::Succeeded { summary } => Object::new()
                .str("status", "succeeded")
                .str("summary", summary),
            Verdict::Failed { message } => Object::new()
                .str("status", "failed")
                .str("message", message),
        };
        Object::new()
            .raw("writes", &array(&mut { writes }))
            .raw("verdict", &verdict.end())
            .end()
    }
}

/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

fn js_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            let unsafe_int = n.as_u64().is_some_and(|u| u > MAX_SAFE_INTEGER)
                || n.as_i64()
                    .is_some_and(|i| i.unsigned_abs() > MAX_SAFE_INTEGER);
            if unsafe_int {
                if let Some(float) = n.as_f64().and_then(serde_json::Number::from_f64) {
                    *n = float;
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(js_numbers),
        Value::Object(map) => map.values_mut().for_each(js_numbers),
        _ => {}
    }
}

/// A method that stopped before it had anything worth recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl Failure {
    pub fn new(message: impl Into<String>) -> Self {
        Failure(message.into())
    }
}

impl From<Failure> for Outcome {
    fn from(failure: Failure) -> Self {
        Outcome::failed(Vec::new(), failure.0)
    }
}

impl From<crate::args::ArgError> for Failure {
    fn from(error: crate::args::ArgError) -> Self {
        Failure(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_beyond_2_pow_53_become_floats_and_stay_numbers() {
        let outcome = Outcome::succeeded(
            vec![RecordWrite {
                spec: "guest".into(),
                instance: "vm-1".into(),
                data: json!({"maxMemBytes": u64::MAX, "vmid": 100, "list": [-(1i64 << 60)]}),
            }],
            "",
        )
        .with_js_numbers();
        let data = &outcome.writes[0].data;
        assert_eq!(data["maxMemBytes"].as_f64(), Some(u64::MAX as f64));
        assert!(data["maxMemBytes"].as_u64().is_none());
        assert_eq!(data["vmid"], 100);
        assert!(data["list"][0].is_f64());
    }

    #[test]
    fn json_text_is_what_serde_derives() {
        let write = |instance: &str| RecordWrite {
            spec: "guest".into(),
            instance: instance.into(),
            data: json!({"name": "w\"eb\n", "cpuPct": 12.35, "tags": [], "x": {"b": null}}),
        };
        for outcome in [
            Outcome::succeeded(vec![write("vm-1"), write("vm-2")], "ok \"quoted\" é"),
            Outcome::failed(vec![write("vm-\u{1}")], "failed:\n\twhy"),
            Outcome::failed(Vec::new(), ""),
        ] {
            assert_eq!(outcome.json(), serde_json::to_string(&outcome).unwrap());
        }
    }
}
