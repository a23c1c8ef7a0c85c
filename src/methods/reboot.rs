//! `reboot` (both models): succeeds only when the guest runs again with a NEW boot — another QEMU
//! process (container: init) than before, or an uptime that restarted — within `taskTimeoutSec`
//! (`guest::reboot`). HA-managed guests are rebooted the same way; PVE hands their start to the HA
//! manager, and the same proof applies. Gated like `stop` (the `swamp` tag; `force` overrides). A
//! guest that is not running is a failure: there is nothing to reboot. The sequence is
//! `guest::power::change_power`'s.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::guest::power::Change;
use crate::pve::endpoints::GuestKind;

/// The fields after the guest, in order (one table walk, issue 32): `timeoutSec` is how long PVE
/// waits for the shutdown half of the reboot; `force` overrides the safety gate.
const FIELDS: [Spec; 2] = [
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 120)),
    Spec::new("force", Kind::Flag(false)),
];

/// The arguments of `reboot` after the guest, as `change_power` runs them.
pub fn change(_: GuestKind, fields: &Fields) -> Result<(bool, Change), ArgError> {
    let [timeout, force, ..] = fields.read_table(&FIELDS)?;
    let timeout_sec = timeout.int as u64;
    Ok((force.int != 0, Change::Reboot { timeout_sec }))
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
