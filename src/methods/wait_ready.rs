//! `waitReady` (qemu): succeeds only when, within `timeoutSec`, the guest agent answers, the asked
//! addresses are up (on the asked NIC) and, when asked, `cloud-init status --wait` exited 0
//! (`guest::readiness`). Writes `vm-<vmid>-ready` with what it saw — whatever the verdict — and
//! the guest's state record with the address found.

use crate::args::{ArgError, Fields};
use crate::guest::evidence::{sight_present, Evidence};
use crate::guest::readiness::{await_ready, Readiness, ReadyArgs};
use crate::guest::record::GuestRecord;
use crate::guest::reference::GuestRef;
use crate::guest::settle::describe;
use crate::guest::target::Target;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::record_json::{put, set};
use crate::run::{write_value, Run};
use serde_json::Value;

/// The arguments of `waitReady`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitReadyArgs {
    pub target: GuestRef,
    pub ready: ReadyArgs,
}

impl WaitReadyArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        Ok(WaitReadyArgs {
            target: GuestRef::parse(&fields)?,
            ready: ReadyArgs::parse(&fields)?,
        })
    }
}

/// Runs `waitReady`.
pub async fn wait_ready<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match WaitReadyArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_present(run, &args.target, "wait for").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let started = run.host.now_ms();
    let mut seen = Readiness::default();
    let verdict = match Target::Running.reached(run.kind, &ev.status) {
        true => await_ready(run, &ev.at, &args.ready, &mut seen).await,
        false => Err(format!(
            "{} is not running ({}): nothing to wait for — start it (start with waitReady waits as well)",
            ev.label(run),
            describe(&ev.status)
        )),
    };
    let state = ev.observed(run).await;
    ready_outcome(run, &mut ev, seen, started, verdict, state)
}

/// The state record (`state`, as [`Evidence::observed`] read it, with the address found) and the
/// `-ready` record, then the verdict. Plain: each caller awaits the state read from its own
/// course (no wrapper's state machine, issue 32).
pub fn ready_outcome<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    seen: Readiness,
    started_ms: f64,
    verdict: Result<String, String>,
    state: GuestRecord,
) -> Outcome {
    if seen.ipv4.is_some() {
        ev.ipv4 = seen.ipv4.clone();
    }
    let state = ev.record_of(state);
    // The `vm-<vmid>-ready` record: what was seen, with the verdict and the wait's length; built
    // as JSON, not a derived record type (issue 32).
    let mut record = seen.record();
    set(&mut record, "vmid", Value::from(ev.at.vmid));
    put(&mut record, "node", Some(&ev.at.node));
    set(&mut record, "ready", Value::Bool(verdict.is_ok()));
    put(
        &mut record,
        "error",
        verdict.as_ref().err().map(String::as_str),
    );
    let waited_ms = (run.host.now_ms() - started_ms).max(0.0).round() as u64;
    set(&mut record, "waitedMs", Value::from(waited_ms));
    put(&mut record, "lastOperation", Some(run.method));
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    let writes = vec![
        write_value(
            run.guest_spec(),
            run.guest_instance(ev.at.vmid),
            state.json(),
        ),
        write_value(
            "ready",
            format!("vm-{}-ready", ev.at.vmid),
            Value::Object(record),
        ),
    ];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}
