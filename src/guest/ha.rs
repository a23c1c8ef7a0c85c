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

use super::course::{
    self, malformed, nothing_sent, object_or_missing, run_course, unread, write_failed, Input,
    Next, Via, CHECK_READ,
};
use super::evidence::Evidence;
use super::reference::GuestRef;
use crate::args::{ArgError, Fields};
use crate::explain::hint;
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::request::{PveRequest, Verb};
use crate::record_json::{opt, put, set};
use crate::run::Run;
use serde_json::{Map, Value};
use std::future::Future;

/// An HA resource's or rule's `comment`, as PVE keeps it: one line of at most 4096 bytes
/// (Resources.pm, Rules.pm `maxLength`), without white space at either end — PVE's section config
/// writes `\tcomment <text>` and reads back `(.*\S)` after the key (PVE/SectionConfig.pm
/// parse_config), so an edge space would be dropped and the read-back never equal.
pub fn comment(fields: &Fields) -> Result<Option<String>, ArgError> {
    let Some(text) = fields.optional_line_str("comment")? else {
        return Ok(None);
    };
    if text.len() > 4096 {
        return Err(ArgError::new("comment", "must be at most 4096 bytes"));
    }
    // By bytes: no byte of a longer UTF-8 character is ASCII (cheaper than decoding, issue 32).
    let edge = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_whitespace() || *c == 0x0b);
    if edge(text.as_bytes().first()) || edge(text.as_bytes().last()) {
        return Err(ArgError::new(
            "comment",
            "must not begin or end with white space (PVE drops it)",
        ));
    }
    Ok(Some(text.to_string()))
}

/// Reads one optional argument of an HA method (the field's name given) as PVE's parameter.
pub type Reader = fn(&Fields, &str) -> Result<Option<String>, ArgError>;

/// An optional boolean argument as PVE's wire takes it: `1` or `0`.
pub fn flag(fields: &Fields, key: &str) -> Result<Option<String>, ArgError> {
    Ok(fields.flag(key)?.map(bit))
}

/// A flag as PVE writes it, `1` or `0`: one place for the HA methods' arguments and reads (and
/// firewallOptions' flags).
pub fn bit(on: bool) -> String {
    ["0", "1"][usize::from(on)].to_string()
}

/// The HA resource id of a guest: `vm:<vmid>` or `ct:<vmid>` (pve-ha-manager `PVE/HA/Config.pm`
/// parse_sid; PVEVM / PVECT `type`).
pub fn sid(kind: GuestKind, vmid: u32) -> String {
    let prefix = match kind {
        GuestKind::Qemu => "vm",
        GuestKind::Lxc => "ct",
    };
    format!("{prefix}:{vmid}")
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
    /// The manager's view read before the writes (`status/current`'s list, see `lists`), kept
    /// as read rather than copied into lists of sids (issue 32), as `resources` is.
    pub status: Value,
    /// Where the object is an HA group (PVE 8): every HA resource's config, as `GET
    /// /cluster/ha/resources` lists them (Resources.pm index: `sid`, `group`, …), the list as
    /// read.
    pub resources: Option<Value>,
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

/// One HA method as the engine asks it: each method's arguments implement it, so that one future
/// is compiled for every HA method (issue 32).
pub trait HaChange {
    /// The guest acted on.
    fn target(&self) -> &GuestRef;
    /// What is read and written.
    fn object(&self) -> HaObject {
        HaObject::Resource
    }
    /// Makes the writes, in order, that turn what was read into what was asked (none: nothing to
    /// send), or says why PVE would refuse one (then nothing is sent).
    fn plan(&self, view: &HaView) -> Result<Vec<Write>, String>;
    /// Judges the service's entry in the manager's view (`view.service`, `None`: not listed) —
    /// `view.config` is still the one the plan planned from — what it shows, or what it shows
    /// instead (not yet).
    fn judge(&self, view: &HaView) -> Result<String, String> {
        Ok(describe(view.service.as_ref()))
    }
    /// Judges the config (`view.config`) read back after the manager applied it.
    fn read_back(&self, view: &HaView) -> Result<(), String>;
    /// A read (haStatus): the summary is what was read, without what was sent.
    fn reads_only(&self) -> bool {
        false
    }
    /// The guest's lock is waited out first: only a state the LRM acts on needs it.
    fn waits_lock(&self) -> bool {
        false
    }
}

/// The parameters asked whose value the config read does not show, as `shown` reads it: name,
/// value asked and what it shows. One compare for haResource's options, haRule's parameters and
/// firewallOptions' options (issue 32).
pub fn differing<'a>(
    asked: &'a [(String, String)],
    config: &Value,
    shown: fn(&Value, &str) -> String,
) -> Vec<(&'a str, &'a str, String)> {
    let mut wrong = Vec::new();
    for (key, want) in asked {
        let seen = shown(config, key);
        if seen != *want {
            wrong.push((key.as_str(), want.as_str(), seen));
        }
    }
    wrong
}

/// Reads an HA method's arguments (for a guest of the kind given) as its change.
pub type Parse = fn(&Value, GuestKind) -> Result<Box<dyn HaChange>, ArgError>;

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
    for key in &["state", "crm_state", "request_state", "node"] {
        // Pushed piece by piece: a `format!` per item costs the module more (issue 32).
        let value = field(Some(s), key);
        crate::quote::push_item(&mut described, ", ", key);
        described.push(' ');
        described.push_str(value.as_deref().unwrap_or("-"));
    }
    described
}

/// How a field of the record's `ha` is read: from the manager's service entry, or from the
/// resource's config, as text, a count or a flag.
#[derive(Clone, Copy)]
enum HaField {
    ServiceText,
    ConfigText,
    ConfigCount,
    ConfigFlag,
}

/// The record's `ha` fields: its key, PVE's name, and how it is read. A constant table, not one
/// built per call.
const RECORD: [(&str, &str, HaField); 8] = [
    ("state", "state", HaField::ServiceText),
    ("crmState", "crm_state", HaField::ServiceText),
    ("node", "node", HaField::ServiceText),
    ("requested", "state", HaField::ConfigText),
    ("comment", "comment", HaField::ConfigText),
    ("maxRestart", "max_restart", HaField::ConfigCount),
    ("maxRelocate", "max_relocate", HaField::ConfigCount),
    ("failback", "failback", HaField::ConfigFlag),
];

/// The record's `ha`: managed when configured, the manager's `state`, `crmState` and `node`, the
/// config's `requested` state (PVE's default `started`) and options, as read last.
pub fn record_of(view: &HaView) -> Value {
    let (s, c) = (view.service.as_ref(), view.config.as_ref());
    let mut out = Map::new();
    set(&mut out, "managed", Value::Bool(c.is_some()));
    for &(key, name, read) in &RECORD {
        let from = if matches!(read, HaField::ServiceText) {
            s
        } else {
            c
        };
        let Some(raw) = from.and_then(|v| v.get(name)) else {
            continue;
        };
        let value = match read {
            HaField::ServiceText | HaField::ConfigText => flex::string_of(raw).map(Value::from),
            HaField::ConfigCount => flex::u64_of(raw).map(Value::from),
            HaField::ConfigFlag => flex::bool_of(raw).map(Value::Bool),
        };
        opt(&mut out, key, value);
    }
    if c.is_some() && !out.contains_key("requested") {
        put(&mut out, "requested", Some("started"));
    }
    Value::Object(out)
}

/// Runs an HA change on the guest its arguments (read by `parse`) name; the guest record (with the
/// HA view last read) is written on every path once it was found. The future is the one of every
/// course (guest/course.rs).
pub fn change_ha<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    args: &Value,
    parse: Parse,
) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
    let course = parse(args, run.kind).map(|change| Box::new(Course::new(change, run.kind)) as _);
    run_course(run, course)
}

/// Which request the course waits the answer of.
#[derive(Clone, Copy)]
enum Step {
    Version,
    /// The object's config; `true`: read back after the writes.
    Config(bool),
    /// Every HA resource (for a group); `true`: read back.
    Resources(bool),
    /// The manager's view, before planning.
    Current,
    /// The plan's write of that index.
    Write(usize),
    /// The manager's view, while waiting for it to apply the writes.
    Wait,
}

/// An HA change as plain steps: read the object and the manager's view, `plan` the writes, send
/// them in order, wait (bounded) until the manager's view satisfies `judge`, and read the config
/// back. It decides each request from the answers; guest/course.rs sends them.
struct Course {
    change: Box<dyn HaChange>,
    kind: GuestKind,
    sid: String,
    /// The guest, as messages name it.
    guest: String,
    /// The object acted on: the change's, or the group a rule is on PVE 8.
    obj: HaObject,
    /// The object, as messages name it.
    label: String,
    step: Step,
    view: HaView,
    writes: Vec<Write>,
    /// Whether the manager's view is judged only when an active master wrote it (see `idle`).
    gate: bool,
    /// The write being sent, as messages name it.
    asked: String,
    /// What the wait observed last.
    last: String,
    waited: Result<String, String>,
}

impl Course {
    /// The course of `change` on a guest of `kind`; the guest is named once found (`start`).
    fn new(change: Box<dyn HaChange>, kind: GuestKind) -> Self {
        let obj = change.object();
        Course {
            // A resource's state is the manager's work: only an active master's view shows it.
            gate: obj == HaObject::Resource && !change.reads_only(),
            change,
            kind,
            // Empty texts and lists written as constants (`const { … }`): in the size build std's
            // `String::new` and `Vec::new` are each a call, not inlined (issue 32).
            sid: const { String::new() },
            guest: const { String::new() },
            obj,
            label: const { String::new() },
            step: Step::Version,
            // Written out, not `..HaView::default()`, which builds a whole default value and
            // drops what it overwrites (issue 32).
            view: HaView {
                vmid: 0,
                config: None,
                service: None,
                idle: None,
                status: Value::Null,
                resources: None,
            },
            writes: const { Vec::new() },
            asked: const { String::new() },
            last: const { String::new() },
            waited: Err(const { String::new() }),
        }
    }

    /// The guest found (`guest` names it): a rule asks PVE's version first (PVE 8: a group);
    /// anything else reads its config.
    fn start(&mut self, vmid: u32, guest: String) -> Next {
        self.sid = sid(self.kind, vmid);
        self.guest = guest;
        self.view.vmid = vmid;
        self.label = self.label_of();
        match self.obj {
            HaObject::Rule(_) => self.send(Step::Version, endpoints::version(), Via::Coalesced),
            _ => self.read_config(false),
        }
    }

    fn label_of(&self) -> String {
        let (sid, guest) = (&self.sid, &self.guest);
        let (id, group) = match &self.obj {
            HaObject::Resource => return format!("HA resource {sid} of {guest}"),
            HaObject::Rule(id) => (id, ""),
            HaObject::Group(id) => (id, " as PVE 8's HA group"),
        };
        format!("HA rule {id}{group} ({sid}, {guest})")
    }

    fn send(&mut self, step: Step, request: PveRequest, via: Via) -> Next {
        self.step = step;
        Next::Send(request, via)
    }

    fn versioned(&mut self, answer: Result<Value, PveError>) -> Next {
        let version = pve8(answer);
        if let (HaObject::Rule(id), Ok(true)) = (&self.obj, &version) {
            self.obj = HaObject::Group(id.clone());
            self.label = self.label_of();
        }
        match version {
            Ok(_) => self.read_config(false),
            Err(why) => Next::Done(Err(self.cannot(&why))),
        }
    }

    fn cannot(&self, why: &str) -> String {
        nothing_sent(&self.label, why)
    }

    /// Reads the object into `view.config` (`back`: after the writes) — and, for a group, every
    /// HA resource into `view.resources` (see `config_of`).
    fn read_config(&mut self, back: bool) -> Next {
        let request = request_of(&self.obj, Verb::Get, &self.sid, const { Vec::new() });
        self.send(Step::Config(back), request, Via::Read)
    }

    /// The object was read (or not): before the writes, the manager's view is read next; after
    /// them, the verdict.
    fn read(&mut self, back: bool, read: Result<(), String>) -> Next {
        match (back, read) {
            (false, Ok(())) => self.send(Step::Current, endpoints::ha_status_current(), Via::Read),
            (false, Err(why)) => Next::Done(Err(unread(&self.label, &why))),
            (true, back) => Next::Done(self.verdict(back)),
        }
    }

    /// The manager's view before any write: what the plan plans from.
    fn current(&mut self, answer: Result<Value, PveError>) -> Next {
        let list = match self.observe(answer) {
            Ok(list) => list,
            Err(why) => return self.read(false, Err(why)),
        };
        self.view.status = list;
        match self.change.plan(&self.view) {
            Ok(writes) => {
                self.writes = writes;
                self.write(0)
            }
            Err(why) => Next::Done(Err(self.cannot(&why))),
        }
    }

    /// Sends the plan's write `i`; past the last, judges what was read.
    fn write(&mut self, i: usize) -> Next {
        let Some((to, verb, params)) = self.writes.get_mut(i) else {
            return self.settled();
        };
        let params = std::mem::take(params);
        // A write on another HA resource is one on a resource object: one request_of call.
        let (obj, at) = match to {
            Some(other) => (&HaObject::Resource, other.as_str()),
            None => (&self.obj, self.sid.as_str()),
        };
        let request = request_of(obj, *verb, at, params);
        self.asked = request.label();
        self.send(Step::Write(i), request, Via::Write)
    }

    fn written(&mut self, i: usize, answer: Result<Value, PveError>) -> Next {
        let Err(e) = answer else {
            return self.write(i + 1);
        };
        // The plan's writes before this one were made (PVE answered them).
        let before = ["", ", after the writes before it"][usize::from(i > 0)];
        let action = format_args!("change {} ({}{before})", self.label, self.asked);
        let check = "the HA resource with haStatus (run it again: it plans from what it reads)";
        Next::Done(Err(write_failed(action, &e, check, format_args!(""))))
    }

    /// After the writes: what was just read may already show it (nothing sent, or a read): no
    /// second read then; otherwise the wait.
    fn settled(&mut self) -> Next {
        match (self.writes.is_empty(), self.shows()) {
            (true, Ok(shown)) => self.waited(Ok(shown)),
            _ => self.probe(),
        }
    }

    /// Takes a read of the manager's view (`status/current`): the service's entry and, with
    /// `gate`, why the view is no evidence (see `idle`). One place for the read before the writes
    /// and those of the wait (issue 32).
    fn observe(&mut self, answer: Result<Value, PveError>) -> Result<Value, String> {
        let list = list_of(answer, "the HA status")?;
        self.view.service = service_of(&list, &self.sid);
        self.view.idle = idle(&list).filter(|_| self.gate);
        Ok(list)
    }

    /// What the manager's view last read shows, as the change judges it — or why it is no
    /// evidence.
    fn shows(&self) -> Result<String, String> {
        match &self.view.idle {
            Some(why) => Err(why.clone()),
            None => self.change.judge(&self.view),
        }
    }

    fn probe(&mut self) -> Next {
        self.send(Step::Wait, endpoints::ha_status_current(), Via::Wait)
    }

    /// Judges a read of the wait: `judge` accepts the service's entry, or the wait goes on (with
    /// a progress line), or ends on what cannot change. With `gate`, a list without an active
    /// master is not judged (see `idle`).
    fn judged(&mut self, answer: Result<Value, PveError>) -> Next {
        if let Err(why) = self.observe(answer) {
            return self.waited(Err(why));
        }
        let last = match self.shows() {
            Ok(shown) => return self.waited(Ok(shown)),
            Err(last) => last,
        };
        // Manager.pm: `error` is final until the config asks `disabled`; waiting changes nothing.
        let s = self.view.service.as_ref().unwrap_or(&Value::Null);
        if s["crm_state"] == "error" && s["request_state"] != "disabled" {
            let why = last + " (error is final: only state disabled clears it)";
            return self.waited(Err(why));
        }
        let now = format!("the HA manager to apply {} (now: {last})", self.sid);
        self.last = last;
        Next::Pause(now)
    }

    /// The wait's end: the config after a write is read back whatever the manager did (the record
    /// says what it holds).
    fn waited(&mut self, waited: Result<String, String>) -> Next {
        self.waited = waited;
        match self.writes.is_empty() {
            true => Next::Done(self.verdict(Ok(()))),
            false => self.read_config(true),
        }
    }

    /// The verdict from the wait, the read-back (`back`) and the method's judgement of it.
    fn verdict(&mut self, back: Result<(), String>) -> Result<String, String> {
        let (label, sent) = (&self.label, !self.writes.is_empty());
        let waited = std::mem::replace(&mut self.waited, Err(const { String::new() }));
        let shown = waited.map_err(|why| match sent {
            true => format!("{label}: the config was written, but the HA manager did not apply it: {why} — check `ha-manager status` and the CRM's log (journalctl -u pve-ha-crm) on the master node"),
            false => format!("{label}: nothing needed writing, but the HA manager does not show it as asked: {why} — check `ha-manager status`"),
        })?;
        back.map_err(|why| {
            format!(
                "{label}: the HA manager shows {shown}, but the config could not be read back ({why})"
            )
        })?;
        self.change.read_back(&self.view).map_err(|why| {
            format!("{label}: the HA manager shows {shown}, but the config reads back otherwise: {why} — check {CHECK_READ}")
        })?;
        let what = match (self.change.reads_only(), sent) {
            (true, _) => "",
            (false, true) => " (written and applied)",
            (false, false) => " (already so, nothing sent)",
        };
        Ok(format!("{label}: {shown}{what}"))
    }
}

impl course::Course for Course {
    fn target(&self) -> &GuestRef {
        self.change.target()
    }

    fn absent(&self) -> &'static str {
        ""
    }

    /// A change to started/stopped/disabled waits out a lock on the guest: the LRM's start or
    /// stop of a locked guest fails (qemu-server / pve-container check_lock), so the manager could
    /// not apply it. A removal or `ignored` needs no LRM: PVE takes it at once (Resources.pm).
    fn waits_lock(&self) -> bool {
        self.change.waits_lock()
    }

    fn next(&mut self, ev: &mut Evidence, input: Input) -> Next {
        let answer = match input {
            Input::Start(guest) => return self.start(ev.at.vmid, guest),
            Input::Paused => return self.probe(),
            Input::Stopped(mut last) => {
                // Appended in place, not formatted anew (issue 32).
                last.push_str("; last observed: ");
                last.push_str(&self.last);
                return self.waited(Err(last));
            }
            Input::Answer(answer) => answer,
        };
        match self.step {
            Step::Version => self.versioned(answer),
            Step::Config(back) => match config_of(answer) {
                Ok(config) => {
                    self.view.config = config;
                    match self.obj {
                        HaObject::Group(_) => {
                            let request = endpoints::ha_resources();
                            self.send(Step::Resources(back), request, Via::Read)
                        }
                        _ => self.read(back, Ok(())),
                    }
                }
                Err(why) => self.read(back, Err(why)),
            },
            Step::Resources(back) => {
                let read = list_of(answer, "the HA resources")
                    .map(|list| self.view.resources = Some(list));
                self.read(back, read)
            }
            Step::Current => self.current(answer),
            Step::Write(i) => self.written(i, answer),
            Step::Wait => self.judged(answer),
        }
    }

    /// The guest record's `ha` is what the HA endpoints showed, not the guest status's summary.
    /// The course's object is the change's (only a rule becomes a PVE 8 group): no second
    /// `object()`.
    fn finish(&self, outcome: &mut Outcome) {
        let record = outcome
            .writes
            .first_mut()
            .and_then(|w| w.data.as_object_mut());
        if let (HaObject::Resource, Some(record)) = (&self.obj, record) {
            set(record, "ha", record_of(&self.view));
        }
    }
}

/// Whether PVE is 8 (`GET /version` 8.x): HA groups there, rules on PVE 9.
fn pve8(answer: Result<Value, PveError>) -> Result<bool, String> {
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

/// The object's config from PVE's answer to `GET /cluster/ha/resources/{sid}`, `…/rules/{rule}`
/// or `…/groups/{group}`: `None` when PVE has no such object (Resources.pm read: `no such
/// resource '<sid>'`; Rules.pm: `no such ha rule '<rule>'`; PVE 8 Groups.pm: `no such ha group
/// '<group>'`).
fn config_of(answer: Result<Value, PveError>) -> Result<Option<Value>, String> {
    let missing = ["no such resource", "no such ha "];
    object_or_missing(answer, false, "an HA config", " was", &missing)
}

/// A list from PVE's answer, `what` naming it in messages (`the HA status`).
fn list_of(answer: Result<Value, PveError>, what: &str) -> Result<Value, String> {
    match answer {
        Ok(v) if v.is_array() => Ok(v),
        Ok(other) => Err(malformed(&other, what, " list was")),
        Err(e) => Err(format!("{what} could not be read ({e} — {})", hint(e.kind))),
    }
}

/// Whether a status entry is the `service:<sid>` one.
fn is_service(e: &Value, sid: &str) -> bool {
    let id = e.get("id").and_then(Value::as_str);
    id.and_then(|i| i.strip_prefix("service:")) == Some(sid)
}

/// The `service:<sid>` entry of a status list.
fn service_of(list: &Value, sid: &str) -> Option<Value> {
    list.as_array()?
        .iter()
        .find(|e| is_service(e, sid))
        .cloned()
}

/// Whether the manager's view read before the writes lists HA resource `sid` — `in_error`: with
/// `crm_state` `error`. Status.pm lists every configured HA resource, whether or not the manager
/// processed it (it lists the resources config's ids).
pub fn lists(view: &HaView, sid: &str, in_error: bool) -> bool {
    let list = view.status.as_array().map_or(&[][..], Vec::as_slice);
    list.iter()
        .any(|e| is_service(e, sid) && (!in_error || e["crm_state"] == "error"))
}
