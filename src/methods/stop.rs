//! `stop`: a hard stop of a managed guest (the `swamp` tag; `force: true` overrides), successful
//! only when `status/current` shows it stopped.

use crate::args::{ArgError, Fields};
use crate::guest::evidence::{sight_to_change, Evidence};
use crate::guest::gates;
use crate::guest::power::{already, transition, Target};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::run::Run;
use serde_json::Value;

/// The arguments of `stop`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopArgs {
    pub target: GuestRef,
    /// Overrides the safety gate.
    pub force: bool,
}

impl StopArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        Ok(StopArgs {
            target: GuestRef::parse(&fields)?,
            force: fields.or("force", false)?,
        })
    }
}

/// Runs `stop`.
pub async fn stop<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match StopArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "stop").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let verdict = power_off(run, &mut ev, args.force).await;
    ev.outcome(run, verdict).await
}

async fn power_off<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    force: bool,
) -> Result<String, String> {
    ev.pass_gate(run, &gates::STOP, force)?;
    let label = ev.label(run);
    if already(run, ev, Target::Stopped).await? {
        return Ok(format!("{label} was already stopped; no stop was sent"));
    }
    let request = endpoints::guest_stop(&ev.at.node, run.kind, ev.at.vmid);
    transition(run, ev, &request, "stop", Target::Stopped).await?;
    Ok(format!("{label} is stopped"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
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
