//! `lookup`: a new version of the guest's record on every run, with its live state — or its
//! confirmed absence. A state that cannot be determined fails and writes nothing.

use crate::args::Fields;
use crate::guest::evidence::{sight, Sighting};
use crate::guest::locate::absent_message;
use crate::guest::observe::{locked_note, record_for};
use crate::guest::record::GuestRecord;
use crate::guest::reference::GuestRef;
use crate::guest::upstream::with_superseded;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::run::{write_value, Run};
use serde_json::Value;
use std::future::Future;

/// Runs `lookup`: [`recorded`], its summary saying where the guest is and in which state. Hands
/// back that future rather than awaiting it: a wrapper's own state machine would only add room.
pub fn lookup<'a, H: Host>(
    run: &'a Run<'_, H>,
    args: &'a Value,
) -> impl Future<Output = Outcome> + 'a {
    recorded(run, args, looked_up)
}

/// `lookup` and a `sync` of one guest, one future for both (issue 32): the guest observed, its
/// record written (the records it supersedes marked), `summary` saying what was done.
pub async fn recorded<H: Host>(
    run: &Run<'_, H>,
    args: &Value,
    summary: fn(GuestKind, &GuestRecord) -> String,
) -> Outcome {
    match observe(run, args).await {
        Ok(record) => {
            let summary = summary(run.kind, &record);
            let writes = vec![write_value(
                run.guest_spec(),
                run.guest_instance(record.vmid),
                record.json(),
            )];
            Outcome::succeeded(with_superseded(run, writes).await, summary)
        }
        Err(failure) => failure.into(),
    }
}

/// `lookup`'s summary: where the guest is and in which state, or that it is absent.
fn looked_up(kind: GuestKind, record: &GuestRecord) -> String {
    match record.present {
        true => format!(
            "{} {} is {} on node {}{}",
            kind.noun(),
            record.vmid,
            record.qmp_status.as_deref().unwrap_or(&record.status),
            record.node.as_deref().unwrap_or("?"),
            locked_note(record.lock.as_deref())
        ),
        false => absent_message(kind, record.vmid, ""),
    }
}

/// Reads the guest's live state (or confirms its absence) into a record. Through [`sight`]: its
/// status and config, read where the guest lives, as every method reads them; one copy of that
/// reading in the module instead of one more of its own (issue 32).
async fn observe<H: Host>(run: &Run<'_, H>, args: &Value) -> Result<GuestRecord, Failure> {
    let target = GuestRef::parse(&Fields::of(args, "")?)?;
    Ok(match sight(run, &target).await? {
        Sighting::Absent(vmid) => GuestRecord::absent(vmid, run.method, run.now_iso()),
        Sighting::Present(ev) => record_for(run, &ev.at, &ev.status, ev.identity).await,
    })
}

#[cfg(test)]
mod tests {
    use crate::testing::{run_method, ScriptedHost};
    use serde_json::{json, Value};

    const STATUS: &str = "GET /nodes/pve1/qemu/100/status/current";
    const CONFIG: &str = "GET /nodes/pve1/qemu/100/config";

    /// A stopped VM 100 named "web" whose stop task ends at once; `stored` is its stored record.
    fn stop_with(stored: Option<Value>) -> (ScriptedHost, Value) {
        let host = ScriptedHost::new();
        if let Some(record) = stored {
            host.records.borrow_mut().insert("vm-100".into(), record);
        }
        host.data(
            STATUS,
            json!({"status": "stopped", "name": "web", "tags": "swamp"}),
        );
        host.data(CONFIG, json!({"smbios1": "uuid=now"}));
        let outcome = run_method(&host, "qemu", "stop", json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
        let record = outcome.writes[0].data.clone();
        (host, record)
    }

    const READ_AT: &str = "2026-11-01T00:00:00.000Z";

    #[test]
    fn an_action_carries_the_identity_of_a_record_that_still_describes_the_guest() {
        let stored = json!({"present": true, "name": "web", "identity": {"smbiosUuid": "before"},
                            "identityObservedAt": READ_AT});
        let (host, record) = stop_with(Some(stored));
        assert_eq!(record["identity"]["smbiosUuid"], "before");
        assert_eq!(
            host.routes_called(),
            [STATUS],
            "one request: the state before"
        );
    }

    #[test]
    fn a_carried_identity_keeps_the_time_it_was_read_never_now() {
        let stored = json!({"present": true, "name": "web", "identity": {"smbiosUuid": "before"},
                            "identityObservedAt": READ_AT});
        let (_, record) = stop_with(Some(stored));
        assert_eq!(record["identityObservedAt"], READ_AT);
    }

    #[test]
    fn a_stored_identity_without_its_time_is_not_carried() {
        let stored = json!({"present": true, "name": "web", "identity": {"smbiosUuid": "before"}});
        let (_, record) = stop_with(Some(stored));
        assert!(record.get("identity").is_none(), "{record}");
        assert!(record.get("identityObservedAt").is_none(), "{record}");
    }

    #[test]
    fn an_action_reads_the_identity_when_the_record_names_another_guest() {
        let stored = json!({"present": true, "name": "db", "identity": {"smbiosUuid": "before"}});
        let (host, record) = stop_with(Some(stored));
        assert_eq!(record["identity"]["smbiosUuid"], "now");
        assert_eq!(
            record["identityChanged"]["previous"]["smbiosUuid"],
            "before"
        );
        assert_eq!(host.routes_called(), [STATUS, CONFIG]);
    }

    #[test]
    fn an_action_on_a_guest_never_recorded_records_no_identity() {
        let (host, record) = stop_with(None);
        assert!(record.get("identity").is_none(), "{record}");
        assert_eq!(host.routes_called(), [STATUS]);
    }
}
