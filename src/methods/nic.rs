//! `setNic` and `removeNic`: one network interface (`netN`) set or removed through `setConfig`'s
//! engine (`change_course::guest_change`), so it is judged, reported pending and recorded as a config change
//! is. `setNic` writes the interface from its arguments over the one it replaces: every property
//! not given is kept (a tag change must not drop a container's address), unless named in `clear`;
//! what identifies it — a VM's `model`, a container's `name` (argument `ifname`: `name` is the
//! definition's), and its MAC — is kept likewise (PVE would otherwise generate a new MAC: qemu-server
//! `PVE/QemuServer/Network.pm` parse_net, pve-container `PVE/LXC/Config.pm` parse_lxc_network),
//! and a new one gets `virtio` / `eth<N>` and the MAC PVE generates. The summary quotes the
//! interface as PVE stores it, its MAC included.

use crate::args::{ArgError, Fields};
use crate::guest::config::{canonical, key_type, properties, ConfigSnapshot};
use crate::methods::change_course::GuestChange;
use crate::methods::set_config::{ConfigChange, SetConfigArgs};
use crate::pve::endpoints::GuestKind;
use crate::pve::flex;
use crate::quote::Joined;
use serde_json::{Map, Value};
use std::fmt::Write;
use std::net::Ipv4Addr;

/// The arguments of `setNic` (`removeNic` reads only the guest and `nic`).
#[derive(Debug, Clone, PartialEq)]
pub struct NicArgs {
    pub base: SetConfigArgs,
    pub nic: String,
    /// `model` (a VM) or `ifname` (a container's `name`), when given.
    pub ident: Option<String>,
    pub mac: Option<String>,
    /// The other properties as PVE's property string writes them (`bridge=vmbr0,tag=5`): one
    /// text, not a list of parts (issue 32).
    pub rest: String,
    /// Properties of the NIC it replaces to leave out (`clear`); every other one is kept.
    pub clear: Vec<String>,
    /// `removeNic`: `delete=netN` instead.
    pub remove: bool,
}

/// The property naming a `kind` interface, and the one holding its MAC.
fn ident_keys(kind: GuestKind) -> (&'static str, &'static str) {
    match kind {
        GuestKind::Qemu => ("model", "macaddr"),
        GuestKind::Lxc => ("name", "hwaddr"),
    }
}

/// `net0`…`net31`: both kinds have 32 (qemu-server `$MAX_NETS`, pve-container `$MAX_LXC_NETWORKS`).
/// Borrowed: copied once every field is checked (issue 32).
fn nic_key<'a>(fields: &Fields<'a>) -> Result<&'a str, ArgError> {
    let nic = fields.required_text("nic")?;
    let n = nic.strip_prefix("net").unwrap_or_default();
    let canonical = n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    match n.parse::<u8>() {
        Ok(i) if i < 32 && canonical => Ok(nic),
        _ => Err(ArgError::new("nic", "must be net0 … net31")),
    }
}

/// A text argument's name, the rule it must pass, and the words refusing it.
type Check = (&'static str, fn(&str) -> bool, &'static str);

/// An optional text argument, refused naming it when it breaks its rule.
fn text<'a>(fields: &Fields<'a>, (key, ok, rule): Check) -> Result<Option<&'a str>, ArgError> {
    let value = fields.text(key)?;
    match value {
        Some(v) if !ok(v) => Err(ArgError::new(key, rule)),
        v => Ok(v),
    }
}

/// A bridge or an interface name: PVE's `[-_.\w\d]+` (pve-common `PVE/JSONSchema.pm`
/// parse_bridge_id, pve-container's `name` pattern).
fn is_word(text: &str) -> bool {
    // A loop over the bytes: no iterator adapter of its own (issue 32).
    for b in text.bytes() {
        if !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
            return false;
        }
    }
    !text.is_empty()
}

/// One of qemu-server's NIC models: the schema's `<model>=<mac>` aliases of `model`.
fn is_model(text: &str) -> bool {
    key_type(GuestKind::Qemu, "net0").is_some_and(|t| {
        properties(&t)
            .iter()
            .any(|p| p.key_alias == Some("model") && p.name == text)
    })
}

fn is_ipv4(text: &str) -> bool {
    text.parse::<Ipv4Addr>().is_ok()
}

const WORD: &str = "must be letters, digits, '-', '_' and '.' (PVE's rule)";
const MAC: Check = (
    "macaddr",
    is_unicast_mac,
    "must be a unicast MAC address XX:XX:XX:XX:XX:XX (hex; the first byte even)",
);
/// The text arguments of each kind; the first names the interface (`model`, `ifname`).
const VM_TEXT: [Check; 2] = [
    (
        "model",
        is_model,
        "must be one of PVE's NIC models (virtio, e1000, e1000e, rtl8139, vmxnet3, …)",
    ),
    ("bridge", is_word, WORD),
];
const CT_TEXT: [Check; 4] = [
    ("ifname", is_word, WORD),
    ("bridge", is_word, WORD),
    (
        "ip",
        is_ipv4_config,
        "must be dhcp, manual or an IPv4 address with a prefix of 8 to 32 (10.0.0.5/24)",
    ),
    ("gw", is_ipv4, "must be an IPv4 address"),
];

/// What `clear` may name: the optional properties of each kind's NIC (qemu-server
/// `PVE/QemuServer/Network.pm` $net_fmt, pve-container `PVE/LXC/Config.pm` $netconf_desc).
const VM_CLEARABLE: [&str; 7] = [
    "tag",
    "firewall",
    "rate",
    "mtu",
    "queues",
    "trunks",
    "link_down",
];
const CT_CLEARABLE: [&str; 9] = [
    "tag",
    "firewall",
    "rate",
    "ip",
    "gw",
    "ip6",
    "gw6",
    "mtu",
    "link_down",
];

/// `clear`: properties of `kind`'s NIC to leave out, none of them also given.
fn clear_list(kind: GuestKind, fields: &Fields, rest: &str) -> Result<Vec<String>, ArgError> {
    let clearable: &[&str] = match kind {
        GuestKind::Qemu => &VM_CLEARABLE,
        GuestKind::Lxc => &CT_CLEARABLE,
    };
    let names: Vec<String> = fields.optional("clear")?.unwrap_or_default();
    for name in &names {
        if !clearable.contains(&name.as_str()) {
            return Err(ArgError::new(
                "clear",
                format!("may name only {}", clearable.joined(", ")),
            ));
        }
        if given(rest, name) {
            return Err(ArgError::new(
                "clear",
                format!("names {name}, which is also given"),
            ));
        }
    }
    Ok(names)
}

/// Whether the properties `rest` (`name=value,…`, [`NicArgs::rest`]) give `name`.
fn given(rest: &str, name: &str) -> bool {
    rest.split(',').any(|p| p.split('=').next() == Some(name))
}

/// Adds `name=value` to the properties `rest` ([`NicArgs::rest`]).
fn add(rest: &mut String, name: &str, value: &str) {
    if !rest.is_empty() {
        rest.push(',');
    }
    rest.push_str(name);
    rest.push('=');
    rest.push_str(value);
}

/// A unicast MAC, `XX:XX:XX:XX:XX:XX` (pve-common pve_verify_mac_addr: the I/G bit clear).
fn is_unicast_mac(text: &str) -> bool {
    let bytes = text.as_bytes();
    // A loop over the bytes: no iterator adapter of its own (issue 32).
    for (at, c) in bytes.iter().enumerate() {
        let fits = match at % 3 {
            2 => *c == b':',
            _ => c.is_ascii_hexdigit(),
        };
        if !fits {
            return false;
        }
    }
    // The first byte's low bit (the I/G bit) is the second digit's.
    let second = bytes.get(1).and_then(|c| char::from(*c).to_digit(16));
    bytes.len() == 17 && second.is_some_and(|d| d % 2 == 0)
}

/// `dhcp`, `manual` or an IPv4 address with a prefix of 8 to 32 (pve-common `PVE/JSONSchema.pm`
/// pve_verify_ipv4_config, pve_verify_cidrv4).
fn is_ipv4_config(text: &str) -> bool {
    let prefix = |p: &str| {
        p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u8>().is_ok_and(|p| (8..=32).contains(&p))
    };
    matches!(text, "dhcp" | "manual")
        || text
            .split_once('/')
            .is_some_and(|(ip, p)| ip.parse::<Ipv4Addr>().is_ok() && prefix(p))
}

impl NicArgs {
    /// `setNic`'s arguments, or (`remove`) `removeNic`'s: the guest and `nic` alone. One reader
    /// for both methods (issue 32: a copy each cost its own refusal paths).
    ///
    /// Always inlined into its one caller, the methods' boxed change: the arguments are then
    /// built in their box, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value, remove: bool) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let base = SetConfigArgs::of_guest(&fields)?;
        let nic = nic_key(&fields)?;
        let mut ident = None;
        let mut rest = String::new();
        let mut mac = None;
        let mut clear = Vec::new();
        if !remove {
            let checks: &[Check] = match kind {
                GuestKind::Qemu => &VM_TEXT,
                GuestKind::Lxc => &CT_TEXT,
            };
            for (at, check) in checks.iter().enumerate() {
                match (at, text(&fields, *check)?) {
                    (_, None) => {}
                    (0, given) => ident = given,
                    (_, Some(v)) => add(&mut rest, check.0, v),
                }
            }
            if !given(&rest, "bridge") {
                return Err(ArgError::new("bridge", "is required"));
            }
            mac = text(&fields, MAC)?;
            if let Some(on) = fields.flag("firewall")? {
                add(&mut rest, "firewall", if on { "1" } else { "0" });
            }
            if let Some(rate) = fields.present("rate")? {
                if !rate.as_f64().is_some_and(|r| r >= 0.0) {
                    return Err(ArgError::new(
                        "rate",
                        "must be a number of MB/s, at least 0",
                    ));
                }
                add(&mut rest, "rate", &crate::quote::json(rate));
            }
            if fields.int("tag")?.is_some() {
                add(
                    &mut rest,
                    "tag",
                    &fields.int_in("tag", 1, 4094)?.to_string(),
                );
            }
            clear = clear_list(kind, &fields, &rest)?;
        }
        Ok(NicArgs {
            base,
            nic: nic.to_string(),
            ident: ident.map(str::to_string),
            mac: mac.map(str::to_string),
            rest,
            clear,
            remove,
        })
    }

    /// The `netN` value: the arguments over the interface `config` holds — its identity (or a
    /// new one's defaults) and every property they leave out and `clear` does not name.
    fn value(&self, kind: GuestKind, config: &Map<String, Value>) -> String {
        let (ident_key, mac_key) = ident_keys(kind);
        let old = config
            .get(&self.nic)
            .and_then(flex::string_of)
            .unwrap_or_default();
        let seen =
            key_type(kind, &self.nic).map_or_else(Vec::new, |t| canonical(&properties(&t), &old));
        let kept = |key: &str| {
            seen.iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.as_deref())
        };
        let default = match kind {
            GuestKind::Qemu => "virtio".to_string(),
            GuestKind::Lxc => self.nic.replace("net", "eth"),
        };
        let ident = self
            .ident
            .as_deref()
            .or_else(|| kept(ident_key))
            .unwrap_or(&default);
        // Written part by part, borrowed: no copies, no list of parts to join (issue 32).
        let mut value = format!("{ident_key}={ident}");
        let mut part = |name: &str, set: Option<&str>| {
            value.push(',');
            value.push_str(name);
            if let Some(set) = set {
                value.push('=');
                value.push_str(set);
            }
        };
        if let Some(mac) = self.mac.as_deref().or_else(|| kept(mac_key)) {
            part(mac_key, Some(mac));
        }
        for (key, set) in &seen {
            if [ident_key, mac_key].contains(key)
                || given(&self.rest, key)
                || self.clear.iter().any(|c| c == key)
            {
                continue;
            }
            part(key, set.as_deref());
        }
        if !self.rest.is_empty() {
            part(&self.rest, None);
        }
        value
    }
}

/// Where `nic` stands in the config read back, written onto the `summary`.
fn shown(nic: &str, snapshot: &ConfigSnapshot, summary: &mut String) {
    let quoted = |v: &Value| flex::string_of(v).unwrap_or_default();
    // Writing to a String cannot fail.
    let _ = match (snapshot.current.get(nic), snapshot.pending.get(nic)) {
        _ if snapshot.pending_delete.iter().any(|k| k == nic) => Ok(()),
        (_, Some(next)) => write!(summary, "; {nic} will read {}", quoted(next)),
        (Some(now), None) => write!(summary, "; {nic} reads {}", quoted(now)),
        (None, None) => write!(summary, "; {nic} is not in the config"),
    };
}

/// A removal is `delete=netN`, which must read back gone or pending.
impl ConfigChange for NicArgs {
    fn base(&self) -> &SetConfigArgs {
        &self.base
    }

    fn fill(
        &self,
        kind: GuestKind,
        _: u32,
        config: &Map<String, Value>,
        changes: &mut Vec<(String, String)>,
    ) -> Result<(), String> {
        changes.push(match self.remove {
            true => ("delete".to_string(), self.nic.clone()),
            false => (self.nic.clone(), self.value(kind, config)),
        });
        Ok(())
    }

    fn shown<'c>(
        &self,
        _: u32,
        _: &'c Map<String, Value>,
        after: &ConfigSnapshot,
        summary: &mut String,
    ) -> Result<Option<&'c str>, String> {
        shown(&self.nic, after, summary);
        Ok(None)
    }
}

/// `setNic`'s change, from its arguments (run by `change_course::guest_change`).
pub fn set_nic(kind: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    nic_change(kind, args, false)
}

/// `removeNic`'s change, from its arguments (run by `change_course::guest_change`).
pub fn remove_nic(kind: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    nic_change(kind, args, true)
}

/// The change of `setNic` or (`remove`) `removeNic`: one copy of the reader for both.
fn nic_change(kind: GuestKind, args: &Value, remove: bool) -> Result<GuestChange, ArgError> {
    Ok(GuestChange::Config(Box::new(NicArgs::parse(
        kind, args, remove,
    )?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{failure_of, run_method, summary_of, ScriptedHost};
    use percent_encoding::percent_decode_str;
    use serde_json::json;

    /// Guest 100 of `model` on pve1, running, whose config holds `config` and whose read-back
    /// after the change shows `rows`.
    fn guest(model: &str, config: Value, rows: Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        let base = format!("/nodes/pve1/{model}/100");
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": model, "node": "pve1"}]),
        );
        host.data(
            &format!("GET {base}/status/current"),
            json!({"status": "running", "qmpstatus": "running"}),
        );
        host.data(&format!("GET {base}/config"), config);
        host.data(&format!("PUT {base}/config"), Value::Null);
        host.data(&format!("GET {base}/pending"), rows);
        host
    }

    fn sent(host: &ScriptedHost) -> String {
        let body = host.body_of("PUT");
        percent_decode_str(&body).decode_utf8_lossy().into_owned()
    }

    #[test]
    fn a_new_nic_goes_out_without_a_mac_and_its_generated_one_is_quoted() {
        let stored = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1,tag=20";
        let host = guest("qemu", json!({}), json!([{"key": "net0", "value": stored}]));
        let args =
            json!({"vmid": 100, "nic": "net0", "bridge": "vmbr0", "firewall": true, "tag": 20});
        let outcome = run_method(&host, "qemu", "setNic", args);
        assert!(summary_of(&outcome).contains(stored), "{outcome:?}");
        assert_eq!(
            sent(&host),
            "net0=model=virtio,bridge=vmbr0,firewall=1,tag=20"
        );
    }

    #[test]
    fn a_changed_nic_keeps_its_model_and_mac_when_none_is_given() {
        let old = "e1000=BC:24:11:00:00:01,bridge=vmbr0";
        let stored = "e1000=BC:24:11:00:00:01,bridge=vmbr0,tag=7";
        let host = guest(
            "qemu",
            json!({"net1": old}),
            json!([{"key": "net1", "value": stored}]),
        );
        let args = json!({"vmid": 100, "nic": "net1", "bridge": "vmbr0", "tag": 7});
        assert!(run_method(&host, "qemu", "setNic", args).is_success());
        assert_eq!(
            sent(&host),
            "net1=model=e1000,macaddr=BC:24:11:00:00:01,bridge=vmbr0,tag=7"
        );
    }

    #[test]
    fn a_container_nic_is_named_after_its_key_unless_it_has_a_name() {
        let stored = "name=eth2,bridge=vmbr1,hwaddr=BC:24:11:00:00:02,ip=dhcp,type=veth";
        let host = guest("lxc", json!({}), json!([{"key": "net2", "value": stored}]));
        let args = json!({"vmid": 100, "nic": "net2", "bridge": "vmbr1", "ip": "dhcp"});
        let outcome = run_method(&host, "lxc", "setNic", args);
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(sent(&host), "net2=name=eth2,bridge=vmbr1,ip=dhcp");
        let old = "name=lan,bridge=vmbr0,hwaddr=BC:24:11:00:00:03,type=veth";
        let host = guest("lxc", json!({"net0": old}), json!([]));
        let args = json!({"vmid": 100, "nic": "net0", "bridge": "vmbr0"});
        run_method(&host, "lxc", "setNic", args);
        assert_eq!(
            sent(&host),
            "net0=name=lan,hwaddr=BC:24:11:00:00:03,type=veth,bridge=vmbr0"
        );
    }

    #[test]
    fn a_changed_nic_keeps_every_property_not_given_so_a_tag_change_keeps_the_address() {
        let old =
            "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:04,ip=192.0.2.5/24,gw=192.0.2.1,tag=10";
        let host = guest("lxc", json!({"net0": old}), json!([]));
        let args = json!({"vmid": 100, "nic": "net0", "bridge": "vmbr0", "tag": 30});
        run_method(&host, "lxc", "setNic", args);
        assert_eq!(
            sent(&host),
            "net0=name=eth0,hwaddr=BC:24:11:00:00:04,ip=192.0.2.5/24,gw=192.0.2.1,bridge=vmbr0,tag=30"
        );
        let old = "virtio=BC:24:11:00:00:05,bridge=vmbr0,mtu=9000,queues=4";
        let host = guest("qemu", json!({"net0": old}), json!([]));
        let args = json!({"vmid": 100, "nic": "net0", "bridge": "vmbr1"});
        run_method(&host, "qemu", "setNic", args);
        assert_eq!(
            sent(&host),
            "net0=model=virtio,macaddr=BC:24:11:00:00:05,mtu=9000,queues=4,bridge=vmbr1"
        );
    }

    #[test]
    fn clear_leaves_out_the_properties_it_names() {
        let old = "virtio=BC:24:11:00:00:06,bridge=vmbr0,tag=10,rate=5";
        let host = guest("qemu", json!({"net0": old}), json!([]));
        let args = json!({"vmid": 100, "nic": "net0", "bridge": "vmbr0", "clear": ["tag"]});
        run_method(&host, "qemu", "setNic", args);
        assert_eq!(
            sent(&host),
            "net0=model=virtio,macaddr=BC:24:11:00:00:06,rate=5,bridge=vmbr0"
        );
    }

    #[test]
    fn a_nic_pve_did_not_store_as_asked_fails_naming_it() {
        let host = guest(
            "qemu",
            json!({}),
            json!([{"key": "net0", "value": "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0"}]),
        );
        let args = json!({"vmid": 100, "nic": "net0", "bridge": "vmbr0", "tag": 5});
        let outcome = run_method(&host, "qemu", "setNic", args);
        assert!(failure_of(&outcome).contains("`net0`"), "{outcome:?}");
    }

    #[test]
    fn a_pending_nic_is_reported_pending_and_recorded() {
        let next = "e1000=BC:24:11:2A:3B:4C,bridge=vmbr0";
        let host = guest("qemu", json!({}), json!([{"key": "net0", "pending": next}]));
        let args = json!({"vmid": 100, "nic": "net0", "model": "e1000", "bridge": "vmbr0"});
        let outcome = run_method(&host, "qemu", "setNic", args);
        let summary = summary_of(&outcome);
        assert!(
            summary.contains("pending until a restart: net0"),
            "{summary}"
        );
        assert!(summary.contains(next), "{summary}");
        assert_eq!(outcome.writes[0].data["pending"], json!({"net0": next}));
    }

    #[test]
    fn remove_nic_deletes_the_key_and_a_pending_deletion_is_reported() {
        let host = guest(
            "qemu",
            json!({"net1": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}),
            json!([{"key": "net1", "value": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "delete": 1}]),
        );
        let outcome = run_method(
            &host,
            "qemu",
            "removeNic",
            json!({"vmid": 100, "nic": "net1"}),
        );
        assert!(
            summary_of(&outcome).contains("net1 (delete)"),
            "{outcome:?}"
        );
        assert_eq!(sent(&host), "delete=net1");
        assert_eq!(outcome.writes[0].data["pendingDelete"], json!(["net1"]));
        let host = guest("lxc", json!({}), json!([]));
        let outcome = run_method(
            &host,
            "lxc",
            "removeNic",
            json!({"vmid": 100, "nic": "net1"}),
        );
        assert!(summary_of(&outcome).contains("net1 is not in the config"));
    }

    #[test]
    fn bad_arguments_are_refused_naming_the_field_before_anything_is_sent() {
        let cases = [
            ("qemu", json!({"nic": "net32"}), "nic"),
            ("qemu", json!({"nic": "net01"}), "nic"),
            ("qemu", json!({"nic": "net+1"}), "nic"),
            ("lxc", json!({"nic": "eth0"}), "nic"),
            ("qemu", json!({"tag": 0}), "tag"),
            ("lxc", json!({"tag": 4095}), "tag"),
            ("qemu", json!({"macaddr": "01:24:11:00:00:01"}), "macaddr"),
            ("qemu", json!({"macaddr": "BC:24:11:00:00"}), "macaddr"),
            ("lxc", json!({"macaddr": "BC:24:11:00:00:+1"}), "macaddr"),
            ("qemu", json!({"bridge": "vmbr 0"}), "bridge"),
            ("qemu", json!({"bridge": null}), "bridge"),
            ("qemu", json!({"rate": -1}), "rate"),
            ("qemu", json!({"model": "virtio2"}), "model"),
            ("lxc", json!({"ifname": "eth/0"}), "ifname"),
            ("lxc", json!({"ip": "10.0.0.5"}), "ip"),
            ("lxc", json!({"ip": "10.0.0.5/+8"}), "ip"),
            ("lxc", json!({"gw": "10.0.0.256"}), "gw"),
            ("qemu", json!({"clear": ["bridge"]}), "clear"),
            ("lxc", json!({"clear": ["macaddr"]}), "clear"),
            ("qemu", json!({"clear": ["ip"]}), "clear"),
            ("qemu", json!({"tag": 5, "clear": ["tag"]}), "clear"),
            ("lxc", json!({"clear": "tag"}), "clear"),
        ];
        for (model, bad, field) in cases {
            let mut args = json!({"vmid": 100, "nic": "net0", "bridge": "vmbr0"});
            for (k, v) in bad.as_object().unwrap() {
                match v {
                    Value::Null => args.as_object_mut().unwrap().remove(k),
                    v => args.as_object_mut().unwrap().insert(k.clone(), v.clone()),
                };
            }
            let host = ScriptedHost::new();
            let outcome = run_method(&host, model, "setNic", args);
            let message = failure_of(&outcome);
            assert!(message.contains(&format!("`{field}`")), "{bad}: {message}");
            assert!(host.requests.borrow().is_empty(), "{bad}: nothing is sent");
        }
        let host = ScriptedHost::new();
        let outcome = run_method(
            &host,
            "lxc",
            "removeNic",
            json!({"vmid": 100, "nic": "net"}),
        );
        assert!(failure_of(&outcome).contains("`nic`"));
    }
}
