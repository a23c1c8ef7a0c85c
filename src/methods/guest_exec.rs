//! `guestExec` of a VM: runs a command through the QEMU guest agent and succeeds only when it exited
//! with an accepted code. The `vm-<vmid>-exec` record is produced whatever happened, and written
//! before the verdict is raised (guest/exec.rs).

use crate::guest::agent_exec::{exec_pid, exec_request, follow};
use crate::guest::exec::{conclude, ExecArgs, Observed};
use crate::guest::locate::{absent_message, send_where_it_lives, Located, Placed};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::run::Run;
use serde_json::Value;

/// Runs `guestExec`.
pub async fn guest_exec<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match ExecArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let started = run.host.now_ms();
    // Sent where the VM is expected; a node that answers "not here" refused before running anything.
    let send = |at: &Located| exec_request(at, &args);
    let placed = send_where_it_lives(run, &args.target, &send).await;
    let (located, sent) = match placed {
        Ok(Placed::Done {
            at,
            value: (request, data),
        }) => (at, exec_pid(&request, Ok(data))),
        Ok(Placed::Refused { at, error }) => (at, Err(error)),
        Ok(Placed::Absent { vmid }) => {
            return Failure(absent_message(GuestKind::Qemu, vmid, "")).into()
        }
        Err(failure) => return failure.into(),
    };
    let (pid, outcome, status) = follow(run, &located, &args, sent, None).await;
    let seen = Observed {
        pid,
        outcome,
        status,
        duration_ms: (run.host.now_ms() - started).max(0.0).round() as u64,
    };
    conclude(run, &located, &args, &seen, None)
}
