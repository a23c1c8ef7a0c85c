//! `create` (VMs): a new VM from parameters — new disks (`<storage>:<GiB>`), disks imported from an
//! image (`<storage>:0,import-from=<volid>`, e.g. a cloud image `downloadUrl` brought), a cloud-init
//! drive and its keys, NICs, cores, memory, the agent — successful only when the VM is seen with
//! its name and the managed `swamp` tag, unlocked, every requested setting reads back as PVE stores
//! it, and every disk it made is on its storage (an imported one with the image's size).
//!
//! qemu-server `PVE/API2/Qemu.pm` create_vm: the config is written under `lock: create` and the
//! `qmcreate` worker allocates the disks (`create_disks`: `<storage>:<GiB>` through vdisk_alloc,
//! `import-from` through `$import_from_volid`, which copies the source volume and returns the new
//! volume and its size; `import-from` itself is not kept), then removes the lock.
//!
//! 1. The VMID: free, or already holding this very VM (same name AND the tag: a re-run, checked as
//!    after a create); anything else fails "VMID <n> is in use by another guest". Without `vmid` a
//!    free one is claimed by the create request itself (`guest::vmid_claim`).
//! 2. Before anything changes (`guest::placement`): the disks' storages exist, are enabled and
//!    active, take `images` and have room; each `import-from` image (`<storage>:import/<file>`) is
//!    in its storage's content; every `bridge=` exists and is up. One message lists every problem.
//! 3. `POST /nodes/{node}/qemu` with the `swamp` tag added; its task followed (`qmcreate`).
//! 4. The VM located and read: name, tag, unlocked, settings; then each disk it made is listed on
//!    its storage (`GET …/content?content=images&vmid=`), an imported one with the image's size.
//! 5. `start: true` is `start`'s verified start; `waitReady` starts it and waits (as `clone` does).

use crate::args::{is_dns_name, ArgError, Fields, Kind, Read, Spec};
use crate::guest::config::{ssh_keys_param, wire_options};
use crate::guest::create_course::{Before, NewDisk, NewGuest};
use crate::guest::placement::{allocation_of, bridges_of, Allocation, Placement, Source};
use crate::guest::provision::{option, push_create_options, settings_of};
use crate::guest::readiness::ReadyArgs;
use crate::guest::root_only::{qemu_refusal, Caller};
use crate::guest::vmid_claim::VmidChoice;
use crate::guest::volumes::storage_of;
use crate::host::Host;
use crate::methods::start::create_then_start;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::property::property;
use crate::pve::request::{push_param, PveRequest};
use crate::run::Run;
use serde_json::{Map, Value};
use std::future::Future;

/// What a cloud-init drive takes (qemu-server `CLOUDINIT_DISK_SIZE`: 4 MiB).
const CLOUDINIT_BYTES: u64 = 4 << 20;

/// Keys the `config` bag may not hold: they have their own argument, or change how PVE creates
/// (`archive` restores a backup, `force` overwrites) rather than what it creates.
pub const REFUSED_CONFIG_KEYS: [(&str, &str); 13] = [
    ("name", "has its own argument: name"),
    ("cores", "has its own argument: cores"),
    ("memory", "has its own argument: memory"),
    ("agent", "has its own argument: agent"),
    ("start", "has its own argument: start"),
    ("vmid", "has its own argument: vmid"),
    ("node", "is not a VM option (the transport's node is used)"),
    (
        "archive",
        "is not a VM option (create does not restore backups)",
    ),
    (
        "live-restore",
        "is not a VM option (create does not restore backups)",
    ),
    (
        "force",
        "is not a VM option (it would overwrite an existing VM)",
    ),
    ("unique", "is not a VM option"),
    ("digest", "is not a VM option"),
    (
        "template",
        "is not a VM option (use convertToTemplate after create)",
    ),
];

/// The arguments of the qemu model's `create`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmCreateArgs {
    pub vmid: VmidChoice,
    pub name: String,
    pub cores: Option<u64>,
    pub memory: Option<u64>,
    pub agent: Option<bool>,
    pub start: bool,
    /// Start the VM and wait until it is usable (`guest::readiness`), as `clone` does.
    pub ready: Option<ReadyArgs>,
    /// Further VM options (`scsi0`, `net0`, `ide2`, `ciuser`, `sshkeys`, `tags`, …), as text.
    pub config: Vec<(String, String)>,
}

/// The VM's own fields in the order they are checked (the config and the VMID after the name).
const FIELDS: [Spec; 5] = [
    Spec::new("name", Kind::Line).rule(name_fault),
    Spec::new("cores", Kind::CountIn(1, 1024)),
    Spec::new("memory", Kind::CountIn(16, 268_435_456)),
    Spec::new("agent", Kind::OptionalFlag),
    Spec::new("start", Kind::Flag(false)),
];

fn name_fault(name: &str) -> Option<&'static str> {
    (!is_dns_name(name)).then_some(
        "must be a DNS name (letters, digits and inner hyphens, labels joined by dots), as PVE requires of a VM name",
    )
}

impl VmCreateArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        // One table in two walks, the config and the VMID read between them as before.
        let mut read = [Read::default(); FIELDS.len()];
        let (first, rest) = FIELDS.split_at(1);
        let (read_first, read_rest) = read.split_at_mut(1);
        fields.read_all(first, read_first)?;
        let mut config = fields
            .options("config", &REFUSED_CONFIG_KEYS)?
            .unwrap_or_default();
        for (key, value) in &mut config {
            if let Some(rule) = value_rule(value) {
                return Err(ArgError::new(format!("config.{key}"), rule));
            }
            // `sshkeys` goes URL-encoded, as PVE requires (and reads back decoded).
            if key == "sshkeys" {
                *value = ssh_keys_param(value);
            }
        }
        let vmid = VmidChoice::parse(&fields)?;
        fields.read_all(rest, read_rest)?;
        let [name, cores, memory, agent, start] = read;
        // Read before the name is copied: a refusal then has nothing more to drop.
        let ready = ReadyArgs::wait_ready(&fields)?;
        Ok(VmCreateArgs {
            vmid,
            name: name.owned_or(""),
            cores: cores.count(),
            memory: memory.count(),
            agent: agent.flag(),
            start: start.int != 0,
            ready,
            config,
        })
    }

    /// The arguments as they go out: a boolean option as PVE's 1/0 whatever the user wrote (yes,
    /// on, true …).
    // Always inlined into its one caller, the method that boxes the arguments (issue 32).
    #[inline(always)]
    pub fn wired(args: &Value) -> Result<Self, ArgError> {
        let mut args = VmCreateArgs::parse(args)?;
        wire_options(GuestKind::Qemu, "config", &mut args.config)?;
        Ok(args)
    }

    /// The parameters of `POST /nodes/{node}/qemu` for `vmid`: the `swamp` tag is added to the
    /// config's tags; `sshkeys` goes URL-encoded, as PVE requires.
    pub fn params(&self, vmid: u32) -> Vec<(String, String)> {
        // Each pushed by the shared `push_param`, not built in place (issue 32).
        let mut params = Vec::new();
        push_param(&mut params, "vmid", &vmid.to_string());
        push_param(&mut params, "name", &self.name);
        if let Some(agent) = self.agent {
            push_param(&mut params, "agent", if agent { "1" } else { "0" });
        }
        let numbers = [("cores", self.cores), ("memory", self.memory)];
        push_create_options(&mut params, &numbers, &self.config);
        params
    }

    /// The settings that must read back as requested: every config key of PVE's schema that was
    /// sent (the tags with the managed tag) but the name (checked on its own) and `cipassword`
    /// (PVE keeps only its hash: checked by presence).
    pub fn settings(&self) -> Vec<(String, String)> {
        settings_of(GuestKind::Qemu, self.params(0), &["name", "cipassword"])
    }

    /// The disks the request makes: `(key, storage, import-from source)`, cloud-init drives aside.
    pub fn new_disks(&self) -> Vec<NewDisk<'_>> {
        let mut disks = Vec::new();
        for (key, value) in &self.config {
            if GuestKind::Qemu.is_disk(key) && is_new_volume(value, None) {
                disks.push(NewDisk {
                    key,
                    storage: storage_of(value),
                    import_from: property(value, "import-from"),
                });
            }
        }
        disks
    }

    /// What create places on the node: each new disk and cloud-init drive on a storage taking
    /// `images`, each `import-from` image of the form `<storage>:import/<file>`, the bridges.
    pub fn placement(&self) -> Placement<'_> {
        let mut allocations: Vec<Allocation> = Vec::new();
        let mut sources: Vec<Source> = Vec::new();
        for (key, value) in &self.config {
            if !GuestKind::Qemu.is_disk(key) {
                continue;
            }
            let volume = value.split(',').next().unwrap_or_default();
            if let Some(storage) = volume.strip_suffix(":cloudinit") {
                allocations.push(Allocation {
                    key,
                    storage,
                    bytes: CLOUDINIT_BYTES,
                });
                continue;
            }
            if let Some(allocation) = allocation_of(key, value) {
                allocations.push(allocation);
            }
            if let Some(image) = property(value, "import-from").filter(|v| v.contains(":import/")) {
                sources.push(Source {
                    key,
                    volid: image,
                    content: "import",
                });
            }
        }
        Placement {
            content: "images",
            allocations,
            sources,
            bridges: bridges_of(&self.config),
        }
    }
}

/// The rule a `config` value breaks, if any.
fn value_rule(value: &str) -> Option<&'static str> {
    if value.contains('\0') {
        return Some("must not contain NUL");
    }
    // qemu-server `$check_drive_param`: "'import-from' requires special syntax".
    match asks_import(value) && !is_new_volume(value, Some(0.0)) {
        true => Some("import-from needs the volume <storage>:0 (PVE sizes the disk by the image), e.g. local-lvm:0,import-from=local:import/cloud.qcow2"),
        false => None,
    }
}

/// Whether a drive value asks for a new volume (`<storage>:<GiB>`, the GiB as digits with an
/// optional fraction), of `gib` GiB when given.
fn is_new_volume(value: &str, gib: Option<f64>) -> bool {
    let volume = value.split(',').next().unwrap_or_default();
    let Some((storage, size)) = volume.split_once(':') else {
        return false;
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let plain = match size.split_once('.') {
        Some((whole, fraction)) => digits(whole) && digits(fraction),
        None => digits(size),
    };
    let size = crate::pve::flex::number_in(size).filter(|_| plain);
    !storage.is_empty() && size.is_some() && gib.is_none_or(|want| size == Some(want))
}

/// Whether a value holds an `import-from=` part (PVE's drive option that imports an image).
fn asks_import(value: &str) -> bool {
    value.split(',').any(|part| {
        part.split_once('=')
            .is_some_and(|(k, _)| k == "import-from")
    })
}

impl NewGuest for VmCreateArgs {
    fn vmid(&self) -> VmidChoice {
        self.vmid
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// What PVE would refuse this caller (an API token) among the new VM's options.
    fn refusal(&self, caller: Caller) -> Option<String> {
        let mut keys = Vec::with_capacity(self.config.len());
        for (key, _) in &self.config {
            keys.push(key.as_str());
        }
        qemu_refusal(caller, &keys)
    }

    fn request(&self, node: &str, vmid: u32, _before: &Before) -> PveRequest {
        endpoints::qemu_create(node, self.params(vmid))
    }

    fn placement(&self) -> Option<Placement<'_>> {
        Some(VmCreateArgs::placement(self))
    }

    fn settings(&self) -> Vec<(String, String)> {
        VmCreateArgs::settings(self)
    }

    /// A `cipassword` that was sent is set (PVE keeps only its hash: checked by presence).
    fn judge_config(&self, label: &str, config: &Map<String, Value>) -> Result<(), String> {
        match option(&self.config, "cipassword").is_some() && !config.contains_key("cipassword") {
            true => Err(format!(
                "{label} exists, but its config holds no cipassword although one was sent — check the create task's log"
            )),
            false => Ok(()),
        }
    }

    fn disks(&self) -> Option<Vec<NewDisk<'_>>> {
        Some(self.new_disks())
    }

    fn start(&self) -> bool {
        self.start
    }

    fn ready(&self) -> Option<&ReadyArgs> {
        self.ready.as_ref()
    }
}

/// Runs the qemu model's `create`.
pub fn vm_create<'a, H: Host>(
    run: &'a Run<'a, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, H> {
    // Read before the course is polled: the same moment as a first step of it, since dispatch
    // awaits the future at once.
    let parsed = VmCreateArgs::wired(args).map(|args| Box::new(args) as Box<dyn NewGuest>);
    create_then_start(run, parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmcreate:500:root@pam!t:";
    const IMAGE: &str = "local:import/cloud.qcow2";
    const IMAGE_BYTES: u64 = 300_000;

    fn request(extra: Value) -> Value {
        let mut args = json!({
            "vmid": 500, "name": "web-vm", "cores": 2, "memory": 2048, "agent": true,
            "config": {
                "scsi0": format!("local-lvm:0,import-from={IMAGE}"),
                "ide2": "local-lvm:cloudinit",
                "net0": "virtio,bridge=vmbr0",
                "ciuser": "ops"
            }
        });
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    }

    fn parse(extra: Value) -> Result<VmCreateArgs, ArgError> {
        VmCreateArgs::parse(&request(extra))
    }

    /// The config PVE stores for [`request`]'s VM.
    fn as_created() -> Value {
        json!({"name": "web-vm", "cores": 2, "memory": "2048", "agent": "1", "tags": "swamp",
               "scsi0": "local-lvm:vm-500-disk-0,size=300000",
               "ide2": "local-lvm:vm-500-cloudinit,media=cdrom",
               "net0": "virtio=BC:24:11:00:05:00,bridge=vmbr0", "ciuser": "ops",
               "smbios1": "uuid=5f0c0a36-1a2b-4c3d-8e9f-000000000500"})
    }

    fn node(host: &ScriptedHost) {
        host.data(
            "GET /nodes/pve1/storage",
            json!([{"storage": "local", "content": "iso,vztmpl,import", "enabled": 1, "active": 1},
                   {"storage": "local-lvm", "content": "images,rootdir", "enabled": 1, "active": 1,
                    "avail": 100u64 << 30}]),
        );
        host.data(
            "GET /nodes/pve1/storage/local/content",
            json!([{"volid": IMAGE, "size": IMAGE_BYTES}]),
        );
        host.data(
            "GET /nodes/pve1/network",
            json!([{"iface": "vmbr0", "type": "bridge", "active": 1}]),
        );
    }

    fn created(host: &ScriptedHost, disk_bytes: Option<u64>) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 500, "type": "qemu", "node": "pve1", "name": "web-vm"}]),
        );
        host.data("POST /nodes/pve1/qemu", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.data("GET /nodes/pve1/qemu/500/config", as_created());
        host.data(
            "GET /nodes/pve1/qemu/500/status/current",
            json!({"status": "stopped", "name": "web-vm", "tags": "swamp"}),
        );
        let listed = match disk_bytes {
            Some(size) => json!([{"volid": "local-lvm:vm-500-disk-0", "size": size}]),
            None => json!([]),
        };
        host.data("GET /nodes/pve1/storage/local-lvm/content", listed);
    }

    fn run_create(host: &ScriptedHost, extra: Value) -> Outcome {
        run_method(host, "qemu", "create", request(extra))
    }

    fn posted(host: &ScriptedHost) -> bool {
        host.routes_called().iter().any(|r| r.starts_with("POST"))
    }

    #[test]
    fn argument_rules() {
        let field = |extra: Value| parse(extra).err().map(|e| e.field.clone());
        assert_eq!(field(json!({})), None);
        assert_eq!(field(json!({"name": "web_vm"})), Some("name".into()));
        assert_eq!(
            field(json!({"config": {"scsi0": format!("local-lvm:8,import-from={IMAGE}")}})),
            Some("config.scsi0".into())
        );
        assert_eq!(
            field(json!({"config": {"archive": "local:backup/x.vma.zst"}})),
            Some("config.archive".into())
        );
        assert_eq!(
            field(json!({"config": {"name": "x"}})),
            Some("config.name".into())
        );
        assert_eq!(
            field(json!({"config": {"ciuser": "a\u{0}b"}})),
            Some("config.ciuser".into())
        );
        assert_eq!(field(json!({"cores": 0})), Some("cores".into()));
        assert_eq!(field(json!({"memory": 8})), Some("memory".into()));
        assert_eq!(
            field(json!({"vmid": 500, "vmidRange": {"min": 500, "max": 600}})),
            Some("vmidRange".into())
        );
        assert_eq!(
            field(json!({"waitReady": {"ipv4": "yes"}})),
            Some("waitReady.ipv4".into())
        );
    }

    #[test]
    fn params_add_the_managed_tag_and_encode_the_keys() {
        let args =
            parse(json!({"config": {"tags": "web", "sshkeys": "ssh-ed25519 AAAA me"}})).unwrap();
        let params = args.params(500);
        let get = |k: &str| {
            params
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("tags"), Some("web;swamp"));
        assert_eq!(get("agent"), Some("1"));
        assert_eq!(get("sshkeys"), Some("ssh-ed25519%20AAAA%20me"));
        assert_eq!(get("start"), None, "the start is ours, verified");
        assert_eq!(params.iter().filter(|(k, _)| k == "tags").count(), 1);
    }

    #[test]
    fn the_placement_holds_the_disks_the_cloud_init_drive_the_image_and_the_bridges() {
        let args = parse(json!({"config": {
            "scsi0": format!("local-lvm:0,import-from={IMAGE}"), "scsi1": "local-zfs:8",
            "ide2": "local-lvm:cloudinit", "ide0": "local:iso/x.iso,media=cdrom",
            "net0": "virtio,bridge=vmbr1"}}))
        .unwrap();
        let placement = args.placement();
        let keys: Vec<(&str, &str, u64)> = placement
            .allocations
            .iter()
            .map(|a| (a.key, a.storage, a.bytes))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("ide2", "local-lvm", 4 << 20),
                ("scsi0", "local-lvm", 0),
                ("scsi1", "local-zfs", 8 << 30)
            ]
        );
        assert_eq!(placement.sources.len(), 1);
        assert_eq!(placement.sources[0].volid, IMAGE);
        assert_eq!(placement.bridges, vec![("net0", "vmbr1")]);
        let disks: Vec<&str> = args.new_disks().into_iter().map(|d| d.key).collect();
        assert_eq!(disks, vec!["scsi0", "scsi1"]);
    }

    #[test]
    fn a_vm_from_an_image_is_created_and_its_imported_disk_verified() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/nextid", json!("500"));
        node(&host);
        created(&host, Some(IMAGE_BYTES));
        let outcome = run_create(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        let Verdict::Succeeded { summary } = &outcome.verdict else {
            unreachable!()
        };
        assert!(
            summary.contains("imported from local:import/cloud.qcow2 (300000 bytes"),
            "{summary}"
        );
        assert_eq!(outcome.writes[0].instance, "vm-500");
        let body = host.first_body("POST");
        assert!(
            body.contains("scsi0=local-lvm%3A0%2Cimport-from%3Dlocal%3Aimport%2Fcloud.qcow2"),
            "{body}"
        );
        assert!(
            body.contains("tags=swamp") && body.contains("name=web-vm"),
            "{body}"
        );
    }

    #[test]
    fn an_imported_disk_of_another_size_fails_naming_both() {
        for (listed, words) in [
            (Some(0), "holds 0 bytes where the image has 300000"),
            (Some(1000), "holds 1000 bytes"),
            (None, "is not on storage local-lvm"),
        ] {
            let host = ScriptedHost::new();
            host.data("GET /cluster/nextid", json!("500"));
            node(&host);
            created(&host, listed);
            let outcome = run_create(&host, json!({}));
            let message = failure_of(&outcome);
            assert!(message.contains(words), "{message}");
            assert_eq!(
                outcome.writes[0].instance, "vm-500",
                "the VM is recorded as seen"
            );
        }
    }

    #[test]
    fn a_setting_pve_stored_otherwise_fails_naming_it() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/nextid", json!("500"));
        node(&host);
        let mut config = as_created();
        config["cores"] = json!(1);
        host.data("GET /nodes/pve1/qemu/500/config", config);
        created(&host, Some(IMAGE_BYTES));
        let message = failure_of(&run_create(&host, json!({}))).to_string();
        assert!(
            message.contains("`cores` is \"1\", not the requested \"2\""),
            "{message}"
        );
    }

    #[test]
    fn a_missing_image_or_bridge_is_refused_before_anything_changes() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/nextid", json!("500"));
        node(&host);
        let outcome = run_create(
            &host,
            json!({"config": {"scsi0": "local-lvm:0,import-from=local:import/other.qcow2",
                              "net0": "virtio,bridge=vmbr7"}}),
        );
        let message = failure_of(&outcome);
        assert!(message.starts_with("cannot create VM 500 on node pve1; nothing was changed. 2 problems found: (1) scsi0 import-from \"local:import/other.qcow2\" is not in the content of storage local"), "{message}");
        assert!(
            message.contains("downloadUrl with content import"),
            "{message}"
        );
        assert!(
            message.contains("(2) net0: bridge vmbr7 does not exist"),
            "{message}"
        );
        assert!(!posted(&host));
    }

    #[test]
    fn a_re_run_finds_the_same_vm_and_checks_it_again() {
        let host = ScriptedHost::new();
        host.on(
            "GET /cluster/nextid",
            [Answer::Error(400, "VM 500 already exists".into())],
        );
        node(&host);
        created(&host, Some(IMAGE_BYTES));
        let outcome = run_create(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(!posted(&host));
    }

    /// The answers of a real PVE 9.2 node to `create` with `scsi0: local:1,format=qcow2` on its dir
    /// storage `local` (../shared/realpve/transcript-2026-12-03.jsonl): it stores the disk as
    /// `local:902/vm-902-disk-0.qcow2,size=1G`, without `format=`.
    fn real_node_made(host: &ScriptedHost, scsi0: &str) {
        let upid = "UPID:pve1:00004387:001C01B0:6B115316:qmcreate:902:root@pam!probe:";
        host.data(
            "GET /nodes/pve1/storage",
            json!([{"storage": "local", "type": "dir", "enabled": 1, "active": 1,
                    "content": "rootdir,images,backup,vztmpl,iso,snippets", "avail": 79394811904u64}]),
        );
        host.data("GET /cluster/nextid", json!("902"));
        host.data("POST /nodes/pve1/qemu", json!(upid));
        host.data(
            &format!("GET /nodes/pve1/tasks/{upid}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.data(
            "GET /nodes/pve1/qemu/902/status/current",
            json!({"status": "stopped", "name": "probe902", "tags": "swamp", "vmid": 902}),
        );
        host.data(
            "GET /nodes/pve1/qemu/902/config",
            json!({"cores": 1, "memory": "256", "tags": "swamp", "name": "probe902",
                   "boot": "order=scsi0", "scsi0": scsi0,
                   "meta": "creation-qemu=7.2.22,ctime=1796297494",
                   "smbios1": "uuid=1da25882-39dd-4346-a536-ea05775feb70"}),
        );
        let volid = scsi0.split(',').next().unwrap();
        host.data(
            "GET /nodes/pve1/storage/local/content",
            json!([{"volid": volid, "format": "qcow2", "size": 1u64 << 30, "vmid": 902}]),
        );
    }

    fn create_902(host: &ScriptedHost, scsi0: &str) -> Outcome {
        let args = json!({"vmid": 902, "name": "probe902", "cores": 1, "memory": 256,
                          "config": {"scsi0": scsi0}});
        run_method(host, "qemu", "create", args)
    }

    #[test]
    fn a_qcow2_disk_on_a_dir_storage_succeeds_as_the_real_node_stores_it() {
        let host = ScriptedHost::new();
        real_node_made(&host, "local:902/vm-902-disk-0.qcow2,size=1G");
        let outcome = create_902(&host, "local:1,format=qcow2");
        assert!(outcome.is_success(), "{outcome:?}");
        let Verdict::Succeeded { summary } = &outcome.verdict else {
            unreachable!()
        };
        assert!(
            summary.contains("scsi0 is local:902/vm-902-disk-0.qcow2 (1073741824 bytes)"),
            "{summary}"
        );
    }

    #[test]
    fn a_disk_pve_made_in_another_format_than_asked_fails_naming_both() {
        let host = ScriptedHost::new();
        real_node_made(&host, "local:902/vm-902-disk-0.raw,size=1G");
        let message = failure_of(&create_902(&host, "local:1,format=qcow2")).to_string();
        assert!(
            message.contains(
                "`scsi0` is \"local:902/vm-902-disk-0.raw,size=1G\", not the requested \"local:1,format=qcow2\""
            ),
            "{message}"
        );
    }

    #[test]
    fn root_only_options_are_refused_for_a_token() {
        let host = ScriptedHost::new();
        let outcome = run_create(&host, json!({"config": {"args": "-no-reboot"}}));
        assert!(
            failure_of(&outcome).contains("only root can set 'args'"),
            "{outcome:?}"
        );
        assert!(host.routes_called().is_empty());
    }

    use crate::outcome::Verdict;
}
