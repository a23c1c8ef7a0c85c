//! What `guestExec` of both models shares: the arguments and exit policy, how a command ended, the
//! `<vm|ct>-<vmid>-exec` record (written before the verdict) and the verdict itself. How the command
//! is run differs: the QEMU guest agent (methods/guest_exec.rs) or `pct exec` over ssh
//! (methods/container_exec.rs).

use super::locate::Located;
use super::reference::GuestRef;
use crate::args::{ArgError, Fields, Kind, Spec};
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints::GuestKind;
use crate::pve::exec_data::GuestOutput;
use crate::pve::responses::ExecStatus;
use crate::record_json::{opt, put, set};
use crate::run::{write_value, Run};
use serde_json::{Map, Value};
use std::fmt::Write;

/// PVE refuses `input-data` above 64 KiB.
const MAX_INPUT_BYTES: usize = 64 * 1024;

/// Which exit codes count as success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitPolicy {
    /// Only 0 (the default).
    ZeroOnly,
    /// Any exit code (`allowNonZeroExit: true`); a signal still fails.
    AnyCode,
    /// 0 and the listed codes (`allowedExitCodes`).
    Listed(Vec<i64>),
    /// Exactly the listed codes (`okExitCodes`, `@swamp/ssh`'s convention: the list replaces `[0]`).
    Exactly(Vec<i64>),
}

impl ExitPolicy {
    pub fn accepts(&self, code: i64) -> bool {
        match self {
            ExitPolicy::ZeroOnly => code == 0,
            ExitPolicy::AnyCode => true,
            ExitPolicy::Listed(codes) => code == 0 || codes.contains(&code),
            ExitPolicy::Exactly(codes) => codes.contains(&code),
        }
    }

    /// The policy the arguments ask for: `okExitCodes` (`"any"` or a list replacing `[0]`), or
    /// `allowNonZeroExit` / `allowedExitCodes` — one convention per call, never both.
    fn parse(fields: &Fields) -> Result<Self, ArgError> {
        let allow_any: bool = fields.flag_or("allowNonZeroExit", false)?;
        let given: Option<Vec<i64>> = fields.optional("allowedExitCodes")?;
        let listed_given = given.is_some();
        let listed = given.unwrap_or_default();
        check_codes("allowedExitCodes", &listed)?;
        let ok = fields.present("okExitCodes")?;
        let Some(ok) = ok else {
            return Ok(match (allow_any, listed.is_empty()) {
                (true, _) => ExitPolicy::AnyCode,
                (false, true) => ExitPolicy::ZeroOnly,
                (false, false) => ExitPolicy::Listed(listed),
            });
        };
        if allow_any || listed_given {
            return Err(ArgError::new(
                "okExitCodes",
                "replaces allowNonZeroExit and allowedExitCodes: give one or the other",
            ));
        }
        const RULE: &str = "must be \"any\" or a non-empty list of exit codes 0–255";
        match ok {
            Value::String(word) if word == "any" => Ok(ExitPolicy::AnyCode),
            Value::Array(items) => {
                let mut codes = Vec::with_capacity(items.len());
                for item in items {
                    match item.as_i64().filter(|c| (0..=255).contains(c)) {
                        Some(code) => codes.push(code),
                        None => return Err(ArgError::new("okExitCodes", RULE)),
                    }
                }
                match codes.is_empty() {
                    true => Err(ArgError::new("okExitCodes", RULE)),
                    false => Ok(ExitPolicy::Exactly(codes)),
                }
            }
            _ => Err(ArgError::new("okExitCodes", RULE)),
        }
    }
}

fn check_codes(field: &str, codes: &[i64]) -> Result<(), ArgError> {
    match codes.iter().find(|c| !(0..=255).contains(*c)) {
        Some(bad) => Err(ArgError::new(
            field,
            format!("must hold exit codes 0–255 (got {bad})"),
        )),
        None => Ok(()),
    }
}

/// The fields read after the exit policy, in order.
const TAIL: [Spec; 2] = [
    Spec::new("inputData", Kind::Text).rule(input_fault),
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 30)),
];

fn input_fault(input: &str) -> Option<&'static str> {
    if input.len() > MAX_INPUT_BYTES {
        return Some("must be at most 65536 bytes (PVE's limit)");
    }
    // No argv can carry a NUL, so it could never reach pvesh over ssh: refused on both transports.
    input.contains('\0').then_some("must not contain NUL")
}

/// The arguments of `guestExec`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecArgs {
    pub target: GuestRef,
    pub command: Vec<String>,
    pub timeout_sec: u64,
    pub policy: ExitPolicy,
    pub input: Option<String>,
}

impl ExecArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        // Read as optional: the module's one `Vec<String>` reader serves preflight's methods too.
        let Some(command) = fields.optional::<Vec<String>>("command")? else {
            return Err(ArgError::new("command", "is required"));
        };
        if command.is_empty() {
            return Err(ArgError::new(
                "command",
                "must hold at least one element (the program to run)",
            ));
        }
        // An empty element is named before any NUL, wherever each lies: one refusal for both.
        let bad = match command.iter().position(|c| c.is_empty()) {
            Some(i) => Some((i, "must not be empty")),
            None => {
                (command.iter().position(|c| c.contains('\0'))).map(|i| (i, "must not contain NUL"))
            }
        };
        if let Some((i, rule)) = bad {
            return Err(ArgError::new(format!("command[{i}]"), rule));
        }
        let policy = ExitPolicy::parse(&fields)?;
        let [input, timeout, ..] = fields.read_table(&TAIL)?;
        Ok(ExecArgs {
            target,
            command,
            timeout_sec: timeout.int as u64,
            policy,
            input: input.owned(),
        })
    }
}

/// How the command ended, as far as it could be observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecOutcome {
    /// It exited normally with this code.
    Exited { code: i64 },
    /// It was killed by a signal (the agent reports no exit code then).
    Signaled { signal: i64 },
    /// It had not finished when `timeoutSec` ran out; it may still run in the guest.
    TimedOut,
    /// PVE or the agent refused to start it (agent not configured/running, guest stopped, spawn error).
    NotStarted { reason: String },
    /// The start request got no answer: the command may or may not have started; it was not re-sent.
    Unconfirmed { reason: String },
    /// It started, but its final status could not be read (agent died, guest rebooted, pid forgotten).
    ResultLost { reason: String },
    /// The caller aborted the run while the command ran.
    Aborted,
}

impl ExecOutcome {
    pub fn label(&self) -> &'static str {
        match self {
            ExecOutcome::Exited { .. } => "exited",
            ExecOutcome::Signaled { .. } => "signaled",
            ExecOutcome::TimedOut => "timedOut",
            ExecOutcome::NotStarted { .. } => "notStarted",
            ExecOutcome::Unconfirmed { .. } => "unconfirmed",
            ExecOutcome::ResultLost { .. } => "resultLost",
            ExecOutcome::Aborted => "aborted",
        }
    }
}

/// What one run of a command observed, whichever way it ran.
pub struct Observed {
    /// The agent's pid (VMs); `None` for a container or a command that did not start.
    pub pid: Option<i64>,
    pub outcome: ExecOutcome,
    /// The final status, when one was read.
    pub status: Option<ExecStatus>,
    pub duration_ms: u64,
}

/// The outcome of `guestExec`: the exec record first, then the verdict (with `note` added to a
/// failure message).
pub fn conclude<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
    seen: &Observed,
    note: Option<&str>,
) -> Outcome {
    let status = seen.status.as_ref();
    if let Some(status) = status {
        warn_about_encoding(run, at, "stdout", status.stdout.as_ref());
        warn_about_encoding(run, at, "stderr", status.stderr.as_ref());
    }
    let record = exec_record(
        run,
        at,
        args,
        seen.pid,
        &seen.outcome,
        status,
        seen.duration_ms,
    );
    let verdict = verdict_message(run.kind, at, args, &seen.outcome, status);
    let instance = format!("{}-exec", run.guest_instance(at.vmid));
    let writes = vec![write_value("exec", instance, Value::Object(record))];
    match verdict {
        None => Outcome::succeeded(
            writes,
            format!(
                "command exited with code {} in {} ms",
                match seen.outcome {
                    ExecOutcome::Exited { code } => code,
                    _ => 0,
                },
                seen.duration_ms
            ),
        ),
        Some(message) => Outcome::failed(
            writes,
            match note {
                Some(note) => format!("{message} ({note})"),
                None => message,
            },
        ),
    }
}

/// Says in the log when a stream's text is not exactly the guest's bytes.
fn warn_about_encoding<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    stream: &str,
    output: Option<&GuestOutput>,
) {
    let Some(output) = output else { return };
    let (noun, vmid) = (run.kind.noun(), at.vmid);
    if output.invalid_utf8 {
        run.warn_args(format_args!(
            "{noun} {vmid}: {stream} ({} bytes) is not valid UTF-8; the invalid bytes are replaced by U+FFFD in the record ({stream}InvalidUtf8: true)",
            output.bytes
        ));
    }
    if output.already_text {
        run.warn_args(format_args!(
            "{noun} {vmid}: PVE sent {stream} as text rather than one character per byte; it is recorded as sent"
        ));
    }
}

/// The `<vm|ct>-<vmid>-exec` record, built as JSON (record_json.rs): no struct with a serializer
/// of its own (issue 32). Inlined into its one caller, [`conclude`].
#[inline(always)]
pub fn exec_record<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
    pid: Option<i64>,
    outcome: &ExecOutcome,
    status: Option<&ExecStatus>,
    duration_ms: u64,
) -> Map<String, Value> {
    let error = match outcome {
        ExecOutcome::NotStarted { reason }
        | ExecOutcome::Unconfirmed { reason }
        | ExecOutcome::ResultLost { reason } => Some(reason.as_str()),
        _ => None,
    };
    let stdout: Option<&GuestOutput> = status.and_then(|s| s.stdout.as_ref());
    let stderr: Option<&GuestOutput> = status.and_then(|s| s.stderr.as_ref());
    let mut record = Map::new();
    set(&mut record, "vmid", Value::from(at.vmid));
    put(&mut record, "node", Some(&at.node));
    set(&mut record, "command", Value::from(args.command.clone()));
    opt(&mut record, "pid", pid.map(Value::from));
    put(&mut record, "outcome", Some(outcome.label()));
    let exited = matches!(
        outcome,
        ExecOutcome::Exited { .. } | ExecOutcome::Signaled { .. }
    );
    set(&mut record, "exited", Value::Bool(exited));
    let (exit_code, signal) = match outcome {
        ExecOutcome::Exited { code } => (Some(*code), None),
        ExecOutcome::Signaled { signal } => (None, Some(*signal)),
        _ => (None, None),
    };
    opt(&mut record, "exitCode", exit_code.map(Value::from));
    opt(&mut record, "signal", signal.map(Value::from));
    put(&mut record, "stdout", stdout.map(|o| o.text.as_str()));
    put(&mut record, "stderr", stderr.map(|o| o.text.as_str()));
    let bytes = |o: Option<&GuestOutput>| Value::from(o.map_or(0, |o| o.bytes));
    set(&mut record, "stdoutBytes", bytes(stdout));
    set(&mut record, "stderrBytes", bytes(stderr));
    let invalid = |o: Option<&GuestOutput>| Value::Bool(o.is_some_and(|o| o.invalid_utf8));
    set(&mut record, "stdoutInvalidUtf8", invalid(stdout));
    set(&mut record, "stderrInvalidUtf8", invalid(stderr));
    let truncated = status.is_some_and(|s| s.stdout_truncated);
    set(&mut record, "stdoutTruncated", Value::Bool(truncated));
    let truncated = status.is_some_and(|s| s.stderr_truncated);
    set(&mut record, "stderrTruncated", Value::Bool(truncated));
    set(&mut record, "durationMs", Value::from(duration_ms));
    let timed_out = *outcome == ExecOutcome::TimedOut;
    set(&mut record, "timedOut", Value::Bool(timed_out));
    let accepted = matches!(outcome, ExecOutcome::Exited { code } if args.policy.accepts(*code));
    set(&mut record, "accepted", Value::Bool(accepted));
    put(&mut record, "error", error);
    put(&mut record, "lastOperation", Some(run.method));
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    record
}

/// `None` when the outcome is a success under the exit policy, else the failure message.
pub fn verdict_message(
    kind: GuestKind,
    at: &Located,
    args: &ExecArgs,
    outcome: &ExecOutcome,
    status: Option<&ExecStatus>,
) -> Option<String> {
    if let ExecOutcome::Exited { code } = outcome {
        if args.policy.accepts(*code) {
            return None;
        }
    }
    let mut message = format!(
        "guestExec {} on {} {} (node {})",
        crate::debug_text::list(&args.command),
        kind.noun(),
        at.vmid,
        at.node
    );
    // Each ending is written onto the message where it lies, not formatted apart first (issue 32).
    let (words, reason, with_stderr) = match outcome {
        ExecOutcome::Exited { code } => {
            let _ = write!(message, " exited with code {code}; only ");
            push_accepted_codes(&mut message, &args.policy);
            (
                " counts as success (set okExitCodes, allowNonZeroExit or allowedExitCodes to accept it)",
                "",
                true,
            )
        }
        ExecOutcome::Signaled { signal } => {
            let _ = write!(message, " was killed by signal {signal}");
            ("", "", true)
        }
        ExecOutcome::TimedOut => {
            let _ = write!(
                message,
                " did not finish within timeoutSec={}s",
                args.timeout_sec
            );
            ("; it may still be running in the guest", "", false)
        }
        ExecOutcome::NotStarted { reason } => (" did not start: ", reason.as_str(), false),
        ExecOutcome::Unconfirmed { reason } => {
            (": the start was not confirmed: ", reason.as_str(), false)
        }
        ExecOutcome::ResultLost { reason } => {
            (" started but its result was lost: ", reason.as_str(), false)
        }
        ExecOutcome::Aborted => (
            " was abandoned because the run was aborted; it may still be running in the guest",
            "",
            false,
        ),
    };
    message.push_str(words);
    message.push_str(reason);
    let stderr = status.and_then(|s| s.stderr.as_ref());
    if let (true, Some(stderr)) = (with_stderr, stderr) {
        let tail = tail(&stderr.text);
        if !tail.is_empty() {
            message.push_str("; stderr ends: ");
            message.push_str(&tail);
        }
    }
    Some(message)
}

/// Writes the exit codes the policy accepts onto `message`.
fn push_accepted_codes(message: &mut String, policy: &ExitPolicy) {
    match policy {
        ExitPolicy::ZeroOnly | ExitPolicy::AnyCode => message.push_str("exit code 0"),
        ExitPolicy::Listed(codes) => {
            message.push_str("exit codes 0, ");
            push_codes(message, codes);
        }
        ExitPolicy::Exactly(codes) => {
            message.push_str(["exit codes ", "exit code "][usize::from(codes.len() == 1)]);
            push_codes(message, codes);
            message.push_str(" (okExitCodes)");
        }
    }
}

/// Writes `1, 2, 3` onto `message`.
fn push_codes(message: &mut String, codes: &[i64]) {
    for (i, code) in codes.iter().enumerate() {
        let _ = write!(message, "{}{code}", ["", ", "][usize::from(i > 0)]);
    }
}

/// The last ~300 characters of a stream, on one line.
fn tail(text: &str) -> String {
    let trimmed = text.trim();
    let count = trimmed.chars().count();
    let start = trimmed
        .char_indices()
        .nth(count.saturating_sub(300))
        .map_or(trimmed.len(), |(at, _)| at);
    let tail = &trimmed[start..];
    let mut flat = String::with_capacity(tail.len());
    for word in tail.split_whitespace() {
        crate::quote::push_item(&mut flat, " ", word);
    }
    if count > 300 {
        format!("…{flat}")
    } else {
        flat
    }
}

#[cfg(test)]
mod nul_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_is_refused_in_command_items_and_input_but_newlines_pass() {
        let args = |command: Value, input: &str| json!({"vmid": 100, "command": command, "inputData": input});
        let nul_item = ExecArgs::parse(&args(json!(["printf", "a\0b"]), "")).unwrap_err();
        assert_eq!(nul_item.field, "command[1]");
        let nul_input = ExecArgs::parse(&args(json!(["cat"]), "a\0b")).unwrap_err();
        assert_eq!(nul_input.field, "inputData");
        // Single quotes carry newlines through the node's shell (tests/ssh/transport_test.ts).
        assert!(ExecArgs::parse(&args(json!(["printf", "a\nb\rc"]), "x\ny")).is_ok());
    }
}

#[cfg(test)]
mod exit_policy_tests {
    use super::*;
    use serde_json::json;

    fn policy(extra: Value) -> Result<ExitPolicy, ArgError> {
        let mut args = json!({"vmid": 100, "command": ["true"]});
        if let (Some(target), Some(more)) = (args.as_object_mut(), extra.as_object()) {
            target.extend(more.clone());
        }
        ExecArgs::parse(&args).map(|a| a.policy)
    }

    #[test]
    fn ok_exit_codes_replace_zero_rather_than_adding_to_it() {
        let exactly = policy(json!({"okExitCodes": [1, 3]})).unwrap();
        assert!(exactly.accepts(1) && exactly.accepts(3));
        assert!(!exactly.accepts(0), "0 counts only when listed");
        assert!(policy(json!({"okExitCodes": [0, 1]})).unwrap().accepts(0));
    }

    #[test]
    fn ok_exit_codes_any_accepts_every_exit_code() {
        let any = policy(json!({"okExitCodes": "any"})).unwrap();
        assert_eq!(any, ExitPolicy::AnyCode);
    }

    #[test]
    fn ok_exit_codes_refuse_an_empty_list_other_words_and_codes_past_255() {
        for bad in [
            json!([]),
            json!("all"),
            json!([256]),
            json!([-1]),
            json!([1.5]),
            json!(1),
        ] {
            let error = policy(json!({ "okExitCodes": bad })).unwrap_err();
            assert_eq!(error.field, "okExitCodes", "{bad}");
        }
    }

    #[test]
    fn ok_exit_codes_with_either_older_field_is_refused_naming_the_clash() {
        for clash in [
            json!({"allowNonZeroExit": true}),
            json!({"allowedExitCodes": [1]}),
        ] {
            let mut extra = clash.clone();
            extra["okExitCodes"] = json!([1]);
            let error = policy(extra).unwrap_err();
            assert_eq!(error.field, "okExitCodes");
            assert!(
                error.rule.contains("give one or the other"),
                "{}",
                error.rule
            );
        }
        // The older fields' defaults given explicitly are no clash.
        assert!(policy(json!({"okExitCodes": [1], "allowNonZeroExit": false})).is_ok());
    }

    #[test]
    fn the_older_fields_keep_their_meaning() {
        assert_eq!(policy(json!({})).unwrap(), ExitPolicy::ZeroOnly);
        assert_eq!(
            policy(json!({"allowNonZeroExit": true})).unwrap(),
            ExitPolicy::AnyCode
        );
        let listed = policy(json!({"allowedExitCodes": [2]})).unwrap();
        assert!(listed.accepts(0) && listed.accepts(2) && !listed.accepts(1));
    }
}

#[cfg(test)]
mod verdict_tests {
    use super::*;
    use serde_json::json;

    fn args(policy: ExitPolicy) -> ExecArgs {
        ExecArgs {
            target: GuestRef {
                vmid: Some(100),
                name: None,
            },
            command: vec!["ls".to_string(), "-l".to_string()],
            timeout_sec: 30,
            policy,
            input: None,
        }
    }

    fn verdict(policy: ExitPolicy, outcome: ExecOutcome) -> Option<String> {
        let at = Located {
            vmid: 100,
            node: "pve1".to_string(),
        };
        verdict_message(GuestKind::Qemu, &at, &args(policy), &outcome, None)
    }

    #[test]
    fn each_ending_is_written_onto_the_message() {
        let head = format!(
            "guestExec {} on {} 100 (node pve1)",
            crate::debug_text::list(&args(ExitPolicy::ZeroOnly).command),
            GuestKind::Qemu.noun()
        );
        let tail = " counts as success (set okExitCodes, allowNonZeroExit or allowedExitCodes to accept it)";
        let exited = |policy, code| verdict(policy, ExecOutcome::Exited { code });
        assert_eq!(exited(ExitPolicy::ZeroOnly, 0), None);
        assert_eq!(exited(ExitPolicy::Listed(vec![2, 3]), 3), None);
        assert_eq!(
            exited(ExitPolicy::ZeroOnly, 3).unwrap(),
            format!("{head} exited with code 3; only exit code 0{tail}")
        );
        assert_eq!(
            exited(ExitPolicy::Listed(vec![2, 3]), 4).unwrap(),
            format!("{head} exited with code 4; only exit codes 0, 2, 3{tail}")
        );
        assert_eq!(
            exited(ExitPolicy::Exactly(vec![5]), 0).unwrap(),
            format!("{head} exited with code 0; only exit code 5 (okExitCodes){tail}")
        );
        assert_eq!(
            exited(ExitPolicy::Exactly(vec![5, 6]), 0).unwrap(),
            format!("{head} exited with code 0; only exit codes 5, 6 (okExitCodes){tail}")
        );
        assert_eq!(
            verdict(ExitPolicy::AnyCode, ExecOutcome::Signaled { signal: 9 }).unwrap(),
            format!("{head} was killed by signal 9")
        );
        assert_eq!(
            verdict(ExitPolicy::AnyCode, ExecOutcome::TimedOut).unwrap(),
            format!(
                "{head} did not finish within timeoutSec=30s; it may still be running in the guest"
            )
        );
        let reason = "agent not running".to_string();
        assert_eq!(
            verdict(ExitPolicy::AnyCode, ExecOutcome::NotStarted { reason }).unwrap(),
            format!("{head} did not start: agent not running")
        );
    }

    #[test]
    fn an_empty_element_is_named_before_a_nul() {
        let refused =
            |command| ExecArgs::parse(&json!({"vmid": 100, "command": command})).unwrap_err();
        let e = refused(json!(["a\u{0}b", ""]));
        assert_eq!(
            (e.field.as_str(), e.rule.as_str()),
            ("command[1]", "must not be empty")
        );
        let e = refused(json!(["ls", "a\u{0}b"]));
        assert_eq!(
            (e.field.as_str(), e.rule.as_str()),
            ("command[1]", "must not contain NUL")
        );
    }
}
