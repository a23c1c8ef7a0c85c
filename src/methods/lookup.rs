//! `lookup`: a new version of the guest's record on every run, with its live state — or its
//! confirmed absence. A state that cannot be determined fails and writes nothing.

use crate::args::Fields;
use crate::guest::identity::{stored_identity, Identity};
use crate::guest::locate::{read_where_it_lives, GuestRead, Located};
use crate::guest::record::{GuestRecord, IdentityChange};
use crate::guest::reference::GuestRef;
use crate::guest::settle::read_status;
use crate::guest::upstream::with_superseded;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::responses::GuestStatus;
use crate::run::{write, Run};
use serde_json::{Map, Value};

/// Runs `lookup`.
pub async fn lookup<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    match observe(run, args).await {
        Ok(record) => {
            let summary = match record.present {
                true => format!(
                    "{} {} is {} on node {}{}",
                    run.kind.noun(),
                    record.vmid,
                    record.qmp_status.as_deref().unwrap_or(&record.status),
                    record.node.as_deref().unwrap_or("?"),
                    locked_note(record.lock.as_deref())
                ),
                false => format!(
                    "{} {} does not exist on any node",
                    run.kind.noun(),
                    record.vmid
                ),
            };
            let writes = vec![write(
                run.guest_spec(),
                run.guest_instance(record.vmid),
                &record,
            )];
            Outcome::succeeded(with_superseded(run, writes).await, summary)
        }
        Err(failure) => failure.into(),
    }
}

/// `, locked (clone): an operation on it has not finished` for a summary; empty without a lock.
pub fn locked_note(lock: Option<&str>) -> String {
    match lock {
        Some(lock) => format!(", locked ({lock}): an operation on it has not finished"),
        None => String::new(),
    }
}

/// Reads the guest's live state (or confirms its absence) into a record.
pub async fn observe<H: Host>(run: &Run<'_, H>, args: &Value) -> Result<GuestRecord, Failure> {
    let target = GuestRef::parse(&Fields::of(args, "")?)?;
    let state = async |at: &Located| read_present(run, at).await;
    Ok(
        match read_where_it_lives(run, &target, "the state", state).await? {
            GuestRead::Absent { vmid } => GuestRecord::absent(vmid, run.method, run.now_iso()),
            GuestRead::Read {
                at,
                value: (status, config),
            } => {
                record_for(
                    run,
                    &at,
                    &status,
                    Identity::from_config(&Value::Object(config)),
                )
                .await
            }
        },
    )
}

/// Reads a located guest's status and its config (where its identity is).
pub async fn read_present<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
) -> Result<(GuestStatus, Map<String, Value>), crate::pve::error::PveError> {
    let status = read_status(&run.pve(), run.kind, at).await?;
    Ok((status, read_config(run, at).await?))
}

/// An object, or the answer is wrong: a config read as "nothing" would skip the reuse check.
async fn read_config<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
) -> Result<Map<String, Value>, crate::pve::error::PveError> {
    let request = endpoints::guest_config(&at.node, run.kind, at.vmid);
    run.pve().read(&request, "a guest config").await
}

/// Reads a located guest's status and its identity by `sync`'s rule: carried from the stored record
/// while that record says the guest is present under the same name; read from its config when the
/// record says absent or names another guest (the VMID may hold another guest now); none when
/// nothing is stored (nothing to compare with; `lookup` establishes it). So the state before an
/// action is one request in the common case.
pub async fn read_to_act<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
) -> Result<(GuestStatus, Identity), crate::pve::error::PveError> {
    let status = read_status(&run.pve(), run.kind, at).await?;
    let stored = run
        .host
        .read_record(&run.guest_instance(at.vmid))
        .await
        .ok()
        .flatten();
    let same_guest = |s: &Value| {
        s.get("present") == Some(&Value::Bool(true))
            && s.get("name").and_then(Value::as_str) == status.name.as_deref()
    };
    let no_identity = Identity {
        smbios_uuid: None,
        ctime: None,
    };
    match &stored {
        // Nothing stored to compare with: `lookup` establishes the identity.
        None => return Ok((status, no_identity)),
        Some(s) if same_guest(s) => {
            let carried = stored_identity(s).unwrap_or(no_identity);
            return Ok((status, carried));
        }
        // Recorded absent, or under another name: the VMID may hold another guest now.
        Some(_) => {}
    }
    let config = read_config(run, at).await?;
    Ok((status, Identity::from_config(&Value::Object(config))))
}

/// The record of an observed guest, flagging a reused VMID against the stored record.
pub async fn record_for<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    status: &GuestStatus,
    identity: Identity,
) -> GuestRecord {
    let mut record = GuestRecord::observed(at.vmid, &at.node, status, run.method, run.now_iso());
    let instance = run.guest_instance(at.vmid);
    // A stored record that cannot be read only loses the reuse check; the observed state stands.
    let previous = run
        .host
        .read_record(&instance)
        .await
        .ok()
        .flatten()
        .as_ref()
        .and_then(stored_identity);
    if let Some(previous) = previous.filter(|p| identity.differs_from(p)) {
        run.warn(&format!(
            "VMID {} now belongs to a different guest than {instance} recorded (smbios uuid {} → {}): the VMID was reused",
            at.vmid,
            previous.smbios_uuid.as_deref().unwrap_or("?"),
            identity.smbios_uuid.as_deref().unwrap_or("?")
        ));
        record.identity_changed = Some(IdentityChange {
            previous,
            current: identity.clone(),
        });
    }
    record.identity = Some(identity).filter(|i| !i.is_empty());
    record.identity_observed_at = record.identity.as_ref().map(|_| run.now_iso());
    record
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

    #[test]
    fn an_action_carries_the_identity_of_a_record_that_still_describes_the_guest() {
        let stored = json!({"present": true, "name": "web", "identity": {"smbiosUuid": "before"}});
        let (host, record) = stop_with(Some(stored));
        assert_eq!(record["identity"]["smbiosUuid"], "before");
        assert_eq!(
            host.routes_called(),
            [STATUS],
            "one request: the state before"
        );
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
