//! `moveDisk`: one volume of a guest moved to another storage — a VM's disk (mirrored while it
//! runs) or `unusedN`, a container's `rootfs`/`mpN` (only while it is stopped: pve-container
//! `PVE/API2/LXC.pm` move_volume refuses a running one, and an `unusedN`). It succeeds only when the config
//! read back after the task holds the key on a new volume of the target storage and the source is
//! where the request put it: kept as an `unusedN` entry, or — with `delete` — in no config key and
//! no longer listed by its storage (a source PVE failed to free is only a warning in the task:
//! qemu-server `PVE/API2/Qemu.pm` move_vm_disk leaves it orphaned, pve-container's move_volume
//! keeps it as `unusedN`). A `format` asked for must be the one the volume got: qemu-server's
//! resolve_dst_disk_format falls back to the storage's default without refusing.

use crate::args::{is_storage_id, ArgError, Fields};
use crate::guest::evidence::{settled_after, Evidence};
use crate::guest::reference::GuestRef;
use crate::guest::snapshots::{snapshot_holds, tree_read, tree_request, Snapshot};
use crate::guest::storage::{storage_in, storage_refusal, unusable};
use crate::guest::volumes::{
    is_unused, listed_on_storage, listed_request, storage_of, unused_holding, volume_at,
};
use crate::host::Host;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::flex;
use crate::pve::property::property;
use crate::pve::responses::NodeStorage;
use crate::run::Run;
use serde_json::{Map, Value};

/// The arguments of `moveDisk`.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveArgs {
    pub target: GuestRef,
    pub disk: String,
    pub storage: String,
    /// Free the source volume instead of keeping it as `unusedN`.
    pub delete: bool,
    /// A VM disk's format on the target (`raw`, `qcow2`, `vmdk`); the storage's default otherwise.
    pub format: Option<String>,
}

/// Whether `key` names a volume `kind` can move: a disk, a VM's EFI or TPM volume, an `unusedN`
/// (qemu-server `PVE/QemuServer/Drive.pm` valid_drive_names_with_unused; pve-container's
/// `rootfs`, `mpN`).
fn movable(kind: GuestKind, key: &str) -> bool {
    // pve-container move_volume moves only configured volumes, never an unusedN.
    (is_unused(key) && kind == GuestKind::Qemu) || kind.is_volume_key(key)
}

impl MoveArgs {
    /// Always inlined into its one caller, the method's change (`change_course`): the arguments
    /// are then built in their place, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let disk = fields.text("disk")?.unwrap_or(kind.default_disk());
        if !movable(kind, disk) {
            let rule = format!("must match {} or unusedN", kind.disk_rule());
            return Err(ArgError::new("disk", rule));
        }
        let storage = fields.required_text("storage")?;
        if !is_storage_id(storage) {
            return Err(ArgError::new(
                "storage",
                "must be a storage id (^[a-z][a-z0-9-_.]*[a-z0-9]$, PVE's pve-storage-id)",
            ));
        }
        let format = fields.text("format")?;
        match (&format, kind) {
            (None, _) => {}
            (Some(_), GuestKind::Lxc) => {
                return Err(ArgError::new(
                    "format",
                    "is a VM disk's; a container volume keeps the storage's",
                ));
            }
            (Some(f), GuestKind::Qemu) if !["raw", "qcow2", "vmdk"].contains(f) => {
                return Err(ArgError::new("format", "must be raw, qcow2 or vmdk"));
            }
            _ => {}
        }
        Ok(MoveArgs {
            target,
            disk: disk.to_string(),
            storage: storage.to_string(),
            delete: fields.flag_or("delete", false)?,
            format: format.map(str::to_string),
        })
    }
}

/// The volume to move, from the config the sighting read; `None` when it is already where asked.
/// What PVE would refuse is refused here with its reason, before anything is sent.
fn source<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    args: &MoveArgs,
) -> Result<Option<String>, String> {
    let refuse = |why: String| Err(refusal(run, ev, args, why));
    let value = ev.config.get(&args.disk).and_then(flex::string_of);
    let Some(value) = value else {
        // qemu-server move_vm_disk: "disk '…' does not exist"; pve-container: "volume not found".
        return refuse(format!("its config has no {}", args.disk));
    };
    let Some(volid) = volume_at(&ev.config, &args.disk) else {
        // qemu-server move_vm_disk: "you can't move a cdrom" (an empty drive or a path neither).
        return refuse(format!("{} holds no storage volume ({value})", args.disk));
    };
    if run.kind == GuestKind::Lxc && ev.status.status == "running" {
        // pve-container PVE/API2/LXC.pm move_volume: a running container's volume is not moved.
        return refuse(
            "the container is running, and PVE moves a container's volume only while it is stopped"
                .into(),
        );
    }
    let format = format_of(&value, volid);
    let same_format = args.format.as_ref().is_none_or(|f| *f == format);
    match storage_of(volid) == args.storage && same_format {
        true => Ok(None),
        false => Ok(Some(volid.to_string())),
    }
}

/// The move course, once the guest is found ([`guest_change`]): the volume to move (none: already
/// where asked), what PVE would refuse read from the node, the move and its task, then the config
/// and the source's storage after it.
pub async fn course<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &MoveArgs,
) -> Result<String, String> {
    let Some(from) = source(run, ev, args)? else {
        return Ok(format!(
            "{} of {} is already on storage {} in that format; nothing was sent",
            args.disk,
            ev.label(run),
            args.storage
        ));
    };
    // What PVE refuses before it changes anything, read from the node: a target storage that
    // cannot take the volume, and — with `delete` — a source a snapshot still uses (qemu-server
    // `PVE/API2/Qemu.pm` move_vm_disk, pve-container `PVE/API2/LXC.pm` move_volume: "you can't
    // move a disk with snapshots and delete the source").
    // Sent from one await of this course, in turn (issue 32): the node's storages, then — with
    // `delete` — the snapshot list and each snapshot's config; each answer judged by a plain step.
    // `step` 0 is the storages, 1 the list, 2 + i the i-th snapshot.
    let mut snapshots: Vec<Snapshot> = Vec::new();
    let mut step: usize = 0;
    loop {
        let request = match (step, snapshots.get(step.wrapping_sub(2))) {
            (0, _) => endpoints::node_storage(&ev.at.node),
            (1, _) => tree_request(run.kind, &ev.at, false),
            (_, Some(Snapshot { name, .. })) => {
                endpoints::snapshot_config(&ev.at.node, run.kind, ev.at.vmid, name)
            }
            (_, None) => break,
        };
        let answer = run.pve().call(&request).await;
        match snapshots.get(step.wrapping_sub(2)) {
            _ if step == 0 => {
                let store = storage_in(answer, &ev.at.node, &args.storage);
                if let Some(why) = store_refusal(run.kind, args, store) {
                    return Err(refusal(run, ev, args, why));
                }
                if !args.delete {
                    break;
                }
            }
            // Each snapshot's config, in turn: the first that holds the source refuses the move.
            Some(Snapshot { name, .. }) => {
                if snapshot_holds(run, ev, &from, name, answer)? {
                    let why = format!(
                        "snapshot {name:?} uses {from}, and PVE does not move a disk with snapshots and delete the source"
                    );
                    return Err(refusal(run, ev, args, why));
                }
            }
            None => snapshots = tree_read(run, ev, answer)?.snapshots,
        }
        step += 1;
    }
    // Then the move, its task, and the config and the source's storage after it.
    // The request and its action end with their await: the later ones need not carry them, nor
    // the guest's label, written again where it is said (its place does not change).
    {
        let request = endpoints::move_volume(
            &ev.at.node,
            run.kind,
            ev.at.vmid,
            (&args.disk, &args.storage),
            args.delete,
            args.format.as_deref(),
        );
        ev.trail
            .run(
                &run.pve(),
                &request,
                format_args!(
                    "move {} of {} to storage {}",
                    args.disk,
                    ev.label(run),
                    args.storage
                ),
                None,
                false,
            )
            .await?;
    }
    settled_after(run, ev, "the move task ended successfully", true).await?;
    ev.reread_config(run).await?;
    let but = |why: String| format!("the move task ended successfully, but {why}");
    let landed = landed(&ev.config, args, &from).map_err(but)?;
    if args.delete {
        let request = listed_request(&ev.at.node, ev.at.vmid, &from);
        let answer = run.pve().call(&request).await;
        if listed_on_storage(&ev.at.node, &from, answer).map_err(but)? {
            let storage = storage_of(&from);
            return Err(but(format!(
                "storage {storage} still lists the source {from}"
            )));
        }
    }
    Ok(format!(
        "{} of {} moved to {landed}",
        args.disk,
        ev.label(run)
    ))
}

/// What moving the disk is refused with: `cannot move …: {why}; nothing was sent`.
fn refusal<H: Host>(run: &Run<'_, H>, ev: &Evidence, args: &MoveArgs, why: String) -> String {
    format!(
        "cannot move {} of {}: {why}; nothing was sent",
        args.disk,
        ev.label(run)
    )
}

/// Why the target storage, as the node lists it, cannot take the volume (or could not be read).
fn store_refusal(
    kind: GuestKind,
    args: &MoveArgs,
    store: Result<NodeStorage, String>,
) -> Option<String> {
    match store {
        Ok(store) => {
            target_refusal(kind, &store).map(|why| format!("storage {} {why}", args.storage))
        }
        Err(why) => Some(why),
    }
}

/// Why `store` cannot take the moved volume: a VM disk needs content `images` (qemu-server
/// move_vm_disk: "storage '…' does not support vm images"); a container volume `rootdir`, or a
/// zfspool, which takes a subvolume whatever its content (pve-container `PVE/LXC.pm` alloc_disk).
fn target_refusal(kind: GuestKind, store: &NodeStorage) -> Option<String> {
    match kind {
        GuestKind::Qemu => storage_refusal(store, "images"),
        GuestKind::Lxc if store.kind.as_deref() == Some("zfspool") => unusable(store),
        GuestKind::Lxc => storage_refusal(store, "rootdir"),
    }
}

/// A volume's format: its config value's `format=`, else as its name shows it (`….qcow2`), raw
/// for a block storage's.
fn format_of<'a>(value: &'a str, volid: &'a str) -> &'a str {
    if let Some(format) = property(value, "format") {
        return format;
    }
    match volid.rsplit_once('.') {
        Some((_, ext)) if ["qcow2", "vmdk", "raw"].contains(&ext) => ext,
        _ => "raw",
    }
}

/// Where the config read back after the move puts the disk and its source: the target volume
/// (with its size) and the source kept as `unusedN`, or in no key when `delete` freed it.
fn landed(config: &Map<String, Value>, args: &MoveArgs, from: &str) -> Result<String, String> {
    let to = volume_at(config, &args.disk)
        .filter(|to| storage_of(to) == args.storage && *to != from)
        .ok_or_else(|| format!("{} is not on storage {}", args.disk, args.storage))?;
    // Borrowed: `to` was found in it, so it is text.
    let value = config
        .get(&args.disk)
        .and_then(Value::as_str)
        .unwrap_or_default();
    let got = format_of(value, to);
    if let Some(asked) = args.format.as_ref().filter(|f| **f != got) {
        return Err(format!(
            "{to} is {got}, not {asked}: PVE used the storage's format instead (qemu-server resolve_dst_disk_format)"
        ));
    }
    // `<to> (<size>); the source <from>`, then where the source is: written part by part, one
    // text for every case (issue 32).
    let mut moved = to.to_string();
    if let Some(size) = property(value, "size") {
        moved.push_str(" (");
        moved.push_str(size);
        moved.push(')');
    }
    moved.push_str("; the source ");
    moved.push_str(from);
    let (ok, words, named, tail) = match (args.delete, unused_holding(config, from)) {
        (false, Some(key)) => (true, " is kept as ", key, ""),
        (false, None) => (
            false,
            " is in no unusedN entry: where it went is unknown",
            "",
            "",
        ),
        (true, Some(key)) => (
            false,
            " was not removed: PVE kept it as ",
            key,
            " (see the task's warnings)",
        ),
        (true, None) => (true, " is gone from storage ", storage_of(from), ""),
    };
    for part in [words, named, tail] {
        moved.push_str(part);
    }
    match ok {
        true => Ok(moved),
        false => Err(moved),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pve::read::FromJson;
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmmove:100:root@pam!t:";
    const OLD: &str = "local-lvm:vm-100-disk-0";
    const NEW: &str = "local-zfs:vm-100-disk-0";

    /// VM 100 on pve1 in `status`, whose config reads `before` and then `after`; the move's task
    /// ends OK and storage local-lvm lists `listed`.
    fn vm(status: &str, before: Value, after: Value, listed: Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": status}),
        );
        host.on(
            "GET /nodes/pve1/qemu/100/config",
            [Answer::Data(before), Answer::Data(after)],
        );
        host.data("POST /nodes/pve1/qemu/100/move_disk", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.data("GET /nodes/pve1/storage/local-lvm/content", listed);
        host.data("GET /nodes/pve1/storage", storages("images"));
        host.data(
            "GET /nodes/pve1/qemu/100/snapshot",
            json!([{"name": "current"}]),
        );
        host
    }

    /// The node's storages: local-lvm with images, local-zfs (a zfspool) with `zfs_content`.
    fn storages(zfs_content: &str) -> Value {
        json!([
            {"storage": "local-lvm", "type": "lvmthin", "content": "images,rootdir", "enabled": 1, "active": 1},
            {"storage": "local-zfs", "type": "zfspool", "content": zfs_content, "enabled": 1, "active": 1},
        ])
    }

    fn disk(volid: &str) -> String {
        format!("{volid},iothread=1,size=8G")
    }

    fn sent(host: &ScriptedHost) -> String {
        host.body_of("POST")
    }

    #[test]
    fn a_moved_disk_reads_back_on_the_target_with_the_source_kept_as_unused() {
        let before = json!({"scsi0": disk(OLD)});
        let after = json!({"scsi0": disk(NEW), "unused0": OLD});
        let host = vm("running", before, after, json!([]));
        let args = json!({"vmid": 100, "disk": "scsi0", "storage": "local-zfs"});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        let summary = summary_of(&outcome);
        assert!(
            summary.contains(&format!("moved to {NEW} (8G)")),
            "{summary}"
        );
        assert!(
            summary.contains(&format!("{OLD} is kept as unused0")),
            "{summary}"
        );
        assert_eq!(sent(&host), "disk=scsi0&storage=local-zfs");
    }

    #[test]
    fn with_delete_the_source_must_be_gone_from_its_storage() {
        let before = json!({"scsi0": disk(OLD)});
        let after = json!({"scsi0": disk(NEW)});
        let host = vm("stopped", before.clone(), after.clone(), json!([]));
        let args = json!({"vmid": 100, "storage": "local-zfs", "delete": true});
        let outcome = run_method(&host, "qemu", "moveDisk", args.clone());
        assert!(summary_of(&outcome).contains("is gone from storage local-lvm"));
        assert_eq!(sent(&host), "disk=scsi0&storage=local-zfs&delete=1");
        let listed = json!([{"volid": OLD, "size": 8}]);
        let host = vm("stopped", before, after, listed);
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        assert!(
            failure_of(&outcome).contains("still lists the source"),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_source_pve_failed_to_free_fails_the_move_with_delete() {
        let before = json!({"scsi0": disk(OLD)});
        let after = json!({"scsi0": disk(NEW), "unused0": OLD});
        let host = vm("stopped", before, after, json!([]));
        let args = json!({"vmid": 100, "storage": "local-zfs", "delete": true});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        let message = failure_of(&outcome);
        assert!(
            message.contains("was not removed: PVE kept it as unused0"),
            "{message}"
        );
    }

    #[test]
    fn a_format_pve_did_not_give_the_volume_fails_the_move() {
        let before = json!({"scsi0": disk(OLD)});
        let after = json!({"scsi0": disk(NEW), "unused0": OLD});
        let host = vm("stopped", before, after, json!([]));
        let args = json!({"vmid": 100, "storage": "local-zfs", "format": "qcow2"});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        assert!(
            failure_of(&outcome).contains("is raw, not qcow2"),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_task_that_ends_ok_with_the_disk_still_on_the_source_fails() {
        let before = json!({"scsi0": disk(OLD)});
        let host = vm("stopped", before.clone(), before, json!([]));
        let args = json!({"vmid": 100, "storage": "local-zfs"});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        let message = failure_of(&outcome);
        assert!(
            message.contains("scsi0 is not on storage local-zfs"),
            "{message}"
        );
    }

    #[test]
    fn a_disk_already_on_the_target_succeeds_without_a_request() {
        let host = vm("stopped", json!({"scsi0": disk(NEW)}), json!({}), json!([]));
        let args = json!({"vmid": 100, "storage": "local-zfs"});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        assert!(summary_of(&outcome).contains("nothing was sent"));
        assert!(!host.requests.borrow().iter().any(|r| r.method == "POST"));
    }

    #[test]
    fn what_pve_refuses_is_refused_before_anything_is_sent() {
        let cdrom = json!({"ide2": "local:iso/d.iso,media=cdrom"});
        let cases = [
            (
                "qemu",
                "running",
                json!({}),
                "scsi0",
                "its config has no scsi0",
            ),
            ("qemu", "stopped", cdrom, "ide2", "holds no storage volume"),
            (
                "lxc",
                "running",
                json!({"rootfs": OLD}),
                "rootfs",
                "only while it is stopped",
            ),
        ];
        for (model, status, config, key, words) in cases {
            let host = ScriptedHost::new();
            host.data(
                "GET /cluster/resources",
                json!([{"vmid": 100, "type": model, "node": "pve1"}]),
            );
            host.data(
                &format!("GET /nodes/pve1/{model}/100/status/current"),
                json!({"status": status}),
            );
            host.data(&format!("GET /nodes/pve1/{model}/100/config"), config);
            let args = json!({"vmid": 100, "disk": key, "storage": "local-zfs"});
            let outcome = run_method(&host, model, "moveDisk", args);
            let message = failure_of(&outcome);
            assert!(message.contains(words), "{model} {key}: {message}");
            assert!(!host.requests.borrow().iter().any(|r| r.method == "POST"));
        }
    }

    #[test]
    fn a_target_storage_that_takes_no_vm_images_is_refused_before_anything_is_sent() {
        let before = json!({"scsi0": disk(OLD)});
        let host = vm("stopped", before.clone(), before, json!([]));
        host.set("GET /nodes/pve1/storage", storages("rootdir"));
        let args = json!({"vmid": 100, "storage": "local-zfs"});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        let message = failure_of(&outcome);
        assert!(
            message.contains("storage local-zfs does not allow content images"),
            "{message}"
        );
        assert!(!host.requests.borrow().iter().any(|r| r.method == "POST"));
    }

    #[test]
    fn a_container_volume_may_move_to_a_zfspool_without_rootdir_content() {
        let store = json!({"storage": "local-zfs", "type": "zfspool", "content": "images"});
        let zfspool = NodeStorage::from_json(&store).unwrap();
        assert_eq!(target_refusal(GuestKind::Lxc, &zfspool), None);
        assert!(target_refusal(GuestKind::Qemu, &zfspool).is_none());
    }

    #[test]
    fn delete_of_a_source_a_snapshot_uses_is_refused_before_anything_is_sent() {
        let before = json!({"scsi0": disk(OLD)});
        let host = vm("stopped", before.clone(), before, json!([]));
        host.set(
            "GET /nodes/pve1/qemu/100/snapshot",
            json!([{"name": "early"}, {"name": "current", "parent": "early"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/snapshot/early/config",
            json!({"scsi0": disk(OLD), "snaptime": 1}),
        );
        let args = json!({"vmid": 100, "storage": "local-zfs", "delete": true});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        let message = failure_of(&outcome);
        assert!(
            message.contains("snapshot \"early\" uses local-lvm:vm-100-disk-0"),
            "{message}"
        );
        assert!(!host.requests.borrow().iter().any(|r| r.method == "POST"));
    }

    #[test]
    fn delete_goes_ahead_when_no_snapshot_uses_the_source() {
        let before = json!({"scsi0": disk(OLD)});
        let after = json!({"scsi0": disk(NEW)});
        let host = vm("stopped", before, after, json!([]));
        host.set(
            "GET /nodes/pve1/qemu/100/snapshot",
            json!([{"name": "early"}, {"name": "current", "parent": "early"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/snapshot/early/config",
            json!({"scsi0": "local-lvm:vm-100-disk-7,size=8G"}),
        );
        let args = json!({"vmid": 100, "storage": "local-zfs", "delete": true});
        let outcome = run_method(&host, "qemu", "moveDisk", args);
        assert!(summary_of(&outcome).contains("is gone from storage local-lvm"));
    }

    #[test]
    fn where_the_source_went_is_said_whole_in_each_case() {
        let args = |delete| MoveArgs {
            target: GuestRef {
                vmid: Some(100),
                name: None,
            },
            disk: "scsi0".into(),
            storage: "local-zfs".into(),
            delete,
            format: None,
        };
        let kept = json!({"scsi0": disk(NEW), "unused0": OLD});
        let gone = json!({"scsi0": NEW});
        let read = |config: &Value, delete| landed(config.as_object().unwrap(), &args(delete), OLD);
        let moved = format!("{NEW} (8G); the source {OLD}");
        assert_eq!(
            read(&kept, false),
            Ok(format!("{moved} is kept as unused0"))
        );
        assert_eq!(
            read(&kept, true),
            Err(format!(
                "{moved} was not removed: PVE kept it as unused0 (see the task's warnings)"
            ))
        );
        let moved = format!("{NEW}; the source {OLD}");
        assert_eq!(
            read(&gone, false),
            Err(format!(
                "{moved} is in no unusedN entry: where it went is unknown"
            ))
        );
        assert_eq!(
            read(&gone, true),
            Ok(format!("{moved} is gone from storage local-lvm"))
        );
    }

    #[test]
    fn bad_arguments_are_refused_naming_the_field() {
        let cases = [
            ("qemu", json!({"disk": "net0"}), "disk"),
            ("qemu", json!({"disk": "unused01"}), "disk"),
            ("lxc", json!({"disk": "scsi0"}), "disk"),
            ("lxc", json!({"disk": "unused0"}), "disk"),
            ("qemu", json!({"storage": "local lvm"}), "storage"),
            ("qemu", json!({"storage": null}), "storage"),
            ("qemu", json!({"format": "vdi"}), "format"),
            ("lxc", json!({"format": "raw"}), "format"),
            ("qemu", json!({"delete": "yes"}), "delete"),
        ];
        for (model, bad, field) in cases {
            let mut args = json!({"vmid": 100, "storage": "local-zfs"});
            for (k, v) in bad.as_object().unwrap() {
                match v {
                    Value::Null => args.as_object_mut().unwrap().remove(k),
                    v => args.as_object_mut().unwrap().insert(k.clone(), v.clone()),
                };
            }
            let host = ScriptedHost::new();
            let outcome = run_method(&host, model, "moveDisk", args);
            let message = failure_of(&outcome);
            assert!(message.contains(&format!("`{field}`")), "{bad}: {message}");
            assert!(host.requests.borrow().is_empty());
        }
    }
}
