//! Snapshots as both models see them: the name rule PVE applies, the tree `GET …/snapshot` shows,
//! and the `<vm|ct>-<vmid>-snapshots` record that holds it as observed.

use super::evidence::Evidence;
use super::locate::Located;
use super::seen::{Marks, Reading};
use super::volumes::volume_at;
use crate::args::ArgError;
use crate::explain::could_not_args;
use crate::host::Host;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::request::{PveRequest, Repeat};
use crate::record_json::{opt, put, set};
use crate::run::{write_value, Run};
use serde_json::{Map, Value};

/// `pve-snapshot-name` (pve-guest-common GuestHelpers): format `pve-configid`, maxLength 40.
const MAX_NAME_CHARS: usize = 40;

/// Checks a snapshot name as PVE does: `pve-configid` is `^[a-z][a-z0-9_-]+$` case-insensitively
/// (pve-common JSONSchema.pm `$CONFIGID_RE`), at most 40 characters. A new snapshot may not take a
/// reserved name: `current` for both kinds; `pending` (any case) for VMs (qemu-server
/// API2/Qemu.pm `snapshot`), `vzdump` for containers (pve-container API2/LXC/Snapshot.pm).
pub fn check_name(
    kind: GuestKind,
    field: &str,
    name: &str,
    creating: bool,
) -> Result<(), ArgError> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !first_ok || !rest_ok || name.len() < 2 {
        return Err(ArgError::new(
            field,
            "must be a letter followed by at least one letter, digit, _ or - (PVE's pve-configid format)",
        ));
    }
    if name.len() > MAX_NAME_CHARS {
        return Err(ArgError::new(
            field,
            "must be at most 40 characters (PVE's limit)",
        ));
    }
    let reserved = match kind {
        GuestKind::Qemu => name == "current" || name.eq_ignore_ascii_case("pending"),
        GuestKind::Lxc => name == "current" || name == "vzdump",
    };
    if creating && reserved {
        return Err(ArgError::new(
            field,
            format!("{name:?} is a name PVE reserves"),
        ));
    }
    Ok(())
}

/// One snapshot as listed; recorded by [`Snapshot::json`].
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub name: String,
    pub parent: Option<String>,
    /// Empty when PVE gives none (then left out of the record).
    pub description: String,
    pub snaptime: Option<u64>,
    /// Whether it holds the VM's RAM (VMs only).
    pub vmstate: bool,
    /// Set while a snapshot task works on it (`prepare`, `delete`): the snapshot is incomplete.
    pub snapstate: Option<String>,
}

impl Snapshot {
    /// The snapshot as the record lists it, built as JSON (record_json.rs): absent fields and an
    /// empty description left out; no serializer of its own (issue 32).
    fn json(&self) -> Value {
        let mut one = Map::new();
        put(&mut one, "name", Some(&self.name));
        put(&mut one, "parent", self.parent.as_deref());
        let description = Some(self.description.as_str()).filter(|d| !d.is_empty());
        put(&mut one, "description", description);
        opt(&mut one, "snaptime", self.snaptime.map(Value::from));
        set(&mut one, "vmstate", Value::Bool(self.vmstate));
        put(&mut one, "snapstate", self.snapstate.as_deref());
        Value::Object(one)
    }
}

/// The snapshot tree of one guest, as `GET …/snapshot` showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotTree {
    /// The `current` entry's parent: the snapshot the guest's state descends from.
    pub current_parent: Option<String>,
    pub snapshots: Vec<Snapshot>,
}

impl SnapshotTree {
    /// Parses the list; `None` when it is not a list of named entries.
    pub fn from_value(data: &Value) -> Option<SnapshotTree> {
        let mut tree = SnapshotTree {
            current_parent: None,
            snapshots: Vec::new(),
        };
        for entry in data.as_array()? {
            let field = |key: &str| {
                entry
                    .get(key)
                    .and_then(flex::string_of)
                    .filter(|s| !s.is_empty())
            };
            let name = field("name")?;
            if name == "current" {
                tree.current_parent = field("parent");
                continue;
            }
            tree.snapshots.push(Snapshot {
                parent: field("parent"),
                description: field("description").unwrap_or_default(),
                snaptime: entry
                    .get("snaptime")
                    .and_then(flex::u64_of)
                    .filter(|t| *t > 0),
                vmstate: entry
                    .get("vmstate")
                    .and_then(flex::bool_of)
                    .unwrap_or(false),
                snapstate: field("snapstate"),
                name,
            });
        }
        // PVE lists them in hash order: a stable order (oldest first) keeps records comparable.
        crate::order::sort_by(&mut tree.snapshots, &|a, b| {
            (a.snaptime, &a.name).cmp(&(b.snaptime, &b.name))
        });
        Some(tree)
    }

    pub fn find(&self, name: &str) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.name == name)
    }

    /// The snapshot a method acts on, or the error saying it does not exist (and what does).
    pub fn existing(&self, label: &str, name: &str) -> Result<&Snapshot, String> {
        self.find(name).ok_or_else(|| {
            format!(
                "{label}: snapshot '{name}' does not exist ({})",
                self.describe()
            )
        })
    }

    /// `a (parent: b), c (parent: a)`, for messages.
    pub fn describe(&self) -> String {
        if self.snapshots.is_empty() {
            return "no snapshots".to_string();
        }
        // Each name and parent pushed onto the list where it lies, not formatted apart (issue 32).
        let mut names = String::new();
        for s in &self.snapshots {
            crate::quote::push_item(&mut names, ", ", &s.name);
            if let Some(parent) = &s.parent {
                names.push_str(" (parent ");
                names.push_str(parent);
                names.push(')');
            }
        }
        names
    }
}

/// `GET …/snapshot` of a located guest; `once`: with one attempt (a read again after a failure,
/// whose reads had their retries). A request, not an async fn reading it: each caller awaits
/// `Pve::call` itself and judges the answer with the plain [`tree_of`] or [`tree_read`], so no
/// future of its own wraps the one await (issue 32).
pub fn tree_request(kind: GuestKind, at: &Located, once: bool) -> PveRequest {
    let mut request = endpoints::snapshot_list(&at.node, kind, at.vmid);
    if once {
        request.repeat = Repeat::Never;
    }
    request
}

/// The snapshot list as answered, as a tree.
pub fn tree_of(data: Value) -> Result<SnapshotTree, PveError> {
    SnapshotTree::from_value(&data).ok_or_else(|| {
        PveError::malformed_args(format_args!(
            "the snapshot list is not a list of named entries: {data}",
            data = crate::quote::json(&data)
        ))
    })
}

/// Whether snapshot `name` of the guest in `ev` holds volume `volid`, judged on `answer`, the read
/// of its config: PVE refuses to free a volume a snapshot still uses (qemu-server
/// `PVE/QemuServer/Drive.pm` is_volume_in_use, pve-container `PVE/LXC/Config.pm`
/// is_volume_in_use_by_snapshots). Its caller reads each snapshot of [`tree_read`] in turn.
pub fn snapshot_holds<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    volid: &str,
    name: &str,
    answer: Result<Value, PveError>,
) -> Result<bool, String> {
    let config = answer.map_err(|e| {
        could_not_args(
            format_args!(
                "read snapshot {name:?} of {} to see whether a snapshot uses {volid}",
                ev.label(run)
            ),
            &e,
        )
        .0
    })?;
    Ok(config.as_object().is_some_and(|config| {
        config
            .keys()
            .any(|key| volume_at(config, key) == Some(volid))
    }))
}

/// The tree of the guest in `ev` as `answer` (the read of [`tree_request`]) shows it, for a
/// method's messages.
pub fn tree_read<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    answer: Result<Value, PveError>,
) -> Result<SnapshotTree, String> {
    answer
        .and_then(tree_of)
        .map_err(|e| could_not_args(format_args!("list the snapshots of {}", ev.label(run)), &e).0)
}

/// The `<vm|ct>-<vmid>-snapshots` record of a tree observed on `at` (`marks`: when, relative to
/// the run's changes, guest/seen.rs), built as JSON (record_json.rs): the tree's fields, each
/// snapshot made JSON; no struct with a serializer of its own (issue 32).
pub fn tree_write<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    tree: &SnapshotTree,
    marks: Marks,
) -> crate::outcome::RecordWrite {
    let mut snapshots = Vec::with_capacity(tree.snapshots.len());
    for snapshot in &tree.snapshots {
        snapshots.push(snapshot.json());
    }
    let mut record = Map::new();
    set(&mut record, "vmid", Value::from(at.vmid));
    put(&mut record, "node", Some(&at.node));
    put(&mut record, "currentParent", tree.current_parent.as_deref());
    set(&mut record, "snapshots", Value::Array(snapshots));
    marks.put_into(&mut record);
    put(&mut record, "lastOperation", Some(run.method));
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    write_value(
        "snapshots",
        format!("{}-snapshots", run.guest_instance(at.vmid)),
        Value::Object(record),
    )
}

/// A tree, and when it was read.
#[derive(Debug, Clone)]
pub struct TreeSeen {
    pub tree: SnapshotTree,
    pub reading: Reading,
    /// Whether the last attempt to read the tree again failed (it had its retries).
    pub unreadable: bool,
}

impl TreeSeen {
    /// The tree of the guest in `ev` as `answer`, the read of [`tree_request`] just made, shows
    /// it. Plain: the caller awaits the read itself (no future of its own, issue 32).
    pub fn read<H: Host>(
        run: &Run<'_, H>,
        ev: &Evidence,
        answer: Result<Value, PveError>,
    ) -> Result<TreeSeen, String> {
        let tree = tree_read(run, ev, answer)?;
        let reading = Reading::at(run.host.now_ms(), ev.trail.mutations_sent);
        Ok(TreeSeen {
            tree,
            reading,
            unreadable: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_pve_configid() {
        for good in ["ab", "before-upgrade", "A_1", "x9-_"] {
            assert!(
                check_name(GuestKind::Qemu, "name", good, true).is_ok(),
                "{good}"
            );
        }
        for bad in ["", "a", "1ab", "-ab", "a b", "a.b", "ä1", &"a".repeat(41)] {
            assert!(
                check_name(GuestKind::Qemu, "name", bad, true).is_err(),
                "{bad}"
            );
        }
        assert!(check_name(GuestKind::Qemu, "name", &"a".repeat(40), true).is_ok());
    }

    #[test]
    fn reserved_names_differ_by_kind_and_bind_only_new_snapshots() {
        assert!(check_name(GuestKind::Qemu, "name", "PENDING", true).is_err());
        assert!(check_name(GuestKind::Lxc, "name", "PENDING", true).is_ok());
        assert!(check_name(GuestKind::Lxc, "name", "vzdump", true).is_err());
        assert!(check_name(GuestKind::Qemu, "name", "vzdump", true).is_ok());
        assert!(check_name(GuestKind::Qemu, "name", "current", true).is_err());
        assert!(check_name(GuestKind::Qemu, "name", "current", false).is_ok());
    }

    #[test]
    fn the_current_entry_gives_the_parent_and_is_not_a_snapshot() {
        let tree = SnapshotTree::from_value(&json!([
            {"name": "b", "parent": "a", "snaptime": 20, "vmstate": 0, "description": ""},
            {"name": "a", "snaptime": 10, "vmstate": 1, "description": "first"},
            {"name": "current", "parent": "b", "running": 1, "description": "You are here!"}
        ]))
        .unwrap();
        assert_eq!(tree.current_parent.as_deref(), Some("b"));
        assert_eq!(tree.snapshots.len(), 2);
        assert_eq!(tree.snapshots[0].name, "a");
        assert!(tree.snapshots[0].vmstate);
        assert_eq!(tree.find("b").unwrap().parent.as_deref(), Some("a"));
        assert!(SnapshotTree::from_value(&json!({"name": "a"})).is_none());
        assert!(SnapshotTree::from_value(&json!([{"parent": "a"}])).is_none());
    }
}
