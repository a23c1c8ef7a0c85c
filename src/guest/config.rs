//! A guest's config as PVE reports it, and the rule that decides whether a requested value reads
//! back applied.
//!
//! # When a requested value counts as applied (setConfig, and every config read-back)
//! Exactly when PVE's stored value is the requested one as PVE stores it. How a key compares follows
//! its type in PVE's own schema (`pve::config_keys`, generated from apidata.json):
//! 1. integer, number and boolean keys compare by meaning (`2048` = `2048.0`; `1` = `yes` = `on`);
//!    text keys (`description`, `name`, …) compare as text: `7` and `007` differ;
//! 2. `tags` (format `pve-tag-list`): the same set of tags (PVE sorts them; case is ignored);
//! 3. `sshkeys` (format `urlencoded`): the same text once decoded, trailing whitespace ignored;
//! 4. property strings (`net0`, disks, `ipconfig0`, `rootfs`, `mp0`, `features`, …): the whole set
//!    of properties, order-insensitive, each compared by its own schema type (MACs ignore case,
//!    sizes compare in bytes). A property the request leaves out must be absent from PVE's value —
//!    a superset is not applied — unless PVE generates it (a NIC's MAC, a volume's `size`, a
//!    container NIC's `type=veth`) or it is the property's schema default; a requested default that
//!    PVE drops is applied. `store:N` (a new N GiB volume) matches a volume on `store` of N GiB
//!    (`store:<vmid>/<volume>` or `store:<volume>`); `store:cloudinit` a cloud-init volume there;
//!    the `format` asked for a new volume is the one its name carries (`….qcow2`; none is raw),
//!    as qemu-server create_disks drops `format=` once the volume is made, and `import-from` is
//!    consumed. A drive's byte rate (`bps*`) compares with the MB/s PVE stores (`mbps*`).
//!
//! A key PVE's schema does not have compares as exact text. `cipassword` cannot be compared: PVE
//! only ever shows `**********`; it counts as applied when PVE reports the key.

use crate::args::ArgError;
use crate::pve::config_keys::{self, KeyType, Kind, Prop};
use crate::pve::endpoints::GuestKind;
use crate::pve::flex;
use crate::pve::property::size_bytes;
use crate::record_json::set;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
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
    // Inlined into its one caller (issue 32).
    #[inline(always)]
    pub fn from_rows(data: &Value) -> Option<ConfigSnapshot> {
        let mut snapshot = ConfigSnapshot::default();
        for row in data.as_array()? {
            let Some(key) = row.get("key").and_then(Value::as_str) else {
                continue;
            };
            if let Some(value) = row.get("value").filter(|v| !v.is_null()) {
                set(&mut snapshot.current, key, record_value(value));
            }
            if let Some(value) = row.get("pending").filter(|v| !v.is_null()) {
                set(&mut snapshot.pending, key, record_value(value));
            }
            // `delete` is 1, or 2 for a forced delete.
            if row.get("delete").and_then(flex::bool_of) == Some(true) {
                snapshot.pending_delete.push(key.to_string());
            }
        }
        Some(snapshot)
    }

    /// Where setting `key` of a `kind` guest to `requested` stands.
    // Inlined into its one caller (issue 32).
    #[inline(always)]
    pub fn reading(&self, kind: GuestKind, key: &str, requested: &str) -> Reading {
        let current = self.current.get(key);
        let pending = self.pending.get(key);
        let shown = |value: Option<&Value>| {
            value
                .and_then(flex::string_of)
                .is_some_and(|seen| key == MASKED_KEY || shows(kind, key, requested, &seen))
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
    // Inlined into its one caller (issue 32).
    #[inline(always)]
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

/// "`key` reads "seen", asked want; …": each option, as `(key, asked, seen)`, that did not read
/// back as asked.
pub fn not_as_asked(wrong: &[(&str, &str, String)]) -> String {
    let mut said = String::new();
    for (key, want, seen) in wrong {
        crate::quote::push_item(
            &mut said,
            "; ",
            &format!("`{key}` reads {seen:?}, asked {want}"),
        );
    }
    said
}

/// A config value as records hold it: a string or a number (PVE's flags become 0/1).
pub fn record_value(value: &Value) -> Value {
    match value {
        Value::String(_) | Value::Number(_) => value.clone(),
        Value::Bool(b) => Value::from(u8::from(*b)),
        other => Value::String(crate::quote::json(other)),
    }
}

/// The options of a config map as they go on the wire: the value of every key PVE's schema types
/// `boolean` becomes `1` or `0`, whatever the caller wrote (`true`, `yes`, `on`, `1`; `false`, `no`,
/// `off`, `0`, any case). Over HTTP a node takes only `1` and `0` for a boolean parameter (pve-common
/// `PVE/JSONSchema.pm` `check_type`; `yes`/`on`/`true` pass only through pvesh's option parsing,
/// `get_options` → `parse_boolean`), so both transports get the same text. Any other value for a
/// boolean key is refused here, before anything is sent, naming the key (`field` is the map's
/// argument name, e.g. `config`). Keys of other types, and keys the schema lacks, pass unchanged.
/// In place: each boolean's value rewritten, nothing copied (issue 32).
pub fn wire_options(
    kind: GuestKind,
    field: &str,
    options: &mut [(String, String)],
) -> Result<(), ArgError> {
    for (key, value) in options {
        if key_type(kind, key).map(|t| t.kind) != Some(Kind::Boolean) {
            continue;
        }
        match flag(value) {
            Some(on) => *value = if on { "1" } else { "0" }.to_string(),
            None => return Err(ArgError::new(
                format!("{field}.{key}"),
                format!(
                    "is a boolean in PVE's schema: give 1/0, true/false, yes/no or on/off (got {:?})",
                    crate::quote::bounded_to(value, 200)
                ),
            )),
        }
    }
    Ok(())
}

/// The `sshkeys` parameter: PVE wants the keys URL-encoded; text that already is passes unchanged.
pub fn ssh_keys_param(text: &str) -> String {
    let encoded = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'()%".contains(&b));
    let mut param = String::new();
    match encoded {
        true => param.push_str(text),
        // Extended as the API transport extends a URL: one copy of the encoder's loop, not a
        // `Display` of its own (issue 32).
        false => param.extend(utf8_percent_encode(text, URLENCODED)),
    }
    param
}

/// The schema type of config key `key` of `kind` guests (`net0` is `net[n]`); `None` for a key PVE's
/// schema does not have. Read from the table's line for it (`name;kind;format;properties`, kind
/// `i`, `n`, `b` or `t` and then `p` for a property string): text, not a struct per key (issue 32).
pub fn key_type(kind: GuestKind, key: &str) -> Option<KeyType> {
    let table = match kind {
        GuestKind::Qemu => config_keys::QEMU,
        GuestKind::Lxc => config_keys::LXC,
    };
    let field = |f: &'static str| Some(f).filter(|f| !f.is_empty());
    table.split('\n').find_map(|line| {
        let mut f = line.splitn(4, ';');
        let name = f.next()?;
        let (name, indexed) = match name.strip_suffix("[n]") {
            Some(name) => (name, true),
            None => (name, false),
        };
        let found = match indexed {
            false => name == key,
            true => key
                .strip_prefix(name)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        };
        if !found {
            return None;
        }
        let letters = f.next()?;
        Some(KeyType {
            name,
            indexed,
            kind: match letters.as_bytes().first() {
                Some(b'i') => Kind::Integer,
                Some(b'n') => Kind::Number,
                Some(b'b') => Kind::Boolean,
                _ => Kind::Text,
            },
            property_string: letters.ends_with('p'),
            format: field(f.next()?),
            properties: field(f.next()?),
        })
    })
}

/// The properties of a property-string key, read from the schema table's compact list.
pub fn properties(t: &KeyType) -> Vec<Prop> {
    let field = |f: Option<&'static str>| f.filter(|f| !f.is_empty());
    let mut props = Vec::new();
    for p in t.properties.unwrap_or_default().split('|') {
        if p.is_empty() {
            continue;
        }
        let mut f = p.split(';');
        let mut next = || f.next();
        props.push(Prop {
            name: next().unwrap_or_default(),
            kind: match next() {
                Some("i") => Kind::Integer,
                Some("n") => Kind::Number,
                Some("b") => Kind::Boolean,
                _ => Kind::Text,
            },
            format: field(next()),
            default_key: next() == Some("1"),
            default: field(next()),
            alias: field(next()),
            key_alias: field(next()),
        });
    }
    props
}

/// Whether `observed`, as PVE reports `key`, shows `requested` applied (the rule in the module doc).
pub fn shows(kind: GuestKind, key: &str, requested: &str, observed: &str) -> bool {
    let Some(t) = key_type(kind, key) else {
        return requested == observed;
    };
    match t.format {
        Some("pve-tag-list") => same_tags(requested, observed),
        Some("urlencoded") => decoded_keys(requested) == decoded_keys(observed),
        _ if t.property_string => same_properties(kind, &t, requested, observed),
        _ => same_scalar(t.kind, requested, observed),
    }
}

/// Text compares as text; numbers and flags as what they mean, only where PVE types them so.
fn same_scalar(kind: Kind, a: &str, b: &str) -> bool {
    let number = crate::pve::flex::number_in;
    a == b
        || match kind {
            Kind::Integer | Kind::Number => {
                matches!((number(a), number(b)), (Some(x), Some(y)) if x == y)
            }
            Kind::Boolean => matches!((flag(a), flag(b)), (Some(x), Some(y)) if x == y),
            Kind::Text => false,
        }
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
        crate::order::sort_dedup(&mut tags);
        tags
    };
    set(a) == set(b)
}

/// `sshkeys` as the keys it holds: `%XX` decoded as percent-encoding's `percent_decode_str` reads
/// it (two hex digits, else a literal `%`), `\r\n` read as `\n`, invalid UTF-8 as U+FFFD, trailing
/// whitespace dropped. Decoded here byte by byte, not through the crate's decoding iterator and a
/// text replace (issue 32). `\r` and `\n` are ASCII, which UTF-8 repair never touches: a `\r`
/// before a `\n` is dropped before it.
fn decoded_keys(text: &str) -> String {
    let hex = |b: Option<&u8>| b.and_then(|b| char::from(*b).to_digit(16));
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        at += 1;
        let byte = match (byte, hex(bytes.get(at)), hex(bytes.get(at + 1))) {
            (b'%', Some(high), Some(low)) => {
                at += 2;
                (high * 16 + low) as u8
            }
            _ => byte,
        };
        if decoded.last() == Some(&b'\r') && byte == b'\n' {
            decoded.pop();
        }
        decoded.push(byte);
    }
    let mut keys = String::from_utf8_lossy(&decoded).into_owned();
    keys.truncate(keys.trim_end().len());
    keys
}

/// Properties PVE fills in itself when the request leaves them out: a NIC's generated MAC, a
/// volume's size, pve-container's `type=veth` (`PVE::LXC::Config::parse_lxc_network` sets it), and
/// the Microsoft certificates an EFI disk with pre-enrolled keys gets (qemu-server
/// `PVE/QemuServer/OVMF.pm` create_efidisk sets `ms-cert`).
fn generated(kind: GuestKind, key: &str, name: &str, value: &str) -> bool {
    match name {
        "macaddr" | "hwaddr" | "size" => true,
        "type" => kind == GuestKind::Lxc && key.starts_with("net") && value == "veth",
        "ms-cert" => key.starts_with("efidisk"),
        _ => false,
    }
}

/// A drive's byte-rate limits, which qemu-server stores as MB/s (`PVE/QemuServer/Drive.pm`
/// parse_drive turns `bps*` into `mbps*` with three decimals).
const BYTE_RATES: [&str; 3] = ["bps", "bps_rd", "bps_wr"];

/// A property string read into canonical `name → value` pairs: a bare word is the default key's
/// value (`virtio` → `model=virtio`), an alias is its target, `virtio=<mac>` is `model=virtio` plus
/// `macaddr=<mac>` (PVE's `keyAlias`), a drive's byte rate is its MB/s. Without a property list
/// the parts stay as written.
pub fn canonical<'a>(props: &[Prop], text: &'a str) -> Canonical<'a> {
    let default_key = props.iter().find(|p| p.default_key).map(|p| p.name);
    let mut out: Canonical = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = match part.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (part, None),
        };
        let prop = props.iter().find(|p| p.name == name);
        // A byte rate's MB/s twin `m<name>`, when the key has one.
        let twin = match BYTE_RATES.contains(&name) {
            true => props
                .iter()
                .find(|p| p.name.strip_prefix('m') == Some(name)),
            false => None,
        };
        match (prop, value, twin) {
            (Some(_), Some(v), Some(twin)) => {
                let rate = v
                    .parse::<u64>()
                    .map(|b| crate::units::fixed(b, 1_048_576, 3));
                out.push((twin.name, Some(rate.unwrap_or_else(|_| v.to_string()))));
            }
            (Some(p), Some(v), _) if p.key_alias.is_some() => {
                out.push((p.key_alias.unwrap_or_default(), Some(name.to_string())));
                out.push((p.alias.unwrap_or(name), Some(v.to_string())));
            }
            (Some(p), Some(v), _) => out.push((p.alias.unwrap_or(name), Some(v.to_string()))),
            (_, None, _)
                if default_key.is_some() && !out.iter().any(|(n, _)| Some(*n) == default_key) =>
            {
                out.push((default_key.unwrap_or_default(), Some(name.to_string())))
            }
            (_, v, _) => out.push((name, v.map(str::to_string))),
        }
    }
    out
}

/// A property string's canonical `name → value` pairs ([`canonical`]), borrowed from the text and
/// the schema table; the values are their own (issue 32).
pub type Canonical<'a> = Vec<(&'a str, Option<String>)>;

/// The whole set of properties compares: every requested property with PVE's value for it (or
/// left out by PVE because it is the default), and no property PVE holds that the request left
/// out — except what PVE generates ([`generated`]) or writes as its default. A volume PVE
/// allocated for the request ([`allocation_matches`]) stands in for `<storage>:<GiB>`: its `size`
/// is PVE's, the `format` asked is the one its name carries (qemu-server create_disks drops
/// `format` once the volume is made), and `import-from` is consumed.
fn same_properties(kind: GuestKind, t: &KeyType, requested: &str, observed: &str) -> bool {
    let props = properties(t);
    let prop = |name: &str| props.iter().find(|p| p.name == name);
    let asked = canonical(&props, requested);
    let seen = canonical(&props, observed);
    let volume_key = prop("file")
        .or(prop("volume"))
        .filter(|p| p.default_key)
        .map(|p| p.name);
    let volume = volume_key.and_then(|k| value_in(&seen, k)).flatten();
    let allocated = volume_key
        .and_then(|k| value_in(&asked, k))
        .flatten()
        .is_some_and(|w| allocation_matches(t.name, w, volume, &seen));
    let made = |name: &str, want: &Option<String>| match name {
        // An action, not a property: PVE imports the volume and does not keep the source.
        "import-from" => true,
        "format" => allocated && want.as_deref() == volume.map(volume_format),
        _ => allocated && Some(name) == volume_key,
    };
    for (name, want) in &asked {
        let got = value_in(&seen, name);
        let same = match (want, got) {
            (Some(w), Some(Some(g))) => same_value(prop(name), w, g),
            (None, Some(None)) => true,
            _ => false,
        };
        let is_default = want
            .as_deref()
            .zip(prop(name).and_then(|p| p.default))
            .is_some_and(|(w, d)| same_value(prop(name), w, d));
        if !(same || made(name, want) || (got.is_none() && is_default)) {
            return false;
        }
    }
    seen.iter().all(|(name, value)| {
        asked.iter().any(|(n, _)| n == name)
            || (*name == "size" && allocated)
            || value.as_deref().is_some_and(|v| {
                generated(kind, t.name, name, v)
                    || prop(name)
                        .and_then(|p| p.default)
                        .is_some_and(|d| same_value(prop(name), v, d))
            })
            || (*name == "media"
                && value.as_deref() == Some("cdrom")
                && asked
                    .iter()
                    .any(|(_, v)| v.as_deref().is_some_and(|v| v.ends_with(":cloudinit"))))
    })
}

/// The value of property `name` in a canonical set (`Some(None)`: a bare flag), borrowed: no copy
/// to drop on each way out of [`same_properties`] (issue 32).
fn value_in<'s>(set: &'s Canonical, name: &str) -> Option<Option<&'s str>> {
    set.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.as_deref())
}

/// The format a volume's name carries (`local:902/vm-902-disk-0.qcow2`); a name without one is a
/// raw block device (LVM, ZFS, RBD) — pve-storage's parse_volname.
fn volume_format(volid: &str) -> &str {
    let name = volid.rsplit(['/', ':']).next().unwrap_or_default();
    match name.rsplit_once('.') {
        Some((_, ext)) if matches!(ext, "raw" | "qcow2" | "vmdk" | "qcow" | "qed" | "cloop") => ext,
        _ => "raw",
    }
}

fn same_value(prop: Option<&Prop>, a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let Some(prop) = prop else {
        return false;
    };
    match prop.format {
        Some("mac-addr") => a.eq_ignore_ascii_case(b),
        Some("disk-size") => matches!((size_bytes(a), size_bytes(b)), (Some(x), Some(y)) if x == y),
        _ => same_scalar(prop.kind, a, b),
    }
}

/// `store:N` asks PVE to allocate a new N GiB volume on `store` (`store:0` with `import-from`, and
/// EFI/TPM state volumes, get the size PVE chooses); `store:cloudinit` a cloud-init volume.
fn allocation_matches(key: &str, request: &str, volume: Option<&str>, seen: &Canonical) -> bool {
    let Some((store, amount)) = request.split_once(':') else {
        return false;
    };
    let Some(volume) = volume else {
        return false;
    };
    // `<store>:…`, matched in place (no formatted copy).
    if !volume
        .strip_prefix(store)
        .is_some_and(|rest| rest.starts_with(':'))
    {
        return false;
    }
    if amount == "cloudinit" {
        return volume.contains("cloudinit");
    }
    let Some(gib) = crate::pve::flex::number_in(amount).filter(|g| *g >= 0.0) else {
        return false;
    };
    // EFI vars and TPM state volumes get the size qemu-server chooses (create_efidisk,
    // TPMSTATE_DISK_SIZE), whatever the request said.
    if gib == 0.0 || key.starts_with("efidisk") || key.starts_with("tpmstate") {
        return true;
    }
    let bytes = (gib * (1u64 << 30) as f64).round() as u64;
    seen.iter()
        .any(|(k, v)| *k == "size" && v.as_deref().and_then(size_bytes) == Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const Q: GuestKind = GuestKind::Qemu;
    const L: GuestKind = GuestKind::Lxc;

    #[test]
    fn numbers_and_flags_compare_by_meaning_only_where_pve_types_them_so() {
        assert!(shows(Q, "memory", "2048", "2048"));
        assert!(shows(Q, "cores", "2", "2.0"));
        assert!(shows(Q, "onboot", "yes", "1"));
        assert!(shows(L, "swap", "512", "512.0"));
        assert!(!shows(Q, "memory", "4096", "2048"));
        assert!(!shows(Q, "description", "a", "b"));
    }

    /// [`wire_options`] of a copy of `options`.
    fn wired(
        kind: GuestKind,
        field: &str,
        options: &[(String, String)],
    ) -> Result<Vec<(String, String)>, ArgError> {
        let mut wire = options.to_vec();
        wire_options(kind, field, &mut wire)?;
        Ok(wire)
    }

    #[test]
    fn boolean_keys_go_on_the_wire_as_1_or_0_and_other_keys_unchanged() {
        let options = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let sent = wired(
            Q,
            "config",
            &options(&[
                ("onboot", "YES"),
                ("acpi", "true"),
                ("tablet", "off"),
                ("numa", "0"),
                ("description", "on"),
                ("agent", "enabled=yes"),
            ]),
        )
        .unwrap();
        let values: Vec<&str> = sent.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, ["1", "1", "0", "0", "on", "enabled=yes"]);
        let ct = wired(
            L,
            "config",
            &options(&[("onboot", "on"), ("console", "no")]),
        );
        assert_eq!(ct.unwrap(), options(&[("onboot", "1"), ("console", "0")]));
    }

    #[test]
    fn a_boolean_key_refuses_a_value_that_is_no_boolean_naming_the_key() {
        let refused = wired(Q, "config", &[("onboot".into(), "maybe".into())]).unwrap_err();
        assert_eq!(refused.field, "config.onboot");
        assert!(refused.rule.contains("\"maybe\""), "{}", refused.rule);
        assert!(wired(Q, "config", &[("acpi".into(), "".into())]).is_err());
    }

    #[test]
    fn free_text_compares_as_text() {
        assert!(!shows(Q, "description", "7", "007"));
        assert!(!shows(Q, "name", "1", "1.0"));
        assert!(!shows(L, "hostname", "yes", "1"));
        assert!(!shows(Q, "description", "a=1", "a=1,b=2"));
    }

    #[test]
    fn hyphenated_schema_keys_are_known_with_their_types() {
        assert_eq!(
            key_type(Q, "allow-ksm").map(|t| t.kind),
            Some(Kind::Boolean)
        );
        assert!(key_type(Q, "amd-sev").is_some_and(|t| t.property_string));
        assert!(key_type(Q, "intel-tdx").is_some());
        assert!(shows(Q, "allow-ksm", "on", "1"));
        assert!(key_type(Q, "net12").is_some() && key_type(Q, "net").is_none());
        assert!(key_type(Q, "scsihw").is_some_and(|t| !t.indexed));
    }

    #[test]
    fn the_compact_property_list_reads_back_into_the_schema_facts() {
        let net = key_type(Q, "net0").unwrap();
        let props = properties(&net);
        let model = props.iter().find(|p| p.name == "model").unwrap();
        assert!(model.default_key && model.kind == Kind::Text);
        let virtio = props.iter().find(|p| p.name == "virtio").unwrap();
        assert_eq!(
            (virtio.alias, virtio.key_alias),
            (Some("macaddr"), Some("model"))
        );
        let mtu = props.iter().find(|p| p.name == "mtu").unwrap();
        assert_eq!((mtu.kind, mtu.default), (Kind::Integer, None));
        let mac = props.iter().find(|p| p.name == "macaddr").unwrap();
        assert_eq!(mac.format, Some("mac-addr"));
    }

    #[test]
    fn tags_compare_as_sets() {
        assert!(shows(Q, "tags", "zeta;Alpha,zeta", "alpha;zeta"));
        assert!(!shows(Q, "tags", "zeta;alpha", "alpha"));
    }

    #[test]
    fn a_nic_with_a_generated_mac_reads_back_applied() {
        let observed = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1";
        assert!(shows(Q, "net0", "virtio,bridge=vmbr0,firewall=1", observed));
        assert!(shows(
            Q,
            "net0",
            "firewall=1,bridge=vmbr0,model=virtio",
            observed
        ));
        assert!(shows(
            Q,
            "net0",
            "virtio=bc:24:11:2a:3b:4c,bridge=vmbr0,firewall=on",
            observed
        ));
        assert!(!shows(
            Q,
            "net0",
            "virtio,bridge=vmbr1,firewall=1",
            observed
        ));
        assert!(!shows(Q, "net0", "e1000,bridge=vmbr0,firewall=1", observed));
    }

    #[test]
    fn a_property_pve_kept_after_the_request_dropped_it_is_not_applied() {
        let observed = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1";
        assert!(!shows(Q, "net0", "virtio,bridge=vmbr0", observed));
        assert!(!shows(L, "features", "nesting=1", "keyctl=1,nesting=1"));
        assert!(!shows(
            Q,
            "scsi0",
            "local-lvm:vm-100-disk-0",
            "local-lvm:vm-100-disk-0,ssd=1,size=32G"
        ));
    }

    #[test]
    fn bridge_names_and_other_text_properties_keep_their_case() {
        assert!(!shows(
            Q,
            "net0",
            "virtio,bridge=VMBR0",
            "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0"
        ));
    }

    #[test]
    fn container_options_compare_as_property_strings() {
        let observed = "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:03:00,ip=10.0.0.30/24,type=veth";
        assert!(shows(
            L,
            "net0",
            "name=eth0,bridge=vmbr0,ip=10.0.0.30/24",
            observed
        ));
        assert!(shows(L, "features", "nesting=1", "nesting=1"));
        assert!(shows(
            L,
            "mp0",
            "local-lvm:4,mp=/data",
            "local-lvm:vm-300-disk-1,mp=/data,size=4G"
        ));
        assert!(!shows(
            L,
            "mp0",
            "local-lvm:8,mp=/data",
            "local-lvm:vm-300-disk-1,mp=/data,size=4G"
        ));
    }

    #[test]
    fn disk_allocation_syntax_matches_the_allocated_volume() {
        let observed = "local-lvm:vm-100-disk-1,size=4G";
        assert!(shows(Q, "scsi1", "local-lvm:4", observed));
        assert!(!shows(Q, "scsi1", "local-lvm:8", observed));
        assert!(!shows(Q, "scsi1", "other:4", observed));
        assert!(shows(
            Q,
            "scsi0",
            "local-lvm:vm-100-disk-0,size=32768M",
            "local-lvm:vm-100-disk-0,size=32G"
        ));
        assert!(shows(
            L,
            "rootfs",
            "local-lvm:8",
            "local-lvm:vm-300-disk-0,size=8G"
        ));
        assert!(shows(
            Q,
            "ide2",
            "local-lvm:cloudinit",
            "local-lvm:vm-100-cloudinit,media=cdrom"
        ));
    }

    /// What a real PVE 9.2 node stored for `scsi0: local:1` and `local:1,format=qcow2` on its
    /// dir storage `local` (../shared/realpve/transcript-2026-12-03.jsonl).
    const DIR_RAW: &str = "local:900/vm-900-disk-0.raw,size=1G";
    const DIR_QCOW2: &str = "local:902/vm-902-disk-0.qcow2,size=1G";

    #[test]
    fn a_new_disk_reads_back_as_the_volume_pve_made_on_that_storage_with_that_size() {
        assert!(shows(Q, "scsi0", "local:1", DIR_RAW));
        assert!(shows(Q, "scsi0", "volume=local:1", DIR_RAW));
        assert!(shows(
            Q,
            "scsi0",
            "local:1",
            "local:902/base-902-disk-0.qcow2/903/vm-903-disk-0.qcow2,size=1G"
        ));
        assert!(!shows(Q, "scsi0", "local:2", DIR_RAW));
        assert!(!shows(Q, "scsi0", "other:1", DIR_RAW));
        assert!(!shows(Q, "scsi0", "local:1", "local:900/vm-900-disk-0.raw"));
    }

    #[test]
    fn the_format_of_a_new_disk_reads_back_from_the_volume_name() {
        assert!(shows(Q, "scsi0", "local:1,format=qcow2", DIR_QCOW2));
        assert!(shows(Q, "scsi0", "local:1,format=raw", DIR_RAW));
        assert!(shows(
            Q,
            "virtio1",
            "format=vmdk,file=local:1",
            "local:900/vm-900-disk-1.vmdk,size=1G"
        ));
        // A block storage's volume names no format: it is raw.
        assert!(shows(
            Q,
            "scsi1",
            "local-lvm:4,format=raw",
            "local-lvm:vm-100-disk-1,size=4G"
        ));
        assert!(!shows(Q, "scsi0", "local:1,format=qcow2", DIR_RAW));
        assert!(!shows(
            Q,
            "scsi1",
            "local-lvm:4,format=qcow2",
            "local-lvm:vm-100-disk-1,size=4G"
        ));
        // PVE keeps `format` beside a volume that already exists.
        let kept = "local:902/vm-902-disk-0.qcow2,format=qcow2,size=1G";
        assert!(shows(
            Q,
            "scsi0",
            "local:902/vm-902-disk-0.qcow2,format=qcow2",
            kept
        ));
        assert!(!shows(
            Q,
            "scsi0",
            "local:902/vm-902-disk-0.qcow2,format=qcow2",
            DIR_QCOW2
        ));
    }

    #[test]
    fn an_import_and_a_cloud_init_drive_read_back_as_the_volume_pve_made() {
        let imported = "local:500/vm-500-disk-0.qcow2,discard=on,size=2252M";
        assert!(shows(
            Q,
            "scsi0",
            "local:0,import-from=local:import/cloud.qcow2,format=qcow2,discard=on",
            imported
        ));
        assert!(!shows(
            Q,
            "scsi0",
            "local:0,import-from=local:import/cloud.qcow2,format=raw,discard=on",
            imported
        ));
        let cloudinit = "local:900/vm-900-cloudinit.qcow2,media=cdrom";
        assert!(shows(Q, "ide2", "local:cloudinit,format=qcow2", cloudinit));
        assert!(!shows(Q, "ide2", "local:cloudinit,format=raw", cloudinit));
    }

    #[test]
    fn boolean_drive_options_read_back_by_meaning() {
        let stored = "local:900/vm-900-disk-0.raw,backup=0,iothread=1,size=1G,ssd=1";
        assert!(shows(
            Q,
            "scsi0",
            "local:1,iothread=on,ssd=true,backup=no",
            stored
        ));
        assert!(shows(
            Q,
            "scsi0",
            "local:1,iothread=1,ssd=yes,backup=off",
            stored
        ));
        assert!(!shows(
            Q,
            "scsi0",
            "local:1,iothread=on,ssd=true,backup=yes",
            stored
        ));
        assert!(!shows(Q, "scsi0", "local:1,iothread=on,backup=no", stored));
    }

    #[test]
    fn enumerated_drive_options_read_back_as_the_same_word() {
        let stored = "local:900/vm-900-disk-0.raw,aio=io_uring,cache=writeback,discard=on,size=1G";
        assert!(shows(
            Q,
            "scsi0",
            "local:1,cache=writeback,discard=on,aio=io_uring",
            stored
        ));
        assert!(!shows(
            Q,
            "scsi0",
            "local:1,cache=none,discard=on,aio=io_uring",
            stored
        ));
        // `discard` is a word (`ignore`/`on`), not a boolean.
        assert!(!shows(
            Q,
            "scsi0",
            "local:1,cache=writeback,discard=1,aio=io_uring",
            stored
        ));
    }

    #[test]
    fn drive_limits_read_back_by_value() {
        let stored = "local-lvm:vm-1-disk-0,iops_rd=100,mbps=10.5,queues=4,size=8G";
        assert!(shows(
            Q,
            "scsi0",
            "local-lvm:8,mbps=10.50,iops_rd=100,queues=4",
            stored
        ));
        assert!(!shows(
            Q,
            "scsi0",
            "local-lvm:8,mbps=10,iops_rd=100,queues=4",
            stored
        ));
        // The legacy burst length is an alias of its `_max_` name.
        assert!(shows(
            Q,
            "scsi0",
            "local-lvm:8,iops_rd=100,iops_rd_max=200,iops_rd_length=5",
            "local-lvm:vm-1-disk-0,iops_rd=100,iops_rd_max=200,iops_rd_max_length=5,size=8G"
        ));
    }

    #[test]
    fn a_byte_rate_reads_back_as_the_megabytes_pve_stores() {
        let asked = "local-lvm:8,bps_rd=10485760";
        assert!(shows(
            Q,
            "scsi0",
            asked,
            "local-lvm:vm-1-disk-0,mbps_rd=10.000,size=8G"
        ));
        // What qemu-server 9's parse_drive stores for any `bps*` (it takes `defined(…)` as the
        // rate): not the requested limit.
        assert!(!shows(
            Q,
            "scsi0",
            asked,
            "local-lvm:vm-1-disk-0,mbps_rd=0.000,size=8G"
        ));
    }

    #[test]
    fn efi_and_tpm_volumes_read_back_with_the_size_and_certificates_pve_gives_them() {
        assert!(shows(
            Q,
            "efidisk0",
            "local-lvm:1,efitype=4m,pre-enrolled-keys=1",
            "local-lvm:vm-900-disk-0,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=4M"
        ));
        assert!(shows(
            Q,
            "tpmstate0",
            "local:1,version=v2.0",
            "local:900/vm-900-disk-1.raw,size=4M,version=v2.0"
        ));
        assert!(!shows(
            Q,
            "tpmstate0",
            "local:1,version=v2.0",
            "local:900/vm-900-disk-1.raw,size=4M,version=v1.2"
        ));
    }

    #[test]
    fn ssh_keys_decode_as_percent_decoding_and_a_text_replace_would() {
        let reference = |text: &str| {
            percent_encoding::percent_decode_str(text)
                .decode_utf8_lossy()
                .replace("\r\n", "\n")
                .trim_end()
                .to_string()
        };
        for text in [
            "",
            "ssh-ed25519%20AAAA%20me%0A",
            "a%0D%0Ab\r\nc%0d%0A\r\r\n%0D\r%0A%0A",
            "%",
            "%4",
            "%4g%41%%41%%%",
            "%E2%82%0D%0A%FF%C3%A9 %E2%80%83",
            "keys \t \u{2003}",
            "\r\r\n\n\r",
        ] {
            assert_eq!(decoded_keys(text), reference(text), "{text:?}");
        }
    }

    #[test]
    fn a_new_disk_set_by_a_config_change_reads_back_applied() {
        let s = ConfigSnapshot::from_rows(&json!([{"key": "scsi1", "value": DIR_QCOW2}])).unwrap();
        assert_eq!(
            s.reading(Q, "scsi1", "local:1,format=qcow2,cache=none"),
            Reading::NotApplied {
                current: Some(json!(DIR_QCOW2)),
                pending: None
            }
        );
        assert_eq!(
            s.reading(Q, "scsi1", "local:1,format=qcow2"),
            Reading::Applied
        );
    }

    #[test]
    fn ssh_keys_are_sent_url_encoded_and_compared_decoded() {
        let keys = "ssh-ed25519 AAAAC3+/= me@host\n";
        let encoded = ssh_keys_param(keys);
        assert_eq!(encoded, "ssh-ed25519%20AAAAC3%2B%2F%3D%20me%40host%0A");
        assert_eq!(ssh_keys_param(&encoded), encoded);
        assert!(shows(Q, "sshkeys", keys, &encoded));
        assert!(!shows(Q, "sshkeys", "ssh-ed25519 OTHER", &encoded));
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
        assert_eq!(s.reading(Q, "name", "web"), Reading::Applied);
        assert_eq!(s.reading(Q, "memory", "4096"), Reading::Pending);
        assert_eq!(
            s.reading(Q, "net1", "virtio,bridge=vmbr0"),
            Reading::Pending
        );
        assert_eq!(
            s.reading(Q, "name", "db"),
            Reading::NotApplied {
                current: Some(json!("web")),
                pending: None
            }
        );
        // A value that runs now but will be replaced at the next start is not applied.
        assert!(matches!(
            s.reading(Q, "memory", "2048"),
            Reading::NotApplied { .. }
        ));
        assert_eq!(s.reading(Q, MASKED_KEY, "secret"), Reading::Applied);
    }

    #[test]
    fn deletions_read_back_gone_or_pending() {
        let s = snapshot();
        assert_eq!(s.deletion("ide2"), Reading::Pending);
        assert_eq!(s.deletion("scsi5"), Reading::Applied);
        assert!(matches!(s.deletion("name"), Reading::NotApplied { .. }));
    }
}
