//! The one future of the HA and firewall methods (issue 32): find the guest (waiting out its lock
//! where the change asks it), then send what the method's course asks, one request at a time,
//! until its verdict; the guest record is written on every path once the guest was found. Each
//! course (guest/ha.rs, guest/firewall.rs) decides its next request in plain code from the
//! answers; this is the one place either awaits PVE or the clock.

use super::evidence::{sight_or_absent, Absent, Evidence};
use super::reference::GuestRef;
use super::settle::seconds;
use crate::args::ArgError;
use crate::explain::{hint, outcome_unknown};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::poll::{Pacer, Stopped};
use crate::progress::Progress;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::request::PveRequest;
use crate::run::Run;
use serde_json::Value;

/// How a request of a course is sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Shared with the process's other runs asking it at once (`GET /version`, the cluster's
    /// firewall options).
    Coalesced,
    /// A read.
    Read,
    /// A write, traced in the guest's trail.
    Write,
    /// A read of the course's wait, by its deadline.
    Wait,
}

/// What the driver tells a course.
pub enum Input {
    /// The guest was found: `VM 100 on node pve1`, as messages name it.
    Start(String),
    Answer(Result<Value, PveError>),
    /// The pause before the next read of the wait is over.
    Paused,
    /// The wait ended (why).
    Stopped(String),
}

/// What a course asks of the driver.
pub enum Next {
    Send(PveRequest, Via),
    /// A pause before the next read of the wait, with its progress line (`waiting for …`).
    Pause(String),
    Done(Result<String, String>),
}

/// A method's course: its arguments, read and checked, and where it stands between requests.
pub trait Course {
    /// The guest acted on.
    fn target(&self) -> &GuestRef;
    /// What the message of a guest confirmed absent adds after its VMID.
    fn absent(&self) -> &'static str;
    /// The guest's lock is waited out first.
    fn waits_lock(&self) -> bool;
    /// Takes what the driver says and asks the next request or pause, or gives the verdict. A
    /// warning pushed onto `ev.trail.warnings` is logged when the course ends.
    fn next(&mut self, ev: &mut Evidence, input: Input) -> Next;
    /// Completes the outcome once the guest record is written.
    fn finish(&self, _outcome: &mut Outcome) {}
}

/// Runs a course (its arguments already read: `course`) on the guest it names.
pub async fn run_course<H: Host>(
    run: &Run<'_, H>,
    course: Result<Box<dyn Course>, ArgError>,
) -> Outcome {
    let mut course = match course {
        Ok(course) => course,
        Err(e) => return Failure::from(e).into(),
    };
    let absent = Absent::Words(course.absent(), "");
    // A change to the guest's HA state waits out a lock on it (see guest/ha.rs `waits_lock`).
    let sighted = sight_or_absent(run, course.target(), absent, course.waits_lock()).await;
    let mut ev = match sighted {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let noted = ev.trail.warnings.len();
    let verdict = drive(run, &mut ev, course.as_mut()).await;
    for warning in ev.trail.warnings.get(noted..).unwrap_or_default() {
        run.warn(warning);
    }
    let mut outcome = ev.outcome(run, verdict).await;
    course.finish(&mut outcome);
    outcome
}

/// Sends what the course asks, in turn, until it has a verdict.
async fn drive<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    course: &mut dyn Course,
) -> Result<String, String> {
    let pve = run.pve();
    let mut wait = None;
    let mut input = Input::Start(ev.label(run));
    loop {
        input = match course.next(ev, input) {
            Next::Done(verdict) => return verdict,
            Next::Send(request, via) => {
                let by = match via {
                    Via::Wait => Some(waiting(&mut wait, run).0.deadline_ms()),
                    _ => None,
                };
                if via == Via::Write {
                    ev.trail.sending();
                }
                let answer = match via {
                    Via::Coalesced => pve.call_coalesced(&request).await,
                    _ => pve.call_within(&request, by).await,
                };
                if via == Via::Write {
                    ev.trail.answered(&answer);
                }
                Input::Answer(answer)
            }
            Next::Pause(now) => {
                let (pacer, progress, budget_ms) = waiting(&mut wait, run);
                progress.tick(run.host, || now);
                match pacer.pause(run.host).await {
                    Ok(()) => Input::Paused,
                    Err(stop) => Input::Stopped(stopped(stop, *budget_ms)),
                }
            }
        };
    }
}

/// The course's wait, within what is left of the method's budget: its pace, its progress lines
/// and that budget.
fn start_wait<H: Host>(run: &Run<'_, H>) -> (Pacer, Progress, u64) {
    let now = run.host.now_ms();
    let budget_ms = run.wait_budget_ms();
    let pacer = Pacer::new(now, budget_ms, run.pve().poll_cap_ms);
    (pacer, Progress::start(now), budget_ms)
}

/// The course's wait, started at its first use (one place, not a closure at each).
fn waiting<'w, H: Host>(
    wait: &'w mut Option<(Pacer, Progress, u64)>,
    run: &Run<'_, H>,
) -> &'w mut (Pacer, Progress, u64) {
    wait.get_or_insert_with(|| start_wait(run))
}

/// Why the course's wait ended without its verdict.
fn stopped(stop: Stopped, budget_ms: u64) -> String {
    match stop {
        Stopped::OutOfTime => format!("not within {}", seconds(budget_ms)),
        Stopped::Aborted => "the run was aborted while waiting".into(),
    }
}

/// What to check after a course's write, in its messages: one text, not one per message.
pub const CHECK_READ: &str =
    "it with the method's read (run it again: it plans from what it reads)";

/// `cannot change <label>: <why>; nothing was sent`: a course's plan that PVE would refuse. One
/// text for every course (issue 32).
pub fn nothing_sent(label: &str, why: &str) -> String {
    format!("cannot change {label}: {why}; nothing was sent")
}

/// `could not read <label>: <why>; nothing was changed`: a course's read before any write.
pub fn unread(label: &str, why: &str) -> String {
    format!("could not read {label}: {why}; nothing was changed")
}

/// `PVE answered <json> where <what><tail> expected — <hint>` (`tail`: ` was`, ` list was`,
/// ` were`): one message for every course's config, section and list.
pub fn malformed(other: &Value, what: &str, tail: &str) -> String {
    format!(
        "PVE answered {} where {what}{tail} expected — {}",
        crate::quote::json(other),
        hint(ErrorKind::Malformed)
    )
}

/// An object — or, `lists`, a list too — as PVE answered it ([`malformed`] names it): `None` when
/// PVE's error says (any of `missing`) it does not exist.
pub fn object_or_missing(
    answer: Result<Value, PveError>,
    lists: bool,
    what: &str,
    tail: &str,
    missing: &[&str],
) -> Result<Option<Value>, String> {
    match answer {
        Ok(value) if value.is_object() || lists && value.is_array() => Ok(Some(value)),
        Ok(other) => Err(malformed(&other, what, tail)),
        Err(e) if missing.iter().any(|words| e.message.contains(words)) => Ok(None),
        Err(e) => Err(format!("{e} — {}", hint(e.kind))),
    }
}

/// Why a course's write that PVE answered `e` failed: its outcome unknown (`check`: what to check
/// before trying again), or PVE refused it (`tail` added: how many writes before it were
/// accepted). One text for every course (issue 32); action and tail are `format_args!`, written
/// straight into the message.
pub fn write_failed(
    action: std::fmt::Arguments<'_>,
    e: &PveError,
    check: &str,
    tail: std::fmt::Arguments<'_>,
) -> String {
    match e.outcome_unknown() {
        true => outcome_unknown(action, e, check).0,
        false => format!("PVE refused to {action}: {e} — {}{tail}", hint(e.kind)),
    }
}
