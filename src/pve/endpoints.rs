//! Builders for every PVE API call the package makes. Paths live here and nowhere else.
//! A builder with one caller in the module is `#[inline(always)]`: built in place by its caller, not
//! by a call whose request is then moved out (issue 32).

use super::request::{PveRequest, Repeat, Verb};
use super::upid::Upid;

/// The two guest types; they differ in path segment and config file location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKind {
    Qemu,
    Lxc,
}

impl GuestKind {
    /// The API path segment and `/cluster/resources` type: `qemu` or `lxc`.
    pub fn segment(self) -> &'static str {
        match self {
            GuestKind::Qemu => "qemu",
            GuestKind::Lxc => "lxc",
        }
    }

    /// The prefix of record instance names: `vm` or `ct`.
    pub fn record_prefix(self) -> &'static str {
        match self {
            GuestKind::Qemu => "vm",
            GuestKind::Lxc => "ct",
        }
    }

    /// How users call this kind of guest in messages.
    pub fn noun(self) -> &'static str {
        match self {
            GuestKind::Qemu => "VM",
            GuestKind::Lxc => "container",
        }
    }

    /// The resource spec of the guest state record: `guest` (qemu) or `container` (lxc).
    pub fn record_spec(self) -> &'static str {
        match self {
            GuestKind::Qemu => "guest",
            GuestKind::Lxc => "container",
        }
    }

    /// The rule a resizable disk's config key follows, as argument errors state it.
    pub fn disk_rule(self) -> &'static str {
        match self {
            GuestKind::Qemu => "^(scsi|sata|virtio|ide)\\d+$",
            GuestKind::Lxc => "^(rootfs|mp\\d+)$",
        }
    }

    /// The disk a resize acts on when none is named: `scsi0` or `rootfs`.
    pub fn default_disk(self) -> &'static str {
        match self {
            GuestKind::Qemu => "scsi0",
            GuestKind::Lxc => "rootfs",
        }
    }

    /// Whether `key` names a resizable disk of this kind of guest ([`GuestKind::disk_rule`]).
    pub fn is_disk(self, key: &str) -> bool {
        let base = key.trim_end_matches(|c: char| c.is_ascii_digit());
        let numbered = base.len() < key.len();
        match self {
            GuestKind::Qemu => numbered && matches!(base, "scsi" | "sata" | "virtio" | "ide"),
            GuestKind::Lxc => key == "rootfs" || (numbered && base == "mp"),
        }
    }

    /// The storage content type its disks are allocated as: `images` for a VM, `rootdir` for a
    /// container (pve-storage `PVE/Storage/Plugin.pm` `$default_config`'s content types).
    pub fn disk_content(self) -> &'static str {
        match self {
            GuestKind::Qemu => "images",
            GuestKind::Lxc => "rootdir",
        }
    }

    /// Whether `key` may hold a volume of this kind of guest: a disk ([`GuestKind::is_disk`]), or
    /// a VM's EFI vars or TPM state (qemu-server `PVE/QemuServer/Drive.pm` valid_drive_names).
    pub fn is_volume_key(self, key: &str) -> bool {
        self.is_disk(key) || (self == GuestKind::Qemu && matches!(key, "efidisk0" | "tpmstate0"))
    }
}

/// `GET /version`.
pub fn version() -> PveRequest {
    PveRequest::get(&["version"])
}

/// `GET /access/permissions?path=<path>` → `{<path>: {<privilege>: <propagate>}}`: what the caller
/// (the token, or root@pam through pvesh) may do on `path` (`{}` when nothing).
#[inline(always)]
pub fn access_permissions(path: &str) -> PveRequest {
    PveRequest::get(&["access", "permissions"]).param("path", path)
}

/// `GET /cluster/resources?type=vm`: every guest of the cluster with its node (qemu and lxc).
pub fn cluster_guests() -> PveRequest {
    PveRequest::get(&["cluster", "resources"]).param("type", "vm")
}

/// `GET /cluster/nextid?vmid=N`: answers 400 "VM N already exists" when the id is taken, for any user.
pub fn next_id(vmid: u32) -> PveRequest {
    PveRequest::get(&["cluster", "nextid"]).param("vmid", vmid.to_string())
}

/// `GET /cluster/nextid`: the lowest VMID no guest holds. It reserves nothing: two callers may be
/// told the same id, and only the create request itself claims it (PVE/API2/Cluster.pm `nextid`).
#[inline(always)]
pub fn next_free_id() -> PveRequest {
    PveRequest::get(&["cluster", "nextid"])
}

/// `GET /nodes/{node}/qemu?full=1` / `GET /nodes/{node}/lxc`: every guest of one node with its
/// status, in one call (the container list takes no `full`: PVE refuses it with 400).
pub fn node_guests(node: &str, kind: GuestKind) -> PveRequest {
    let request = PveRequest::get(&["nodes", node, kind.segment()]);
    match kind {
        GuestKind::Qemu => request.param("full", "1"),
        GuestKind::Lxc => request,
    }
}

/// `GET /nodes/{node}/{kind}/{vmid}/status/current`.
pub fn guest_status(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        kind.segment(),
        vmid,
        &["status", "current"],
        Repeat::Safe,
    )
}

/// `GET /nodes/{node}/{kind}/{vmid}/config` (the current config).
pub fn guest_config(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        kind.segment(),
        vmid,
        &["config"],
        Repeat::Safe,
    )
}

/// `POST /nodes/{node}/qemu/{vmid}/agent/exec`: starts `argv` in the guest. Never re-sent: a timed-out
/// call may still have started the command.
#[inline(always)]
pub fn agent_exec(node: &str, vmid: u32, argv: &[String], input: Option<&str>) -> PveRequest {
    let mut request = on_guest(
        Verb::Create,
        node,
        "qemu",
        vmid,
        &["agent", "exec"],
        Repeat::Never,
    );
    for arg in argv {
        request.add("command", arg.as_str());
    }
    if let Some(input) = input {
        request.add("input-data", input);
    }
    request
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/exec-status?pid=N`: the final answer can be read only once,
/// so this read is never repeated blindly.
#[inline(always)]
pub fn agent_exec_status(node: &str, vmid: u32, pid: i64) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        "qemu",
        vmid,
        &["agent", "exec-status"],
        Repeat::Never,
    )
    .param("pid", pid.to_string())
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces`.
pub fn agent_interfaces(node: &str, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        "qemu",
        vmid,
        &["agent", "network-get-interfaces"],
        Repeat::Safe,
    )
}

/// `POST /nodes/{node}/qemu/{vmid}/agent/ping`: answers once the guest agent is up. A POST with no
/// effect, so it may be retried.
#[inline(always)]
pub fn agent_ping(node: &str, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Create,
        node,
        "qemu",
        vmid,
        &["agent", "ping"],
        Repeat::Safe,
    )
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/info`: the agent's version and its commands.
#[inline(always)]
pub fn agent_info(node: &str, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        "qemu",
        vmid,
        &["agent", "info"],
        Repeat::Safe,
    )
}

/// `GET /nodes/{upid.node}/tasks/{upid}/status`: on the node that runs the task.
#[inline(always)]
pub fn task_status(upid: &Upid) -> PveRequest {
    PveRequest::get(&["nodes", &upid.node, "tasks", upid.as_str(), "status"])
}

/// `GET /nodes/{node}/tasks?source=all&since=…&limit=…`: the node's running tasks (status
/// `RUNNING`) and its finished ones with their exit status, newest first — one read that answers
/// for every task a process follows there (pve-manager `PVE/API2/Tasks.pm` node_tasks).
#[inline(always)]
pub fn node_tasks(node: &str, since: u64, limit: usize) -> PveRequest {
    PveRequest::get(&["nodes", node, "tasks"])
        .param("source", "all")
        .param("since", since.to_string())
        .param("limit", limit.to_string())
}

/// `GET /nodes/{node}/tasks?source=all&limit=20` with PVE's filters: the node's running and
/// finished tasks of `typefilter`, of guest `vmid`, started at or after `since` (Unix seconds),
/// newest first (pve-manager `PVE/API2/Tasks.pm` node_tasks).
#[inline(always)]
pub fn task_list(
    node: &str,
    task_type: Option<&str>,
    vmid: Option<u32>,
    since: Option<u64>,
) -> PveRequest {
    let mut request = PveRequest::get(&["nodes", node, "tasks"])
        .param("source", "all")
        .param("limit", "20");
    if let Some(task_type) = task_type {
        request.add("typefilter", task_type);
    }
    if let Some(vmid) = vmid {
        request.add("vmid", vmid.to_string());
    }
    if let Some(since) = since {
        request.add("since", since.to_string());
    }
    request
}

/// `GET /nodes/{upid.node}/tasks/{upid}/log?start=N&limit=M`: M lines after the first N
/// (pve-manager `PVE/API2/Tasks.pm` read_task_log); `limit` 0 reads to the end (pve-common
/// `PVE/Tools.pm` dump_logfile).
pub fn task_log(upid: &Upid, start: usize, limit: usize) -> PveRequest {
    PveRequest::get(&["nodes", &upid.node, "tasks", upid.as_str(), "log"])
        .param("start", start.to_string())
        .param("limit", limit.to_string())
}

/// `POST /nodes/{node}/{kind}/{vmid}/status/start` → UPID. Like every mutation, never re-sent.
pub fn guest_start(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    power(node, kind, vmid, "start")
}

/// `POST /nodes/{node}/{kind}/{vmid}/status/stop` → UPID: a hard stop (power off).
pub fn guest_stop(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    power(node, kind, vmid, "stop")
}

/// `POST /nodes/{node}/{kind}/{vmid}/status/shutdown?timeout=N` → UPID: a graceful (ACPI) shutdown
/// PVE waits up to N seconds for. No `forceStop`: the caller falls back to a stop it can observe.
#[inline(always)]
pub fn guest_shutdown(node: &str, kind: GuestKind, vmid: u32, timeout_sec: u64) -> PveRequest {
    power(node, kind, vmid, "shutdown").param("timeout", timeout_sec.to_string())
}

/// `POST /nodes/{node}/{kind}/{vmid}/status/reboot?timeout=N` → UPID: a shutdown (up to N seconds),
/// then a start that applies pending changes. A VM's `qmreboot` task ends once QEMU is down — the
/// start follows outside it (qemu-server `vm_reboot` leaves a reboot request that `qm cleanup`
/// acts on); a container's `vzreboot` task stops and starts it (pve-container `vm_reboot`).
#[inline(always)]
pub fn guest_reboot(node: &str, kind: GuestKind, vmid: u32, timeout_sec: u64) -> PveRequest {
    power(node, kind, vmid, "reboot").param("timeout", timeout_sec.to_string())
}

/// `POST /nodes/{node}/{kind}/{vmid}/status/{action}` → UPID: any power action (`suspend`,
/// `resume`, …); never re-sent.
pub fn power(node: &str, kind: GuestKind, vmid: u32, action: &str) -> PveRequest {
    on_guest(
        Verb::Create,
        node,
        kind.segment(),
        vmid,
        &["status", action],
        Repeat::Never,
    )
}

/// `DELETE /nodes/{node}/{kind}/{vmid}` → UPID. `purge` also drops the guest from backup jobs, HA
/// and replication, and destroys disks with its VMID that its config no longer references.
#[inline(always)]
pub fn guest_delete(node: &str, kind: GuestKind, vmid: u32, purge: bool) -> PveRequest {
    let request = on_guest(Verb::Delete, node, kind.segment(), vmid, &[], Repeat::Never);
    match purge {
        true => request
            .param("purge", "1")
            .param("destroy-unreferenced-disks", "1"),
        false => request,
    }
}

/// `POST /nodes/{node}/qemu/{template}/clone` → UPID; the clone lands on the template's node.
#[inline(always)]
pub fn qemu_clone(
    node: &str,
    template: u32,
    newid: u32,
    name: &str,
    full: bool,
    storage: Option<&str>,
) -> PveRequest {
    let request = on_guest(
        Verb::Create,
        node,
        "qemu",
        template,
        &["clone"],
        Repeat::Never,
    )
    .param("newid", newid.to_string())
    .param("name", name)
    .param("full", if full { "1" } else { "0" });
    match storage {
        Some(storage) => request.param("storage", storage),
        None => request,
    }
}

/// `POST /nodes/{node}/{kind}/{vmid}/template`: converts a stopped guest into a template. qemu
/// answers the UPID of its `qmtemplate` task; lxc answers null — pve-container forks a `vztemplate`
/// worker but returns undef instead of its UPID (PVE/API2/LXC.pm `template`), so only the config
/// shows when it is done. Never re-sent.
#[inline(always)]
pub fn guest_template(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Create,
        node,
        kind.segment(),
        vmid,
        &["template"],
        Repeat::Never,
    )
}

/// `PUT /nodes/{node}/qemu/{vmid}/cloudinit`: regenerates the VM's cloud-init drive from its config
/// now (synchronous, null); without a cloud-init drive PVE does nothing and says nothing.
#[inline(always)]
pub fn cloudinit_regenerate(node: &str, vmid: u32) -> PveRequest {
    on_guest(Verb::Set, node, "qemu", vmid, &["cloudinit"], Repeat::Never)
}

/// `GET /nodes/{node}/qemu/{vmid}/cloudinit`: the cloud-init options with the `value` the drive was
/// generated from and a `pending` new value (or `delete`) where the config moved on since.
#[inline(always)]
pub fn cloudinit_pending(node: &str, vmid: u32) -> PveRequest {
    on_guest(Verb::Get, node, "qemu", vmid, &["cloudinit"], Repeat::Safe)
}

/// `GET /nodes/{node}/qemu/{vmid}/cloudinit/dump?type=user|network|meta`: the cloud-init config PVE
/// generates from the VM's config, as text.
#[inline(always)]
pub fn cloudinit_dump(node: &str, vmid: u32, part: &str) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        "qemu",
        vmid,
        &["cloudinit", "dump"],
        Repeat::Safe,
    )
    .param("type", part)
}

/// `PUT /nodes/{node}/{kind}/{vmid}/config` setting `tags` (`;`-separated); synchronous.
#[inline(always)]
pub fn set_guest_tags(node: &str, kind: GuestKind, vmid: u32, tags: &str) -> PveRequest {
    on_guest(
        Verb::Set,
        node,
        kind.segment(),
        vmid,
        &["config"],
        Repeat::Never,
    )
    .param("tags", tags)
}

/// `GET /nodes`: every cluster node with its `status` (`online`, `offline`, `unknown`).
#[inline(always)]
pub fn nodes() -> PveRequest {
    PveRequest::get(&["nodes"])
}

/// `GET /nodes/{node}/{kind}/{vmid}/pending`: every config key with its current `value`, its
/// `pending` value and a pending `delete` — what runs and what waits for a restart, in one read.
#[inline(always)]
pub fn guest_pending(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        kind.segment(),
        vmid,
        &["pending"],
        Repeat::Safe,
    )
}

/// `GET …/config?current=1`: the config that runs. Plain `GET …/config` shows pending values as if
/// they were applied.
pub fn guest_config_current(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    guest_config(node, kind, vmid).param("current", "1")
}

/// `PUT /nodes/{node}/{kind}/{vmid}/config` with the given options: synchronous (answers null);
/// never re-sent.
#[inline(always)]
pub fn set_guest_config(
    node: &str,
    kind: GuestKind,
    vmid: u32,
    options: &[(String, String)],
) -> PveRequest {
    let mut request = on_guest(
        Verb::Set,
        node,
        kind.segment(),
        vmid,
        &["config"],
        Repeat::Never,
    );
    request.params.extend(options.iter().cloned());
    request
}

/// `PUT /nodes/{node}/{kind}/{vmid}/resize` with `disk` and `size` (`+20G` grows by, `50G` grows
/// to): a UPID since PVE 8 (containers: always), null before.
#[inline(always)]
pub fn guest_resize(node: &str, kind: GuestKind, vmid: u32, disk: &str, size: &str) -> PveRequest {
    on_guest(
        Verb::Set,
        node,
        kind.segment(),
        vmid,
        &["resize"],
        Repeat::Never,
    )
    .param("disk", disk)
    .param("size", size)
}

/// `POST /nodes/{node}/qemu/{vmid}/move_disk` (`disk`) or `…/lxc/{vmid}/move_volume` (`volume`) →
/// UPID: the volume copied (a running VM's mirrored) to `storage`, the source kept as `unusedN`
/// unless `delete` (qemu-server `PVE/API2/Qemu.pm` move_vm_disk, pve-container `PVE/API2/LXC.pm`
/// move_volume). Never re-sent.
#[inline(always)]
pub fn move_volume(
    node: &str,
    kind: GuestKind,
    vmid: u32,
    (disk, storage): (&str, &str),
    delete: bool,
    format: Option<&str>,
) -> PveRequest {
    let (path, key) = match kind {
        GuestKind::Qemu => ("move_disk", "disk"),
        GuestKind::Lxc => ("move_volume", "volume"),
    };
    let mut request = on_guest(
        Verb::Create,
        node,
        kind.segment(),
        vmid,
        &[path],
        Repeat::Never,
    )
    .param(key, disk)
    .param("storage", storage);
    if delete {
        request.add("delete", "1");
    }
    if let Some(format) = format {
        request.add("format", format);
    }
    request
}

/// A request under `/nodes/{node}/{kind}/{vmid}/firewall/` (`at`: the segments after it — `options`,
/// `rules`/`<pos>`, `ipset`/`<name>`/`<cidr>`, `aliases`/`<name>`): synchronous, answers null on a
/// write (pve-firewall `PVE/API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm`, `Aliases.pm`). A write
/// is never re-sent; a read is.
pub fn guest_firewall(
    node: &str,
    kind: GuestKind,
    vmid: u32,
    verb: Verb,
    at: &[String],
) -> PveRequest {
    let repeat = match verb {
        Verb::Get => Repeat::Safe,
        _ => Repeat::Never,
    };
    let mut request = on_guest(verb, node, kind.segment(), vmid, &["firewall"], repeat);
    for segment in at {
        request.segments.push(segment.clone());
    }
    request
}

/// `GET /cluster/firewall/options`: whether the cluster's firewall is enabled (`enable`; PVE's
/// default is off, and then no guest's rules apply: pve-firewall `PVE/Firewall.pm` compile).
#[inline(always)]
pub fn cluster_firewall_options() -> PveRequest {
    cluster_firewall(&["options".to_string()])
}

/// `GET /cluster/firewall/<at>`: a section of the datacenter's firewall (`aliases`).
pub fn cluster_firewall(at: &[String]) -> PveRequest {
    let mut request = PveRequest::get(&["cluster", "firewall"]);
    for segment in at {
        request.segments.push(segment.clone());
    }
    request
}

/// `POST /nodes/{node}/lxc` → UPID: creates a container from a template with these parameters
/// (`vmid`, `ostemplate`, `hostname`, `rootfs`, netN, …). Never re-sent.
pub fn lxc_create(node: &str, params: Vec<(String, String)>) -> PveRequest {
    let mut request = PveRequest::new(Verb::Create, &["nodes", node, "lxc"], Repeat::Never);
    request.params = params;
    request
}

/// `POST /nodes/{node}/qemu` → UPID: creates a VM with these parameters (`vmid`, `name`, disks,
/// NICs, …; qemu-server `PVE/API2/Qemu.pm` create_vm; with `archive=<volid>` it restores a
/// backup, `qmrestore`). Never re-sent.
pub fn qemu_create(node: &str, params: Vec<(String, String)>) -> PveRequest {
    let mut request = PveRequest::new(Verb::Create, &["nodes", node, "qemu"], Repeat::Never);
    request.params = params;
    request
}

/// `GET /nodes/{node}/storage/{storage}/content?content=…&vmid=…`: one guest's volumes there.
#[inline(always)]
pub fn storage_content_of(node: &str, storage: &str, content: &str, vmid: u32) -> PveRequest {
    storage_content(node, storage, content).param("vmid", vmid.to_string())
}

/// `GET /nodes/{node}/storage/{storage}/content?content=…`: the volumes of one content type.
pub fn storage_content(node: &str, storage: &str, content: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "storage", storage, "content"]).param("content", content)
}

/// `POST /nodes/{node}/storage/{storage}/download-url` → UPID: PVE fetches a URL into the storage
/// (`url`, `content`, `filename`, `checksum`, …; pve-storage `PVE/API2/Storage/Status.pm`
/// download_url). Never re-sent.
#[inline(always)]
pub fn storage_download_url(
    node: &str,
    storage: &str,
    params: Vec<(String, String)>,
) -> PveRequest {
    let mut request = PveRequest::new(
        Verb::Create,
        &["nodes", node, "storage", storage, "download-url"],
        Repeat::Never,
    );
    request.params = params;
    request
}

/// `GET /nodes/{node}/query-url-metadata?url=…`: the node asks the URL's server for its size, file
/// name and type (pve-manager `PVE/API2/Nodes.pm` query_url_metadata).
#[inline(always)]
pub fn url_metadata(node: &str, url: &str, verify_certificates: bool) -> PveRequest {
    let request = PveRequest::get(&["nodes", node, "query-url-metadata"]).param("url", url);
    match verify_certificates {
        true => request,
        false => request.param("verify-certificates", "0"),
    }
}

/// `GET /nodes/{node}/status`: CPU, load, memory, swap, root fs, uptime, kernel and PVE versions.
pub fn node_status(node: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "status"])
}

/// `GET /nodes/{node}/disks/list`: physical disks with their SMART health (needs `Sys.Audit`).
pub fn node_disks(node: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "disks", "list"])
}

/// `GET /nodes/{node}/subscription`: the node's subscription status; any user may read it, the key
/// and server id come only with `Sys.Audit` (pve-manager `PVE/API2/Subscription.pm` get).
pub fn node_subscription(node: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "subscription"])
}

/// `GET /nodes/{node}/apt/repositories`: the APT repository files and which standard repositories
/// are configured (`standard-repos`; needs `Sys.Audit`, pve-manager `PVE/API2/APT.pm` repositories).
pub fn node_repositories(node: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "apt", "repositories"])
}

/// `GET /nodes/{node}/storage`: the storages the token may audit, with content types and space.
pub fn node_storage(node: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "storage"])
}

/// `GET /nodes/{node}/network?type=any_bridge`: Linux and OVS bridges (needs `Sys.Audit`).
pub fn node_bridges(node: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "network"]).param("type", "any_bridge")
}

/// `GET /nodes/{node}/{kind}/{vmid}/snapshot`: every snapshot, and a `current` entry ("You are
/// here!") whose `parent` is the snapshot the guest descends from.
#[inline(always)]
pub fn snapshot_list(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        kind.segment(),
        vmid,
        &["snapshot"],
        Repeat::Safe,
    )
}

/// `GET /nodes/{node}/{kind}/{vmid}/snapshot/{snapname}/config`: the config a snapshot keeps.
#[inline(always)]
pub fn snapshot_config(node: &str, kind: GuestKind, vmid: u32, name: &str) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        kind.segment(),
        vmid,
        &["snapshot", name, "config"],
        Repeat::Safe,
    )
}

/// `POST /nodes/{node}/{kind}/{vmid}/snapshot` → UPID (`qmsnapshot` / `vzsnapshot`).
/// `vmstate` exists for VMs only.
#[inline(always)]
pub fn snapshot_create(
    node: &str,
    kind: GuestKind,
    vmid: u32,
    name: &str,
    description: Option<&str>,
    vmstate: bool,
) -> PveRequest {
    let mut request = on_guest(
        Verb::Create,
        node,
        kind.segment(),
        vmid,
        &["snapshot"],
        Repeat::Never,
    )
    .param("snapname", name);
    if let Some(description) = description {
        request.add("description", description);
    }
    if vmstate {
        request.add("vmstate", "1");
    }
    request
}

/// `POST /nodes/{node}/{kind}/{vmid}/snapshot/{snapname}/rollback` → UPID (`qmrollback` /
/// `vzrollback`); `start` starts the guest after the rollback.
#[inline(always)]
pub fn snapshot_rollback(
    node: &str,
    kind: GuestKind,
    vmid: u32,
    name: &str,
    start: bool,
) -> PveRequest {
    let request = on_guest(
        Verb::Create,
        node,
        kind.segment(),
        vmid,
        &["snapshot", name, "rollback"],
        Repeat::Never,
    );
    match start {
        true => request.param("start", "1"),
        false => request,
    }
}

/// `DELETE /nodes/{node}/{kind}/{vmid}/snapshot/{snapname}` → UPID (`qmdelsnapshot` /
/// `vzdelsnapshot`); `force` removes it from the config even if removing a disk snapshot fails.
#[inline(always)]
pub fn snapshot_delete(
    node: &str,
    kind: GuestKind,
    vmid: u32,
    name: &str,
    force: bool,
) -> PveRequest {
    let request = on_guest(
        Verb::Delete,
        node,
        kind.segment(),
        vmid,
        &["snapshot", name],
        Repeat::Never,
    );
    match force {
        true => request.param("force", "1"),
        false => request,
    }
}

/// How a migration is asked for (`POST …/migrate`); each model sends only what it has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrateOptions<'a> {
    pub online: bool,
    pub with_local_disks: bool,
    pub restart: bool,
    pub timeout_sec: Option<u64>,
    pub target_storage: Option<&'a str>,
}

/// `GET /nodes/{node}/{kind}/{vmid}/migrate?target=T`: PVE's preconditions (allowed nodes, and for
/// VMs local disks and devices).
#[inline(always)]
pub fn migrate_preconditions(node: &str, kind: GuestKind, vmid: u32, target: &str) -> PveRequest {
    on_guest(
        Verb::Get,
        node,
        kind.segment(),
        vmid,
        &["migrate"],
        Repeat::Safe,
    )
    .param("target", target)
}

/// `POST /nodes/{node}/{kind}/{vmid}/migrate` → UPID (`qmigrate`/`vzmigrate`, or `hamigrate` for an
/// HA-managed guest). VMs take `online`, `with-local-disks`, `targetstorage`; containers
/// `restart`, `timeout`, `target-storage`.
#[inline(always)]
pub fn guest_migrate(
    node: &str,
    kind: GuestKind,
    vmid: u32,
    target: &str,
    options: &MigrateOptions,
) -> PveRequest {
    let mut request = on_guest(
        Verb::Create,
        node,
        kind.segment(),
        vmid,
        &["migrate"],
        Repeat::Never,
    )
    .param("target", target);
    match kind {
        GuestKind::Qemu => {
            if options.online {
                request.add("online", "1");
            }
            if options.with_local_disks {
                request.add("with-local-disks", "1");
            }
        }
        GuestKind::Lxc => {
            if options.restart {
                request.add("restart", "1");
            }
            if let Some(timeout) = options.timeout_sec {
                request.add("timeout", timeout.to_string());
            }
        }
    }
    if let Some(map) = options.target_storage {
        let key = match kind {
            GuestKind::Qemu => "targetstorage",
            GuestKind::Lxc => "target-storage",
        };
        request.add(key, map);
    }
    request
}

/// `POST /nodes/{node}/qemu/{vmid}/agent/file-write`: truncates `path` and writes `content_b64`
/// (`encode=0`: already base64, so any bytes pass). Never re-sent.
#[inline(always)]
pub fn agent_file_write(node: &str, vmid: u32, path: &str, content_b64: &str) -> PveRequest {
    on_guest(
        Verb::Create,
        node,
        GuestKind::Qemu.segment(),
        vmid,
        &["agent", "file-write"],
        Repeat::Never,
    )
    .param("file", path)
    .param("content", content_b64)
    .param("encode", "0")
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/file-read`: `count` bytes of `path` from `offset`, as
/// base64 (`decode=0`).
#[inline(always)]
pub fn agent_file_read(
    node: &str,
    vmid: u32,
    path: &str,
    offset: usize,
    count: usize,
) -> PveRequest {
    let request = on_guest(
        Verb::Get,
        node,
        GuestKind::Qemu.segment(),
        vmid,
        &["agent", "file-read"],
        Repeat::Safe,
    )
    .param("file", path)
    .param("count", count.to_string())
    .param("decode", "0");
    match offset {
        0 => request,
        _ => request.param("offset", offset.to_string()),
    }
}

/// `POST /nodes/{node}/vzdump` → UPID (`vzdump`), or the bare string `OK` when PVE skipped the
/// guest because it is on another node (pve-manager PVE/API2/VZDump.pm `vzdump`).
#[inline(always)]
pub fn vzdump(node: &str, params: Vec<(String, String)>) -> PveRequest {
    let mut request = PveRequest::new(Verb::Create, &["nodes", node, "vzdump"], Repeat::Never);
    request.params = params;
    request
}

/// `GET /nodes/{node}/vzdump/extractconfig?volume=…`: the guest config a backup archive holds, as
/// text (pve-manager PVE/API2/VZDump.pm `extractconfig`).
#[inline(always)]
pub fn vzdump_extract_config(node: &str, volid: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "vzdump", "extractconfig"]).param("volume", volid)
}

/// `GET /nodes/{node}/storage/{storage}/content?content=backup[&vmid=…]`: the backup archives.
#[inline(always)]
pub fn storage_backups(node: &str, storage: &str, vmid: Option<u32>) -> PveRequest {
    let request = storage_content(node, storage, "backup");
    match vmid {
        Some(vmid) => request.param("vmid", vmid.to_string()),
        None => request,
    }
}

/// `DELETE /nodes/{node}/storage/{storage}/content/{volume}` → UPID (`imgdel`). The volume id may
/// hold `/`: PVE routes the rest of the path to `{volume}` (pve-storage PVE/API2/Storage/Status.pm
/// registers Content with `fragmentDelimiter => ''`).
#[inline(always)]
pub fn storage_volume_delete(node: &str, storage: &str, volid: &str) -> PveRequest {
    PveRequest::new(
        Verb::Delete,
        &["nodes", node, "storage", storage, "content", volid],
        Repeat::Never,
    )
}

/// An HA config request (pve-ha-manager `PVE/API2/HA/Resources.pm`, `Rules.pm`, PVE 8's
/// `Groups.pm`): `POST /cluster/ha/<list>` with `<key>` (create), else `GET`/`PUT`/`DELETE
/// /cluster/ha/<list>/{id}`. Synchronous: a write answers null once the config file is written;
/// the manager applies it later. A write is never re-sent; a read is.
fn ha_config(
    list: &str,
    key: &str,
    verb: Verb,
    id: &str,
    params: Vec<(String, String)>,
) -> PveRequest {
    let path = ["cluster", "ha", list, id];
    let (segments, repeat) = match verb {
        Verb::Get => (&path[..], Repeat::Safe),
        Verb::Create => (&path[..3], Repeat::Never),
        _ => (&path[..], Repeat::Never),
    };
    let mut request = PveRequest::new(verb, segments, repeat);
    if verb == Verb::Create {
        request.add(key, id);
    }
    request.params.extend(params);
    request
}

/// An HA resource request, `…/resources/{sid}`.
pub fn ha_resource(verb: Verb, sid: &str, params: Vec<(String, String)>) -> PveRequest {
    ha_config("resources", "sid", verb, sid, params)
}

/// An HA rule request (PVE 9), `…/rules/{rule}`.
#[inline(always)]
pub fn ha_rule(verb: Verb, rule: &str, params: Vec<(String, String)>) -> PveRequest {
    ha_config("rules", "rule", verb, rule, params)
}

/// An HA group request (PVE 8; PVE 9 refuses it once groups were migrated to rules), `…/groups/{group}`.
#[inline(always)]
pub fn ha_group(verb: Verb, group: &str, params: Vec<(String, String)>) -> PveRequest {
    ha_config("groups", "group", verb, group, params)
}

/// `GET /cluster/ha/resources`: every HA resource's config (Resources.pm index).
#[inline(always)]
pub fn ha_resources() -> PveRequest {
    PveRequest::get(&["cluster", "ha", "resources"])
}

/// `GET /cluster/ha/status/current`: the HA manager's view, one entry per service
/// (`service:<sid>`: `state`, `crm_state`, `request_state`, `node`; `PVE/API2/HA/Status.pm`).
pub fn ha_status_current() -> PveRequest {
    PveRequest::get(&["cluster", "ha", "status", "current"])
}

/// A request under `/nodes/{node}/{kind}/{vmid}` (`kind`: the path segment), then `tail`: the path
/// of most guest calls, assembled by one copy of the code rather than at each builder (issue 32).
fn on_guest(
    verb: Verb,
    node: &str,
    kind: &str,
    vmid: u32,
    tail: &[&str],
    repeat: Repeat,
) -> PveRequest {
    let mut request = PveRequest::new(verb, &["nodes", node, kind, &vmid.to_string()], repeat);
    for segment in tail {
        request.segments.push(segment.to_string());
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resize_and_config_updates_are_never_re_sent() {
        let r = guest_resize("pve1", GuestKind::Qemu, 100, "scsi0", "+1G");
        assert_eq!(r.label(), "PUT /nodes/pve1/qemu/100/resize");
        assert_eq!(r.repeat, Repeat::Never);
        let options = [("memory".to_string(), "2048".to_string())];
        let c = set_guest_config("pve1", GuestKind::Qemu, 100, &options);
        assert_eq!(c.label(), "PUT /nodes/pve1/qemu/100/config");
        assert_eq!(c.params, options.to_vec());
        assert_eq!(c.repeat, Repeat::Never);
    }

    #[test]
    fn current_config_asks_for_what_runs() {
        let r = guest_config_current("pve1", GuestKind::Qemu, 100);
        assert_eq!(r.params, vec![("current".into(), "1".into())]);
    }

    #[test]
    fn exec_repeats_the_command_key_per_argv_item() {
        let r = agent_exec(
            "pve1",
            100,
            &["bash".into(), "-c".into(), "exit 42".into()],
            None,
        );
        assert_eq!(r.display_path(), "/nodes/pve1/qemu/100/agent/exec");
        assert_eq!(
            r.params,
            vec![
                ("command".into(), "bash".into()),
                ("command".into(), "-c".into()),
                ("command".into(), "exit 42".into())
            ]
        );
        assert_eq!(r.repeat, Repeat::Never);
    }

    #[test]
    fn delete_with_purge_also_destroys_unreferenced_disks() {
        let r = guest_delete("pve1", GuestKind::Qemu, 100, true);
        assert_eq!(r.label(), "DELETE /nodes/pve1/qemu/100");
        assert_eq!(
            r.params,
            vec![
                ("purge".into(), "1".into()),
                ("destroy-unreferenced-disks".into(), "1".into())
            ]
        );
        assert!(guest_delete("pve1", GuestKind::Qemu, 100, false)
            .params
            .is_empty());
    }

    #[test]
    fn clone_maps_options_to_pve_params_on_the_template_node() {
        let r = qemu_clone("pve2", 9000, 9001, "cp", false, None);
        assert_eq!(r.label(), "POST /nodes/pve2/qemu/9000/clone");
        assert_eq!(
            r.params,
            vec![
                ("newid".into(), "9001".into()),
                ("name".into(), "cp".into()),
                ("full".into(), "0".into())
            ]
        );
        assert_eq!(r.repeat, Repeat::Never);
    }

    #[test]
    fn task_status_goes_to_the_node_in_the_upid() {
        let upid =
            Upid::parse("UPID:pve3:0000AAAA:0000BBBB:6571E3A1:qmstart:100:root@pam:").unwrap();
        assert_eq!(
            task_status(&upid).display_path(),
            format!("/nodes/pve3/tasks/{upid}/status")
        );
    }
}
