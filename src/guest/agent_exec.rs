//! A command run through the QEMU guest agent, start to end: `POST …/agent/exec` (never re-sent),
//! then `exec-status` at growing pauses until its one final answer. Shared by `guestExec`,
//! `fileWrite`'s joins and `waitReady`'s `cloud-init status --wait`.

use super::exec::{ExecArgs, ExecOutcome};
use super::locate::Located;
use super::settle::{poll, Heard, Watch};
use crate::client::shaped;
use crate::explain::hint;
use crate::host::Host;
use crate::poll::{Pacer, Stopped, ANSWER_MS};
use crate::progress::Progress;
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::exec_data::input_for_pve;
use crate::pve::request::PveRequest;
use crate::pve::responses::{ExecStarted, ExecStatus};
use crate::run::Run;
use serde_json::Value;
use std::future::Future;

/// How often a poll that failed for a transient reason is tried again before the result counts as lost.
const POLL_RETRIES: u32 = 2;

/// Starts the command on `at` and follows it to its end: the pid (if it started) and what was seen,
/// every request and pause ending by `deadline_ms` when given (an outer wait's).
pub fn execute<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    at: &'a Located,
    args: &'a ExecArgs,
    deadline_ms: Option<f64>,
) -> impl Future<Output = (Option<i64>, ExecOutcome, Option<ExecStatus>)> + use<'a, 'r, H> {
    // Its future is the one course's: no wrapper of its own (issue 32).
    exec_course(run, at, args, None, deadline_ms)
}

/// `POST …/agent/exec` of `args` on `at`.
pub fn exec_request(at: &Located, args: &ExecArgs) -> PveRequest {
    // PVE hands the guest one byte per character of input-data: send the UTF-8 bytes that way.
    let input = args.input.as_deref().map(input_for_pve);
    endpoints::agent_exec(&at.node, at.vmid, &args.command, input.as_deref())
}

/// `POST …/agent/exec`'s answer (to `request`): the pid.
pub fn exec_pid(request: &PveRequest, answer: Result<Value, PveError>) -> Result<i64, PveError> {
    shaped::<ExecStarted>(request, "an exec pid", answer).map(|started| started.pid)
}

/// Follows a sent command to its end: asks for its status at once, then at growing pauses, ending
/// by `deadline_ms` when given (the earlier of it and `timeoutSec`); returns the pid (if it
/// started) and what was seen.
pub fn follow<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    at: &'a Located,
    args: &'a ExecArgs,
    sent: Result<i64, PveError>,
    deadline_ms: Option<f64>,
) -> impl Future<Output = (Option<i64>, ExecOutcome, Option<ExecStatus>)> + use<'a, 'r, H> {
    exec_course(run, at, args, Some(sent), deadline_ms)
}

/// The one course of [`execute`] and [`follow`] (one state machine for both, issue 32): `POST
/// …/agent/exec` unless `sent` is its answer already (by `deadline_ms` when given; never re-sent),
/// then its status followed to the end.
async fn exec_course<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ExecArgs,
    sent: Option<Result<i64, PveError>>,
    deadline_ms: Option<f64>,
) -> (Option<i64>, ExecOutcome, Option<ExecStatus>) {
    let sent = match sent {
        Some(sent) => sent,
        None => {
            let request = exec_request(at, args);
            // One send whether or not a deadline is given (one await point instead of two).
            let answer = run.pve().call_within(&request, deadline_ms).await;
            exec_pid(&request, answer)
        }
    };
    let pid = match sent {
        Ok(pid) => pid,
        Err(e) => return (None, start_failure(e), None),
    };
    run.info_args(format_args!(
        "VM {}: started {} as pid {pid}",
        at.vmid,
        crate::debug_text::list(&args.command)
    ));
    let pve = run.pve();
    let now = run.host.now_ms();
    // The command's bound is `timeoutSec`; the wait reads one read's time past it, so its last
    // read (which keeps that time to answer: poll.rs) sees the command at the bound itself — a
    // command recorded as timed out was seen running at `timeoutSec`, not before it.
    let own_deadline = now + (args.timeout_sec * 1000) as f64 + ANSWER_MS;
    let deadline = deadline_ms.map_or(own_deadline, |d| d.min(own_deadline));
    let mut pacer = Pacer::new(now, (deadline - now).max(0.0) as u64, pve.poll_cap_ms);
    let mut progress = Progress::start(now);
    let mut watch = Following {
        run,
        at,
        command: &args.command,
        pid,
        failed_polls: 0,
        // Overwritten by whatever ends the wait: a final answer, or the pacer stopping it.
        ended: (ExecOutcome::TimedOut, None),
    };
    let request = endpoints::agent_exec_status(&at.node, at.vmid, pid);
    let _ = poll(
        &pve,
        &request,
        deadline,
        (&mut pacer, &mut progress),
        &mut watch,
    )
    .await;
    let (outcome, status) = watch.ended;
    (Some(pid), outcome, status)
}

/// [`exec_course`]'s wait on a started command: each `exec-status` answer judged ([`polled`]), and
/// how the command ended.
struct Following<'a, 'r, H: Host> {
    run: &'a Run<'r, H>,
    at: &'a Located,
    command: &'a [String],
    pid: i64,
    /// Failed reads in a row.
    failed_polls: u32,
    ended: (ExecOutcome, Option<ExecStatus>),
}

impl<H: Host> Watch for Following<'_, '_, H> {
    fn heard(&mut self, _: &PveRequest, answer: Result<Value, PveError>, cut: bool) -> Heard {
        let polled = polled(
            self.run,
            self.at,
            self.pid,
            cut,
            answer,
            &mut self.failed_polls,
        );
        match polled {
            Some(ended) => {
                self.ended = ended;
                Heard::Done(String::new())
            }
            None => Heard::Again { tick: true },
        }
    }

    fn waiting(&self) -> String {
        format!(
            "{} (pid {}) in VM {} to exit — still running",
            crate::debug_text::list(self.command),
            self.pid,
            self.at.vmid
        )
    }

    fn stopped(&mut self, stop: Stopped) -> String {
        let outcome = match stop {
            Stopped::OutOfTime => ExecOutcome::TimedOut,
            Stopped::Aborted => ExecOutcome::Aborted,
        };
        self.ended = (outcome, None);
        String::new()
    }
}

/// One `exec-status` answer judged (`cut`: a read the wait's end cut short): how the command ended
/// (with its final status when read), or `None` while it runs or a failed read may be tried again
/// (`failed_polls` counts those in a row).
fn polled<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    pid: i64,
    cut: bool,
    answer: Result<serde_json::Value, PveError>,
    failed_polls: &mut u32,
) -> Option<(ExecOutcome, Option<ExecStatus>)> {
    let answer = answer.and_then(|data| {
        ExecStatus::from_value(&data).ok_or_else(|| {
            PveError::malformed_args(format_args!(
                "exec-status answered without `exited`: {data}",
                data = crate::quote::json(&data)
            ))
        })
    });
    match answer {
        // The agent forgets a finished pid after this answer: it is the one and only final read.
        Ok(status) if status.exited => Some((final_outcome(&status), Some(status))),
        Ok(_) => {
            *failed_polls = 0;
            None
        }
        // The wait's end cut the status read short: the command outlived its time.
        Err(_) if cut => Some((ExecOutcome::TimedOut, None)),
        Err(e)
            if (e.is_transient() || e.kind == ErrorKind::Malformed)
                && *failed_polls < POLL_RETRIES =>
        {
            // Reading status again is safe unless the lost (or unreadable) answer was the final
            // one; then the next read says "Invalid parameter 'pid'" and the result is reported
            // lost below.
            *failed_polls += 1;
            run.warn_args(format_args!(
                "VM {}: reading the status of pid {pid} failed ({e}); trying again",
                at.vmid
            ));
            None
        }
        Err(e) if e.kind == ErrorKind::Aborted => Some((ExecOutcome::Aborted, None)),
        Err(e) => Some((lost(e, *failed_polls > 0), None)),
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
