//! Builders for every PVE API call the package makes. Paths live here and nowhere else.

use super::request::{PveRequest, Repeat, Verb};
use super::upid::Upid;

/// The two guest types; they differ in path segment and config file location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKind {
    Qemu,
    Lxc,
}

impl GuestKind {
    /// The API path segment and `/cluster/resources` type: `qemu` or `lxc`.
    pub fn segment(self) -> &'static str {
        match self {
            GuestKind::Qemu => "qemu",
            GuestKind::Lxc => "lxc",
        }
    }

    /// The prefix of record instance names: `vm` or `ct`.
    pub fn record_prefix(self) -> &'static str {
        match self {
            GuestKind::Qemu => "vm",
            GuestKind::Lxc => "ct",
        }
    }

    /// How users call this kind of guest in messages.
    pub fn noun(self) -> &'static str {
        match self {
            GuestKind::Qemu => "VM",
            GuestKind::Lxc => "container",
        }
    }
}

/// `GET /version`.
pub fn version() -> PveRequest {
    PveRequest::get(&["version"])
}

/// `GET /cluster/resources?type=vm`: every guest of the cluster with its node (qemu and lxc).
pub fn cluster_guests() -> PveRequest {
    PveRequest::get(&["cluster", "resources"]).param("type", "vm")
}

/// `GET /cluster/nextid?vmid=N`: answers 400 "VM N already exists" when the id is taken, for any user.
pub fn next_id(vmid: u32) -> PveRequest {
    PveRequest::get(&["cluster", "nextid"]).param("vmid", vmid.to_string())
}

/// `GET /nodes/{node}/{kind}?full=1`: every guest of one node with its status, in one call.
pub fn node_guests(node: &str, kind: GuestKind) -> PveRequest {
    PveRequest::get(&["nodes", node, kind.segment()]).param("full", "1")
}

/// `GET /nodes/{node}/{kind}/{vmid}/status/current`.
pub fn guest_status(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    PveRequest::get(&[
        "nodes",
        node,
        kind.segment(),
        &vmid.to_string(),
        "status",
        "current",
    ])
}

/// `GET /nodes/{node}/{kind}/{vmid}/config` (the current config).
pub fn guest_config(node: &str, kind: GuestKind, vmid: u32) -> PveRequest {
    PveRequest::get(&["nodes", node, kind.segment(), &vmid.to_string(), "config"])
}

/// `POST /nodes/{node}/qemu/{vmid}/agent/exec`: starts `argv` in the guest. Never re-sent: a timed-out
/// call may still have started the command.
pub fn agent_exec(node: &str, vmid: u32, argv: &[String], input: Option<&str>) -> PveRequest {
    let mut request = PveRequest::new(
        Verb::Create,
        &["nodes", node, "qemu", &vmid.to_string(), "agent", "exec"],
        Repeat::Never,
    );
    for arg in argv {
        request = request.param("command", arg.as_str());
    }
    if let Some(input) = input {
        request = request.param("input-data", input);
    }
    request
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/exec-status?pid=N`: the final answer can be read only once,
/// so this read is never repeated blindly.
pub fn agent_exec_status(node: &str, vmid: u32, pid: i64) -> PveRequest {
    PveRequest::new(
        Verb::Get,
        &[
            "nodes",
            node,
            "qemu",
            &vmid.to_string(),
            "agent",
            "exec-status",
        ],
        Repeat::Never,
    )
    .param("pid", pid.to_string())
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces`.
pub fn agent_interfaces(node: &str, vmid: u32) -> PveRequest {
    PveRequest::get(&[
        "nodes",
        node,
        "qemu",
        &vmid.to_string(),
        "agent",
        "network-get-interfaces",
    ])
}

/// `GET /nodes/{upid.node}/tasks/{upid}/status`: on the node that runs the task.
pub fn task_status(upid: &Upid) -> PveRequest {
    PveRequest::get(&["nodes", &upid.node, "tasks", upid.as_str(), "status"])
}

/// `GET /nodes/{upid.node}/tasks/{upid}/log`.
pub fn task_log(upid: &Upid) -> PveRequest {
    PveRequest::get(&["nodes", &upid.node, "tasks", upid.as_str(), "log"]).param("limit", "500")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_repeats_the_command_key_per_argv_item() {
        let r = agent_exec(
            "pve1",
            100,
            &["bash".into(), "-c".into(), "exit 42".into()],
            None,
        );
        assert_eq!(r.display_path(), "/nodes/pve1/qemu/100/agent/exec");
        assert_eq!(
            r.params,
            vec![
                ("command".into(), "bash".into()),
                ("command".into(), "-c".into()),
                ("command".into(), "exit 42".into())
            ]
        );
        assert_eq!(r.repeat, Repeat::Never);
    }

    #[test]
    fn task_status_goes_to_the_node_in_the_upid() {
        let upid =
            Upid::parse("UPID:pve3:0000AAAA:0000BBBB:6571E3A1:qmstart:100:root@pam:").unwrap();
        assert_eq!(
            task_status(&upid).display_path(),
            format!("/nodes/pve3/tasks/{upid}/status")
        );
    }
}
