//! `nodeConfig`: a node's storages and bridges, recorded as `node-<node>-config`.
//!
//! PVE lists only the storages the token may audit (no error for the others). The bridge list needs
//! `Sys.Audit`: without it the record says so (`bridgesAvailable: false` and why), never `[]`.

use super::node_status::{not_a_list, NodeMethod, NodeRecord};
use crate::outcome::RecordWrite;
use crate::pve::endpoints;
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::record_json::{opt, put, set};
use crate::run::write_value;
use serde_json::{Map, Value};

/// The `node-<node>-config` record, written as JSON by [`NodeRecord::write`] (record_json.rs): no
/// serializer of its own (issue 32).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfigRecord {
    pub node: String,
    /// Each storage made JSON as it is read: the record serializes a list of JSON values, as other
    /// records do, not a serializer of its own for a list of storages (issue 32).
    pub storages: Vec<Value>,
    pub bridges: Vec<String>,
    /// Whether `bridges` is the node's bridge list; false when it could not be read.
    pub bridges_available: bool,
    pub bridges_unavailable_reason: Option<String>,
    pub recorded_at: String,
}

/// nodeConfig: the node's storages, then its bridges (which need `Sys.Audit`).
pub const NODE_CONFIG: NodeMethod = NodeMethod {
    request: endpoints::node_storage,
    path: "storage",
    action: "list the storages",
    start: |node, answer, recorded_at| {
        let Value::Array(list) = answer else {
            return Err(answer);
        };
        let mut storages = Vec::with_capacity(list.len());
        for entry in &list {
            // Pushed, not extended from the Option: no extend code of its own (issue 32).
            if let Some(storage) = storage_record(entry) {
                storages.push(storage);
            }
        }
        Ok(Box::new(NodeConfigRecord {
            node: node.to_string(),
            storages,
            bridges: Vec::new(),
            bridges_available: false,
            bridges_unavailable_reason: None,
            recorded_at,
        }))
    },
};

impl NodeRecord for NodeConfigRecord {
    fn fact(&self, i: usize, node: &str) -> Option<PveRequest> {
        (i == 0).then(|| endpoints::node_bridges(node))
    }

    fn file(&mut self, _: usize, data: Value) -> Result<(), PveError> {
        let Value::Array(list) = data else {
            return Err(not_a_list(&data, "interfaces"));
        };
        for interface in &list {
            self.bridges
                .extend(interface.get("iface").and_then(flex::string_of));
        }
        self.bridges_available = true;
        Ok(())
    }

    fn names(&self, _: usize) -> [&'static str; 4] {
        ["bridges are", "the bridges", "network", "the storages were"]
    }

    fn unavailable(&mut self, _: usize, reason: String) {
        self.bridges_unavailable_reason = Some(reason);
    }

    fn write(self: Box<Self>) -> RecordWrite {
        let mut record = Map::new();
        let bridges = Value::from(self.bridges);
        set(&mut record, "storages", Value::Array(self.storages));
        set(&mut record, "bridges", bridges);
        set(
            &mut record,
            "bridgesAvailable",
            Value::Bool(self.bridges_available),
        );
        let reason = self.bridges_unavailable_reason.as_deref();
        put(&mut record, "bridgesUnavailableReason", reason);
        put(&mut record, "recordedAt", Some(&self.recorded_at));
        let instance = format!("node-{}-config", self.node);
        set(&mut record, "node", Value::String(self.node));
        write_value("nodeConfig", instance, Value::Object(record))
    }

    /// The bridges read, or unavailable for want of `Sys.Audit` (any other error fails the method
    /// after the record is written).
    fn summary(&self) -> String {
        let node = &self.node;
        match self.bridges_available {
            true => format!(
                "node {node}: {} storages and {} bridges recorded",
                self.storages.len(),
                self.bridges.len()
            ),
            false => format!(
                "node {node}: storages recorded; bridges unavailable (the token lacks Sys.Audit)"
            ),
        }
    }
}

/// One storage as the node sees it, built as JSON (record_json.rs): its name, type, content types
/// (`images`, `rootdir`, `iso`, …), space and whether it is active, absent ones left out; no struct
/// with a serializer of its own (issue 32). `None` for an entry without a name.
fn storage_record(entry: &Value) -> Option<Value> {
    let text = |key: &str| entry.get(key).and_then(flex::string_of);
    let mut storage = Map::new();
    put(&mut storage, "storage", Some(&text("storage")?));
    put(&mut storage, "type", text("type").as_deref());
    let mut types = Vec::new();
    if let Some(content) = text("content") {
        for content in content.split(',').map(str::trim) {
            if !content.is_empty() {
                types.push(Value::from(content));
            }
        }
    }
    set(&mut storage, "content", Value::Array(types));
    let count = |key: &str| entry.get(key).and_then(flex::u64_of).map(Value::from);
    opt(&mut storage, "avail", count("avail"));
    opt(&mut storage, "total", count("total"));
    let active = entry.get("active").and_then(flex::bool_of);
    opt(&mut storage, "active", active.map(Value::Bool));
    Some(Value::Object(storage))
}

#[cfg(test)]
mod tests {
    use crate::outcome::Outcome;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn run_node_config(host: &ScriptedHost) -> Outcome {
        let args = api_args(json!({}));
        run_method_of(GuestKind::Qemu, host, "nodeConfig", &args)
    }

    fn storages(host: &ScriptedHost) {
        host.data(
            "GET /nodes/pve1/storage",
            json!([{"storage": "local-lvm", "type": "lvmthin", "content": "images,rootdir", "avail": 100, "active": 1}]),
        );
    }

    #[test]
    fn storages_and_bridges_are_recorded() {
        let host = ScriptedHost::new();
        storages(&host);
        host.data(
            "GET /nodes/pve1/network",
            json!([{"iface": "vmbr0", "type": "bridge"}, {"iface": "vmbr1", "type": "OVSBridge"}]),
        );
        let outcome = run_node_config(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        let data = &outcome.writes[0].data;
        assert_eq!(outcome.writes[0].instance, "node-pve1-config");
        assert_eq!(data["storages"][0]["content"], json!(["images", "rootdir"]));
        assert_eq!(data["storages"][0]["active"], json!(true));
        assert_eq!(data["bridges"], json!(["vmbr0", "vmbr1"]));
        assert_eq!(data["bridgesAvailable"], json!(true));
    }

    #[test]
    fn a_403_on_the_bridges_degrades_to_an_explicit_flag() {
        let host = ScriptedHost::new();
        storages(&host);
        host.on(
            "GET /nodes/pve1/network",
            [Answer::Error(
                403,
                "Permission check failed (/nodes/pve1, Sys.Audit)".into(),
            )],
        );
        let outcome = run_node_config(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["bridgesAvailable"], json!(false));
    }

    #[test]
    fn an_unreadable_storage_list_fails_without_a_record() {
        let host = ScriptedHost::new();
        let outcome = run_node_config(&host);
        assert!(!outcome.is_success());
        assert!(outcome.writes.is_empty());
    }
}
