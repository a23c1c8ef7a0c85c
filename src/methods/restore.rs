//! `restore`: a guest restored from a backup archive, successful only when the restored guest is
//! seen unlocked with the archive's configuration and its disks exist.
//!
//! 1. The archive must be listed in its storage's `backup` content with a size above 0, and be a
//!    backup of this model's kind; the configuration it holds is read
//!    (`GET /nodes/{node}/vzdump/extractconfig`) — that is what the restored guest must show.
//! 2. The VMID: `vmid`, or a free one claimed by the restore request itself (as `clone` claims).
//!    A `vmid` that holds a guest is restored over only with `force: true`, and only while that
//!    guest is stopped and not protected (PVE refuses otherwise: qemu-server PVE/API2/Qemu.pm
//!    `create_vm` "vm is running", pve-container PVE/API2/LXC.pm `create` "can't overwrite running
//!    container", both `check_protection`); a lock on it is waited out first.
//! 3. VMs: `POST /nodes/{node}/qemu` with `archive=<volid>` (`qmrestore`); containers:
//!    `POST /nodes/{node}/lxc` with `ostemplate=<volid>` and `restore=1` (`vzrestore`). Both write
//!    the config under `lock: create` before the task (`create_and_lock_config`) and drop it at the
//!    end; a failed qemu restore keeps a config behind ("VM n state is NOT cleaned up").
//! 4. After the task the guest must be unlocked within the budget (a lock left behind is not a
//!    restored guest), every setting of the archive's config must read back (the read-back rule of
//!    `guest::config`; a NIC's MAC may differ with `unique`), and every disk of the archive must be
//!    in the config — on `storage` when given — with the archive's size and listed by its storage.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::guest::backups::{other_kind, ArchiveConfig, BackupVolid};
use crate::guest::config::shows;
use crate::guest::create_course::{Before, NewDisk, NewGuest};
use crate::guest::evidence::Evidence;
use crate::guest::placement::Placement;
use crate::guest::provision::option;
use crate::guest::root_only::Caller;
use crate::guest::vmid_claim::VmidChoice;
use crate::guest::volumes::storage_of;
use crate::host::Host;
use crate::methods::start::create_then_start;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::flex;
use crate::pve::property::{size_of, storage_volume};
use crate::pve::request::push_param;
use crate::pve::request::PveRequest;
use crate::pve::responses::StorageVolume;
use crate::run::Run;
use serde_json::{Map, Value};
use std::fmt::{self, Write};
use std::future::Future;

/// Keys a restore does not carry over as they were: PVE's bookkeeping, regenerated on restore.
/// One text, split on use: not a table of texts (issue 32).
const NOT_RESTORED: &str =
    "lock digest parent snaptime vmstate meta vmgenid runningmachine runningcpu";

/// The arguments of `restore`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreArgs {
    pub archive: BackupVolid,
    pub vmid: VmidChoice,
    pub storage: Option<String>,
    pub force: bool,
    pub unique: bool,
}

/// The fields in the order they are checked: the archive, the storage, then the archive's own
/// rule ([`BackupVolid::fault`]); the VMID after them, then the flags (`force`, `unique`).
const FIRST: [Spec; 3] = [
    Spec::new("archive", Kind::RequiredText),
    Spec::new("storage", Kind::OptionalSegment),
    Spec::new("archive", Kind::RequiredText).rule(BackupVolid::fault),
];

impl RestoreArgs {
    /// Always inlined into its one caller, [`new_restore`] (issue 32).
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let [archive, storage, ..] = fields.read_table(&FIRST)?;
        let vmid = VmidChoice::parse(&fields)?;
        // Two flags read as they are: a table of two costs more than the two calls (issue 32).
        let force = fields.flag_or("force", false)?;
        let unique = fields.flag_or("unique", false)?;
        Ok(RestoreArgs {
            archive: BackupVolid::of(archive.text.unwrap_or_default()),
            vmid,
            storage: storage.owned(),
            force,
            unique,
        })
    }
}

/// Whether `key: value` is a volume a restore allocates anew (a disk, a container mount point),
/// rather than a setting kept as text (a CD-ROM, a bind mount, `none`).
fn allocated(kind: GuestKind, key: &str, value: &str) -> bool {
    kind.is_volume_key(key) && storage_volume(value).is_some()
}

/// A NIC's property as compared across a restore with `unique`, which gives the NIC a new MAC:
/// `virtio=BC:24:…` keeps `virtio`, `hwaddr=…` goes.
fn nic_part(part: &str) -> Option<&str> {
    match part.split_once('=') {
        Some((name, v)) if is_mac(v) => match name {
            "hwaddr" | "macaddr" => None,
            model => Some(model),
        },
        _ => Some(part),
    }
}

/// Whether `v` is a MAC address: six parts joined by five colons (`BC:24:11:00:01:20`), counted
/// by the splitting code the module has anyway (a loop of its own measured 20 bytes more, issue
/// 32).
fn is_mac(v: &str) -> bool {
    v.len() == 17 && v.split(':').count() == 6
}

/// A disk's option as compared across a restore: all but its size (judged on its own).
fn disk_option(part: &str) -> Option<&str> {
    (!part.starts_with("size=")).then_some(part)
}

/// A property string's parts after the first `skip`, each as `part_of` keeps it, as a sorted set.
/// One function for NICs and disks: each copy of the sorting code costs the module (issue 32).
fn sorted_parts(value: &str, skip: usize, part_of: fn(&str) -> Option<&str>) -> Vec<&str> {
    let mut parts = Vec::new();
    for part in value.split(',').skip(skip) {
        if let Some(part) = part_of(part) {
            parts.push(part);
        }
    }
    crate::order::sort_by(&mut parts, &Ord::cmp);
    parts
}

/// Whether two property strings hold the same parts ([`sorted_parts`]).
fn same_parts(a: &str, b: &str, skip: usize, part_of: fn(&str) -> Option<&str>) -> bool {
    let (a, b) = (
        sorted_parts(a, skip, part_of),
        sorted_parts(b, skip, part_of),
    );
    // Part by part: std's slice comparison is a generic copy of its own (issue 32).
    a.len() == b.len() && (0..a.len()).all(|i| a.get(i) == b.get(i))
}

/// Appends one difference to the list a message names from `start` on, `; ` between them:
/// written in place, not formatted apart and copied (issue 32).
fn note(problems: &mut String, start: usize, what: fmt::Arguments) {
    if problems.len() > start {
        problems.push_str("; ");
    }
    // Writing to a String cannot fail.
    let _ = problems.write_fmt(what);
}

/// What `label`, a restored guest, shows that its archive's config does not: `Err` the message
/// naming each difference; `Ok` the disks `(key, volume id)` to look for on their storages.
/// `storage` is where the restore put every volume, when not where the archive had them
/// ([`target_storage`]). The differences are written into the message itself, which is left
/// unused when there are none: not listed apart and formatted again (issue 32).
fn compare(
    kind: GuestKind,
    label: &str,
    archive: &ArchiveConfig,
    restored: &Map<String, Value>,
    storage: Option<&str>,
    unique: bool,
) -> Result<Vec<(String, String)>, String> {
    // Written piece by piece: no formatting for two texts (issue 32).
    let mut problems = String::from(NOT_RESTORED_START);
    problems.push_str(label);
    problems.push_str(" is not the archive's guest: ");
    let start = problems.len();
    let mut disks = Vec::new();
    for (key, wanted) in &archive.0 {
        if NOT_RESTORED.split(' ').any(|k| k == key) || key.starts_with("unused") {
            continue;
        }
        let seen = restored.get(key).and_then(flex::string_of);
        // The difference chosen, then noted once (issue 32).
        let what = match seen.as_ref() {
            None => format_args!("`{key}` is not set (the archive holds {wanted:?})"),
            Some(seen) if allocated(kind, key, wanted) => {
                if !disk_problem(&mut problems, start, key, wanted, seen, storage) {
                    disks.push((key.clone(), volume_of(seen).to_string()));
                }
                continue;
            }
            Some(seen) => {
                let same = match unique && key.starts_with("net") {
                    true => same_parts(wanted, seen, 0, nic_part),
                    false => shows(kind, key, wanted, seen),
                };
                if same {
                    continue;
                }
                format_args!(
                    "`{key}` is {:?}, not the archive's {wanted:?}",
                    seen.as_str()
                )
            }
        };
        note(&mut problems, start, what);
    }
    if problems.len() == start {
        return Ok(disks);
    }
    problems.push_str(CHECK_LOG);
    Err(problems)
}

/// The volume id a disk's value starts with (`local-lvm:vm-1-disk-0,size=8G` → its first part).
fn volume_of(value: &str) -> &str {
    value.split_once(',').map_or(value, |(volume, _)| volume)
}

/// Notes in `problems` why a restored disk is not the archive's — on another storage than asked,
/// another size, other options — and says whether it noted one.
fn disk_problem(
    problems: &mut String,
    start: usize,
    key: &str,
    wanted: &str,
    seen: &str,
    storage: Option<&str>,
) -> bool {
    let expected_store = storage.unwrap_or_else(|| storage_of(wanted));
    // Which of the archive's it is not (`None`: its storage), then one note for each way it
    // differs: `disk `scsi0` is "…", not <how>` — two texts, not one per way (issue 32).
    let what = if storage_of(seen) != expected_store {
        None
    } else if size_of(wanted).is_some_and(|w| size_of(seen).is_none_or(|s| s != w)) {
        Some("the archive's size")
    } else if !same_parts(wanted, seen, 1, disk_option) {
        Some("with the archive's options")
    } else {
        return false;
    };
    // One note, its end chosen (issue 32).
    let how = match what {
        None => format_args!("on storage {expected_store}"),
        Some(_) => format_args!("{} ({wanted:?})", what.unwrap_or_default()),
    };
    note(
        problems,
        start,
        format_args!("disk `{key}` is {seen:?}, not {how}"),
    );
    true
}

/// A restore as the course of `create` runs it (`guest::create_course`): its arguments and the
/// kind of guest it restores.
struct Restore {
    args: RestoreArgs,
    kind: GuestKind,
}

/// Runs `restore`: the module doc's steps, through the course of `create`, every one that ends the
/// run after a guest was seen ending in that guest's record.
pub fn restore<'a, H: Host>(
    run: &'a Run<'a, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, H> {
    create_then_start(run, new_restore(run.kind, args))
}

/// `restore`'s new guest of `kind`, from its arguments. Dispatch's argument check reads them
/// through it too, so the parser has one caller and builds the arguments in their box (issue 32).
pub fn new_restore(kind: GuestKind, args: &Value) -> Result<Box<dyn NewGuest>, ArgError> {
    RestoreArgs::parse(args).map(|args| Box::new(Restore { args, kind }) as Box<dyn NewGuest>)
}

impl NewGuest for Restore {
    fn vmid(&self) -> VmidChoice {
        self.args.vmid
    }

    /// Nothing: a restored guest is named as its archive holds it.
    fn name(&self) -> &str {
        ""
    }

    fn refusal(&self, _caller: Caller) -> Option<String> {
        let rest = format_args!(": restore it with that model; nothing was changed");
        other_kind(&self.args.archive, self.kind, rest)
    }

    fn request(&self, node: &str, vmid: u32, before: &Before) -> PveRequest {
        let (kind, args) = (self.kind, &self.args);
        restore_request(
            kind,
            node,
            params(kind, args, &before.archive, vmid, before.over),
        )
    }

    fn action(&self, _noun: &str, node: &str, vmid: u32, before: &Before) -> String {
        let over_on = before.over.then_some(node);
        action(self.kind, &self.args.archive.volid, vmid, over_on)
    }

    fn placement(&self) -> Option<Placement<'_>> {
        None
    }

    fn task(&self) -> &'static str {
        "restore"
    }

    fn archive(&self) -> Option<&BackupVolid> {
        Some(&self.args.archive)
    }

    fn holder_refusal(&self, label: &str, holder: &Evidence) -> Option<String> {
        refusal(label, holder, self.args.force)
    }

    fn cannot(&self, why: &str) -> String {
        cannot_restore(self.kind, &self.args, why)
    }

    fn judge_restored(
        &self,
        label: &str,
        config: &Map<String, Value>,
        archive: &ArchiveConfig,
    ) -> Result<Vec<(String, String)>, String> {
        let storage = target_storage(self.kind, &self.args, archive);
        compare(self.kind, label, archive, config, storage, self.args.unique)
    }

    fn judge_store(
        &self,
        label: &str,
        disks: &[(String, String)],
        store: &str,
        volumes: &[StorageVolume],
    ) -> Result<(), String> {
        match unlisted(disks, store, volumes) {
            Some((key, volid)) => {
                let what =
                    format_args!("disk `{key}` ({volid}) of {label} is not on storage {store}");
                Err(said(NOT_RESTORED_START, what, CHECK_LOG))
            }
            None => Ok(()),
        }
    }

    fn restored(
        &self,
        how: &str,
        label: &str,
        archive: &ArchiveConfig,
        disks: &[(String, String)],
    ) -> String {
        summary(how, label, &self.args, archive, disks)
    }

    /// Judged against the archive's config instead (`judge_restored`).
    fn settings(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    fn disks(&self) -> Option<Vec<NewDisk<'_>>> {
        None
    }

    fn start(&self) -> bool {
        false
    }
}

/// An archive that cannot be restored, and `why`.
fn cannot_restore(kind: GuestKind, args: &RestoreArgs, why: &str) -> String {
    format!(
        "cannot restore {} as {} {}: {why}",
        args.archive.volid,
        kind.noun(),
        args.vmid.describe()
    )
}

/// The storage the restore allocates every volume on, when not where the archive had them: the
/// `storage` asked for; for a container always one — pve-container restores every mount point
/// onto `storage`, default `local` (PVE/API2/LXC.pm `create`, "storage only mode"), so without one
/// asked, the archive's rootfs storage keeps them where the root disk was.
fn target_storage<'a>(
    kind: GuestKind,
    args: &'a RestoreArgs,
    config: &'a ArchiveConfig,
) -> Option<&'a str> {
    let asked = args.storage.as_deref();
    match (kind, asked) {
        (GuestKind::Lxc, None) => option(&config.0, "rootfs").map(storage_of),
        _ => asked,
    }
}

/// The parameters of the restore request for `vmid`.
fn params(
    kind: GuestKind,
    args: &RestoreArgs,
    config: &ArchiveConfig,
    vmid: u32,
    over: bool,
) -> Vec<(String, String)> {
    // The VMID's text moved in, not copied (issue 32).
    let mut params = Vec::new();
    params.push(("vmid".to_string(), vmid.to_string()));
    let mut add = |key: &str, value: &str| push_param(&mut params, key, value);
    let volid = &args.archive.volid;
    match kind {
        GuestKind::Qemu => add("archive", volid),
        GuestKind::Lxc => {
            add("ostemplate", volid);
            add("restore", "1");
        }
    }
    if let Some(storage) = target_storage(kind, args, config) {
        add("storage", storage);
    }
    if over {
        add("force", "1");
    }
    if args.unique {
        add("unique", "1");
    }
    params
}

fn restore_request(kind: GuestKind, node: &str, params: Vec<(String, String)>) -> PveRequest {
    match kind {
        GuestKind::Qemu => endpoints::qemu_create(node, params),
        GuestKind::Lxc => endpoints::lxc_create(node, params),
    }
}

/// The restore as messages name it: `restore <volid> as VM <vmid>`, and ` over the existing guest
/// on node <node>` when it replaces one.
fn action(kind: GuestKind, volid: &str, vmid: u32, over_on: Option<&str>) -> String {
    let mut action = format!("restore {volid} as {} {vmid}", kind.noun());
    if let Some(node) = over_on {
        action.push_str(" over the existing guest on node ");
        action.push_str(node);
    }
    action
}

/// Why the guest holding the VMID may not be restored over (the module doc's rule: `force: true`,
/// stopped, not protected); `None` when it may — its lock is waited out then.
fn refusal(label: &str, ev: &Evidence, force: bool) -> Option<String> {
    // The status compared as text, the name read only by the refusal that quotes it (issue 32).
    let status = ev.status.status.as_str();
    // One refusal chosen, then written once (issue 32).
    let why = if !force {
        format_args!(
            "VMID {} holds {label} ({:?}): a restore replaces its config and disks with the archive's — pass force: true to restore over it",
            ev.at.vmid,
            ev.status.name.as_deref().unwrap_or_default()
        )
    } else if status != "stopped" {
        format_args!(
            "{label} is {status}: PVE refuses to restore over a running guest — stop it first"
        )
    } else if ev.config.get("protection").and_then(flex::bool_of) == Some(true) {
        format_args!(
            "{label} has protection enabled: PVE refuses to restore over it (check_protection) — clear `protection` first"
        )
    } else {
        return None;
    };
    Some(said("", why, UNCHANGED))
}

/// How every message of a restore whose task ended well without its effect starts: what the
/// restored guest shows instead follows, then [`CHECK_LOG`] (or nothing yet).
const NOT_RESTORED_START: &str = "the restore task ended successfully, but ";

/// `start`, `what` and `end` in one text: every message of the method written by this one
/// function, its fixed ends shared texts (issue 32).
fn said(start: &str, what: fmt::Arguments, end: &str) -> String {
    let mut message = String::from(start);
    // Writing to a String cannot fail.
    let _ = message.write_fmt(what);
    message.push_str(end);
    message
}

/// How every refusal that changed nothing ends.
const UNCHANGED: &str = "; nothing was changed";

/// The end of every message [`NOT_RESTORED_START`] starts.
const CHECK_LOG: &str = " — check the restore task's log";

/// The first of `disks` on `store` that its listing `volumes` does not hold.
fn unlisted<'a>(
    disks: &'a [(String, String)],
    store: &str,
    volumes: &[StorageVolume],
) -> Option<&'a (String, String)> {
    for disk in disks {
        let on_store = disk
            .1
            .strip_prefix(store)
            .is_some_and(|v| v.starts_with(':'));
        if on_store && !volumes.iter().any(|v| v.volid == disk.1) {
            return Some(disk);
        }
    }
    None
}

/// What a restore that held: `<how>VM 130 on node pve1 is restored from …: 8 settings read back
/// as the archive holds them; disks scsi0 local-lvm:vm-130-disk-0`.
fn summary(
    how: &str,
    label: &str,
    args: &RestoreArgs,
    config: &ArchiveConfig,
    disks: &[(String, String)],
) -> String {
    let what = format_args!(
        "{label} is restored from {}: {} settings read back as the archive holds them; disks ",
        args.archive.volid,
        config.0.len()
    );
    let mut summary = said(how, what, "");
    // The disks appended in place, not listed apart and copied (issue 32).
    let start = summary.len();
    for (key, volid) in disks {
        if summary.len() > start {
            summary.push_str(", ");
        }
        summary.push_str(key);
        summary.push(' ');
        summary.push_str(volid);
    }
    if disks.is_empty() {
        summary.push_str("none");
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    const ARCHIVE: &str = "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst";
    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmrestore:130:root@pam!t:";
    const CONFIG: &str = "boot: order=scsi0\ncores: 2\nmemory: 2048\nname: web\nnet0: virtio=BC:24:11:00:01:20,bridge=vmbr0\nscsi0: local-lvm:vm-120-disk-0,size=8G\nide2: none,media=cdrom\ntags: swamp\n\n[base]\nmemory: 1024\n";

    fn archive(host: &ScriptedHost) {
        host.data(
            "GET /nodes/pve1/storage/local/content",
            json!([{"volid": ARCHIVE, "vmid": 120, "subtype": "qemu", "size": 4096}]),
        );
        host.data("GET /nodes/pve1/vzdump/extractconfig", json!(CONFIG));
    }

    fn restored(host: &ScriptedHost, config: Value, locks: &[Option<&str>]) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 130, "type": "qemu", "node": "pve1", "name": "web"}]),
        );
        host.data("POST /nodes/pve1/qemu", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.data("GET /nodes/pve1/qemu/130/config", config);
        host.on(
            "GET /nodes/pve1/qemu/130/status/current",
            locks.iter().map(|lock| {
                let mut status = json!({"status": "stopped", "name": "web", "tags": "swamp"});
                if let Some(lock) = lock {
                    status["lock"] = json!(lock);
                }
                Answer::Data(status)
            }),
        );
        host.data(
            "GET /nodes/pve1/storage/local-lvm/content",
            json!([{"volid": "local-lvm:vm-130-disk-0", "size": 8u64 << 30}]),
        );
    }

    fn as_restored() -> Value {
        json!({"boot": "order=scsi0", "cores": 2, "memory": 2048, "name": "web",
               "net0": "virtio=BC:24:11:00:01:20,bridge=vmbr0", "scsi0": "local-lvm:vm-130-disk-0,size=8G",
               "ide2": "none,media=cdrom", "tags": "swamp", "digest": "abc"})
    }

    /// `restore` of [`ARCHIVE`] as VM 130, with `extra` arguments.
    fn run(host: &ScriptedHost, extra: Value) -> Outcome {
        let mut args = json!({"archive": ARCHIVE, "vmid": 130});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        run_method(host, "qemu", "restore", args)
    }

    fn free_130(host: &ScriptedHost) {
        host.on("GET /cluster/nextid", [Answer::Data(json!("130"))]);
    }

    #[test]
    fn a_restored_guest_with_the_archives_config_and_disks_is_success() {
        let host = ScriptedHost::new();
        archive(&host);
        free_130(&host);
        // Absent first (the target check), then present after the task.
        host.on("GET /cluster/resources", [Answer::Data(json!([]))]);
        restored(&host, as_restored(), &[None]);
        let outcome = run(&host, json!({}));
        assert!(
            outcome.is_success(),
            "{outcome:?} {:?}",
            host.routes_called()
        );
        assert_eq!(outcome.writes[0].instance, "vm-130");
        let body = host.body_of("POST");
        assert!(
            body.contains("archive=local%3Abackup%2Fvzdump-qemu-120"),
            "{body}"
        );
        assert!(!body.contains("force"), "{body}");
    }

    #[test]
    fn a_restore_that_leaves_the_guest_locked_fails_naming_the_lock() {
        let host = ScriptedHost::new();
        archive(&host);
        free_130(&host);
        restored(&host, as_restored(), &[Some("create")]);
        let outcome = run(&host, json!({"taskTimeoutSec": 5}));
        let message = failure_of(&outcome);
        assert!(message.contains("still locked: create"), "{message}");
        assert_eq!(outcome.writes[0].data["lock"], "create");
    }

    #[test]
    fn a_restored_guest_missing_a_disk_or_a_setting_fails_naming_them() {
        let host = ScriptedHost::new();
        archive(&host);
        free_130(&host);
        let mut config = as_restored();
        config.as_object_mut().unwrap().remove("scsi0");
        config["memory"] = json!(512);
        restored(&host, config, &[None]);
        let message = failure_of(&run(&host, json!({}))).to_string();
        assert!(message.contains("`scsi0` is not set"), "{message}");
        assert!(message.contains("`memory` is \"512\""), "{message}");
    }

    #[test]
    fn an_existing_guest_is_restored_over_only_with_force_and_when_stopped() {
        for (force, status, ok, says) in [
            (false, "stopped", false, "pass force: true"),
            (
                true,
                "running",
                false,
                "refuses to restore over a running guest",
            ),
            (true, "stopped", true, "restored over the existing guest"),
        ] {
            let host = ScriptedHost::new();
            archive(&host);
            host.on(
                "GET /cluster/nextid",
                [Answer::Error(
                    400,
                    "Parameter verification failed. (vmid: VM 130 already exists)".into(),
                )],
            );
            // The guest found first, then the restored one.
            host.on(
                "GET /nodes/pve1/qemu/130/status/current",
                [Answer::Data(
                    json!({"status": status, "name": "old", "tags": "swamp"}),
                )],
            );
            restored(&host, as_restored(), &[None]);
            let outcome = run(&host, json!({"force": force}));
            assert_eq!(outcome.is_success(), ok, "{force} {status}: {outcome:?}");
            let posted = host
                .routes_called()
                .iter()
                .any(|r| r == "POST /nodes/pve1/qemu");
            assert_eq!(posted, ok, "{force} {status}");
            let text = match &outcome.verdict {
                crate::outcome::Verdict::Succeeded { summary } => summary.clone(),
                crate::outcome::Verdict::Failed { message } => message.clone(),
            };
            assert!(text.contains(says), "{text}");
        }
    }

    #[test]
    fn an_archive_not_listed_or_of_the_other_kind_changes_nothing() {
        let host = ScriptedHost::new();
        free_130(&host);
        host.data("GET /nodes/pve1/storage/local/content", json!([]));
        assert!(failure_of(&run(&host, json!({}))).contains("lists no backup"));
        let outcome = run_method(&host, "lxc", "restore", json!({"archive": ARCHIVE}));
        assert!(failure_of(&outcome).contains("is a backup of a VM"));
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_container_restore_puts_every_volume_on_one_storage() {
        let config = ArchiveConfig::parse(
            "rootfs: local-lvm:vm-300-disk-0,size=8G\nmp0: local-zfs:subvol-300-disk-1,mp=/data,size=2G\n",
        );
        let archive = json!({"archive": "local:backup/vzdump-lxc-300-2026_12_01-10_00_00.tar"});
        let args = RestoreArgs::parse(&archive).unwrap();
        let lxc = target_storage(GuestKind::Lxc, &args, &config);
        assert_eq!(lxc, Some("local-lvm"));
        assert_eq!(target_storage(GuestKind::Qemu, &args, &config), None);
        let restored = "local-lvm:vm-310-disk-1,mp=/data,size=2G";
        let wanted = "local-zfs:subvol-300-disk-1,mp=/data,size=2G";
        let mut noted = String::new();
        assert!(!disk_problem(&mut noted, 0, "mp0", wanted, restored, lxc));
        assert!(disk_problem(&mut noted, 0, "mp0", wanted, restored, None));
    }

    #[test]
    fn a_restored_disk_is_noted_by_the_first_way_it_differs() {
        let wanted = "local-lvm:vm-120-disk-0,size=8G,discard=on";
        let note = |seen: &str| {
            let mut noted = String::new();
            disk_problem(&mut noted, 0, "scsi0", wanted, seen, None).then_some(noted)
        };
        assert_eq!(note("local-lvm:vm-130-disk-0,discard=on,size=8G"), None);
        assert_eq!(
            note("local-zfs:vm-130-disk-0,size=4G").as_deref(),
            Some(r#"disk `scsi0` is "local-zfs:vm-130-disk-0,size=4G", not on storage local-lvm"#)
        );
        assert_eq!(
            note("local-lvm:vm-130-disk-0,size=4G,discard=on").as_deref(),
            Some(
                r#"disk `scsi0` is "local-lvm:vm-130-disk-0,size=4G,discard=on", not the archive's size ("local-lvm:vm-120-disk-0,size=8G,discard=on")"#
            )
        );
        assert_eq!(
            note("local-lvm:vm-130-disk-0,size=8G").as_deref(),
            Some(
                r#"disk `scsi0` is "local-lvm:vm-130-disk-0,size=8G", not with the archive's options ("local-lvm:vm-120-disk-0,size=8G,discard=on")"#
            )
        );
    }

    #[test]
    fn the_archive_config_stops_at_the_first_snapshot() {
        let config = ArchiveConfig::parse(CONFIG);
        assert_eq!(option(&config.0, "memory"), Some("2048"));
        assert_eq!(config.0.len(), 8);
        assert!(allocated(
            GuestKind::Qemu,
            "scsi0",
            "local-lvm:vm-1-disk-0,size=8G"
        ));
        assert!(!allocated(GuestKind::Qemu, "ide2", "none,media=cdrom"));
        assert!(!allocated(GuestKind::Lxc, "mp0", "/srv,mp=/srv"));
        assert_eq!(
            sorted_parts("virtio=BC:24:11:00:01:20,bridge=vmbr0", 0, nic_part),
            vec!["bridge=vmbr0", "virtio"]
        );
    }
}
