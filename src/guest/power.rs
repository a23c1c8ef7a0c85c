//! Power transitions shared by start, stop, shutdown, suspend and resume of both models: send the
//! request, follow its task, then wait until `status/current` shows the target state. `stop`,
//! `suspend`, `resume` and `reboot` are one sequence ([`change_power`]) configured by a [`Change`].

use super::evidence::{settle_evidence, sight_to_change, Evidence};
use super::gates::{self, Gate};
use super::reboot::reboot_verified;
use super::reference::GuestRef;
use super::settle::{busy_lock, describe, lock_of, HIBERNATED};
use crate::args::{ArgError, Fields};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::poll::WaitBudget;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::request::PveRequest;
use crate::pve::responses::GuestStatus;
use crate::run::Run;
use crate::task::TaskTrouble;
use serde_json::Value;

/// How long a shutdown task is followed beyond `timeoutSec` (PVE's own wait inside the task).
const TASK_SLACK_MS: u64 = 30_000;
/// After a shutdown task ended OK, the state gets at least this long to show (HA applies it later).
const MIN_SETTLE_MS: u64 = 1_000;

use super::target::Target;

/// A power change of `stop`, `suspend`, `resume`, `reboot` or `shutdown`: which request, which
/// target, which gate, and what PVE refuses before any task starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Stop,
    /// A VM to RAM (paused) or, `to_disk`, to disk with its state on `storage` (PVE's choice when
    /// `None`: `vmstatestorage`, else the first disk's storage); a container is checkpointed and
    /// stopped (pve-container `PVE/API2/LXC/Status.pm` vm_suspend: `lxc-checkpoint -s`).
    Suspend {
        to_disk: bool,
        storage: Option<String>,
    },
    /// Back to running: a paused VM continues; one suspended to disk starts from its saved state
    /// (qemu-server `PVE/API2/Qemu.pm` vm_resume); a container is restored from its checkpoint.
    Resume,
    /// A running guest rebooted and proven to run a new boot (`guest::reboot`); PVE's shutdown
    /// inside the task may take `timeout_sec`.
    Reboot {
        timeout_sec: u64,
    },
    /// A graceful shutdown, verified; its own gate and course ([`shut_down`]).
    Shutdown(Shutdown),
}

/// A graceful (ACPI) shutdown: PVE's own wait for the guest (`timeout_sec`, the attempt's budget)
/// and whether a hard stop follows one that did not stop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shutdown {
    pub timeout_sec: u64,
    pub force_stop_after: bool,
}

impl Change {
    fn verb(&self) -> &'static str {
        match self {
            Change::Stop => "stop",
            Change::Suspend { .. } => "suspend",
            Change::Resume => "resume",
            Change::Reboot { .. } => "reboot",
            Change::Shutdown(_) => "shut down",
        }
    }

    /// The state this change must leave. A container has no paused state PVE shows: its suspend
    /// leaves it stopped, and the checkpoint is not visible through the API.
    pub fn target(&self, kind: GuestKind) -> Target {
        match self {
            Change::Stop | Change::Shutdown(_) => Target::Stopped,
            Change::Suspend { .. } if kind == GuestKind::Lxc => Target::Stopped,
            Change::Suspend { to_disk: true, .. } => Target::Hibernated,
            Change::Suspend { .. } => Target::Paused,
            Change::Resume | Change::Reboot { .. } => Target::Running,
        }
    }

    fn gate(&self) -> Option<&'static Gate> {
        match self {
            Change::Stop => Some(&gates::STOP),
            Change::Suspend { .. } => Some(&gates::SUSPEND),
            Change::Reboot { .. } => Some(&gates::REBOOT),
            Change::Resume | Change::Shutdown(_) => None,
        }
    }

    /// What PVE refuses before it starts a task, in its words, with what to do instead; `None`
    /// when it would start one. qemu-server `PVE/API2/Qemu.pm` vm_suspend ("VM $vmid not running",
    /// "Cannot suspend HA managed VM to disk") and vm_resume ("VM $vmid not running" unless locked
    /// `suspended`); pve-container vm_suspend ("CT $vmid not running").
    pub fn refusal(&self, kind: GuestKind, vmid: u32, s: &GuestStatus) -> Option<String> {
        let noun = match kind {
            GuestKind::Qemu => "VM",
            GuestKind::Lxc => "CT",
        };
        let stopped = s.status != "running";
        let ha = s.ha.as_ref().is_some_and(|ha| ha.managed == Some(true));
        // PVE's words, then what to do instead.
        let instead = match self {
            // A stopped container may or may not hold a checkpoint: nothing shows which.
            Change::Suspend { .. }
                if stopped && (kind == GuestKind::Lxc || !self.target(kind).reached(kind, s)) =>
            {
                match lock_of(s) == Some(HIBERNATED) {
                    true => "suspended to disk: resume it first",
                    false => "start it first",
                }
            }
            Change::Suspend { to_disk: true, .. } if ha => {
                return Some(
                    "Cannot suspend HA managed VM to disk (suspend it to RAM, or take it out of HA)"
                        .to_string(),
                );
            }
            Change::Resume
                if kind == GuestKind::Qemu && stopped && lock_of(s) != Some(HIBERNATED) =>
            {
                "stopped, not paused or suspended: start it"
            }
            _ => return None,
        };
        Some(format!("{noun} {vmid} not running ({instead})"))
    }

    fn request(&self, node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
        let request = endpoints::power(node, kind, vmid, self.verb());
        match self {
            Change::Suspend {
                to_disk: true,
                storage,
            } => {
                let request = request.param("todisk", "1");
                match storage {
                    Some(storage) => request.param("statestorage", storage),
                    None => request,
                }
            }
            _ => request,
        }
    }
}

/// What `stop`, `suspend`, `resume`, `reboot` and `shutdown` are asked: the guest, the change,
/// whether `force` overrides the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PowerArgs {
    pub target: GuestRef,
    pub force: bool,
    pub change: Change,
}

/// A method's own argument rules for [`change_power`], read after the guest: whether `force`
/// overrides the gate, and the change.
pub type ParsePower = fn(GuestKind, &Fields) -> Result<(bool, Change), ArgError>;

/// The arguments of a method of [`change_power`]: the guest (every such method's first field, one
/// reading for all five), then the method's own rules.
pub fn power_args(kind: GuestKind, args: &Value, parse: ParsePower) -> Result<PowerArgs, ArgError> {
    let fields = Fields::of(args, "")?;
    let target = GuestRef::parse(&fields)?;
    let (force, change) = parse(kind, &fields)?;
    Ok(PowerArgs {
        target,
        force,
        change,
    })
}

/// `stop`, `suspend`, `resume`, `reboot`, `shutdown` — one future for all five, each method only
/// its `parse`: finds the guest (a lock waited out), passes its gate, refuses up front what PVE
/// would refuse, sends nothing when it already shows the target, else sends the request, follows
/// its task and waits for the target. A reboot, past its gate and PVE's refusal of a paused VM, is
/// `guest::reboot`'s: it has no target to find already reached, only a new boot to prove. A
/// shutdown is [`shut_down`]'s whole (its gate included: `convertToTemplate` runs it too).
pub async fn change_power<H: Host>(run: &Run<'_, H>, args: &Value, parse: ParsePower) -> Outcome {
    let args = match power_args(run.kind, args, parse) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, args.change.verb()).await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    // The change, in this function's course (an async fn around it would be one more future,
    // issue 32): the gate, PVE's refusals, then the request unless the target shows already.
    let (force, change) = (args.force, &args.change);
    let verdict = 'change: {
        if let Change::Shutdown(shutdown) = change {
            break 'change shut_down(run, &mut ev, shutdown, force).await;
        }
        if let Some(gate) = change.gate() {
            or_break!('change, ev.pass_gate(run, gate, force));
        }
        let (label, verb) = (ev.label(run), change.verb());
        if let Change::Reboot { timeout_sec } = *change {
            or_break!('change, refuse_paused(run, &ev, verb));
            break 'change reboot_verified(run, &mut ev, timeout_sec).await;
        }
        if let Some(why) = change.refusal(run.kind, ev.at.vmid, &ev.status) {
            break 'change Err(refused(&label, &ev.status, verb, &why));
        }
        let target = change.target(run.kind);
        let there = match already(run, &ev, target) {
            Ok(there) => there,
            Err(context) => {
                or_break!('change, reach(run, &mut ev, target, run.wait_budget_ms(), &context).await);
                true
            }
        };
        if there {
            break 'change Ok(format!(
                "{label} was already {}; no {verb} was sent",
                target.state()
            ));
        }
        let request = change.request(&ev.at.node, run.kind, ev.at.vmid);
        or_break!('change, transition(run, &mut ev, &request, verb, target).await);
        let checkpointed = match (run.kind, change) {
            (GuestKind::Lxc, Change::Suspend { .. }) => {
                ", checkpointed by its suspend task (the checkpoint is not visible through the API)"
            }
            _ => "",
        };
        Ok(format!("{label} is {}{checkpointed}", target.state()))
    };
    ev.outcome(run, verdict).await
}

fn refused(label: &str, s: &GuestStatus, verb: &str, why: &str) -> String {
    format!(
        "{label} shows {}, and PVE refuses to {verb} it: {why}; nothing was sent",
        describe(s)
    )
}

/// qemu-server `PVE/API2/Qemu.pm` vm_shutdown and vm_reboot refuse a paused VM before any task
/// (`vm_is_paused`): a shutdown request would stay queued and power it off once resumed.
/// vm_shutdown turns one carrying `forceStop` into a stop, but `shutdown` never sends forceStop
/// (its `forceStopAfter` is a separate stop request), so both are refused whatever the arguments.
pub fn refuse_paused<H: Host>(run: &Run<'_, H>, ev: &Evidence, verb: &str) -> Result<(), String> {
    match run.kind == GuestKind::Qemu && Target::Paused.reached(run.kind, &ev.status) {
        true => Err(refused(
            &ev.label(run),
            &ev.status,
            verb,
            "VM is paused - cannot shutdown (resume it first, or stop it)",
        )),
        false => Ok(()),
    }
}

/// The gated (`force` overrides), verified shutdown of a found guest: `shutdown`'s, and
/// `convertToTemplate`'s `shutdownFirst`.
pub async fn shut_down<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &Shutdown,
    force: bool,
) -> Result<String, String> {
    ev.pass_gate(run, &gates::SHUTDOWN, force)?;
    refuse_paused(run, ev, "shut down")?;
    let label = ev.label(run);
    let there = match already(run, ev, Target::Stopped) {
        Ok(there) => there,
        Err(context) => {
            reach(run, ev, Target::Stopped, run.wait_budget_ms(), &context).await?;
            true
        }
    };
    if there {
        return Ok(format!("{label} was already stopped; no shutdown was sent"));
    }
    // The graceful attempt, in this course (an async fn around it would be one more future,
    // issue 32). `Err` from it: PVE refused the request (no task ran, nothing to fall back from).
    let started = run.host.now_ms();
    let budget_ms = args.timeout_sec * 1000;
    let mut pve = run.pve();
    // PVE's task itself waits up to timeoutSec for the guest: follow it at least that long. The
    // graceful attempt has its own budget (timeoutSec); the hard stop after it gets taskTimeoutSec.
    let graceful_budget = WaitBudget::new(pve.task_timeout_ms.max(budget_ms + TASK_SLACK_MS));
    pve.budget = &graceful_budget;
    let request = endpoints::guest_shutdown(&ev.at.node, run.kind, ev.at.vmid, args.timeout_sec);
    let mut followed = Ok(());
    ev.trail
        .run(
            &pve,
            &request,
            format_args!("shut down {label}"),
            Some(&mut followed),
            false,
        )
        .await?;
    let (settle_ms, context) = settling(run, ev, followed, budget_ms, started);
    let why = match reach(run, ev, Target::Stopped, settle_ms, &context).await {
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

/// How long the state may take to show after the graceful attempt's task (`followed`), and what
/// a failure to see it stopped says came first. Only the guest's state decides. After a task that
/// succeeded the state may still follow (an HA-managed guest stops once the HA manager acts) within
/// what is left of timeoutSec (`budget_ms`, from `started`); so may it after a task whose end was
/// not observed (its status unreadable): it may still be shutting the guest down. After a failed
/// task (PVE gave up waiting) one read says where the guest is.
// Inlined into its one caller (issue 32).
#[inline(always)]
fn settling<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    followed: Result<(), TaskTrouble>,
    budget_ms: u64,
    started: f64,
) -> (u64, String) {
    let spent = (run.host.now_ms() - started).max(0.0) as u64;
    let left = budget_ms.saturating_sub(spent).max(MIN_SETTLE_MS);
    match followed {
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
    ev.trail
        .run(
            &run.pve(),
            request,
            format_args!("{verb} {}", ev.label(run)),
            None,
            false,
        )
        .await?;
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
/// not yet: `Err` says so (the context of the wait for its lock, which the caller awaits with
/// [`reach`] within the method's one budget; it counts once that wait ends well). Plain: no state
/// machine of its own (issue 32).
pub fn already<H: Host>(run: &Run<'_, H>, ev: &Evidence, target: Target) -> Result<bool, String> {
    if !target.reached(run.kind, &ev.status) {
        return Ok(false);
    }
    let Some(lock) = busy_lock(&ev.status) else {
        return Ok(true);
    };
    run.info_args(format_args!(
        "{} shows {} but is locked ({lock}): waiting for the lock to clear",
        ev.label(run),
        target.describe(run.kind)
    ));
    Err(format!("{} was locked ({lock})", ev.label(run)))
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
    let waited = settle_evidence(run, ev, budget_ms, &|s| target.reached(kind, s)).await;
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
    fn pves_refusals_name_the_guest_and_what_to_do_instead() {
        let suspend = Change::Suspend {
            to_disk: false,
            storage: None,
        };
        let stopped = status(json!({"status": "stopped"}));
        let saved = status(json!({"status": "stopped", "lock": "suspended"}));
        let refusal = |change: &Change, kind, s| change.refusal(kind, 100, s);
        assert_eq!(
            refusal(&suspend, GuestKind::Qemu, &stopped).as_deref(),
            Some("VM 100 not running (start it first)")
        );
        assert_eq!(
            refusal(&suspend, GuestKind::Lxc, &saved).as_deref(),
            Some("CT 100 not running (suspended to disk: resume it first)")
        );
        assert_eq!(
            refusal(&Change::Resume, GuestKind::Qemu, &stopped).as_deref(),
            Some("VM 100 not running (stopped, not paused or suspended: start it)")
        );
        let ha = status(json!({"status": "running", "ha": {"managed": 1}}));
        let to_disk = Change::Suspend {
            to_disk: true,
            storage: None,
        };
        assert_eq!(
            refusal(&to_disk, GuestKind::Qemu, &ha).as_deref(),
            Some("Cannot suspend HA managed VM to disk (suspend it to RAM, or take it out of HA)")
        );
        assert_eq!(refusal(&Change::Resume, GuestKind::Qemu, &saved), None);
    }

    #[test]
    fn ha_managed_guests_point_at_the_ha_manager() {
        let ha = status(json!({"status": "stopped", "ha": {"managed": 1, "state": "started"}}));
        assert!(what_to_check(&ha).contains("ha-manager status"));
    }
}
