//! `nodeStatus`: a node's status and its physical disks, recorded as `node-<node>`.
//!
//! The disk list needs `Sys.Audit` on the node. Without it the record says so (`disksAvailable:
//! false` and PVE's reason) and the method still succeeds; an empty list would read as "no disks".

use crate::args::{check_segment, ArgError, Fields};
use crate::explain::{could_not, hint};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::run::{write, Run};
use serde::Serialize;
use serde_json::Value;

/// The node a node-scoped method reads: the `node` argument, else the transport's node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeArgs {
    pub node: Option<String>,
}

impl NodeArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let node: Option<String> = fields.optional("node")?;
        if let Some(node) = &node {
            check_segment("node", node)?;
        }
        Ok(NodeArgs { node })
    }

    /// The node to read.
    pub fn node<H: Host>(&self, run: &Run<'_, H>) -> String {
        self.node
            .clone()
            .unwrap_or_else(|| run.global.transport.node().to_string())
    }
}

/// One physical disk of the node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiskRecord {
    pub device: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// SMART health as PVE reports it (`PASSED`, `OK`, `FAILED`, …); `UNKNOWN` when PVE gives none.
    pub health: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wearout_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_by: Option<String>,
}

/// The `node-<node>` record.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatusRecord {
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loadavg: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rootfs_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rootfs_used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rootfs_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uptime_sec: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pve_version: Option<String>,
    /// Whether `disks` is the node's disk list; false when it could not be read.
    pub disks_available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disks_unavailable_reason: Option<String>,
    pub disks: Vec<DiskRecord>,
    pub recorded_at: String,
}

/// Runs `nodeStatus`.
pub async fn node_status<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let node = match NodeArgs::parse(args) {
        Ok(args) => args.node(run),
        Err(e) => return Failure::from(e).into(),
    };
    let pve = run.pve();
    let status = match pve.call(&endpoints::node_status(&node)).await {
        Ok(data) if data.is_object() => data,
        Ok(data) => {
            let e = PveError::malformed(format!("GET /nodes/{node}/status answered {data}"));
            return could_not(&format!("read the status of node {node}"), &e).into();
        }
        Err(e) => return could_not(&format!("read the status of node {node}"), &e).into(),
    };
    let mut record = status_record(&node, &status, run.now_iso());
    let disks = pve.call(&endpoints::node_disks(&node)).await;
    let verdict = match disks.as_ref().map(|data| data.as_array()) {
        Ok(Some(list)) => {
            record.disks_available = true;
            record.disks = list.iter().filter_map(disk_record).collect();
            Ok(format!(
                "node {node}: status and {} disks recorded",
                record.disks.len()
            ))
        }
        Ok(None) => {
            let answer = disks.as_ref().map(Value::to_string).unwrap_or_default();
            let e = PveError::malformed(format!(
                "answered {answer} where a list of disks was expected"
            ));
            unavailable(run, &mut record, &e)
        }
        Err(e) => unavailable(run, &mut record, e),
    };
    let writes = vec![write("nodeStatus", format!("node-{node}"), &record)];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

/// Marks the disks unavailable. A missing privilege is expected (success, said in the record and the
/// log); any other error fails the method after the record is written.
fn unavailable<H: Host>(
    run: &Run<'_, H>,
    record: &mut NodeStatusRecord,
    error: &PveError,
) -> Result<String, String> {
    let node = record.node.clone();
    let reason = format!(
        "GET /nodes/{node}/disks/list failed: {error} — {}",
        hint(error.kind)
    );
    record.disks_available = false;
    record.disks_unavailable_reason = Some(reason.clone());
    if error.kind == ErrorKind::Forbidden {
        run.warn(&format!(
            "node {node}: disks and SMART health are not recorded: {reason} (grant Sys.Audit on /nodes/{node})"
        ));
        return Ok(format!(
            "node {node}: status recorded; disks unavailable (the token lacks Sys.Audit)"
        ));
    }
    Err(format!(
        "node {node}: the status was recorded but the disk list could not be read: {reason}"
    ))
}

fn status_record(node: &str, status: &Value, recorded_at: String) -> NodeStatusRecord {
    let at = |pointer: &str| status.pointer(pointer);
    let bytes = |pointer: &str| at(pointer).and_then(flex::u64_of);
    let text = |pointer: &str| at(pointer).and_then(flex::string_of);
    let loadavg: Option<Vec<f64>> = at("/loadavg")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().map(flex::f64_of).collect());
    NodeStatusRecord {
        node: node.to_string(),
        cpu_pct: at("/cpu").and_then(flex::f64_of).and_then(flex::pct),
        cpus: bytes("/cpuinfo/cpus"),
        loadavg,
        mem_total: bytes("/memory/total"),
        mem_used: bytes("/memory/used"),
        mem_pct: flex::percent(bytes("/memory/used"), bytes("/memory/total")),
        swap_total: bytes("/swap/total"),
        swap_used: bytes("/swap/used"),
        swap_pct: flex::percent(bytes("/swap/used"), bytes("/swap/total")),
        rootfs_total: bytes("/rootfs/total"),
        rootfs_used: bytes("/rootfs/used"),
        rootfs_pct: flex::percent(bytes("/rootfs/used"), bytes("/rootfs/total")),
        uptime_sec: bytes("/uptime"),
        kernel_version: text("/kversion").or_else(|| text("/current-kernel/release")),
        pve_version: text("/pveversion"),
        recorded_at,
        ..NodeStatusRecord::default()
    }
}

fn disk_record(entry: &Value) -> Option<DiskRecord> {
    let text = |key: &str| {
        entry
            .get(key)
            .and_then(flex::string_of)
            .filter(|s| !s.is_empty())
    };
    Some(DiskRecord {
        device: text("devpath")?,
        kind: text("type"),
        model: text("model"),
        serial: text("serial"),
        size_bytes: entry.get("size").and_then(flex::u64_of),
        health: text("health").unwrap_or_else(|| "UNKNOWN".to_string()),
        // `N/A` when the disk reports no wearout.
        wearout_pct: entry.get("wearout").and_then(flex::f64_of),
        used_by: text("used"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn run_node_status(host: &ScriptedHost, extra: Value) -> Outcome {
        let args = api_args(extra);
        run_method_of(GuestKind::Qemu, host, "nodeStatus", &args)
    }

    fn status() -> Value {
        json!({"cpu": 0.125, "cpuinfo": {"cpus": 8}, "loadavg": ["0.50", "0.25", "0.10"],
            "memory": {"total": 1000, "used": 250}, "swap": {"total": 0, "used": 0},
            "rootfs": {"total": 400, "used": 100}, "uptime": 3600,
            "kversion": "Linux 6.8.12-4-pve", "pveversion": "pve-manager/8.2.7/3e0176e6"})
    }

    #[test]
    fn status_and_disks_are_recorded_with_percentages() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/status", status());
        host.data(
            "GET /nodes/pve1/disks/list",
            json!([{"devpath": "/dev/sda", "type": "ssd", "size": 512, "health": "PASSED", "wearout": 98},
                   {"devpath": "/dev/sdb", "wearout": "N/A"}, {"model": "no devpath"}]),
        );
        let outcome = run_node_status(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        let data = &outcome.writes[0].data;
        assert_eq!(outcome.writes[0].instance, "node-pve1");
        assert_eq!(data["cpuPct"], json!(12.5));
        assert_eq!(data["memPct"], json!(25.0));
        assert_eq!(data["loadavg"], json!([0.5, 0.25, 0.1]));
        assert_eq!(data["swapPct"], Value::Null);
        assert_eq!(data["disksAvailable"], json!(true));
        assert_eq!(data["disks"][0]["health"], "PASSED");
        assert_eq!(data["disks"][1]["health"], "UNKNOWN");
        assert_eq!(data["disks"][1]["wearoutPct"], Value::Null);
        assert_eq!(data["disks"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_403_on_the_disk_list_degrades_to_an_explicit_flag() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve2/status", status());
        host.on(
            "GET /nodes/pve2/disks/list",
            [Answer::Error(
                403,
                "Permission check failed (/nodes/pve2, Sys.Audit)".into(),
            )],
        );
        let outcome = run_node_status(&host, json!({"node": "pve2"}));
        assert!(outcome.is_success(), "{outcome:?}");
        let data = &outcome.writes[0].data;
        assert_eq!(data["disksAvailable"], json!(false));
        assert!(data["disksUnavailableReason"]
            .as_str()
            .unwrap()
            .contains("Sys.Audit"));
    }

    #[test]
    fn another_disk_list_error_records_then_fails() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/status", status());
        host.on(
            "GET /nodes/pve1/disks/list",
            [Answer::Error(500, "boom".into())],
        );
        let outcome = run_node_status(&host, json!({}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(message.contains("boom"), "{message}");
        assert_eq!(outcome.writes.len(), 1);
    }

    #[test]
    fn an_unreadable_status_fails_without_a_record() {
        let host = ScriptedHost::new();
        let outcome = run_node_status(&host, json!({}));
        assert!(!outcome.is_success());
        assert!(outcome.writes.is_empty());
    }

    #[test]
    fn a_node_argument_that_would_change_the_path_is_refused() {
        assert!(NodeArgs::parse(&json!({"node": "../x"})).is_err());
        assert!(NodeArgs::parse(&json!({"node": "pve-2"})).is_ok());
    }
}
