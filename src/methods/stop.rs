//! `stop`: a hard stop of a managed guest (the `swamp` tag; `force: true` overrides), successful
//! only when `status/current` shows it stopped: the sequence of `guest::power::change_power`.

use crate::args::{ArgError, Fields};
use crate::guest::power::Change;
use crate::pve::endpoints::GuestKind;

/// The arguments of `stop` after the guest (`force` overrides the safety gate), as `change_power`
/// runs them.
pub fn change(_: GuestKind, fields: &Fields) -> Result<(bool, Change), ArgError> {
    Ok((fields.flag_or("force", false)?, Change::Stop))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Outcome, Verdict};
    use crate::testing::{api_args, run_method_of, ScriptedHost};
    use serde_json::json;

    fn run_stop(host: &ScriptedHost, tags: &str, force: bool) -> Outcome {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({}));
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running", "qmpstatus": "running", "tags": tags}),
        );
        let mut args = api_args(json!({"vmid": 100, "force": force}));
        args["taskTimeoutSec"] = json!(5);
        run_method_of(GuestKind::Qemu, host, "stop", &args)
    }

    #[test]
    fn an_unmanaged_guest_is_refused_before_any_mutation_and_recorded() {
        let host = ScriptedHost::new();
        let outcome = run_stop(&host, "web", false);
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(message.starts_with("refusing to stop VM 100"), "{message}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
        assert_eq!(outcome.writes[0].data["status"], "running");
    }

    #[test]
    fn force_overrides_the_gate_and_the_override_is_recorded() {
        let host = ScriptedHost::new();
        let outcome = run_stop(&host, "web", true);
        // The scripted host does not serve the stop: what matters is that it was sent.
        assert!(host
            .routes_called()
            .contains(&"POST /nodes/pve1/qemu/100/status/stop".to_string()));
        assert!(outcome.writes[0].data["warnings"][0]
            .as_str()
            .unwrap()
            .contains("overrides the safety gate"));
    }
}
