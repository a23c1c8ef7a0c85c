//! The one table of the methods each model offers: the name a model gives a method and the logic
//! behind it. Dispatch routes by it, preflight asks about every name of it, and the permission
//! needs are held to it (a test fails when a method has no entry there).

use crate::pve::endpoints::GuestKind;

/// The check names, as the wrapper passes them (`check:<name>`).
pub const CHECK_TRANSPORT_REACHABLE: &str = "check:transport-reachable";
/// The `permissions` check: what the method about to run needs, asked of PVE.
pub const CHECK_PERMISSIONS: &str = "check:permissions";

/// The methods the core implements. Each model's names map onto these through [`TABLE`];
/// dispatch matches on them exhaustively, so none is left without logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Lookup,
    GetConfig,
    SetConfig,
    Start,
    Stop,
    Shutdown,
    Delete,
    Sync,
    GuestExec,
    ContainerExec,
    Migrate,
    FileWrite,
    FileRead,
    Clone,
    Create,
    Resize,
    NodeStatus,
    NodeConfig,
    Snapshot,
    ListSnapshots,
    Rollback,
    DeleteSnapshot,
    Template,
    Reboot,
    CloudInit,
    WaitReady,
    DownloadUrl,
    VmCreate,
    CheckReachable,
    Backup,
    ListBackups,
    DeleteBackup,
    Restore,
    Preflight,
    CheckPermissions,
    Suspend,
    Resume,
    WaitTask,
    SetNic,
    RemoveNic,
    MoveDisk,
    AttachDisk,
    DetachDisk,
    FirewallOptions,
    FirewallRules,
    FirewallIpset,
    FirewallAlias,
    HaResource,
    HaStatus,
    HaRule,
}

/// Which models offer a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Models {
    /// Written once for both kinds: what differs is data on `GuestKind`.
    Both,
    Qemu,
    Lxc,
}

impl Models {
    fn include(self, kind: GuestKind) -> bool {
        match self {
            Models::Both => true,
            Models::Qemu => kind == GuestKind::Qemu,
            Models::Lxc => kind == GuestKind::Lxc,
        }
    }
}

/// Every name, in the order preflight reports them; the checks last.
const TABLE: &[(Models, &str, Method)] = &[
    (Models::Both, "lookup", Method::Lookup),
    (Models::Both, "sync", Method::Sync),
    (Models::Both, "getConfig", Method::GetConfig),
    (Models::Both, "setConfig", Method::SetConfig),
    (Models::Both, "setNic", Method::SetNic),
    (Models::Both, "removeNic", Method::RemoveNic),
    (Models::Both, "start", Method::Start),
    (Models::Both, "stop", Method::Stop),
    (Models::Both, "shutdown", Method::Shutdown),
    (Models::Both, "reboot", Method::Reboot),
    (Models::Both, "suspend", Method::Suspend),
    (Models::Both, "resume", Method::Resume),
    (Models::Both, "delete", Method::Delete),
    // A VM is cloned from a template; a container is created from one.
    (Models::Qemu, "clone", Method::Clone),
    (Models::Lxc, "create", Method::Create),
    (Models::Qemu, "create", Method::VmCreate),
    // PVE generates cloud-init drives for VMs only.
    (Models::Qemu, "cloudInit", Method::CloudInit),
    (Models::Qemu, "waitReady", Method::WaitReady),
    (Models::Qemu, "resizeDisk", Method::Resize),
    (Models::Lxc, "resize", Method::Resize),
    (Models::Both, "moveDisk", Method::MoveDisk),
    (Models::Both, "attachDisk", Method::AttachDisk),
    (Models::Both, "detachDisk", Method::DetachDisk),
    (Models::Both, "firewallOptions", Method::FirewallOptions),
    (Models::Both, "firewallRules", Method::FirewallRules),
    (Models::Both, "firewallIpset", Method::FirewallIpset),
    (Models::Both, "firewallAlias", Method::FirewallAlias),
    (Models::Both, "haResource", Method::HaResource),
    (Models::Both, "haStatus", Method::HaStatus),
    (Models::Both, "haRule", Method::HaRule),
    (Models::Both, "convertToTemplate", Method::Template),
    (Models::Both, "migrate", Method::Migrate),
    (Models::Both, "snapshot", Method::Snapshot),
    (Models::Both, "rollback", Method::Rollback),
    (Models::Both, "deleteSnapshot", Method::DeleteSnapshot),
    (Models::Both, "listSnapshots", Method::ListSnapshots),
    // A VM's commands go through its agent; a container has none: `pct exec` on the node, over ssh.
    (Models::Qemu, "guestExec", Method::GuestExec),
    (Models::Lxc, "guestExec", Method::ContainerExec),
    (Models::Qemu, "fileWrite", Method::FileWrite),
    (Models::Qemu, "fileRead", Method::FileRead),
    (Models::Both, "nodeStatus", Method::NodeStatus),
    (Models::Both, "nodeConfig", Method::NodeConfig),
    (Models::Both, "downloadUrl", Method::DownloadUrl),
    (Models::Both, "backup", Method::Backup),
    (Models::Both, "listBackups", Method::ListBackups),
    (Models::Both, "deleteBackup", Method::DeleteBackup),
    (Models::Both, "restore", Method::Restore),
    (Models::Both, "waitTask", Method::WaitTask),
    (Models::Both, "preflight", Method::Preflight),
    (
        Models::Both,
        CHECK_TRANSPORT_REACHABLE,
        Method::CheckReachable,
    ),
    (Models::Both, CHECK_PERMISSIONS, Method::CheckPermissions),
];

/// The method a model calls `name`; `None` when that model has no such method.
pub fn method_of(kind: GuestKind, name: &str) -> Option<Method> {
    TABLE
        .iter()
        .find(|(models, n, _)| models.include(kind) && *n == name)
        .map(|(_, _, method)| *method)
}

/// Whether this build leaves `method` out: its name is in the comma-separated
/// `PROXMOX_CORE_OMIT` the core was built with (only the size bench sets it, to weigh a method).
pub const fn omitted(method: Method) -> bool {
    let Some(list) = option_env!("PROXMOX_CORE_OMIT") else {
        return false;
    };
    let list = list.as_bytes();
    let mut row = 0;
    while row < TABLE.len() {
        let (_, name, listed) = TABLE[row];
        if listed as u8 == method as u8 && in_list(list, name.as_bytes()) {
            return true;
        }
        row += 1;
    }
    false
}

/// Whether `name` is one of the comma-separated items of `list`.
const fn in_list(list: &[u8], name: &[u8]) -> bool {
    let mut start = 0;
    while start <= list.len() {
        let mut end = start;
        while end < list.len() && list[end] != b',' {
            end += 1;
        }
        if end - start == name.len() {
            let mut i = 0;
            while i < name.len() && list[start + i] == name[i] {
                i += 1;
            }
            if i == name.len() {
                return true;
            }
        }
        start = end + 1;
    }
    false
}

/// Every method name the model offers to users (its checks left out), in the table's order.
pub fn method_names(kind: GuestKind) -> impl Iterator<Item = &'static str> {
    TABLE
        .iter()
        .filter(move |(models, name, _)| models.include(kind) && !name.starts_with("check:"))
        .map(|(_, name, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_names_a_method_once() {
        for kind in [GuestKind::Qemu, GuestKind::Lxc] {
            let names: Vec<_> = method_names(kind).collect();
            let mut unique = names.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(names.len(), unique.len(), "{kind:?}: {names:?}");
        }
    }

    #[test]
    fn a_name_maps_to_the_logic_of_its_model() {
        assert_eq!(
            method_of(GuestKind::Qemu, "guestExec"),
            Some(Method::GuestExec)
        );
        assert_eq!(
            method_of(GuestKind::Lxc, "guestExec"),
            Some(Method::ContainerExec)
        );
        assert_eq!(method_of(GuestKind::Qemu, "create"), Some(Method::VmCreate));
        assert_eq!(method_of(GuestKind::Lxc, "create"), Some(Method::Create));
        assert_eq!(method_of(GuestKind::Lxc, "clone"), None);
        assert_eq!(method_of(GuestKind::Qemu, "resize"), None);
        assert_eq!(method_of(GuestKind::Qemu, "nope"), None);
    }

    #[test]
    fn checks_are_methods_but_not_names_users_call() {
        assert_eq!(
            method_of(GuestKind::Qemu, CHECK_PERMISSIONS),
            Some(Method::CheckPermissions)
        );
        assert!(method_names(GuestKind::Lxc).all(|n| !n.starts_with("check:")));
    }
}
