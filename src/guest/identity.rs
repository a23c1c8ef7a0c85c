//! A guest's fingerprint, so a reused VMID is reported instead of merged into the old guest's history.

use crate::pve::property::property;
use crate::record_json::{count, opt};
use serde_json::{Map, Value};

/// Built-in fingerprints read from the guest's config. Records hold it as JSON ([`Identity::json`]),
/// built when it is filled: no serializer of its own (issue 32).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// `smbios1: uuid=…`: regenerated on every clone, the best built-in identity of a VM.
    pub smbios_uuid: Option<String>,
    /// `meta: ctime=…`: creation time (shared by clones of one template, so only a hint).
    pub ctime: Option<u64>,
}

impl Identity {
    /// Reads the fingerprints from a config object. Only a text holds a `key=` part: a value of
    /// another type reads as no fingerprint, with nothing copied to read it.
    pub fn from_config(config: &Map<String, Value>) -> Identity {
        let text = |key: &str| config.get(key).and_then(Value::as_str).unwrap_or_default();
        Identity {
            smbios_uuid: property(text("smbios1"), "uuid").map(str::to_ascii_lowercase),
            ctime: property(text("meta"), "ctime").and_then(|c| c.parse().ok()),
        }
    }

    /// Whether this identity and a stored one certainly belong to different guests.
    pub fn differs_from(&self, stored: &Identity) -> bool {
        match (&self.smbios_uuid, &stored.smbios_uuid) {
            (Some(now), Some(before)) => now != before,
            _ => matches!((self.ctime, stored.ctime), (Some(now), Some(before)) if now != before),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.smbios_uuid.is_none() && self.ctime.is_none()
    }

    /// The identity as records write it: `smbiosUuid` and `ctime`, each when known (`{}` when
    /// neither is).
    pub fn json(self) -> Value {
        let mut json = Map::new();
        opt(&mut json, "smbiosUuid", self.smbios_uuid.map(Value::String));
        count(&mut json, "ctime", self.ctime);
        Value::Object(json)
    }

    /// A record's `identity`: [`Identity::json`], or null (left out) when nothing is known.
    pub fn recorded(self) -> Value {
        match self.is_empty() {
            true => Value::Null,
            false => self.json(),
        }
    }
}

/// The identity stored in a previous record, if it has one.
pub fn stored_identity(record: &Value) -> Option<Identity> {
    let stored = record.get("identity")?.as_object()?;
    // A field of another type makes the whole identity unreadable: nothing to compare with.
    let field = |key: &str| stored.get(key).filter(|v| !v.is_null());
    // Each field checked before the uuid is copied: a refusal has nothing to drop (issue 32).
    let ctime = match field("ctime") {
        Some(ctime) => Some(ctime.as_u64()?),
        None => None,
    };
    let uuid = match field("smbiosUuid") {
        Some(uuid) => Some(uuid.as_str()?),
        None => None,
    };
    if uuid.is_none() && ctime.is_none() {
        return None;
    }
    Some(Identity {
        smbios_uuid: uuid.map(str::to_string),
        ctime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_uuid_and_ctime() {
        let config = json!({"smbios1": "uuid=ABC-1,manufacturer=x", "meta": "creation-qemu=9.0.2,ctime=1700000000"});
        let id = Identity::from_config(config.as_object().expect("an object"));
        assert_eq!(id.smbios_uuid.as_deref(), Some("abc-1"));
        assert_eq!(id.ctime, Some(1_700_000_000));
    }

    #[test]
    fn different_uuids_are_different_guests() {
        let a = Identity {
            smbios_uuid: Some("a".into()),
            ctime: Some(1),
        };
        let b = Identity {
            smbios_uuid: Some("b".into()),
            ctime: Some(1),
        };
        assert!(a.differs_from(&b));
        assert!(!a.differs_from(&a.clone()));
    }

    #[test]
    fn missing_fingerprints_never_claim_a_difference() {
        let a = Identity {
            smbios_uuid: Some("a".into()),
            ctime: None,
        };
        assert!(!a.differs_from(&Identity {
            smbios_uuid: None,
            ctime: None
        }));
    }
}
