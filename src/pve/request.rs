//! A transport-neutral PVE API request: verb, path segments and parameters.

use serde::Serialize;

/// pvesh's verbs; the api transport maps them onto HTTP methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Get,
    Create,
    Set,
    Delete,
}

impl Verb {
    /// The HTTP method of this verb.
    pub fn http_method(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Create => "POST",
            Verb::Set => "PUT",
            Verb::Delete => "DELETE",
        }
    }

    /// The pvesh sub-command of this verb.
    pub fn pvesh_command(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Create => "create",
            Verb::Set => "set",
            Verb::Delete => "delete",
        }
    }
}

/// Whether sending a request twice is harmless. Only reads may be retried after a transient fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// A read with no effect: safe to retry.
    Safe,
    /// A mutation, or a read that consumes its answer (agent exec-status): never re-sent blindly.
    Never,
}

/// One API call, before a transport turns it into HTTP or a pvesh command line.
#[derive(Debug, Clone, PartialEq)]
pub struct PveRequest {
    pub verb: Verb,
    /// Path segments below `/api2/json`, unencoded (each was validated to hold no `/`).
    pub segments: Vec<String>,
    /// Parameters in order; an array parameter repeats its key.
    pub params: Vec<(String, String)>,
    pub repeat: Repeat,
}

impl PveRequest {
    /// A read that may be retried.
    pub fn get(segments: &[&str]) -> Self {
        Self::new(Verb::Get, segments, Repeat::Safe)
    }

    /// A request of any verb; `repeat` says whether it may be re-sent.
    pub fn new(verb: Verb, segments: &[&str], repeat: Repeat) -> Self {
        PveRequest {
            verb,
            segments: owned_segments(segments),
            params: Vec::new(),
            repeat,
        }
    }

    /// Adds one parameter (call again with the same key for an array). Not inlined: a copy of the
    /// request moved in and out at each of the many builders that chain it is larger (issue 32).
    #[inline(never)]
    pub fn param(mut self, key: &str, value: impl Into<String>) -> Self {
        self.add(key, value);
        self
    }

    /// [`PveRequest::param`] in place, for a parameter added under a condition: `request =
    /// request.param(…)` copies the whole request out and back at every such place (issue 32).
    pub fn add(&mut self, key: &str, value: impl Into<String>) {
        self.params.push((key.to_string(), value.into()));
    }

    /// The path as PVE names it, e.g. `/nodes/pve1/qemu/100/status/current` (for messages and pvesh).
    pub fn display_path(&self) -> String {
        let mut path = String::new();
        for segment in &self.segments {
            path.push('/');
            path.push_str(segment);
        }
        path
    }

    /// `GET /nodes/…` style label for messages; never includes parameters (they may be user data).
    pub fn label(&self) -> String {
        format!("{} {}", self.verb.http_method(), self.display_path())
    }
}

/// Appends one parameter to a request's list, both texts copied: one copy of this code for every
/// builder of a parameter list, not a closure of its own in each (issue 32).
pub fn push_param(params: &mut Vec<(String, String)>, key: &str, value: &str) {
    params.push((key.to_string(), value.to_string()));
}

/// A path's segments, owned (a request or a planned write keeps them past its builder's borrows).
pub fn owned_segments(segments: &[&str]) -> Vec<String> {
    let mut owned = Vec::with_capacity(segments.len());
    for segment in segments {
        owned.push(segment.to_string());
    }
    owned
}
