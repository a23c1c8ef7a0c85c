//! `reboot` (both models): succeeds only when the guest runs again with a NEW boot — another QEMU
//! process (container: init) than before, or an uptime that restarted — within `taskTimeoutSec`
//! (`guest::reboot`). HA-managed guests are rebooted the same way; PVE hands their start to the HA
//! manager, and the same proof applies. Gated like `stop` (the `swamp` tag; `force` overrides). A
//! guest that is not running is a failure: there is nothing to reboot.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::guest::evidence::{sight_to_change, Evidence};
use crate::guest::gates;
use crate::guest::power::refuse_paused;
use crate::guest::reboot::reboot_verified;
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::run::Run;
use serde_json::Value;

/// The arguments of `reboot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebootArgs {
    pub target: GuestRef,
    /// How long PVE waits for the shutdown half of the reboot.
    pub timeout_sec: u64,
    /// Overrides the safety gate.
    pub force: bool,
}

/// The fields after the guest, in order (one table walk, issue 32).
const FIELDS: [Spec; 2] = [
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 120)),
    Spec::new("force", Kind::Flag(false)),
];

impl RebootArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let [timeout, force] = fields.read_table(&FIELDS)?;
        Ok(RebootArgs {
            target,
            timeout_sec: timeout.int as u64,
            force: force.int != 0,
        })
    }
}

/// Runs `reboot`.
pub async fn reboot<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match RebootArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "reboot").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let verdict = gated_reboot(run, &mut ev, &args).await;
    ev.outcome(run, verdict).await
}

async fn gated_reboot<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &RebootArgs,
) -> Result<String, String> {
    ev.pass_gate(run, &gates::REBOOT, args.force)?;
    refuse_paused(run, ev, "reboot")?;
    reboot_verified(run, ev, args.timeout_sec).await
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmreboot:100:root@pam!t:";

    fn guest(host: &ScriptedHost, after: serde_json::Value) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1", "name": "web"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=U"}),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running", "qmpstatus": "running", "tags": "swamp", "pid": 10, "uptime": 900}),
        );
        host.data("GET /nodes/pve1/qemu/100/status/current", after);
        host.data("POST /nodes/pve1/qemu/100/status/reboot", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
    }

    #[test]
    fn a_new_qemu_process_is_a_reboot() {
        let host = ScriptedHost::new();
        guest(
            &host,
            json!({"status": "running", "qmpstatus": "running", "tags": "swamp", "pid": 11, "uptime": 1}),
        );
        let outcome = run_method(&host, "qemu", "reboot", json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
    }

    #[test]
    fn a_task_that_ended_ok_with_the_same_boot_fails_saying_so() {
        let host = ScriptedHost::new();
        guest(
            &host,
            json!({"status": "running", "qmpstatus": "running", "tags": "swamp", "pid": 10, "uptime": 901}),
        );
        let args = json!({"vmid": 100, "taskTimeoutSec": 1});
        let outcome = run_method(&host, "qemu", "reboot", args);
        let message = failure_of(&outcome);
        assert!(message.contains("no new boot was observed"), "{message}");
        assert!(
            message.contains("still running the same boot (pid 10)"),
            "{message}"
        );
    }

    #[test]
    fn a_paused_vm_is_refused_with_pves_reason_before_anything_is_sent() {
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
        let outcome = run_method(&host, "qemu", "reboot", json!({"vmid": 100}));
        let message = failure_of(&outcome);
        assert!(
            message.contains("VM is paused - cannot shutdown (resume it first, or stop it)"),
            "{message}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_stopped_guest_has_nothing_to_reboot() {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({}));
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "stopped", "tags": "swamp"}),
        );
        let outcome = run_method(&host, "qemu", "reboot", json!({"vmid": 100}));
        assert!(failure_of(&outcome).contains("is not running"));
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }
}
