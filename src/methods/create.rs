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

use crate::args::{check_segment, is_dns_name, ArgError, Fields};
use crate::explain::hint;
use crate::guest::config::{key_type, wire_options};
use crate::guest::evidence::{Evidence, TaskTrail};
use crate::guest::gates::MANAGED_TAG;
use crate::guest::provision::{
    claim_vmid, complete, sight_new, verify_settings, with_managed_tag, Claim,
};
use crate::guest::reference::GuestRef;
use crate::guest::root_only::{ct_refusal, Caller, CtState};
use crate::guest::vmid_claim::{create_guest, VmidChoice};
use crate::host::Host;
use crate::methods::start::{bring_up, StartArgs};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::property::property;
use crate::pve::responses::{list_of, NodeInterface, NodeStorage, StorageVolume};
use crate::run::Run;
use serde_json::Value;

const GIB: u64 = 1 << 30;
/// How many templates a "not found" message lists.
const LISTED_TEMPLATES: usize = 5;

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

impl CreateArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let optional_int = |key: &str, min: i64, max: i64| -> Result<Option<u64>, ArgError> {
            match fields.optional::<i64>(key)? {
                Some(_) => Ok(Some(fields.int_in(key, min, max)? as u64)),
                None => Ok(None),
            }
        };
        let hostname = fields.line("hostname")?;
        if !is_dns_name(&hostname) {
            return Err(ArgError::new(
                "hostname",
                "must be a DNS name (letters, digits and inner hyphens, labels joined by dots, at most 255 characters)",
            ));
        }
        let ssh_public_keys: Option<String> = fields.optional("sshPublicKeys")?;
        if ssh_public_keys.as_deref().is_some_and(|k| k.contains('\0')) {
            return Err(ArgError::new("sshPublicKeys", "must not contain NUL"));
        }
        Ok(CreateArgs {
            vmid: VmidChoice::parse(&fields)?,
            ostemplate: fields.line("ostemplate")?,
            hostname,
            storage: fields.segment("storage")?,
            rootfs_gib: fields.int_in_or("rootfsSize", 1, 131_072, 8)? as u64,
            cores: optional_int("cores", 1, 8192)?,
            memory: optional_int("memory", 16, 67_108_864)?,
            swap: optional_int("swap", 0, 67_108_864)?,
            unprivileged: fields.or("unprivileged", true)?,
            features: fields.optional_line("features")?,
            ssh_public_keys,
            start: fields.or("start", false)?,
            config: fields
                .options("config", &REFUSED_CONFIG_KEYS)?
                .unwrap_or_default(),
        })
    }

    /// The parameters of `POST /nodes/{node}/lxc` for `vmid`: the `swamp` tag is added to the
    /// config's tags.
    pub fn params(&self, vmid: u32) -> Vec<(String, String)> {
        let mut params: Vec<(String, String)> = vec![
            ("vmid".into(), vmid.to_string()),
            ("ostemplate".into(), self.ostemplate.clone()),
            ("hostname".into(), self.hostname.clone()),
            ("storage".into(), self.storage.clone()),
            (
                "rootfs".into(),
                format!("{}:{}", self.storage, self.rootfs_gib),
            ),
        ];
        let numbers = [
            ("cores", self.cores),
            ("memory", self.memory),
            ("swap", self.swap),
        ];
        for (key, value) in numbers {
            if let Some(value) = value {
                params.push((key.into(), value.to_string()));
            }
        }
        let flag = if self.unprivileged { "1" } else { "0" };
        params.push(("unprivileged".into(), flag.into()));
        if let Some(features) = &self.features {
            params.push(("features".into(), features.clone()));
        }
        if let Some(keys) = self.ssh_public_keys.as_deref().filter(|k| !k.is_empty()) {
            params.push(("ssh-public-keys".into(), keys.to_string()));
        }
        let tags = self.option("tags").unwrap_or_default();
        params.push(("tags".into(), with_managed_tag(tags)));
        params.extend(self.config.iter().filter(|(k, _)| k != "tags").cloned());
        params
    }

    /// The resource settings create asks for that are config keys of the container (every one must
    /// read back as requested): cores, memory, swap, rootfs, unprivileged, features, the tags with
    /// the managed tag, and each config key of PVE's schema.
    pub fn settings(&self) -> Vec<(String, String)> {
        // The VMID is not a setting (nor a config key): any number will do here.
        self.params(0)
            .into_iter()
            .filter(|(key, _)| {
                key != "hostname" && key_type(crate::pve::endpoints::GuestKind::Lxc, key).is_some()
            })
            .collect()
    }

    fn option(&self, key: &str) -> Option<&str> {
        self.config
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The volumes create allocates: `rootfs`, and each `mpN` given as `<storage>:<GiB>` (an existing
    /// volume or a bind mount allocates nothing).
    pub fn allocations(&self) -> Vec<Allocation> {
        let mut out = vec![Allocation {
            key: "rootfs".into(),
            storage: self.storage.clone(),
            bytes: self.rootfs_gib.saturating_mul(GIB),
        }];
        for (key, value) in &self.config {
            if !is_mount_point(key) {
                continue;
            }
            let volume = value.split(',').next().unwrap_or_default();
            let Some((storage, size)) = volume.split_once(':') else {
                continue;
            };
            let gib = size
                .parse::<f64>()
                .ok()
                .filter(|g| g.is_finite() && *g >= 0.0);
            if let Some(gib) = gib {
                out.push(Allocation {
                    key: key.clone(),
                    storage: storage.to_string(),
                    bytes: (gib * GIB as f64).round() as u64,
                });
            }
        }
        out
    }

    /// `(netN, bridge)` for every network option that names a bridge.
    pub fn bridges(&self) -> Vec<(String, String)> {
        self.config
            .iter()
            .filter(|(key, _)| {
                key.strip_prefix("net")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .filter_map(|(key, value)| Some((key.clone(), property(value, "bridge")?.to_string())))
            .collect()
    }

    /// The storage of the `ostemplate` volume id, when it is one (`<storage>:vztmpl/<file>`).
    pub fn template_storage(&self) -> Option<&str> {
        let (storage, file) = self.ostemplate.split_once(':')?;
        (check_segment("ostemplate", storage).is_ok() && !file.is_empty()).then_some(storage)
    }
}

fn is_mount_point(key: &str) -> bool {
    key.strip_prefix("mp")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A volume create allocates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub key: String,
    pub storage: String,
    pub bytes: u64,
}

/// What the node says about the request's storages, template and bridges. `Err` holds why a list
/// could not be read; `None`: not read (nothing to check, or a problem already found makes it moot).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Survey {
    pub storages: Option<Result<Vec<NodeStorage>, String>>,
    pub templates: Option<Result<Vec<String>, String>>,
    pub bridges: Option<Result<Vec<NodeInterface>, String>>,
}

/// Reads what the feasibility decision needs from `node`: its storages, the templates on the
/// ostemplate's storage (when that storage can hold them), and its bridges (when a netN names one).
pub async fn survey<H: Host>(run: &Run<'_, H>, node: &str, args: &CreateArgs) -> Survey {
    let pve = run.pve();
    let storages: Result<Vec<NodeStorage>, String> =
        listed(pve.call(&endpoints::node_storage(node)).await);
    let template_store = args.template_storage().filter(|id| {
        storages.as_ref().is_ok_and(|list| {
            list.iter()
                .any(|s| s.storage == *id && storage_refusal(s, "vztmpl").is_none())
        })
    });
    let templates = match template_store {
        Some(id) => {
            let request = endpoints::storage_content(node, id, "vztmpl");
            let volumes: Result<Vec<StorageVolume>, String> = listed(pve.call(&request).await);
            Some(volumes.map(|list| list.into_iter().map(|v| v.volid).collect()))
        }
        None => None,
    };
    let bridges = match args.bridges().is_empty() {
        true => None,
        false => Some(listed(pve.call(&endpoints::node_bridges(node)).await)),
    };
    Survey {
        storages: Some(storages),
        templates,
        bridges,
    }
}

/// A list answer as `T`s, or why it could not be read.
fn listed<T: for<'de> serde::Deserialize<'de>>(
    answer: Result<Value, PveError>,
) -> Result<Vec<T>, String> {
    match answer {
        Ok(data) => list_of(&data).ok_or_else(|| {
            format!(
                "PVE answered {data} where a list was expected — {}",
                hint(ErrorKind::Malformed)
            )
        }),
        Err(e) => Err(format!("{e} — {}", hint(e.kind))),
    }
}

/// Why a storage cannot take content of type `content`; `None` when it can.
fn storage_refusal(store: &NodeStorage, content: &str) -> Option<String> {
    if store.enabled == Some(false) {
        return Some("is disabled".to_string());
    }
    if store.active == Some(false) {
        return Some("is not active (offline?)".to_string());
    }
    if !store.offers(content) {
        let offered = store.content_types();
        let listed = match offered.is_empty() {
            true => "none".to_string(),
            false => offered.join(", "),
        };
        return Some(format!(
            "does not allow content {content} (its content: {listed})"
        ));
    }
    None
}

fn gib(bytes: u64) -> String {
    let value = bytes as f64 / GIB as f64;
    match value.fract() == 0.0 {
        true => format!("{value:.0} GiB"),
        false => format!("{value:.1} GiB"),
    }
}

/// Every reason the request cannot be carried out on `node`, in the order checked; empty when
/// nothing stands in the way.
pub fn problems(args: &CreateArgs, node: &str, survey: &Survey) -> Vec<String> {
    let mut found = Vec::new();
    match &survey.storages {
        Some(Ok(storages)) => {
            volume_problems(args, node, storages, &mut found);
            template_problems(args, node, storages, survey, &mut found);
        }
        Some(Err(why)) => found.push(format!(
            "the storages of node {node} could not be listed (GET /nodes/{node}/storage): {why}"
        )),
        None => {}
    }
    bridge_problems(args, node, survey, &mut found);
    found
}

fn missing_storage(id: &str, node: &str, storages: &[NodeStorage]) -> String {
    let listed: Vec<&str> = storages.iter().map(|s| s.storage.as_str()).collect();
    format!(
        "storage {id} does not exist on node {node}, or the token may not audit it (storages listed: {})",
        if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
    )
}

fn volume_problems(
    args: &CreateArgs,
    node: &str,
    storages: &[NodeStorage],
    found: &mut Vec<String>,
) {
    let allocations = args.allocations();
    let mut ids: Vec<&str> = allocations.iter().map(|a| a.storage.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let on_it: Vec<&Allocation> = allocations.iter().filter(|a| a.storage == id).collect();
        let keys: Vec<&str> = on_it.iter().map(|a| a.key.as_str()).collect();
        let what = format!("{} storage {id}", keys.join(" and "));
        let Some(store) = storages.iter().find(|s| s.storage == id) else {
            found.push(format!(
                "{}: {}",
                keys.join(" and "),
                missing_storage(id, node, storages)
            ));
            continue;
        };
        if let Some(why) = storage_refusal(store, "rootdir") {
            found.push(format!("{what} {why} on node {node}"));
            continue;
        }
        let needed = on_it
            .iter()
            .fold(0u64, |sum, a| sum.saturating_add(a.bytes));
        if let Some(avail) = store.avail.filter(|avail| *avail < needed) {
            found.push(format!(
                "{what} has {} free on node {node}, but {} are needed",
                gib(avail),
                gib(needed)
            ));
        }
    }
}

fn template_problems(
    args: &CreateArgs,
    node: &str,
    storages: &[NodeStorage],
    survey: &Survey,
    found: &mut Vec<String>,
) {
    let template = &args.ostemplate;
    let Some(id) = args.template_storage() else {
        found.push(format!(
            "ostemplate {template:?} is not a template volume id (<storage>:vztmpl/<file>)"
        ));
        return;
    };
    let Some(store) = storages.iter().find(|s| s.storage == id) else {
        found.push(format!(
            "ostemplate: {}",
            missing_storage(id, node, storages)
        ));
        return;
    };
    if let Some(why) = storage_refusal(store, "vztmpl") {
        found.push(format!("ostemplate storage {id} {why} on node {node}"));
        return;
    }
    match &survey.templates {
        Some(Ok(volumes)) if volumes.iter().any(|v| v == template) => {}
        Some(Ok(volumes)) => {
            let mut listed: Vec<&str> = volumes
                .iter()
                .map(String::as_str)
                .take(LISTED_TEMPLATES)
                .collect();
            if volumes.len() > LISTED_TEMPLATES {
                listed.push("…");
            }
            found.push(format!(
                "ostemplate {template:?} is not in the content of storage {id} on node {node} (its templates: {}) — download it first (pveam download {id} <template>)",
                if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
            ));
        }
        Some(Err(why)) => found.push(format!(
            "the templates on storage {id} of node {node} could not be listed: {why}"
        )),
        None => found.push(format!(
            "the templates on storage {id} of node {node} were not listed"
        )),
    }
}

fn bridge_problems(args: &CreateArgs, node: &str, survey: &Survey, found: &mut Vec<String>) {
    let wanted = args.bridges();
    if wanted.is_empty() {
        return;
    }
    let interfaces = match &survey.bridges {
        Some(Ok(interfaces)) => interfaces,
        Some(Err(why)) => {
            found.push(format!(
                "the bridges of node {node} could not be listed to check {} (GET /nodes/{node}/network needs Sys.Audit on /nodes/{node}): {why}",
                wanted.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", ")
            ));
            return;
        }
        None => {
            found.push(format!("the bridges of node {node} were not listed"));
            return;
        }
    };
    for (key, bridge) in &wanted {
        match interfaces.iter().find(|i| i.iface == *bridge) {
            Some(i) if i.active == Some(true) => {}
            Some(_) => found.push(format!(
                "{key}: bridge {bridge} exists on node {node} but is not active (down, or its configuration not applied)"
            )),
            None => {
                let names: Vec<&str> = interfaces.iter().map(|i| i.iface.as_str()).collect();
                found.push(format!(
                    "{key}: bridge {bridge} does not exist on node {node} (its bridges: {})",
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ));
            }
        }
    }
}

/// Runs `create`.
/// What PVE would refuse this caller (an API token) in the new container's config.
fn identity_refusal<H: Host>(run: &Run<'_, H>, args: &CreateArgs) -> Option<String> {
    let mut options = args.config.clone();
    if let Some(features) = &args.features {
        options.push(("features".into(), features.clone()));
    }
    let state = CtState {
        unprivileged: args.unprivileged,
        features: None,
    };
    ct_refusal(Caller::of(&run.global.transport), &options, &[], state)
}

pub async fn create<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let mut args = match CreateArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    args.config = match wire_options(GuestKind::Lxc, "config", &args.config) {
        Ok(config) => config,
        Err(e) => return Failure::from(e).into(),
    };
    if let Some(refusal) = identity_refusal(run, &args) {
        return Failure::new(format!(
            "cannot create container: {refusal}; nothing was changed"
        ))
        .into();
    }
    if let VmidChoice::Given(vmid) = args.vmid {
        match claim_vmid(run, vmid, &args.hostname).await {
            Ok(Claim::Free) => {}
            Ok(Claim::Done(mut ev)) => {
                let done = format!(
                    "{} already is the requested container {:?} with the `{MANAGED_TAG}` tag; nothing was created",
                    ev.label(run),
                    args.hostname
                );
                let verdict = match verify_settings(run, &ev, &args.settings(), "create") {
                    Ok(()) => then_start(run, &mut ev, &args, done).await,
                    Err(message) => Err(message),
                };
                return ev.outcome(run, verdict).await;
            }
            Err(outcome) => return outcome,
        }
    }
    let node = run.global.transport.node().to_string();
    let survey = survey(run, &node, &args).await;
    let found = problems(&args, &node, &survey);
    if !found.is_empty() {
        let listed: Vec<String> = found
            .iter()
            .enumerate()
            .map(|(i, p)| format!("({}) {p}", i + 1))
            .collect();
        return Failure::new(format!(
            "cannot create container {} on node {node}; nothing was changed. {} found: {}",
            args.vmid.describe(),
            match found.len() {
                1 => "1 problem".to_string(),
                n => format!("{n} problems"),
            },
            listed.join("; ")
        ))
        .into();
    }
    let mut trail = TaskTrail::default();
    let (vmid, claimed) = match make_container(run, &node, &args, &mut trail).await {
        Ok(made) => made,
        Err(message) => return Failure::new(message).into(),
    };
    let mut ev = match sight_new(run, vmid, trail, "create").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let verdict = match complete(run, &mut ev, &args.hostname, "create").await {
        Ok(summary) => match verify_settings(run, &ev, &args.settings(), "create") {
            Ok(()) => then_start(run, &mut ev, &args, format!("{claimed}{summary}")).await,
            Err(message) => Err(message),
        },
        Err(message) => Err(message),
    };
    ev.outcome(run, verdict).await
}

/// Sends the create and follows its task: the container's VMID, and how it was chosen.
async fn make_container<H: Host>(
    run: &Run<'_, H>,
    node: &str,
    args: &CreateArgs,
    trail: &mut TaskTrail,
) -> Result<(u32, String), String> {
    let request = |vmid: u32| endpoints::lxc_create(node, args.params(vmid));
    let action = |vmid: u32| format!("create container {vmid} on node {node}");
    create_guest(run, args.vmid, trail, request, action).await
}

/// With `start: true`, the verified start of the `start` method follows what was done.
async fn then_start<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &CreateArgs,
    done: String,
) -> Result<String, String> {
    if !args.start {
        return Ok(done);
    }
    let start = StartArgs {
        target: GuestRef {
            vmid: Some(ev.at.vmid),
            name: None,
        },
        wait_for_ip: false,
        allow_no_ip: false,
        ready: None,
    };
    match bring_up(run, ev, &start).await {
        Ok(started) => Ok(format!("{done}; {started}")),
        Err(why) => Err(format!("{done}, but start: true failed: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        serde_json::from_value(json!({"storage": id, "content": content, "enabled": 1,
            "active": 1, "avail": avail_gib * GIB}))
        .unwrap()
    }

    fn node_facts() -> Survey {
        Survey {
            storages: Some(Ok(vec![
                storage("local", "iso,vztmpl,backup", 50),
                storage("local-lvm", "images,rootdir", 100),
            ])),
            templates: Some(Ok(vec![TEMPLATE.to_string()])),
            bridges: Some(Ok(vec![NodeInterface {
                iface: "vmbr0".into(),
                active: Some(true),
            }])),
        }
    }

    #[test]
    fn a_request_that_fits_the_node_has_no_problems() {
        assert_eq!(
            problems(&parsed(json!({})), "pve1", &node_facts()),
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
        facts.bridges = Some(Ok(vec![NodeInterface {
            iface: "vmbr0".into(),
            active: None,
        }]));
        let found = problems(&args, "pve1", &facts);
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
        let found = problems(&args, "pve1", &facts);
        assert_eq!(found, vec!["rootfs and mp0 storage local-lvm has 10 GiB free on node pve1, but 12 GiB are needed".to_string()]);
        let mut disabled = storage("local-lvm", "rootdir", 100);
        disabled.enabled = Some(false);
        let mut offline = storage("local", "vztmpl", 100);
        offline.active = Some(false);
        facts.storages = Some(Ok(vec![offline, disabled]));
        let found = problems(&parsed(json!({})), "pve1", &facts);
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
        let found = problems(&args, "pve1", &node_facts());
        assert!(
            found[0].contains("rootfs and mp0 and mp1 storage local-lvm"),
            "{found:?}"
        );
    }

    #[test]
    fn unknown_storages_and_malformed_templates_are_named() {
        let args = parsed(json!({"storage": "nope", "ostemplate": "debian.tar.zst"}));
        let found = problems(&args, "pve1", &node_facts());
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
        let found = problems(&parsed(json!({})), "pve1", &facts);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("needs Sys.Audit"), "{found:?}");
        facts.storages = Some(Err("boom".into()));
        assert!(problems(&parsed(json!({})), "pve1", &facts)[0].contains("could not be listed"));
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
        let post = host
            .requests
            .borrow()
            .iter()
            .find(|r| r.method == "POST")
            .cloned()
            .unwrap();
        let body = post.body.unwrap();
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
