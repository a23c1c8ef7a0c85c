//! `shutdown`: a graceful (ACPI) shutdown of a managed guest within `timeoutSec`, successful only
//! when `status/current` shows it stopped. With `forceStopAfter` a guest that did not go down
//! gracefully gets a hard stop, which is then verified the same way (and noted as a warning).

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::guest::evidence::{sight_to_change, Evidence};
use crate::guest::gates;
use crate::guest::power::{already, reach, refuse_paused, transition};
use crate::guest::reference::GuestRef;
use crate::guest::target::Target;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::poll::WaitBudget;
use crate::pve::endpoints;
use crate::run::Run;
use crate::task::{follow_task, TaskTrouble};
use serde_json::Value;

/// How long the task is followed beyond `timeoutSec` (PVE's own wait inside the task).
const TASK_SLACK_MS: u64 = 30_000;
/// After a shutdown task ended OK, the state gets at least this long to show (HA applies it later).
const MIN_SETTLE_MS: u64 = 1_000;

/// The arguments of `shutdown`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownArgs {
    pub target: GuestRef,
    /// The graceful shutdown's own budget.
    pub timeout_sec: u64,
    /// Fall back to a hard stop when the graceful shutdown did not stop the guest.
    pub force_stop_after: bool,
    /// Overrides the safety gate.
    pub force: bool,
}

/// The fields after the guest, in order (one table walk, issue 32).
const FIELDS: [Spec; 3] = [
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 120)),
    Spec::new("forceStopAfter", Kind::Flag(false)),
    Spec::new("force", Kind::Flag(false)),
];

impl ShutdownArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let [timeout, force_stop_after, force] = fields.read_table(&FIELDS)?;
        Ok(ShutdownArgs {
            target,
            timeout_sec: timeout.int as u64,
            force_stop_after: force_stop_after.int != 0,
            force: force.int != 0,
        })
    }
}

/// Runs `shutdown`.
pub async fn shutdown<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match ShutdownArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "shut down").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let verdict = shut_down(run, &mut ev, &args).await;
    ev.outcome(run, verdict).await
}

/// The gated, verified shutdown of a found guest (also `convertToTemplate`'s `shutdownFirst`).
pub async fn shut_down<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &ShutdownArgs,
) -> Result<String, String> {
    ev.pass_gate(run, &gates::SHUTDOWN, args.force)?;
    refuse_paused(run, ev, "shut down")?;
    let label = ev.label(run);
    if already(run, ev, Target::Stopped).await? {
        return Ok(format!("{label} was already stopped; no shutdown was sent"));
    }
    let why = match graceful(run, ev, args).await? {
        Ok(()) => return Ok(format!("{label} shut down gracefully")),
        Err(why) => why,
    };
    if !args.force_stop_after {
        return Err(format!(
            "{label} did not shut down within timeoutSec={}s: {why} — the guest may ignore ACPI shutdown requests (check acpid or the guest agent inside it), or set forceStopAfter: true to fall back to a hard stop",
            args.timeout_sec
        ));
    }
    ev.warn(
        run,
        format!("the graceful shutdown did not stop {label} within timeoutSec={}s; forcing a hard stop (forceStopAfter: true)", args.timeout_sec),
    );
    let request = endpoints::guest_stop(&ev.at.node, run.kind, ev.at.vmid);
    transition(run, ev, &request, "stop", Target::Stopped).await?;
    Ok(format!(
        "{label} is stopped: a hard stop followed a graceful shutdown that did not finish"
    ))
}

/// The graceful attempt. `Err`: PVE refused the request (no task ran, nothing to fall back from);
/// `Ok(Err(why))`: it ran but the guest was not seen stopped.
async fn graceful<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &ShutdownArgs,
) -> Result<Result<(), String>, String> {
    let started = run.host.now_ms();
    let budget_ms = args.timeout_sec * 1000;
    let mut pve = run.pve();
    // PVE's task itself waits up to timeoutSec for the guest: follow it at least that long. The
    // graceful attempt has its own budget (timeoutSec); the hard stop after it gets taskTimeoutSec.
    let graceful_budget = WaitBudget::new(pve.task_timeout_ms.max(budget_ms + TASK_SLACK_MS));
    pve.budget = &graceful_budget;
    let request = endpoints::guest_shutdown(&ev.at.node, run.kind, ev.at.vmid, args.timeout_sec);
    let action = format!("shut down {}", ev.label(run));
    ev.trail.sending();
    let answer = pve.call(&request).await;
    let upid = ev.trail.accepted(answer, &request, &action)?;
    let followed = follow_task(&pve, &upid).await;
    let followed = ev.trail.followed_outcome(followed);
    // Only the guest's state decides. After a task that succeeded the state may still follow (an
    // HA-managed guest stops once the HA manager acts) within what is left of timeoutSec; so may
    // it after a task whose end was not observed (its status unreadable): it may still be shutting
    // the guest down. After a failed task (PVE gave up waiting) one read says where the guest is.
    let spent = (run.host.now_ms() - started).max(0.0) as u64;
    let left = budget_ms.saturating_sub(spent).max(MIN_SETTLE_MS);
    let (settle_ms, context) = match followed {
        Ok(()) => (left, "the shutdown task ended successfully".to_string()),
        Err(TaskTrouble::Unknown(why)) => {
            ev.warn(
                run,
                format!(
                    "the shutdown task's end was not observed, so only the guest's state decides: {}",
                    why.0
                ),
            );
            let context = format!("the shutdown task's end was not observed ({})", why.0);
            (left, context)
        }
        Err(TaskTrouble::Failed(why)) => (
            0,
            format!("the shutdown task did not succeed ({})", why.failure.0),
        ),
    };
    Ok(reach(run, ev, Target::Stopped, settle_ms, &context).await)
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, ScriptedHost};
    use serde_json::{json, Value};

    /// VM 100 on pve1 tagged swamp, paused (suspended to RAM).
    fn paused_vm() -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({}));
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running", "qmpstatus": "paused", "tags": "swamp"}),
        );
        host
    }

    fn refused_before_anything_is_sent(args: Value) {
        let host = paused_vm();
        let outcome = run_method(&host, "qemu", "shutdown", args);
        let message = failure_of(&outcome);
        assert!(
            message.contains("VM is paused - cannot shutdown (resume it first, or stop it)"),
            "{message}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_paused_vm_is_refused_with_pves_reason_before_anything_is_sent() {
        refused_before_anything_is_sent(json!({"vmid": 100}));
    }

    /// forceStopAfter is a stop sent after a graceful request, which PVE refuses first: the
    /// request itself never carries forceStop.
    #[test]
    fn a_paused_vm_is_refused_even_with_force_stop_after() {
        refused_before_anything_is_sent(json!({"vmid": 100, "forceStopAfter": true}));
    }
}
