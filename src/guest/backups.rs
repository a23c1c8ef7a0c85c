//! Backup archives as both models see them: the volume id rule, the archives a storage's `backup`
//! content lists, and the `…-backups` record that holds such a list as observed.
//!
//! PVE lists an archive as `<storage>:backup/<file>` (a directory storage: pve-storage
//! PVE/Storage/Plugin.pm `list_volumes`, with `subtype`, `vmid`, `ctime`, `notes` and `protected`
//! read from the file name, its `.notes` and its `.protected` files) or, on a Proxmox Backup Server,
//! `<storage>:backup/<vm|ct>/<vmid>/<time>` (with a `verification` state).

use crate::args::{segment_fault, ArgError};
use crate::explain::could_not_args;
use crate::host::Host;
use crate::outcome::RecordWrite;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::pve::responses::NodeStorage;
use crate::quote::Joined;
use crate::record_json::{count, put, set};
use crate::run::{write_value, Run};
use serde_json::{Map, Value};
use std::fmt;

/// How many archives a message lists.
const LISTED: usize = 5;

/// A backup volume id, `<storage>:backup/<name>`, with what its name tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupVolid {
    pub volid: String,
    pub storage: String,
    /// The archive's guest kind and VMID, when its name is one vzdump or PBS gives.
    pub kind: Option<GuestKind>,
    pub vmid: Option<u32>,
}

/// The rule a backup volume id's refusal names.
const VOLID_RULE: &str = "must be a backup volume id, <storage>:backup/<file> (e.g. local:backup/vzdump-qemu-100-2026_01_01-00_00_00.vma.zst)";

impl BackupVolid {
    /// Why `text` is not a backup volume id (`None` when it is): a storage id (it becomes part of
    /// an API path), then `:backup/`, then a name of PVE's safe characters (pve-storage
    /// `SAFE_CHAR_CLASS_RE`, plus `/` and `:` of PBS names) without an empty or `..` component.
    /// A rule of the parsers' tables ([`crate::args::Spec::rule`]): checked where a table puts
    /// it, by the table's walk (issue 32).
    pub fn fault(text: &str) -> Option<&'static str> {
        let name = match text.split_once(':') {
            Some((storage, name)) if segment_fault(storage).is_none() => name,
            _ => return Some(VOLID_RULE),
        };
        let Some(rest) = name.strip_prefix("backup/") else {
            return Some(VOLID_RULE);
        };
        // By bytes: a non-ASCII character's bytes are none of these, as the character is not.
        let safe = |b: u8| b.is_ascii_alphanumeric() || b"-.+=_:".contains(&b);
        let parts_ok = rest
            .split('/')
            .all(|part| !part.is_empty() && part != ".." && part != "." && part.bytes().all(safe));
        (rest.len() > 255 || !parts_ok).then_some(VOLID_RULE)
    }

    /// `text`, a backup volume id by [`BackupVolid::fault`], with what its name tells.
    pub fn of(text: &str) -> BackupVolid {
        let (storage, name) = text.split_once(':').unwrap_or_default();
        let (kind, vmid) = owner_of(name.strip_prefix("backup/").unwrap_or(name));
        BackupVolid {
            volid: text.to_string(),
            storage: storage.to_string(),
            kind,
            vmid,
        }
    }

    /// Checks `text` as a backup volume id ([`BackupVolid::fault`]), refusing it as `field`.
    pub fn parse(field: &str, text: &str) -> Result<Self, ArgError> {
        match Self::fault(text) {
            Some(rule) => Err(ArgError::new(field, rule)),
            None => Ok(Self::of(text)),
        }
    }
}

/// Why `archive`, named a backup of another kind of guest than `kind`, is not this model's to
/// handle: `<volid> is a backup of a <kind>` and `rest` (what to do instead). One text for every
/// method that takes a backup volume id (issue 32).
pub fn other_kind(archive: &BackupVolid, kind: GuestKind, rest: fmt::Arguments) -> Option<String> {
    let theirs = archive.kind.filter(|k| *k != kind)?;
    Some(format!(
        "{} is a backup of a {}{rest}",
        archive.volid,
        theirs.noun()
    ))
}

/// The guest kind and VMID a standard archive name carries: `vzdump-<qemu|lxc>-<vmid>-<time>.<ext>`
/// (pve-manager PVE/VZDump.pm `exec_backup_task` names it so) or PBS's `<vm|ct>/<vmid>/<time>`.
fn owner_of(name: &str) -> (Option<GuestKind>, Option<u32>) {
    let file = name.rsplit('/').next().unwrap_or(name);
    // Read part by part, not collected first (issue 32).
    let (text, separator) = match file.strip_prefix("vzdump-") {
        Some(rest) => (rest, '-'),
        None => (name, '/'),
    };
    let mut parts = text.splitn(3, separator);
    let kind = match parts.next() {
        Some("qemu") | Some("vm") => Some(GuestKind::Qemu),
        Some("lxc") | Some("ct") => Some(GuestKind::Lxc),
        _ => None,
    };
    let vmid = parts.next().and_then(|id| id.parse::<u32>().ok());
    match (kind, vmid, parts.next()) {
        (Some(kind), Some(vmid), Some(_)) => (Some(kind), Some(vmid)),
        _ => (None, None),
    }
}

/// One archive as the storage's `backup` content lists it. Written as JSON by [`Archive::json`]
/// (record_json.rs): no serializer of its own (issue 32).
#[derive(Debug, Clone, PartialEq)]
pub struct Archive {
    pub volid: String,
    pub vmid: Option<u64>,
    /// `qemu` or `lxc` (PVE's `subtype`; `unknown` for a name it cannot read).
    pub subtype: Option<String>,
    pub size: Option<u64>,
    pub ctime: Option<u64>,
    pub format: Option<String>,
    pub notes: Option<String>,
    pub protected: bool,
    /// The last verification's state (PBS only), e.g. `ok` or `failed`.
    pub verification: Option<String>,
}

impl Archive {
    /// The archive as records state it: an absent field left out.
    pub fn json(&self) -> Map<String, Value> {
        let mut archive = Map::new();
        set(&mut archive, "volid", Value::from(self.volid.as_str()));
        count(&mut archive, "vmid", self.vmid);
        put(&mut archive, "subtype", self.subtype.as_deref());
        count(&mut archive, "size", self.size);
        count(&mut archive, "ctime", self.ctime);
        put(&mut archive, "format", self.format.as_deref());
        put(&mut archive, "notes", self.notes.as_deref());
        set(&mut archive, "protected", Value::Bool(self.protected));
        put(&mut archive, "verification", self.verification.as_deref());
        archive
    }

    /// One content entry; `None` when it has no volid.
    pub fn from_value(entry: &Value) -> Option<Archive> {
        let text = |key: &str| {
            entry
                .get(key)
                .and_then(flex::string_of)
                .filter(|s| !s.is_empty())
        };
        let number = |key: &str| entry.get(key).and_then(flex::u64_of);
        Some(Archive {
            volid: text("volid")?,
            vmid: number("vmid"),
            subtype: text("subtype"),
            size: number("size"),
            ctime: number("ctime"),
            format: text("format"),
            notes: text("notes"),
            protected: entry
                .get("protected")
                .and_then(flex::bool_of)
                .unwrap_or(false),
            verification: entry
                .get("verification")
                .and_then(|v| v.get("state"))
                .and_then(flex::string_of),
        })
    }

    /// Whether it is an archive of a guest of `kind` (by PVE's `subtype`, else by its name).
    pub fn is_of(&self, kind: GuestKind) -> bool {
        match self.subtype.as_deref() {
            Some("qemu") => kind == GuestKind::Qemu,
            Some("lxc") => kind == GuestKind::Lxc,
            _ => self
                .volid
                .split_once(":backup/")
                .is_some_and(|(_, name)| owner_of(name).0 == Some(kind)),
        }
    }

    /// `local:backup/… (12.0 MiB, protected)`, for messages.
    /// Written in one text, not listed apart and joined (issue 32).
    pub fn describe(&self) -> String {
        let size = match self.size {
            Some(bytes) => format!("{} MiB", crate::units::tenths(bytes, 1 << 20)),
            None => "no size".to_string(),
        };
        let protected = if self.protected { ", protected" } else { "" };
        format!("{} ({size}{protected})", self.volid)
    }
}

/// The archives in a list, for messages: the first few, and how many more.
pub fn describe_all(archives: &[Archive]) -> String {
    if archives.is_empty() {
        return "none".to_string();
    }
    let mut listed = Vec::new();
    for archive in archives.iter().take(LISTED) {
        listed.push(archive.describe());
    }
    if archives.len() > LISTED {
        listed.push(format!("{} more", archives.len() - LISTED));
    }
    listed.joined(", ")
}

/// The archives of the run's kind of guest on `storage` as `node` lists them (only `vmid`'s, when
/// given), oldest first; `Err` says what could not be listed.
pub async fn list_archives<H: Host>(
    run: &Run<'_, H>,
    node: &str,
    storage: &str,
    vmid: Option<u32>,
) -> Result<Vec<Archive>, String> {
    let request = endpoints::storage_backups(node, storage, vmid);
    let answer = run.pve().call(&request).await;
    archives_in(run.kind, storage, vmid, answer).map_err(|e| {
        could_not_args(
            format_args!("list the backups on storage {storage} of node {node}"),
            &e,
        )
        .0
    })
}

/// The archives of guests of `kind` in a storage's backup content (`answer`; only `vmid`'s, when
/// given), oldest first.
fn archives_in(
    kind: GuestKind,
    storage: &str,
    vmid: Option<u32>,
    answer: Result<Value, PveError>,
) -> Result<Vec<Archive>, PveError> {
    let data = answer?;
    let entries = data.as_array().ok_or_else(|| {
        PveError::malformed_args(format_args!(
            "the backup content of storage {storage} is not a list: {data}",
            data = crate::quote::json(&data)
        ))
    })?;
    let mut archives = Vec::new();
    for archive in entries.iter().filter_map(Archive::from_value) {
        // PVE's vmid filter matches the number anywhere in the name: keep that guest's only.
        let its = vmid.is_none_or(|id| archive.vmid.is_none_or(|own| own == id as u64));
        if archive.is_of(kind) && its {
            archives.push(archive);
        }
    }
    crate::order::sort_by(&mut archives, &|a, b| {
        (a.ctime, &a.volid).cmp(&(b.ctime, &b.volid))
    });
    Ok(archives)
}

/// Refuses, before anything is sent, a storage that cannot hold backups on `node` — as vzdump
/// would (pve-manager PVE/VZDump.pm `storage_info`: "can't use storage '…' for backups - wrong
/// content type"), or that is disabled or offline there: judged on `answer`, the node's storage
/// list (`request`, [`endpoints::node_storage`]).
pub fn check_backup_storage(
    node: &str,
    storage: &str,
    request: &PveRequest,
    answer: Result<Value, PveError>,
) -> Result<(), String> {
    let stores: Vec<NodeStorage> = crate::client::shaped(request, "a list of storages", answer)
        .map_err(|e| could_not_args(format_args!("list the storages of node {node}"), &e).0)?;
    let Some(store) = stores.iter().find(|s| s.storage == storage) else {
        return Err(crate::guest::storage::missing_storage(
            storage, node, &stores,
        ));
    };
    if !store.offers("backup") {
        return Err(format!(
            "can't use storage '{storage}' for backups - wrong content type (PVE's words; its content: {})",
            store.content_types().joined(", ")
        ));
    }
    if store.enabled == Some(false) || store.active == Some(false) {
        return Err(format!(
            "storage {storage} is disabled or not active on node {node}"
        ));
    }
    Ok(())
}

/// The record of the archives `node` listed on `storage` (the `backups` record, as observed):
/// `<vm|ct>-<vmid>-backups` for one guest's, `backups-<node>-<storage>` for all of a kind. Its
/// fields `node`, `storage`, `vmid` (when given), `backups` (each archive made JSON),
/// `lastOperation` and `recordedAt`, put in a JSON object as they are filled: no serializer of
/// its own (issue 32).
pub fn backups_write<H: Host>(
    run: &Run<'_, H>,
    node: &str,
    storage: &str,
    vmid: Option<u32>,
    archives: &[Archive],
) -> RecordWrite {
    let instance = match vmid {
        Some(vmid) => format!("{}-backups", run.guest_instance(vmid)),
        None => format!("backups-{node}-{storage}"),
    };
    let mut backups = Vec::with_capacity(archives.len());
    for archive in archives {
        backups.push(Value::Object(archive.json()));
    }
    let mut record = Map::new();
    if let Some(vmid) = vmid {
        set(&mut record, "vmid", Value::from(vmid));
    }
    set(&mut record, "backups", Value::Array(backups));
    stamped_write(run, record, node, storage, "backups", instance)
}

/// A `backup` or `backups` record's `record`, with `node`, `storage`, `lastOperation` and
/// `recordedAt` added, written as `spec`'s `instance`: one copy of the end for both (issue 32).
pub fn stamped_write<H: Host>(
    run: &Run<'_, H>,
    mut record: Map<String, Value>,
    node: &str,
    storage: &str,
    spec: &str,
    instance: String,
) -> RecordWrite {
    put(&mut record, "node", Some(node));
    put(&mut record, "storage", Some(storage));
    put(&mut record, "lastOperation", Some(run.method));
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    write_value(spec, instance, Value::Object(record))
}

/// The configuration a backup archive holds: its `key: value` lines before the first snapshot
/// section (`[name]`), in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ArchiveConfig(pub Vec<(String, String)>);

impl ArchiveConfig {
    /// Parses extractconfig's text (the config file format of qemu-server and pve-container).
    pub fn parse(text: &str) -> ArchiveConfig {
        let mut entries = Vec::new();
        for line in text.lines() {
            let line = line.trim_end();
            if line.starts_with('[') {
                break;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            if let Some((key, value)) = line.split_once(':') {
                entries.push((key.trim().to_string(), value.trim().to_string()));
            }
        }
        ArchiveConfig(entries)
    }

    /// The config in extractconfig's answer; `Err` when it holds none.
    pub fn extracted(
        volid: &str,
        answer: Result<Value, PveError>,
    ) -> Result<ArchiveConfig, String> {
        let data = answer.map_err(|e| {
            could_not_args(format_args!("read the config backup {volid} holds"), &e).0
        })?;
        let config = ArchiveConfig::parse(data.as_str().unwrap_or_default());
        match config.0.is_empty() {
            true => Err(format!(
                "backup {volid} holds no guest config PVE could extract (extractconfig answered {}); nothing was changed — check the archive on its storage (listBackups) and the node's vzdump tools",
                crate::quote::json(&data)
            )),
            false => Ok(config),
        }
    }
}

/// Whether the archive is among those its storage on `node` lists (`listed`, [`list_archives`]),
/// with a size above 0: a restore's course then reads the config it holds
/// ([`endpoints::vzdump_extract_config`]). Plain, so that the course sends both reads from its
/// own awaits (issue 32).
pub fn archive_listed(
    kind: GuestKind,
    node: &str,
    archive: &BackupVolid,
    listed: &[Archive],
) -> Result<(), String> {
    let Some(found) = listed.iter().find(|a| a.volid == archive.volid) else {
        return Err(format!(
            "storage {} on node {node} lists no backup {} of a {} (its backups: {}); nothing was changed",
            archive.storage,
            archive.volid,
            kind.noun(),
            describe_all(listed)
        ));
    };
    if found.size.unwrap_or(0) == 0 {
        return Err(format!(
            "backup {} is listed empty ({}): it cannot be restored; nothing was changed",
            archive.volid,
            found.describe()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_vzdump_name_tells_its_guest() {
        let v = BackupVolid::parse(
            "volid",
            "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst",
        )
        .unwrap();
        assert_eq!(
            (v.storage.as_str(), v.kind, v.vmid),
            ("local", Some(GuestKind::Qemu), Some(120))
        );
        let ct = BackupVolid::parse("volid", "pbs1:backup/ct/400/2026-12-01T10:00:00Z").unwrap();
        assert_eq!((ct.kind, ct.vmid), (Some(GuestKind::Lxc), Some(400)));
        let odd = BackupVolid::parse("volid", "local:backup/my-archive.vma").unwrap();
        assert_eq!((odd.kind, odd.vmid), (None, None));
    }

    #[test]
    fn a_volid_that_is_not_a_backup_or_escapes_is_refused() {
        for bad in [
            "",
            "local",
            "local:iso/x.iso",
            "local:backup/",
            "local:backup/../etc/passwd",
            "local:backup/a//b",
            "-x:backup/a",
            "a/b:backup/c",
            "local:backup/a b",
            "local:backup/a\nb",
        ] {
            let e = BackupVolid::parse("volid", bad).unwrap_err();
            assert_eq!(e.field, "volid", "{bad}");
        }
    }

    #[test]
    fn archives_are_described_for_messages() {
        let archive = |n: u64, size: Option<u64>, protected: bool| Archive {
            volid: format!("local:backup/a{n}"),
            vmid: None,
            subtype: None,
            size,
            ctime: None,
            format: None,
            notes: None,
            protected,
            verification: None,
        };
        let big = archive(1, Some(3 << 19), true);
        assert_eq!(big.describe(), "local:backup/a1 (1.5 MiB, protected)");
        assert_eq!(
            archive(2, None, false).describe(),
            "local:backup/a2 (no size)"
        );
        assert_eq!(describe_all(&[]), "none");
        let seven: Vec<Archive> = (0..7).map(|n| archive(n, Some(1 << 20), false)).collect();
        assert_eq!(
            describe_all(&seven),
            "local:backup/a0 (1.0 MiB), local:backup/a1 (1.0 MiB), local:backup/a2 (1.0 MiB), local:backup/a3 (1.0 MiB), local:backup/a4 (1.0 MiB), 2 more"
        );
    }

    #[test]
    fn content_entries_become_archives_of_their_kind() {
        let vm = Archive::from_value(&json!({
            "volid": "local:backup/vzdump-qemu-120-2026_12_01-10_00_00.vma.zst", "vmid": 120,
            "subtype": "qemu", "size": 4096, "ctime": 1764583200, "format": "vma.zst",
            "notes": "nightly", "protected": 1, "verification": {"state": "ok", "upid": "UPID:x"}
        }))
        .unwrap();
        assert!(vm.protected && vm.is_of(GuestKind::Qemu) && !vm.is_of(GuestKind::Lxc));
        assert_eq!(vm.verification.as_deref(), Some("ok"));
        let unnamed = Archive::from_value(&json!({
            "volid": "local:backup/vzdump-lxc-400-2026_12_01-10_00_00.tar.zst"
        }))
        .unwrap();
        assert!(unnamed.is_of(GuestKind::Lxc) && !unnamed.protected);
        assert!(Archive::from_value(&json!({"size": 1})).is_none());
    }
}
