//! What a method run produces: the records to write (always written first) and the verdict.

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

    pub fn is_success(&self) -> bool {
        matches!(self.verdict, Verdict::Succeeded { .. })
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
