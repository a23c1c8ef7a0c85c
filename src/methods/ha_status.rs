//! `haStatus`: reads the guest's HA resource — its config (`GET /cluster/ha/resources/{sid}`) and
//! the HA manager's entry (`GET /cluster/ha/status/current`) — and records both in the guest
//! record's `ha` through the HA engine (guest/ha.rs) with nothing to write. Succeeds when read; a
//! guest that is not an HA resource is recorded `managed: false`.

use crate::args::{ArgError, Fields};
use crate::guest::ha::{HaChange, HaView, Write};
use crate::guest::reference::GuestRef;
use crate::pve::endpoints::GuestKind;
use serde_json::Value;

/// haStatus's change: the guest's HA resource read, nothing written.
struct StatusRead(GuestRef);

impl HaChange for StatusRead {
    fn target(&self) -> &GuestRef {
        &self.0
    }

    fn plan(&self, _: &HaView) -> Result<Vec<Write>, String> {
        Ok(Vec::new())
    }

    fn read_back(&self, _: &HaView) -> Result<(), String> {
        Ok(())
    }

    fn reads_only(&self) -> bool {
        true
    }
}

/// haStatus's arguments: the guest.
pub fn change(args: &Value, _: GuestKind) -> Result<Box<dyn HaChange>, ArgError> {
    let target = GuestRef::parse(&Fields::of(args, "")?)?;
    Ok(Box::new(StatusRead(target)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{run_method, summary_of, Answer, ScriptedHost};
    use serde_json::json;

    fn ct(config: Answer, current: serde_json::Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "lxc", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/lxc/100/status/current",
            json!({"status": "running"}),
        );
        host.data("GET /nodes/pve1/lxc/100/config", json!({}));
        host.on("GET /cluster/ha/resources/ct:100", [config]);
        host.data("GET /cluster/ha/status/current", current);
        host
    }

    #[test]
    fn the_config_and_the_managers_view_are_recorded() {
        let service = json!([{"id": "service:ct:100", "sid": "ct:100", "state": "started",
            "crm_state": "started", "request_state": "started", "node": "pve1"}]);
        let config = json!({"sid": "ct:100", "state": "started", "max_restart": 3});
        let host = ct(Answer::Data(config), service);
        let outcome = run_method(&host, "lxc", "haStatus", json!({"vmid": 100}));
        assert!(
            summary_of(&outcome).contains("state started, crm_state started"),
            "{outcome:?}"
        );
        let record = &outcome.writes[0].data;
        assert_eq!(record["ha"]["managed"], true);
        assert_eq!(record["ha"]["maxRestart"], 3);
        assert_eq!(record["ha"]["crmState"], "started");
        assert!(!host.routes_called().iter().any(|r| !r.starts_with("GET")));
    }

    #[test]
    fn a_guest_that_is_no_ha_resource_is_recorded_unmanaged() {
        let missing = Answer::Error(500, "no such resource 'ct:100'\n".into());
        let host = ct(missing, json!([]));
        let outcome = run_method(&host, "lxc", "haStatus", json!({"vmid": 100}));
        assert!(summary_of(&outcome).contains("not listed"), "{outcome:?}");
        let record = &outcome.writes[0].data;
        assert_eq!(record["ha"]["managed"], false);
    }
}
