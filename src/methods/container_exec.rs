//! `guestExec` of a container. PVE's API has no exec for containers (no guest agent), so over the
//! ssh transport the command runs as `pct exec <vmid> -- <argv>` on the node: pct execs
//! `lxc-attach`, whose exit status is the command's (pve-container PVE/CLI/pct.pm `exec`). The
//! record and the verdict are guestExec's (guest/exec.rs). Over the api transport it fails saying
//! it needs ssh, before anything is sent.

use crate::client::shaped;
use crate::explain::{could_not_args, hint};
use crate::global_args::{SshSettings, TransportSettings};
use crate::guest::exec::{conclude, ExecArgs, ExecOutcome, Observed};
use crate::guest::locate::{absent_message, locate, Found, Located};
use crate::host::Host;
use crate::host::{HostError, HostErrorKind, ProcessOutput, ProcessRequest};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::exec_data::GuestOutput;
use crate::pve::responses::{ExecStatus, GuestStatus, AGENT_CAPTURE_LIMIT};
use crate::run::Run;
use crate::transport::ssh;
use serde_json::Value;

/// Runs `guestExec` of a container.
pub async fn container_exec<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match ExecArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let TransportSettings::Ssh(settings) = &run.global.transport else {
        return Failure::new(
            "guestExec of a container needs the ssh transport: PVE's API has no exec for containers (they have no guest agent), so the command runs as `pct exec` on the node — set transport.kind: ssh (host, user, identityFile) for this definition",
        )
        .into();
    };
    // Located from this method's own await (no wrapper's state machine, issue 32).
    let at = match locate(&run.pve(), run.kind, &args.target).await {
        Ok(Found::Present(at)) => at,
        Ok(Found::Absent { vmid }) => return Failure(absent_message(run.kind, vmid, "")).into(),
        Err(failure) => return failure.into(),
    };
    if at.node != settings.node {
        return Failure::new(format!(
            "container {} lives on node {}, but pct exec runs on the node the ssh transport reaches ({}): point a definition's transport at node {} to run commands in it",
            at.vmid, at.node, settings.node, at.node
        ))
        .into();
    }
    // The state read is sent here and judged plain (`ready`), and the ssh command run here too:
    // one await point each, no futures nested in this one.
    let request = endpoints::guest_status(&at.node, run.kind, at.vmid);
    let status = shaped(&request, "a guest status", run.pve().call(&request).await);
    let seen = match ready(status, &at) {
        Ok(()) => {
            let started = run.host.now_ms();
            let (outcome, status) = match pct_exec(run, settings, &at, &args) {
                Err(outcome) => (outcome, None),
                Ok(request) => match run.host.run(request).await {
                    Ok(output) => ended(settings, output),
                    Err(e) => (not_ended(e), None),
                },
            };
            Observed {
                pid: None,
                outcome,
                status,
                duration_ms: (run.host.now_ms() - started).max(0.0).round() as u64,
            }
        }
        Err(Ok(reason)) => Observed {
            pid: None,
            outcome: ExecOutcome::NotStarted { reason },
            status: None,
            duration_ms: 0,
        },
        Err(Err(failure)) => return failure.into(),
    };
    let note = match &seen.outcome {
        ExecOutcome::Exited { code } if (129..=192).contains(code) => Some(format!(
            "lxc-attach reports a command killed by signal {} as exit status {code}",
            code - 128
        )),
        _ => None,
    };
    conclude(run, &at, &args, &seen, note.as_deref())
}

/// The container must run for pct exec to attach to it: `Err(Ok(why))` when it does not,
/// `Err(Err(failure))` when its state could not be read.
fn ready(
    status: Result<GuestStatus, PveError>,
    at: &Located,
) -> Result<(), Result<String, Failure>> {
    let status = status.map_err(|e| {
        Err(could_not_args(
            format_args!(
                "read the state of container {} on node {}",
                at.vmid, at.node
            ),
            &e,
        ))
    })?;
    match status.status.as_str() {
        "running" => Ok(()),
        other => Err(Ok(format!(
            "container {} is not running (status {other}) — start it first",
            at.vmid
        ))),
    }
}

/// The ssh command that runs pct exec (said in the log), or why it cannot be made: then the
/// command did not start.
fn pct_exec<H: Host>(
    run: &Run<'_, H>,
    settings: &SshSettings,
    at: &Located,
    args: &ExecArgs,
) -> Result<ProcessRequest, ExecOutcome> {
    let timeout_ms = args.timeout_sec * 1000;
    let request = ssh::assemble_pct_exec(
        settings,
        at.vmid,
        &args.command,
        args.input.as_deref(),
        timeout_ms,
    )
    .map_err(|e| ExecOutcome::NotStarted {
        reason: e.to_string(),
    })?;
    run.info_args(format_args!(
        "container {}: running {} with pct exec on node {}",
        at.vmid,
        crate::debug_text::list(&args.command),
        at.node
    ));
    Ok(request)
}

/// pct's exit status is the command's, unless ssh itself failed (exit 255 with ssh's words).
fn ended(settings: &SshSettings, output: ProcessOutput) -> (ExecOutcome, Option<ExecStatus>) {
    if let Some(e) = ssh::ssh_failure(settings, &output) {
        return match e.kind {
            // ssh gave up before the session: the command never reached the node.
            ErrorKind::SshConnect => (
                ExecOutcome::NotStarted {
                    reason: e.to_string(),
                },
                None,
            ),
            _ => (
                ExecOutcome::ResultLost {
                    reason: format!(
                        "{e} — the connection broke while the command may have been running; whether and how it ended is unknown"
                    ),
                },
                None,
            ),
        };
    }
    let Some(code) = output.code else {
        return (
            ExecOutcome::ResultLost {
                reason: "the local ssh client was killed by a signal; whether and how the command ended is unknown".into(),
            },
            None,
        );
    };
    let (stdout, stdout_truncated) = bounded(output.stdout);
    let (stderr, stderr_truncated) = bounded(output.stderr);
    let status = ExecStatus {
        exited: true,
        exit_code: Some(i64::from(code)),
        signal: None,
        stdout: Some(received(stdout, output.stdout_bytes, stdout_truncated)),
        stderr: Some(received(stderr, output.stderr_bytes, stderr_truncated)),
        stdout_truncated,
        stderr_truncated,
    };
    (
        ExecOutcome::Exited {
            code: i64::from(code),
        },
        Some(status),
    )
}

fn not_ended(error: HostError) -> ExecOutcome {
    match error.kind {
        HostErrorKind::Timeout => ExecOutcome::TimedOut,
        HostErrorKind::Aborted => ExecOutcome::Aborted,
        HostErrorKind::Spawn => ExecOutcome::NotStarted {
            reason: format!("{} — check sshBinary", error.message),
        },
        HostErrorKind::Network | HostErrorKind::Tls | HostErrorKind::Internal => {
            ExecOutcome::ResultLost {
                reason: format!(
                    "{} — {}; whether and how the command ended is unknown",
                    error.message,
                    hint(ErrorKind::Network)
                ),
            }
        }
    }
}

/// A stream as the host hands it over: decoded from UTF-8, invalid sequences replaced by U+FFFD
/// (so a replacement character flags them), with the count of the bytes the command wrote when the
/// host counted them (else the text's length). A stream cut at the capture limit counts what was
/// kept, as the agent counts what it captured.
fn received(text: String, written: Option<usize>, truncated: bool) -> GuestOutput {
    let bytes = match (truncated, written) {
        (false, Some(written)) => written,
        (true, Some(written)) => written.min(AGENT_CAPTURE_LIMIT),
        (_, None) => text.len(),
    };
    GuestOutput {
        bytes,
        invalid_utf8: text.contains('\u{fffd}'),
        already_text: false,
        text,
    }
}

/// A stream cut at the guest agent's capture limit (the same bound as a VM's exec output).
fn bounded(mut text: String) -> (String, bool) {
    if text.len() <= AGENT_CAPTURE_LIMIT {
        return (text, false);
    }
    let mut end = AGENT_CAPTURE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}
