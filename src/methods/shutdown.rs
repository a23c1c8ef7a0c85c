//! `shutdown`: a graceful (ACPI) shutdown of a managed guest within `timeoutSec`, successful only
//! when `status/current` shows it stopped. With `forceStopAfter` a guest that did not go down
//! gracefully gets a hard stop, which is then verified the same way (and noted as a warning). The
//! sequence is `guest::power::change_power`'s (`guest::power::shut_down`).

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::guest::power::{Change, Shutdown};
use crate::pve::endpoints::GuestKind;

/// The fields after the guest, in order (one table walk, issue 32): the graceful shutdown's own
/// budget, the fall back to a hard stop, and the override of the safety gate.
const FIELDS: [Spec; 3] = [
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 120)),
    Spec::new("forceStopAfter", Kind::Flag(false)),
    Spec::new("force", Kind::Flag(false)),
];

/// The arguments of `shutdown` after the guest, as `change_power` runs them.
pub fn change(_: GuestKind, fields: &Fields) -> Result<(bool, Change), ArgError> {
    let [timeout, force_stop_after, force, ..] = fields.read_table(&FIELDS)?;
    let shutdown = Shutdown {
        timeout_sec: timeout.int as u64,
        force_stop_after: force_stop_after.int != 0,
    };
    Ok((force.int != 0, Change::Shutdown(shutdown)))
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
