//! The guest reference of most methods: `vmid` and/or `vmName`.

use crate::args::{ArgError, Fields, Kind, Spec};

/// The smallest and largest VMID PVE accepts.
pub const VMID_MIN: i64 = 100;
pub const VMID_MAX: i64 = 999_999_999;

/// An optional VMID: absent, or within PVE's range.
pub const VMID: Spec = Spec::new("vmid", Kind::CountIn(VMID_MIN as u32, VMID_MAX as u32));

/// The fields of a [`GuestRef`], in the order they are checked.
const GUEST: [Spec; 2] = [VMID, Spec::new("vmName", Kind::OptionalLine)];

/// Which guest a method acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestRef {
    pub vmid: Option<u32>,
    pub name: Option<String>,
}

impl GuestRef {
    /// Reads `vmid` and `vmName`; at least one is required.
    pub fn parse(fields: &Fields) -> Result<Self, ArgError> {
        let [vmid, name, ..] = fields.read_table(&GUEST)?;
        let vmid = vmid.count().map(|vmid| vmid as u32);
        if vmid.is_none() && name.text.is_none() {
            return Err(ArgError::new("vmid", "Provide vmid or vmName"));
        }
        Ok(GuestRef {
            vmid,
            name: name.owned(),
        })
    }

    /// How to name the guest in messages before its VMID is known.
    pub fn describe(&self) -> String {
        match (&self.vmid, &self.name) {
            (Some(vmid), _) => vmid.to_string(),
            (None, Some(name)) => format!("named {name:?}"),
            (None, None) => "(none)".to_string(),
        }
    }
}

/// A required VMID field.
pub fn parse_vmid(fields: &Fields, key: &str) -> Result<u32, ArgError> {
    Ok(fields.int_in(key, VMID_MIN, VMID_MAX)? as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<GuestRef, ArgError> {
        GuestRef::parse(&Fields::of(&v, "").unwrap())
    }

    #[test]
    fn vmid_below_100_is_refused() {
        let e = parse(json!({"vmid": 99})).unwrap_err();
        assert_eq!(e.field, "vmid");
    }

    #[test]
    fn neither_vmid_nor_name_is_refused() {
        assert_eq!(parse(json!({})).unwrap_err().rule, "Provide vmid or vmName");
    }

    #[test]
    fn name_alone_is_enough() {
        assert_eq!(
            parse(json!({"vmName": "web1"})).unwrap(),
            GuestRef {
                vmid: None,
                name: Some("web1".into())
            }
        );
    }
}
