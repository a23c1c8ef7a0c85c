//! `haRule`: creates, updates or deletes a PVE 9 HA rule naming the guest — node affinity
//! (`nodes` with priorities, `strict`) or resource affinity (`affinity` positive|negative with
//! other resources) — through the HA engine (guest/ha.rs), on `/cluster/ha/rules`
//! (pve-ha-manager `src/PVE/API2/HA/Rules.pm`). What PVE 9 shows of a rule in effect is its
//! config: `GET …/rules/{rule}` adds `errors` to a rule the manager would drop as infeasible
//! (Rules.pm check_feasibility, the same check the CRM runs before applying the rules:
//! `PVE/HA/Manager.pm` update_crs_scheduler_mode/compute via `PVE::HA::Rules` canonicalize), and a
//! disabled rule is not applied. So the method succeeds when the rule reads back as declared,
//! without `errors` and not disabled (unless asked); where the manager places the services is not
//! judged. PVE 8 (`GET /version` 8.x) has no rules: a node-affinity rule is made there as the HA
//! group PVE 9 would migrate into it (guest/ha.rs `HaObject::Group`) — the group `<rule>` with
//! `nodes`, `restricted` = `strict` and `comment` (PVE 8 `src/PVE/API2/HA/Groups.pm`), and every
//! resource of the rule naming it as its `group` (`Resources.pm` update); a removal clears the
//! resources' `group` first, as Groups.pm delete refuses a group in use (`ha group is used by
//! service '<sid>'`), then deletes the group.

use crate::args::{digit, every_byte, is_name, ArgError, Fields};
use crate::guest::config::not_as_asked;
use crate::guest::ha::{self, sid, HaChange, HaObject, HaView, Write};
use crate::guest::reference::GuestRef;
use crate::pve::endpoints::GuestKind;
use crate::pve::flex;
use crate::pve::request::{push_param, Verb};
use crate::quote::push_item;
use crate::quote::Joined;
use serde_json::Value;

/// The rule types (Rules.pm lookup_types) and what each takes besides `resources`.
const TYPES: [&str; 2] = ["node-affinity", "resource-affinity"];

/// The arguments of `haRule`: the guest, the rule's id, type and PVE's parameters, or removal.
#[derive(Debug, Clone, PartialEq)]
pub struct HaRuleArgs {
    pub target: GuestRef,
    pub rule: String,
    pub kind: String,
    /// `resources` (without the guest's own sid, added at run time), `nodes`, `strict`,
    /// `affinity`, `comment`, `disable`, as PVE spells them.
    pub params: Vec<(&'static str, String)>,
    pub delete: bool,
}

/// `node[:priority]` as NodeAffinity.pm stores it: one entry per node (the last given: a hash),
/// the priority as a number (`int`) and without `:0`, sorted (encode_plugin_value sorts by node;
/// both sides of a comparison pass through here).
fn nodes_of(list: &str) -> String {
    let mut nodes: Vec<String> = Vec::new();
    // Walked from the last: the list holds each node once, as given last (no entry removed).
    for n in items_of(list).iter().rev() {
        let (name, prio) = n.split_once(':').unwrap_or((n, "0"));
        let given = |e: &String| e.split_once(':').map_or(&e[..], |n| n.0) == name;
        if nodes.iter().any(given) {
            continue;
        }
        // Pushed piece by piece, not formatted (issue 32).
        let mut entry = name.to_string();
        let prio = prio.trim_start_matches('0');
        if !prio.is_empty() {
            entry.push(':');
            entry.push_str(prio);
        }
        nodes.push(entry);
    }
    crate::order::sort_by(&mut nodes, &Ord::cmp);
    nodes.joined(",")
}

/// The entries of a comma-separated list, without empty ones.
fn items_of(list: &str) -> Vec<&str> {
    let mut items = Vec::new();
    for item in list.split(',') {
        if !item.is_empty() {
            items.push(item);
        }
    }
    items
}

/// Rules.pm encode_value: the resources sorted, without duplicates.
fn resources_of(list: &str) -> String {
    let mut sids = items_of(list);
    crate::order::sort_dedup(&mut sids);
    sids.joined(",")
}

/// pve-configid (PVE::JSONSchema pve_verify_configid: `[a-z][a-z0-9_-]+`, any case, any length):
/// the firewall's name check without its bound.
fn is_config_id(id: &str) -> bool {
    is_name(id, usize::MAX)
}

/// PVE/HA/Tools.pm pve_verify_ha_resource_id (a guest's: vm:<vmid>, ct:<vmid>).
fn is_sid(s: &str) -> bool {
    let id = s.strip_prefix("vm:").or_else(|| s.strip_prefix("ct:"));
    id.is_some_and(|id| {
        (3..=9).contains(&id.len()) && !id.starts_with('0') && every_byte(id, digit)
    })
}

/// parse_node_priority: a node name, then an optional `:<priority>`. By bytes: every allowed
/// character is ASCII, and no byte of a longer UTF-8 character is (issue 32).
fn is_node(s: &str) -> bool {
    let (name, prio) = s.split_once(':').unwrap_or((s, "0"));
    let edge = |c: Option<&u8>| c.is_some_and(u8::is_ascii_alphanumeric);
    edge(name.as_bytes().first())
        && edge(name.as_bytes().last())
        && every_byte(name, |c| c.is_ascii_alphanumeric() || c == b'-')
        && !prio.is_empty()
        && every_byte(prio, digit)
}

/// An optional list of strings that each pass `valid`, joined with commas.
fn list(fields: &Fields, key: &str, valid: fn(&str) -> bool) -> Result<Option<String>, ArgError> {
    let Some(items) = fields.optional::<Vec<String>>(key)? else {
        return Ok(None);
    };
    if let Some(bad) = items.iter().find(|i| !valid(i)) {
        return Err(ArgError::new(key, format!("{bad:?} is not valid")));
    }
    Ok(Some(items.joined(",")))
}

/// A removal takes nothing but the guest and the rule.
fn alone_with_delete(fields: &Fields) -> Result<(), ArgError> {
    // Borrowed, so the list is read in place, not built on the stack at each call (issue 32).
    let given = &[
        "type",
        "resources",
        "nodes",
        "strict",
        "affinity",
        "comment",
        "disable",
    ];
    for &k in given {
        if fields.present(k).ok().flatten().is_some() {
            let rule = "deletes the rule: give nothing else with delete";
            return Err(ArgError::new(k, rule));
        }
    }
    Ok(())
}

/// What a parameter must be where its rule type needs it, and the rule it breaks otherwise.
type Needed = Option<(fn(&str) -> bool, &'static str)>;

/// A rule's parameters in the order they are read: the field, how it is read, the one rule type
/// that takes it (`Some(true)`: node-affinity), and, where that type needs it, what it must be.
const PARAMS: [(&str, ha::Reader, Option<bool>, Needed); 6] = [
    ("resources", |f, k| list(f, k, is_sid), None, None),
    (
        "nodes",
        |f, k| Ok(list(f, k, is_node)?.map(|n| nodes_of(&n))),
        Some(true),
        Some((|n| !n.is_empty(), "is required for a node-affinity rule")),
    ),
    ("strict", ha::flag, Some(true), None),
    (
        "affinity",
        |f, k| Ok(f.text(k)?.map(str::to_string)),
        Some(false),
        Some((
            |a| a == "positive" || a == "negative",
            "must be positive or negative for a resource-affinity rule",
        )),
    ),
    ("comment", |f, _| ha::comment(f), None, None),
    ("disable", ha::flag, None, None),
];

/// The rule's parameters as PVE spells them, for a rule of type `kind`.
fn params_of(fields: &Fields, kind: &str) -> Result<Vec<(&'static str, String)>, ArgError> {
    if !TYPES.contains(&kind) {
        let rule = "must be one of node-affinity, resource-affinity";
        return Err(ArgError::new("type", rule));
    }
    let node = kind == "node-affinity";
    let mut params = Vec::new();
    for &(key, read, only, needed) in &PARAMS {
        let value = read(fields, key)?;
        match (only, &value, needed) {
            (Some(only), Some(_), _) if only != node => {
                let kind = ["resource-affinity", "node-affinity"][usize::from(only)];
                return Err(ArgError::new(key, format!("is for {kind} rules only")));
            }
            (Some(only), _, Some((valid, rule)))
                if only == node && !value.as_deref().is_some_and(valid) =>
            {
                return Err(ArgError::new(key, rule));
            }
            _ => {}
        }
        if let Some(value) = value {
            params.push((key, value));
        }
    }
    Ok(params)
}

impl HaRuleArgs {
    // Always inlined into its one caller, `change`: the arguments are built in their box.
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let rule = fields.line_str("rule")?;
        if !is_config_id(rule) {
            let why = "must be a letter then letters, digits, - or _";
            return Err(ArgError::new("rule", why));
        }
        let delete = fields.flag_or("delete", false)?;
        let kind = fields.text("type")?.unwrap_or_default();
        let params = match delete {
            true => alone_with_delete(&fields).map(|()| Vec::new())?,
            false => params_of(&fields, kind)?,
        };
        Ok(HaRuleArgs {
            target,
            rule: rule.to_string(),
            kind: kind.to_string(),
            params,
            delete,
        })
    }
}

/// What the rule read shows for PVE's parameter `name`, as the arguments spell it.
fn shown(rule: &Value, name: &str) -> String {
    let raw = rule.get(name);
    if let "strict" | "disable" | "restricted" = name {
        let on = raw.and_then(flex::bool_of).unwrap_or(false);
        return ha::bit(on);
    }
    // Read once, then normalized as the arguments are.
    let text = raw.and_then(flex::string_of).unwrap_or_default();
    match name {
        "nodes" => nodes_of(&text),
        "resources" => resources_of(&text),
        _ => text,
    }
}

/// The `group` of HA resource `sid` in the resources list (PVE 8).
fn group_of(all: &[Value], sid: &str) -> Option<String> {
    let entry = all
        .iter()
        .find(|r| r.get("sid").and_then(Value::as_str) == Some(sid));
    entry.and_then(|r| r.get("group")).and_then(flex::string_of)
}

/// API2/HA/Rules.pm create/update (assert_valid_resources_param): `cannot use unmanaged
/// resource(s)` — every resource sent must be an HA resource.
fn managed(view: &HaView, params: &[(String, String)]) -> Result<(), String> {
    let sent = params.iter().find(|(k, _)| k == "resources");
    let listed = |s: &&str| ha::lists(view, s, false);
    match sent.and_then(|(_, list)| list.split(',').find(|s| !listed(s))) {
        Some(sid) => Err(format!("PVE uses only HA resources in a rule and {sid} is not one (add it with haResource first)")),
        None => Ok(()),
    }
}

/// PVE 8: the write of one parameter on HA resource `sid` (its `group`, or `delete=group`).
fn set_on(sid: &str, key: &str, value: &str) -> Write {
    let mut params = Vec::new();
    push_param(&mut params, key, value);
    (Some(sid.to_string()), Verb::Set, params)
}

/// The parameters of an update, pushed onto `set`: those the read does not show as asked.
fn set_of(rule: &Value, params: &[(String, String)], set: &mut Vec<(String, String)>) {
    for &(key, want, _) in &ha::differing(params, rule, shown) {
        // Rules.pm: `disable` 0 is dropped from a request; it is cleared with `delete`.
        match (key, want) {
            ("disable", "0") => push_param(set, "delete", "disable"),
            _ => push_param(set, key, want),
        }
    }
}

/// The rule asked, on the guest of kind `kind`: what the engine's plan and read-back judge by.
struct Asked {
    args: HaRuleArgs,
    kind: GuestKind,
}

impl Asked {
    /// The params with the guest's own sid among the resources, as PVE stores them.
    /// `resources` leads (`PARAMS`' order, the order PVE's request and messages show).
    fn with_guest(&self, vmid: u32) -> Vec<(String, String)> {
        let mut params = Vec::new();
        push_param(&mut params, "resources", &self.resources(vmid));
        for (key, value) in &self.args.params {
            if *key != "resources" {
                push_param(&mut params, key, value);
            }
        }
        params
    }

    /// The resources given and the guest's own sid, as PVE stores them.
    fn resources(&self, vmid: u32) -> String {
        let given = self.args.params.iter().find(|(k, _)| *k == "resources");
        let given = given.map_or("", |(_, list)| list.as_str());
        resources_of(&format!("{given},{}", sid(self.kind, vmid)))
    }

    /// PVE 8: the resources the group's rule names (none for a removal), as PVE stores them:
    /// walked with `items_of`, not copied into a list (issue 32).
    fn members(&self, vmid: u32) -> String {
        match self.args.delete {
            true => String::new(),
            false => self.resources(vmid),
        }
    }

    /// PVE 8: the group's parameters as Groups.pm names them (`strict` is `restricted`).
    /// The rule's own parameters: `with_guest` changes only `resources`, which a group has not.
    fn grouped(&self) -> Vec<(String, String)> {
        let mut params = Vec::new();
        for (key, value) in &self.args.params {
            match *key {
                "resources" => {}
                "strict" => push_param(&mut params, "restricted", value),
                _ => push_param(&mut params, key, value),
            }
        }
        params
    }

    /// PVE 8: the writes that take the resources naming the group that are not the rule's out of
    /// it, pushed onto `writes`.
    fn strays(&self, all: &[Value], ours: &[&str], writes: &mut Vec<Write>) {
        for resource in all {
            let Some(sid) = resource.get("sid").and_then(flex::string_of) else {
                continue;
            };
            // Its own `group` (the list holds each sid once: Resources.pm index).
            let group = resource.get("group").and_then(flex::string_of);
            if group.as_ref() == Some(&self.args.rule) && !ours.contains(&sid.as_str()) {
                writes.push(set_on(&sid, "delete", "group"));
            }
        }
    }

    /// PVE 8: the group's writes, in order (see the module's comment).
    fn group_plan(&self, view: &HaView, all: &[Value]) -> Result<Vec<Write>, String> {
        let (id, args) = (&self.args.rule, &self.args);
        if args.kind == "resource-affinity" {
            return Err("`type` resource-affinity: PVE 8 has none (its HA groups only place resources on nodes)".into());
        }
        if args.params.iter().any(|(k, _)| *k == "disable") {
            return Err("`disable`: PVE 8's HA groups cannot be disabled".into());
        }
        let members = self.members(view.vmid);
        let ours = items_of(&members);
        let mut writes = Vec::new();
        for s in &ours {
            if !ha::lists(view, s, false) {
                return Err(format!("`resources`: {s} is not an HA resource (Resources.pm update: no such resource) — add it with haResource first"));
            }
            match group_of(all, s) {
                Some(g) if g == *id => {}
                Some(g) => return Err(format!("`resources`: {s} is in HA group {g}, and a PVE 8 resource has one `group` — take it out of {g} first")),
                None => writes.push(set_on(s, "group", id)),
            }
        }
        // A resource naming the group that the rule leaves out is taken out of it.
        self.strays(all, &ours, &mut writes);
        // Resources.pm update → check_service_state: a service in error state takes no write
        // but `state` disabled.
        for (to, _, _) in &writes {
            if let Some(s) = to.as_ref().filter(|s| ha::lists(view, s, true)) {
                return Err(format!("`resources`: {s} is in error state, and PVE refuses to change it until it is disabled and fixed (Resources.pm check_service_state) — set it disabled with haResource first"));
            }
        }
        // A resource names only an existing group (Resources.pm update: `HA group '<group>' does
        // not exist`); a group in use is not deleted (Groups.pm delete).
        match (self.group_write(view), args.delete) {
            (Some(g), true) => writes.push(g),
            (Some(g), false) => writes.insert(0, g),
            _ => {}
        }
        Ok(writes)
    }

    /// PVE 8: the write on the group itself, if any.
    fn group_write(&self, view: &HaView) -> Option<Write> {
        match (view.config.as_ref(), self.args.delete) {
            (None, true) => None,
            (Some(_), true) => Some((None, Verb::Delete, Vec::new())),
            (None, false) => Some((None, Verb::Create, self.grouped())),
            (Some(g), false) => {
                let mut set = Vec::new();
                set_of(g, &self.grouped(), &mut set);
                (!set.is_empty()).then_some((None, Verb::Set, set))
            }
        }
    }

    fn plan(&self, view: &HaView) -> Result<Vec<Write>, String> {
        if let Some(all) = view.resources.as_ref().and_then(Value::as_array) {
            return self.group_plan(view, all);
        }
        let args = &self.args;
        let params = self.with_guest(view.vmid);
        // ResourceAffinity.pm check_feasibility: `rule is ineffective as there are less than two
        // resources` — Rules.pm create/update refuse it (assert_feasibility).
        // `resources` leads the parameters (`with_guest`).
        let alone = params.first().is_some_and(|(_, v)| !v.contains(','));
        if args.kind == "resource-affinity" && alone {
            return Err("a resource-affinity rule needs another resource besides the guest".into());
        }
        // `type` leads the parameters of a new rule and an update; a removal sends none.
        let mut sent = Vec::new();
        if !args.delete {
            push_param(&mut sent, "type", &args.kind);
        }
        let verb = match view.config.as_ref() {
            None if args.delete => return Ok(Vec::new()),
            Some(_) if args.delete => Verb::Delete,
            None => {
                for (k, v) in &params {
                    if k != "disable" || v == "1" {
                        push_param(&mut sent, k, v);
                    }
                }
                Verb::Create
            }
            Some(rule) => {
                let kind = shown(rule, "type");
                if kind != args.kind {
                    return Err(format!(
                        "it is a {kind} rule; delete it first to make it a {} rule",
                        args.kind
                    ));
                }
                set_of(rule, &params, &mut sent);
                // Only `type`: nothing to update.
                if sent.len() == 1 {
                    return Ok(Vec::new());
                }
                Verb::Set
            }
        };
        // One check for a new rule and an update (a removal sends no resources).
        managed(view, &sent)?;
        Ok(vec![(None, verb, sent)])
    }

    fn read_back(&self, view: &HaView) -> Result<(), String> {
        let args = &self.args;
        // PVE 8: read back as asked when a new plan finds nothing left to write.
        if let Some(all) = view.resources.as_ref().and_then(Value::as_array) {
            let mut left = String::new();
            // `PUT vm:101 group=pin; POST group pin nodes=pve1`, written in place (issue 32).
            // Borrowed, not consumed: no by-value iterator of the writes compiled.
            for (to, verb, params) in &self.group_plan(view, all)? {
                push_item(&mut left, "; ", verb.http_method());
                left.push(' ');
                match to {
                    Some(sid) => left.push_str(sid),
                    None => {
                        left.push_str("group ");
                        left.push_str(&args.rule);
                    }
                }
                for (key, value) in params {
                    for part in &[" ", key, "=", value] {
                        left.push_str(part);
                    }
                }
            }
            return match left.is_empty() {
                true => Ok(()),
                false => Err(format!("it still needs {left}")),
            };
        }
        let Some(rule) = view.config.as_ref() else {
            return match args.delete {
                true => Ok(()),
                false => Err("no such ha rule".into()),
            };
        };
        if args.delete {
            return Err("the rule is still configured".into());
        }
        if let Some(errors) = rule.get("errors").filter(|e| !e.is_null()) {
            return Err(format!(
                "PVE reports it infeasible, so the HA manager drops it: {errors}",
                errors = crate::quote::json(errors)
            ));
        }
        let params = self.with_guest(view.vmid);
        let mut said = not_as_asked(&ha::differing(&params, rule, shown));
        if shown(rule, "disable") == "1"
            && !args.params.iter().any(|(k, v)| *k == "disable" && v == "1")
        {
            push_item(
                &mut said,
                "; ",
                "it is disabled: the HA manager does not apply it",
            );
        }
        match said.is_empty() {
            true => Ok(()),
            false => Err(said),
        }
    }
}

/// haRule's change: the rule asked, on the guest of kind `kind`.
struct RuleChange(Asked);

impl HaChange for RuleChange {
    fn target(&self) -> &GuestRef {
        &self.0.args.target
    }

    fn object(&self) -> HaObject {
        HaObject::Rule(self.0.args.rule.clone())
    }

    fn plan(&self, view: &HaView) -> Result<Vec<Write>, String> {
        self.0.plan(view)
    }

    fn read_back(&self, view: &HaView) -> Result<(), String> {
        self.0.read_back(view)
    }
}

/// haRule's arguments as its change.
pub fn change(args: &Value, kind: GuestKind) -> Result<Box<dyn HaChange>, ArgError> {
    let args = HaRuleArgs::parse(args)?;
    Ok(Box::new(RuleChange(Asked { args, kind })))
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, summary_of, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const RULE: &str = "GET /cluster/ha/rules/pin";

    #[test]
    fn nodes_are_kept_once_as_given_last_without_zero_priorities_and_sorted() {
        use super::nodes_of;
        assert_eq!(nodes_of("pve2:1,pve1:3,,pve2:00,pve1:02"), "pve1:2,pve2");
        assert_eq!(nodes_of("b-c,b:5,a"), "a,b-c,b:5");
        assert_eq!(nodes_of(""), "");
    }

    fn vm(version: &str) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data("GET /version", json!({"version": version}));
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running"}),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({}));
        host.data(
            "GET /cluster/ha/status/current",
            json!([{"id": "service:vm:100"}, {"id": "service:vm:101"}]),
        );
        host
    }

    fn missing() -> Answer {
        Answer::Error(500, "no such ha rule 'pin'\n".into())
    }

    #[test]
    fn a_node_affinity_rule_is_made_with_the_guest_and_read_back_without_errors() {
        let host = vm("9.0.3");
        let made = json!({"rule": "pin", "type": "node-affinity", "resources": "vm:100,vm:101",
            "nodes": "pve1:2,pve2", "strict": 1});
        host.on(RULE, [missing(), Answer::Data(made)]);
        host.data("POST /cluster/ha/rules", Value::Null);
        let args = json!({"vmid": 100, "rule": "pin", "type": "node-affinity",
            "resources": ["vm:101"], "nodes": ["pve2:0", "pve1:2"], "strict": true});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(summary_of(&outcome).contains("HA rule pin"), "{outcome:?}");
        assert_eq!(
            host.body_of("POST"),
            "rule=pin&type=node-affinity&resources=vm%3A100%2Cvm%3A101&nodes=pve1%3A2%2Cpve2&strict=1"
        );
    }

    #[test]
    fn a_rule_pve_reports_infeasible_fails_saying_so() {
        let host = vm("9.0.3");
        let bad = json!({"rule": "pin", "type": "node-affinity", "resources": "vm:100",
            "nodes": "pve1", "errors": {"resources": "resource 'vm:100' is already used"}});
        host.on(RULE, [Answer::Data(bad)]);
        let args = json!({"vmid": 100, "rule": "pin", "type": "node-affinity", "nodes": ["pve1"]});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(failure_of(&outcome).contains("infeasible"), "{outcome:?}");
    }

    #[test]
    fn a_resource_that_is_not_an_ha_resource_is_refused_before_sending() {
        let host = vm("9.0.3");
        host.on(RULE, [missing()]);
        let args = json!({"vmid": 100, "rule": "pin", "type": "resource-affinity",
            "resources": ["vm:102"], "affinity": "negative"});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(
            failure_of(&outcome).contains("vm:102 is not one"),
            "{outcome:?}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn a_resource_affinity_rule_with_the_guest_alone_is_refused_before_sending() {
        let host = vm("9.0.3");
        host.on(RULE, [missing()]);
        let args = json!({"vmid": 100, "rule": "pin", "type": "resource-affinity",
            "resources": ["vm:100"], "affinity": "positive"});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(
            failure_of(&outcome).contains("another resource"),
            "{outcome:?}"
        );
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn nodes_given_twice_or_with_leading_zeros_compare_as_pve_stores_them() {
        let host = vm("9.0.3");
        let stored = json!({"rule": "pin", "type": "node-affinity", "resources": "vm:100",
            "nodes": "pve1:2,pve2"});
        host.on(RULE, [Answer::Data(stored)]);
        let args = json!({"vmid": 100, "rule": "pin", "type": "node-affinity",
            "nodes": ["pve2:00", "pve1:1", "pve1:02"]});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(summary_of(&outcome).contains("nothing sent"), "{outcome:?}");
    }

    const GROUP: &str = "GET /cluster/ha/groups/pin";
    const LIST: &str = "GET /cluster/ha/resources";

    fn missing_group() -> Answer {
        Answer::Error(500, "no such ha group 'pin'\n".into())
    }

    #[test]
    fn pve_8_makes_the_group_then_sets_it_on_each_resource_and_reads_both_back() {
        let host = vm("8.4.14");
        let made =
            json!({"group": "pin", "type": "group", "nodes": "pve2,pve1:2", "restricted": 1});
        host.on(GROUP, [missing_group(), Answer::Data(made)]);
        let before =
            json!([{"sid": "vm:100"}, {"sid": "vm:101"}, {"sid": "vm:102", "group": "pin"}]);
        let after = json!([{"sid": "vm:100", "group": "pin"}, {"sid": "vm:101", "group": "pin"}, {"sid": "vm:102"}]);
        host.on(LIST, [Answer::Data(before), Answer::Data(after)]);
        for w in [
            "POST /cluster/ha/groups",
            "PUT /cluster/ha/resources/vm:100",
        ] {
            host.data(w, Value::Null);
        }
        host.on(
            "PUT /cluster/ha/resources/vm:101",
            [Answer::Data(Value::Null)],
        );
        host.on(
            "PUT /cluster/ha/resources/vm:102",
            [Answer::Data(Value::Null)],
        );
        let args = json!({"vmid": 100, "rule": "pin", "type": "node-affinity",
            "resources": ["vm:101"], "nodes": ["pve1:2", "pve2"], "strict": true});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(summary_of(&outcome).contains("HA group"), "{outcome:?}");
        assert_eq!(
            host.writes_after("/cluster/ha/"),
            [
                "POST groups group=pin&nodes=pve1%3A2%2Cpve2&restricted=1",
                "PUT resources/vm%3A100 group=pin",
                "PUT resources/vm%3A101 group=pin",
                "PUT resources/vm%3A102 delete=group",
            ]
        );
    }

    #[test]
    fn pve_8_read_back_names_each_write_still_needed() {
        let host = vm("8.4.14");
        let made = json!({"group": "pin", "type": "group", "nodes": "pve2"});
        host.on(GROUP, [missing_group(), Answer::Data(made)]);
        host.data(LIST, json!([{"sid": "vm:100"}]));
        host.data("POST /cluster/ha/groups", Value::Null);
        host.data("PUT /cluster/ha/resources/vm:100", Value::Null);
        let args = json!({"vmid": 100, "rule": "pin", "type": "node-affinity", "nodes": ["pve1"]});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(
            failure_of(&outcome)
                .contains("it still needs PUT group pin nodes=pve1; PUT vm:100 group=pin — "),
            "{outcome:?}"
        );
    }

    #[test]
    fn pve_8_refuses_a_resource_in_error_state_before_any_write() {
        let host = vm("8.4.14");
        let current = json!([{"id": "service:vm:100", "crm_state": "error"}]);
        host.set("GET /cluster/ha/status/current", current);
        host.on(GROUP, [missing_group()]);
        host.data(LIST, json!([{"sid": "vm:100"}]));
        let args = json!({"vmid": 100, "rule": "pin", "type": "node-affinity", "nodes": ["pve1"]});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(
            failure_of(&outcome).contains("vm:100 is in error state"),
            "{outcome:?}"
        );
        assert_eq!(host.writes_after("/"), Vec::<String>::new());
    }

    #[test]
    fn pve_8_removal_clears_the_resources_group_before_deleting_it() {
        let host = vm("8.4.14");
        host.on(
            GROUP,
            [
                Answer::Data(json!({"group": "pin", "nodes": "pve1"})),
                missing_group(),
            ],
        );
        host.on(
            LIST,
            [
                Answer::Data(json!([{"sid": "vm:100", "group": "pin"}])),
                Answer::Data(json!([{"sid": "vm:100"}])),
            ],
        );
        host.data("PUT /cluster/ha/resources/vm:100", Value::Null);
        host.data("DELETE /cluster/ha/groups/pin", Value::Null);
        let args = json!({"vmid": 100, "rule": "pin", "delete": true});
        let outcome = run_method(&host, "qemu", "haRule", args);
        assert!(
            summary_of(&outcome).contains("written and applied"),
            "{outcome:?}"
        );
        assert_eq!(
            host.writes_after("/cluster/ha/"),
            ["PUT resources/vm%3A100 delete=group", "DELETE groups/pin "]
        );
    }

    #[test]
    fn pve_8_refuses_before_any_write_what_a_group_cannot_be() {
        for (args, why) in [
            (
                json!({"type": "resource-affinity", "resources": ["vm:101"], "affinity": "positive"}),
                "PVE 8 has none",
            ),
            (
                json!({"type": "node-affinity", "nodes": ["pve1"], "disable": true}),
                "cannot be disabled",
            ),
            (
                json!({"type": "node-affinity", "nodes": ["pve1"], "resources": ["vm:101"]}),
                "vm:101 is in HA group web",
            ),
            (
                json!({"type": "node-affinity", "nodes": ["pve1"], "resources": ["vm:102"]}),
                "vm:102 is not an HA resource",
            ),
        ] {
            let host = vm("8.4.14");
            host.on(GROUP, [missing_group()]);
            host.data(
                LIST,
                json!([{"sid": "vm:100"}, {"sid": "vm:101", "group": "web"}]),
            );
            let mut args = args;
            args["vmid"] = json!(100);
            args["rule"] = json!("pin");
            let outcome = run_method(&host, "qemu", "haRule", args);
            assert!(failure_of(&outcome).contains(why), "{outcome:?}");
            assert!(failure_of(&outcome).contains("HA rule pin"), "{outcome:?}");
            assert_eq!(host.writes_after("/"), Vec::<String>::new());
        }
    }

    #[test]
    fn bad_arguments_are_refused_naming_the_field() {
        for (args, field) in [
            (
                json!({"vmid": 100, "rule": "1x", "type": "node-affinity"}),
                "rule",
            ),
            (json!({"vmid": 100, "rule": "pin", "type": "group"}), "type"),
            (
                json!({"vmid": 100, "rule": "pin", "type": "node-affinity"}),
                "nodes",
            ),
            (
                json!({"vmid": 100, "rule": "pin", "type": "resource-affinity"}),
                "affinity",
            ),
            (
                json!({"vmid": 100, "rule": "pin", "delete": true, "nodes": ["a"]}),
                "nodes",
            ),
            (
                json!({"vmid": 100, "rule": "pin", "type": "node-affinity", "nodes": ["a"],
                "comment": "pinned "}),
                "comment",
            ),
            (
                json!({"vmid": 100, "rule": "pin", "type": "node-affinity", "nodes": ["a"],
                "resources": ["vm:0100"]}),
                "resources",
            ),
        ] {
            let host = ScriptedHost::new();
            let outcome = run_method(&host, "qemu", "haRule", args);
            assert!(
                failure_of(&outcome).contains(&format!("`{field}`")),
                "{outcome:?}"
            );
        }
    }
}
