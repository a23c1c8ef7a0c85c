//! Which endpoints each method calls, and what a run's arguments name for their checks
//! (`guest::permissions` judges them): the guests, storages, archive, bridges and config options,
//! and the request parameters the checks' conditions ask about.

use crate::args::Fields;
use crate::catalog::{method_of, Method};
use crate::guest::backups::BackupVolid;
use crate::guest::permissions::{requires, Guest, Requires, Role, Subjects};
use crate::guest::placement::{allocation_of, numbered};
use crate::pve::endpoints::GuestKind;
use crate::pve::property::property;
use crate::pve::upid::Upid;
use serde_json::Value;

/// One endpoint a method calls: always, or only in some runs (`when`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// What calling it requires: [`requires`] of `"<METHOD> <template>"` with `{kind}` for
    /// `qemu`/`lxc`, a path from `/{vmid}` the guest's own, under `/nodes/{node}/{kind}` (left out
    /// here, as in the privilege table: issue 32).
    pub requires: Requires,
    /// Its `{vmid}`, and whether its `{storage}` is the backup archive's.
    pub role: Role,
    /// When only some runs call it: its line of [`WHENS`], 0 when every run does ([`Need::when`]).
    when: u8,
}

impl Need {
    /// `None`: every run calls it; else when (e.g. "when the guest runs").
    pub fn when(&self) -> Option<&'static str> {
        let line = WHENS.split('\n').nth(usize::from(self.when));
        line.filter(|_| self.when > 0)
    }
}

/// When only some runs call an endpoint, as `preflight` reports it: one a line. A need names its
/// condition by its text and keeps the number of its line here, found as the build compiles (a
/// text not here fails the build): a need is 5 bytes, not 8 or 12 (issue 32).
const WHENS: &str = "
with destroy, or of an unusedN
when an option differs
when it is no HA resource yet
with delete, of an HA resource
when the rule does not exist yet
when the rule differs
with delete, of a rule
for a rule that differs
for a rule to add
for a rule too many
for a set to make, or its comment
with delete
for an entry to add
for an entry that differs
for an entry not declared
for an entry naming an alias (not dc/)
for an entry naming an alias (not guest/)
for an alias to make
for an alias that differs
with delete, per snapshot
with waitForIp or waitReady
with resume: true, for a paused or suspended VM
with a filter instead of a upid
with forceStopAfter
when the guest runs
for the disks (without it they are recorded unavailable)
for the enterprise repository (without it recorded unavailable)
when the template lacks the swamp tag
with waitReady
with cloudInit
for a file over 46,080 bytes or a mode
with start
with start or waitReady";

/// The line of `when` in [`WHENS`].
const fn when_line(when: &str) -> u8 {
    let (text, when) = (WHENS.as_bytes(), when.as_bytes());
    let (mut line, mut start) = (0, 0);
    while start <= text.len() {
        let mut end = start;
        while end < text.len() && text[end] != b'\n' {
            end += 1;
        }
        if end - start == when.len() {
            let mut i = 0;
            while i < when.len() && text[start + i] == when[i] {
                i += 1;
            }
            if i == when.len() && line > 0 {
                return line;
            }
        }
        (line, start) = (line + 1, end + 1);
    }
    panic!("a condition WHENS does not have")
}

/// The condition of the task endpoints' check (pve_inside_checks.json): the task was started by
/// another user than the caller (pve-manager `PVE/API2/Tasks.pm` $check_task_user).
pub const ANOTHER_USERS_TASK: &str = "another user's task";

const ACTED: Role = Role {
    guest: Guest::Acted,
    archive: false,
};

const MADE: Role = Role {
    guest: Guest::Made,
    archive: false,
};

const fn always(endpoint: &str) -> Need {
    Need {
        requires: requires(endpoint),
        role: ACTED,
        when: 0,
    }
}

const fn sometimes(endpoint: &str, when: &str) -> Need {
    Need {
        requires: requires(endpoint),
        role: ACTED,
        when: when_line(when),
    }
}

const fn made(endpoint: &str, when: Option<&str>) -> Need {
    Need {
        requires: requires(endpoint),
        role: MADE,
        when: match when {
            Some(when) => when_line(when),
            None => 0,
        },
    }
}

/// A read on the backup archive's storage.
const fn on_archive(endpoint: &str) -> Need {
    Need {
        requires: requires(endpoint),
        role: Role {
            guest: Guest::Acted,
            archive: true,
        },
        when: 0,
    }
}

const STATUS: &str = "GET /{vmid}/status/current";
const CONFIG: &str = "GET /{vmid}/config";
const PENDING: &str = "GET /{vmid}/pending";
const SET_CONFIG: &str = "PUT /{vmid}/config";
const STOP: &str = "POST /{vmid}/status/stop";
const SNAPSHOTS: &str = "GET /{vmid}/snapshot";
const EXEC: &str = "POST /{vmid}/agent/exec";
const EXEC_STATUS: &str = "GET /{vmid}/agent/exec-status";
const FILE_READ: &str = "GET /{vmid}/agent/file-read";
const INTERFACES: &str = "GET /{vmid}/agent/network-get-interfaces";
const START: &str = "POST /{vmid}/status/start";
const RESUME: &str = "POST /{vmid}/status/resume";
const FIREWALL_OPTIONS: &str = "GET /{vmid}/firewall/options";
const HA_RESOURCE: &str = "GET /cluster/ha/resources/{sid}";
const HA_CURRENT: &str = "GET /cluster/ha/status/current";
const STORAGE_CONTENT: &str = "GET /nodes/{node}/storage/{storage}/content";

/// The endpoints method `method` of `kind` guests calls (as templates, which
/// `guest::permissions::requirement` looks up for `kind`); `None` for a method the model lacks.
/// `Some(&[])` for one that needs no privilege (lists filter by what the token may audit).
pub fn needs(kind: GuestKind, method: &str) -> Option<&'static [Need]> {
    use GuestKind::{Lxc, Qemu};
    use Method as M;
    // Matched on the catalog's method, not its name: one jump, not a comparison per name (issue 32).
    let list: &[Need] = match (kind, method_of(kind, method)?) {
        (_, M::Lookup) => const { &[always(STATUS), always(CONFIG)] },
        (_, M::Sync) => const { &[always("GET /nodes/{node}/{kind}")] },
        (_, M::GetConfig) => const { &[always(PENDING)] },
        (_, M::SetConfig | M::SetNic | M::RemoveNic | M::AttachDisk) => {
            const { &[always(STATUS), always(SET_CONFIG), always(PENDING)] }
        }
        (_, M::DetachDisk) => {
            const {
                &[
                    always(STATUS),
                    always(SET_CONFIG),
                    always(PENDING),
                    sometimes(STORAGE_CONTENT, "with destroy, or of an unusedN"),
                ]
            }
        }
        (_, M::FirewallOptions) => {
            const {
                &[
                    always(STATUS),
                    always(CONFIG),
                    always(FIREWALL_OPTIONS),
                    sometimes("PUT /{vmid}/firewall/options", "when an option differs"),
                    always("GET /cluster/firewall/options"),
                ]
            }
        }
        (_, M::HaResource) => {
            const {
                &[
                    always(STATUS),
                    always(CONFIG),
                    always(HA_RESOURCE),
                    always(HA_CURRENT),
                    sometimes(
                        "POST /cluster/ha/resources",
                        "when it is no HA resource yet",
                    ),
                    sometimes("PUT /cluster/ha/resources/{sid}", "when an option differs"),
                    sometimes(
                        "DELETE /cluster/ha/resources/{sid}",
                        "with delete, of an HA resource",
                    ),
                ]
            }
        }
        (_, M::HaRule) => {
            const {
                &[
                    always("GET /version"),
                    always(STATUS),
                    always(CONFIG),
                    always("GET /cluster/ha/rules/{rule}"),
                    always(HA_CURRENT),
                    sometimes("POST /cluster/ha/rules", "when the rule does not exist yet"),
                    sometimes("PUT /cluster/ha/rules/{rule}", "when the rule differs"),
                    sometimes("DELETE /cluster/ha/rules/{rule}", "with delete, of a rule"),
                ]
            }
        }
        (_, M::HaStatus) => {
            const {
                &[
                    always(STATUS),
                    always(CONFIG),
                    always(HA_RESOURCE),
                    always(HA_CURRENT),
                ]
            }
        }
        (_, M::FirewallRules) => {
            const {
                &[
                    always(STATUS),
                    always(CONFIG),
                    always("GET /{vmid}/firewall/rules"),
                    sometimes(
                        "PUT /{vmid}/firewall/rules/{pos}",
                        "for a rule that differs",
                    ),
                    sometimes("POST /{vmid}/firewall/rules", "for a rule to add"),
                    sometimes("DELETE /{vmid}/firewall/rules/{pos}", "for a rule too many"),
                    always(FIREWALL_OPTIONS),
                    always("GET /cluster/firewall/options"),
                ]
            }
        }
        (_, M::FirewallIpset) => {
            const {
                &[
                    always(STATUS),
                    always(CONFIG),
                    always("GET /{vmid}/firewall/ipset"),
                    always("GET /{vmid}/firewall/ipset/{name}"),
                    sometimes(
                        "POST /{vmid}/firewall/ipset",
                        "for a set to make, or its comment",
                    ),
                    sometimes("DELETE /{vmid}/firewall/ipset/{name}", "with delete"),
                    sometimes("POST /{vmid}/firewall/ipset/{name}", "for an entry to add"),
                    sometimes(
                        "PUT /{vmid}/firewall/ipset/{name}/{cidr}",
                        "for an entry that differs",
                    ),
                    sometimes(
                        "DELETE /{vmid}/firewall/ipset/{name}/{cidr}",
                        "for an entry not declared",
                    ),
                    sometimes(
                        "GET /{vmid}/firewall/aliases",
                        "for an entry naming an alias (not dc/)",
                    ),
                    sometimes(
                        "GET /cluster/firewall/aliases",
                        "for an entry naming an alias (not guest/)",
                    ),
                    always(FIREWALL_OPTIONS),
                    always("GET /cluster/firewall/options"),
                ]
            }
        }
        (_, M::FirewallAlias) => {
            const {
                &[
                    always(STATUS),
                    always(CONFIG),
                    always("GET /{vmid}/firewall/aliases"),
                    sometimes("POST /{vmid}/firewall/aliases", "for an alias to make"),
                    sometimes(
                        "PUT /{vmid}/firewall/aliases/{name}",
                        "for an alias that differs",
                    ),
                    sometimes("DELETE /{vmid}/firewall/aliases/{name}", "with delete"),
                    always(FIREWALL_OPTIONS),
                    always("GET /cluster/firewall/options"),
                ]
            }
        }
        (Qemu, M::MoveDisk) => {
            const {
                &[
                    always(STATUS),
                    always("POST /{vmid}/move_disk"),
                    always(CONFIG),
                    always("GET /nodes/{node}/storage"),
                    sometimes(STORAGE_CONTENT, "with delete"),
                    sometimes(SNAPSHOTS, "with delete"),
                    sometimes(
                        "GET /{vmid}/snapshot/{snapname}/config",
                        "with delete, per snapshot",
                    ),
                ]
            }
        }
        (Lxc, M::MoveDisk) => {
            const {
                &[
                    always(STATUS),
                    always("POST /{vmid}/move_volume"),
                    always(CONFIG),
                    always("GET /nodes/{node}/storage"),
                    sometimes(STORAGE_CONTENT, "with delete"),
                    sometimes(SNAPSHOTS, "with delete"),
                    sometimes(
                        "GET /{vmid}/snapshot/{snapname}/config",
                        "with delete, per snapshot",
                    ),
                ]
            }
        }
        (Qemu, M::Start) => {
            const {
                &[
                    always(STATUS),
                    always(START),
                    sometimes(INTERFACES, "with waitForIp or waitReady"),
                    sometimes(RESUME, "with resume: true, for a paused or suspended VM"),
                ]
            }
        }
        (Lxc, M::Start) => const { &[always(STATUS), always(START)] },
        (_, M::Stop) => const { &[always(STATUS), always(STOP)] },
        (_, M::Suspend) => const { &[always(STATUS), always("POST /{vmid}/status/suspend")] },
        (_, M::Resume) => const { &[always(STATUS), always(RESUME)] },
        (_, M::WaitTask) => {
            const {
                &[
                    always("GET /nodes/{node}/tasks/{upid}/status"),
                    sometimes("GET /nodes/{node}/tasks", "with a filter instead of a upid"),
                ]
            }
        }
        (_, M::Shutdown) => {
            const {
                &[
                    always(STATUS),
                    always("POST /{vmid}/status/shutdown"),
                    sometimes(STOP, "with forceStopAfter"),
                ]
            }
        }
        (_, M::Reboot) => const { &[always(STATUS), always("POST /{vmid}/status/reboot")] },
        (_, M::Delete) => {
            const {
                &[
                    always(STATUS),
                    always("DELETE /{vmid}"),
                    sometimes(STOP, "when the guest runs"),
                ]
            }
        }
        (_, M::Template) => const { &[always(STATUS), always("POST /{vmid}/template")] },
        (_, M::Migrate) => {
            const {
                &[
                    always(STATUS),
                    always("GET /{vmid}/migrate"),
                    always("POST /{vmid}/migrate"),
                ]
            }
        }
        (_, M::Snapshot) => const { &[always(SNAPSHOTS), always("POST /{vmid}/snapshot")] },
        (_, M::Rollback) => {
            const {
                &[
                    always(SNAPSHOTS),
                    always("POST /{vmid}/snapshot/{snapname}/rollback"),
                ]
            }
        }
        (_, M::DeleteSnapshot) => {
            const {
                &[
                    always(SNAPSHOTS),
                    always("DELETE /{vmid}/snapshot/{snapname}"),
                ]
            }
        }
        (_, M::ListSnapshots) => const { &[always(SNAPSHOTS)] },
        (_, M::NodeStatus) => {
            const {
                &[
                    always("GET /nodes/{node}/status"),
                    sometimes(
                        "GET /nodes/{node}/disks/list",
                        "for the disks (without it they are recorded unavailable)",
                    ),
                    always("GET /nodes/{node}/subscription"),
                    sometimes(
                        "GET /nodes/{node}/apt/repositories",
                        "for the enterprise repository (without it recorded unavailable)",
                    ),
                ]
            }
        }
        (_, M::NodeConfig) => {
            const {
                &[
                    always("GET /nodes/{node}/storage"),
                    always("GET /nodes/{node}/network"),
                ]
            }
        }
        (_, M::Preflight) => const { &[always("GET /version"), always("GET /access/permissions")] },
        (_, M::GuestExec) => const { &[always(EXEC), always(EXEC_STATUS)] },
        (_, M::Clone) => {
            const {
                &[
                    always(STATUS),
                    always("POST /{vmid}/clone"),
                    made(CONFIG, None),
                    made(SET_CONFIG, Some("when the template lacks the swamp tag")),
                    made(START, Some("with waitReady")),
                ]
            }
        }
        (_, M::CloudInit) => {
            const {
                &[
                    always(SET_CONFIG),
                    always("PUT /{vmid}/cloudinit"),
                    always("GET /{vmid}/cloudinit/dump"),
                    always("GET /{vmid}/cloudinit"),
                ]
            }
        }
        (_, M::WaitReady) => {
            const {
                &[
                    always("GET /{vmid}/agent/info"),
                    always(INTERFACES),
                    sometimes(EXEC, "with cloudInit"),
                ]
            }
        }
        (_, M::Resize) => const { &[always(CONFIG), always("PUT /{vmid}/resize")] },
        (_, M::FileWrite) => {
            const {
                &[
                    always("POST /{vmid}/agent/file-write"),
                    always(FILE_READ),
                    sometimes(EXEC, "for a file over 46,080 bytes or a mode"),
                ]
            }
        }
        (_, M::FileRead) => const { &[always(FILE_READ)] },
        (_, M::Create) => {
            const {
                &[
                    made("POST /nodes/{node}/lxc", None),
                    always("GET /nodes/{node}/storage/{storage}/content"),
                    always("GET /nodes/{node}/network"),
                    made(START, Some("with start")),
                ]
            }
        }
        // `pct exec` over ssh runs as root@pam: no API privilege (preflight says it needs ssh).
        (_, M::ContainerExec) => const { &[] },
        (_, M::VmCreate) => {
            const {
                &[
                    made("POST /nodes/{node}/qemu", None),
                    always("GET /nodes/{node}/storage/{storage}/content"),
                    always("GET /nodes/{node}/network"),
                    made(START, Some("with start or waitReady")),
                ]
            }
        }
        (_, M::DownloadUrl) => {
            const {
                &[
                    always("GET /nodes/{node}/storage"),
                    always("GET /nodes/{node}/storage/{storage}/content"),
                    always("POST /nodes/{node}/storage/{storage}/download-url"),
                ]
            }
        }
        (_, M::Backup) => {
            const {
                &[
                    always(STATUS),
                    always("POST /nodes/{node}/vzdump"),
                    always("GET /nodes/{node}/storage/{storage}/content"),
                ]
            }
        }
        (_, M::ListBackups) => const { &[always("GET /nodes/{node}/storage/{storage}/content")] },
        (_, M::DeleteBackup) => {
            const {
                &[
                    always("GET /nodes/{node}/storage/{storage}/content"),
                    always("DELETE /nodes/{node}/storage/{storage}/content/{volume}"),
                ]
            }
        }
        (_, M::Restore) => {
            const {
                &[
                    on_archive("GET /nodes/{node}/storage/{storage}/content"),
                    always("GET /nodes/{node}/vzdump/extractconfig"),
                    made("POST /nodes/{node}/{kind}", None),
                ]
            }
        }
        _ => return None,
    };
    Some(list)
}

/// The request parameters of `method` that the checks' conditions ask about: those it always
/// sends, and those its arguments decide (known to the check before the method, not to preflight).
fn condition_params(
    kind: GuestKind,
    method: Option<Method>,
) -> (&'static [&'static str], &'static [&'static str]) {
    use GuestKind::{Lxc, Qemu};
    match (kind, method) {
        (Qemu, Some(Method::Restore)) => (&["archive"], &["force"]),
        (Lxc, Some(Method::Restore)) => (&["restore"], &["force"]),
        (_, Some(Method::Create)) => (&[], &["unprivileged"]),
        (Qemu, Some(Method::Rollback)) => (&[], &["start"]),
        (Qemu, Some(Method::Migrate)) => (&[], &["targetstorage"]),
        (Lxc, Some(Method::Migrate)) => (&[], &["target-storage"]),
        (Qemu, Some(Method::Suspend)) => (&[], &["todisk"]),
        (_, Some(Method::WaitTask)) => (&[], &[ANOTHER_USERS_TASK]),
        _ => (&[], &[]),
    }
}

/// The config options a create always sends (qemu-server and pve-container check each).
fn fixed_options(method: Option<Method>) -> &'static [&'static str] {
    match method {
        Some(Method::VmCreate) => &["name", "tags"],
        Some(Method::Create) => &["hostname", "rootfs", "tags"],
        _ => &[],
    }
}

/// The guest acted on and the guest made, by how `method` names them.
fn guests(
    method: Option<Method>,
    vmid: Option<u32>,
    template: Option<u32>,
) -> (Option<u32>, Option<u32>) {
    match method {
        Some(Method::Clone) => (template, vmid),
        Some(Method::Create | Method::VmCreate | Method::Restore) => (None, vmid),
        _ => (vmid, None),
    }
}

/// What every run of `method` has: its guests, the conditions it always meets, the options a
/// create always sends.
fn base(
    kind: GuestKind,
    method: Option<Method>,
    ids: (Option<u32>, Option<u32>),
    node: &str,
    major: u64,
) -> Subjects {
    let (vmid, newid) = guests(method, ids.0, ids.1);
    let strings = |list: &[&str]| {
        let mut owned = Vec::with_capacity(list.len());
        for item in list {
            owned.push(item.to_string());
        }
        owned
    };
    // Every field written out: `..Subjects::default()` builds a whole default value and drops
    // what it overwrites (issue 32).
    Subjects {
        node: node.to_string(),
        vmid,
        newid,
        storages: Vec::new(),
        sources: Vec::new(),
        archive: None,
        owner: None,
        bridges: Vec::new(),
        given: strings(condition_params(kind, method).0),
        options: strings(fixed_options(method)),
        unknown: Vec::new(),
        major,
        skip_unknown: false,
    }
}

/// What `preflight` knows of a run of `method`: its `vmid`, `templateId` and `storage` arguments;
/// an id not given is read on what every guest or storage inherits, and what only the method's
/// other arguments would name (bridges, sources, conditions) may be needed.
// Inlined into its one caller (issue 32).
#[inline(always)]
pub fn preflight_subjects(
    kind: GuestKind,
    method: &str,
    ids: (Option<u32>, Option<u32>),
    storage: Option<&str>,
    node: &str,
    major: u64,
) -> Subjects {
    // The catalog's method, found once: matched below as one jump, not a comparison per name.
    let method = method_of(kind, method);
    let mut s = base(kind, method, ids, node, major);
    s.storages.extend(storage.map(str::to_string));
    s.given.extend(storage.map(|_| "storage".to_string()));
    s.unknown = condition_params(kind, method).1.to_vec();
    s
}

/// What the check before one run of `method` by `caller` (the token id) knows from its arguments
/// (`args`, their plain values): what it leaves out, the method itself finds (a guest named by
/// `vmName`).
// Inlined into its one caller (issue 32).
#[inline(always)]
pub fn run_subjects(
    kind: GuestKind,
    method: &str,
    args: &Value,
    (node, caller): (&str, &str),
    major: u64,
) -> Subjects {
    // Read borrowed: copied only where a subject keeps it.
    let text = |k: &str| args.get(k).and_then(Value::as_str);
    let owned = |k: &str| text(k).map(str::to_string);
    let id = |k: &str| {
        args.get(k)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    // The catalog's method, found once: matched below as one jump, not a comparison per name.
    let known = method_of(kind, method);
    let waits = known == Some(Method::WaitTask);
    let upid = text("upid").filter(|_| waits);
    let upid = upid.and_then(Upid::parse);
    let on = match &upid {
        Some(upid) => Some(upid.node.as_str()),
        None => text("node").filter(|_| waits || known == Some(Method::DownloadUrl)),
    };
    let mut s = base(
        kind,
        known,
        (id("vmid"), id("templateId")),
        on.unwrap_or(node),
        major,
    );
    s.skip_unknown = true;
    // The conditions the arguments decide: a flag given true (`unprivileged` false), a storage.
    for param in condition_params(kind, known).1 {
        let arg = match *param {
            p if p.starts_with("target") => "targetStorage",
            "todisk" => "toDisk",
            p => p,
        };
        match args.get(arg) {
            Some(Value::Bool(true) | Value::String(_)) => s.given.push(param.to_string()),
            Some(Value::Bool(false)) if *param == "unprivileged" => {
                s.given.push("unprivileged=0".into())
            }
            _ => {}
        }
    }
    s.given
        .extend(text("storage").map(|_| "storage".to_string()));
    // Whose task a filter finds is not known before the list is read.
    match &upid {
        Some(upid) if !upid.started_by(caller) => s.given.push(ANOTHER_USERS_TASK.into()),
        None if waits => s.unknown = vec![ANOTHER_USERS_TASK],
        _ => {}
    }
    let backup = |field: &str| text(field).and_then(|v| BackupVolid::parse(field, v).ok());
    match known {
        Some(Method::Create | Method::VmCreate) => create_subjects(kind, args, &mut s),
        Some(which @ (Method::Restore | Method::DeleteBackup)) => {
            let volume = backup("archive").or_else(|| backup("volid"));
            s.owner = volume.as_ref().and_then(|v| v.vmid);
            match which {
                Method::Restore => s.archive = volume.map(|v| v.storage),
                _ => s.storages.extend(volume.map(|v| v.storage)),
            }
        }
        Some(Method::Migrate) => s.storages.extend(owned("targetStorage")),
        Some(Method::Suspend) => s.storages.extend(owned("stateStorage")),
        Some(Method::AttachDisk) => foreign_volume(text("volume"), &mut s),
        _ => {}
    }
    if !matches!(
        known,
        Some(Method::Create | Method::VmCreate | Method::Migrate | Method::DeleteBackup)
    ) {
        s.storages.extend(owned("storage"));
    }
    s
}

/// An attached volume another guest owns (its name says whose): PVE's check_volume_access asks
/// for rights on its storage and its owner, not only on the guest it joins.
fn foreign_volume(volid: Option<&str>, s: &mut Subjects) {
    let Some(volid) = volid else { return };
    let owner = crate::guest::volumes::owner_of(volid);
    if owner.is_none() || s.vmid.is_none() || owner == s.vmid {
        return;
    }
    s.sources.extend(storage_of(volid));
    s.owner = owner;
    s.given.push("foreignVolume".into());
}

/// The storage of a volume id (`local:iso/x.iso` → `local`).
fn storage_of(volid: &str) -> Option<String> {
    let (storage, _) = volid.split_once(':')?;
    Some(storage.to_string())
}

/// A create's arguments: each option it sets, the storages its new disks take (a cloud-init drive
/// is not checked: qemu-server `$check_storage_access`), the images, ISOs and template it reads,
/// the bridges (with a VLAN tag, `vmbr0/20`: pve-guest-common `check_vnet_access`).
fn create_subjects(kind: GuestKind, args: &Value, s: &mut Subjects) {
    let lxc = kind == GuestKind::Lxc;
    let text = |k: &str| args.get(k).and_then(Value::as_str);
    s.storages
        .extend(text("storage").filter(|_| lxc).map(str::to_string));
    s.sources.extend(text("ostemplate").and_then(storage_of));
    let keys: &[&str] = match lxc {
        false => &["cores", "memory", "agent"],
        true => &["cores", "memory", "swap", "features"],
    };
    for key in keys {
        if args.get(*key).is_some() {
            s.options.push(key.to_string());
        }
    }
    let fields = Fields::of(args, "").ok();
    let config = fields.and_then(|f| f.options("config", &[]).ok().flatten());
    for (key, value) in config.unwrap_or_default() {
        if kind.is_disk(&key) {
            s.storages
                .extend(allocation_of(&key, &value).map(|a| a.storage.to_string()));
            let volume = value.split(',').next().unwrap_or_default();
            let read =
                property(&value, "import-from").or(Some(volume).filter(|v| v.contains(":iso/")));
            s.sources.extend(read.and_then(storage_of));
        }
        if numbered(&key, "net") {
            if let Some(bridge) = property(&value, "bridge") {
                let tag = property(&value, "tag").map(|t| format!("/{t}"));
                s.bridges
                    .push(format!("{bridge}{}", tag.unwrap_or_default()));
            }
        }
        s.options.push(key);
    }
    s.storages.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::method_names;
    use crate::guest::permissions::requirement;
    use serde_json::json;

    #[test]
    fn every_method_of_a_model_has_needs_whose_endpoints_are_in_the_privilege_table() {
        for kind in [GuestKind::Qemu, GuestKind::Lxc] {
            for method in method_names(kind) {
                let Some(list) = needs(kind, method) else {
                    panic!("{kind:?} {method}: a method of the model with no permission needs");
                };
                for need in list {
                    assert!(
                        requirement(need.requires, kind).is_ok(),
                        "{kind:?} {method}: {:?}",
                        need.requires
                    );
                }
            }
        }
    }

    #[test]
    fn every_condition_of_whens_is_some_needs() {
        let mut used = Vec::new();
        for kind in [GuestKind::Qemu, GuestKind::Lxc] {
            for method in method_names(kind) {
                used.extend(
                    needs(kind, method)
                        .unwrap_or_default()
                        .iter()
                        .map(|n| n.when),
                );
            }
        }
        for line in 1..WHENS.lines().count() {
            assert!(
                used.contains(&(line as u8)),
                "{:?}",
                WHENS.lines().nth(line)
            );
        }
    }

    #[test]
    fn a_method_the_model_lacks_has_no_needs() {
        assert!(needs(GuestKind::Lxc, "clone").is_none());
        assert!(needs(GuestKind::Lxc, "cloudInit").is_none());
        assert!(needs(GuestKind::Qemu, "lookup").is_some());
    }

    #[test]
    fn a_vm_creates_arguments_name_its_options_storages_images_and_bridges() {
        let args = json!({"vmid": 150, "name": "web", "cores": 2, "config": {
            "scsi0": "local-lvm:0,import-from=local:import/cloud.qcow2",
            "ide2": "local:iso/debian.iso,media=cdrom",
            "ide0": "local-zfs:cloudinit",
            "net0": "virtio,bridge=vmbr0,tag=20",
            "net1": "virtio,bridge=vmbr1",
            "ciuser": "admin"}});
        let s = run_subjects(
            GuestKind::Qemu,
            "create",
            &args,
            ("pve1", "root@pam!swamp"),
            9,
        );
        assert_eq!((s.vmid, s.newid), (None, Some(150)));
        assert_eq!(s.storages, ["local-lvm"]);
        assert_eq!(s.sources, ["local", "local"]);
        assert_eq!(s.bridges, ["vmbr0/20", "vmbr1"]);
        for key in ["name", "tags", "cores", "scsi0", "net0", "ciuser"] {
            assert!(s.options.iter().any(|o| o == key), "{key}: {:?}", s.options);
        }
        assert!(s.skip_unknown);
    }

    #[test]
    fn a_containers_create_names_its_rootfs_storage_template_and_privileged_flag() {
        let args = json!({"vmid": 300, "hostname": "ct", "storage": "local-lvm",
            "ostemplate": "local:vztmpl/debian-12.tar.zst", "unprivileged": false,
            "config": {"mp0": "local-zfs:4", "net0": "name=eth0,bridge=vmbr0"}});
        let s = run_subjects(
            GuestKind::Lxc,
            "create",
            &args,
            ("pve1", "root@pam!swamp"),
            9,
        );
        assert_eq!(s.storages, ["local-lvm", "local-zfs"]);
        assert_eq!(s.sources, ["local"]);
        assert!(s.given.iter().any(|g| g == "unprivileged=0"));
        assert!(s.options.iter().any(|o| o == "hostname"));
    }

    #[test]
    fn a_restore_names_its_archive_and_the_archives_guest() {
        let args = json!({"archive": "nas:backup/vzdump-qemu-102-2026_01_01-00_00_00.vma.zst",
            "vmid": 130, "storage": "local-lvm", "force": true});
        let s = run_subjects(
            GuestKind::Qemu,
            "restore",
            &args,
            ("pve1", "root@pam!swamp"),
            9,
        );
        assert_eq!(s.archive.as_deref(), Some("nas"));
        assert_eq!((s.owner, s.newid), (Some(102), Some(130)));
        assert_eq!(s.storages, ["local-lvm"]);
        for given in ["archive", "force", "storage"] {
            assert!(s.given.iter().any(|g| g == given), "{given}");
        }
    }

    #[test]
    fn attaching_another_guests_volume_needs_rights_on_its_storage_and_its_owner() {
        use crate::guest::permissions::{holds, judge, Held, Role};
        let subjects = |volume: &str| {
            let args = json!({"vmid": 100, "volume": volume});
            run_subjects(GuestKind::Qemu, "attachDisk", &args, ("pve1", "u@pve!t"), 9)
        };
        let foreign = subjects("local-lvm:vm-101-disk-1");
        assert_eq!(
            (foreign.owner, foreign.sources.clone()),
            (Some(101), vec!["local-lvm".into()])
        );
        let own = subjects("local-lvm:vm-100-disk-1");
        assert!(!own.given.iter().any(|g| g == "foreignVolume"));
        let check = requirement(requires("PUT /{vmid}/config"), GuestKind::Qemu)
            .unwrap()
            .unwrap();
        let on_guest: Held = [("/vms/100".to_string(), json!(["VM.Config.Disk"]))]
            .into_iter()
            .collect();
        let role = Role {
            guest: Guest::Acted,
            archive: false,
        };
        let missing = |s: &Subjects, held: &Held| {
            judge(&check, s, role, &mut holds(held))
                .unwrap_or_default()
                .missing
        };
        assert!(missing(&own, &on_guest).is_empty());
        let lacking = missing(&foreign, &on_guest).join("; ");
        assert!(
            lacking.contains("/vms/101") && lacking.contains("/storage/local-lvm"),
            "{lacking}"
        );
        let mut both = on_guest.clone();
        both.insert("/vms/101".into(), json!(["VM.Config.Disk"]));
        both.insert("/storage/local-lvm".into(), json!(["Datastore.Audit"]));
        assert!(missing(&foreign, &both).is_empty());
    }

    #[test]
    fn preflight_knows_only_its_ids_and_storage_and_leaves_the_methods_other_choices_unknown() {
        let s = preflight_subjects(GuestKind::Lxc, "create", (Some(300), None), None, "pve1", 8);
        assert_eq!((s.vmid, s.newid), (None, Some(300)));
        assert!(s.storages.is_empty() && !s.skip_unknown);
        assert_eq!(s.unknown, ["unprivileged"]);
        assert_eq!(s.options, ["hostname", "rootfs", "tags"]);
    }
}
