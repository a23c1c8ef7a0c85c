//! `suspend`: a managed guest (the `swamp` tag; `force: true` overrides) suspended, successful only
//! when `status/current` shows it: a VM to RAM `qmpstatus: paused`; with `toDisk` stopped and
//! locked `suspended` (its state saved to a volume on `stateStorage` or PVE's choice); a container
//! stopped after its checkpoint. The sequence is `guest::power::change_power`'s.

use crate::args::{ArgError, Fields, Kind, Read, Spec};
use crate::guest::power::Change;
use crate::pve::endpoints::GuestKind;

/// The fields after the guest, in order (one table walk, issue 32); a container reads only the
/// first.
const FIELDS: [Spec; 3] = [
    Spec::new("force", Kind::Flag(false)),
    Spec::new("toDisk", Kind::Flag(false)),
    Spec::new("stateStorage", Kind::OptionalSegment),
];

/// The arguments of `suspend` after the guest, as `change_power` runs them. A container has no
/// suspend to disk: like zod, its model ignores `toDisk` and `stateStorage` (unread: `false`, none).
pub fn change(kind: GuestKind, fields: &Fields) -> Result<(bool, Change), ArgError> {
    let table = match kind {
        GuestKind::Qemu => &FIELDS[..],
        GuestKind::Lxc => &FIELDS[..1],
    };
    let mut read = [Read::default(); 3];
    fields.read_all(table, &mut read)?;
    let [force, to_disk, storage] = read;
    let to_disk = to_disk.int != 0;
    // PVE's schema: statestorage `requires => 'todisk'`.
    if storage.text.is_some() && !to_disk {
        return Err(ArgError::new("stateStorage", "needs toDisk: true"));
    }
    let storage = storage.owned();
    Ok((force.int != 0, Change::Suspend { to_disk, storage }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_vm_reads_its_disk_fields_and_a_container_ignores_them() {
        use crate::guest::power::{power_args, Change};
        use crate::pve::endpoints::GuestKind;
        let read = |kind, args: Value| {
            power_args(kind, &args, super::change)
                .map(|a| (a.force, a.change))
                .map_err(|e| e.to_string())
        };
        let on_disk = |storage: Option<&str>| Change::Suspend {
            to_disk: true,
            storage: storage.map(str::to_string),
        };
        let args = json!({"vmid": 100, "force": true, "toDisk": true, "stateStorage": "local"});
        assert_eq!(
            read(GuestKind::Qemu, args),
            Ok((true, on_disk(Some("local"))))
        );
        let args = json!({"vmid": 100, "toDisk": true});
        assert_eq!(read(GuestKind::Qemu, args), Ok((false, on_disk(None))));
        let args = json!({"vmid": 100, "stateStorage": "local"});
        assert_eq!(
            read(GuestKind::Qemu, args),
            Err("invalid argument `stateStorage`: needs toDisk: true".to_string())
        );
        let args = json!({"vmid": 100, "toDisk": true, "stateStorage": "a/b"});
        assert!(read(GuestKind::Qemu, args)
            .unwrap_err()
            .contains("`stateStorage`"));
        let args = json!({"vmid": 300, "toDisk": "x", "stateStorage": "a/b"});
        let in_ram = Change::Suspend {
            to_disk: false,
            storage: None,
        };
        assert_eq!(read(GuestKind::Lxc, args), Ok((false, in_ram)));
    }

    use crate::outcome::Outcome;
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const STATUS: &str = "GET /nodes/pve1/qemu/100/status/current";
    const SUSPEND: &str = "POST /nodes/pve1/qemu/100/status/suspend";
    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmpause:100:root@pam!t:";

    /// VM 100 on pve1 tagged swamp, whose status reads answer `states` in turn (the last repeats),
    /// and whose suspend task ends OK.
    fn vm(states: &[Value]) -> ScriptedHost {
        let host = ScriptedHost::new();
        let tagged = |s: &Value| {
            let mut s = s.clone();
            s["tags"] = json!("swamp");
            Answer::Data(s)
        };
        host.on(STATUS, states.iter().map(tagged));
        host.data(SUSPEND, json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host
    }

    fn suspend(host: &ScriptedHost, args: Value) -> Outcome {
        let mut args = args;
        args["vmid"] = json!(100);
        args["taskTimeoutSec"] = json!(10);
        run_method(host, "qemu", "suspend", args)
    }

    fn posted(host: &ScriptedHost) -> Vec<String> {
        let routes = host.routes_called();
        routes
            .into_iter()
            .filter(|r| r.starts_with("POST"))
            .collect()
    }

    #[test]
    fn a_running_vm_is_suspended_to_ram_when_qmpstatus_shows_paused() {
        let running = json!({"status": "running", "qmpstatus": "running"});
        let paused = json!({"status": "running", "qmpstatus": "paused"});
        let host = vm(&[running, paused]);
        let outcome = suspend(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(posted(&host), vec![SUSPEND]);
        assert_eq!(host.body_of("POST"), "");
        assert_eq!(outcome.writes[0].data["qmpStatus"], "paused");
        assert_eq!(outcome.writes[0].data["lastTask"], UPID);
    }

    #[test]
    fn a_suspend_task_that_ends_ok_without_the_pause_fails_naming_what_was_seen() {
        let running = json!({"status": "running", "qmpstatus": "running"});
        let host = vm(&[running]);
        let message = failure_of(&suspend(&host, json!({}))).to_string();
        assert!(
            message.contains("did not reach status running with qmpstatus paused"),
            "{message}"
        );
        assert!(message.contains("qmpstatus running"), "{message}");
    }

    #[test]
    fn to_disk_sends_the_state_storage_and_needs_the_suspended_lock() {
        let running = json!({"status": "running", "qmpstatus": "running"});
        let saving = json!({"status": "running", "qmpstatus": "running", "lock": "suspending"});
        let saved = json!({"status": "stopped", "qmpstatus": "stopped", "lock": "suspended"});
        let host = vm(&[running, saving, saved]);
        let outcome = suspend(&host, json!({"toDisk": true, "stateStorage": "local-lvm"}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(host.body_of("POST"), "todisk=1&statestorage=local-lvm");
        assert!(summary_of(&outcome).contains("suspended to disk"));
        assert_eq!(outcome.writes[0].data["lock"], "suspended");
    }

    #[test]
    fn a_vm_already_suspended_to_disk_needs_nothing_sent() {
        let saved = json!({"status": "stopped", "qmpstatus": "stopped", "lock": "suspended"});
        let host = vm(&[saved]);
        let outcome = suspend(&host, json!({"toDisk": true}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(posted(&host).is_empty());
        assert!(host.elapsed_ms() < 1_000.0, "its lock is not waited out");
    }

    #[test]
    fn a_stopped_vm_is_refused_with_pves_reason_before_anything_is_sent() {
        let host = vm(&[json!({"status": "stopped", "qmpstatus": "stopped"})]);
        let message = failure_of(&suspend(&host, json!({}))).to_string();
        assert!(message.contains("VM 100 not running"), "{message}");
        assert!(posted(&host).is_empty());
    }

    #[test]
    fn suspending_a_vm_suspended_to_disk_to_ram_advises_resuming_it() {
        let saved = json!({"status": "stopped", "qmpstatus": "stopped", "lock": "suspended"});
        let host = vm(&[saved]);
        let message = failure_of(&suspend(&host, json!({}))).to_string();
        assert!(
            message.contains("not running (suspended to disk: resume it first)"),
            "{message}"
        );
        assert!(!message.contains("start it first"), "{message}");
        assert!(posted(&host).is_empty());
    }

    #[test]
    fn an_ha_managed_vm_is_not_suspended_to_disk() {
        let ha = json!({"status": "running", "qmpstatus": "running", "ha": {"managed": 1, "state": "started"}});
        let host = vm(&[ha]);
        let message = failure_of(&suspend(&host, json!({"toDisk": true}))).to_string();
        assert!(
            message.contains("Cannot suspend HA managed VM to disk"),
            "{message}"
        );
        assert!(posted(&host).is_empty());
    }

    #[test]
    fn an_unmanaged_vm_is_refused_unless_forced() {
        let host = ScriptedHost::new();
        host.data(STATUS, json!({"status": "running", "qmpstatus": "running"}));
        let outcome = suspend(&host, json!({}));
        assert!(failure_of(&outcome).starts_with("refusing to suspend VM 100"));
        assert!(posted(&host).is_empty());
    }

    #[test]
    fn a_state_storage_needs_to_disk() {
        let host = ScriptedHost::new();
        let message = failure_of(&suspend(&host, json!({"stateStorage": "local"}))).to_string();
        assert!(message.contains("stateStorage"), "{message}");
        assert!(host.routes_called().is_empty());
    }

    #[test]
    fn a_container_is_suspended_when_its_task_ended_and_it_shows_stopped() {
        let host = ScriptedHost::new();
        let status = "GET /nodes/pve1/lxc/300/status/current";
        let upid = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:vzsuspend:300:root@pam!t:";
        host.on(
            status,
            [
                Answer::Data(json!({"status": "running", "tags": "swamp"})),
                Answer::Data(json!({"status": "stopped", "tags": "swamp"})),
            ],
        );
        host.data("POST /nodes/pve1/lxc/300/status/suspend", json!(upid));
        host.data(
            &format!("GET /nodes/pve1/tasks/{upid}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let args = json!({"vmid": 300, "toDisk": true, "taskTimeoutSec": 10});
        let outcome = run_method(&host, "lxc", "suspend", args);
        assert!(outcome.is_success(), "{outcome:?}");
        // A container has no suspend to disk: the VM's option is ignored, as zod drops it.
        assert_eq!(host.body_of("POST"), "");
        assert!(summary_of(&outcome).contains("checkpointed"));
    }

    #[test]
    fn a_stopped_container_is_refused_it_may_or_may_not_hold_a_checkpoint() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/lxc/300/status/current",
            json!({"status": "stopped", "tags": "swamp"}),
        );
        let outcome = run_method(&host, "lxc", "suspend", json!({"vmid": 300}));
        assert!(failure_of(&outcome).contains("CT 300 not running"));
    }
}
