//! The power states a method must observe before it may succeed, as `status/current` shows them:
//! what `guest::power`'s changes, `guest::reboot`'s proof and the waits of other methods judge.

use super::settle::{lock_of, HIBERNATED};
use crate::pve::endpoints::GuestKind;
use crate::pve::responses::GuestStatus;

/// The power state a method must observe before it may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Running,
    Stopped,
    /// A VM's QEMU paused: what a suspend to RAM leaves (qemu-server `PVE/QemuServer/RunState.pm`
    /// vm_suspend sends QMP `stop`).
    Paused,
    /// A VM suspended to disk: stopped, its state saved, locked [`HIBERNATED`] until resumed.
    Hibernated,
}

impl Target {
    /// Whether a status shows this target.
    pub fn reached(self, kind: GuestKind, s: &GuestStatus) -> bool {
        let hibernated = lock_of(s) == Some(HIBERNATED);
        match self {
            Target::Stopped => s.status == "stopped",
            // A QEMU process can exist paused or in prelaunch: only qmpstatus says it really runs. A
            // VM resumed from disk keeps its lock until PVE has removed the saved state.
            Target::Running => {
                s.status == "running"
                    && (kind == GuestKind::Lxc || s.qmpstatus.as_deref() == Some("running"))
                    && !hibernated
            }
            Target::Paused => s.status == "running" && s.qmpstatus.as_deref() == Some("paused"),
            Target::Hibernated => s.status == "stopped" && hibernated,
        }
    }

    /// The target as messages name it.
    pub fn describe(self, kind: GuestKind) -> &'static str {
        match (self, kind) {
            (Target::Stopped, _) => "status stopped",
            (Target::Running, GuestKind::Qemu) => "status running with qmpstatus running",
            (Target::Running, GuestKind::Lxc) => "status running",
            (Target::Paused, _) => "status running with qmpstatus paused",
            (Target::Hibernated, _) => "status stopped with lock suspended",
        }
    }

    /// The state in a summary: `VM 100 on node pve1 is <state>`.
    pub fn state(self) -> &'static str {
        match self {
            Target::Running => "running",
            Target::Stopped => "stopped",
            Target::Paused => "paused (suspended to RAM)",
            Target::Hibernated => "suspended to disk (its state saved, lock suspended)",
        }
    }
}
