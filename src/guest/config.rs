//! A guest's config as PVE reports it, and the rule that decides whether a requested value reads
//! back applied.
//!
//! # When a requested value counts as applied (setConfig)
//! PVE formats, and sometimes rewrites, what it stores. A requested value counts as applied when the
//! value PVE reports for its key:
//! 1. is the same text, the same number (`2048` and `"2048"`) or the same flag (`1` for `"yes"`,
//!    `"true"`, `"on"`; `0` for `"no"`, `"false"`, `"off"`);
//! 2. for `tags`: holds the same set of tags (PVE sorts and de-duplicates them; case is ignored, as
//!    everywhere tags are compared);
//! 3. for `sshkeys`: decodes to the same text, trailing whitespace ignored (PVE stores it URL-encoded);
//! 4. for property strings (`net0`, disks, `ipconfig0`, `smbios1`, `cpu`, …): holds every property the
//!    request names with the same value (case ignored — PVE upper-cases MACs —, sizes compared in
//!    bytes). Properties PVE adds (a generated MAC, a disk's `size`) are allowed. A bare word
//!    (`virtio`, a volume) must appear as a word or as a key (`virtio=BC:24:11:…`), and the allocation
//!    syntax `store:N` (a new N GiB disk) matches a volume on `store` with a size of N GiB.
//!
//! `cipassword` cannot be compared: PVE only ever shows `**********`; it counts as applied when PVE
//! reports the key.

use crate::pve::flex;
use crate::pve::property::size_bytes;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{Map, Value};

/// The key whose value PVE never shows.
pub const MASKED_KEY: &str = "cipassword";

/// What `sshkeys` may hold as PVE checks it (its `urlencoded` format): these bytes and `%XX`.
const URLENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// A guest's config in one read of `GET …/pending`: what runs and what waits for the next start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigSnapshot {
    pub current: Map<String, Value>,
    pub pending: Map<String, Value>,
    pub pending_delete: Vec<String>,
}

impl ConfigSnapshot {
    /// Whether any change waits for the next start.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() || !self.pending_delete.is_empty()
    }
}

/// Where a requested change stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    /// It reads back applied.
    Applied,
    /// PVE holds it until the next start.
    Pending,
    /// Neither: what PVE reports instead.
    NotApplied {
        current: Option<Value>,
        pending: Option<Value>,
    },
}

impl ConfigSnapshot {
    /// Reads the rows of `GET …/pending` (`{key, value?, pending?, delete?}`); `None` for another shape.
    pub fn from_rows(data: &Value) -> Option<ConfigSnapshot> {
        let mut snapshot = ConfigSnapshot::default();
        for row in data.as_array()? {
            let Some(key) = row.get("key").and_then(Value::as_str) else {
                continue;
            };
            if let Some(value) = row.get("value").filter(|v| !v.is_null()) {
                snapshot
                    .current
                    .insert(key.to_string(), record_value(value));
            }
            if let Some(value) = row.get("pending").filter(|v| !v.is_null()) {
                snapshot
                    .pending
                    .insert(key.to_string(), record_value(value));
            }
            // `delete` is 1, or 2 for a forced delete.
            if row.get("delete").and_then(flex::bool_of) == Some(true) {
                snapshot.pending_delete.push(key.to_string());
            }
        }
        Some(snapshot)
    }

    /// Where setting `key` to `requested` stands.
    pub fn reading(&self, key: &str, requested: &str) -> Reading {
        let current = self.current.get(key);
        let pending = self.pending.get(key);
        let shown = |value: Option<&Value>| {
            value
                .and_then(flex::string_of)
                .is_some_and(|seen| key == MASKED_KEY || shows(key, requested, &seen))
        };
        let deleting = self.pending_delete.iter().any(|k| k == key);
        if shown(current) && (pending.is_none() || shown(pending)) && !deleting {
            Reading::Applied
        } else if shown(pending) {
            Reading::Pending
        } else {
            self.not_applied(key)
        }
    }

    /// Where deleting `key` stands.
    pub fn deletion(&self, key: &str) -> Reading {
        if self.pending_delete.iter().any(|k| k == key) {
            Reading::Pending
        } else if !self.current.contains_key(key) && !self.pending.contains_key(key) {
            Reading::Applied
        } else {
            self.not_applied(key)
        }
    }

    fn not_applied(&self, key: &str) -> Reading {
        Reading::NotApplied {
            current: self.current.get(key).cloned(),
            pending: self.pending.get(key).cloned(),
        }
    }
}

/// A config value as records hold it: a string or a number (PVE's flags become 0/1).
pub fn record_value(value: &Value) -> Value {
    match value {
        Value::String(_) | Value::Number(_) => value.clone(),
        Value::Bool(b) => Value::from(u8::from(*b)),
        other => Value::String(other.to_string()),
    }
}

/// The `sshkeys` parameter: PVE wants the keys URL-encoded; text that already is passes unchanged.
pub fn ssh_keys_param(text: &str) -> String {
    let encoded = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'()%".contains(&b));
    match encoded {
        true => text.to_string(),
        false => utf8_percent_encode(text, URLENCODED).to_string(),
    }
}

/// Whether `observed`, as PVE reports `key`, shows `requested` applied (the rule in the module doc).
pub fn shows(key: &str, requested: &str, observed: &str) -> bool {
    same_scalar(requested, observed)
        || match key {
            "tags" => same_tags(requested, observed),
            "sshkeys" => decoded_keys(requested) == decoded_keys(observed),
            _ => is_property_string(key) && has_properties(key, requested, observed),
        }
}

fn same_scalar(a: &str, b: &str) -> bool {
    let number = |t: &str| t.trim().parse::<f64>().ok();
    a == b
        || matches!((number(a), number(b)), (Some(x), Some(y)) if x == y)
        || matches!((flag(a), flag(b)), (Some(x), Some(y)) if x == y)
}

fn flag(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Some(true),
        "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

fn same_tags(a: &str, b: &str) -> bool {
    let set = |text: &str| {
        let mut tags = flex::split_tags(text);
        tags.sort();
        tags.dedup();
        tags
    };
    set(a) == set(b)
}

fn decoded_keys(text: &str) -> String {
    percent_decode_str(text)
        .decode_utf8_lossy()
        .replace("\r\n", "\n")
        .trim_end()
        .to_string()
}

/// Keys whose value is a comma-separated property string that PVE may complete or reorder.
fn is_property_string(key: &str) -> bool {
    let base = key.trim_end_matches(|c: char| c.is_ascii_digit());
    matches!(
        base,
        "net"
            | "ide"
            | "sata"
            | "scsi"
            | "virtio"
            | "efidisk"
            | "tpmstate"
            | "unused"
            | "ipconfig"
            | "usb"
            | "hostpci"
            | "numa"
            | "rng"
            | "audio"
            | "smbios"
            | "agent"
            | "cpu"
            | "vga"
            | "startup"
            | "memory"
            | "meta"
            | "watchdog"
            | "spice_enhancements"
            // Containers: volumes, devices, features.
            | "rootfs"
            | "mp"
            | "dev"
            | "features"
    )
}

/// Volume keys of either kind of guest, where `store:N` allocates a new volume.
fn is_disk(key: &str) -> bool {
    let base = key.trim_end_matches(|c: char| c.is_ascii_digit());
    matches!(
        base,
        "ide" | "sata" | "scsi" | "virtio" | "efidisk" | "tpmstate" | "rootfs" | "mp"
    )
}

type Part<'a> = (&'a str, Option<&'a str>);

fn parts(text: &str) -> Vec<Part<'_>> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (p, None),
        })
        .collect()
}

fn has_properties(key: &str, requested: &str, observed: &str) -> bool {
    let seen = parts(observed);
    parts(requested)
        .into_iter()
        .enumerate()
        .all(|(i, (k, v))| match v {
            Some(v) => seen.iter().any(|(sk, sv)| {
                sk.eq_ignore_ascii_case(k) && sv.is_some_and(|sv| same_value(v, sv))
            }),
            None => {
                seen.iter().any(|(sk, _)| *sk == k)
                    || (i == 0 && is_disk(key) && allocated(k, &seen))
            }
        })
}

fn same_value(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
        || same_scalar(a, b)
        || matches!((size_bytes(a), size_bytes(b)), (Some(x), Some(y)) if x == y)
}

/// `store:N` asks PVE to allocate a new N GiB volume on `store`.
fn allocated(request: &str, seen: &[Part<'_>]) -> bool {
    let Some((store, gib)) = request.split_once(':') else {
        return false;
    };
    let Some(bytes) = gib
        .parse::<f64>()
        .ok()
        .filter(|g| g.is_finite() && *g >= 0.0)
        .map(|g| (g * (1u64 << 30) as f64).round() as u64)
    else {
        return false;
    };
    let on_store = seen
        .first()
        .is_some_and(|(volume, value)| value.is_none() && volume.starts_with(&format!("{store}:")));
    let sized = seen
        .iter()
        .any(|(k, v)| *k == "size" && v.and_then(size_bytes) == Some(bytes));
    on_store && sized
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_and_strings_compare_as_pve_formats_them() {
        assert!(shows("memory", "2048", "2048"));
        assert!(shows("cores", "2", "2.0"));
        assert!(shows("onboot", "yes", "1"));
        assert!(!shows("memory", "4096", "2048"));
        assert!(!shows("description", "a", "b"));
    }

    #[test]
    fn tags_compare_as_sets() {
        assert!(shows("tags", "zeta;Alpha,zeta", "alpha;zeta"));
        assert!(!shows("tags", "zeta;alpha", "alpha"));
    }

    #[test]
    fn a_nic_with_a_generated_mac_reads_back_applied() {
        let observed = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1";
        assert!(shows("net0", "virtio,bridge=vmbr0,firewall=1", observed));
        assert!(shows(
            "net0",
            "virtio=bc:24:11:2a:3b:4c,bridge=vmbr0",
            observed
        ));
        assert!(!shows("net0", "virtio,bridge=vmbr1", observed));
        assert!(!shows("net0", "e1000,bridge=vmbr0", observed));
    }

    #[test]
    fn container_options_compare_as_property_strings() {
        let observed = "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:03:00,ip=10.0.0.30/24,type=veth";
        assert!(shows(
            "net0",
            "name=eth0,bridge=vmbr0,ip=10.0.0.30/24",
            observed
        ));
        assert!(shows("features", "nesting=1", "keyctl=1,nesting=1"));
        assert!(shows(
            "mp0",
            "local-lvm:4,mp=/data",
            "local-lvm:vm-300-disk-1,mp=/data,size=4G"
        ));
        assert!(!shows(
            "mp0",
            "local-lvm:8,mp=/data",
            "local-lvm:vm-300-disk-1,mp=/data,size=4G"
        ));
    }

    #[test]
    fn free_text_is_never_compared_as_properties() {
        assert!(!shows("description", "a=1", "a=1,b=2"));
    }

    #[test]
    fn disk_allocation_syntax_matches_the_allocated_volume() {
        let observed = "local-lvm:vm-100-disk-1,size=4G";
        assert!(shows("scsi1", "local-lvm:4", observed));
        assert!(!shows("scsi1", "local-lvm:8", observed));
        assert!(!shows("scsi1", "other:4", observed));
        assert!(shows(
            "scsi0",
            "local-lvm:vm-100-disk-0,size=32768M",
            "local-lvm:vm-100-disk-0,size=32G"
        ));
    }

    #[test]
    fn ssh_keys_are_sent_url_encoded_and_compared_decoded() {
        let keys = "ssh-ed25519 AAAAC3+/= me@host\n";
        let encoded = ssh_keys_param(keys);
        assert_eq!(encoded, "ssh-ed25519%20AAAAC3%2B%2F%3D%20me%40host%0A");
        assert_eq!(ssh_keys_param(&encoded), encoded);
        assert!(shows("sshkeys", keys, &encoded));
        assert!(!shows("sshkeys", "ssh-ed25519 OTHER", &encoded));
    }

    fn snapshot() -> ConfigSnapshot {
        ConfigSnapshot::from_rows(&json!([
            {"key": "memory", "value": 2048, "pending": 4096},
            {"key": "name", "value": "web"},
            {"key": "ide2", "value": "none,media=cdrom", "delete": 1},
            {"key": "cipassword", "value": "**********"},
            {"key": "net1", "pending": "virtio=AA:BB:CC:DD:EE:FF,bridge=vmbr0"}
        ]))
        .unwrap()
    }

    #[test]
    fn pending_rows_split_into_current_pending_and_deletions() {
        let s = snapshot();
        assert_eq!(s.current["memory"], json!(2048));
        assert_eq!(s.pending["memory"], json!(4096));
        assert_eq!(s.pending_delete, vec!["ide2".to_string()]);
        assert!(!s.current.contains_key("net1"));
        assert!(ConfigSnapshot::from_rows(&json!({"key": "x"})).is_none());
    }

    #[test]
    fn readings_tell_applied_pending_and_not_applied_apart() {
        let s = snapshot();
        assert_eq!(s.reading("name", "web"), Reading::Applied);
        assert_eq!(s.reading("memory", "4096"), Reading::Pending);
        assert_eq!(s.reading("net1", "virtio,bridge=vmbr0"), Reading::Pending);
        assert_eq!(
            s.reading("name", "db"),
            Reading::NotApplied {
                current: Some(json!("web")),
                pending: None
            }
        );
        // A value that runs now but will be replaced at the next start is not applied.
        assert!(matches!(
            s.reading("memory", "2048"),
            Reading::NotApplied { .. }
        ));
        assert_eq!(s.reading(MASKED_KEY, "secret"), Reading::Applied);
    }

    #[test]
    fn deletions_read_back_gone_or_pending() {
        let s = snapshot();
        assert_eq!(s.deletion("ide2"), Reading::Pending);
        assert_eq!(s.deletion("scsi5"), Reading::Applied);
        assert!(matches!(s.deletion("name"), Reading::NotApplied { .. }));
    }
}
