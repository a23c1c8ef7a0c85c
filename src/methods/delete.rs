//! `delete`: destroys a managed guest and succeeds only when it is confirmed gone from every node.
//!
//! Gates (unless `force`): the `swamp` tag is required, `production`/`protected` refuse. A running
//! guest is stopped first — PVE refuses to destroy a running guest, the gates already allow
//! destroying this one, and its disks go with it, so a hard stop loses nothing a graceful one would
//! keep; the stop is verified like `stop`'s. Only this guest's `vm-<vmid>` record is written:
//! `status: "deleted"` with what was last known of it, or its observed state when the delete failed.
//! A guest already confirmed absent is success (nothing to delete), recorded as `absent`.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::explain::could_not_args;
use crate::guest::evidence::{cut_short, sight_to_remove, Evidence};
use crate::guest::gates;
use crate::guest::locate::next_id_free_by;
use crate::guest::power::transition;
use crate::guest::record::GuestRecord;
use crate::guest::reference::GuestRef;
use crate::guest::settle::seconds;
use crate::guest::target::Target;
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::poll::Pacer;
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex::split_tags;
use crate::record_json::{list, put, set};
use crate::run::{write_value, Run};
use serde_json::Value;

/// The arguments of `delete`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteArgs {
    pub target: GuestRef,
    /// Also `destroy-unreferenced-disks` and removal from backup jobs, HA and replication.
    pub purge: bool,
    /// Overrides the safety gates.
    pub force: bool,
}

/// The fields after the guest, in order (one table walk, issue 32).
const FIELDS: [Spec; 2] = [
    Spec::new("purge", Kind::Flag(true)),
    Spec::new("force", Kind::Flag(false)),
];

impl DeleteArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let [purge, force, ..] = fields.read_table(&FIELDS)?;
        Ok(DeleteArgs {
            target,
            purge: purge.int != 0,
            force: force.int != 0,
        })
    }
}

/// Runs `delete`.
pub async fn delete<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match DeleteArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_remove(run, &args.target, ": nothing to delete").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    // The destroying itself, a labeled block rather than a nested async fn (issue 32).
    let destroyed = 'destroy: {
        or_break!('destroy, ev.pass_gate(run, &gates::DELETE, args.force));
        let label = ev.label(run);
        if !Target::Stopped.reached(run.kind, &ev.status) {
            run.info_args(format_args!(
                "{label} is {}: stopping it first (PVE does not destroy a running guest)",
                ev.status.status
            ));
            let request = endpoints::guest_stop(&ev.at.node, run.kind, ev.at.vmid);
            let stopped = transition(run, &mut ev, &request, "stop", Target::Stopped).await;
            or_break!('destroy, stopped);
        }
        let request = endpoints::guest_delete(&ev.at.node, run.kind, ev.at.vmid, args.purge);
        or_break!('destroy, ev.trail.run(&run.pve(), &request, format_args!("delete {label}"), None, false).await);
        // Polls `GET /cluster/nextid?vmid=N` until PVE says no guest holds the VMID on any node
        // (the cluster's own list of guests, whatever the token may audit, in one request), within
        // what the stop and the delete task left of the method's one budget; `gone_judged` judges
        // each answer.
        let pve = run.pve();
        let deadline = run.budget.deadline(run.host.now_ms());
        let mut pacer = Pacer::until(deadline, pve.poll_cap_ms);
        let mut seen_taken = false;
        let gone = loop {
            let answer = next_id_free_by(&pve, ev.at.vmid, Some(deadline)).await;
            if let Some(gone) = gone_judged(run, &ev, deadline, &mut seen_taken, answer) {
                break gone;
            }
            if pacer.pause(run.host).await.is_err() {
                break Err(still_there(run, &ev));
            }
        };
        or_break!('destroy, gone);
        Ok(format!(
            "{label} was deleted and is confirmed gone from every node"
        ))
    };
    match destroyed {
        Ok(summary) => deleted(run, &ev, summary),
        Err(message) => ev.outcome(run, Err(message)).await,
    }
}

/// One nextid answer of the wait for the guest gone (`deadline`: the budget's end): `Some` verdict
/// when it settles the wait, `None` to ask again; `seen_taken` keeps whether PVE said the VMID is
/// still held.
fn gone_judged<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    deadline: f64,
    seen_taken: &mut bool,
    answer: Result<(), PveError>,
) -> Option<Result<(), String>> {
    let vmid = ev.at.vmid;
    match answer {
        Ok(()) => Some(Ok(())),
        Err(e) if e.kind == ErrorKind::IdTaken => {
            *seen_taken = true;
            None
        }
        // The budget's end cut the check short: the last answer (if any) is what was seen.
        Err(e) if cut_short(run, &e, Some(deadline)) => {
            Some(Err(match *seen_taken {
                true => still_there(run, ev),
                false => format!(
                    "the delete task ended successfully, but the guest's absence could not be confirmed before taskTimeoutSec={} (the method's whole wait) ran out: {e} — check the guest's state (run lookup)",
                    seconds(run.budget.total_ms)
                ),
            }))
        }
        Err(e) => Some(Err(format!(
            "the delete task ended successfully, but the guest's absence could not be confirmed: {}",
            could_not_args(
                format_args!("confirm that VMID {vmid} is gone (GET /cluster/nextid)"),
                &e
            )
            .0
        ))),
    }
}

/// The guest still there when the budget ran out.
fn still_there<H: Host>(run: &Run<'_, H>, ev: &Evidence) -> String {
    format!(
        "the delete task ended successfully, but VMID {} still exists (GET /cluster/nextid says so) when taskTimeoutSec={} (the method's whole wait) ran out — check the task log and the guest's config on node {}",
        ev.at.vmid,
        seconds(run.budget.total_ms),
        ev.at.node
    )
}

/// The `deleted` record: what was last known of the guest, marked gone.
fn deleted<H: Host>(run: &Run<'_, H>, ev: &Evidence, summary: String) -> Outcome {
    // The absent record's fields, then what was last known of the guest (`GuestRecord::absent`
    // writes every field: no default record built only to be dropped, issue 32).
    let mut record = GuestRecord::absent(ev.at.vmid, run.method, run.now_iso());
    record.status = "deleted".to_string();
    record.node = Some(ev.at.node.clone());
    record.identity = ev.identity.clone().recorded();
    record.identity_observed_at = ev.identity_seen_at();
    let fields = &mut record.fields;
    list(fields, "warnings", &ev.trail.warnings);
    put(fields, "name", ev.status.name.as_deref());
    let tags = ev.status.tags.as_deref().map(split_tags);
    set(fields, "tags", Value::from(tags.unwrap_or_default()));
    put(fields, "lastTask", ev.trail.last_task.as_deref());
    let instance = run.guest_instance(ev.at.vmid);
    Outcome::succeeded(
        vec![write_value(run.guest_spec(), instance, record.json())],
        summary,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmdestroy:100:root@pam!t:";

    fn guest(host: &ScriptedHost, status: &str, tags: &str) {
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=U-1"}),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": status, "qmpstatus": status, "name": "web", "tags": tags}),
        );
        host.data("DELETE /nodes/pve1/qemu/100", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
    }

    fn run_delete(host: &ScriptedHost, args: Value) -> Outcome {
        let mut merged = api_args(args);
        merged["taskTimeoutSec"] = json!(5);
        run_method_of(GuestKind::Qemu, host, "delete", &merged)
    }

    fn listed_then_gone(host: &ScriptedHost) {
        host.data("GET /cluster/nextid", json!("100"));
    }

    #[test]
    fn a_production_guest_is_refused_and_nothing_is_sent() {
        let host = ScriptedHost::new();
        listed_then_gone(&host);
        guest(&host, "stopped", "swamp;production");
        let outcome = run_delete(&host, json!({"vmid": 100}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(message.contains("`production`"), "{message}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("DELETE")));
        assert_eq!(outcome.writes[0].data["present"], true);
    }

    #[test]
    fn a_stopped_managed_guest_is_deleted_confirmed_and_recorded_as_deleted() {
        let host = ScriptedHost::new();
        listed_then_gone(&host);
        // Looked up before: the identity carries forward from that record.
        host.records.borrow_mut().insert(
            "vm-100".into(),
            json!({"present": true, "name": "web", "identity": {"smbiosUuid": "u-1"},
                   "identityObservedAt": "2026-11-01T00:00:00.000Z"}),
        );
        guest(&host, "stopped", "swamp");
        let outcome = run_delete(&host, json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
        let record = &outcome.writes[0].data;
        assert_eq!(record["status"], "deleted");
        assert_eq!(record["present"], false);
        assert_eq!(record["identity"]["smbiosUuid"], "u-1");
        assert_eq!(record["identityObservedAt"], "2026-11-01T00:00:00.000Z");
        assert_eq!(outcome.writes.len(), 1);
        assert_eq!(outcome.writes[0].instance, "vm-100");
    }

    #[test]
    fn a_guest_still_listed_after_the_task_fails_the_delete() {
        let host = ScriptedHost::new();
        host.on(
            "GET /cluster/nextid",
            [Answer::Error(
                400,
                "Parameter verification failed. (vmid: VM 100 already exists)".into(),
            )],
        );
        guest(&host, "stopped", "swamp");
        let outcome = run_delete(&host, json!({"vmid": 100}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains(
                "VMID 100 still exists (GET /cluster/nextid says so) when taskTimeoutSec=5s"
            ),
            "{message}"
        );
        assert_eq!(outcome.writes[0].data["lastTask"], UPID);
    }
}
