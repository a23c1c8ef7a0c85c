//! Power transitions shared by start, stop and shutdown of both models: send the request, follow
//! its task, then wait until `status/current` shows the target state.

use super::evidence::{settle_evidence, Evidence};
use super::settle::{describe, lock_of};
use crate::host::Host;
use crate::pve::endpoints::GuestKind;
use crate::pve::request::PveRequest;
use crate::pve::responses::GuestStatus;
use crate::run::Run;

/// The power state a method must observe before it may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Running,
    Stopped,
}

impl Target {
    /// Whether a status shows this target.
    pub fn reached(self, kind: GuestKind, s: &GuestStatus) -> bool {
        match self {
            Target::Stopped => s.status == "stopped",
            // A QEMU process can exist paused or in prelaunch: only qmpstatus says it really runs.
            Target::Running => {
                s.status == "running"
                    && (kind == GuestKind::Lxc || s.qmpstatus.as_deref() == Some("running"))
            }
        }
    }

    /// The target as messages name it.
    pub fn describe(self, kind: GuestKind) -> &'static str {
        match (self, kind) {
            (Target::Stopped, _) => "status stopped",
            (Target::Running, GuestKind::Qemu) => "status running with qmpstatus running",
            (Target::Running, GuestKind::Lxc) => "status running",
        }
    }
}

/// Sends a power request (`verb` names it: "start", "stop", …), follows its task, and waits for
/// `target` with what the task left of the method's one budget (`taskTimeoutSec`).
pub async fn transition<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    request: &PveRequest,
    verb: &str,
    target: Target,
) -> Result<(), String> {
    let action = format!("{verb} {}", ev.label(run));
    ev.trail.run(&run.pve(), request, &action).await?;
    reach(
        run,
        ev,
        target,
        run.wait_budget_ms(),
        &format!("the {verb} task ended successfully"),
    )
    .await
}

/// Whether the guest is in `target` already, so nothing needs sending. In the target but locked is
/// not yet: the lock is waited out (within the method's one budget) before it counts.
pub async fn already<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    target: Target,
) -> Result<bool, String> {
    if !target.reached(run.kind, &ev.status) {
        return Ok(false);
    }
    let Some(lock) = lock_of(&ev.status).map(str::to_string) else {
        return Ok(true);
    };
    run.info(&format!(
        "{} shows {} but is locked ({lock}): waiting for the lock to clear",
        ev.label(run),
        target.describe(run.kind)
    ));
    let context = format!("{} was locked ({lock})", ev.label(run));
    reach(run, ev, target, run.wait_budget_ms(), &context).await?;
    Ok(true)
}

/// Waits up to `budget_ms` for `target`; the failure says what was expected (after `context`),
/// what was last observed, and what to check.
pub async fn reach<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    target: Target,
    budget_ms: u64,
    context: &str,
) -> Result<(), String> {
    let kind = run.kind;
    let waited = settle_evidence(run, ev, budget_ms, |s| target.reached(kind, s)).await;
    waited.map_err(|why| {
        format!(
            "{context}, but {} {} did not reach {}: {why}; last observed: {} — {}",
            kind.noun(),
            ev.at.vmid,
            target.describe(kind),
            describe(&ev.status),
            what_to_check(&ev.status)
        )
    })
}

fn what_to_check(s: &GuestStatus) -> &'static str {
    if lock_of(s).is_some() {
        return "the guest is locked: an operation on it has not finished — check the node's task list for it, and wait for it (or, if it died, unlock the guest with qm/pct unlock after checking its state)";
    }
    if s.ha.as_ref().is_some_and(|ha| ha.managed == Some(true)) {
        return "the guest is HA-managed, so its task only queued a request to the HA manager: check `ha-manager status` (quorum, the resource's state and errors)";
    }
    "check the task log and the guest's console on the node"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pve::responses::parse;
    use serde_json::json;

    fn status(v: serde_json::Value) -> GuestStatus {
        parse(&v).unwrap()
    }

    #[test]
    fn a_paused_vm_is_not_running() {
        let paused = status(json!({"status": "running", "qmpstatus": "paused"}));
        assert!(!Target::Running.reached(GuestKind::Qemu, &paused));
        let running = status(json!({"status": "running", "qmpstatus": "running"}));
        assert!(Target::Running.reached(GuestKind::Qemu, &running));
    }

    #[test]
    fn a_container_has_no_qmpstatus_to_wait_for() {
        let running = status(json!({"status": "running"}));
        assert!(Target::Running.reached(GuestKind::Lxc, &running));
        assert!(!Target::Running.reached(GuestKind::Qemu, &running));
    }

    #[test]
    fn stopped_is_the_status_alone() {
        let stopped = status(json!({"status": "stopped", "qmpstatus": "stopped"}));
        assert!(Target::Stopped.reached(GuestKind::Qemu, &stopped));
        assert!(!Target::Running.reached(GuestKind::Qemu, &stopped));
    }

    #[test]
    fn ha_managed_guests_point_at_the_ha_manager() {
        let ha = status(json!({"status": "stopped", "ha": {"managed": 1, "state": "started"}}));
        assert!(what_to_check(&ha).contains("ha-manager status"));
    }
}
