//! `haStatus`: reads the guest's HA resource — its config (`GET /cluster/ha/resources/{sid}`) and
//! the HA manager's entry (`GET /cluster/ha/status/current`) — and records both in the guest
//! record's `ha` through the HA engine (guest/ha.rs) with nothing to write. Succeeds when read; a
//! guest that is not an HA resource is recorded `managed: false`.

use crate::args::Fields;
use crate::guest::ha::{change_ha, describe, HaChange, HaObject, HaView, Write};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::run::Run;
use serde_json::Value;

/// Runs `haStatus`.
pub async fn ha_status<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let target = match Fields::of(args, "").and_then(|f| GuestRef::parse(&f)) {
        Ok(target) => target,
        Err(e) => return Failure::from(e).into(),
    };
    let plan = |_: &HaView| -> Result<Vec<Write>, String> { Ok(Vec::new()) };
    let judge = |service: Option<&Value>| Ok(describe(service));
    let read_back = |_: &HaView| Ok(());
    let change = HaChange {
        object: HaObject::Resource,
        plan: &plan,
        judge: &judge,
        read_back: &read_back,
        reads_only: true,
        waits_lock: false,
    };
    change_ha(run, &target, &change).await
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
