//! `preflight` (both models) and the `permissions` check: ask PVE what the token may do before a
//! method fails halfway for want of a privilege.
//!
//! For each method asked about (`methods`, default: every method of the model) the endpoints it
//! calls (`guest::permission_needs`) give PVE's own checks (`pve::privileges`: the API schema's and
//! those inside the handlers and their workers, on PVE 8 and 9); the ACL paths they name —
//! `/vms/<vmid>`, `/storage/<storage>`, `/sdn/zones/localnetwork/<bridge>`, `/nodes/<node>`, `/` —
//! are each read with `GET /access/permissions?path=…` (what PVE computes for the token itself: for
//! a privilege-separated token its own ACLs intersected with its user's, the deepest ACL on a path
//! replacing what it inherits, pve-access-control `PVE/AccessControl.pm` `roles`,
//! `PVE/RPCEnvironment.pm` `permissions`), and every privilege a method's every run needs must be
//! held: "clone needs VM.Clone on /vms/9000 and Datastore.AllocateSpace on /storage/local-zfs:
//! missing". What only some runs need (a stop before a delete, the disks of nodeStatus, what
//! depends on arguments preflight does not take) is reported as `mayNeed`, not failed. PVE's
//! version (`GET /version`) picks PVE 8's checks or 9's. The method also records, on the api
//! transport, what only root@pam may do (`guest::root_only`), and that a container's `guestExec`
//! needs the ssh transport. It writes `preflight-<node>` and fails when a method asked about cannot
//! work, or when the privileges cannot be read.
//!
//! The `permissions` check runs the same for the one method swamp is about to run, with that
//! method's own arguments (their plain values); it writes nothing. It asks PVE's version only when
//! its verdict differs between PVE 8 and 9 and the token's privileges do not tell the version (one
//! only that version has, `VM.Monitor` or `VM.GuestAgent.*`), as one read shared with the runs
//! that ask it at once (the `transport-reachable` check). When the privileges cannot be read (a proxy that refuses
//! `GET /access/permissions`, a node that does not answer), the check passes with one warning: the
//! pre-check is a courtesy, PVE checks every request itself.

use crate::args::{check_segment, ArgError, Fields};
use crate::catalog::method_names;
use crate::explain::could_not_args;
use crate::guest::permission_needs::{needs, preflight_subjects, run_subjects, Need};
use crate::guest::permissions::{
    holds, judge, major_held, major_of, paths_of, requirement, AclPaths, Check, Held, Subjects,
};
use crate::guest::reference::{VMID_MAX, VMID_MIN};
use crate::guest::root_only::{root_only_note, Caller};
use crate::host::Host;
use crate::methods::check::pve_version;
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::{self, GuestKind};
use crate::quote::{push_item, Joined};
use crate::record_json::{list, put, set};
use crate::run::{write_value, Run};
use serde_json::{Map, Value};

/// The arguments of `preflight`: the methods to ask about, and the values their paths are made of,
/// as those methods take them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightArgs<'a> {
    pub methods: Vec<String>,
    /// The guest the methods act on (for `clone`, `create` and `restore`: the VMID they make).
    pub vmid: Option<u32>,
    /// `clone`'s template.
    pub template_id: Option<u32>,
    /// The storage the methods allocate on (or list), borrowed from the arguments.
    pub storage: Option<&'a str>,
}

/// The methods of `kind` preflight may ask about (what it needs itself any token may do).
fn askable(kind: GuestKind) -> Vec<&'static str> {
    let mut askable = Vec::new();
    for method in method_names(kind) {
        if method != "preflight" && needs(kind, method).is_some() {
            askable.push(method);
        }
    }
    askable
}

impl<'a> PreflightArgs<'a> {
    pub fn parse(kind: GuestKind, args: &'a Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let own = askable(kind);
        let methods = match fields.optional::<Vec<String>>("methods")? {
            None => {
                let mut all = Vec::new();
                for method in &own {
                    all.push(method.to_string());
                }
                all
            }
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
                            own.joined(", ")
                        ),
                    ));
                }
                dedup(list)
            }
        };
        let vmid = |key: &str| -> Result<Option<u32>, ArgError> {
            match fields.int(key)? {
                None => Ok(None),
                Some(v) if (VMID_MIN..=VMID_MAX).contains(&v) => Ok(Some(v as u32)),
                Some(_) => Err(ArgError::new(
                    key,
                    format!("must be a VMID ({VMID_MIN} to {VMID_MAX})"),
                )),
            }
        };
        let storage = fields.text("storage")?;
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
}

/// The arguments of the `permissions` check: the method about to run (`methods: [name]`) and its
/// own arguments (`methodArgs`, their plain values).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckArgs<'a> {
    /// Both borrowed from the check's own arguments: never copied (issue 32).
    pub method: &'a str,
    pub args: &'a Value,
}

/// The `methodArgs` of a check that names none.
static NO_ARGS: Value = Value::Null;

impl<'a> CheckArgs<'a> {
    pub fn parse(kind: GuestKind, args: &'a Value) -> Result<Self, ArgError> {
        let one = PreflightArgs::parse(kind, args)?;
        // A list that names one method (once or more) names it first.
        let first = args
            .get("methods")
            .and_then(|m| m.get(0))
            .and_then(Value::as_str);
        let (Some(method), 1) = (first, one.methods.len()) else {
            return Err(ArgError::new(
                "methods",
                "must name the one method about to run",
            ));
        };
        let args = args.get("methodArgs").unwrap_or(&NO_ARGS);
        if !(args.is_object() || args.is_null()) {
            return Err(ArgError::new("methodArgs", "must be an object"));
        }
        Ok(CheckArgs { method, args })
    }
}

/// `list` without its repeats, in the order each first came. A scan rather than a set: the lists
/// are a model's methods or what one method lacks, a few dozen at most.
fn dedup(list: Vec<String>) -> Vec<String> {
    let mut once = Vec::with_capacity(list.len());
    for item in list {
        if !once.contains(&item) {
            once.push(item);
        }
    }
    once
}

/// What one method was found to need and lack. Written as JSON by [`MethodFitness::json`]
/// (record_json.rs): no serializer of its own (issue 32).
#[derive(Debug, Clone, PartialEq)]
pub struct MethodFitness<'a> {
    /// Borrowed from the plan: not copied (issue 32).
    pub method: &'a str,
    /// Every privilege its every run needs is held (and the transport can carry it).
    pub ready: bool,
    /// What it lacks: "VM.Clone on /vms/9000".
    pub missing: Vec<String>,
    /// What only some runs need and the token lacks: "VM.PowerMgmt on /vms/100 (when the guest runs)".
    pub may_need: Vec<String>,
    pub notes: Vec<String>,
}

impl MethodFitness<'_> {
    /// The method's fitness as the record states it: `mayNeed` and `notes` left out when empty.
    fn json(&self) -> Value {
        let mut fit = Map::new();
        set(&mut fit, "method", Value::from(self.method));
        set(&mut fit, "ready", Value::Bool(self.ready));
        set(&mut fit, "missing", Value::from(self.missing.clone()));
        list(&mut fit, "mayNeed", &self.may_need);
        list(&mut fit, "notes", &self.notes);
        Value::Object(fit)
    }
}

/// One need with its check.
struct Checked {
    need: Need,
    check: Check,
}

/// One method, what its run names, and its checks.
struct Plan<'a> {
    /// Borrowed from the arguments: not copied (issue 32).
    method: &'a str,
    subjects: Subjects,
    checks: Vec<Checked>,
}

impl<'a> Plan<'a> {
    fn new(kind: GuestKind, method: &'a str, subjects: Subjects) -> Result<Plan<'a>, String> {
        let mut checks = Vec::new();
        for need in needs(kind, method).unwrap_or_default() {
            if let Some(check) = requirement(need.requires, kind)? {
                checks.push(Checked { need: *need, check });
            }
        }
        Ok(Plan {
            method,
            subjects,
            checks,
        })
    }

    fn paths(&self, out: &mut AclPaths) {
        for c in &self.checks {
            paths_of(&c.check, &self.subjects, c.need.role, out);
        }
    }

    /// What the method lacks on `held`.
    fn fitness(
        &self,
        kind: GuestKind,
        caller: Caller,
        mode: Mode,
        held: &Held,
    ) -> MethodFitness<'a> {
        let mut has = holds(held);
        let mut fit = MethodFitness {
            method: self.method,
            ready: true,
            missing: Vec::new(),
            may_need: Vec::new(),
            notes: Vec::new(),
        };
        for c in &self.checks {
            let judged = judge(&c.check, &self.subjects, c.need.role, &mut has).unwrap_or_default();
            let Some(when) = c.need.when() else {
                fit.missing.extend(judged.missing);
                fit.may_need.extend(judged.may);
                continue;
            };
            judged.push_when(when, &mut fit.may_need);
        }
        fit.missing = dedup(fit.missing);
        fit.may_need = dedup(fit.may_need);
        let container_exec = kind == GuestKind::Lxc && self.method == "guestExec";
        if container_exec && caller == Caller::Token && mode == Mode::Preflight {
            fit.missing.push(
                "the ssh transport (PVE's API has no exec for containers: pct exec runs on the node)"
                    .to_string(),
            );
        }
        let mut paths = AclPaths::default();
        self.paths(&mut paths);
        if paths.contains("/vms") {
            fit.notes
                .push("no vmid given: checked on /vms, what every guest inherits".to_string());
        }
        fit.notes
            .extend(root_only_note(caller, kind == GuestKind::Qemu, self.method));
        fit.ready = fit.missing.is_empty();
        fit
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

/// Reads what the token holds on each of `paths`.
async fn read_held<H: Host>(run: &Run<'_, H>, paths: &AclPaths) -> Result<Held, String> {
    let node = run.global.transport.node();
    let mut held = Held::new();
    for path in paths {
        let data = run
            .pve()
            .call(&endpoints::access_permissions(path))
            .await
            .map_err(|e| {
                could_not_args(
                    format_args!(
                    "read what the token may do on {path} (GET /access/permissions on node {node})"
                ),
                    &e,
                )
                .0
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
        // Pushed one by one: no collecting machinery compiled for it. A map's keys come sorted
        // and each once.
        let mut privs = Vec::new();
        match map.get(path.as_str()) {
            None if map.is_empty() => {}
            Some(Value::Object(held)) => {
                for privilege in held.keys() {
                    privs.push(Value::String(privilege.clone()));
                }
            }
            _ => return Err(shape_error(&data)),
        }
        held.insert(path.clone(), Value::Array(privs));
    }
    Ok(held)
}

/// "clone needs VM.Clone on /vms/9000 and …: missing" when the method cannot work, added to
/// `shortfalls` (written as found, `; ` between: no list of them to join).
fn shortfall(shortfalls: &mut String, fit: &MethodFitness<'_>) {
    if !fit.ready {
        let missing = fit.missing.joined(" and ");
        let short = format!("{} needs {missing}: missing", fit.method);
        push_item(shortfalls, "; ", &short);
    }
}

/// Runs `preflight`.
pub async fn preflight<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match PreflightArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let node = run.global.transport.node();
    // The `preflight-<node>` record, each field set as it is known (record_json.rs: no record type
    // of its own to fill and convert, issue 32): `caller` is `token` (the api transport) or
    // `root@pam` (pvesh over ssh); `reachable`, that the node answered `GET /version`; `methods`,
    // each method's [`MethodFitness`]; `privileges`, what PVE reported per ACL path read (none when
    // they were not all read); `pveVersion` and `error` left out when there is none.
    let mut record = Map::new();
    set(&mut record, "node", Value::from(node));
    set(&mut record, "reachable", Value::Bool(false));
    let caller = match Caller::of(&run.global.transport) {
        Caller::Token => "token",
        Caller::RootPam => "root@pam",
    };
    set(&mut record, "caller", Value::from(caller));
    set(&mut record, "methods", Value::Array(Vec::new()));
    set(&mut record, "privileges", Value::Object(Map::new()));
    set(&mut record, "lastOperation", Value::from(run.method));
    set(&mut record, "recordedAt", Value::from(run.now_iso()));
    // The course in a labeled block (`or_break!` its `?`), not an async function of its own: each
    // async function costs its own state machine (issue 32).
    let verdict = 'verdict: {
        let version = or_break!('verdict, pve_version(run).await);
        set(&mut record, "reachable", Value::Bool(true));
        set(&mut record, "pveVersion", Value::from(version.as_str()));
        let major = major_of(&version);
        let ids = (args.vmid, args.template_id);
        let mut plans = Vec::new();
        let mut paths = AclPaths::default();
        for method in &args.methods {
            let subjects = preflight_subjects(run.kind, method, ids, args.storage, node, major);
            let plan = or_break!('verdict, Plan::new(run.kind, method, subjects));
            plan.paths(&mut paths);
            plans.push(plan);
        }
        let held = or_break!(
            'verdict,
            read_held(run, &paths).await.map_err(|e| {
                format!("{e}: the token's privileges were not checked (PVE's own checks still apply to every request a method sends)")
            })
        );
        let caller = Caller::of(&run.global.transport);
        // Each method's fitness said, summed up and made JSON as it is judged: no list of them.
        let mut short = String::new();
        let mut methods = Vec::with_capacity(plans.len());
        for plan in &plans {
            let fit = plan.fitness(run.kind, caller, Mode::Preflight, &held);
            for note in fit.notes.iter().chain(&fit.may_need) {
                run.info_args(format_args!("preflight: {}: {note}", fit.method));
            }
            shortfall(&mut short, &fit);
            methods.push(fit.json());
        }
        // The privileges read are the record's as they are.
        let checked = held.len();
        set(&mut record, "privileges", Value::Object(held));
        set(&mut record, "methods", Value::Array(methods));
        match short.is_empty() {
            true => Ok(format!(
                "PVE {version} on node {node}: the token may run {} ({} ACL paths checked)",
                match args.methods.len() {
                    1 => args.methods[0].clone(),
                    n => format!("all {n} methods asked about"),
                },
                checked
            )),
            false => Err(format!("PVE {version} on node {node}: {short}")),
        }
    };
    set(&mut record, "ready", Value::Bool(verdict.is_ok()));
    put(
        &mut record,
        "error",
        verdict.as_ref().err().map(String::as_str),
    );
    let writes = vec![write_value(
        "preflight",
        format!("preflight-{node}"),
        Value::Object(record),
    )];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

/// The `permissions` check: the method swamp is about to run, with its own arguments. Writes
/// nothing.
pub async fn permissions_check<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match CheckArgs::parse(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let method = args.method;
    let node = run.global.transport.node();
    let caller = run.global.transport.caller();
    let subjects = run_subjects(run.kind, method, args.args, (node, caller), 9);
    let mut plan = match Plan::new(run.kind, method, subjects) {
        Ok(plan) => plan,
        Err(message) => return Outcome::failed(Vec::new(), message),
    };
    let mut paths = AclPaths::default();
    for major in [8, 9] {
        plan.subjects.major = major;
        plan.paths(&mut paths);
    }
    let held = match read_held(run, &paths).await {
        Ok(held) => held,
        Err(why) => return could_not_run(run, method, &why),
    };
    let caller = Caller::of(&run.global.transport);
    let mut on = |major| {
        plan.subjects.major = major;
        plan.fitness(run.kind, caller, Mode::Check, &held)
    };
    // The version is asked only when the verdict depends on it and the privileges do not tell it.
    // Whether it depends on it is whether the verdicts on 8 and 9 differ: PVE's version is read by
    // a check's `pve` parts alone, so no walk of the checks for one that applies is compiled
    // besides (issue 32). The verdict on the version found is worked out again (a plain judge of
    // the same values): no verdict is kept across the await (issue 32).
    let major = match (on(8) != on(9), major_held(&held)) {
        (false, _) => 9,
        (true, Some(major)) => major,
        (true, None) => match pve_version(run).await {
            Ok(version) => major_of(&version),
            Err(why) => return could_not_run(run, method, &why),
        },
    };
    let fit = on(major);
    let mut listed = String::new();
    for path in &paths {
        push_item(&mut listed, ", ", path);
    }
    match (fit.ready, listed.is_empty()) {
        (false, _) => {
            let mut short = String::new();
            shortfall(&mut short, &fit);
            Outcome::failed(Vec::new(), short)
        }
        (true, true) => Outcome::succeeded(
            Vec::new(),
            format!("no ACL path {method} reads is known before it runs (no vmid given)"),
        ),
        (true, false) => Outcome::succeeded(
            Vec::new(),
            format!("the token holds what {method} needs on {listed}"),
        ),
    }
}

/// The check passes when the privileges cannot be read: the method runs, PVE checks each request
/// itself. One warning says so.
fn could_not_run<H: Host>(run: &Run<'_, H>, method: &str, why: &str) -> Outcome {
    let message = format!(
        "the permission pre-check could not run ({why}); {method} runs without it, and PVE's own permission checks apply to each of its requests"
    );
    run.warn(&message);
    Outcome::succeeded(Vec::new(), message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::CHECK_PERMISSIONS;
    use crate::host::LogLevel;
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

    /// The `permissions` check before `method` with its own arguments.
    fn check(host: &ScriptedHost, kind: GuestKind, method: &str, args: Value) -> Outcome {
        let all = json!({"methods": [method], "methodArgs": args});
        run_method_of(kind, host, CHECK_PERMISSIONS, &api_args(all))
    }

    #[test]
    fn preflight_of_create_with_a_vmid_checks_vm_allocate_on_that_vmid() {
        let host = ScriptedHost::new();
        script(
            &host,
            &[
                (
                    "/storage/local-lvm",
                    json!({"/storage/local-lvm": {"Datastore.AllocateSpace": 1}}),
                ),
                (
                    "/vms/150",
                    json!({"/vms/150": {"VM.Audit": 1, "VM.Config.Options": 1}}),
                ),
            ],
        );
        let outcome = run(
            &host,
            GuestKind::Qemu,
            json!({"methods": ["create"], "vmid": 150, "storage": "local-lvm"}),
        );
        assert_eq!(
            failure(&outcome),
            "PVE 9.1.3 on node pve1: create needs VM.Allocate on /vms/150: missing"
        );
        let notes = outcome.writes[0].data["methods"][0]["notes"].to_string();
        assert!(!notes.contains("no vmid given"), "{notes}");
    }

    #[test]
    fn the_check_refuses_a_create_without_vm_allocate_on_its_vmid_before_anything_is_sent() {
        let host = ScriptedHost::new();
        let answers = [
            json!({"/storage/local-lvm": {"Datastore.AllocateSpace": 1}}),
            json!({"/vms/150": {"VM.Audit": 1, "VM.Config.Options": 1}}),
        ];
        host.on("GET /access/permissions", answers.map(Answer::Data));
        let outcome = check(
            &host,
            GuestKind::Qemu,
            "create",
            json!({"vmid": 150, "name": "web", "config": {"scsi0": "local-lvm:8"}}),
        );
        assert_eq!(
            failure(&outcome),
            "create needs VM.Allocate on /vms/150: missing"
        );
        assert_eq!(asked(&host), ["/storage/local-lvm", "/vms/150"]);
        let sent: Vec<String> = host
            .requests
            .borrow()
            .iter()
            .map(|r| r.method.to_string())
            .collect();
        assert!(sent.iter().all(|m| m == "GET"), "{sent:?}");
        assert!(
            !host.routes_called().iter().any(|r| r.contains("/version")),
            "no version read"
        );
    }

    const ALICES_TASK: &str = "UPID:pve2:0000AAA1:0000BBB1:6571E3A2:vzdump:100:alice@pve:";

    #[test]
    fn the_check_refuses_waiting_for_another_users_task_without_sys_audit_on_its_node() {
        let host = ScriptedHost::new();
        host.data("GET /access/permissions", json!({}));
        let outcome = check(
            &host,
            GuestKind::Qemu,
            "waitTask",
            json!({"upid": ALICES_TASK}),
        );
        assert_eq!(
            failure(&outcome),
            "waitTask needs Sys.Audit on /nodes/pve2: missing"
        );
        assert_eq!(asked(&host), ["/nodes/pve2"]);
    }

    #[test]
    fn the_check_passes_waiting_for_another_users_task_with_sys_audit_on_its_node() {
        let host = ScriptedHost::new();
        host.data(
            "GET /access/permissions",
            json!({"/nodes/pve2": {"Sys.Audit": 1}}),
        );
        let outcome = check(
            &host,
            GuestKind::Qemu,
            "waitTask",
            json!({"upid": ALICES_TASK}),
        );
        assert!(outcome.is_success(), "{outcome:?}");
    }

    #[test]
    fn the_check_asks_nothing_to_wait_for_the_tokens_own_task() {
        let host = ScriptedHost::new();
        let own = "UPID:pve2:0000AAA1:0000BBB1:6571E3A2:vzdump:100:root@pam!t:";
        host.data("GET /access/permissions", json!({}));
        let outcome = check(&host, GuestKind::Qemu, "waitTask", json!({"upid": own}));
        assert!(outcome.is_success(), "{outcome:?}");
    }

    #[test]
    fn waiting_by_a_filter_may_need_sys_audit_and_is_not_refused_for_it() {
        let host = ScriptedHost::new();
        host.data("GET /access/permissions", json!({}));
        let args = json!({"node": "pve2", "vmid": 100});
        let outcome = check(&host, GuestKind::Qemu, "waitTask", args);
        assert!(outcome.is_success(), "{outcome:?}");
        let host = ScriptedHost::new();
        script(&host, &[("/nodes/pve1", json!({}))]);
        let outcome = run(&host, GuestKind::Qemu, json!({"methods": ["waitTask"]}));
        assert!(outcome.is_success(), "{outcome:?}");
        let may = outcome.writes[0].data["methods"][0]["mayNeed"].to_string();
        assert!(
            may.contains("Sys.Audit on /nodes/pve1 (with `another user's task`)"),
            "{may}"
        );
    }

    #[test]
    fn the_check_refuses_a_backup_of_a_guest_whose_deeper_acl_lacks_vm_backup() {
        let host = ScriptedHost::new();
        let answers = [
            json!({"/storage/local": {"Datastore.AllocateSpace": 1, "Datastore.Audit": 1}}),
            json!({"/vms/102": {"VM.Audit": 1}}),
        ];
        host.on("GET /access/permissions", answers.map(Answer::Data));
        let outcome = check(
            &host,
            GuestKind::Qemu,
            "backup",
            json!({"vmid": 102, "storage": "local"}),
        );
        assert_eq!(
            failure(&outcome),
            "backup needs VM.Backup on /vms/102: missing"
        );
    }

    #[test]
    fn a_privilege_only_pve_8_has_tells_the_check_the_version_without_asking_it() {
        let host = ScriptedHost::new();
        let privs = json!({"/vms/100": {"VM.Audit": 1, "VM.Monitor": 1}});
        host.data("GET /access/permissions", privs);
        let outcome = check(&host, GuestKind::Qemu, "fileWrite", json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(!host.routes_called().iter().any(|r| r.contains("/version")));
    }

    #[test]
    fn when_the_privileges_do_not_tell_the_version_it_is_read_and_names_that_versions_privilege() {
        for (version, wanted) in [
            ("8.4.14", "VM.Monitor on /vms/100"),
            (
                "9.0.3",
                "VM.GuestAgent.FileWrite or VM.GuestAgent.Unrestricted on /vms/100",
            ),
        ] {
            let host = ScriptedHost::new();
            host.data("GET /version", json!({"version": version}));
            host.data(
                "GET /access/permissions",
                json!({"/vms/100": {"VM.Audit": 1}}),
            );
            let outcome = check(&host, GuestKind::Qemu, "fileWrite", json!({"vmid": 100}));
            let message = failure(&outcome);
            assert!(
                message.starts_with(&format!("fileWrite needs {wanted}")),
                "{version}: {message}"
            );
            let other = if version.starts_with('8') {
                "GuestAgent"
            } else {
                "VM.Monitor"
            };
            assert!(!message.contains(other), "{version}: {message}");
        }
    }

    #[test]
    fn a_permission_read_that_cannot_happen_lets_the_method_run_with_one_warning() {
        let host = ScriptedHost::new();
        host.on(
            "GET /access/permissions",
            [Answer::Error(501, "Not Implemented".into())],
        );
        let outcome = check(&host, GuestKind::Qemu, "delete", json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
        let warnings: Vec<String> = host
            .logs
            .borrow()
            .iter()
            .filter(|(level, _)| *level == LogLevel::Warning)
            .map(|(_, line)| line.clone())
            .collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("the permission pre-check could not run"),
            "{warnings:?}"
        );
        assert!(
            warnings[0].contains("PVE's own permission checks apply"),
            "{warnings:?}"
        );
    }

    #[test]
    fn preflight_fails_saying_the_privileges_were_not_checked_when_they_cannot_be_read() {
        let host = ScriptedHost::new();
        host.data("GET /version", json!({"version": "9.1.3"}));
        host.on(
            "GET /access/permissions",
            [Answer::Error(501, "Not Implemented".into())],
        );
        let outcome = run(
            &host,
            GuestKind::Qemu,
            json!({"methods": ["lookup"], "vmid": 100}),
        );
        let message = failure(&outcome);
        assert!(
            message.contains("the token's privileges were not checked"),
            "{message}"
        );
        assert_eq!(outcome.writes[0].data["reachable"], true);
        assert_eq!(outcome.writes[0].data["ready"], false);
    }

    #[test]
    fn the_check_takes_one_method_and_an_object_of_its_arguments() {
        let two = json!({"methods": ["create", "clone"]});
        let two = CheckArgs::parse(GuestKind::Qemu, &two);
        assert_eq!(two.unwrap_err().field, "methods");
        let bad = json!({"methods": ["create"], "methodArgs": 3});
        let bad = CheckArgs::parse(GuestKind::Qemu, &bad);
        assert_eq!(bad.unwrap_err().field, "methodArgs");
        assert!(CheckArgs::parse(GuestKind::Lxc, &json!({"methods": ["create"]})).is_ok());
    }

    #[test]
    fn a_method_the_model_lacks_is_refused_naming_it() {
        let e = PreflightArgs::parse(GuestKind::Lxc, &json!({"methods": ["clone"]})).unwrap_err();
        assert_eq!(e.field, "methods");
        assert!(e.rule.contains("\"clone\""), "{}", e.rule);
        let none = json!({});
        let all = PreflightArgs::parse(GuestKind::Qemu, &none).unwrap();
        assert!(all.methods.contains(&"fileRead".to_string()));
        assert!(!all.methods.contains(&"resize".to_string()), "an lxc name");
    }
}
