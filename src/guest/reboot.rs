//! Rebooting a running guest, and proving it came back with a NEW boot — shared by `reboot` and
//! `setConfig`'s `applyPending: "reboot"`.
//!
//! A reboot task that ended OK proves little: a VM's `qmreboot` task ends once QEMU is down, and the
//! start that follows happens outside it (qemu-server `PVE::QemuServer::vm_reboot` leaves a reboot
//! request that `qm cleanup` turns into `vm_start`, which for an HA-managed VM is only a request to
//! the HA manager). So success needs `status/current` to show the guest running again with another
//! QEMU process (a container: another init) than before — its `pid` — or, where no pid is shown,
//! an `uptime` that restarted; all within `taskTimeoutSec`.

use super::evidence::{settle_evidence, Evidence};
use super::settle::{describe, seconds};
use super::target::Target;
use crate::args::{ArgError, Fields};
use crate::host::Host;
use crate::poll::WaitBudget;
use crate::pve::endpoints;
use crate::pve::responses::GuestStatus;
use crate::run::Run;

/// What to do about changes that wait for a boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyPending {
    /// Leave them for the next boot (reported).
    Later,
    /// Reboot (verified) when something is pending, then nothing may be.
    Reboot,
}

impl ApplyPending {
    pub fn parse(fields: &Fields) -> Result<Self, ArgError> {
        match fields.text("applyPending")? {
            None | Some("none") => Ok(ApplyPending::Later),
            Some("reboot") => Ok(ApplyPending::Reboot),
            Some(_) => Err(ArgError::new(
                "applyPending",
                "must be \"none\" or \"reboot\"",
            )),
        }
    }
}

/// How long the task is followed beyond the shutdown's own timeout.
const TASK_SLACK_MS: u64 = 30_000;

/// The boot a guest was in when it was last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boot {
    pid: Option<u64>,
    uptime: Option<u64>,
    seen_at_ms: f64,
}

impl Boot {
    pub fn of(status: &GuestStatus, now_ms: f64) -> Self {
        Boot {
            pid: status.pid,
            uptime: status.uptime,
            seen_at_ms: now_ms,
        }
    }

    /// Whether `later`, read at `now_ms`, is another boot: another pid, or (no pids to compare) an
    /// uptime smaller than this boot's would be by now (2 s of slack for rounding). `None`: the
    /// answer shows neither, so a new boot cannot be told.
    pub fn replaced_by(&self, later: &GuestStatus, now_ms: f64) -> Option<bool> {
        if let (Some(before), Some(after)) = (self.pid, later.pid) {
            return Some(before != after);
        }
        let (before, after) = (self.uptime?, later.uptime?);
        let elapsed = ((now_ms - self.seen_at_ms).max(0.0) / 1000.0) as u64;
        Some(after + 2 < before + elapsed)
    }
}

/// Reboots the guest (it must be running) and waits until it runs again with a new boot. The
/// shutdown inside the task may take `timeout_sec`.
pub async fn reboot_verified<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    timeout_sec: u64,
) -> Result<String, String> {
    let label = ev.label(run);
    let kind = run.kind;
    if !Target::Running.reached(kind, &ev.status) {
        return Err(format!(
            "{label} is not running ({}): there is no boot to replace — use start",
            describe(&ev.status)
        ));
    }
    let before = Boot::of(&ev.status, run.host.now_ms());
    let mut pve = run.pve();
    // The task holds the shutdown half (`timeoutSec`): it has its own budget, as shutdown's
    // graceful phase does; the wait for the new boot then gets the method's budget.
    let task_budget = WaitBudget::new(pve.task_timeout_ms.max(timeout_sec * 1000 + TASK_SLACK_MS));
    pve.budget = &task_budget;
    let request = endpoints::guest_reboot(&ev.at.node, kind, ev.at.vmid, timeout_sec);
    ev.trail
        .run(&pve, &request, format_args!("reboot {label}"), None, false)
        .await?;
    let budget_ms = run.wait_budget_ms();
    let host = run.host;
    let new_boot = |s: &GuestStatus| {
        Target::Running.reached(kind, s) && before.replaced_by(s, host.now_ms()) == Some(true)
    };
    let waited = settle_evidence(run, ev, budget_ms, &new_boot).await;
    waited.map_err(|why| not_rebooted(run, ev, &before, &why, budget_ms))?;
    let (what, old, new, unit) = boot_change(&before, &ev.status);
    Ok(format!(
        "{label} rebooted: running again with a new boot ({what} {old}{unit} → {new}{unit})"
    ))
}

fn not_rebooted<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    before: &Boot,
    why: &str,
    budget_ms: u64,
) -> String {
    let s = &ev.status;
    let seen = match (
        Target::Running.reached(run.kind, s),
        before.replaced_by(s, run.host.now_ms()),
    ) {
        (true, Some(false)) => {
            // The same boot: the pid both reads show (the same: no new boot), or (no pids to
            // compare) the uptime read last.
            let (what, _, now, unit) = boot_change(before, s);
            format!("it is still running the same boot ({what} {now}{unit}) — the reboot never happened")
        }
        (true, None) => {
            "PVE shows neither its pid nor its uptime, so a new boot cannot be told".to_string()
        }
        _ => format!("it was last seen {}", describe(s)),
    };
    let check = match s.ha.as_ref().is_some_and(|ha| ha.managed == Some(true)) {
        true => "the guest is HA-managed, so its start after the shutdown is the HA manager's: check `ha-manager status`",
        false => "check the task log and the guest's console on the node",
    };
    format!(
        "the reboot task of {} ended successfully, but no new boot was observed within taskTimeoutSec={} ({why}): {seen} — {check}",
        ev.label(run),
        seconds(budget_ms)
    )
}

/// What tells the boots apart, as messages show it: `("pid", old, new, "")` when both reads show
/// a pid, else `("uptime", old, new, "s")` (an uptime not shown reads 0).
fn boot_change(before: &Boot, s: &GuestStatus) -> (&'static str, u64, u64, &'static str) {
    match (before.pid, s.pid) {
        (Some(old), Some(new)) => ("pid", old, new, ""),
        _ => (
            "uptime",
            before.uptime.unwrap_or_default(),
            s.uptime.unwrap_or_default(),
            "s",
        ),
    }
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
    fn another_pid_is_a_new_boot_and_the_same_pid_is_not() {
        let before = Boot::of(
            &status(json!({"status": "running", "pid": 10, "uptime": 500})),
            0.0,
        );
        let later = |pid: u64| status(json!({"status": "running", "pid": pid, "uptime": 501}));
        assert_eq!(before.replaced_by(&later(11), 1000.0), Some(true));
        assert_eq!(before.replaced_by(&later(10), 1000.0), Some(false));
    }

    #[test]
    fn without_pids_an_uptime_that_restarted_is_a_new_boot() {
        let before = Boot::of(&status(json!({"status": "running", "uptime": 500})), 0.0);
        let at = |uptime: u64| status(json!({"status": "running", "uptime": uptime}));
        assert_eq!(before.replaced_by(&at(3), 10_000.0), Some(true));
        assert_eq!(before.replaced_by(&at(510), 10_000.0), Some(false));
    }

    #[test]
    fn neither_pid_nor_uptime_cannot_be_told() {
        let before = Boot::of(&status(json!({"status": "running"})), 0.0);
        assert_eq!(
            before.replaced_by(&status(json!({"status": "running"})), 1.0),
            None
        );
    }
}
