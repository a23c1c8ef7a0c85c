//! Typed PVE answers. Parsing is tolerant where PVE is loose (0/1 booleans, numbers as strings) and
//! strict where the verdict depends on it (a guest's `status`, an exec's `exited`).

use super::exec_data::{output_from_pve, GuestOutput};
use super::flex;
use super::read::{object, FromJson};
use crate::quote::Joined;
use serde_json::{Map, Value};

/// One entry of `GET /cluster/resources?type=vm`: what locating a guest and claiming a VMID read
/// of it (its other fields are read by no one: issue 32).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterGuest {
    pub vmid: Option<u64>,
    pub kind: String,
    pub node: String,
    pub name: Option<String>,
}

/// HA state of a guest as `status/current` reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HaStatus {
    pub managed: Option<bool>,
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
#[derive(Debug, Clone, PartialEq)]
pub struct GuestStatus {
    /// `running` or `stopped`; required, because the verdict rests on it.
    pub status: String,
    pub qmpstatus: Option<String>,
    pub name: Option<String>,
    pub tags: Option<String>,
    pub lock: Option<String>,
    pub ha: Option<HaStatus>,
    pub agent: Option<bool>,
    pub template: Option<bool>,
    pub cpu: Option<f64>,
    /// A number, not a count: a container limited by `cpulimit` without `cores` reports the
    /// fraction (`0.5`), pve-container vmstatus.
    pub cpus: Option<f64>,
    pub mem: Option<u64>,
    pub maxmem: Option<u64>,
    pub disk: Option<u64>,
    pub maxdisk: Option<u64>,
    pub netin: Option<u64>,
    pub netout: Option<u64>,
    pub uptime: Option<u64>,
    /// The QEMU process (a container's init) while running: a new one means a new boot.
    pub pid: Option<u64>,
}

/// `POST …/agent/exec` → the pid of the started command.
#[derive(Debug, Clone, PartialEq)]
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
    // Inlined into its one caller (issue 32).
    #[inline(always)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStatus {
    pub status: String,
    pub exitstatus: Option<String>,
}

/// One line of `GET /nodes/{node}/tasks/{upid}/log`, read as a plain object: the reader of a list
/// of objects is shared with every other such read, where a type of its own was one more reader
/// (issue 32).
pub type TaskLogLine = Map<String, Value>;

/// A log line's text (`t`), read tolerantly.
pub fn log_text(line: &TaskLogLine) -> Option<String> {
    super::read::Obj(line).opt_string("t")
}

/// One entry of `GET /nodes/{node}/storage`: a storage as the node sees it (only the storages the
/// token may audit are listed).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStorage {
    pub storage: String,
    pub kind: Option<String>,
    /// Comma-separated content types (`images,rootdir`, `iso,vztmpl`…).
    pub content: Option<String>,
    /// Whether storage.cfg enables it (absent on old PVE: treated as enabled).
    pub enabled: Option<bool>,
    /// Whether it is online on this node.
    pub active: Option<bool>,
    /// Free bytes.
    pub avail: Option<u64>,
}

impl NodeStorage {
    /// The content types, split; borrowed from the listing, not copied.
    pub fn content_types(&self) -> Vec<&str> {
        let mut types = Vec::new();
        for content in self
            .content
            .as_deref()
            .unwrap_or_default()
            .split([',', ';', ' '])
        {
            let content = content.trim();
            if !content.is_empty() {
                types.push(content);
            }
        }
        types
    }

    /// Whether it may hold content type `content`.
    pub fn offers(&self, content: &str) -> bool {
        self.content_types().contains(&content)
    }
}

/// One entry of `GET /nodes/{node}/storage/{storage}/content`.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageVolume {
    pub volid: String,
    /// Bytes (a disk image's virtual size).
    pub size: Option<u64>,
}

/// The entries of a list answer that have the shape `T`; `None` when the answer is not a list.
/// Entries of another shape are skipped: one odd row must not hide the rest. Inlined into its one
/// caller per `T` (`guest::storage::listed`, issue 32).
#[inline(always)]
pub fn list_of<T: FromJson>(data: &Value) -> Option<Vec<T>> {
    // A loop for the reason `Vec<T>: FromJson` is one (pve::read); a push, not an `extend` from
    // an `Option`, which brings its own extending code for every `T`.
    let mut read = Vec::new();
    for item in data.as_array()? {
        if let Ok(row) = T::from_json(item) {
            read.push(row);
        }
    }
    Some(read)
}

/// Parses a PVE `data` value into `T`; `None` when the shape does not fit. Inlined: a wrapper of
/// one call (issue 32).
#[inline(always)]
pub fn parse<T: FromJson>(data: &Value) -> Option<T> {
    T::from_json(data).ok()
}

/// `GET …/migrate`: VMs spell the keys with `_` (`allowed_nodes`), containers with `-`.
#[derive(Debug, Clone, PartialEq)]
pub struct MigratePreconditions {
    pub running: Option<bool>,
    pub allowed_nodes: Vec<String>,
    pub not_allowed_nodes: Map<String, Value>,
    pub local_disks: Vec<LocalDisk>,
    pub local_resources: Vec<String>,
}

/// One entry of `local_disks`.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalDisk {
    pub volid: String,
    pub cdrom: Option<bool>,
    pub is_unused: Option<bool>,
}

impl MigratePreconditions {
    /// Why PVE does not allow `node`, in its terms, if it says so.
    // Inlined into its one caller (issue 32).
    #[inline(always)]
    pub fn not_allowed(&self, node: &str) -> Option<String> {
        let why = self.not_allowed_nodes.get(node)?;
        let list = |key: &str| -> Vec<String> {
            let mut list = Vec::new();
            for item in why.get(key).and_then(Value::as_array).into_iter().flatten() {
                list.push(match item {
                    Value::Object(o) => {
                        let sid = o.get("sid").and_then(flex::string_of).unwrap_or_default();
                        match o.get("cause").and_then(flex::string_of) {
                            Some(cause) => format!("{sid} ({cause})"),
                            None => sid,
                        }
                    }
                    other => flex::string_of(other).unwrap_or_else(|| crate::quote::json(other)),
                });
            }
            list
        };
        let mut reasons = Vec::new();
        // Borrowed, so the table is read in place, not built on the stack at each call (issue 32).
        for &(key, what) in &[
            ("unavailable_storages", "storages not available there"),
            ("unavailable-resources", "mapped devices missing there"),
            ("blocking-ha-resources", "HA resources blocking it"),
        ] {
            let items = list(key);
            if !items.is_empty() {
                reasons.push(format!("{what}: {}", items.joined(", ")));
            }
        }
        Some(match reasons.is_empty() {
            true => crate::quote::json(why),
            false => reasons.joined("; "),
        })
    }
}

// The readers with one caller each (a list's loop, `client::shaped`, `Obj::required`) are
// `#[inline(always)]`: one function per shape read, not two moving the result between them
// (issue 32).
impl FromJson for ClusterGuest {
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        Ok(ClusterGuest {
            vmid: o.opt_u64("vmid"),
            kind: o.or_default("type")?,
            node: o.or_default("node")?,
            name: o.opt_string("name"),
        })
    }
}

impl FromJson for HaStatus {
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        Ok(HaStatus {
            managed: o.opt_bool("managed"),
            state: o.opt_string("state"),
        })
    }
}

impl FromJson for GuestStatus {
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        let status = match o.0.get("status") {
            Some(Value::String(s)) if KNOWN_STATUSES.contains(&s.as_str()) => s.clone(),
            Some(other) => return Err(format!(
                "status {} is not one of PVE's states (running, stopped): the state was not determined",
                crate::quote::value(other)
            )),
            None => return Err("missing field `status`".to_string()),
        };
        let qmpstatus = match o.0.get("qmpstatus") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if KNOWN_QMP_STATUSES.contains(&s.as_str()) => Some(s.clone()),
            Some(other) => {
                return Err(format!(
                    "qmpstatus {} is not one of QEMU's run states: the state was not determined",
                    crate::quote::value(other)
                ))
            }
        };
        let ha = match o.0.get("ha") {
            None | Some(Value::Null) => None,
            Some(ha) => Some(HaStatus::from_json(ha).map_err(|e| format!("`ha`: {e}"))?),
        };
        Ok(GuestStatus {
            status,
            qmpstatus,
            name: o.opt_string("name"),
            tags: o.opt_string("tags"),
            lock: o.opt_string("lock"),
            ha,
            agent: o.opt_bool("agent"),
            template: o.opt_bool("template"),
            cpu: o.opt("cpu", flex::f64_of),
            cpus: o.opt("cpus", flex::f64_of),
            mem: o.opt_u64("mem"),
            maxmem: o.opt_u64("maxmem"),
            disk: o.opt_u64("disk"),
            maxdisk: o.opt_u64("maxdisk"),
            netin: o.opt_u64("netin"),
            netout: o.opt_u64("netout"),
            uptime: o.opt_u64("uptime"),
            pid: o.opt_u64("pid"),
        })
    }
}

impl FromJson for ExecStarted {
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        match object(value)?.0.get("pid") {
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(ExecStarted {
                pid: n.as_i64().ok_or("`pid` out of range")?,
            }),
            Some(other) => Err(format!(
                "`pid`: expected an integer, got {}",
                crate::quote::value(other)
            )),
            None => Err("missing field `pid`".to_string()),
        }
    }
}

impl FromJson for TaskStatus {
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        Ok(TaskStatus {
            status: o.required("status")?,
            exitstatus: o.opt_string("exitstatus"),
        })
    }
}

impl FromJson for NodeStorage {
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        Ok(NodeStorage {
            storage: o.required("storage")?,
            kind: o.opt_string("type"),
            content: o.opt_string("content"),
            enabled: o.opt_bool("enabled"),
            active: o.opt_bool("active"),
            avail: o.opt_u64("avail"),
        })
    }
}

impl FromJson for StorageVolume {
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        Ok(StorageVolume {
            volid: o.required("volid")?,
            size: o.opt_u64("size"),
        })
    }
}

impl FromJson for MigratePreconditions {
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        Ok(MigratePreconditions {
            running: o.opt_bool("running"),
            allowed_nodes: o.either(["allowed_nodes", "allowed-nodes"])?,
            not_allowed_nodes: o.either(["not_allowed_nodes", "not-allowed-nodes"])?,
            local_disks: o.or_default("local_disks")?,
            local_resources: o.or_default("local_resources")?,
        })
    }
}

impl FromJson for LocalDisk {
    #[inline(always)]
    fn from_json(value: &Value) -> Result<Self, String> {
        let o = object(value)?;
        Ok(LocalDisk {
            volid: o.required("volid")?,
            cdrom: o.opt_bool("cdrom"),
            is_unused: o.opt_bool("is_unused"),
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
        let error = GuestStatus::from_json(&json!({"status": "unknown"})).unwrap_err();
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
