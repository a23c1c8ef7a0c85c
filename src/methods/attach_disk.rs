//! `attachDisk`: an existing volume (a detached disk's `unusedN`, an imported one) put into a
//! free slot of a guest — a VM's bus (`scsi`, `sata`, `virtio`, `ide`) or a container's `mpN` at a
//! mount path — through `setConfig`'s engine, so it is judged, reported pending and recorded as a
//! config change. PVE takes the volume out of its `unusedN` entry when it is attached (qemu-server
//! `PVE/API2/Qemu.pm` $update_vm_api, pve-container `PVE/LXC/Config.pm` update_pct_config), which
//! the read-back must show once the attachment applied.

use crate::args::{is_storage_id, ArgError, Fields};
use crate::guest::config::ConfigSnapshot;
use crate::guest::volumes::{is_unused, unused_holding, volume_at};
use crate::methods::change_course::GuestChange;
use crate::methods::set_config::{ConfigChange, SetConfigArgs};
use crate::pve::endpoints::GuestKind;
use serde_json::{Map, Value};
use std::fmt::Write;

/// The slots of each VM bus (qemu-server `PVE/QemuServer/Drive.pm` $MAX_IDE_DISKS, $MAX_SATA_DISKS,
/// $MAX_SCSI_DISKS, $MAX_VIRTIO_DISKS) and a container's mount points (`$MAX_MOUNT_POINTS`).
const BUSES: [(&str, u16); 5] = [
    ("scsi", 31),
    ("sata", 6),
    ("virtio", 16),
    ("ide", 4),
    ("mp", 256),
];

/// The arguments of `attachDisk`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachArgs {
    pub base: SetConfigArgs,
    pub volume: String,
    /// The slot asked for (`scsi1`, `mp0`), or the bus whose first free slot it takes.
    pub slot: Slot,
    /// A container's mount path (`mp=`).
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Slot {
    Key(String),
    FirstFree(&'static str),
}

fn bus_of(key: &str) -> Option<(&'static str, u16)> {
    let digits = key.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let bus = key.strip_suffix(digits)?;
    let index = digits
        .parse::<u16>()
        .ok()
        .filter(|_| digits == "0" || !digits.starts_with('0'))?;
    BUSES
        .iter()
        .find(|(b, max)| *b == bus && index < *max)
        .copied()
}

impl AttachArgs {
    /// Always inlined into its one caller, the method's boxed change: the arguments are then
    /// built in their box, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let base = SetConfigArgs::of_guest(&fields)?;
        let volume = fields.required_text("volume")?;
        let named = volume.split_once(':').is_some_and(|(storage, name)| {
            is_storage_id(storage)
                && !name.is_empty()
                && !name.contains(|c: char| c == ',' || c.is_whitespace())
        });
        if !named {
            return Err(ArgError::new(
                "volume",
                "must be a volume id <storage>:<volume> (local-lvm:vm-100-disk-1)",
            ));
        }
        let lxc = kind == GuestKind::Lxc;
        let in_kind = |bus: &str| (bus == "mp") == lxc;
        // `Ok`: the slot named, borrowed and copied once every field is checked (issue 32);
        // `Err`: the bus whose first free slot it takes.
        let slot = match (fields.text("disk")?, fields.text("bus")?) {
            (Some(_), Some(_)) => {
                return Err(ArgError::new("bus", "is given with disk: give one of them"))
            }
            (Some(key), None) => match bus_of(key) {
                Some((bus, _)) if in_kind(bus) => Ok(key),
                _ => return Err(ArgError::new("disk", slot_rule(kind))),
            },
            (None, bus) => {
                let bus = bus.unwrap_or(if lxc { "mp" } else { "scsi" });
                match BUSES.iter().find(|(b, _)| *b == bus && in_kind(b)) {
                    Some((b, _)) => Err(*b),
                    None => return Err(ArgError::new("bus", "must be scsi, sata, virtio or ide")),
                }
            }
        };
        let path = fields.text("mp")?;
        match (lxc, &path) {
            (true, None) => {
                return Err(ArgError::new(
                    "mp",
                    "is required: the path the volume is mounted at in the container",
                ))
            }
            (true, Some(p))
                if !p.starts_with('/') || p.contains(',') || p.split('/').any(|s| s == "..") =>
            {
                return Err(ArgError::new(
                    "mp",
                    "must be an absolute path without ',' or '..'",
                ))
            }
            (false, Some(_)) => {
                return Err(ArgError::new(
                    "mp",
                    "is a container's mount path; a VM disk has none",
                ))
            }
            _ => {}
        }
        Ok(AttachArgs {
            base,
            volume: volume.to_string(),
            slot: match slot {
                Ok(key) => Slot::Key(key.to_string()),
                Err(bus) => Slot::FirstFree(bus),
            },
            path: path.map(str::to_string),
        })
    }

    /// The slot's key: the one asked for, or the bus's first key neither the config nor a pending
    /// change holds. Refused when the volume is attached already or the slot is taken.
    fn key(&self, config: &Map<String, Value>) -> Result<String, String> {
        if let Some(key) = holder(config, &self.volume) {
            return Err(format!("{} is attached already, as {key}", self.volume));
        }
        match &self.slot {
            Slot::Key(key) if config.contains_key(key) => Err(format!(
                "{key} holds {} already: detach it first, or name a free slot",
                config.get(key).map(crate::quote::json).unwrap_or_default()
            )),
            Slot::Key(key) => Ok(key.clone()),
            Slot::FirstFree(bus) => {
                let max = BUSES.iter().find(|(b, _)| b == bus).map_or(0, |(_, m)| *m);
                // A loop, not an adapter chain: no iterator code of its own (issue 32).
                for n in 0..max {
                    let key = format!("{bus}{n}");
                    if !config.contains_key(&key) {
                        return Ok(key);
                    }
                }
                Err(format!(
                    "every {bus} slot is taken ({bus}0 … {bus}{})",
                    max.saturating_sub(1)
                ))
            }
        }
    }
}

fn slot_rule(kind: GuestKind) -> &'static str {
    match kind {
        GuestKind::Qemu => "must be scsi0…scsi30, sata0…sata5, virtio0…virtio15 or ide0…ide3",
        GuestKind::Lxc => "must be mp0 … mp255",
    }
}

/// The key of `config` that holds `volume` attached (an `unusedN` holds it detached).
fn holder<'c>(config: &'c Map<String, Value>, volume: &str) -> Option<&'c str> {
    let attached = |key: &&String| !is_unused(key) && volume_at(config, key) == Some(volume);
    config.keys().find(attached).map(String::as_str)
}

/// What the read-back shows of the volume, written onto the `summary`: in which key, and no
/// longer `unusedN` once applied.
fn judged(volume: &str, after: &ConfigSnapshot, summary: &mut String) -> Result<(), String> {
    // Writing to a String cannot fail.
    if let Some(key) = holder(&after.current, volume) {
        return match unused_holding(&after.current, volume) {
            Some(unused) => Err(format!(
                "{volume} is attached as {key} and still listed as {unused}"
            )),
            None => {
                _ = write!(summary, "; {volume} is attached as {key}");
                Ok(())
            }
        };
    }
    match holder(&after.pending, volume) {
        Some(key) => {
            _ = write!(summary, "; {volume} will be attached as {key}");
            Ok(())
        }
        None => Err(format!("no key of the config read back holds {volume}")),
    }
}

impl ConfigChange for AttachArgs {
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
        let key = self
            .key(config)
            .map_err(|why| format!("cannot attach to the {}: {why}", kind.noun()))?;
        let value = match &self.path {
            Some(path) => format!("{},mp={path}", self.volume),
            None => self.volume.clone(),
        };
        changes.push((key, value));
        Ok(())
    }

    fn shown<'c>(
        &self,
        _: u32,
        _: &'c Map<String, Value>,
        after: &ConfigSnapshot,
        summary: &mut String,
    ) -> Result<Option<&'c str>, String> {
        judged(&self.volume, after, summary).map(|()| None)
    }
}

/// `attachDisk`'s change, from its arguments (run by `change_course::guest_change`).
pub fn attach_disk(kind: GuestKind, args: &Value) -> Result<GuestChange, ArgError> {
    Ok(GuestChange::Config(Box::new(AttachArgs::parse(
        kind, args,
    )?)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use percent_encoding::percent_decode_str;
    use serde_json::{json, Value};

    const VOL: &str = "local-lvm:vm-100-disk-1";

    fn guest(model: &str, config: Value, rows: Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        let base = format!("/nodes/pve1/{model}/100");
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": model, "node": "pve1"}]),
        );
        host.data(
            &format!("GET {base}/status/current"),
            json!({"status": "running"}),
        );
        host.data(&format!("GET {base}/config"), config);
        host.data(&format!("PUT {base}/config"), Value::Null);
        host.on(&format!("GET {base}/pending"), [Answer::Data(rows)]);
        host
    }

    fn sent(host: &ScriptedHost) -> String {
        let body = host.body_of("PUT");
        percent_decode_str(&body).decode_utf8_lossy().into_owned()
    }

    #[test]
    fn an_unused_volume_goes_to_the_first_free_slot_and_leaves_its_unused_entry() {
        let config = json!({"scsi0": "local-lvm:vm-100-disk-0", "unused0": VOL});
        let rows = json!([{"key": "scsi1", "value": format!("{VOL},size=4G")}]);
        let host = guest("qemu", config, rows);
        let outcome = run_method(
            &host,
            "qemu",
            "attachDisk",
            json!({"vmid": 100, "volume": VOL}),
        );
        assert!(
            summary_of(&outcome).contains(&format!("{VOL} is attached as scsi1")),
            "{outcome:?}"
        );
        assert_eq!(sent(&host), format!("scsi1={VOL}"));
    }

    #[test]
    fn a_volume_still_listed_as_unused_after_the_attach_fails_the_method() {
        let config = json!({"unused0": VOL});
        let rows = json!([{"key": "virtio0", "value": VOL}, {"key": "unused0", "value": VOL}]);
        let host = guest("qemu", config, rows);
        let args = json!({"vmid": 100, "volume": VOL, "bus": "virtio"});
        let outcome = run_method(&host, "qemu", "attachDisk", args);
        assert!(
            failure_of(&outcome).contains("still listed as unused0"),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_container_volume_is_mounted_at_its_path_and_a_pending_one_is_reported() {
        let rows = json!([{"key": "mp0", "pending": format!("{VOL},mp=/data")}]);
        let host = guest("lxc", json!({"unused0": VOL}), rows);
        let args = json!({"vmid": 100, "volume": VOL, "mp": "/data"});
        let outcome = run_method(&host, "lxc", "attachDisk", args);
        assert!(
            summary_of(&outcome).contains("will be attached as mp0"),
            "{outcome:?}"
        );
        assert_eq!(sent(&host), format!("mp0={VOL},mp=/data"));
    }

    #[test]
    fn a_taken_slot_or_an_attached_volume_is_refused_before_anything_is_sent() {
        let cases = [
            (
                json!({"scsi1": "local-lvm:vm-100-disk-2"}),
                json!({"disk": "scsi1"}),
                "scsi1 holds",
            ),
            (
                json!({"sata0": VOL}),
                json!({}),
                "attached already, as sata0",
            ),
        ];
        for (config, extra, words) in cases {
            let host = guest("qemu", config, json!([]));
            let mut args = json!({"vmid": 100, "volume": VOL});
            for (k, v) in extra.as_object().unwrap() {
                args[k] = v.clone();
            }
            let outcome = run_method(&host, "qemu", "attachDisk", args);
            assert!(failure_of(&outcome).contains(words), "{outcome:?}");
            assert!(!host.requests.borrow().iter().any(|r| r.method == "PUT"));
        }
    }

    #[test]
    fn bad_arguments_are_refused_naming_the_field() {
        let cases = [
            ("qemu", json!({"volume": "vm-100-disk-1"}), "volume"),
            ("qemu", json!({"volume": VOL, "disk": "scsi31"}), "disk"),
            ("qemu", json!({"volume": VOL, "disk": "mp0"}), "disk"),
            ("qemu", json!({"volume": VOL, "bus": "nvme"}), "bus"),
            (
                "qemu",
                json!({"volume": VOL, "disk": "scsi1", "bus": "scsi"}),
                "bus",
            ),
            ("qemu", json!({"volume": VOL, "mp": "/data"}), "mp"),
            ("lxc", json!({"volume": VOL}), "mp"),
            ("lxc", json!({"volume": VOL, "mp": "data"}), "mp"),
            ("lxc", json!({"volume": VOL, "mp": "/a,b"}), "mp"),
            (
                "lxc",
                json!({"volume": VOL, "mp": "/x", "bus": "scsi"}),
                "bus",
            ),
        ];
        for (model, args, field) in cases {
            let mut args = args;
            args["vmid"] = json!(100);
            let host = ScriptedHost::new();
            let outcome = run_method(&host, model, "attachDisk", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{model} {outcome:?}"
            );
        }
    }
}
