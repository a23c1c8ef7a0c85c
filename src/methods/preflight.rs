//! `preflight` (both models) and the `permissions` check: ask PVE what the token may do before a
//! method fails halfway for want of a privilege.
//!
//! For each method asked about (`methods`, default: every method of the model) the endpoints it
//! calls (`guest::permissions::needs`) give PVE's own checks (`pve::privileges`, from the API
//! schema); the ACL paths they name — `/vms/<vmid>`, `/storage/<storage>`, `/nodes/<node>`, `/` —
//! are each read with `GET /access/permissions?path=…` (what PVE computes for the token itself: for
//! a privilege-separated token its own ACLs intersected with its user's, pve-access-control
//! `PVE/RPCEnvironment.pm` `permissions`), and every privilege a method's every run needs must be
//! held: "clone needs VM.Clone on /vms/9000 and Datastore.AllocateSpace on /storage/local-zfs:
//! missing". What only some runs need (a stop before a delete, the disks of nodeStatus) is reported
//! as `mayNeed`, not failed. The method also records PVE's version (the node answered: it is
//! reachable), and, on the api transport, what only root@pam may do (`guest::root_only`), and that a
//! container's `guestExec` needs the ssh transport. It writes `preflight-<node>` and fails when a
//! method asked about cannot work.
//!
//! The `permissions` check runs the same for the one method swamp is about to run, with that
//! method's own `vmid`/`templateId`/`storage` when they are plain values; it writes nothing.

use crate::args::{check_segment, ArgError, Fields};
use crate::catalog::method_names;
use crate::explain::could_not;
use crate::guest::permissions::{
    missing, needs, paths_of, requirement, Check, Guest, Held, Need, Subjects,
};
use crate::guest::reference::{VMID_MAX, VMID_MIN};
use crate::guest::root_only::{root_only_note, Caller};
use crate::host::Host;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::flex::string_of;
use crate::run::{write, Run};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The arguments of `preflight` (and of the `permissions` check): the methods to ask about, and
/// the values their paths are made of, as those methods take them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightArgs {
    pub methods: Vec<String>,
    /// The guest the methods act on (for `clone` and `create`: the VMID they make).
    pub vmid: Option<u32>,
    /// `clone`'s template.
    pub template_id: Option<u32>,
    /// The storage `clone`/`create` allocate on.
    pub storage: Option<String>,
}

impl PreflightArgs {
    pub fn parse(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        // preflight asks about the other methods; what it needs itself any token may do.
        let own: Vec<&str> = method_names(kind)
            .filter(|m| *m != "preflight" && needs(kind, m).is_some())
            .collect();
        let methods = match fields.optional::<Vec<String>>("methods")? {
            None => dedup(own.iter().map(|m| m.to_string()).collect()),
            Some(list) if list.is_empty() => {
                return Err(ArgError::new("methods", "must name at least one method"))
            }
            Some(list) => {
                if let Some(other) = list.iter().find(|m| !own.contains(&m.as_str())) {
                    return Err(ArgError::new(
                        "methods",
                        format!(
                            "{other:?} is not a method of the {} model (its methods: {})",
                            kind.segment(),
                            own.join(", ")
                        ),
                    ));
                }
                dedup(list)
            }
        };
        let vmid = |key: &str| -> Result<Option<u32>, ArgError> {
            match fields.optional::<i64>(key)? {
                None => Ok(None),
                Some(v) if (VMID_MIN..=VMID_MAX).contains(&v) => Ok(Some(v as u32)),
                Some(_) => Err(ArgError::new(
                    key,
                    format!("must be a VMID ({VMID_MIN} to {VMID_MAX})"),
                )),
            }
        };
        let storage: Option<String> = fields.optional("storage")?;
        if let Some(storage) = &storage {
            check_segment("storage", storage)?;
        }
        Ok(PreflightArgs {
            methods,
            vmid: vmid("vmid")?,
            template_id: vmid("templateId")?,
            storage,
        })
    }

    /// The values of `method`'s paths: a clone acts on its template and makes `vmid`; a create
    /// makes `vmid`; every other method acts on `vmid`.
    fn subjects(&self, method: &str, node: &str, mode: Mode) -> Subjects {
        let (vmid, newid) = match method {
            "clone" => (self.template_id, self.vmid),
            "create" => (None, self.vmid),
            _ => (self.vmid, None),
        };
        Subjects {
            vmid,
            newid,
            storage: self.storage.clone(),
            node: node.to_string(),
            skip_unknown: mode == Mode::Check,
        }
    }
}

/// Who asks: the `preflight` method, or the check before one method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Everything: an unknown guest is read on `/vms`; the transport's limits are named.
    Preflight,
    /// The privileges of the known paths only (the method itself says the rest, in its own words).
    Check,
}

fn dedup(list: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    list.into_iter()
        .filter(|m| seen.insert(m.clone()))
        .collect()
}

/// What one method was found to need and lack.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodFitness {
    pub method: String,
    /// Every privilege its every run needs is held (and the transport can carry it).
    pub ready: bool,
    /// What it lacks: "VM.Clone on /vms/9000".
    pub missing: Vec<String>,
    /// What only some runs need and the token lacks: "VM.PowerMgmt on /vms/100 (when the guest runs)".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub may_need: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `preflight-<node>` record.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreflightRecord {
    pub node: String,
    /// The node answered `GET /version`.
    pub reachable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pve_version: Option<String>,
    /// `token` (the api transport) or `root@pam` (pvesh over ssh).
    pub caller: String,
    /// Every method asked about can work.
    pub ready: bool,
    pub methods: Vec<MethodFitness>,
    /// The privileges PVE reported per ACL path read.
    pub privileges: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub last_operation: String,
    pub recorded_at: String,
}

/// One need with its check, for a method.
struct Checked {
    need: Need,
    check: Check,
}

/// The checks of the endpoints `method` calls (listing and open endpoints need none).
fn checks_of(kind: GuestKind, method: &str) -> Result<Vec<Checked>, String> {
    let mut out = Vec::new();
    for need in needs(kind, method).unwrap_or_default() {
        if let Some(check) = requirement(need.endpoint)? {
            out.push(Checked { need, check });
        }
    }
    Ok(out)
}

/// Reads what the token holds on each of `paths`.
async fn read_held<H: Host>(run: &Run<'_, H>, paths: &BTreeSet<String>) -> Result<Held, String> {
    let node = run.global.transport.node();
    let mut held = Held::new();
    for path in paths {
        let data = run
            .pve()
            .call(&endpoints::access_permissions(path))
            .await
            .map_err(|e| {
                let what = format!(
                    "read what the token may do on {path} (GET /access/permissions on node {node})"
                );
                could_not(&what, &e).0
            })?;
        // `{<path>: {<privilege>: <propagate>}}`, or `{}` when nothing is held there.
        let shape_error = |answer: &Value| {
            format!(
                "GET /access/permissions?path={path} on node {node} answered {} where a map of privileges was expected — check that apiUrl (or the ssh host) is a PVE node",
                crate::quote::value(answer)
            )
        };
        let Some(map) = data.as_object() else {
            return Err(shape_error(&data));
        };
        let privs = match map.get(path.as_str()) {
            None if map.is_empty() => BTreeSet::new(),
            Some(Value::Object(privs)) => privs.keys().cloned().collect(),
            _ => return Err(shape_error(&data)),
        };
        held.insert(path.clone(), privs);
    }
    Ok(held)
}

/// Judges every method of `args` against what the token holds.
async fn judge<H: Host>(
    run: &Run<'_, H>,
    args: &PreflightArgs,
    mode: Mode,
) -> Result<(Vec<MethodFitness>, Held), String> {
    let node = run.global.transport.node().to_string();
    let caller = Caller::of(&run.global.transport);
    let mut planned = Vec::new();
    let mut paths = BTreeSet::new();
    for method in &args.methods {
        let subjects = args.subjects(method, &node, mode);
        let checks = checks_of(run.kind, method)?;
        for c in &checks {
            paths_of(&c.check, &subjects, c.need.guest, &mut paths);
        }
        planned.push((method, subjects, checks));
    }
    let held = read_held(run, &paths).await?;
    let fitness = planned
        .into_iter()
        .map(|(method, subjects, checks)| {
            let mut fit = MethodFitness {
                method: method.clone(),
                ready: true,
                missing: Vec::new(),
                may_need: Vec::new(),
                notes: Vec::new(),
            };
            for c in &checks {
                for lack in missing(&c.check, &subjects, c.need.guest, &held) {
                    match c.need.when {
                        None => fit.missing.push(lack),
                        Some(when) => fit.may_need.push(format!("{lack} ({when})")),
                    }
                }
            }
            fit.missing.dedup();
            let container_exec = run.kind == GuestKind::Lxc && method == "guestExec";
            if container_exec && caller == Caller::Token && mode == Mode::Preflight {
                fit.missing.push(
                    "the ssh transport (PVE's API has no exec for containers: pct exec runs on the node)"
                        .to_string(),
                );
            }
            if subjects.vmid.is_none() && checks.iter().any(|c| c.need.guest == Guest::Acted) {
                fit.notes.push(
                    "no vmid given: checked on /vms, what every guest inherits".to_string(),
                );
            }
            fit.notes
                .extend(root_only_note(caller, run.kind == GuestKind::Qemu, method));
            fit.ready = fit.missing.is_empty();
            fit
        })
        .collect();
    Ok((fitness, held))
}

/// "clone needs VM.Clone on /vms/9000 and …: missing" for each method that cannot work.
fn shortfalls(fitness: &[MethodFitness]) -> Vec<String> {
    fitness
        .iter()
        .filter(|f| !f.ready)
        .map(|f| format!("{} needs {}: missing", f.method, f.missing.join(" and ")))
        .collect()
}

/// Runs `preflight`.
pub async fn preflight<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match PreflightArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let node = run.global.transport.node().to_string();
    let mut record = PreflightRecord {
        node: node.clone(),
        reachable: false,
        pve_version: None,
        caller: match Caller::of(&run.global.transport) {
            Caller::Token => "token".into(),
            Caller::RootPam => "root@pam".into(),
        },
        ready: false,
        methods: Vec::new(),
        privileges: BTreeMap::new(),
        error: None,
        last_operation: run.method.to_string(),
        recorded_at: run.now_iso(),
    };
    let verdict = examine(run, &args, &mut record).await;
    record.ready = verdict.is_ok();
    record.error = verdict.as_ref().err().cloned();
    let writes = vec![write("preflight", format!("preflight-{node}"), &record)];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

async fn examine<H: Host>(
    run: &Run<'_, H>,
    args: &PreflightArgs,
    record: &mut PreflightRecord,
) -> Result<String, String> {
    let node = record.node.clone();
    let version = match run.pve().call(&endpoints::version()).await {
        Ok(data) => match data.get("version").and_then(string_of) {
            Some(version) => version,
            None => {
                return Err(format!(
                    "GET /version on node {node} answered {}, without a version: check that apiUrl (or the ssh host) is a PVE node",
                    crate::quote::value(&data)
                ))
            }
        },
        Err(e) => return Err(could_not(&format!("reach PVE on node {node} (GET /version)"), &e).0),
    };
    record.reachable = true;
    record.pve_version = Some(version.clone());
    let (fitness, held) = judge(run, args, Mode::Preflight).await?;
    record.privileges = held
        .into_iter()
        .map(|(path, privs)| (path, privs.into_iter().collect()))
        .collect();
    for fit in &fitness {
        for note in fit.notes.iter().chain(&fit.may_need) {
            run.info(&format!("preflight: {}: {note}", fit.method));
        }
    }
    let short = shortfalls(&fitness);
    record.methods = fitness;
    let pve = format!("PVE {version}");
    match short.is_empty() {
        true => Ok(format!(
            "{pve} on node {node}: the token may run {} ({} ACL paths checked)",
            match args.methods.len() {
                1 => args.methods[0].clone(),
                n => format!("all {n} methods asked about"),
            },
            record.privileges.len()
        )),
        false => Err(format!("{pve} on node {node}: {}", short.join("; "))),
    }
}

/// The `permissions` check: the method swamp is about to run (`methods: [name]`) with its own
/// arguments. Writes nothing.
pub async fn permissions_check<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match PreflightArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    match judge(run, &args, Mode::Check).await {
        Ok((fitness, held)) => {
            let short = shortfalls(&fitness);
            let methods = args.methods.join(", ");
            let paths = held.keys().cloned().collect::<Vec<_>>().join(", ");
            match short.is_empty() {
                true if paths.is_empty() => Outcome::succeeded(
                    Vec::new(),
                    format!("no ACL path {methods} reads is known before it runs (no vmid given)"),
                ),
                true => Outcome::succeeded(
                    Vec::new(),
                    format!("the token holds what {methods} needs on {paths}"),
                ),
                false => Outcome::failed(Vec::new(), short.join("; ")),
            }
        }
        Err(message) => Outcome::failed(Vec::new(), message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    /// PVE's version, and the answers of `GET /access/permissions` for each path, given in the
    /// order the paths are read (sorted).
    fn script(host: &ScriptedHost, held: &[(&str, Value)]) {
        host.data("GET /version", json!({"version": "9.1.3"}));
        let answers = held.iter().map(|(_, privs)| Answer::Data(privs.clone()));
        host.on("GET /access/permissions", answers.collect::<Vec<_>>());
    }

    /// The paths the run asked `GET /access/permissions` about.
    fn asked(host: &ScriptedHost) -> Vec<String> {
        host.requests
            .borrow()
            .iter()
            .filter(|r| r.url.contains("/access/permissions"))
            .map(|r| {
                r.url
                    .split("path=")
                    .nth(1)
                    .unwrap_or_default()
                    .replace("%2F", "/")
            })
            .collect()
    }

    fn run(host: &ScriptedHost, kind: GuestKind, args: Value) -> Outcome {
        run_method_of(kind, host, "preflight", &api_args(args))
    }

    fn failure(outcome: &Outcome) -> &str {
        match &outcome.verdict {
            Verdict::Failed { message } => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn clone_names_what_it_lacks_on_the_template_the_new_vmid_and_the_storage() {
        let host = ScriptedHost::new();
        script(
            &host,
            &[
                ("/storage/local-zfs", json!({})),
                (
                    "/vms/123",
                    json!({"/vms/123": {"VM.Allocate": 1, "VM.Audit": 1, "VM.Config.Options": 1}}),
                ),
                ("/vms/9000", json!({"/vms/9000": {"VM.Audit": 1}})),
            ],
        );
        let outcome = run(
            &host,
            GuestKind::Qemu,
            json!({"methods": ["clone"], "templateId": 9000, "vmid": 123, "storage": "local-zfs"}),
        );
        assert_eq!(
            failure(&outcome),
            "PVE 9.1.3 on node pve1: clone needs VM.Clone on /vms/9000 and Datastore.AllocateSpace on /storage/local-zfs: missing"
        );
        let record = &outcome.writes[0];
        assert_eq!(record.instance, "preflight-pve1");
        assert_eq!(record.data["reachable"], true);
        assert_eq!(record.data["ready"], false);
        assert_eq!(record.data["methods"][0]["ready"], false);
        assert_eq!(record.data["privileges"]["/vms/9000"], json!(["VM.Audit"]));
        assert_eq!(
            asked(&host),
            ["/storage/local-zfs", "/vms/123", "/vms/9000"]
        );
    }

    #[test]
    fn a_token_holding_every_privilege_passes_and_the_record_says_so() {
        let host = ScriptedHost::new();
        let all = json!({"VM.Audit": 1, "VM.PowerMgmt": 1});
        script(&host, &[("/vms/100", json!({"/vms/100": all}))]);
        let outcome = run(
            &host,
            GuestKind::Qemu,
            json!({"methods": ["start", "stop"], "vmid": 100}),
        );
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["ready"], true);
        assert_eq!(outcome.writes[0].data["pveVersion"], "9.1.3");
    }

    #[test]
    fn what_only_some_runs_need_is_reported_not_failed() {
        let host = ScriptedHost::new();
        script(
            &host,
            &[(
                "/vms/100",
                json!({"/vms/100": {"VM.Audit": 1, "VM.Allocate": 1}}),
            )],
        );
        let outcome = run(
            &host,
            GuestKind::Qemu,
            json!({"methods": ["delete"], "vmid": 100}),
        );
        assert!(outcome.is_success(), "{outcome:?}");
        let may = &outcome.writes[0].data["methods"][0]["mayNeed"];
        assert_eq!(
            may,
            &json!(["VM.PowerMgmt on /vms/100 (when the guest runs)"])
        );
    }

    #[test]
    fn an_unreachable_node_fails_and_is_recorded_unreachable() {
        let host = ScriptedHost::new();
        let outcome = run(&host, GuestKind::Lxc, json!({"methods": ["lookup"]}));
        assert!(failure(&outcome).contains("GET /version"), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["reachable"], false);
    }

    #[test]
    fn a_version_answer_without_a_version_is_no_pve_node() {
        let host = ScriptedHost::new();
        host.data("GET /version", json!({"hello": "proxy"}));
        let outcome = run(&host, GuestKind::Qemu, json!({"methods": ["lookup"]}));
        assert!(
            failure(&outcome).contains("without a version"),
            "{outcome:?}"
        );
        assert_eq!(outcome.writes[0].data["reachable"], false);
    }

    #[test]
    fn a_container_command_over_the_api_transport_cannot_work() {
        let host = ScriptedHost::new();
        script(&host, &[]);
        let outcome = run(
            &host,
            GuestKind::Lxc,
            json!({"methods": ["guestExec"], "vmid": 300}),
        );
        assert!(
            failure(&outcome).contains("guestExec needs the ssh transport"),
            "{outcome:?}"
        );
    }

    #[test]
    fn root_only_parts_are_noted_for_a_token() {
        let host = ScriptedHost::new();
        let privs = json!({"/vms/100": {"VM.Audit": 1, "VM.Config.Options": 1}});
        script(&host, &[("/vms/100", privs)]);
        let outcome = run(
            &host,
            GuestKind::Qemu,
            json!({"methods": ["setConfig"], "vmid": 100}),
        );
        assert!(outcome.is_success(), "{outcome:?}");
        let notes = outcome.writes[0].data["methods"][0]["notes"].to_string();
        assert!(
            notes.contains("hookscript") && notes.contains("root@pam"),
            "{notes}"
        );
    }

    #[test]
    fn an_answer_that_is_no_privilege_map_fails_instead_of_reading_as_nothing_held() {
        let host = ScriptedHost::new();
        script(&host, &[("/vms/100", json!(["VM.Audit"]))]);
        let outcome = run(
            &host,
            GuestKind::Qemu,
            json!({"methods": ["lookup"], "vmid": 100}),
        );
        let message = failure(&outcome);
        assert!(
            message.contains("where a map of privileges was expected"),
            "{message}"
        );
        assert!(!message.contains("missing"), "{message}");
    }

    #[test]
    fn a_method_the_model_lacks_is_refused_naming_it() {
        let e = PreflightArgs::parse(GuestKind::Lxc, &json!({"methods": ["clone"]})).unwrap_err();
        assert_eq!(e.field, "methods");
        assert!(e.rule.contains("\"clone\""), "{}", e.rule);
        let all = PreflightArgs::parse(GuestKind::Qemu, &json!({})).unwrap();
        assert!(all.methods.contains(&"fileRead".to_string()));
        assert!(!all.methods.contains(&"resize".to_string()), "an lxc name");
    }
}
