//! `nodeConfig`: a node's storages and bridges, recorded as `node-<node>-config`.
//!
//! PVE lists only the storages the token may audit (no error for the others). The bridge list needs
//! `Sys.Audit`: without it the record says so (`bridgesAvailable: false` and why), never `[]`.

use super::node_status::NodeArgs;
use crate::explain::{could_not, hint};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::run::{write, Run};
use serde::Serialize;
use serde_json::Value;

/// One storage as the node sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageRecord {
    pub storage: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Content types (`images`, `rootdir`, `iso`, …).
    pub content: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avail: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
}

/// The `node-<node>-config` record.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeConfigRecord {
    pub node: String,
    pub storages: Vec<StorageRecord>,
    pub bridges: Vec<String>,
    /// Whether `bridges` is the node's bridge list; false when it could not be read.
    pub bridges_available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bridges_unavailable_reason: Option<String>,
    pub recorded_at: String,
}

/// Runs `nodeConfig`.
pub async fn node_config<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let node = match NodeArgs::parse(args) {
        Ok(args) => args.node(run),
        Err(e) => return Failure::from(e).into(),
    };
    let pve = run.pve();
    let storages = match pve.call(&endpoints::node_storage(&node)).await {
        Ok(Value::Array(list)) => {
            let mut storages = Vec::with_capacity(list.len());
            for entry in &list {
                storages.extend(storage_record(entry));
            }
            storages
        }
        Ok(other) => {
            let e = PveError::malformed(format!("GET /nodes/{node}/storage answered {other}"));
            return could_not(&format!("list the storages of node {node}"), &e).into();
        }
        Err(e) => return could_not(&format!("list the storages of node {node}"), &e).into(),
    };
    let mut record = NodeConfigRecord {
        node: node.clone(),
        storages,
        bridges: Vec::new(),
        bridges_available: false,
        bridges_unavailable_reason: None,
        recorded_at: run.now_iso(),
    };
    let verdict = match pve.call(&endpoints::node_bridges(&node)).await {
        Ok(Value::Array(list)) => {
            for interface in &list {
                record
                    .bridges
                    .extend(interface.get("iface").and_then(flex::string_of));
            }
            record.bridges_available = true;
            Ok(format!(
                "node {node}: {} storages and {} bridges recorded",
                record.storages.len(),
                record.bridges.len()
            ))
        }
        Ok(other) => {
            let e = PveError::malformed(format!(
                "answered {other} where a list of interfaces was expected"
            ));
            no_bridges(run, &mut record, &e)
        }
        Err(e) => no_bridges(run, &mut record, &e),
    };
    let writes = vec![write("nodeConfig", format!("node-{node}-config"), &record)];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

/// Marks the bridges unavailable: a missing privilege succeeds (said in the record and the log), any
/// other error fails after the record is written.
fn no_bridges<H: Host>(
    run: &Run<'_, H>,
    record: &mut NodeConfigRecord,
    error: &PveError,
) -> Result<String, String> {
    let node = record.node.clone();
    let reason = format!(
        "GET /nodes/{node}/network failed: {error} — {}",
        hint(error.kind)
    );
    record.bridges_unavailable_reason = Some(reason.clone());
    if error.kind == ErrorKind::Forbidden {
        run.warn(&format!(
            "node {node}: bridges are not recorded: {reason} (grant Sys.Audit on /nodes/{node})"
        ));
        return Ok(format!(
            "node {node}: storages recorded; bridges unavailable (the token lacks Sys.Audit)"
        ));
    }
    Err(format!(
        "node {node}: the storages were recorded but the bridges could not be read: {reason}"
    ))
}

fn storage_record(entry: &Value) -> Option<StorageRecord> {
    let text = |key: &str| entry.get(key).and_then(flex::string_of);
    Some(StorageRecord {
        storage: text("storage")?,
        kind: text("type"),
        content: text("content")
            .map(|c| {
                let mut types = Vec::new();
                for content in c.split(',').map(str::trim) {
                    if !content.is_empty() {
                        types.push(content.to_string());
                    }
                }
                types
            })
            .unwrap_or_default(),
        avail: entry.get("avail").and_then(flex::u64_of),
        total: entry.get("total").and_then(flex::u64_of),
        active: entry.get("active").and_then(flex::bool_of),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
