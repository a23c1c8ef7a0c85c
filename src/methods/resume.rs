//! `resume`: a paused or suspended guest running again, successful only when `status/current`
//! shows it running (a VM: `qmpstatus: running`, its `suspended` lock gone). A VM suspended to disk
//! starts from its saved state; a stopped VM is refused as PVE refuses it. The sequence is
//! `guest::power::change_power`'s.

use crate::args::{ArgError, Fields};
use crate::guest::power::Change;
use crate::pve::endpoints::GuestKind;

/// The arguments of `resume` after the guest (none: it has no gate to override), as
/// `change_power` runs them.
pub fn change(_: GuestKind, _: &Fields) -> Result<(bool, Change), ArgError> {
    Ok((false, Change::Resume))
}

#[cfg(test)]
mod tests {
    use crate::outcome::Outcome;
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const STATUS: &str = "GET /nodes/pve1/qemu/100/status/current";
    const RESUME: &str = "POST /nodes/pve1/qemu/100/status/resume";
    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmresume:100:root@pam!t:";

    /// VM 100 on pve1 (untagged: resume has no gate) whose status reads answer `states` in turn,
    /// and whose resume task ends OK.
    fn resume(states: &[Value]) -> (ScriptedHost, Outcome) {
        let host = ScriptedHost::new();
        host.on(STATUS, states.iter().cloned().map(Answer::Data));
        host.data(RESUME, json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let args = json!({"vmid": 100, "taskTimeoutSec": 10});
        let outcome = run_method(&host, "qemu", "resume", args);
        (host, outcome)
    }

    fn posted(host: &ScriptedHost) -> Vec<String> {
        let routes = host.routes_called();
        routes
            .into_iter()
            .filter(|r| r.starts_with("POST"))
            .collect()
    }

    #[test]
    fn a_paused_vm_resumes_when_qmpstatus_shows_running() {
        let (host, outcome) = resume(&[
            json!({"status": "running", "qmpstatus": "paused"}),
            json!({"status": "running", "qmpstatus": "running"}),
        ]);
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(posted(&host), vec![RESUME]);
        assert_eq!(outcome.writes[0].data["qmpStatus"], "running");
    }

    #[test]
    fn a_vm_suspended_to_disk_resumes_once_its_lock_is_gone() {
        let (host, outcome) = resume(&[
            json!({"status": "stopped", "qmpstatus": "stopped", "lock": "suspended"}),
            // qemu-server vm_start: QEMU runs from the saved state before the lock is dropped.
            json!({"status": "running", "qmpstatus": "running", "lock": "suspended"}),
            json!({"status": "running", "qmpstatus": "running"}),
        ]);
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(posted(&host), vec![RESUME]);
        assert_eq!(outcome.writes[0].data.get("lock"), None);
        assert_eq!(
            host.routes_called().iter().filter(|r| *r == STATUS).count(),
            3
        );
    }

    #[test]
    fn a_stopped_vm_is_refused_as_pve_refuses_it() {
        let (host, outcome) = resume(&[json!({"status": "stopped", "qmpstatus": "stopped"})]);
        let message = failure_of(&outcome);
        assert!(message.contains("VM 100 not running"), "{message}");
        assert!(message.contains("start it"), "{message}");
        assert!(posted(&host).is_empty());
    }

    #[test]
    fn a_running_vm_needs_nothing_sent() {
        let (host, outcome) = resume(&[json!({"status": "running", "qmpstatus": "running"})]);
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(posted(&host).is_empty());
    }

    #[test]
    fn a_resume_task_that_ends_ok_while_the_vm_stays_paused_fails() {
        let (_, outcome) = resume(&[json!({"status": "running", "qmpstatus": "paused"})]);
        let message = failure_of(&outcome);
        assert!(
            message.contains("did not reach status running with qmpstatus running"),
            "{message}"
        );
    }
}
