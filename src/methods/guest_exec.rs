//! `guestExec` of a VM: runs a command through the QEMU guest agent and succeeds only when it exited
//! with an accepted code. The `vm-<vmid>-exec` record is produced whatever happened, and written
//! before the verdict is raised (guest/exec.rs).

use crate::explain::hint;
use crate::guest::exec::{conclude, verdict_message, ExecArgs, ExecOutcome, Observed};
use crate::guest::locate::{act_where_it_lives, Located, Placed};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::poll::{Pacer, Stopped};
use crate::progress::Progress;
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::exec_data::input_for_pve;
use crate::pve::responses::{ExecStarted, ExecStatus};
use crate::run::Run;
use serde_json::Value;

/// How often a poll that failed for a transient reason is tried again before the result counts as lost.
const POLL_RETRIES: u32 = 2;

/// Runs `guestExec`.
pub async fn guest_exec<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match ExecArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let started = run.host.now_ms();
    // Sent where the VM is expected; a node that answers "not here" refused before running anything.
    let send = async |at: &Located| send_exec(run, at, &args).await;
    let (located, sent) = match act_where_it_lives(run, &args.target, send).await {
        Ok(Placed::Done { at, value }) => (at, Ok(value)),
        Ok(Placed::Refused { at, error }) => (at, Err(error)),
        Ok(Placed::Absent { vmid }) => {
            return Failure::new(format!("VM {vmid} does not exist on any node")).into()
        }
        Err(failure) => return failure.into(),
    };
    let (pid, outcome, status) = follow(run, &located, &args, sent).await;
    let seen = Observed {
        pid,
        outcome,
        status,
        duration_ms: (run.host.now_ms() - started).max(0.0).round() as u64,
    };
    conclude(run, &located, &args, &seen, None)
}

/// Starts the command on `at` and follows it to its end: the pid (if it started) and what was seen.
pub async fn execute<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
) -> (Option<i64>, ExecOutcome, Option<ExecStatus>) {
    let sent = send_exec(run, at, args).await;
    follow(run, at, args, sent).await
}

/// Runs a command in the VM exactly as `guestExec` does, without writing its record (`waitReady`'s
/// `cloud-init status --wait`): how it ended, its final status, and `Err` saying why it does not
/// count as success under `args.policy`.
pub async fn run_in_guest<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
) -> (ExecOutcome, Option<ExecStatus>, Result<(), String>) {
    let (_, outcome, status) = execute(run, at, args).await;
    let verdict =
        verdict_message(run.kind, at, args, &outcome, status.as_ref()).map_or(Ok(()), Err);
    (outcome, status, verdict)
}

/// `POST …/agent/exec` on `at`: the pid, or PVE's refusal (never re-sent).
async fn send_exec<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
) -> Result<i64, PveError> {
    // PVE hands the guest one byte per character of input-data: send the UTF-8 bytes that way.
    let input = args.input.as_deref().map(input_for_pve);
    let request = endpoints::agent_exec(&at.node, at.vmid, &args.command, input.as_deref());
    run.pve()
        .read::<ExecStarted>(&request, "an exec pid")
        .await
        .map(|started| started.pid)
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
    let mut progress = Progress::start(run.host.now_ms());
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
        progress.tick(run.host, || {
            format!(
                "{:?} (pid {pid}) in VM {} to exit — still running",
                args.command, at.vmid
            )
        });
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
