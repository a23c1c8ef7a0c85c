//! `clone`: succeeds only when the new guest exists with the requested name and the managed `swamp`
//! tag (added and read back when the template lacks it). A VMID that is already taken counts as done
//! only when it holds that very guest (same name and the tag: a re-run); any other occupant fails.

use crate::args::{ArgError, Fields};
use crate::explain::could_not;
use crate::guest::evidence::{absent_outcome, sight, Evidence, Sighting, TaskTrail};
use crate::guest::gates::MANAGED_TAG;
use crate::guest::locate::{locate, Found};
use crate::guest::reference::{parse_vmid, GuestRef};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::ErrorKind;
use crate::pve::flex::split_tags;
use crate::pve::responses::GuestStatus;
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
    match vmid_free(run, args.vmid).await {
        Ok(true) => {}
        Ok(false) => return existing(run, &args).await,
        Err(failure) => return failure.into(),
    }
    let mut trail = TaskTrail::default();
    if let Err(message) = make_clone(run, &args, &mut trail).await {
        return Failure::new(message).into();
    }
    let target = GuestRef {
        vmid: Some(args.vmid),
        name: None,
    };
    let mut ev = match sight(run, &target).await {
        Ok(Sighting::Present(ev)) => ev,
        Ok(Sighting::Absent(vmid)) => {
            let message = format!("the clone task ended successfully, but VM {vmid} does not exist on any node — check the clone task's log on the template's node");
            return absent_outcome(run, vmid, Err(message));
        }
        Err(failure) => return failure.into(),
    };
    ev.trail = trail;
    let verdict = complete(run, &mut ev, &args).await;
    ev.outcome(run, verdict).await
}

/// Whether no guest holds `vmid` (`/cluster/nextid` answers for any user, whatever it may see).
async fn vmid_free<H: Host>(run: &Run<'_, H>, vmid: u32) -> Result<bool, Failure> {
    match run.pve().call(&endpoints::next_id(vmid)).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind == ErrorKind::IdTaken => Ok(false),
        Err(e) => Err(could_not(
            &format!("check whether VMID {vmid} is free (GET /cluster/nextid)"),
            &e,
        )),
    }
}

/// The VMID is taken: done when it holds the requested clone, else a failure naming the occupant.
async fn existing<H: Host>(run: &Run<'_, H>, args: &CloneArgs) -> Outcome {
    let target = GuestRef {
        vmid: Some(args.vmid),
        name: None,
    };
    let ev = match sight(run, &target).await {
        Ok(Sighting::Present(ev)) => ev,
        Ok(Sighting::Absent(vmid)) => {
            return Failure::new(format!(
                "VMID {vmid} was in use a moment ago and is free now (a clone or delete in progress?); run clone again"
            ))
            .into()
        }
        Err(failure) => {
            return Failure::new(format!(
                "VMID {} is in use by another guest: {}",
                args.vmid, failure.0
            ))
            .into()
        }
    };
    let verdict = match is_requested(&ev.status, &args.name) {
        true => Ok(format!(
            "{} already is the requested clone {:?} with the `{MANAGED_TAG}` tag; nothing was cloned",
            ev.label(run),
            args.name
        )),
        false => Err(format!(
            "VMID {} is in use by another guest ({}), not the requested {:?} with the `{MANAGED_TAG}` tag — choose a free vmid, or remove that guest first",
            args.vmid,
            occupant(&ev.status),
            args.name
        )),
    };
    ev.outcome(run, verdict).await
}

fn is_requested(status: &GuestStatus, name: &str) -> bool {
    status.name.as_deref() == Some(name) && has_managed_tag(status)
}

fn has_managed_tag(status: &GuestStatus) -> bool {
    let tags = status.tags.as_deref().map(split_tags).unwrap_or_default();
    tags.iter().any(|t| t == MANAGED_TAG)
}

/// `named "db", tags "prod"`, for messages.
fn occupant(status: &GuestStatus) -> String {
    format!(
        "named {:?}, tags {:?}",
        status.name.as_deref().unwrap_or(""),
        status.tags.as_deref().unwrap_or("")
    )
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

/// The clone exists: it must carry the requested name, and the managed tag (added if missing).
async fn complete<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &CloneArgs,
) -> Result<String, String> {
    let label = ev.label(run);
    if ev.status.name.as_deref() != Some(args.name.as_str()) {
        return Err(format!(
            "the clone task ended successfully, but {label} is named {:?}, not {:?} — check the clone task's log",
            ev.status.name.as_deref().unwrap_or(""),
            args.name
        ));
    }
    if has_managed_tag(&ev.status) {
        return Ok(format!(
            "{label} exists as {:?} with the `{MANAGED_TAG}` tag",
            args.name
        ));
    }
    add_managed_tag(run, ev).await?;
    Ok(format!(
        "{label} exists as {:?}; the `{MANAGED_TAG}` tag was added and read back",
        args.name
    ))
}

/// Adds the managed tag to the guest's own tags and reads it back.
async fn add_managed_tag<H: Host>(run: &Run<'_, H>, ev: &mut Evidence) -> Result<(), String> {
    let label = ev.label(run);
    let current = ev.status.tags.clone().unwrap_or_default();
    let mut tags: Vec<&str> = current
        .split([';', ',', ' '])
        .filter(|t| !t.is_empty())
        .collect();
    tags.push(MANAGED_TAG);
    let request = endpoints::set_guest_tags(&ev.at.node, run.kind, ev.at.vmid, &tags.join(";"));
    run.pve()
        .call(&request)
        .await
        .map_err(|e| could_not(&format!("add the `{MANAGED_TAG}` tag to {label}"), &e).0)?;
    ev.refresh(run).await?;
    match has_managed_tag(&ev.status) {
        true => Ok(()),
        false => Err(format!(
            "the `{MANAGED_TAG}` tag was set on {label}, but its tags read back as {:?} — check the token's VM.Config.Options privilege and the cluster's tag settings",
            ev.status.tags.as_deref().unwrap_or("")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::global_args::GlobalArgs;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, block_on, Answer, ScriptedHost};
    use serde_json::json;

    fn run_clone(host: &ScriptedHost) -> Outcome {
        let args = api_args(json!({"templateId": 9000, "vmid": 300, "name": "web2"}));
        let global = GlobalArgs::parse(&args).unwrap();
        let run = Run {
            host,
            global: &global,
            kind: GuestKind::Qemu,
            method: "clone",
        };
        block_on(clone(&run, &args))
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
