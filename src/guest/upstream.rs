//! State records the upstream `@stateless/proxmox` package left in a repository, and the versions
//! `lookup` and `sync` write over them so that no latest record contradicts what PVE shows.
//!
//! Upstream kept a guest's state under the guest's PVE name (`web1`); it wrote `vm-<vmid>` only
//! when the status read failed (`status: "unknown"`) and after a delete; and its `delete` was
//! swamp's delete kind, so every record of the definition was tombstoned (`deletedAt`) after any
//! one delete. This package keeps one record per guest, `vm-<vmid>` / `ct-<vmid>`, and every record
//! it writes has `present`. Upstream never wrote `present`: that is how its records are told apart.
//!
//! - `vm-<vmid>` records (unknown, deleted, tombstoned): this package writes the same instance, so
//!   its new version supersedes them (and `sync` treats one on a node it read as a stored guest whose
//!   absence it must confirm).
//! - Name-keyed records: a lookup or sync that records the guest writes a version over the
//!   name-keyed record too, `status: "superseded"` with `supersededBy: "vm-<vmid>"`, the guest's
//!   observed presence and no other claim. Their history stays; from then on they are left alone.

use crate::host::Host;
use crate::outcome::RecordWrite;
use crate::record_json::{put, set};
use crate::run::{write_value, Run};
use serde_json::{Map, Value};

/// Whether a stored state record was written by the upstream package (it never wrote `present`).
pub fn written_by_upstream(stored: &Value) -> bool {
    stored.is_object() && stored.get("present").is_none()
}

/// The VMID of one of this package's instance names (`vm-100` → 100), for `prefix` `vm` / `ct`.
pub fn vmid_of_instance(instance: &str, prefix: &str) -> Option<u32> {
    instance
        .strip_prefix(prefix)?
        .strip_prefix('-')
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
}

/// `writes` plus a superseding version over every upstream name-keyed record of a guest that
/// `writes` records. A store that cannot be listed or read only leaves those records as they are.
pub async fn with_superseded<H: Host>(
    run: &Run<'_, H>,
    mut writes: Vec<RecordWrite>,
) -> Vec<RecordWrite> {
    let prefix = run.kind.record_prefix();
    let names = match run.host.list_records(run.guest_spec()).await {
        Ok(Some(names)) => names,
        Ok(None) => return writes,
        Err(e) => {
            run.warn_args(format_args!(
                "stored records could not be listed ({}): records the upstream package kept under guest names were not checked",
                e.message
            ));
            return writes;
        }
    };
    // Each superseding version pushed onto `writes` as it is made, not gathered apart and moved
    // over (issue 32). None is ever a truth found below: those are keyed by vmid, these by name.
    for instance in names {
        if vmid_of_instance(&instance, prefix).is_some() {
            continue;
        }
        let Ok(Some(stored)) = run.host.read_record(&instance).await else {
            continue;
        };
        let vmid = stored
            .get("vmid")
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok());
        let truth = vmid.and_then(|vmid| {
            let truth_instance = run.guest_instance(vmid);
            writes
                .iter()
                .find(|w| w.spec == run.guest_spec() && w.instance == truth_instance)
        });
        if let (Some(vmid), Some(truth), true) = (vmid, truth, written_by_upstream(&stored)) {
            writes.push(supersede(run, instance, vmid, &truth.data));
        }
    }
    writes
}

/// The version written over name-keyed record `instance`: where guest `vmid`'s state now lives.
fn supersede<H: Host>(run: &Run<'_, H>, instance: String, vmid: u32, truth: &Value) -> RecordWrite {
    let holder = run.guest_instance(vmid);
    let note = format!(
        "the upstream @stateless/proxmox package kept this {}'s state under its name; {holder} holds it from now on and this record is no longer written",
        run.kind.noun()
    );
    run.info_args(format_args!("{instance}: superseded by {holder}"));
    // Values made as they are stored, one field after another (no serializer between).
    let present = truth.get("present").cloned().unwrap_or(Value::Bool(false));
    let mut record = Map::new();
    set(&mut record, "vmid", Value::from(vmid));
    set(&mut record, "present", present);
    put(&mut record, "status", Some("superseded"));
    set(&mut record, "supersededBy", Value::from(holder));
    set(&mut record, "tags", Value::Array(Vec::new()));
    set(
        &mut record,
        "warnings",
        Value::Array(vec![Value::from(note)]),
    );
    put(&mut record, "lastOperation", Some(run.method));
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    for field in ["name", "node"] {
        if let Some(value) = truth.get(field) {
            set(&mut record, field, value.clone());
        }
    }
    write_value(run.guest_spec(), instance, Value::Object(record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::testing::{run_method, Answer, ScriptedHost};
    use serde_json::json;

    /// A cluster of one node holding VM 100 `web`, running.
    fn cluster() -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([
                {"id": "node/pve1", "type": "node", "node": "pve1", "status": "online"},
                {"id": "qemu/100", "type": "qemu", "vmid": 100, "node": "pve1", "name": "web", "status": "running"}
            ]),
        )
        .data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"vmid": 100, "name": "web", "status": "running", "qmpstatus": "running"}),
        )
        .data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"name": "web", "smbios1": "uuid=00000000-0000-4000-8000-000000000100"}),
        )
        .data(
            "GET /nodes/pve1/qemu",
            json!([{"vmid": 100, "name": "web", "status": "running", "qmpstatus": "running"}]),
        );
        host
    }

    fn upstream_record(host: &ScriptedHost, instance: &str, data: Value) {
        host.records.borrow_mut().insert(instance.to_string(), data);
    }

    fn written<'a>(outcome: &'a crate::outcome::Outcome, instance: &str) -> Option<&'a Value> {
        outcome
            .writes
            .iter()
            .find(|w| w.instance == instance)
            .map(|w| &w.data)
    }

    #[test]
    fn instance_names_of_this_package_give_their_vmid() {
        assert_eq!(vmid_of_instance("vm-100", "vm"), Some(100));
        assert_eq!(vmid_of_instance("ct-200", "ct"), Some(200));
        assert_eq!(vmid_of_instance("web", "vm"), None);
        assert_eq!(vmid_of_instance("vm-", "vm"), None);
        assert_eq!(vmid_of_instance("vm-100-exec", "vm"), None);
        assert_eq!(vmid_of_instance("vm-99999999999", "vm"), None);
    }

    #[test]
    fn lookup_supersedes_the_upstream_record_kept_under_the_guests_name() {
        let host = cluster();
        upstream_record(
            &host,
            "web",
            json!({"vmid": 100, "name": "web", "node": "pve1", "status": "stopped", "lastOperation": "lookup", "recordedAt": "2026-06-12T00:00:00Z"}),
        );
        let outcome = run_method(&host, "qemu", "lookup", json!({"vmid": 100}));
        assert!(matches!(outcome.verdict, Verdict::Succeeded { .. }));
        assert_eq!(written(&outcome, "vm-100").unwrap()["status"], "running");
        let web = written(&outcome, "web").expect("web superseded");
        assert_eq!(web["status"], "superseded");
        assert_eq!(web["supersededBy"], "vm-100");
        assert_eq!(web["present"], true);
        // The whole superseding version, field by field: nothing more, nothing less.
        let mut fields: Vec<&str> = web
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "lastOperation",
                "name",
                "node",
                "present",
                "recordedAt",
                "status",
                "supersededBy",
                "tags",
                "vmid",
                "warnings"
            ]
        );
        assert_eq!(web["vmid"], 100);
        assert_eq!(web["name"], "web");
        assert_eq!(web["node"], "pve1");
        assert_eq!(web["tags"], json!([]));
        assert_eq!(web["lastOperation"], "lookup");
        assert!(web["recordedAt"].is_string());
        assert_eq!(
            web["warnings"],
            json!(["the upstream @stateless/proxmox package kept this VM's state under its name; vm-100 holds it from now on and this record is no longer written"])
        );
    }

    #[test]
    fn a_tombstoned_name_keyed_record_is_superseded_too() {
        let host = cluster();
        upstream_record(
            &host,
            "web",
            json!({"vmid": 100, "name": "web", "status": "running", "deletedAt": "2026-06-12T00:00:00Z", "deletedByMethod": "delete"}),
        );
        let outcome = run_method(&host, "qemu", "sync", json!({}));
        assert_eq!(written(&outcome, "web").unwrap()["supersededBy"], "vm-100");
    }

    #[test]
    fn a_record_this_package_wrote_is_never_superseded() {
        let host = cluster();
        upstream_record(
            &host,
            "web",
            json!({"vmid": 100, "present": true, "status": "superseded", "supersededBy": "vm-100"}),
        );
        let outcome = run_method(&host, "qemu", "lookup", json!({"vmid": 100}));
        assert!(written(&outcome, "web").is_none());
    }

    #[test]
    fn a_name_keyed_record_of_another_guest_is_left_alone() {
        let host = cluster();
        upstream_record(
            &host,
            "db",
            json!({"vmid": 101, "name": "db", "status": "running"}),
        );
        let outcome = run_method(&host, "qemu", "lookup", json!({"vmid": 100}));
        assert!(written(&outcome, "db").is_none());
    }

    #[test]
    fn sync_confirms_the_absence_of_a_guest_upstream_recorded_unknown() {
        let host = cluster();
        upstream_record(
            &host,
            "vm-150",
            json!({"vmid": 150, "node": "pve1", "status": "unknown", "lastOperation": "lookup", "recordedAt": "2026-06-12T00:00:00Z"}),
        );
        host.on("GET /cluster/nextid", [Answer::Data(json!("150"))]);
        let outcome = run_method(&host, "qemu", "sync", json!({}));
        let vm150 = written(&outcome, "vm-150").expect("vm-150 recorded");
        assert_eq!(vm150["present"], false);
        assert_eq!(vm150["status"], "absent");
    }
}
