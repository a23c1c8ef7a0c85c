//! A guest as an HA resource (`vm:<vmid>` / `ct:<vmid>`), as haResource and haStatus see it: one
//! engine configured by each method with a plan and a judge — find the guest, read its HA resource
//! config (`GET /cluster/ha/resources/{sid}`) and the manager's view (`GET
//! /cluster/ha/status/current`), `plan` the writes (the object's, and other HA resources' for a
//! PVE 8 group), send them in order, then wait (bounded, with progress lines) until the manager's
//! view satisfies `judge`, and read the config back.
//!
//! Writing the config proves nothing: pve-ha-manager's API only edits `/etc/pve/ha/resources.cfg`
//! (`PVE/API2/HA/Resources.pm` create/update/delete); the CRM applies it on its next round
//! (`PVE/HA/Manager.pm` manage: a new service enters `service_status` as request_start or
//! request_stop, an `ignored` or removed one is deleted from it). `status/current` shows both sides
//! (`PVE/API2/HA/Status.pm` status): `request_state` is the config's, `crm_state` the manager's
//! (absent while the manager has not taken the service in, or after it dropped it), `state` the
//! verbose state (`PVE/HA/Tools.pm` get_verbose_service_state: `starting` until the LRM reports
//! it running, `queued` before the first round, `deleting` once the config is gone).

use super::evidence::{sight_or_absent, unlocked, Evidence};
use super::reference::GuestRef;
use super::settle::seconds;
use crate::args::{ArgError, Fields};
use crate::explain::{hint, outcome_unknown};
use crate::host::Host;
use crate::outcome::Outcome;
use crate::poll::Pacer;
use crate::progress::Progress;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::flex;
use crate::pve::request::{PveRequest, Verb};
use crate::run::Run;
use serde_json::{Map, Value};

/// An HA resource's or rule's `comment`, as PVE keeps it: one line of at most 4096 bytes
/// (Resources.pm, Rules.pm `maxLength`), without white space at either end — PVE's section config
/// writes `\tcomment <text>` and reads back `(.*\S)` after the key (PVE/SectionConfig.pm
/// parse_config), so an edge space would be dropped and the read-back never equal.
pub fn comment(fields: &Fields) -> Result<Option<String>, ArgError> {
    let Some(text) = fields.optional_line("comment")? else {
        return Ok(None);
    };
    if text.len() > 4096 {
        return Err(ArgError::new("comment", "must be at most 4096 bytes"));
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_whitespace() || c == '\x0b');
    if edge(text.chars().next()) || edge(text.chars().last()) {
        return Err(ArgError::new(
            "comment",
            "must not begin or end with white space (PVE drops it)",
        ));
    }
    Ok(Some(text))
}

/// The HA resource id of a guest: `vm:<vmid>` or `ct:<vmid>` (pve-ha-manager `PVE/HA/Config.pm`
/// parse_sid; PVEVM / PVECT `type`).
pub fn sid(kind: GuestKind, vmid: u32) -> String {
    match kind {
        GuestKind::Qemu => format!("vm:{vmid}"),
        GuestKind::Lxc => format!("ct:{vmid}"),
    }
}

/// What a method reads and acts on: the resource's config (`None`: not an HA resource) and the
/// service's entry in `status/current` (`None`: the manager's view does not list it), and why
/// that view is no evidence of a change (`None`: an active master wrote it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HaView {
    /// The guest's VMID (its sid is `sid(kind, vmid)`).
    pub vmid: u32,
    pub config: Option<Value>,
    pub service: Option<Value>,
    pub idle: Option<String>,
    /// The sids `status/current` lists: every configured HA resource (Status.pm lists the
    /// resources config's ids whether or not the manager processed them).
    pub listed: Vec<String>,
    /// The listed sids whose `crm_state` is `error`.
    pub failed: Vec<String>,
    /// Where the object is an HA group (PVE 8): every HA resource's config, as `GET
    /// /cluster/ha/resources` lists them (Resources.pm index: `sid`, `group`, …).
    pub resources: Option<Vec<Value>>,
}

/// What an HA method reads and writes: the guest's HA resource, or an HA rule naming it — on PVE 8
/// (`GET /version` 8.x) an HA group of that id, the rule's node-affinity as PVE 8 had it (PVE 9
/// migrates a group to the rule `ha-group-<id>`: pve-ha-manager `src/PVE/HA/Groups.pm`
/// migrate_groups_to_rules — nodes, strict = restricted, comment, the resources naming it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HaObject {
    Resource,
    Rule(String),
    Group(String),
}

/// A write a plan makes: on the object (`None`) or on the HA resource `Some(sid)`, verb and
/// parameters (the guest's `sid` is the path's for PUT and DELETE).
pub type Write = (Option<String>, Verb, Vec<(String, String)>);
/// Makes the writes, in order, that turn what was read into what was asked (none: nothing to
/// send), or says why PVE would refuse one (then nothing is sent).
pub type Plan<'a> = dyn Fn(&HaView) -> Result<Vec<Write>, String> + 'a;
/// Judges the service's entry in the manager's view (`None`: not listed): what it shows, or what
/// it shows instead (not yet).
pub type Judge<'a> = dyn Fn(Option<&Value>) -> Result<String, String> + 'a;
/// Judges the config (`view.config`) read back after the manager applied it.
pub type ReadBack<'a> = dyn Fn(&HaView) -> Result<(), String> + 'a;

/// One HA method as data.
pub struct HaChange<'a> {
    pub object: HaObject,
    pub plan: &'a Plan<'a>,
    pub judge: &'a Judge<'a>,
    pub read_back: &'a ReadBack<'a>,
    /// A read (haStatus): the summary is what was read, without what was sent.
    pub reads_only: bool,
    /// The guest's lock is waited out first: only a state the LRM acts on needs it.
    pub waits_lock: bool,
}

/// A field of a status entry or config as text (`-` when absent), for messages.
fn field(v: Option<&Value>, key: &str) -> Option<String> {
    v.and_then(|v| v.get(key)).and_then(flex::string_of)
}

/// `state started, crm_state started, request_state started, node pve1` of a service entry.
pub fn describe(service: Option<&Value>) -> String {
    let Some(s) = service else {
        return "not listed by the HA manager".to_string();
    };
    let mut described = String::new();
    for key in ["state", "crm_state", "request_state", "node"] {
        let value = field(Some(s), key).unwrap_or_else(|| "-".into());
        crate::quote::push_item(&mut described, ", ", &format!("{key} {value}"));
    }
    described
}

/// The record's `ha`: managed when configured, the manager's `state`, `crmState` and `node`, the
/// config's `requested` state (PVE's default `started`) and options, as read last.
pub fn record_of(view: &HaView) -> Value {
    let (s, c) = (view.service.as_ref(), view.config.as_ref());
    let mut out = Map::new();
    out.insert("managed".into(), Value::Bool(c.is_some()));
    let text = [
        ("state", s, "state"),
        ("crmState", s, "crm_state"),
        ("node", s, "node"),
        ("requested", c, "state"),
        ("comment", c, "comment"),
    ];
    for (key, from, name) in text {
        out.extend(field(from, name).map(|v| (key.to_string(), Value::from(v))));
    }
    if c.is_some() && !out.contains_key("requested") {
        out.insert("requested".into(), Value::from("started"));
    }
    for (key, name) in [
        ("maxRestart", "max_restart"),
        ("maxRelocate", "max_relocate"),
    ] {
        let n = c.and_then(|c| c.get(name)).and_then(flex::u64_of);
        out.extend(n.map(|n| (key.to_string(), Value::from(n))));
    }
    let failback = c.and_then(|c| c.get("failback")).and_then(flex::bool_of);
    out.extend(failback.map(|b| ("failback".to_string(), Value::Bool(b))));
    Value::Object(out)
}

/// Runs an HA change on the guest `target` names; the guest record (with the HA view last read)
/// is written on every path once it was found.
pub async fn change_ha<H: Host>(
    run: &Run<'_, H>,
    target: &GuestRef,
    change: &HaChange<'_>,
) -> Outcome {
    let absent = |vmid| format!("{} {vmid} does not exist on any node", run.kind.noun());
    // A change to started/stopped/disabled waits out a lock on the guest: the LRM's start or stop
    // of a locked guest fails (qemu-server / pve-container check_lock), so the manager could not
    // apply it. A removal or `ignored` needs no LRM: PVE takes it at once (Resources.pm).
    let waits = change.waits_lock;
    let mut ev = match sight_or_absent(run, target, &absent).await {
        Ok(ev) if waits => match unlocked(run, ev).await {
            Ok(ev) => ev,
            Err(outcome) => return outcome,
        },
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let mut view = HaView {
        vmid: ev.at.vmid,
        ..HaView::default()
    };
    let verdict = apply(run, &mut ev, &mut view, change).await;
    let mut outcome = ev.outcome(run, verdict).await;
    // The guest record's `ha` is what the HA endpoints showed, not the guest status's summary.
    let record = outcome
        .writes
        .first_mut()
        .and_then(|w| w.data.as_object_mut());
    if let (HaObject::Resource, Some(record)) = (&change.object, record) {
        record.insert("ha".into(), record_of(&view));
    }
    outcome
}

async fn apply<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    view: &mut HaView,
    change: &HaChange<'_>,
) -> Result<String, String> {
    let sid = sid(run.kind, ev.at.vmid);
    let version = match &change.object {
        HaObject::Rule(_) => pve8(run).await,
        _ => Ok(false),
    };
    let obj = &match (&change.object, &version) {
        (HaObject::Rule(id), Ok(true)) => HaObject::Group(id.clone()),
        (other, _) => other.clone(),
    };
    let label = match obj {
        HaObject::Resource => format!("HA resource {sid} of {}", ev.label(run)),
        HaObject::Rule(id) => format!("HA rule {id} ({sid}, {})", ev.label(run)),
        HaObject::Group(id) => format!(
            "HA rule {id} as PVE 8's HA group ({sid}, {})",
            ev.label(run)
        ),
    };
    version.map_err(|why| format!("cannot change {label}: {why}; nothing was sent"))?;
    read_configs(run, obj, &sid, view)
        .await
        .map_err(|why| format!("could not read {label}: {why}; nothing was changed"))?;
    let list = read_current(run, None)
        .await
        .map_err(|why| format!("could not read {label}: {why}; nothing was changed"))?;
    view.service = service_of(&list, &sid);
    for e in list.as_array().into_iter().flatten() {
        if let Some(s) = e["id"].as_str().and_then(|i| i.strip_prefix("service:")) {
            view.listed.push(s.into());
            if e["crm_state"] == "error" {
                view.failed.push(s.into());
            }
        }
    }
    // A resource's state is the manager's work: only an active master's view shows it.
    let gate = *obj == HaObject::Resource && !change.reads_only;
    view.idle = idle(&list).filter(|_| gate);
    let writes = (change.plan)(view)
        .map_err(|why| format!("cannot change {label}: {why}; nothing was sent"))?;
    let sent = !writes.is_empty();
    for (i, (to, verb, params)) in writes.into_iter().enumerate() {
        let request = match &to {
            Some(other) => endpoints::ha_resource(verb, other, params),
            None => request_of(obj, verb, &sid, params),
        };
        ev.trail.sending();
        let answer = run.pve().call(&request).await;
        ev.trail.answered(&answer);
        if let Err(e) = answer {
            // The plan's writes before this one were made (PVE answered them).
            let before = ["", ", after the writes before it"][usize::from(i > 0)];
            let action = format!("change {label} ({}{before})", request.label());
            let check = "the HA resource with haStatus (run it again: it plans from what it reads)";
            return Err(match e.outcome_unknown() {
                true => outcome_unknown(&action, &e, check).0,
                false => format!("PVE refused to {action}: {e} — {}", hint(e.kind)),
            });
        }
    }
    // What was just read may already show it (nothing sent, or a read): no second read then.
    let first = match &view.idle {
        Some(why) => Err(why.clone()),
        None => (change.judge)(view.service.as_ref()),
    };
    let waited = match (sent, first) {
        (false, Ok(shown)) => Ok(shown),
        _ => wait_manager(run, &sid, view, change.judge, gate).await,
    };
    // The config after a write is read back whatever the manager did: the record says what it holds.
    let back = match sent {
        true => read_configs(run, obj, &sid, view).await,
        false => Ok(()),
    };
    let shown = waited.map_err(|why| match sent {
        true => format!("{label}: the config was written, but the HA manager did not apply it: {why} — check `ha-manager status` and the CRM's log (journalctl -u pve-ha-crm) on the master node"),
        false => format!("{label}: nothing needed writing, but the HA manager does not show it as asked: {why} — check `ha-manager status`"),
    })?;
    back.map_err(|why| {
        format!(
            "{label}: the HA manager shows {shown}, but the config could not be read back ({why})"
        )
    })?;
    (change.read_back)(view).map_err(|why| {
        format!("{label}: the HA manager shows {shown}, but the config reads back otherwise: {why} — check it with the method's read (run it again: it plans from what it reads)")
    })?;
    let what = match (change.reads_only, sent) {
        (true, _) => "",
        (false, true) => " (written and applied)",
        (false, false) => " (already so, nothing sent)",
    };
    Ok(format!("{label}: {shown}{what}"))
}

/// Whether PVE is 8 (`GET /version` 8.x): HA groups there, rules on PVE 9.
async fn pve8<H: Host>(run: &Run<'_, H>) -> Result<bool, String> {
    let answer = run.pve().call_coalesced(&endpoints::version()).await;
    let data = answer.map_err(|e| format!("GET /version failed ({e} — {})", hint(e.kind)))?;
    let version = data.get("version").and_then(flex::string_of).ok_or_else(|| {
        format!(
            "GET /version answered {}, without a version: check that apiUrl (or the ssh host) is a PVE node",
            crate::quote::value(&data)
        )
    })?;
    Ok(version.starts_with("8."))
}

/// Why the list is no evidence of the manager's work: Status.pm lists `master` only once a CRM
/// holds the manager lock, its status `<node> (active, <time>)` only while its timestamp is within
/// 30 s; otherwise the services' `crm_state` is a dead manager's last round.
fn idle(list: &Value) -> Option<String> {
    let master = list.as_array()?.iter().find(|e| e["type"] == "master");
    match master.and_then(|m| m["status"].as_str()) {
        Some(s) if s.contains("(active,") => None,
        Some(s) => Some(format!("the HA manager is not active (master {s})")),
        None => Some("no HA master (no CRM is active)".into()),
    }
}

/// The request of `verb` on the object: the guest's resource `sid`, the rule or the group.
fn request_of(obj: &HaObject, verb: Verb, sid: &str, params: Vec<(String, String)>) -> PveRequest {
    match obj {
        HaObject::Resource => endpoints::ha_resource(verb, sid, params),
        HaObject::Rule(id) => endpoints::ha_rule(verb, id, params),
        HaObject::Group(id) => endpoints::ha_group(verb, id, params),
    }
}

/// Reads the object into `view.config` — `GET /cluster/ha/resources/{sid}`, `…/rules/{rule}` or
/// `…/groups/{group}`, `None` when PVE has no such object (Resources.pm read: `no such resource
/// '<sid>'`; Rules.pm: `no such ha rule '<rule>'`; PVE 8 Groups.pm: `no such ha group
/// '<group>'`) — and, for a group, every HA resource into `view.resources`.
async fn read_configs<H: Host>(
    run: &Run<'_, H>,
    obj: &HaObject,
    sid: &str,
    view: &mut HaView,
) -> Result<(), String> {
    view.config = match run
        .pve()
        .call(&request_of(obj, Verb::Get, sid, Vec::new()))
        .await
    {
        Ok(v) if v.is_object() => Some(v),
        Ok(other) => {
            return Err(format!(
                "PVE answered {other} where an HA config was expected — {}",
                hint(crate::pve::error::ErrorKind::Malformed)
            ))
        }
        Err(e)
            if ["no such resource", "no such ha "]
                .iter()
                .any(|m| e.message.contains(m)) =>
        {
            None
        }
        Err(e) => return Err(format!("{e} — {}", hint(e.kind))),
    };
    if let HaObject::Group(_) = obj {
        let list = read_list(run, &endpoints::ha_resources(), None, "HA resources").await?;
        view.resources = match list {
            Value::Array(list) => Some(list),
            _ => None,
        };
    }
    Ok(())
}

/// `GET /cluster/ha/status/current` (by `deadline` when given): the entries, a list.
async fn read_current<H: Host>(run: &Run<'_, H>, deadline: Option<f64>) -> Result<Value, String> {
    read_list(run, &endpoints::ha_status_current(), deadline, "HA status").await
}

/// A list PVE answers to `request` (by `deadline` when given), `what` naming it in messages.
async fn read_list<H: Host>(
    run: &Run<'_, H>,
    request: &PveRequest,
    deadline: Option<f64>,
    what: &str,
) -> Result<Value, String> {
    let answer = match deadline {
        Some(d) => run.pve().call_by(request, d).await,
        None => run.pve().call(request).await,
    };
    match answer {
        Ok(v) if v.is_array() => Ok(v),
        Ok(other) => Err(format!(
            "PVE answered {other} where the {what} list was expected — {}",
            hint(crate::pve::error::ErrorKind::Malformed)
        )),
        Err(e) => Err(format!(
            "the {what} could not be read ({e} — {})",
            hint(e.kind)
        )),
    }
}

/// The `service:<sid>` entry of a status list.
fn service_of(list: &Value, sid: &str) -> Option<Value> {
    let id = format!("service:{sid}");
    list.as_array()?
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(id.as_str()))
        .cloned()
}

/// Polls `status/current` until `judge` accepts the service's entry, within what is left of the
/// method's budget (reading at least once), with progress lines; a timeout says what was observed
/// last. `view.service` keeps the last entry read. With `gate`, a list without an active master
/// is not judged (see `idle`).
async fn wait_manager<H: Host>(
    run: &Run<'_, H>,
    sid: &str,
    view: &mut HaView,
    judge: &Judge<'_>,
    gate: bool,
) -> Result<String, String> {
    let pve = run.pve();
    let now = run.host.now_ms();
    let budget_ms = run.wait_budget_ms();
    let mut pacer = Pacer::new(now, budget_ms, pve.poll_cap_ms);
    let mut progress = Progress::start(now);
    loop {
        let list = read_current(run, Some(pacer.deadline_ms())).await?;
        view.service = service_of(&list, sid);
        let seen = match idle(&list).filter(|_| gate) {
            Some(why) => Err(why),
            None => judge(view.service.as_ref()),
        };
        let last = match seen {
            Ok(shown) => return Ok(shown),
            Err(last) => last,
        };
        // Manager.pm: `error` is final until the config asks `disabled`; waiting changes nothing.
        let s = view.service.as_ref().unwrap_or(&Value::Null);
        if s["crm_state"] == "error" && s["request_state"] != "disabled" {
            return Err(format!(
                "{last} (error is final: only state disabled clears it)"
            ));
        }
        progress.tick(run.host, || {
            format!("the HA manager to apply {sid} (now: {last})")
        });
        if let Err(stop) = pacer.pause(run.host).await {
            let why = match stop {
                crate::poll::Stopped::OutOfTime => format!("not within {}", seconds(budget_ms)),
                crate::poll::Stopped::Aborted => "the run was aborted while waiting".into(),
            };
            return Err(format!("{why}; last observed: {last}"));
        }
    }
}
