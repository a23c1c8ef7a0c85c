//! `nodeStatus`: a node's status, its physical disks, its subscription status and whether the
//! enterprise repository is configured, recorded as `node-<node>`.
//!
//! The disk list and the repositories need `Sys.Audit` on the node. Without it the record says so
//! (`disksAvailable: false` / `repositoriesAvailable: false` and PVE's reason) and the method still
//! succeeds; an empty list would read as "no disks", a missing fact as "not configured". The
//! subscription and repository facts are the ones `@stateless/syscheck` reads
//! (`proxmox.subscriptionActive`, `proxmox.enterpriseRepo`).

use crate::args::{segment_fault, ArgError, Fields, Kind, Spec};
use crate::explain::{could_not_args, hint};
use crate::host::Host;
use crate::outcome::RecordWrite;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::quote::Joined;
use crate::record_json::{count, number, opt, put, set};
use crate::run::{write_value, Run};
use serde_json::{Map, Value};

/// An optional node: any text, checked as a path segment (not as a line first: an empty node
/// breaks the segment rule).
pub const NODE: Spec = Spec::new("node", Kind::Text).rule(segment_fault);

/// The node a node-scoped method reads: the `node` argument, else the transport's node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeArgs {
    pub node: Option<String>,
}

impl NodeArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let [node, ..] = Fields::of(args, "")?.read_table(&[NODE])?;
        Ok(NodeArgs { node: node.owned() })
    }

    /// The node to read.
    pub fn node<H: Host>(&self, run: &Run<'_, H>) -> String {
        self.node
            .clone()
            .unwrap_or_else(|| run.global.transport.node().to_string())
    }
}

/// The `node-<node>` record, built as JSON as it is read and filed (record_json.rs): no struct
/// field per fact and no serializer of its own (issue 32). Its fields: the status' counts and
/// percentages, kernel and PVE versions; `disks` (each disk made JSON as it is filed) and whether
/// it is the node's disk list (`disksAvailable`, false when it could not be read); PVE's
/// subscription status (`active`, `notfound`, `expired`, …; never the key or server id), whether
/// it is `active` (syscheck's `proxmox.subscriptionActive`); whether the `enterprise` standard
/// repository is configured and enabled (syscheck's `proxmox.enterpriseRepo`); each fact not read
/// with its `…UnavailableReason`.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStatusRecord {
    pub node: String,
    pub record: Map<String, Value>,
}

/// A node method whose record a first read starts (without it, there is no record) and facts
/// read after it fill in: nodeStatus and nodeConfig, one future for both (issue 32).
pub struct NodeMethod {
    /// The first read.
    pub request: fn(&str) -> PveRequest,
    /// Its path under `/nodes/<node>/` and what the method does with it, as messages name them.
    pub path: &'static str,
    pub action: &'static str,
    pub start: Start,
}

/// The record from the first read's answer (for the node given, with the time it is recorded
/// at); the answer back when it is not of the shape PVE gives.
pub type Start = fn(&str, Value, String) -> Result<Box<dyn NodeRecord>, Value>;

/// A node method's record as the course fills it in.
pub trait NodeRecord {
    /// The request of fact `i`, read after the first read (`None`: past the last).
    fn fact(&self, i: usize, node: &str) -> Option<PveRequest>;
    /// Files fact `i` from its answer.
    fn file(&mut self, i: usize, data: Value) -> Result<(), PveError>;
    /// How messages name fact `i` where it is not recorded, and where it could not be read: what
    /// is not recorded, what could not be read, its path under `/nodes/<node>/`; and what the
    /// first read recorded.
    fn names(&self, i: usize) -> [&'static str; 4];
    /// Says in the record why fact `i` is not in it.
    fn unavailable(&mut self, i: usize, reason: String);
    /// The record's write (its lists moved into it, not copied).
    fn write(self: Box<Self>) -> RecordWrite;
    /// The summary when every fact was recorded or said unavailable for want of a privilege.
    fn summary(&self) -> String;
}

/// Runs a node method: the first read, then each fact, each answer filed by a plain function.
pub async fn read_node<H: Host>(run: &Run<'_, H>, args: &Value, method: &NodeMethod) -> Outcome {
    let node = match NodeArgs::parse(args) {
        Ok(args) => args.node(run),
        Err(e) => return Failure::from(e).into(),
    };
    let pve = run.pve();
    let answer = pve.call(&(method.request)(&node)).await;
    let fail = |e: &PveError| could_not_args(format_args!("{} of node {node}", method.action), e);
    let mut record = match answer.map(|data| (method.start)(&node, data, run.now_iso())) {
        Ok(Ok(record)) => record,
        Ok(Err(data)) => {
            let e = PveError::malformed_args(format_args!(
                "GET /nodes/{node}/{} answered {data}",
                method.path,
                data = crate::quote::json(&data)
            ));
            return fail(&e).into();
        }
        Err(e) => return fail(&e).into(),
    };
    let mut failures = Vec::new();
    let mut i = 0;
    while let Some(request) = record.fact(i, &node) {
        let answer = pve.call(&request).await;
        if let Err(e) = answer.and_then(|data| record.file(i, data)) {
            let reason = unavailable(run, &node, record.names(i), &e, &mut failures);
            record.unavailable(i, reason);
        }
        i += 1;
    }
    let summary = record.summary();
    let writes = vec![record.write()];
    match failures.is_empty() {
        true => Outcome::succeeded(writes, summary),
        false => Outcome::failed(writes, failures.joined("; ")),
    }
}

/// nodeStatus: the node's status, then the facts that need `Sys.Audit`.
pub const NODE_STATUS: NodeMethod = NodeMethod {
    request: endpoints::node_status,
    path: "status",
    action: "read the status",
    start: |node, status, recorded_at| match status.is_object() {
        true => Ok(Box::new(status_record(node, &status, recorded_at))),
        false => Err(status),
    },
};

impl NodeRecord for NodeStatusRecord {
    fn fact(&self, i: usize, node: &str) -> Option<PveRequest> {
        FACTS.get(i).map(|read| (read.request)(node))
    }

    fn file(&mut self, i: usize, data: Value) -> Result<(), PveError> {
        match FACTS.get(i) {
            Some(read) => (read.file)(&mut self.record, data),
            None => Ok(()),
        }
    }

    fn names(&self, i: usize) -> [&'static str; 4] {
        let (what, path) = FACTS.get(i).map_or(("", ""), |read| (read.what, read.path));
        [what, what, path, "the status was"]
    }

    fn unavailable(&mut self, i: usize, reason: String) {
        if let Some(read) = FACTS.get(i) {
            set(&mut self.record, read.reason, Value::String(reason));
        }
    }

    fn write(self: Box<Self>) -> RecordWrite {
        let instance = format!("node-{}", self.node);
        write_value("nodeStatus", instance, Value::Object(self.record))
    }

    fn summary(&self) -> String {
        format!("node {}: status recorded", self.node)
    }
}

/// One read of a fact of the record: its request; what it reads and its path, as the messages
/// name them when it cannot be read; where its answer is filed, and where the record says why not.
struct Fact {
    request: fn(&str) -> PveRequest,
    what: &'static str,
    path: &'static str,
    file: fn(&mut Map<String, Value>, Value) -> Result<(), PveError>,
    /// The record's field saying why it was not read.
    reason: &'static str,
}

/// The facts read after the status, in the order they are asked for.
const FACTS: [Fact; 3] = [
    Fact {
        request: endpoints::node_disks,
        what: "disks and SMART health",
        path: "disks/list",
        file: file_disks,
        reason: "disksUnavailableReason",
    },
    Fact {
        request: endpoints::node_subscription,
        what: "the subscription status",
        path: "subscription",
        file: file_subscription,
        reason: "subscriptionStatusUnavailableReason",
    },
    Fact {
        request: endpoints::node_repositories,
        what: "the APT repositories",
        path: "apt/repositories",
        file: file_repositories,
        reason: "repositoriesUnavailableReason",
    },
];

/// The node's disk list, each disk with its SMART health.
fn file_disks(record: &mut Map<String, Value>, data: Value) -> Result<(), PveError> {
    let list = data.as_array().ok_or_else(|| not_a_list(&data, "disks"))?;
    let mut disks = Vec::with_capacity(list.len());
    for entry in list {
        // Pushed, not extended from the Option: no extend code of its own (issue 32).
        if let Some(disk) = disk_record(entry) {
            disks.push(disk);
        }
    }
    set(record, "disks", Value::Array(disks));
    set(record, "disksAvailable", Value::Bool(true));
    Ok(())
}

/// Why an answer that is not a list of `items` cannot be filed: one message for nodeStatus'
/// disks and nodeConfig's interfaces.
pub fn not_a_list(data: &Value, items: &str) -> PveError {
    PveError::malformed_args(format_args!(
        "answered {data} where a list of {items} was expected",
        data = crate::quote::json(data)
    ))
}

/// The subscription's status. Its answer may hold the key: only the status is kept, the answer
/// never quoted.
fn file_subscription(record: &mut Map<String, Value>, data: Value) -> Result<(), PveError> {
    let status = fact(&data, "status", flex::string_of)?;
    set(
        record,
        "subscriptionActive",
        Value::Bool(status == "active"),
    );
    set(record, "subscriptionStatus", Value::String(status));
    set(record, "subscriptionStatusAvailable", Value::Bool(true));
    Ok(())
}

/// Whether the enterprise repository is configured and enabled.
fn file_repositories(record: &mut Map<String, Value>, data: Value) -> Result<(), PveError> {
    let configured = fact(&data, "standard-repos", enterprise)?;
    set(record, "enterpriseRepo", Value::Bool(configured));
    set(record, "repositoriesAvailable", Value::Bool(true));
    Ok(())
}

/// `field` of a node's answer as `pick` reads it. A malformed answer is quoted unless it is an
/// object — the subscription's may hold the key —, which is named by its fields alone.
fn fact<T>(data: &Value, field: &str, pick: fn(&Value) -> Option<T>) -> Result<T, PveError> {
    data.get(field)
        .and_then(pick)
        .ok_or_else(|| without_fact(data, field))
}

/// Why `field` could not be read from `data`: one copy for every type [`fact`] picks.
fn without_fact(data: &Value, field: &str) -> PveError {
    let seen = match data.as_object() {
        Some(map) => {
            let mut keys = String::new();
            for key in map.keys() {
                crate::quote::push_item(&mut keys, ", ", key);
            }
            format!("an object of {keys}")
        }
        None => crate::quote::json(data),
    };
    PveError::malformed_args(format_args!("answered {seen} without a readable `{field}`"))
}

/// Whether the `enterprise` standard repository is configured and enabled: its `status`, absent
/// when it is not configured (pve-manager `PVE/API2/APT.pm` repositories, `standard-repos`).
fn enterprise(repos: &Value) -> Option<bool> {
    let is_enterprise = |r: &&Value| r.get("handle").and_then(Value::as_str) == Some("enterprise");
    let entry = repos.as_array()?.iter().find(is_enterprise);
    Some(entry.and_then(|r| r.get("status")).and_then(flex::bool_of) == Some(true))
}

/// Why a fact is not in the record (`names` as [`NodeRecord::names`] gives them). A missing
/// privilege is expected (said in the record and the log; the method still succeeds); any other
/// error adds to `failures`, raised after the record is written.
fn unavailable<H: Host>(
    run: &Run<'_, H>,
    node: &str,
    names: [&str; 4],
    error: &PveError,
    failures: &mut Vec<String>,
) -> String {
    let [not_recorded, not_read, path, recorded] = names;
    let reason = format!(
        "GET /nodes/{node}/{path} failed: {error} — {}",
        hint(error.kind)
    );
    match error.kind == ErrorKind::Forbidden {
        true => run.warn_args(format_args!(
            "node {node}: {not_recorded} not recorded: {reason} (grant Sys.Audit on /nodes/{node})"
        )),
        false => failures.push(format!(
            "node {node}: {recorded} recorded but {not_read} could not be read: {reason}"
        )),
    }
    reason
}

/// Each usage the status gives as two counts: where it holds them, the record's keys for them and
/// for their percentage. A constant read in place: an array written in the loop is built anew on
/// the stack at every call (issue 32).
const USAGE: &[[&str; 5]] = &[
    [
        "memory/used",
        "memUsed",
        "memory/total",
        "memTotal",
        "memPct",
    ],
    [
        "swap/used",
        "swapUsed",
        "swap/total",
        "swapTotal",
        "swapPct",
    ],
    [
        "rootfs/used",
        "rootfsUsed",
        "rootfs/total",
        "rootfsTotal",
        "rootfsPct",
    ],
];

/// The facts read after the status, each `false` until it is.
const UNREAD: &[&str] = &[
    "disksAvailable",
    "subscriptionStatusAvailable",
    "repositoriesAvailable",
];

fn status_record(node: &str, status: &Value, recorded_at: String) -> NodeStatusRecord {
    // `key` or `outer/inner`, walked by `get`: `Value::pointer` (with its array indexes and
    // escapes) would be compiled in for this function alone (issue 32).
    let at = |path: &str| match path.split_once('/') {
        Some((outer, inner)) => status.get(outer).and_then(|value| value.get(inner)),
        None => status.get(path),
    };
    let bytes = |path: &str| at(path).and_then(flex::u64_of);
    let text = |path: &str| at(path).and_then(flex::string_of);
    // A loop, not a collected chain: each compiles its own collecting code (issue 32).
    let loadavg = at("loadavg").and_then(Value::as_array).and_then(|list| {
        let mut loads = Vec::with_capacity(list.len());
        for load in list {
            loads.push(Value::from(flex::f64_of(load)?));
        }
        Some(Value::Array(loads))
    });
    let mut record = Map::new();
    let cpu_pct = at("cpu").and_then(flex::f64_of).and_then(flex::pct);
    number(&mut record, "cpuPct", cpu_pct);
    count(&mut record, "cpus", bytes("cpuinfo/cpus"));
    opt(&mut record, "loadavg", loadavg);
    // Each percentage from the two counts read, not from reading them again.
    for [used, used_key, total, total_key, pct_key] in USAGE {
        let (used, total) = (bytes(used), bytes(total));
        count(&mut record, used_key, used);
        count(&mut record, total_key, total);
        number(&mut record, pct_key, flex::percent(used, total));
    }
    count(&mut record, "uptimeSec", bytes("uptime"));
    let kernel = text("kversion").or_else(|| text("current-kernel/release"));
    put(&mut record, "kernelVersion", kernel.as_deref());
    put(&mut record, "pveVersion", text("pveversion").as_deref());
    // What the facts read after the status fill in, until they do.
    set(&mut record, "disks", Value::Array(Vec::new()));
    for unread in UNREAD {
        set(&mut record, unread, Value::Bool(false));
    }
    put(&mut record, "node", Some(node));
    set(&mut record, "recordedAt", Value::String(recorded_at));
    NodeStatusRecord {
        node: node.to_string(),
        record,
    }
}

/// One physical disk of the node, built as JSON (record_json.rs): its device, type, model, serial,
/// size, SMART health as PVE reports it (`PASSED`, `OK`, `FAILED`, …; `UNKNOWN` when PVE gives
/// none), wearout and user, absent ones left out; no struct with a serializer of its own (issue
/// 32). `None` for an entry without a device.
fn disk_record(entry: &Value) -> Option<Value> {
    let text = |key: &str| {
        entry
            .get(key)
            .and_then(flex::string_of)
            .filter(|s| !s.is_empty())
    };
    let mut disk = Map::new();
    put(&mut disk, "device", Some(&text("devpath")?));
    put(&mut disk, "type", text("type").as_deref());
    put(&mut disk, "model", text("model").as_deref());
    put(&mut disk, "serial", text("serial").as_deref());
    let size = entry.get("size").and_then(flex::u64_of);
    opt(&mut disk, "sizeBytes", size.map(Value::from));
    let health = text("health");
    put(
        &mut disk,
        "health",
        Some(health.as_deref().unwrap_or("UNKNOWN")),
    );
    // `N/A` when the disk reports no wearout.
    let wearout = entry.get("wearout").and_then(flex::f64_of);
    opt(&mut disk, "wearoutPct", wearout.map(Value::from));
    put(&mut disk, "usedBy", text("used").as_deref());
    Some(Value::Object(disk))
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

    /// A node without a subscription, its enterprise repository configured (a fresh PVE install).
    fn node(name: &str) -> ScriptedHost {
        let standard =
            json!([{"handle": "enterprise", "status": 1}, {"handle": "no-subscription"}]);
        let repositories = Answer::Data(repos(standard));
        node_with(
            name,
            Answer::Data(json!({"status": "notfound"})),
            repositories,
        )
    }

    /// A node whose subscription and repository reads answer `subscription` and `repositories`
    /// (every time: a retried read gets the same answer).
    fn node_with(name: &str, subscription: Answer, repositories: Answer) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(&format!("GET /nodes/{name}/status"), status());
        host.on(
            &format!("GET /nodes/{name}/subscription"),
            vec![subscription; 5],
        );
        host.on(
            &format!("GET /nodes/{name}/apt/repositories"),
            vec![repositories; 5],
        );
        host
    }

    fn repos(standard: Value) -> Value {
        json!({"files": [], "errors": [], "digest": "0", "infos": [], "standard-repos": standard})
    }

    fn status() -> Value {
        json!({"cpu": 0.125, "cpuinfo": {"cpus": 8}, "loadavg": ["0.50", "0.25", "0.10"],
            "memory": {"total": 1000, "used": 250}, "swap": {"total": 0, "used": 0},
            "rootfs": {"total": 400, "used": 100}, "uptime": 3600,
            "kversion": "Linux 6.8.12-4-pve", "pveversion": "pve-manager/8.2.7/3e0176e6"})
    }

    #[test]
    fn status_and_disks_are_recorded_with_percentages() {
        let host = node("pve1");
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
        let host = node("pve2");
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
        let host = node("pve1");
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
    fn the_subscription_status_and_the_enterprise_repository_are_recorded() {
        let host = node("pve1");
        host.data("GET /nodes/pve1/disks/list", json!([]));
        let outcome = run_node_status(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        let data = &outcome.writes[0].data;
        assert_eq!(data["subscriptionStatus"], "notfound");
        assert_eq!(data["subscriptionActive"], json!(false));
        assert_eq!(data["subscriptionStatusAvailable"], json!(true));
        assert_eq!(data["enterpriseRepo"], json!(true));
        assert_eq!(data["repositoriesAvailable"], json!(true));
    }

    #[test]
    fn an_active_subscription_is_recorded_without_its_key_or_server_id() {
        let active =
            json!({"status": "active", "key": "pve2c-0123456789", "serverid": "ABCDEF0123456789"});
        let host = node_with("pve1", Answer::Data(active), Answer::Data(repos(json!([]))));
        host.data("GET /nodes/pve1/disks/list", json!([]));
        let outcome = run_node_status(&host, json!({}));
        let data = &outcome.writes[0].data;
        assert_eq!(data["subscriptionActive"], json!(true));
        let text = data.to_string();
        assert!(
            !text.contains("pve2c-0123456789") && !text.contains("ABCDEF0123456789"),
            "{text}"
        );
    }

    #[test]
    fn an_enterprise_repository_that_is_disabled_or_not_configured_is_not_the_enterprise_repo() {
        for standard in [
            json!([{"handle": "enterprise", "status": 0}]),
            json!([{"handle": "enterprise"}, {"handle": "no-subscription", "status": true}]),
            json!([]),
        ] {
            let subscription = Answer::Data(json!({"status": "notfound"}));
            let host = node_with("pve1", subscription, Answer::Data(repos(standard.clone())));
            host.data("GET /nodes/pve1/disks/list", json!([]));
            let outcome = run_node_status(&host, json!({}));
            assert_eq!(
                outcome.writes[0].data["enterpriseRepo"],
                json!(false),
                "{standard}"
            );
        }
    }

    #[test]
    fn a_403_on_the_repositories_degrades_to_an_explicit_flag() {
        let denied = Answer::Error(
            403,
            "Permission check failed (/nodes/pve1, Sys.Audit)".into(),
        );
        let host = node_with("pve1", Answer::Data(json!({"status": "active"})), denied);
        host.data("GET /nodes/pve1/disks/list", json!([]));
        let outcome = run_node_status(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        let data = &outcome.writes[0].data;
        assert_eq!(data["repositoriesAvailable"], json!(false));
        assert_eq!(data["enterpriseRepo"], Value::Null);
        let reason = data["repositoriesUnavailableReason"].as_str().unwrap();
        assert!(reason.contains("Sys.Audit"), "{reason}");
    }

    #[test]
    fn a_subscription_read_that_fails_otherwise_records_then_fails() {
        let repositories = Answer::Data(repos(json!([{"handle": "enterprise", "status": 1}])));
        let host = node_with("pve1", Answer::Error(500, "boom".into()), repositories);
        host.data("GET /nodes/pve1/disks/list", json!([]));
        let outcome = run_node_status(&host, json!({}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("the subscription status could not be read"),
            "{message}"
        );
        let data = &outcome.writes[0].data;
        assert_eq!(data["subscriptionStatusAvailable"], json!(false));
        assert_eq!(data["subscriptionActive"], Value::Null);
        assert_eq!(
            data["enterpriseRepo"],
            json!(true),
            "the other facts still recorded"
        );
    }

    #[test]
    fn a_subscription_answer_without_a_status_fails_without_quoting_it() {
        let keyed = Answer::Data(json!({"key": "pve2c-0123456789"}));
        let host = node_with("pve1", keyed, Answer::Data(repos(json!([]))));
        host.data("GET /nodes/pve1/disks/list", json!([]));
        let outcome = run_node_status(&host, json!({}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("answered an object of key without a readable `status`"),
            "{message}"
        );
        assert!(!message.contains("pve2c-0123456789"), "{message}");
        assert!(!outcome.writes[0]
            .data
            .to_string()
            .contains("pve2c-0123456789"));
    }

    #[test]
    fn an_answer_of_another_shape_is_quoted_in_the_failure() {
        let host = node_with(
            "pve1",
            Answer::Data(json!({"status": "notfound"})),
            Answer::Data(json!("unexpected")),
        );
        host.data("GET /nodes/pve1/disks/list", json!([]));
        let outcome = run_node_status(&host, json!({}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("answered \"unexpected\" without a readable `standard-repos`"),
            "{message}"
        );
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
