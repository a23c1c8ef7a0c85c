//! Whether a new guest fits the node, decided before anything changes — lxc `create` and qemu
//! `create` alike. A create places volumes on storages (each must exist on the node, be enabled
//! and active, take the guest kind's content — `rootdir` for containers, `images` for VMs — and
//! have room), reads volumes that must already be there (a container's template, a VM disk's
//! `import-from` image: each in its storage's content list), and plugs NICs into bridges (each
//! must exist on the node and be up). Every problem is found at once and named in ONE message:
//! PVE itself finds a missing template or image only inside the task, and a missing bridge only
//! when the first start fails.

use super::storage::{listed, missing_storage, storage_refusal};
use crate::host::Host;
use crate::outcome::Failure;
use crate::pve::endpoints;
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::property::property;
use crate::pve::request::PveRequest;
use crate::pve::responses::{NodeStorage, StorageVolume};
use crate::quote::Joined;
use crate::run::Run;
use serde_json::{Map, Value};
use std::fmt::Write;

const GIB: u64 = 1 << 30;
/// How many volumes a "not found" message lists.
const LISTED_VOLUMES: usize = 5;

/// A volume the create allocates: the config key, the storage, the bytes (borrowed from the
/// request's arguments: nothing copied, issue 32).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation<'a> {
    pub key: &'a str,
    pub storage: &'a str,
    pub bytes: u64,
}

/// A volume the create reads, which must be in its storage's content: a container's template
/// (`ostemplate`, content `vztmpl`) or a VM disk's image (`import-from`, content `import`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source<'a> {
    /// The option that names it: `ostemplate`, or the disk importing it (`scsi0`).
    pub key: &'a str,
    pub volid: &'a str,
    /// Its content type (`vztmpl`, `import`), which is also its directory in the volume id.
    pub content: &'static str,
}

impl<'a> Source<'a> {
    /// The storage of the volume id, when it is one (`<storage>:<name>`).
    pub fn storage(&self) -> Option<&'a str> {
        let (storage, name) = self.volid.split_once(':')?;
        let valid = crate::args::segment_fault(storage).is_none() && !name.is_empty();
        valid.then_some(storage)
    }
}

/// What a create places on the node, borrowed from the request's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement<'a> {
    /// The content type new volumes need: `rootdir` (containers) or `images` (VMs).
    pub content: &'static str,
    pub allocations: Vec<Allocation<'a>>,
    pub sources: Vec<Source<'a>>,
    /// `(netN, bridge)` for every NIC that names a bridge.
    pub bridges: Vec<(&'a str, &'a str)>,
}

/// What the node says about a placement's storages, sources and bridges. `Err` holds why a list
/// could not be read; `None`: not read (nothing to check, or a problem already found makes it moot).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Survey<'a> {
    pub storages: Option<Result<Vec<NodeStorage>, String>>,
    /// Per source storage (one that exists and takes the source's content): its volumes.
    pub contents: Vec<(&'a str, Result<Vec<StorageVolume>, String>)>,
    /// The node's network interfaces (`GET /nodes/{node}/network`), read as plain objects: their
    /// `iface` and `active` ([`iface`]), with no reader type of their own (issue 32).
    pub bridges: Option<Result<Vec<Map<String, Value>>, String>>,
}

impl Survey<'_> {
    /// The listed volume `volid` (its size: an image's), when a content list holds it.
    pub fn volume(&self, volid: &str) -> Option<&StorageVolume> {
        for (_, list) in &self.contents {
            let Ok(volumes) = list else { continue };
            for volume in volumes {
                if volume.volid == volid {
                    return Some(volume);
                }
            }
        }
        None
    }
}

/// `(netN, bridge)` for every `netN` option of `config` that names a bridge.
pub fn bridges_of(config: &[(String, String)]) -> Vec<(&str, &str)> {
    let mut bridges = Vec::new();
    for (key, value) in config {
        if let Some(bridge) = property(value, "bridge").filter(|_| numbered(key, "net")) {
            bridges.push((key.as_str(), bridge));
        }
    }
    bridges
}

/// Whether `key` is `<prefix><digits>` (`net0`, `mp12`).
pub fn numbered(key: &str, prefix: &str) -> bool {
    key.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `<storage>:<GiB>` as an allocation of `key`; `None` for anything else (an existing volume, a
/// bind mount, `store:cloudinit`).
pub fn allocation_of<'a>(key: &'a str, value: &'a str) -> Option<Allocation<'a>> {
    let volume = value.split(',').next().unwrap_or_default();
    let (storage, size) = volume.split_once(':')?;
    let gib = crate::pve::flex::number_in(size).filter(|g| *g >= 0.0)?;
    Some(Allocation {
        key,
        storage,
        bytes: (gib * GIB as f64).round() as u64,
    })
}

/// Reads what the decision needs from `node` into `survey` (a new one): its storages, the content
/// of each source's storage (when that storage can hold it), and its bridges (when a NIC names
/// one). Each request is planned by [`Survey::next`] and sent from this one await (issue 32: one
/// await point, not three); the survey is filled where the caller keeps it, not moved out.
pub async fn survey<'a, H: Host>(
    run: &Run<'_, H>,
    node: &str,
    placement: &Placement<'a>,
    survey: &mut Survey<'a>,
) {
    let pve = run.pve();
    while let Some((request, read)) = survey.next(node, placement) {
        let answer = pve.call(&request).await;
        survey.heard(read, answer);
    }
}

/// Which of the node's lists a survey's request reads.
enum Read<'a> {
    Storages,
    /// The content of this storage.
    Content(&'a str),
    Bridges,
}

impl<'a> Survey<'a> {
    /// The next list to read, in the survey's order: the storages, then each source storage not
    /// yet read that exists and takes the source's content, then the bridges when a NIC names
    /// one; `None` when all is read.
    fn next(&self, node: &str, placement: &Placement<'a>) -> Option<(PveRequest, Read<'a>)> {
        let Some(storages) = &self.storages else {
            return Some((endpoints::node_storage(node), Read::Storages));
        };
        for source in &placement.sources {
            let Some(id) = source.storage() else { continue };
            let takes = storages.as_ref().is_ok_and(|list| {
                list.iter()
                    .any(|s| s.storage == id && storage_refusal(s, source.content).is_none())
            });
            if takes && !self.contents.iter().any(|(read, _)| *read == id) {
                let request = endpoints::storage_content(node, id, source.content);
                return Some((request, Read::Content(id)));
            }
        }
        match placement.bridges.is_empty() || self.bridges.is_some() {
            true => None,
            false => Some((endpoints::node_bridges(node), Read::Bridges)),
        }
    }

    /// Keeps the answer to the request [`Survey::next`] planned as `read`.
    fn heard(&mut self, read: Read<'a>, answer: Result<Value, PveError>) {
        match read {
            Read::Storages => self.storages = Some(listed(answer)),
            Read::Content(id) => self.contents.push((id, listed(answer))),
            Read::Bridges => self.bridges = Some(listed(answer)),
        }
    }
}

/// Every reason the placement cannot be carried out on `node`, in the order checked; empty when
/// nothing stands in the way.
pub fn problems(placement: &Placement, node: &str, survey: &Survey<'_>) -> Vec<String> {
    let mut found = Vec::new();
    match &survey.storages {
        Some(Ok(storages)) => {
            volume_problems(placement, node, storages, &mut found);
            for source in &placement.sources {
                source_problems(source, node, storages, survey, &mut found);
            }
        }
        Some(Err(why)) => note(
            &mut found,
            format_args!(
            "the storages of node {node} could not be listed (GET /nodes/{node}/storage): {why}"
        ),
        ),
        None => {}
    }
    bridge_problems(placement, node, survey, &mut found);
    found
}

/// `net0, net1`: the keys of `(key, value)` pairs.
fn keys_of(pairs: &[(&str, &str)]) -> String {
    let mut keys = String::new();
    for (key, _) in pairs {
        crate::quote::push_item(&mut keys, ", ", key);
    }
    keys
}

/// The one message of a create the node cannot take: `cannot create <what> on node <node>;
/// nothing was changed. 2 problems found: (1) …; (2) …`.
pub fn refusal(what: &str, node: &str, found: &[String]) -> Failure {
    let n = found.len();
    let plural = if n == 1 { "" } else { "s" };
    let mut text = format!(
        "cannot create {what} on node {node}; nothing was changed. {n} problem{plural} found: "
    );
    for (i, problem) in found.iter().enumerate() {
        let separator = if i == 0 { "" } else { "; " };
        let _ = write!(text, "{separator}({}) {problem}", i + 1);
    }
    Failure::new(text)
}

/// Notes one problem, written in place: one call formats and pushes it, not two at every site
/// (issue 32).
pub fn note(found: &mut Vec<String>, problem: std::fmt::Arguments) {
    found.push(std::fmt::format(problem));
}

fn gib(bytes: u64) -> String {
    format!("{} GiB", crate::units::whole_or_tenths(bytes, GIB))
}

fn volume_problems(
    placement: &Placement,
    node: &str,
    storages: &[NodeStorage],
    found: &mut Vec<String>,
) {
    let allocations = &placement.allocations;
    let mut ids = Vec::with_capacity(allocations.len());
    for allocation in allocations {
        ids.push(allocation.storage);
    }
    crate::order::sort_dedup(&mut ids);
    for id in ids {
        let (mut keys, mut needed) = (Vec::new(), 0u64);
        for allocation in allocations.iter().filter(|a| a.storage == id) {
            keys.push(allocation.key);
            needed = needed.saturating_add(allocation.bytes);
        }
        let keys = keys.joined(" and ");
        let Some(store) = usable(&keys, id, placement.content, node, storages, found) else {
            continue;
        };
        if let Some(avail) = store.avail.filter(|avail| *avail < needed) {
            note(
                found,
                format_args!(
                    "{keys} storage {id} has {} free on node {node}, but {} are needed",
                    gib(avail),
                    gib(needed)
                ),
            );
        }
    }
}

/// Storage `id` of `node` when it exists there and takes `content`; else `None`, the problem
/// pushed onto `found` naming it by `who` (the keys that place volumes on it, or a source).
fn usable<'a>(
    who: &str,
    id: &str,
    content: &str,
    node: &str,
    storages: &'a [NodeStorage],
    found: &mut Vec<String>,
) -> Option<&'a NodeStorage> {
    let Some(store) = storages.iter().find(|s| s.storage == id) else {
        note(
            found,
            format_args!("{who}: {}", missing_storage(id, node, storages)),
        );
        return None;
    };
    if let Some(why) = storage_refusal(store, content) {
        note(
            found,
            format_args!("{who} storage {id} {why} on node {node}"),
        );
        return None;
    }
    Some(store)
}

fn source_problems(
    source: &Source,
    node: &str,
    storages: &[NodeStorage],
    survey: &Survey<'_>,
    found: &mut Vec<String>,
) {
    let (volid, content) = (&source.volid, source.content);
    // What names it in messages (`ostemplate`, `scsi0 import-from`) and what its storage's list
    // of them is called, by its kind: a container's template or a VM disk's image.
    let template = content == "vztmpl";
    let (suffix, noun) = match template {
        true => ("", "template"),
        false => (" import-from", "disk image"),
    };
    let label = &format!("{}{suffix}", source.key);
    let Some(id) = source.storage() else {
        note(
            found,
            format_args!(
                "{label} {volid:?} is not a {noun} volume id (<storage>:{content}/<file>)"
            ),
        );
        return;
    };
    if usable(label, id, content, node, storages, found).is_none() {
        return;
    }
    match survey.contents.iter().find(|(read, _)| *read == id) {
        Some((_, Ok(volumes))) if volumes.iter().any(|v| v.volid == *volid) => {}
        Some((_, Ok(volumes))) => {
            let mut listed = Vec::new();
            for volume in volumes.iter().take(LISTED_VOLUMES) {
                listed.push(volume.volid.as_str());
            }
            if volumes.len() > LISTED_VOLUMES {
                listed.push("…");
            }
            // How to bring it: a template with pveam too (`pveam download <storage> <template>`).
            let pveam = match template {
                true => ["pveam download ", id, " <template>, or "],
                false => [""; 3],
            };
            note(found, format_args!(
                "{label} {volid:?} is not in the content of storage {id} on node {node} (its {noun}s: {}) — download it first ({}{}{}downloadUrl with content {content})",
                if listed.is_empty() { "none".to_string() } else { listed.joined(", ") },
                pveam[0], pveam[1], pveam[2]
            ));
        }
        Some((_, Err(why))) => note(
            found,
            format_args!("the {noun}s on storage {id} of node {node} could not be listed: {why}"),
        ),
        None => note(
            found,
            format_args!("the {noun}s on storage {id} of node {node} were not listed"),
        ),
    }
}

fn bridge_problems(
    placement: &Placement,
    node: &str,
    survey: &Survey<'_>,
    found: &mut Vec<String>,
) {
    let wanted = &placement.bridges;
    if wanted.is_empty() {
        return;
    }
    let interfaces = match &survey.bridges {
        Some(Ok(interfaces)) => interfaces,
        Some(Err(why)) => {
            note(found, format_args!(
                "the bridges of node {node} could not be listed to check {} (GET /nodes/{node}/network needs Sys.Audit on /nodes/{node}): {why}",
                keys_of(wanted)
            ));
            return;
        }
        None => {
            note(
                found,
                format_args!("the bridges of node {node} were not listed"),
            );
            return;
        }
    };
    for (key, bridge) in wanted {
        match interfaces.iter().find(|i| iface(i) == Some(bridge)) {
            // Set (1) only for interfaces that are up.
            Some(i) if i.get("active").and_then(flex::bool_of) == Some(true) => {}
            Some(_) => note(found, format_args!(
                "{key}: bridge {bridge} exists on node {node} but is not active (down, or its configuration not applied)"
            )),
            None => {
                let mut names = String::new();
                for name in interfaces.iter().filter_map(iface) {
                    crate::quote::push_item(&mut names, ", ", name);
                }
                if names.is_empty() {
                    names.push_str("none");
                }
                note(found, format_args!(
                    "{key}: bridge {bridge} does not exist on node {node} (its bridges: {names})"
                ));
            }
        }
    }
}

/// A network interface's name: an entry without one (not a string) is no interface.
fn iface(interface: &Map<String, Value>) -> Option<&str> {
    interface.get("iface").and_then(Value::as_str)
}

#[cfg(test)]
mod refusal_tests {
    use super::refusal;

    #[test]
    fn the_refusal_counts_and_numbers_its_problems() {
        let one = refusal("VM 500", "pve1", &["a".to_string()]);
        assert_eq!(
            one.0,
            "cannot create VM 500 on node pve1; nothing was changed. 1 problem found: (1) a"
        );
        let two = refusal("CT 400", "pve2", &["a".to_string(), "b".to_string()]);
        assert_eq!(
            two.0,
            "cannot create CT 400 on node pve2; nothing was changed. 2 problems found: (1) a; (2) b"
        );
    }
}

#[cfg(test)]
mod source_tests {
    use super::{problems, Placement, Source, Survey};
    use crate::pve::responses::{parse, NodeStorage};
    use serde_json::json;

    fn missing(key: &'static str, volid: &'static str, content: &'static str) -> Vec<String> {
        let placement = Placement {
            content: "images",
            allocations: Vec::new(),
            sources: vec![Source {
                key,
                volid,
                content,
            }],
            bridges: Vec::new(),
        };
        let local: NodeStorage = parse(&json!({"storage": "local", "content": "vztmpl,import",
            "enabled": 1, "active": 1}))
        .unwrap();
        let survey = Survey {
            storages: Some(Ok(vec![local])),
            contents: vec![("local", Ok(Vec::new()))],
            bridges: None,
        };
        problems(&placement, "pve1", &survey)
    }

    #[test]
    fn a_missing_template_or_image_says_how_to_bring_it() {
        assert_eq!(
            missing("ostemplate", "local:vztmpl/d.tar.zst", "vztmpl"),
            ["ostemplate \"local:vztmpl/d.tar.zst\" is not in the content of storage local on node pve1 (its templates: none) — download it first (pveam download local <template>, or downloadUrl with content vztmpl)"]
        );
        assert_eq!(
            missing("scsi0", "local:import/c.qcow2", "import"),
            ["scsi0 import-from \"local:import/c.qcow2\" is not in the content of storage local on node pve1 (its disk images: none) — download it first (downloadUrl with content import)"]
        );
        assert_eq!(
            missing("ostemplate", "d.tar.zst", "vztmpl"),
            ["ostemplate \"d.tar.zst\" is not a template volume id (<storage>:vztmpl/<file>)"]
        );
        assert_eq!(
            missing("scsi0", "a b:import/c.qcow2", "import"),
            ["scsi0 import-from \"a b:import/c.qcow2\" is not a disk image volume id (<storage>:import/<file>)"]
        );
    }
}
