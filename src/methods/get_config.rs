//! `getConfig`: the config a guest runs with, and what waits for its next start, recorded as
//! `<vm|ct>-<vmid>-config`.
//!
//! One read of `GET …/pending` gives both, from one snapshot: plain `GET …/config` would show
//! pending values as if they were applied.

use crate::args::Fields;
use crate::guest::config::ConfigSnapshot;
use crate::guest::locate::{
    absent_message, as_guest_read, refused, send_where_it_lives, GuestRead, Located,
};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::PveError;
use crate::pve::request::PveRequest;
use crate::run::{write, Run};
use serde::Serialize;
use serde_json::{Map, Value};

/// The `<vm|ct>-<vmid>-config` record.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigRecord {
    pub vmid: u32,
    pub node: String,
    /// The config as it runs (key → string or number).
    pub config: Map<String, Value>,
    /// Changes PVE holds until the next start.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub pending: Map<String, Value>,
    /// Keys whose deletion waits for the next start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_delete: Vec<String>,
    pub recorded_at: String,
}

/// Runs `getConfig`.
pub async fn get_config<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let target = match Fields::of(args, "").and_then(|f| GuestRef::parse(&f)) {
        Ok(target) => target,
        Err(e) => return Failure::from(e).into(),
    };
    // One request where the guest lives, its answer read by the plain `snapshot_of` (issue 32).
    let pending = |at: &Located| endpoints::guest_pending(&at.node, run.kind, at.vmid);
    let placed = send_where_it_lives(run, &target, &pending).await;
    match placed.and_then(|placed| as_guest_read(run.kind, "the config", placed)) {
        Ok(GuestRead::Read {
            at,
            value: (request, data),
        }) => match snapshot_of(&request, data) {
            Ok(snapshot) => recorded(run, at, snapshot),
            Err(error) => refused(run.kind, "the config", &at, &error).into(),
        },
        Ok(GuestRead::Absent { vmid }) => Failure(absent_message(
            run.kind,
            vmid,
            ": there is no config to read",
        ))
        .into(),
        Err(failure) => failure.into(),
    }
}

/// The config record of the guest at `at`, from its snapshot.
fn recorded<H: Host>(run: &Run<'_, H>, at: Located, snapshot: ConfigSnapshot) -> Outcome {
    let record = ConfigRecord {
        vmid: at.vmid,
        node: at.node,
        config: snapshot.current,
        pending: snapshot.pending,
        pending_delete: snapshot.pending_delete,
        recorded_at: run.now_iso(),
    };
    let summary = format!(
        "{} {} on node {}: {} keys, {} pending",
        run.kind.noun(),
        record.vmid,
        record.node,
        record.config.len(),
        record.pending.len() + record.pending_delete.len()
    );
    let instance = format!("{}-config", run.guest_instance(record.vmid));
    Outcome::succeeded(vec![write("config", instance, &record)], summary)
}

/// `GET …/pending` of a located guest, as a snapshot.
pub async fn read_snapshot<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
) -> Result<ConfigSnapshot, PveError> {
    let request = endpoints::guest_pending(&at.node, run.kind, at.vmid);
    snapshot_of(&request, run.pve().call(&request).await?)
}

/// `GET …/pending`'s answer (to `request`) as a snapshot.
fn snapshot_of(request: &PveRequest, data: Value) -> Result<ConfigSnapshot, PveError> {
    ConfigSnapshot::from_rows(&data).ok_or_else(|| {
        PveError::malformed(format!(
            "{} answered {data} where a list of config keys was expected",
            request.label(),
            data = crate::quote::json(&data)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn run_get_config(host: &ScriptedHost) -> Outcome {
        let args = api_args(json!({"vmid": 100}));
        run_method_of(GuestKind::Qemu, host, "getConfig", &args)
    }

    fn on_node(host: &ScriptedHost, node: &str) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": node}]),
        );
    }

    #[test]
    fn the_running_config_and_the_pending_changes_are_recorded_apart() {
        let host = ScriptedHost::new();
        on_node(&host, "pve2");
        host.data(
            "GET /nodes/pve2/qemu/100/pending",
            json!([{"key": "memory", "value": 2048, "pending": 4096}, {"key": "name", "value": "web"}]),
        );
        let outcome = run_get_config(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].instance, "vm-100-config");
        let data = &outcome.writes[0].data;
        assert_eq!(data["node"], "pve2");
        assert_eq!(data["config"], json!({"memory": 2048, "name": "web"}));
        assert_eq!(data["pending"], json!({"memory": 4096}));
    }

    #[test]
    fn an_absent_guest_fails_without_a_record() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/resources", json!([]));
        host.data("GET /cluster/nextid", json!("100"));
        let outcome = run_get_config(&host);
        assert!(!outcome.is_success());
        assert!(outcome.writes.is_empty());
    }

    #[test]
    fn a_403_fails_naming_the_privilege() {
        let host = ScriptedHost::new();
        on_node(&host, "pve1");
        host.on(
            "GET /nodes/pve1/qemu/100/pending",
            [Answer::Error(
                403,
                "Permission check failed (/vms/100, VM.Audit)".into(),
            )],
        );
        let outcome = run_get_config(&host);
        let crate::outcome::Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(message.contains("VM.Audit"), "{message}");
    }
}
