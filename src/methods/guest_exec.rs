//! `guestExec`: runs a command through the QEMU guest agent and succeeds only when it exited with an
//! accepted code. The `vm-<vmid>-exec` record is produced whatever happened, and written before the
//! verdict is raised.

use crate::args::{ArgError, Fields};
use crate::explain::hint;
use crate::guest::locate::{act_where_it_lives, Located, Placed};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::poll::{Pacer, Stopped};
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::responses::{ExecStarted, ExecStatus};
use crate::run::{write, Run};
use serde::Serialize;
use serde_json::Value;

/// PVE refuses `input-data` above 64 KiB.
const MAX_INPUT_BYTES: usize = 64 * 1024;
/// How often a poll that failed for a transient reason is tried again before the result counts as lost.
const POLL_RETRIES: u32 = 2;

/// Which exit codes count as success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitPolicy {
    /// Only 0 (the default).
    ZeroOnly,
    /// Any exit code (`allowNonZeroExit: true`); a signal still fails.
    AnyCode,
    /// 0 and the listed codes (`allowedExitCodes`).
    Listed(Vec<i64>),
}

impl ExitPolicy {
    pub fn accepts(&self, code: i64) -> bool {
        match self {
            ExitPolicy::ZeroOnly => code == 0,
            ExitPolicy::AnyCode => true,
            ExitPolicy::Listed(codes) => code == 0 || codes.contains(&code),
        }
    }
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
        let command: Vec<String> = fields.required("command")?;
        if command.is_empty() {
            return Err(ArgError::new(
                "command",
                "must hold at least one element (the program to run)",
            ));
        }
        if let Some(i) = command.iter().position(|c| c.is_empty()) {
            return Err(ArgError::new(format!("command[{i}]"), "must not be empty"));
        }
        if let Some(i) = command.iter().position(|c| c.contains('\0')) {
            return Err(ArgError::new(
                format!("command[{i}]"),
                "must not contain NUL",
            ));
        }
        let allow_any: bool = fields.or("allowNonZeroExit", false)?;
        let listed: Vec<i64> = fields.or("allowedExitCodes", Vec::new())?;
        if let Some(bad) = listed.iter().find(|c| !(0..=255).contains(*c)) {
            return Err(ArgError::new(
                "allowedExitCodes",
                format!("must hold exit codes 0–255 (got {bad})"),
            ));
        }
        let input: Option<String> = fields.optional("inputData")?;
        if input.as_ref().is_some_and(|i| i.len() > MAX_INPUT_BYTES) {
            return Err(ArgError::new(
                "inputData",
                "must be at most 65536 bytes (PVE's limit)",
            ));
        }
        // No argv can carry a NUL, so it could never reach pvesh over ssh: refused on both transports.
        if input.as_ref().is_some_and(|i| i.contains('\0')) {
            return Err(ArgError::new("inputData", "must not contain NUL"));
        }
        Ok(ExecArgs {
            target,
            command,
            timeout_sec: fields.int_in_or("timeoutSec", 1, 86_400, 30)? as u64,
            policy: match (allow_any, listed.is_empty()) {
                (true, _) => ExitPolicy::AnyCode,
                (false, true) => ExitPolicy::ZeroOnly,
                (false, false) => ExitPolicy::Listed(listed),
            },
            input,
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
    fn label(&self) -> &'static str {
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

/// The `vm-<vmid>-exec` record.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRecord {
    pub vmid: u32,
    pub node: String,
    pub command: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// `exited`, `signaled`, `timedOut`, `notStarted`, `unconfirmed`, `resultLost` or `aborted`.
    pub outcome: String,
    /// Whether the process ended (normally or by a signal).
    pub exited: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub duration_ms: u64,
    pub timed_out: bool,
    /// Whether the outcome met the exit policy: the method's verdict.
    pub accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub last_operation: String,
    pub recorded_at: String,
}

/// Runs `guestExec`.
pub async fn guest_exec<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match ExecArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let pve = run.pve();
    let started = run.host.now_ms();
    // Sent where the VM is expected; a node that answers "not here" refused before running anything.
    let send = async |at: &Located| {
        let request =
            endpoints::agent_exec(&at.node, at.vmid, &args.command, args.input.as_deref());
        pve.read::<ExecStarted>(&request, "an exec pid").await
    };
    let (located, sent) = match act_where_it_lives(run, &args.target, send).await {
        Ok(Placed::Done { at, value }) => (at, Ok(value.pid)),
        Ok(Placed::Refused { at, error }) => (at, Err(error)),
        Ok(Placed::Absent { vmid }) => {
            return Failure::new(format!("VM {vmid} does not exist on any node")).into()
        }
        Err(failure) => return failure.into(),
    };
    let (pid, outcome, status) = follow(run, &located, &args, sent).await;
    let duration_ms = (run.host.now_ms() - started).max(0.0).round() as u64;
    let record = exec_record(
        run,
        &located,
        &args,
        pid,
        &outcome,
        status.as_ref(),
        duration_ms,
    );
    let verdict = verdict_message(&located, &args, &outcome, status.as_ref());
    let writes = vec![write("exec", format!("vm-{}-exec", located.vmid), &record)];
    match verdict {
        None => Outcome::succeeded(
            writes,
            format!(
                "command exited with code {} in {duration_ms} ms",
                record.exit_code.unwrap_or(0)
            ),
        ),
        Some(message) => Outcome::failed(writes, message),
    }
}

/// Follows a sent command to its end: asks for its status at once, then at growing pauses;
/// returns the pid (if it started) and what was seen.
async fn follow<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
    sent: Result<i64, PveError>,
) -> (Option<i64>, ExecOutcome, Option<ExecStatus>) {
    let pid = match sent {
        Ok(pid) => pid,
        Err(e) => return (None, start_failure(e), None),
    };
    run.info(&format!(
        "VM {}: started {:?} as pid {pid}",
        at.vmid, args.command
    ));
    let pve = run.pve();
    let budget_ms = args.timeout_sec * 1000;
    let mut pacer = Pacer::new(run.host.now_ms(), budget_ms, pve.poll_cap_ms);
    let mut failed_polls = 0;
    loop {
        let answer = pve
            .call(&endpoints::agent_exec_status(&at.node, at.vmid, pid))
            .await
            .and_then(|data| {
                ExecStatus::from_value(&data).ok_or_else(|| {
                    PveError::malformed(format!("exec-status answered without `exited`: {data}"))
                })
            });
        match answer {
            // The agent forgets a finished pid after this answer: it is the one and only final read.
            Ok(status) if status.exited => {
                return (Some(pid), final_outcome(&status), Some(status))
            }
            Ok(_) => failed_polls = 0,
            Err(e)
                if (e.is_transient() || e.kind == ErrorKind::Malformed)
                    && failed_polls < POLL_RETRIES =>
            {
                // Reading status again is safe unless the lost (or unreadable) answer was the final
                // one; then the next read says "Invalid parameter 'pid'" and the result is reported
                // lost below.
                failed_polls += 1;
                run.warn(&format!(
                    "VM {}: reading the status of pid {pid} failed ({e}); trying again",
                    at.vmid
                ));
            }
            Err(e) if e.kind == ErrorKind::Aborted => {
                return (Some(pid), ExecOutcome::Aborted, None)
            }
            Err(e) => return (Some(pid), lost(e, failed_polls > 0), None),
        }
        match pacer.pause(run.host).await {
            Ok(()) => {}
            Err(Stopped::OutOfTime) => return (Some(pid), ExecOutcome::TimedOut, None),
            Err(Stopped::Aborted) => return (Some(pid), ExecOutcome::Aborted, None),
        }
    }
}

fn start_failure(error: PveError) -> ExecOutcome {
    match error.outcome_unknown() {
        // The answer was lost or unreadable: the agent may have started the command.
        true => ExecOutcome::Unconfirmed {
            reason: format!(
                "{error} — the command may have run in the guest; it was not sent again (it could run twice): check the guest before running it again"
            ),
        },
        false => ExecOutcome::NotStarted {
            reason: format!("{error} — {}", hint(error.kind)),
        },
    }
}

fn lost(error: PveError, after_lost_answer: bool) -> ExecOutcome {
    let pid_forgotten = error.message.contains("Invalid parameter 'pid'");
    let why = match (pid_forgotten, after_lost_answer) {
        (true, true) => "an earlier status answer was lost in transit, and the agent hands out a final status only once",
        (true, false) => "the agent no longer knows the process (the agent restarted or the guest rebooted)",
        (false, _) => hint(error.kind),
    };
    ExecOutcome::ResultLost {
        reason: format!(
            "{error} — {why}; whether and how the command ended is unknown (it may still be running in the guest)"
        ),
    }
}

fn final_outcome(status: &ExecStatus) -> ExecOutcome {
    match (status.exit_code, status.signal) {
        (_, Some(signal)) => ExecOutcome::Signaled { signal },
        (Some(code), None) => ExecOutcome::Exited { code },
        (None, None) => ExecOutcome::ResultLost {
            reason:
                "the agent reported the process ended but gave neither an exit code nor a signal"
                    .into(),
        },
    }
}

fn exec_record<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
    pid: Option<i64>,
    outcome: &ExecOutcome,
    status: Option<&ExecStatus>,
    duration_ms: u64,
) -> ExecRecord {
    let error = match outcome {
        ExecOutcome::NotStarted { reason }
        | ExecOutcome::Unconfirmed { reason }
        | ExecOutcome::ResultLost { reason } => Some(reason.clone()),
        _ => None,
    };
    ExecRecord {
        vmid: at.vmid,
        node: at.node.clone(),
        command: args.command.clone(),
        pid,
        outcome: outcome.label().to_string(),
        exited: matches!(
            outcome,
            ExecOutcome::Exited { .. } | ExecOutcome::Signaled { .. }
        ),
        exit_code: match outcome {
            ExecOutcome::Exited { code } => Some(*code),
            _ => None,
        },
        signal: match outcome {
            ExecOutcome::Signaled { signal } => Some(*signal),
            _ => None,
        },
        stdout: status.and_then(|s| s.stdout.clone()),
        stderr: status.and_then(|s| s.stderr.clone()),
        stdout_truncated: status.is_some_and(|s| s.stdout_truncated),
        stderr_truncated: status.is_some_and(|s| s.stderr_truncated),
        duration_ms,
        timed_out: *outcome == ExecOutcome::TimedOut,
        accepted: matches!(outcome, ExecOutcome::Exited { code } if args.policy.accepts(*code)),
        error,
        last_operation: run.method.to_string(),
        recorded_at: run.now_iso(),
    }
}

/// `None` when the outcome is a success under the exit policy, else the failure message.
fn verdict_message(
    at: &Located,
    args: &ExecArgs,
    outcome: &ExecOutcome,
    status: Option<&ExecStatus>,
) -> Option<String> {
    let what = format!(
        "guestExec {:?} on VM {} (node {})",
        args.command, at.vmid, at.node
    );
    let stderr_tail = status
        .and_then(|s| s.stderr.as_deref())
        .map(tail)
        .filter(|t| !t.is_empty());
    let with_stderr = |text: String| match &stderr_tail {
        Some(tail) => format!("{text}; stderr ends: {tail}"),
        None => text,
    };
    match outcome {
        ExecOutcome::Exited { code } if args.policy.accepts(*code) => None,
        ExecOutcome::Exited { code } => Some(with_stderr(format!(
            "{what} exited with code {code}; only {} counts as success (set allowNonZeroExit or allowedExitCodes to accept it)",
            accepted_codes(&args.policy)
        ))),
        ExecOutcome::Signaled { signal } => Some(with_stderr(format!("{what} was killed by signal {signal}"))),
        ExecOutcome::TimedOut => Some(format!(
            "{what} did not finish within timeoutSec={}s; it may still be running in the guest",
            args.timeout_sec
        )),
        ExecOutcome::NotStarted { reason } => Some(format!("{what} did not start: {reason}")),
        ExecOutcome::Unconfirmed { reason } => Some(format!("{what}: the start was not confirmed: {reason}")),
        ExecOutcome::ResultLost { reason } => Some(format!("{what} started but its result was lost: {reason}")),
        ExecOutcome::Aborted => Some(format!("{what} was abandoned because the run was aborted; it may still be running in the guest")),
    }
}

fn accepted_codes(policy: &ExitPolicy) -> String {
    match policy {
        ExitPolicy::ZeroOnly | ExitPolicy::AnyCode => "exit code 0".to_string(),
        ExitPolicy::Listed(codes) => {
            let list: Vec<String> = codes.iter().map(i64::to_string).collect();
            format!("exit codes 0, {}", list.join(", "))
        }
    }
}

/// The last ~300 characters of a stream, on one line.
fn tail(text: &str) -> String {
    let trimmed = text.trim();
    let count = trimmed.chars().count();
    let tail: String = trimmed.chars().skip(count.saturating_sub(300)).collect();
    let flat = tail.split_whitespace().collect::<Vec<_>>().join(" ");
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
