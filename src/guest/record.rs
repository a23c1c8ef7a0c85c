//! The guest state record (`vm-<vmid>` / `ct-<vmid>`): what was observed, never what was assumed.

use super::identity::Identity;
use crate::pve::flex::{self, split_tags};
use crate::pve::responses::GuestStatus;
use crate::record_json::{count, list, number, opt, put, set, value};
use serde_json::{Map, Value};

/// A detected VMID reuse as the record states it (`identityChanged`): the identity the stored
/// record described (`previous`) and the one read now (`current`). Built as JSON, each identity as
/// records write it ([`Identity::json`]): no struct with serializers of its own for one more shape
/// (issue 32).
pub fn identity_change(previous: &Identity, current: &Identity) -> Value {
    let mut change = Map::new();
    set(&mut change, "previous", previous.clone().json());
    set(&mut change, "current", current.clone().json());
    Value::Object(change)
}

/// Which guests the `sync` that wrote a record selected: its scope (`node`, `nodes`, `cluster`),
/// the nodes it asked for (none, left out, for the whole cluster: a `nodes` list is never empty, a
/// node scope names its node; a list, not an optional one, serialized as the other lists are), the
/// tags every selected guest carries and the `where` expression its fields satisfy. Written as the
/// record's `selection`: made JSON once per sync and put into each record it writes
/// (methods/sync.rs), not a field of [`GuestRecord`] every record serializes (issue 32); built
/// as JSON by [`SyncSelection::json`] (record_json.rs), no serializer of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncSelection {
    pub scope: String,
    pub nodes: Vec<String>,
    pub tags: Vec<String>,
    pub r#where: Option<String>,
}

impl SyncSelection {
    /// The selection as its records state it.
    pub fn json(&self) -> Value {
        let mut selection = Map::new();
        put(&mut selection, "scope", Some(&self.scope));
        list(&mut selection, "nodes", &self.nodes);
        set(&mut selection, "tags", Value::from(self.tags.clone()));
        put(&mut selection, "where", self.r#where.as_deref());
        Value::Object(selection)
    }
}

/// The record of one guest. `present: false` is an observed absence, never a default. Written
/// as JSON by [`GuestRecord::json`] (record_json.rs): no serializer of its own (issue 32); null,
/// empty and absent fields are left out but for `tags`. The fields the core reads again, or that
/// a later step may take back, are fields of their own; the rest are put into [`Self::fields`] as
/// they are filled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GuestRecord {
    pub vmid: u32,
    pub present: bool,
    /// `running` / `stopped` as PVE says; `absent` when confirmed absent; `deleted` after a delete.
    pub status: String,
    pub node: Option<String>,
    pub qmp_status: Option<String>,
    pub lock: Option<String>,
    /// The record's other fields, built as JSON as they are filled, absent ones left out: what
    /// `status/current` showed ([`GuestRecord::observed`]: `name`, `tags`, `ha` (`managed`, and
    /// `state` when PVE gives one), `template`, `agentConfigured`, `cpuPct`, `cpus`, `memBytes`,
    /// `maxMemBytes`, `memPct`, `diskBytes`, `maxDiskBytes`, `netinBytes`, `netoutBytes`,
    /// `uptimeSec`); what the run left behind (guest/evidence.rs: `ipv4`, `lastTask`, the file
    /// output holding that task's log when it did not end plainly `OK` (`lastTaskLog`) or its last
    /// lines when no file holds it (`lastTaskLogTail`), the marks of when the state was read
    /// (guest/seen.rs), the warnings of the tasks it followed (`WARNINGS: n`) and of the method
    /// itself (`warnings`)); a reused VMID's `identityChanged` ([`identity_change`]); the config
    /// changes PVE holds until the next start (`pending`, `pendingDelete`); `lastOperation` and
    /// `recordedAt`. No struct field of its own for each (issue 32): the map keeps its keys
    /// sorted, so each is written where its field was.
    pub fields: Map<String, Value>,
    /// The guest's fingerprints as JSON, built when filled ([`Identity::recorded`]; null, left
    /// out, when none is known): no serializer of [`Identity`] of its own (issue 32). This and when
    /// it was read are fields of their own, not keys of [`Self::fields`]: a later read may take
    /// both back (sync's), and taking a key out of the map compiles in the map's removal (+7 KB
    /// measured, issue 32).
    pub identity: Value,
    /// When `identity` was read from the guest's config (a sync carries an older one forward).
    pub identity_observed_at: Option<String>,
}

impl GuestRecord {
    /// The record as written.
    pub fn json(&self) -> Value {
        // The fields put as they were filled first: the rest are put beside them.
        let mut record = self.fields.clone();
        set(&mut record, "vmid", Value::from(self.vmid));
        set(&mut record, "present", Value::Bool(self.present));
        put(&mut record, "status", Some(&self.status));
        put(&mut record, "node", self.node.as_deref());
        put(&mut record, "qmpStatus", self.qmp_status.as_deref());
        put(&mut record, "lock", self.lock.as_deref());
        value(&mut record, "identity", &self.identity);
        let identity_at = self.identity_observed_at.as_deref();
        put(&mut record, "identityObservedAt", identity_at);
        Value::Object(record)
    }

    /// A guest observed through `status/current` on `node`.
    pub fn observed(
        vmid: u32,
        node: &str,
        status: &GuestStatus,
        operation: &str,
        recorded_at: String,
    ) -> Self {
        // The absent record's fields, then what the read showed (`absent` writes every field:
        // no default record built only to be dropped, issue 32).
        let mut record = GuestRecord::absent(vmid, operation, recorded_at);
        record.present = true;
        record.status = status.status.clone();
        record.node = Some(node.to_string());
        record.qmp_status = status.qmpstatus.clone();
        record.lock = status.lock.clone().filter(|l| !l.is_empty());
        let fields = &mut record.fields;
        put(fields, "name", status.name.as_deref());
        if let Some(ha) = &status.ha {
            let mut recorded = Map::new();
            let managed = Value::Bool(ha.managed.unwrap_or(false));
            set(&mut recorded, "managed", managed);
            put(&mut recorded, "state", ha.state.as_deref());
            set(fields, "ha", Value::Object(recorded));
        }
        let tags = status.tags.as_deref().map(split_tags).unwrap_or_default();
        set(fields, "tags", Value::from(tags));
        opt(fields, "template", status.template.map(Value::Bool));
        opt(fields, "agentConfigured", status.agent.map(Value::Bool));
        number(fields, "cpuPct", status.cpu.and_then(flex::pct));
        number(fields, "cpus", status.cpus);
        count(fields, "memBytes", status.mem);
        count(fields, "maxMemBytes", status.maxmem);
        number(fields, "memPct", flex::percent(status.mem, status.maxmem));
        count(fields, "diskBytes", status.disk);
        count(fields, "maxDiskBytes", status.maxdisk);
        count(fields, "netinBytes", status.netin);
        count(fields, "netoutBytes", status.netout);
        count(fields, "uptimeSec", status.uptime);
        record
    }

    /// The config changes PVE holds until the next start (key → pending value), left out when
    /// there are none.
    pub fn put_pending(&mut self, pending: Map<String, Value>) {
        if !pending.is_empty() {
            set(&mut self.fields, "pending", Value::Object(pending));
        }
    }

    /// A guest confirmed absent on every node.
    pub fn absent(vmid: u32, operation: &str, recorded_at: String) -> Self {
        let mut fields = Map::new();
        set(&mut fields, "tags", Value::Array(Vec::new()));
        put(&mut fields, "lastOperation", Some(operation));
        set(&mut fields, "recordedAt", Value::String(recorded_at));
        GuestRecord {
            vmid,
            present: false,
            status: "absent".to_string(),
            // Every field written out: `..GuestRecord::default()` builds a whole default value
            // and drops what it overwrites (issue 32).
            node: None,
            qmp_status: None,
            lock: None,
            fields,
            identity: Value::Null,
            identity_observed_at: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pve::responses::parse;
    use serde_json::json;

    /// The `ha` a record writes for a guest listed with `listed`'s fields.
    fn ha_of(listed: Value) -> Option<Value> {
        let status = parse::<GuestStatus>(&listed).expect("a guest status");
        let record = GuestRecord::observed(100, "pve1", &status, "sync", String::new());
        let data = record.json();
        data.get("ha").cloned()
    }

    #[test]
    fn the_ha_state_is_recorded_as_managed_with_its_state_when_pve_gives_one() {
        let managed = json!({"status": "running", "ha": {"managed": 1, "state": "started"}});
        assert_eq!(
            ha_of(managed),
            Some(json!({"managed": true, "state": "started"}))
        );
        let unmanaged = json!({"status": "running", "ha": {"managed": 0}});
        assert_eq!(ha_of(unmanaged), Some(json!({"managed": false})));
        assert_eq!(ha_of(json!({"status": "running"})), None);
    }
}
