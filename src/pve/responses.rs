//! Typed PVE answers. Parsing is tolerant where PVE is loose (0/1 booleans, numbers as strings) and
//! strict where the verdict depends on it (a guest's `status`, an exec's `exited`).

use super::exec_data::{output_from_pve, GuestOutput};
use super::flex;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One entry of `GET /cluster/resources?type=vm`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ClusterGuest {
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub vmid: Option<u64>,
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub node: String,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub name: Option<String>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub status: Option<String>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub tags: Option<String>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub lock: Option<String>,
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub template: Option<bool>,
}

/// HA state of a guest as `status/current` reports it.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
pub struct HaStatus {
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub managed: Option<bool>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub state: Option<String>,
}

/// The states PVE's schema gives a guest's `status` (qemu and lxc alike: `enum [stopped, running]`).
pub const KNOWN_STATUSES: [&str; 2] = ["running", "stopped"];

/// QEMU's run states (`RunState` in QEMU's qapi/run-state.json) as `qmpstatus` reports them, and
/// `stopped`, which PVE reports for a VM without a QEMU process.
pub const KNOWN_QMP_STATUSES: [&str; 17] = [
    "running",
    "paused",
    "prelaunch",
    "inmigrate",
    "postmigrate",
    "finish-migrate",
    "restore-vm",
    "save-vm",
    "suspended",
    "shutdown",
    "watchdog",
    "guest-panicked",
    "internal-error",
    "io-error",
    "debug",
    "colo",
    "stopped",
];

/// `GET …/status/current` (and one entry of `GET /nodes/{node}/qemu?full=1`). Only a known state is
/// an observation: a `status` outside PVE's set (`unknown`, empty, anything else), or a `qmpstatus`
/// that is not one of QEMU's run states, makes the whole answer unreadable — the state was not
/// determined, and nothing may be recorded as if it had been.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GuestStatus {
    /// `running` or `stopped`; required, because the verdict rests on it.
    #[serde(deserialize_with = "known_status")]
    pub status: String,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub vmid: Option<u64>,
    #[serde(deserialize_with = "known_qmp_status", default)]
    pub qmpstatus: Option<String>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub name: Option<String>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub tags: Option<String>,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub lock: Option<String>,
    #[serde(default)]
    pub ha: Option<HaStatus>,
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub agent: Option<bool>,
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub template: Option<bool>,
    #[serde(deserialize_with = "flex::opt_f64", default)]
    pub cpu: Option<f64>,
    /// A number, not a count: a container limited by `cpulimit` without `cores` reports the
    /// fraction (`0.5`), pve-container vmstatus.
    #[serde(deserialize_with = "flex::opt_f64", default)]
    pub cpus: Option<f64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub mem: Option<u64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub maxmem: Option<u64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub disk: Option<u64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub maxdisk: Option<u64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub netin: Option<u64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub netout: Option<u64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub uptime: Option<u64>,
    /// The QEMU process (a container's init) while running: a new one means a new boot.
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub pid: Option<u64>,
}

fn known_status<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = Value::deserialize(d)?;
    match text.as_str() {
        Some(s) if KNOWN_STATUSES.contains(&s) => Ok(s.to_string()),
        _ => Err(serde::de::Error::custom(format!(
            "status {} is not one of PVE's states (running, stopped): the state was not determined",
            crate::quote::value(&text)
        ))),
    }
}

fn known_qmp_status<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if KNOWN_QMP_STATUSES.contains(&s.as_str()) => Ok(Some(s)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "qmpstatus {} is not one of QEMU's run states: the state was not determined",
            crate::quote::value(&other)
        ))),
    }
}

/// `POST …/agent/exec` → the pid of the started command.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ExecStarted {
    pub pid: i64,
}

/// `GET …/agent/exec-status`, read with the agent's quirks in mind (see `guest_exec`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecStatus {
    pub exited: bool,
    pub exit_code: Option<i64>,
    pub signal: Option<i64>,
    /// The guest's output, read back from PVE's one-character-per-byte form ([`exec_data`]).
    pub stdout: Option<GuestOutput>,
    pub stderr: Option<GuestOutput>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

impl ExecStatus {
    /// Reads an exec-status answer; `exited` is required, everything else optional.
    pub fn from_value(value: &Value) -> Option<ExecStatus> {
        let object = value.as_object()?;
        let exited = flex::bool_of(object.get("exited")?)?;
        let stream = |key| {
            object
                .get(key)
                .and_then(flex::string_of)
                .map(|data| output_from_pve(&data))
        };
        let stdout = stream("out-data");
        let stderr = stream("err-data");
        Some(ExecStatus {
            exited,
            exit_code: object.get("exitcode").and_then(flex::i64_of),
            signal: object.get("signal").and_then(flex::i64_of),
            stdout_truncated: truncated(object, "out-truncated", stdout.as_ref()),
            stderr_truncated: truncated(object, "err-truncated", stderr.as_ref()),
            stdout,
            stderr,
        })
    }
}

/// The guest agent stops capturing a stream at 16 MiB (of the guest's bytes).
pub const AGENT_CAPTURE_LIMIT: usize = 16 * 1024 * 1024;

/// Older agents (before QEMU's fix to `qmp_guest_exec_status`) send `*-truncated` only when output was
/// cut, with the value left `false`; newer ones send it whenever there is output, with the true value.
/// So `true` means cut, and a present `false` means cut only when the stream reached the capture limit.
fn truncated(object: &Map<String, Value>, key: &str, stream: Option<&GuestOutput>) -> bool {
    match object.get(key) {
        None | Some(Value::Null) => false,
        Some(value) => {
            flex::bool_of(value).unwrap_or(true)
                || stream.is_some_and(|s| s.bytes >= AGENT_CAPTURE_LIMIT)
        }
    }
}

/// `GET /nodes/{node}/tasks/{upid}/status`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TaskStatus {
    pub status: String,
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub exitstatus: Option<String>,
}

/// One line of `GET /nodes/{node}/tasks/{upid}/log`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TaskLogLine {
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub t: Option<String>,
}

/// One entry of `GET /nodes/{node}/storage`: a storage as the node sees it (only the storages the
/// token may audit are listed).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NodeStorage {
    pub storage: String,
    #[serde(rename = "type", deserialize_with = "flex::opt_string", default)]
    pub kind: Option<String>,
    /// Comma-separated content types (`images,rootdir`, `iso,vztmpl`…).
    #[serde(deserialize_with = "flex::opt_string", default)]
    pub content: Option<String>,
    /// Whether storage.cfg enables it (absent on old PVE: treated as enabled).
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub enabled: Option<bool>,
    /// Whether it is online on this node.
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub active: Option<bool>,
    /// Free bytes.
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub avail: Option<u64>,
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub total: Option<u64>,
}

impl NodeStorage {
    /// The content types, split.
    pub fn content_types(&self) -> Vec<String> {
        self.content
            .as_deref()
            .unwrap_or_default()
            .split([',', ';', ' '])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Whether it may hold content type `content`.
    pub fn offers(&self, content: &str) -> bool {
        self.content_types().iter().any(|c| c == content)
    }
}

/// One entry of `GET /nodes/{node}/network`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NodeInterface {
    pub iface: String,
    /// Set (1) only for interfaces that are up.
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub active: Option<bool>,
}

/// One entry of `GET /nodes/{node}/storage/{storage}/content`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StorageVolume {
    pub volid: String,
    /// Bytes (a disk image's virtual size).
    #[serde(deserialize_with = "flex::opt_u64", default)]
    pub size: Option<u64>,
}

/// The entries of a list answer that have the shape `T`; `None` when the answer is not a list.
/// Entries of another shape are skipped: one odd row must not hide the rest.
pub fn list_of<T: for<'de> Deserialize<'de>>(data: &Value) -> Option<Vec<T>> {
    Some(data.as_array()?.iter().filter_map(parse).collect())
}

/// Parses a PVE `data` value into `T`; `None` when the shape does not fit.
pub fn parse<T: for<'de> Deserialize<'de>>(data: &Value) -> Option<T> {
    T::deserialize(data).ok()
}

/// `GET …/migrate`: VMs spell the keys with `_` (`allowed_nodes`), containers with `-`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MigratePreconditions {
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub running: Option<bool>,
    #[serde(alias = "allowed-nodes", default)]
    pub allowed_nodes: Vec<String>,
    #[serde(alias = "not-allowed-nodes", default)]
    pub not_allowed_nodes: Map<String, Value>,
    #[serde(default)]
    pub local_disks: Vec<LocalDisk>,
    #[serde(default)]
    pub local_resources: Vec<String>,
}

/// One entry of `local_disks`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LocalDisk {
    pub volid: String,
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub cdrom: Option<bool>,
    #[serde(deserialize_with = "flex::opt_bool", default)]
    pub is_unused: Option<bool>,
}

impl MigratePreconditions {
    /// Why PVE does not allow `node`, in its terms, if it says so.
    pub fn not_allowed(&self, node: &str) -> Option<String> {
        let why = self.not_allowed_nodes.get(node)?;
        let list = |key: &str| -> Vec<String> {
            why.get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|i| match i {
                            Value::Object(o) => {
                                let sid =
                                    o.get("sid").and_then(flex::string_of).unwrap_or_default();
                                match o.get("cause").and_then(flex::string_of) {
                                    Some(cause) => format!("{sid} ({cause})"),
                                    None => sid,
                                }
                            }
                            other => flex::string_of(other).unwrap_or_else(|| other.to_string()),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut reasons = Vec::new();
        for (key, what) in [
            ("unavailable_storages", "storages not available there"),
            ("unavailable-resources", "mapped devices missing there"),
            ("blocking-ha-resources", "HA resources blocking it"),
        ] {
            let items = list(key);
            if !items.is_empty() {
                reasons.push(format!("{what}: {}", items.join(", ")));
            }
        }
        Some(match reasons.is_empty() {
            true => format!("{why}"),
            false => reasons.join("; "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_container_limited_by_cpulimit_reports_fractional_cpus() {
        let s: GuestStatus = parse(&json!({"status": "running", "cpus": 0.5})).unwrap();
        assert_eq!(s.cpus, Some(0.5));
    }

    #[test]
    fn status_current_reads_loose_types() {
        let s: GuestStatus = parse(
            &json!({"status": "running", "qmpstatus": "paused", "cpus": "2",
            "ha": {"managed": 1, "state": "started"}, "agent": 1, "mem": 1024.0}),
        )
        .unwrap();
        assert_eq!(s.qmpstatus.as_deref(), Some("paused"));
        assert_eq!(s.cpus, Some(2.0));
        assert_eq!(s.mem, Some(1024));
        assert_eq!(s.ha.unwrap().managed, Some(true));
    }

    #[test]
    fn status_current_without_status_is_refused() {
        assert!(parse::<GuestStatus>(&json!({"qmpstatus": "running"})).is_none());
    }

    #[test]
    fn only_known_states_are_observations() {
        for status in [
            json!("unknown"),
            json!(""),
            json!("Running"),
            json!(1),
            json!(null),
        ] {
            assert!(
                parse::<GuestStatus>(&json!({ "status": status })).is_none(),
                "{status}"
            );
        }
        for qmp in [json!("unknown"), json!(""), json!(7)] {
            let answer = json!({"status": "running", "qmpstatus": qmp});
            assert!(parse::<GuestStatus>(&answer).is_none(), "{qmp}");
        }
        let error = GuestStatus::deserialize(&json!({"status": "unknown"})).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("status \"unknown\" is not one of PVE's states"),
            "{error}"
        );
        assert!(
            parse::<GuestStatus>(&json!({"status": "running", "qmpstatus": "prelaunch"})).is_some()
        );
    }

    #[test]
    fn signalled_exec_has_no_exit_code() {
        let s = ExecStatus::from_value(&json!({"exited": 1, "signal": 9})).unwrap();
        assert!(s.exited);
        assert_eq!(s.signal, Some(9));
        assert_eq!(s.exit_code, None);
    }

    #[test]
    fn running_exec_is_not_exited() {
        assert!(
            !ExecStatus::from_value(&json!({"exited": 0}))
                .unwrap()
                .exited
        );
        assert!(ExecStatus::from_value(&json!({"pid": 3})).is_none());
    }

    #[test]
    fn truncation_flags_read_both_agent_generations() {
        let new_true =
            ExecStatus::from_value(&json!({"exited": 1, "exitcode": 0, "out-truncated": 1}))
                .unwrap();
        assert!(new_true.stdout_truncated);
        let new_false =
            ExecStatus::from_value(&json!({"exited": 1, "exitcode": 0, "out-truncated": 0}))
                .unwrap();
        assert!(!new_false.stdout_truncated);
        let absent = ExecStatus::from_value(&json!({"exited": 1, "exitcode": 0})).unwrap();
        assert!(!absent.stdout_truncated);
        let full = "x".repeat(AGENT_CAPTURE_LIMIT);
        let old_agent = ExecStatus::from_value(
            &json!({"exited": 1, "exitcode": 0, "out-data": full, "out-truncated": 0}),
        )
        .unwrap();
        assert!(old_agent.stdout_truncated);
    }
}
