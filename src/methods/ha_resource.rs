//! `haResource`: makes the guest an HA resource with the state and options asked, updates it, or
//! (`delete: true`) removes it, through the HA engine (guest/ha.rs). Succeeds only once the HA
//! manager's `status/current` shows the requested state applied — for `started` the service
//! started on a node, for removal the service gone from its list — and the config reads back as
//! given.

use crate::args::{ArgError, Fields};
use crate::guest::config::not_as_asked;
use crate::guest::ha::{self, describe, HaChange, HaView, Write};
use crate::guest::reference::GuestRef;
use crate::pve::endpoints::GuestKind;
use crate::pve::flex;
use crate::pve::request::{push_param, Verb};
use serde_json::Value;

/// The states a request may ask (pve-ha-manager `PVE/HA/Resources.pm` `state` enum; `enabled` is
/// only an alias of `started` there, and not offered here).
pub const STATES: &[&str] = &["started", "stopped", "disabled", "ignored"];

/// Each option: its argument, PVE's name, its default when the config leaves it out
/// (`PVE/HA/Config.pm` read_and_check_resources_config) and how the argument is read.
const OPTIONS: [(&str, &str, &str, ha::Reader); 5] = [
    ("state", "state", "started", state),
    ("maxRestart", "max_restart", "1", count),
    ("maxRelocate", "max_relocate", "1", count),
    ("failback", "failback", "1", ha::flag),
    ("comment", "comment", "", |f, _| ha::comment(f)),
];

/// The arguments of `haResource`: the guest, PVE's name and value of each option given, removal.
#[derive(Debug, Clone, PartialEq)]
pub struct HaResourceArgs {
    pub target: GuestRef,
    pub options: Vec<(String, String)>,
    pub delete: bool,
}

/// The state asked, one of [`STATES`].
fn state(fields: &Fields, key: &str) -> Result<Option<String>, ArgError> {
    fields.optional_one_of(key, STATES)
}

/// A count PVE takes (`max_restart`, `max_relocate`: 0 and up).
fn count(fields: &Fields, key: &str) -> Result<Option<String>, ArgError> {
    let count = fields.optional_count_in(key, 0, i64::from(u32::MAX))?;
    Ok(count.map(|n| n.to_string()))
}

impl HaResourceArgs {
    // Always inlined into its one caller, `change`: the arguments are built in their box.
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let delete = fields.flag_or("delete", false)?;
        let mut options = Vec::new();
        for &(arg, name, _, read) in &OPTIONS {
            if let Some(value) = read(&fields, arg)? {
                options.push((name.to_string(), value));
            }
        }
        if delete && !options.is_empty() {
            let rule = "removes the HA resource: give no state or option with it";
            return Err(ArgError::new("delete", rule));
        }
        Ok(HaResourceArgs {
            target,
            options,
            delete,
        })
    }

    /// The state asked, if any.
    fn state(&self) -> Option<&str> {
        for (key, value) in &self.options {
            if *key == "state" {
                return Some(value);
            }
        }
        None
    }
}

/// What the config shows for PVE's option `name` (its default when left out).
fn configured(config: &Value, name: &str) -> String {
    let raw = config.get(name);
    let Some(text) = raw.and_then(flex::string_of) else {
        let default = OPTIONS.iter().find(|o| o.1 == name);
        return default.map_or("", |o| o.2).to_string();
    };
    match name {
        // `enabled` is read as `started` (read_and_check_resources_config).
        "state" if text == "enabled" => "started".into(),
        "failback" => ha::bit(raw.and_then(flex::bool_of).unwrap_or(true)),
        _ => text,
    }
}

/// Whether the manager's entry shows `target` applied (Manager.pm: a started service is
/// `crm_state started` and, once the LRM reports it running, verbose `state started`; a stopped
/// or disabled one `crm_state stopped`; an ignored one is dropped from the manager's services, so
/// its entry comes from the config alone, without `crm_state`).
pub fn applied(target: &str, service: Option<&Value>) -> Result<String, String> {
    let Some(s) = service else {
        return Err(describe(None));
    };
    let get = |k: &str| s.get(k).and_then(Value::as_str);
    // The verbose state is the one asked; the manager's, by the state asked.
    let crm = match target {
        "ignored" => None,
        "started" => Some("started"),
        _ => Some("stopped"),
    };
    let ok = get("request_state") == Some(target)
        && get("state") == Some(target)
        && get("crm_state") == crm;
    match ok {
        true => Ok(describe(service)),
        false => Err(describe(service)),
    }
}

/// haResource's change: the arguments.
struct ResourceChange {
    args: HaResourceArgs,
}

impl HaChange for ResourceChange {
    fn target(&self) -> &GuestRef {
        &self.args.target
    }

    fn plan(&self, view: &HaView) -> Result<Vec<Write>, String> {
        plan(&self.args, view)
    }

    fn judge(&self, view: &HaView) -> Result<String, String> {
        judge(&self.args, view)
    }

    fn read_back(&self, view: &HaView) -> Result<(), String> {
        read_back(&self.args, view)
    }

    fn waits_lock(&self) -> bool {
        !self.args.delete && self.args.state() != Some("ignored")
    }
}

/// haResource's arguments as its change.
pub fn change(args: &Value, _: GuestKind) -> Result<Box<dyn HaChange>, ArgError> {
    Ok(Box::new(ResourceChange {
        args: HaResourceArgs::parse(args)?,
    }))
}

/// The writes that make the HA resource as asked.
fn plan(args: &HaResourceArgs, view: &HaView) -> Result<Vec<Write>, String> {
    // One write at most, built on one path (issue 32).
    let (verb, params) = match view.config.as_ref() {
        None if args.delete => return Ok(vec![]),
        Some(_) if args.delete => (Verb::Delete, Vec::new()),
        None => (Verb::Create, args.options.clone()),
        Some(config) => match update(args, view, config)? {
            params if params.is_empty() => return Ok(Vec::new()),
            params => (Verb::Set, params),
        },
    };
    Ok(vec![(None, verb, params)])
}

/// The parameters of an update of the configured resource (none: already as asked).
fn update(
    args: &HaResourceArgs,
    view: &HaView,
    config: &Value,
) -> Result<Vec<(String, String)>, String> {
    let asked = args.state();
    // Resources.pm update → check_service_state: a managed (not ignored) service in error
    // state takes a write only with `state` disabled sent.
    let service = view.service.as_ref();
    let crm = service.and_then(|s| s.get("crm_state"));
    let error =
        crm.and_then(Value::as_str) == Some("error") && configured(config, "state") != "ignored";
    if error && asked != Some("disabled") {
        let sid = service.and_then(|s| s.get("sid")).and_then(Value::as_str);
        return Err(format!(
            "PVE refuses it: \"service '{}' in error state, must be disabled and fixed first\" (Resources.pm check_service_state) — set state disabled, fix the guest, then ask again",
            sid.unwrap_or("?")
        ));
    }
    let mut params = Vec::new();
    for (key, want, _) in &ha::differing(&args.options, config, configured) {
        push_param(&mut params, key, want);
    }
    if error && !params.is_empty() && !params.iter().any(|(k, _)| k == "state") {
        push_param(&mut params, "state", "disabled");
    }
    Ok(params)
}

/// Whether the manager's entry shows the change: a removal gone from its list, else the state
/// asked applied — without one, the state the config read before the writes holds (PVE's default
/// `started`; none for a new resource).
fn judge(args: &HaResourceArgs, view: &HaView) -> Result<String, String> {
    // `view.config` is still the one planned from: a removal of a configured resource is a
    // delete, which on PVE 9 purges the sid from the HA rules (Config.pm
    // delete_service_from_config, `purge` 1 by default): the summary says so (the rules are not
    // read for it).
    let (config, service) = (view.config.as_ref(), view.service.as_ref());
    match (args.delete, service) {
        (true, None) => Ok(String::from("gone from the HA manager's service list")
            + ["", "; on PVE 9, PVE also removed it from every HA rule naming it and deleted any rule it left without resources"][usize::from(config.is_some())]),
        (true, Some(_)) => Err(format!("still listed: {}", describe(service))),
        (false, _) => {
            let configured_state = configured(config.unwrap_or(&Value::Null), "state");
            applied(args.state().unwrap_or(&configured_state), service)
        }
    }
}

/// Whether the config reads back as asked.
fn read_back(args: &HaResourceArgs, view: &HaView) -> Result<(), String> {
    match (args.delete, view.config.as_ref()) {
        (true, None) => Ok(()),
        (true, Some(_)) => Err("the resource is still configured".to_string()),
        (false, None) => Err("no such resource".to_string()),
        (false, Some(config)) => {
            match ha::differing(&args.options, config, configured).as_slice() {
                [] => Ok(()),
                wrong => Err(not_as_asked(wrong)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const CONFIG: &str = "GET /cluster/ha/resources/vm:100";
    const CURRENT: &str = "GET /cluster/ha/status/current";

    fn vm() -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "stopped"}),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({}));
        host
    }

    fn service(state: &str, crm: Option<&str>, request: &str) -> Value {
        let mut s = json!({"id": "service:vm:100", "sid": "vm:100", "type": "service",
            "node": "pve1", "state": state, "request_state": request, "status": "x"});
        if let Some(crm) = crm {
            s["crm_state"] = json!(crm);
        }
        json!([master(), s])
    }

    /// Status.pm's entry of a master whose timestamp is current.
    fn master() -> Value {
        json!({"id": "master", "type": "master", "node": "pve1", "status": "pve1 (active, now)"})
    }

    fn missing() -> Answer {
        Answer::Error(500, "no such resource 'vm:100'\n".into())
    }

    #[test]
    fn a_new_resource_succeeds_only_once_the_manager_shows_it_started() {
        let host = vm();
        host.on(
            CONFIG,
            [
                missing(),
                Answer::Data(
                    json!({"sid": "vm:100", "type": "vm", "state": "started", "max_restart": 2}),
                ),
            ],
        );
        host.on(
            CURRENT,
            [
                Answer::Data(json!([master()])),
                Answer::Data(service("queued", None, "started")),
                Answer::Data(service("starting", Some("started"), "started")),
                Answer::Data(service("started", Some("started"), "started")),
            ],
        );
        host.data("POST /cluster/ha/resources", Value::Null);
        let args = json!({"vmid": 100, "state": "started", "maxRestart": 2});
        let outcome = run_method(&host, "qemu", "haResource", args);
        assert!(
            summary_of(&outcome).contains("state started, crm_state started"),
            "{outcome:?}"
        );
        assert_eq!(
            host.body_of("POST"),
            "sid=vm%3A100&state=started&max_restart=2"
        );
    }

    #[test]
    fn a_manager_that_applies_another_state_fails_saying_what_it_showed() {
        let host = vm();
        host.on(
            CONFIG,
            [Answer::Data(json!({"sid": "vm:100", "state": "stopped"}))],
        );
        host.data(CURRENT, service("stopped", Some("stopped"), "stopped"));
        host.data("PUT /cluster/ha/resources/vm:100", Value::Null);
        let args = json!({"vmid": 100, "state": "started"});
        let outcome = run_method(&host, "qemu", "haResource", args);
        let message = failure_of(&outcome);
        assert!(message.contains("did not apply it"), "{message}");
        assert!(
            message.contains("last observed: state stopped, crm_state stopped"),
            "{message}"
        );
    }

    #[test]
    fn removal_succeeds_once_the_service_is_gone_and_nothing_is_sent_when_not_managed() {
        let host = vm();
        host.on(
            CONFIG,
            [
                Answer::Data(json!({"sid": "vm:100", "state": "started"})),
                missing(),
            ],
        );
        host.on(
            CURRENT,
            [
                Answer::Data(service("started", Some("started"), "started")),
                Answer::Data(service("deleting", Some("started"), "started")),
                Answer::Data(json!([master()])),
            ],
        );
        host.data("DELETE /cluster/ha/resources/vm:100", Value::Null);
        let outcome = run_method(
            &host,
            "qemu",
            "haResource",
            json!({"vmid": 100, "delete": true}),
        );
        assert!(
            summary_of(&outcome).contains("removed it from every HA rule naming it"),
            "{outcome:?}"
        );

        let host = vm();
        host.on(CONFIG, [missing()]);
        host.data(CURRENT, json!([master()]));
        let outcome = run_method(
            &host,
            "qemu",
            "haResource",
            json!({"vmid": 100, "delete": true}),
        );
        assert!(summary_of(&outcome).contains("nothing sent"), "{outcome:?}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("DELETE")));
    }

    #[test]
    fn a_removal_of_a_locked_guest_is_sent_at_once() {
        let host = vm();
        host.set(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running", "lock": "backup"}),
        );
        host.on(
            CONFIG,
            [
                Answer::Data(json!({"sid": "vm:100", "state": "started"})),
                missing(),
            ],
        );
        host.on(
            CURRENT,
            [
                Answer::Data(service("started", Some("started"), "started")),
                Answer::Data(json!([master()])),
            ],
        );
        host.data("DELETE /cluster/ha/resources/vm:100", Value::Null);
        let args = json!({"vmid": 100, "delete": true});
        let outcome = run_method(&host, "qemu", "haResource", args);
        assert!(summary_of(&outcome).contains("gone"), "{outcome:?}");
        let status = "GET /nodes/pve1/qemu/100/status/current";
        assert_eq!(
            host.routes_called().iter().filter(|r| *r == status).count(),
            1
        );
    }

    #[test]
    fn a_service_in_error_state_is_refused_up_front_unless_disabled() {
        let host = vm();
        host.on(
            CONFIG,
            [Answer::Data(json!({"sid": "vm:100", "state": "started"}))],
        );
        host.data(CURRENT, service("error", Some("error"), "started"));
        let outcome = run_method(
            &host,
            "qemu",
            "haResource",
            json!({"vmid": 100, "state": "stopped"}),
        );
        assert!(
            failure_of(&outcome).contains("in error state, must be disabled"),
            "{outcome:?}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("PUT")));
    }

    #[test]
    fn bad_arguments_are_refused_naming_the_field() {
        for (args, field) in [
            (json!({"vmid": 100, "state": "enabledd"}), "state"),
            (json!({"vmid": 100, "maxRestart": -1}), "maxRestart"),
            (
                json!({"vmid": 100, "delete": true, "state": "started"}),
                "delete",
            ),
            (json!({"vmid": 100, "failback": "yes"}), "failback"),
            (json!({"vmid": 100, "comment": "\tweb"}), "comment"),
        ] {
            let host = ScriptedHost::new();
            let outcome = run_method(&host, "qemu", "haResource", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{outcome:?}"
            );
        }
    }
}

#[cfg(test)]
mod review {
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::{json, Value};

    fn host(config: Value, current: Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "stopped"}),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({}));
        host.on("GET /cluster/ha/resources/vm:100", [Answer::Data(config)]);
        host.data("GET /cluster/ha/status/current", current);
        host.data("PUT /cluster/ha/resources/vm:100", Value::Null);
        host
    }

    fn dead(state: &str, crm: &str, request: &str) -> Value {
        json!([{"id": "quorum", "type": "quorum", "status": "OK", "quorate": 1},
            {"id": "master", "type": "master", "node": "pve1", "timestamp": 1,
             "status": "pve1 (old timestamp - dead?, Thu Jan  1 00:00:01 1970)"},
            {"id": "service:vm:100", "sid": "vm:100", "type": "service", "node": "pve1",
             "state": state, "crm_state": crm, "request_state": request}])
    }

    fn active(state: &str, crm: &str, request: &str) -> Value {
        let mut list = dead(state, crm, request);
        list[1]["status"] = json!("pve1 (active, now)");
        list
    }

    #[test]
    fn an_error_state_ends_the_wait_at_once() {
        let h = host(
            json!({"sid": "vm:100", "state": "stopped"}),
            active("stopped", "stopped", "stopped"),
        );
        // The write's round ends in error (the LRM could not start it).
        h.on(
            "GET /cluster/ha/status/current",
            [Answer::Data(active("error", "error", "started"))],
        );
        let args = json!({"vmid": 100, "state": "started"});
        let outcome = run_method(&h, "qemu", "haResource", args);
        let message = failure_of(&outcome);
        assert!(message.contains("error"), "{message}");
        let reads = h
            .routes_called()
            .iter()
            .filter(|r| r.contains("ha/status"))
            .count();
        assert!(reads <= 3, "{reads} status reads: {message}");
    }

    #[test]
    fn an_error_state_takes_a_put_only_with_state_disabled() {
        // Resources.pm check_service_state looks at the state sent, not the configured one.
        let h = host(
            json!({"sid": "vm:100", "state": "disabled"}),
            active("clearing error flag", "error", "disabled"),
        );
        let args = json!({"vmid": 100, "state": "disabled", "maxRestart": 3});
        run_method(&h, "qemu", "haResource", args);
        assert!(
            h.body_of("PUT").contains("state=disabled"),
            "{}",
            h.body_of("PUT")
        );
        let h = host(
            json!({"sid": "vm:100", "state": "disabled"}),
            active("clearing error flag", "error", "disabled"),
        );
        let args = json!({"vmid": 100, "maxRestart": 3});
        let outcome = run_method(&h, "qemu", "haResource", args);
        assert!(
            failure_of(&outcome).contains("must be disabled"),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_dead_manager_is_no_evidence() {
        // Written: disabled → stopped; the dead CRM's last round already says stopped.
        let h = host(
            json!({"sid": "vm:100", "state": "disabled"}),
            dead("stopped", "stopped", "stopped"),
        );
        let args = json!({"vmid": 100, "state": "stopped"});
        let outcome = run_method(&h, "qemu", "haResource", args);
        let message = failure_of(&outcome);
        assert!(message.contains("old timestamp"), "{message}");
        // Nothing to write: still no evidence without an active manager.
        let h = host(
            json!({"sid": "vm:100", "state": "stopped"}),
            dead("stopped", "stopped", "stopped"),
        );
        let args = json!({"vmid": 100, "state": "stopped"});
        let outcome = run_method(&h, "qemu", "haResource", args);
        let message = failure_of(&outcome);
        assert!(message.contains("old timestamp"), "{message}");
    }
}
