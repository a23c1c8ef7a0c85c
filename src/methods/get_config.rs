//! `getConfig`: the config a guest runs with, and what waits for its next start, recorded as
//! `<vm|ct>-<vmid>-config`.
//!
//! One read of `GET …/pending` gives both, from one snapshot: plain `GET …/config` would show
//! pending values as if they were applied.

use crate::args::{ArgError, Fields};
use crate::guest::config::ConfigSnapshot;
use crate::guest::locate::{absent_message, refused, send_where_it_lives, Located, Placed};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::request::PveRequest;
use crate::record_json::{list, put, set};
use crate::run::{write_value, Run};
use serde_json::{Map, Value};
use std::future::Future;

/// One read where a guest lives, as a method records it (`getConfig`, `listSnapshots`): what
/// differs between them, plain; the async part is [`read_guest`], one future for both (issue 32).
pub struct GuestReading<H: Host> {
    /// The request, for the node tried.
    pub request: fn(&str, GuestKind, u32) -> PveRequest,
    /// What is read, in messages: "the config", ….
    pub what: &'static str,
    /// The tail of the message when the guest is absent (": there is no config to read").
    pub absent: &'static str,
    /// The outcome of what the guest answered (to the request), or why it cannot be read.
    pub record: fn(&Run<'_, H>, &Located, &PveRequest, Value) -> Result<Outcome, PveError>,
}

/// Runs one [`GuestReading`]: the guest's reference, the one request where it lives, its answer
/// judged by the reading's plain `record`.
pub async fn read_guest<H: Host>(
    run: &Run<'_, H>,
    target: Result<GuestRef, ArgError>,
    reading: GuestReading<H>,
) -> Outcome {
    let target = match target {
        Ok(target) => target,
        Err(e) => return Failure::from(e).into(),
    };
    let request = |at: &Located| (reading.request)(&at.node, run.kind, at.vmid);
    let placed = send_where_it_lives(run, &target, &request).await;
    // An answer the reading cannot read is the node's refusal, as an error is.
    let (at, error) = match placed {
        Ok(Placed::Done {
            at,
            value: (request, data),
        }) => match (reading.record)(run, &at, &request, data) {
            Ok(outcome) => return outcome,
            Err(error) => (at, error),
        },
        Ok(Placed::Refused { at, error }) => (at, error),
        Ok(Placed::Absent { vmid }) => {
            return Failure(absent_message(run.kind, vmid, reading.absent)).into()
        }
        Err(failure) => return failure.into(),
    };
    refused(run.kind, reading.what, &at, &error).into()
}

/// The guest's reference (a method's only argument besides the globals), read reading nothing.
pub fn target_of(args: &Value) -> Result<GuestRef, ArgError> {
    Fields::of(args, "").and_then(|f| GuestRef::parse(&f))
}

/// Runs `getConfig`: one read of `GET …/pending` where the guest lives ([`read_guest`]).
pub fn get_config<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
    let reading = GuestReading {
        request: endpoints::guest_pending,
        what: "the config",
        absent: ": there is no config to read",
        record: recorded,
    };
    read_guest(run, target_of(args), reading)
}

/// The config record of the guest at `at`, from its `GET …/pending` answer.
fn recorded<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    request: &PveRequest,
    data: Value,
) -> Result<Outcome, PveError> {
    let snapshot = snapshot_of(request, data)?;
    let summary = format!(
        "{} {} on node {}: {} keys, {} pending",
        run.kind.noun(),
        at.vmid,
        at.node,
        snapshot.current.len(),
        snapshot.pending.len() + snapshot.pending_delete.len()
    );
    // The `<vm|ct>-<vmid>-config` record, built as JSON (record_json.rs): the config as it runs
    // (key → string or number), the changes PVE holds until the next start and the keys whose
    // deletion waits for it (each left out when empty); no struct with a serializer of its own
    // (issue 32).
    let mut record = Map::new();
    set(&mut record, "vmid", Value::from(at.vmid));
    put(&mut record, "node", Some(&at.node));
    set(&mut record, "config", Value::Object(snapshot.current));
    if !snapshot.pending.is_empty() {
        set(&mut record, "pending", Value::Object(snapshot.pending));
    }
    list(&mut record, "pendingDelete", &snapshot.pending_delete);
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    let instance = format!("{}-config", run.guest_instance(at.vmid));
    Ok(Outcome::succeeded(
        vec![write_value("config", instance, Value::Object(record))],
        summary,
    ))
}

/// `GET …/pending`'s answer (to `request`) as a snapshot.
pub fn snapshot_of(request: &PveRequest, data: Value) -> Result<ConfigSnapshot, PveError> {
    ConfigSnapshot::from_rows(&data).ok_or_else(|| {
        PveError::malformed_args(format_args!(
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
