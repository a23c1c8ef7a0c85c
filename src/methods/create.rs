//! `create` (containers): a new container from a template, successful only when it is seen on the
//! node with the requested hostname and the managed `swamp` tag.
//!
//! 1. The VMID: free, or already holding this very container (same hostname AND the `swamp` tag: a
//!    re-run, nothing is created); anything else fails "VMID <n> is in use by another guest".
//! 2. Feasibility, before anything changes: the request is mapped onto the node and every problem is
//!    reported in ONE message — the volume storages (rootfs, and mpN given as `<storage>:<GiB>`)
//!    exist on the node, are enabled and active, allow container volumes (`rootdir`) and have room;
//!    the `ostemplate` is in the content listing of a storage that holds templates (`vztmpl`); every
//!    `bridge=` of the netN options exists on the node and is up. PVE checks a missing template only
//!    inside the task and a missing bridge not at all until the first start fails.
//! 3. `POST /nodes/{node}/lxc` (on the transport's node) with the `swamp` tag added to any tags the
//!    config gives; its `vzcreate` task is followed to its end.
//! 4. The container is located and its status read: it must carry the hostname and the tag.
//! 5. `start: true` then goes through `start`'s verified start (status/current shows it running).

use crate::args::{is_dns_name, ArgError, Fields, Kind, Read, Spec};
use crate::guest::config::wire_options;
use crate::guest::create_course::{Before, NewDisk, NewGuest};
use crate::guest::placement::{allocation_of, bridges_of, numbered, Allocation, Placement, Source};
use crate::guest::provision::{push_create_options, settings_of};
use crate::guest::root_only::{ct_refusal, Caller, CtState};
use crate::guest::vmid_claim::VmidChoice;
use crate::host::Host;
use crate::methods::start::create_then_start;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::request::{push_param, PveRequest};
use crate::run::Run;
use serde_json::Value;
use std::future::Future;

const GIB: u64 = 1 << 30;

/// Keys the `config` bag may not hold: they have their own argument, or change how PVE creates
/// (`force` would overwrite an existing container) rather than what it creates.
pub const REFUSED_CONFIG_KEYS: [(&str, &str); 16] = [
    ("hostname", "has its own argument: hostname"),
    ("ostemplate", "has its own argument: ostemplate"),
    ("storage", "has its own argument: storage"),
    ("rootfs", "is set from the storage and rootfsSize arguments"),
    ("cores", "has its own argument: cores"),
    ("memory", "has its own argument: memory"),
    ("swap", "has its own argument: swap"),
    ("unprivileged", "has its own argument: unprivileged"),
    ("features", "has its own argument: features"),
    ("start", "has its own argument: start"),
    ("vmid", "has its own argument: vmid"),
    (
        "node",
        "is not a container option (the transport's node is used)",
    ),
    (
        "force",
        "is not a container option (it would overwrite an existing container)",
    ),
    (
        "restore",
        "is not a container option (create does not restore backups)",
    ),
    ("unique", "is not a container option"),
    ("digest", "is not a container option"),
];

/// The arguments of `create`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateArgs {
    pub vmid: VmidChoice,
    pub ostemplate: String,
    pub hostname: String,
    pub storage: String,
    pub rootfs_gib: u64,
    pub cores: Option<u64>,
    pub memory: Option<u64>,
    pub swap: Option<u64>,
    pub unprivileged: bool,
    pub features: Option<String>,
    pub ssh_public_keys: Option<String>,
    pub start: bool,
    /// Further container options (`net0`, `nameserver`, `tags`, `mp0`…), as text.
    pub config: Vec<(String, String)>,
}

/// The container's fields in the order they are checked (the VMID comes after the first two).
const FIELDS: [Spec; 11] = [
    Spec::new("hostname", Kind::Line).rule(hostname_fault),
    Spec::new("sshPublicKeys", Kind::Text).rule(keys_fault),
    Spec::new("ostemplate", Kind::Line),
    Spec::new("storage", Kind::Segment),
    Spec::new("rootfsSize", Kind::IntOr(1, 131_072, 8)),
    Spec::new("cores", Kind::CountIn(1, 8192)),
    Spec::new("memory", Kind::CountIn(16, 67_108_864)),
    Spec::new("swap", Kind::CountIn(0, 67_108_864)),
    Spec::new("unprivileged", Kind::Flag(true)),
    Spec::new("features", Kind::OptionalLine),
    Spec::new("start", Kind::Flag(false)),
];

fn hostname_fault(hostname: &str) -> Option<&'static str> {
    (!is_dns_name(hostname)).then_some(
        "must be a DNS name (letters, digits and inner hyphens, labels joined by dots, at most 255 characters)",
    )
}

fn keys_fault(keys: &str) -> Option<&'static str> {
    keys.contains('\0').then_some("must not contain NUL")
}

impl CreateArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        // Two walks of one table, the VMID read between them as before: every field is checked
        // borrowed before any is copied, so a refusal drops nothing (issue 32).
        let mut read = [Read::default(); FIELDS.len()];
        let (first, rest) = FIELDS.split_at(2);
        let (read_first, read_rest) = read.split_at_mut(2);
        fields.read_all(first, read_first)?;
        let vmid = VmidChoice::parse(&fields)?;
        fields.read_all(rest, read_rest)?;
        let [hostname, keys, ostemplate, storage, rootfs, cores, memory, swap, unprivileged, features, start] =
            read;
        let config = fields.options("config", &REFUSED_CONFIG_KEYS)?;
        Ok(CreateArgs {
            vmid,
            ostemplate: ostemplate.owned_or(""),
            hostname: hostname.owned_or(""),
            storage: storage.owned_or(""),
            rootfs_gib: rootfs.int as u64,
            cores: cores.count(),
            memory: memory.count(),
            swap: swap.count(),
            unprivileged: unprivileged.int != 0,
            features: features.owned(),
            ssh_public_keys: keys.owned(),
            start: start.int != 0,
            config: config.unwrap_or_default(),
        })
    }

    /// The arguments as they go out: a boolean option as PVE's 1/0 whatever the user wrote.
    // Always inlined into its one caller, the method that boxes the arguments (issue 32).
    #[inline(always)]
    pub fn wired(args: &Value) -> Result<Self, ArgError> {
        let mut args = CreateArgs::parse(args)?;
        wire_options(GuestKind::Lxc, "config", &mut args.config)?;
        Ok(args)
    }

    /// The parameters of `POST /nodes/{node}/lxc` for `vmid`: the `swamp` tag is added to the
    /// config's tags.
    pub fn params(&self, vmid: u32) -> Vec<(String, String)> {
        // Each pushed by the shared `push_param`, not built in place (issue 32).
        let mut params = Vec::new();
        let mut add = |key: &str, value: &str| push_param(&mut params, key, value);
        add("vmid", &vmid.to_string());
        add("ostemplate", &self.ostemplate);
        add("hostname", &self.hostname);
        add("storage", &self.storage);
        add("rootfs", &format!("{}:{}", self.storage, self.rootfs_gib));
        add("unprivileged", if self.unprivileged { "1" } else { "0" });
        if let Some(features) = &self.features {
            add("features", features);
        }
        if let Some(keys) = self.ssh_public_keys.as_deref().filter(|k| !k.is_empty()) {
            add("ssh-public-keys", keys);
        }
        let numbers = [
            ("cores", self.cores),
            ("memory", self.memory),
            ("swap", self.swap),
        ];
        push_create_options(&mut params, &numbers, &self.config);
        params
    }

    /// The resource settings create asks for that are config keys of the container (every one must
    /// read back as requested): cores, memory, swap, rootfs, unprivileged, features, the tags with
    /// the managed tag, and each config key of PVE's schema.
    pub fn settings(&self) -> Vec<(String, String)> {
        // The VMID is not a setting (nor a config key): any number will do here.
        settings_of(GuestKind::Lxc, self.params(0), &["hostname"])
    }

    /// What create places on the node: `rootfs`, and each `mpN` given as `<storage>:<GiB>` (an
    /// existing volume or a bind mount allocates nothing), on storages that take `rootdir`; the
    /// `ostemplate`; the bridges of the netN options.
    pub fn placement(&self) -> Placement<'_> {
        let mut allocations = vec![Allocation {
            key: "rootfs",
            storage: &self.storage,
            bytes: self.rootfs_gib.saturating_mul(GIB),
        }];
        for (key, value) in &self.config {
            if numbered(key, "mp") {
                if let Some(allocation) = allocation_of(key, value) {
                    allocations.push(allocation);
                }
            }
        }
        Placement {
            content: "rootdir",
            allocations,
            sources: vec![Source {
                key: "ostemplate",
                volid: &self.ostemplate,
                content: "vztmpl",
            }],
            bridges: bridges_of(&self.config),
        }
    }
}

impl NewGuest for CreateArgs {
    fn vmid(&self) -> VmidChoice {
        self.vmid
    }

    fn name(&self) -> &str {
        &self.hostname
    }

    /// What PVE would refuse this caller (an API token) in the new container's config.
    fn refusal(&self, caller: Caller) -> Option<String> {
        let mut options = self.config.clone();
        if let Some(features) = &self.features {
            options.push(("features".into(), features.clone()));
        }
        let state = CtState {
            unprivileged: self.unprivileged,
            features: None,
        };
        ct_refusal(caller, &options, &[], state)
    }

    fn request(&self, node: &str, vmid: u32, _before: &Before) -> PveRequest {
        endpoints::lxc_create(node, self.params(vmid))
    }

    fn placement(&self) -> Option<Placement<'_>> {
        Some(CreateArgs::placement(self))
    }

    fn settings(&self) -> Vec<(String, String)> {
        CreateArgs::settings(self)
    }

    /// Its volumes are judged by the settings that read back (rootfs, mpN).
    fn disks(&self) -> Option<Vec<NewDisk<'_>>> {
        None
    }

    fn start(&self) -> bool {
        self.start
    }
}

/// Runs `create`.
pub fn create<'a, H: Host>(
    run: &'a Run<'a, H>,
    args: &Value,
) -> impl Future<Output = Outcome> + use<'a, H> {
    // Read before the course is polled: the same moment as a first step of it, since dispatch
    // awaits the future at once.
    let parsed = CreateArgs::wired(args).map(|args| Box::new(args) as Box<dyn NewGuest>);
    create_then_start(run, parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::placement::{problems, Survey};
    use crate::pve::responses::{NodeStorage, StorageVolume};
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    const TEMPLATE: &str = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst";
    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:vzcreate:400:root@pam!t:";

    fn request(extra: Value) -> Value {
        let mut args = json!({
            "vmid": 400, "ostemplate": TEMPLATE, "hostname": "web-ct", "storage": "local-lvm",
            "config": {"net0": "name=eth0,bridge=vmbr0,ip=10.0.0.40/24"}
        });
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    }

    fn parsed(extra: Value) -> CreateArgs {
        CreateArgs::parse(&request(extra)).unwrap()
    }

    fn storage(id: &str, content: &str, avail_gib: u64) -> NodeStorage {
        crate::pve::responses::parse(&json!({"storage": id, "content": content, "enabled": 1,
            "active": 1, "avail": avail_gib * GIB}))
        .unwrap()
    }

    fn interface(entry: Value) -> serde_json::Map<String, Value> {
        entry.as_object().unwrap().clone()
    }

    fn node_facts() -> Survey<'static> {
        Survey {
            storages: Some(Ok(vec![
                storage("local", "iso,vztmpl,backup", 50),
                storage("local-lvm", "images,rootdir", 100),
            ])),
            contents: vec![(
                "local",
                Ok(vec![StorageVolume {
                    volid: TEMPLATE.to_string(),
                    size: None,
                }]),
            )],
            bridges: Some(Ok(vec![interface(json!({"iface": "vmbr0", "active": 1}))])),
        }
    }

    #[test]
    fn a_request_that_fits_the_node_has_no_problems() {
        assert_eq!(
            problems(&parsed(json!({})).placement(), "pve1", &node_facts()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_problem_is_found_at_once() {
        let args = parsed(json!({
            "storage": "local", "ostemplate": "local:vztmpl/missing.tar.zst",
            "config": {"net0": "name=eth0,bridge=vmbr9", "net1": "name=eth1,bridge=vmbr0"}
        }));
        let mut facts = node_facts();
        facts.bridges = Some(Ok(vec![interface(json!({"iface": "vmbr0"}))]));
        let found = problems(&args.placement(), "pve1", &facts);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found[0].contains("rootfs storage local does not allow content rootdir (its content: iso, vztmpl, backup)"), "{}", found[0]);
        assert!(
            found[1].contains("is not in the content of storage local"),
            "{}",
            found[1]
        );
        assert!(
            found[2]
                .starts_with("net0: bridge vmbr9 does not exist on node pve1 (its bridges: vmbr0)"),
            "{}",
            found[2]
        );
        assert!(
            found[3].starts_with("net1: bridge vmbr0 exists on node pve1 but is not active"),
            "{}",
            found[3]
        );
    }

    #[test]
    fn storage_state_and_room_are_checked_per_storage_summing_its_volumes() {
        let args = parsed(json!({"rootfsSize": 8, "config": {"mp0": "local-lvm:4,mp=/data"}}));
        let mut facts = node_facts();
        facts.storages = Some(Ok(vec![
            storage("local", "vztmpl", 50),
            storage("local-lvm", "images,rootdir", 10),
        ]));
        let found = problems(&args.placement(), "pve1", &facts);
        assert_eq!(found, vec!["rootfs and mp0 storage local-lvm has 10 GiB free on node pve1, but 12 GiB are needed".to_string()]);
        let mut disabled = storage("local-lvm", "rootdir", 100);
        disabled.enabled = Some(false);
        let mut offline = storage("local", "vztmpl", 100);
        offline.active = Some(false);
        facts.storages = Some(Ok(vec![offline, disabled]));
        let found = problems(&parsed(json!({})).placement(), "pve1", &facts);
        assert!(
            found[0].contains("rootfs storage local-lvm is disabled"),
            "{found:?}"
        );
        assert!(
            found[1].contains("ostemplate storage local is not active"),
            "{found:?}"
        );
    }

    #[test]
    fn absurd_mount_point_sizes_saturate_instead_of_overflowing() {
        let args = parsed(json!({"config": {"mp0": "local-lvm:1e300", "mp1": "local-lvm:1e300"}}));
        let found = problems(&args.placement(), "pve1", &node_facts());
        assert!(
            found[0].contains("rootfs and mp0 and mp1 storage local-lvm"),
            "{found:?}"
        );
    }

    #[test]
    fn unknown_storages_and_malformed_templates_are_named() {
        let args = parsed(json!({"storage": "nope", "ostemplate": "debian.tar.zst"}));
        let found = problems(&args.placement(), "pve1", &node_facts());
        assert!(
            found[0].starts_with("rootfs: storage nope does not exist on node pve1"),
            "{found:?}"
        );
        assert!(
            found[0].contains("storages listed: local, local-lvm"),
            "{found:?}"
        );
        assert!(
            found[1].contains("is not a template volume id"),
            "{found:?}"
        );
    }

    #[test]
    fn unreadable_lists_are_problems_not_passes() {
        let mut facts = node_facts();
        facts.bridges = Some(Err(
            "Permission check failed (/nodes/pve1, Sys.Audit) (HTTP 403)".into(),
        ));
        let found = problems(&parsed(json!({})).placement(), "pve1", &facts);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("needs Sys.Audit"), "{found:?}");
        facts.storages = Some(Err("boom".into()));
        assert!(problems(&parsed(json!({})).placement(), "pve1", &facts)[0]
            .contains("could not be listed"));
    }

    #[test]
    fn params_add_the_managed_tag_and_map_the_arguments() {
        let args = parsed(
            json!({"cores": 2, "memory": 1024, "swap": 0, "unprivileged": false,
            "sshPublicKeys": "ssh-ed25519 AAAA me", "config": {"tags": "web", "nameserver": "1.1.1.1"}}),
        );
        let params = args.params(400);
        let get = |k: &str| {
            params
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("rootfs"), Some("local-lvm:8"));
        assert_eq!(get("tags"), Some("web;swamp"));
        assert_eq!(get("unprivileged"), Some("0"));
        assert_eq!(get("swap"), Some("0"));
        assert_eq!(get("ssh-public-keys"), Some("ssh-ed25519 AAAA me"));
        assert_eq!(get("nameserver"), Some("1.1.1.1"));
        assert_eq!(params.iter().filter(|(k, _)| k == "tags").count(), 1);
        assert_eq!(get("start"), None, "the start is ours, verified, not PVE's");
    }

    #[test]
    fn argument_rules() {
        let parse = |extra: Value| CreateArgs::parse(&request(extra));
        assert_eq!(parsed(json!({})).rootfs_gib, 8);
        assert!(parsed(json!({})).unprivileged);
        for bad in ["-web", "web-", "a..b", "a_b", "", "x\ny"] {
            assert_eq!(
                parse(json!({"hostname": bad})).unwrap_err().field,
                "hostname",
                "{bad}"
            );
        }
        assert!(parse(json!({"hostname": "web-1.example.org"})).is_ok());
        assert_eq!(
            parse(json!({"config": {"force": 1}})).unwrap_err().field,
            "config.force"
        );
        assert_eq!(
            parse(json!({"config": {"cores": 1}})).unwrap_err().field,
            "config.cores"
        );
        assert_eq!(
            parse(json!({"config": {"-net0": "x"}})).unwrap_err().field,
            "config.-net0"
        );
        assert_eq!(parse(json!({"swap": -1})).unwrap_err().field, "swap");
        assert_eq!(
            parse(json!({"rootfsSize": 0})).unwrap_err().field,
            "rootfsSize"
        );
        assert_eq!(
            parse(json!({"storage": "a:b"})).unwrap_err().field,
            "storage"
        );
        assert_eq!(
            parse(json!({"sshPublicKeys": "a\u{0}"})).unwrap_err().field,
            "sshPublicKeys"
        );
        assert!(parse(json!({"sshPublicKeys": "k1\nk2\n"})).is_ok());
    }

    fn node(host: &ScriptedHost) {
        host.data(
            "GET /nodes/pve1/storage",
            json!([{"storage": "local", "content": "iso,vztmpl", "enabled": 1, "active": 1, "avail": 50u64 * GIB},
                   {"storage": "local-lvm", "content": "rootdir,images", "enabled": 1, "active": 1, "avail": 100u64 * GIB}]),
        );
        host.data(
            "GET /nodes/pve1/storage/local/content",
            json!([{"volid": TEMPLATE}]),
        );
        host.data(
            "GET /nodes/pve1/network",
            json!([{"iface": "vmbr0", "type": "bridge", "active": 1}]),
        );
    }

    /// The config PVE stores for [`request`]'s container.
    fn as_created() -> Value {
        json!({"hostname": "web-ct", "rootfs": "local-lvm:vm-400-disk-0,size=8G", "unprivileged": 1,
               "tags": "swamp", "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:04:00,ip=10.0.0.40/24,type=veth"})
    }

    #[test]
    fn a_created_container_whose_settings_do_not_read_back_fails_naming_them() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/nextid", json!("400"));
        node(&host);
        let mut config = as_created();
        config["rootfs"] = json!("local-lvm:vm-400-disk-0,size=4G");
        config["net0"] = json!(
            "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:04:00,ip=10.0.0.40/24,type=veth,firewall=1"
        );
        // Scripted first, so the one config read after the task gets it.
        host.data("GET /nodes/pve1/lxc/400/config", config);
        created(&host, "swamp");
        let outcome = run_create(&host, json!({"cores": 2}));
        let crate::outcome::Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(message.contains("not as requested"), "{message}");
        assert!(message.contains("`rootfs` is"), "{message}");
        assert!(message.contains("`net0` is"), "{message}");
        assert!(
            message.contains("`cores` is not set (requested \"2\")"),
            "{message}"
        );
    }

    fn run_create(host: &ScriptedHost, extra: Value) -> Outcome {
        run_method(host, "lxc", "create", request(extra))
    }

    fn created(host: &ScriptedHost, tags: &str) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 400, "type": "lxc", "node": "pve1", "name": "web-ct"}]),
        );
        host.data("POST /nodes/pve1/lxc", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.data("GET /nodes/pve1/lxc/400/config", as_created());
        host.data(
            "GET /nodes/pve1/lxc/400/status/current",
            json!({"status": "stopped", "name": "web-ct", "tags": tags}),
        );
    }

    #[test]
    fn a_feasible_create_is_followed_and_verified() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/nextid", json!("400"));
        node(&host);
        created(&host, "swamp");
        let outcome = run_create(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].instance, "ct-400");
        assert_eq!(outcome.writes[0].spec, "container");
        assert_eq!(outcome.writes[0].data["lastTask"], UPID);
        let body = host.first_body("POST");
        assert!(
            body.contains("rootfs=local-lvm%3A8") && body.contains("tags=swamp"),
            "{body}"
        );
    }

    #[test]
    fn an_infeasible_create_changes_nothing_and_lists_every_problem() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/nextid", json!("400"));
        node(&host);
        let outcome = run_create(
            &host,
            json!({"storage": "local", "config": {"net0": "name=eth0,bridge=vmbr7"}}),
        );
        let message = failure_of(&outcome);
        assert!(message.starts_with("cannot create container 400 on node pve1; nothing was changed. 2 problems found: (1) rootfs storage local"), "{message}");
        assert!(
            message.contains("(2) net0: bridge vmbr7 does not exist"),
            "{message}"
        );
        assert!(outcome.writes.is_empty());
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_vmid_held_by_a_vm_is_in_use_by_another_guest() {
        let host = ScriptedHost::new();
        host.on(
            "GET /cluster/nextid",
            [Answer::Error(
                400,
                "Parameter verification failed. (vmid: VM 400 already exists)".into(),
            )],
        );
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 400, "type": "qemu", "node": "pve1", "name": "web-ct"}]),
        );
        let outcome = run_create(&host, json!({}));
        assert!(
            failure_of(&outcome).starts_with("VMID 400 is in use by another guest"),
            "{outcome:?}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn the_same_managed_container_is_done_and_an_unmanaged_namesake_is_not() {
        for (tags, ok) in [("swamp", true), ("web", false)] {
            let host = ScriptedHost::new();
            host.on(
                "GET /cluster/nextid",
                [Answer::Error(400, "VM 400 already exists".into())],
            );
            host.data(
                "GET /cluster/resources",
                json!([{"vmid": 400, "type": "lxc", "node": "pve1", "name": "web-ct"}]),
            );
            host.data("GET /nodes/pve1/lxc/400/config", as_created());
            host.data(
                "GET /nodes/pve1/lxc/400/status/current",
                json!({"status": "stopped", "name": "web-ct", "tags": tags}),
            );
            let outcome = run_create(&host, json!({}));
            assert_eq!(outcome.is_success(), ok, "{outcome:?}");
            assert_eq!(outcome.writes[0].instance, "ct-400");
            assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
        }
    }

    #[test]
    fn a_failed_create_task_fails_with_pves_words() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/nextid", json!("400"));
        node(&host);
        host.data("POST /nodes/pve1/lxc", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "unable to create CT 400 - no space"}),
        );
        let outcome = run_create(&host, json!({}));
        assert!(
            failure_of(&outcome).contains("unable to create CT 400 - no space"),
            "{outcome:?}"
        );
    }
}
