//! The guest state record (`vm-<vmid>` / `ct-<vmid>`): what was observed, never what was assumed.

use super::identity::Identity;
use super::seen::Marks;
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
/// empty and absent fields are left out but for `tags`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GuestRecord {
    pub vmid: u32,
    pub present: bool,
    /// `running` / `stopped` as PVE says; `absent` when confirmed absent; `deleted` after a delete.
    pub status: String,
    pub name: Option<String>,
    pub node: Option<String>,
    pub qmp_status: Option<String>,
    pub lock: Option<String>,
    pub tags: Vec<String>,
    pub ipv4: Option<String>,
    /// What `status/current` showed beyond the fields above, built as JSON as it is read
    /// ([`GuestRecord::observed`]): `ha` (`managed`, and `state` when PVE gives one), `template`,
    /// `agentConfigured`, `cpuPct`, `cpus`, `memBytes`, `maxMemBytes`, `memPct`, `diskBytes`,
    /// `maxDiskBytes`, `netinBytes`, `netoutBytes`, `uptimeSec`, absent ones left out. No field
    /// of its own for each (issue 32): the record's map keeps its keys sorted, so they are
    /// written where their fields were.
    pub stats: Map<String, Value>,
    /// The guest's fingerprints as JSON, built when filled ([`Identity::recorded`]; null, left
    /// out, when none is known): no serializer of [`Identity`] of its own (issue 32).
    pub identity: Value,
    /// When `identity` was read from the guest's config (a sync carries an older one forward).
    pub identity_observed_at: Option<String>,
    /// When the state fields were read, relative to this run's changes (`outcome`, `observedAt`,
    /// `observedBeforeMutation`: guest/seen.rs).
    pub marks: Marks,
    /// An [`identity_change`], set when the VMID now belongs to a different guest than the stored
    /// record described (null, left out, otherwise).
    pub identity_changed: Value,
    /// Warnings of the tasks this run followed (`WARNINGS: n`) and of the method itself.
    pub warnings: Vec<String>,
    /// The UPID of the last task this run followed.
    pub last_task: Option<String>,
    /// The file output (spec `taskLog`) holding that task's log, when it did not end plainly `OK`.
    pub last_task_log: Option<String>,
    /// That task's last log lines when it failed and no file holds its log (a swamp without file
    /// outputs): at most 10 lines, 2 KB, as the failure message quotes them.
    pub last_task_log_tail: Vec<String>,
    /// Config changes PVE holds until the next start (seen by setConfig): key → pending value.
    pub pending: Map<String, Value>,
    /// Config keys whose deletion waits for the next start.
    pub pending_delete: Vec<String>,
    pub last_operation: String,
    pub recorded_at: String,
}

impl GuestRecord {
    /// The record as written.
    pub fn json(&self) -> Value {
        // The fields read from `status/current` first: the rest are put beside them.
        let mut record = self.stats.clone();
        set(&mut record, "vmid", Value::from(self.vmid));
        set(&mut record, "present", Value::Bool(self.present));
        put(&mut record, "status", Some(&self.status));
        put(&mut record, "name", self.name.as_deref());
        put(&mut record, "node", self.node.as_deref());
        put(&mut record, "qmpStatus", self.qmp_status.as_deref());
        put(&mut record, "lock", self.lock.as_deref());
        set(&mut record, "tags", Value::from(self.tags.clone()));
        put(&mut record, "ipv4", self.ipv4.as_deref());
        value(&mut record, "identity", &self.identity);
        let identity_at = self.identity_observed_at.as_deref();
        put(&mut record, "identityObservedAt", identity_at);
        self.marks.put_into(&mut record);
        value(&mut record, "identityChanged", &self.identity_changed);
        list(&mut record, "warnings", &self.warnings);
        put(&mut record, "lastTask", self.last_task.as_deref());
        put(&mut record, "lastTaskLog", self.last_task_log.as_deref());
        list(&mut record, "lastTaskLogTail", &self.last_task_log_tail);
        if !self.pending.is_empty() {
            set(&mut record, "pending", Value::Object(self.pending.clone()));
        }
        list(&mut record, "pendingDelete", &self.pending_delete);
        put(&mut record, "lastOperation", Some(&self.last_operation));
        put(&mut record, "recordedAt", Some(&self.recorded_at));
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
        record.name = status.name.clone();
        record.node = Some(node.to_string());
        record.qmp_status = status.qmpstatus.clone();
        record.lock = status.lock.clone().filter(|l| !l.is_empty());
        let stats = &mut record.stats;
        if let Some(ha) = &status.ha {
            let mut recorded = Map::new();
            let managed = Value::Bool(ha.managed.unwrap_or(false));
            set(&mut recorded, "managed", managed);
            put(&mut recorded, "state", ha.state.as_deref());
            set(stats, "ha", Value::Object(recorded));
        }
        record.tags = status.tags.as_deref().map(split_tags).unwrap_or_default();
        opt(stats, "template", status.template.map(Value::Bool));
        opt(stats, "agentConfigured", status.agent.map(Value::Bool));
        number(stats, "cpuPct", status.cpu.and_then(flex::pct));
        number(stats, "cpus", status.cpus);
        count(stats, "memBytes", status.mem);
        count(stats, "maxMemBytes", status.maxmem);
        number(stats, "memPct", flex::percent(status.mem, status.maxmem));
        count(stats, "diskBytes", status.disk);
        count(stats, "maxDiskBytes", status.maxdisk);
        count(stats, "netinBytes", status.netin);
        count(stats, "netoutBytes", status.netout);
        count(stats, "uptimeSec", status.uptime);
        record
    }

    /// A guest confirmed absent on every node.
    pub fn absent(vmid: u32, operation: &str, recorded_at: String) -> Self {
        GuestRecord {
            vmid,
            present: false,
            status: "absent".to_string(),
            last_operation: operation.to_string(),
            recorded_at,
            // Every field written out: `..GuestRecord::default()` builds a whole default value
            // and drops what it overwrites (issue 32).
            name: None,
            node: None,
            qmp_status: None,
            lock: None,
            tags: Vec::new(),
            ipv4: None,
            stats: Map::new(),
            identity: Value::Null,
            identity_observed_at: None,
            marks: Marks::default(),
            identity_changed: Value::Null,
            warnings: Vec::new(),
            last_task: None,
            last_task_log: None,
            last_task_log_tail: Vec::new(),
            pending: Map::new(),
            pending_delete: Vec::new(),
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
