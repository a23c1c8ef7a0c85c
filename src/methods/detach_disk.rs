//! `detachDisk`: one volume taken out of a guest's config through `setConfig`'s engine
//! (`delete=<disk>`), judged and recorded as a config change. PVE keeps a detached disk's volume
//! as the next `unusedN` entry (qemu-server `PVE/QemuServer.pm` vmconfig_register_unused_drive,
//! pve-container `PVE/LXC/Config.pm` update_pct_config → add_unused_volume), which the read-back
//! must show; with `destroy` the volume is freed instead (a VM's `force=1`, qemu-server
//! `PVE/API2/Qemu.pm` $update_vm_api) and must be gone from the config and from its storage's
//! list. Removing an `unusedN` entry always frees its volume, so it asks for `destroy: true`.

use crate::args::{ArgError, Fields};
use crate::guest::config::ConfigSnapshot;
use crate::guest::volumes::{is_unused, owner_of, unused_holding, volume_at};
use crate::methods::change_course::GuestChange;
use crate::methods::set_config::{ConfigChange, SetConfigArgs};
use crate::pve::endpoints::GuestKind;
use serde_json::{Map, Value};
use std::fmt::Write;

/// The arguments of `detachDisk`.
#[derive(Debug, Clone, PartialEq)]
pub struct DetachArgs {
    pub base: SetConfigArgs,
    pub disk: String,
    pub destroy: bool,
}

impl DetachArgs {
    /// Always inlined into its one caller, the method's boxed change: the arguments are then
    /// built in their box, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let base = SetConfigArgs::of_guest(&fields)?;
        let disk = fields.required_text("disk")?;
        // A container's root volume is never detached (pve-container: rootfs is not deletable).
        let detachable = is_unused(disk) || (kind.is_volume_key(disk) && disk != "rootfs");
        if !detachable {
            let rule = match kind {
                GuestKind::Qemu => {
                    "must be a disk (scsiN, sataN, virtioN, ideN, efidisk0, tpmstate0) or unusedN"
                }
                GuestKind::Lxc => {
                    "must be a mount point mpN or unusedN (the rootfs is never detached)"
                }
            };
            return Err(ArgError::new("disk", rule));
        }
        let destroy = fields.flag_or("destroy", false)?;
        if is_unused(disk) && !destroy {
            return Err(ArgError::new(
                "destroy",
                format!("must be true to remove {disk}: PVE destroys the volume of an unusedN entry it removes"),
            ));
        }
        if destroy && kind == GuestKind::Lxc && !is_unused(disk) {
            return Err(ArgError::new(
                "destroy",
                "is for a VM disk or an unusedN: a container's mount point is detached first (kept as unusedN), then that unusedN removed with destroy: true (pve-container's config update has no force)",
            ));
        }
        Ok(DetachArgs {
            base,
            disk: disk.to_string(),
            destroy,
        })
    }
}

/// Whether guest `vmid` owns `volid` (a name of no guest counts as its own).
fn owns(vmid: u32, volid: &str) -> bool {
    owner_of(volid).is_none_or(|owner| owner == vmid)
}

/// What the read-back shows of the detached volume (`volid`: what the key held before) of guest
/// `vmid`, written onto the `summary`, and the volume freed. PVE keeps only a guest's own volume
/// as `unusedN` (qemu-server vmconfig_register_unused_drive); another guest's is only taken out
/// of the config.
fn judged<'c>(
    args: &DetachArgs,
    vmid: u32,
    volid: Option<&'c str>,
    after: &ConfigSnapshot,
    summary: &mut String,
) -> Result<Option<&'c str>, String> {
    let Some(volid) = volid else {
        // A CD-ROM or an empty drive: no volume to keep or free.
        return Ok(None);
    };
    // Writing to a String cannot fail.
    if after.pending_delete.contains(&args.disk) {
        _ = write!(summary, "; {volid} stays attached until then");
        return Ok(None);
    }
    if !owns(vmid, volid) {
        return match unused_holding(&after.current, volid) {
            None => {
                _ = write!(
                    summary,
                    "; {volid} belongs to another guest and is left to it"
                );
                Ok(None)
            }
            Some(key) => Err(format!(
                "{volid} of another guest is still in the config as {key}"
            )),
        };
    }
    let kept = unused_holding(&after.current, volid);
    match (args.destroy || is_unused(&args.disk), kept) {
        (false, Some(key)) => {
            _ = write!(summary, "; its volume {volid} is kept as {key}");
            Ok(None)
        }
        (false, None) => Err(format!(
            "its volume {volid} is in no unusedN entry of the config read back: where it went is unknown"
        )),
        (true, Some(key)) => Err(format!("its volume {volid} was not destroyed: PVE kept it as {key}")),
        (true, None) => {
            _ = write!(summary, "; its volume {volid} is destroyed");
            Ok(Some(volid))
        }
    }
}

impl ConfigChange for DetachArgs {
    fn base(&self) -> &SetConfigArgs {
        &self.base
    }

    fn fill(
        &self,
        kind: GuestKind,
        vmid: u32,
        config: &Map<String, Value>,
        changes: &mut Vec<(String, String)>,
    ) -> Result<(), String> {
        if !config.contains_key(&self.disk) {
            return Err(format!(
                "{} is not in the config of the {}",
                self.disk,
                kind.noun()
            ));
        }
        // qemu-server try_deallocate_drive frees only the guest's own volume.
        let foreign = volume_at(config, &self.disk).filter(|v| !owns(vmid, v));
        if let (true, Some(volid)) = (self.destroy, foreign) {
            return Err(format!(
                "{volid} belongs to another guest, and PVE destroys only a guest's own volumes (qemu-server try_deallocate_drive): detach it without destroy"
            ));
        }
        changes.push(("delete".to_string(), self.disk.clone()));
        if self.destroy && !is_unused(&self.disk) {
            changes.push(("force".to_string(), "1".to_string()));
        }
        Ok(())
    }

    fn shown<'c>(
        &self,
        vmid: u32,
        before: &'c Map<String, Value>,
        after: &ConfigSnapshot,
        summary: &mut String,
    ) -> Result<Option<&'c str>, String> {
        judged(self, vmid, volume_at(before, &self.disk), after, summary)
    }
}

/// `detachDisk`'s change, from its arguments (run by `change_course::guest_change`).
pub fn detach_disk(kind: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    Ok(GuestChange::Config(Box::new(DetachArgs::parse(
        kind, args,
    )?)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use percent_encoding::percent_decode_str;
    use serde_json::{json, Value};

    const VOL: &str = "local-lvm:vm-100-disk-1";

    /// Guest 100 of `model` on pve1, stopped, whose config holds `config` and whose read-back
    /// after the change shows `rows`; storage local-lvm lists `listed`.
    fn guest(model: &str, config: Value, rows: Value, listed: Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        let base = format!("/nodes/pve1/{model}/100");
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": model, "node": "pve1"}]),
        );
        host.data(
            &format!("GET {base}/status/current"),
            json!({"status": "stopped"}),
        );
        host.data(&format!("GET {base}/config"), config);
        host.data(&format!("PUT {base}/config"), Value::Null);
        host.on(&format!("GET {base}/pending"), [Answer::Data(rows)]);
        host.data("GET /nodes/pve1/storage/local-lvm/content", listed);
        host
    }

    fn sent(host: &ScriptedHost) -> String {
        let body = host.body_of("PUT");
        percent_decode_str(&body).decode_utf8_lossy().into_owned()
    }

    #[test]
    fn a_detached_disk_reads_back_as_an_unused_entry_holding_its_volume() {
        let config = json!({"scsi1": format!("{VOL},size=4G")});
        let rows = json!([{"key": "unused0", "value": VOL}]);
        let host = guest("qemu", config, rows, json!([]));
        let outcome = run_method(
            &host,
            "qemu",
            "detachDisk",
            json!({"vmid": 100, "disk": "scsi1"}),
        );
        assert!(
            summary_of(&outcome).contains(&format!("{VOL} is kept as unused0")),
            "{outcome:?}"
        );
        assert_eq!(sent(&host), "delete=scsi1");
    }

    #[test]
    fn a_detached_volume_in_no_unused_entry_fails_the_method() {
        let config = json!({"scsi1": format!("{VOL},size=4G")});
        let host = guest("qemu", config, json!([]), json!([]));
        let outcome = run_method(
            &host,
            "qemu",
            "detachDisk",
            json!({"vmid": 100, "disk": "scsi1"}),
        );
        assert!(
            failure_of(&outcome).contains("in no unusedN entry"),
            "{outcome:?}"
        );
    }

    #[test]
    fn destroy_sends_force_and_the_volume_must_be_gone_from_its_storage() {
        let config = json!({"scsi1": format!("{VOL},size=4G")});
        let args = json!({"vmid": 100, "disk": "scsi1", "destroy": true});
        let host = guest("qemu", config.clone(), json!([]), json!([]));
        let outcome = run_method(&host, "qemu", "detachDisk", args.clone());
        assert!(summary_of(&outcome).contains("is destroyed"), "{outcome:?}");
        assert_eq!(sent(&host), "delete=scsi1&force=1");
        let host = guest("qemu", config, json!([]), json!([{"volid": VOL}]));
        let outcome = run_method(&host, "qemu", "detachDisk", args);
        assert!(failure_of(&outcome).contains("still lists"), "{outcome:?}");
    }

    #[test]
    fn removing_an_unused_entry_destroys_its_volume_and_asks_for_destroy() {
        let config = json!({"unused0": VOL});
        let host = guest("lxc", config.clone(), json!([]), json!([]));
        let args = json!({"vmid": 100, "disk": "unused0", "destroy": true});
        let outcome = run_method(&host, "lxc", "detachDisk", args);
        assert!(summary_of(&outcome).contains("is destroyed"), "{outcome:?}");
        assert_eq!(sent(&host), "delete=unused0");
        let host = guest("lxc", config, json!([]), json!([]));
        let outcome = run_method(
            &host,
            "lxc",
            "detachDisk",
            json!({"vmid": 100, "disk": "unused0"}),
        );
        assert!(failure_of(&outcome).contains("`destroy`"));
        assert!(host.requests.borrow().is_empty());
    }

    #[test]
    fn another_guests_volume_is_left_to_it_and_never_destroyed() {
        let theirs = "local-lvm:vm-101-disk-0";
        let config = json!({"scsi1": theirs});
        let host = guest("qemu", config.clone(), json!([]), json!([]));
        let outcome = run_method(
            &host,
            "qemu",
            "detachDisk",
            json!({"vmid": 100, "disk": "scsi1"}),
        );
        assert!(
            summary_of(&outcome).contains("belongs to another guest and is left to it"),
            "{outcome:?}"
        );
        let host = guest("qemu", config, json!([]), json!([]));
        let args = json!({"vmid": 100, "disk": "scsi1", "destroy": true});
        let outcome = run_method(&host, "qemu", "detachDisk", args);
        assert!(
            failure_of(&outcome).contains("try_deallocate_drive"),
            "{outcome:?}"
        );
        assert!(!host.requests.borrow().iter().any(|r| r.method == "PUT"));
    }

    #[test]
    fn a_pending_detach_is_reported_pending_with_the_volume_still_attached() {
        let config = json!({"scsi1": VOL});
        let rows = json!([{"key": "scsi1", "value": VOL, "delete": 1}]);
        let host = guest("qemu", config, rows, json!([]));
        let outcome = run_method(
            &host,
            "qemu",
            "detachDisk",
            json!({"vmid": 100, "disk": "scsi1"}),
        );
        let summary = summary_of(&outcome);
        assert!(summary.contains("pending until a restart"), "{summary}");
        assert!(summary.contains("stays attached until then"), "{summary}");
    }

    #[test]
    fn a_disk_not_in_the_config_is_refused_before_anything_is_sent() {
        let host = guest("qemu", json!({}), json!([]), json!([]));
        let outcome = run_method(
            &host,
            "qemu",
            "detachDisk",
            json!({"vmid": 100, "disk": "scsi1"}),
        );
        assert!(failure_of(&outcome).contains("scsi1 is not in the config"));
        assert!(!host.requests.borrow().iter().any(|r| r.method == "PUT"));
    }

    #[test]
    fn bad_arguments_are_refused_naming_the_field() {
        let cases = [
            ("qemu", json!({"disk": "net0"}), "disk"),
            ("lxc", json!({"disk": "rootfs"}), "disk"),
            (
                "qemu",
                json!({"disk": "unused256", "destroy": true}),
                "disk",
            ),
            ("lxc", json!({"disk": "mp0", "destroy": true}), "destroy"),
            ("qemu", json!({"disk": "scsi0", "destroy": 1}), "destroy"),
        ];
        for (model, args, field) in cases {
            let mut args = args;
            args["vmid"] = json!(100);
            let host = ScriptedHost::new();
            let outcome = run_method(&host, model, "detachDisk", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{outcome:?}"
            );
        }
    }
}
