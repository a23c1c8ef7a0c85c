//! `clone`: succeeds only when the new guest exists with the requested name and the managed `swamp`
//! tag (added and read back when the template lacks it). A VMID that is already taken counts as done
//! only when it holds that very guest (same name and the tag: a re-run); any other occupant fails.

use crate::args::{ArgError, Fields};
use crate::guest::evidence::TaskTrail;
use crate::guest::gates::MANAGED_TAG;
use crate::guest::locate::{locate, Found};
use crate::guest::provision::{claim_vmid, complete, sight_new, Claim};
use crate::guest::reference::{parse_vmid, GuestRef};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::run::Run;
use serde_json::Value;

/// The arguments of `clone`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloneArgs {
    pub template_id: u32,
    pub vmid: u32,
    pub name: String,
    pub full: bool,
    pub storage: Option<String>,
}

impl CloneArgs {
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let parsed = CloneArgs {
            template_id: parse_vmid(&fields, "templateId")?,
            vmid: parse_vmid(&fields, "vmid")?,
            name: fields.line("name")?,
            full: fields.or("full", true)?,
            storage: fields.optional_line("storage")?,
        };
        if parsed.vmid == parsed.template_id {
            return Err(ArgError::new("vmid", "must differ from templateId"));
        }
        Ok(parsed)
    }
}

/// Runs `clone`.
pub async fn clone<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match CloneArgs::parse(args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    match claim_vmid(run, args.vmid, &args.name).await {
        Ok(Claim::Free) => {}
        Ok(Claim::Done(ev)) => {
            let summary = format!(
                "{} already is the requested clone {:?} with the `{MANAGED_TAG}` tag; nothing was cloned",
                ev.label(run),
                args.name
            );
            return ev.outcome(run, Ok(summary)).await;
        }
        Err(outcome) => return outcome,
    }
    let mut trail = TaskTrail::default();
    if let Err(message) = make_clone(run, &args, &mut trail).await {
        return Failure::new(message).into();
    }
    let mut ev = match sight_new(run, args.vmid, trail, "clone").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let verdict = match complete(run, &mut ev, &args.name, "clone").await {
        Ok(summary) => verify_storage(run, &ev, &args).map(|()| summary),
        Err(message) => Err(message),
    };
    ev.outcome(run, verdict).await
}

/// A full clone to `storage` must have every disk there (PVE's clone_vm moves each drive to the
/// target storage); a CD-ROM or an empty drive is not a disk.
fn verify_storage<H: Host>(
    run: &Run<'_, H>,
    ev: &crate::guest::evidence::Evidence,
    args: &CloneArgs,
) -> Result<(), String> {
    let Some(storage) = args.storage.as_deref().filter(|_| args.full) else {
        return Ok(());
    };
    let label = ev.label(run);
    let elsewhere: Vec<String> = ev
        .config
        .iter()
        .filter(|(key, _)| run.kind.is_disk(key))
        .filter_map(|(key, value)| Some((key, value.as_str()?)))
        .filter(|(_, value)| !value.contains("media=cdrom") && !value.starts_with("none"))
        .filter(|(_, value)| !value.starts_with(&format!("{storage}:")))
        .map(|(key, value)| format!("{key} is {value:?}"))
        .collect();
    match elsewhere.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{label} exists, but not every disk is on the requested storage {storage:?}: {} — check the clone task's log",
            elsewhere.join("; ")
        )),
    }
}

/// Sends the clone to the template's node and follows its task.
async fn make_clone<H: Host>(
    run: &Run<'_, H>,
    args: &CloneArgs,
    trail: &mut TaskTrail,
) -> Result<(), String> {
    let pve = run.pve();
    let template = GuestRef {
        vmid: Some(args.template_id),
        name: None,
    };
    let node = match locate(&pve, run.kind, &template).await.map_err(|f| f.0)? {
        Found::Present(at) => at.node,
        Found::Absent { vmid } => {
            return Err(format!(
                "template {vmid} does not exist on any node: check templateId"
            ))
        }
    };
    let request = endpoints::qemu_clone(
        &node,
        args.template_id,
        args.vmid,
        &args.name,
        args.full,
        args.storage.as_deref(),
    );
    let action = format!(
        "clone VM {} on node {node} to VMID {}",
        args.template_id, args.vmid
    );
    trail.run(&pve, &request, &action).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn run_clone(host: &ScriptedHost) -> Outcome {
        let args = api_args(json!({"templateId": 9000, "vmid": 300, "name": "web2"}));
        run_method_of(GuestKind::Qemu, host, "clone", &args)
    }

    fn taken_by(host: &ScriptedHost, name: &str, tags: &str) {
        host.on(
            "GET /cluster/nextid",
            [Answer::Error(
                400,
                "Parameter verification failed. (vmid: VM 300 already exists)".into(),
            )],
        );
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 300, "type": "qemu", "node": "pve1", "name": name}]),
        );
        host.data("GET /nodes/pve1/qemu/300/config", json!({}));
        host.data(
            "GET /nodes/pve1/qemu/300/status/current",
            json!({"status": "stopped", "name": name, "tags": tags}),
        );
    }

    #[test]
    fn a_vmid_held_by_the_same_managed_guest_is_done_without_a_clone() {
        let host = ScriptedHost::new();
        taken_by(&host, "web2", "swamp");
        let outcome = run_clone(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_vmid_held_by_another_guest_fails_and_records_it() {
        for (name, tags) in [("db", "swamp"), ("web2", "web")] {
            let host = ScriptedHost::new();
            taken_by(&host, name, tags);
            let outcome = run_clone(&host);
            let Verdict::Failed { message } = &outcome.verdict else {
                panic!("{outcome:?}")
            };
            assert!(
                message.starts_with("VMID 300 is in use by another guest"),
                "{message}"
            );
            assert_eq!(outcome.writes[0].data["name"], name);
        }
    }

    #[test]
    fn same_vmid_and_template_is_refused() {
        let e = CloneArgs::parse(&json!({"templateId": 300, "vmid": 300, "name": "x"}));
        assert_eq!(e.unwrap_err().field, "vmid");
    }
}
