//! A guest's volumes as its config and its storages show them — what the disk methods (moveDisk,
//! attachDisk, detachDisk) judge: the volume a key holds, the `unusedN` PVE keeps a detached or
//! moved-away volume as (pve-guest-common `PVE/AbstractConfig.pm` add_unused_volume), and whether
//! a storage still lists a volume (a freed one must be gone from it, not only from the config) —
//! and what the methods that make disks (vmCreate, restore) hold them to: the guest's disks a
//! storage lists.

use super::evidence::Evidence;
use super::storage::listed;
use crate::explain::could_not_args;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::property::storage_volume;
use crate::pve::request::PveRequest;
use crate::pve::responses::StorageVolume;
use serde_json::{Map, Value};

/// The volume config key `key` holds; `None` for no such key, a CD-ROM, an empty drive or a path.
pub fn volume_at<'c>(config: &'c Map<String, Value>, key: &str) -> Option<&'c str> {
    // Borrowed, not `flex::string_of`'s copy: a number (its only other form) never names a volume,
    // which has a `storage:` prefix. Borrowed from the config too: each caller compares it or
    // copies it once (issue 32).
    storage_volume(config.get(key)?.as_str()?)
}

/// Whether `key` is an `unusedN` entry (0 … 255: qemu-server `$MAX_UNUSED_DISKS`,
/// pve-container `$MAX_UNUSED_DISKS`).
pub fn is_unused(key: &str) -> bool {
    key.strip_prefix("unused").is_some_and(|n| {
        n.bytes().all(|b| b.is_ascii_digit())
            && (n == "0" || !n.starts_with('0'))
            && n.parse::<u16>().is_ok_and(|n| n < 256)
    })
}

/// The `unusedN` key holding `volid`, borrowed (each caller only names it). A volume id has a
/// `storage:` prefix, so a value that is no string (a number) never holds one.
pub fn unused_holding<'c>(config: &'c Map<String, Value>, volid: &str) -> Option<&'c str> {
    for (key, value) in config {
        if key.starts_with("unused") && value.as_str() == Some(volid) {
            return Some(key);
        }
    }
    None
}

/// The guest a volume belongs to by its name, as pve-storage's parse_volname reads it
/// (`vm-<vmid>-…`, `base-<vmid>-…`, `subvol-<vmid>-…`, `basevol-<vmid>-…`; a directory storage's
/// `<vmid>/vm-<vmid>-disk-0.qcow2`); `None` for a name of no guest.
pub fn owner_of(volid: &str) -> Option<u32> {
    let name = volid.split_once(':')?.1.rsplit('/').next()?;
    ["vm-", "base-", "subvol-", "basevol-"]
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .and_then(|rest| rest.split('-').next()?.parse().ok())
}

/// The storage of a volume id (`local-lvm:vm-100-disk-0` → `local-lvm`).
pub fn storage_of(volid: &str) -> &str {
    volid.split_once(':').map_or(volid, |(storage, _)| storage)
}

/// The request of whether `volid`'s storage on `node` lists it among its owner's volumes
/// (`GET /nodes/{node}/storage/{storage}/content?vmid=…`, every content type; the owner by the
/// volume's name, else `vmid`: the listing filters by the name's owner). Sent from its caller's
/// own await (issue 32), its answer read by [`listed_on_storage`].
pub fn listed_request(node: &str, vmid: u32, volid: &str) -> PveRequest {
    PveRequest::get(&["nodes", node, "storage", storage_of(volid), "content"])
        .param("vmid", owner_of(volid).unwrap_or(vmid).to_string())
}

/// Whether the storage's list ([`listed_request`], answered `answer`) holds `volid`.
pub fn listed_on_storage(
    node: &str,
    volid: &str,
    answer: Result<Value, PveError>,
) -> Result<bool, String> {
    let error = match answer {
        Ok(list) => match list.as_array() {
            Some(volumes) => return Ok(lists(volumes, volid)),
            None => PveError::malformed_args(format_args!(
                "PVE answered {answer} where a list was expected",
                answer = crate::quote::json(&list)
            )),
        },
        Err(e) => e,
    };
    let storage = storage_of(volid);
    Err(could_not_args(
        format_args!("list storage {storage} on node {node} to see whether {volid} is there"),
        &error,
    )
    .0)
}

/// The request for the guest's disk volumes on `storage` as that storage on the guest's node
/// lists them, one per storage (`GET /nodes/{node}/storage/{storage}/content?content=images|rootdir&vmid=…`,
/// [`GuestKind::disk_content`]). Sent from its
/// caller's own await (issue 32), its answer read by [`disks_listed`].
pub fn disks_request(kind: GuestKind, ev: &Evidence, storage: &str) -> PveRequest {
    endpoints::storage_content_of(&ev.at.node, storage, kind.disk_content(), ev.at.vmid)
}

/// The volumes [`disks_request`] listed; `label` names the guest in the message when they could
/// not be listed.
pub fn disks_listed(
    label: &str,
    ev: &Evidence,
    storage: &str,
    answer: Result<Value, PveError>,
) -> Result<Vec<StorageVolume>, String> {
    listed(answer).map_err(|why| {
        format!(
            "{label} exists, but its disks on storage {storage} could not be listed (GET /nodes/{}/storage/{storage}/content): {why}",
            ev.at.node
        )
    })
}

/// Whether a storage's content list holds `volid`.
pub fn lists(volumes: &[Value], volid: &str) -> bool {
    volumes
        .iter()
        .any(|v| v.get("volid").and_then(Value::as_str) == Some(volid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_volumes_owner_is_read_from_its_name() {
        assert_eq!(owner_of("local-lvm:vm-101-disk-0"), Some(101));
        assert_eq!(owner_of("local:100/vm-100-disk-1.qcow2"), Some(100));
        assert_eq!(owner_of("local-zfs:base-9000-disk-0"), Some(9000));
        assert_eq!(owner_of("local-zfs:subvol-300-disk-0"), Some(300));
        assert_eq!(owner_of("local:iso/debian.iso"), None);
        assert_eq!(owner_of("vm-100-disk-0"), None);
    }
}
