//! A guest's firewall as the firewall methods change it (firewallOptions, firewallRules,
//! firewallIpset, firewallAlias): one engine, configured by each method with data and two plain
//! functions — find the guest, read the section, `plan` the writes that make it what was asked
//! from what was read, send them, read the section back and `judge` it. PVE's firewall API is
//! synchronous: each write answers once the guest's `<vmid>.fw` is written (pve-firewall
//! `PVE/API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm`, `Aliases.pm`). Whether the result applies is
//! read too and reported: pve-firewall compiles a guest's rules only when its own `enable` option
//! and the cluster's are on, and only for NICs with `firewall=1` (`PVE/Firewall.pm`
//! compile_vm_rules / generate_tap_rules_direct).

use super::course::{
    self, nothing_sent, object_or_missing, run_course, unread, Input, Next, Via, CHECK_READ,
};
use super::evidence::Evidence;
use super::reference::GuestRef;
use crate::args::ArgError;
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::property::property;
use crate::pve::request::{owned_segments, push_param, PveRequest, Verb};
use crate::quote::push_item;
use crate::run::Run;
use serde_json::Value;
use std::future::Future;

/// One write of a plan: the verb, the segments under `…/firewall/`, the parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub verb: Verb,
    pub at: Vec<String>,
    pub params: Vec<(String, String)>,
}

impl Write {
    /// Pushes the write onto `plan`: one call at each site of the plans, not a write built there
    /// and then moved into the plan (issue 32).
    pub fn push(plan: &mut Vec<Write>, verb: Verb, at: &[&str], params: Vec<(String, String)>) {
        plan.push(Write {
            verb,
            at: owned_segments(at),
            params,
        });
    }

    /// Pushes a write of the parameters given (`None`: left out) onto `plan`.
    pub fn push_of(
        plan: &mut Vec<Write>,
        verb: Verb,
        at: &[&str],
        params: &[(&str, Option<&str>)],
    ) {
        let mut given = Vec::new();
        for (k, v) in params {
            if let Some(v) = v {
                push_param(&mut given, k, v);
            }
        }
        Write::push(plan, verb, at, given);
    }
}

/// The digest of a list PVE read, as its `first` item carries it (each item carries the list's).
pub fn digest(first: Option<&Value>) -> Option<String> {
    first
        .and_then(|item| item.get("digest"))
        .and_then(flex::string_of)
}

/// Has the `first` write of a plan carry the list's `digest`: PVE refuses it if the list changed
/// since it was read.
pub fn sign(first: Option<&mut Write>, digest: Option<String>) {
    if let (Some(first), Some(digest)) = (first, digest) {
        first.params.push(("digest".to_string(), digest));
    }
}

/// The first segment of a section that is the datacenter's (`/cluster/firewall/…`), not the
/// guest's — as pve-firewall names the scope of an alias reference (`dc/web`).
pub const DATACENTER: &str = "dc/";

/// The sections as read, in the order the change names them (`None`: it does not exist).
pub type Read = [Option<Value>];

/// One firewall method as data and two plain functions: its arguments, read and checked.
pub trait FirewallChange {
    /// The guest changed.
    fn target(&self) -> &GuestRef;
    /// What is changed, for messages (`the firewall rules`).
    fn what(&self) -> String;
    /// The sections read before and after, each the segments under `…/firewall/` (the guest's,
    /// or the datacenter's after [`DATACENTER`]).
    fn sections(&self) -> Vec<Vec<String>>;
    /// PVE's words when a section does not exist (an IP set not made yet): it reads as absent.
    fn missing(&self) -> Option<&'static str> {
        None
    }
    /// Makes the writes that turn the sections read into what was asked, or says why it cannot
    /// be done (then nothing is sent).
    fn plan(&self, read: &Read) -> Result<Vec<Write>, String>;
    /// Judges the sections read back: what they show, or why they are not what was asked.
    fn judge(&self, read: &Read) -> Result<String, String>;
}

/// The sections of a method that reads one, `name` (`rules`, `aliases`, `options`).
pub fn one_section(name: &str) -> Vec<Vec<String>> {
    vec![owned_segments(&[name])]
}

/// Reads a firewall method's arguments into its change.
pub type Parse = fn(&Value) -> Result<Box<dyn FirewallChange>, ArgError>;

/// A method's verdict: the summary, or why it failed.
type Verdict = Result<String, String>;

/// Runs a firewall change on the guest its arguments (read by `parse`) name; the guest record is
/// written on every path once it was found. The future is the one of every course
/// (guest/course.rs); the course's steps are plain functions ([`Course`]).
pub fn change_firewall<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    args: &Value,
    parse: Parse,
) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
    let course = parse(args).map(|change| Box::new(Course::new(change, run.kind)) as _);
    run_course(run, course)
}

/// Where a change stands: reading the sections before, sending the writes, reading the sections
/// back, reading whether the firewall applies (the guest's options, then the cluster's).
#[derive(Clone, Copy, PartialEq)]
enum Stage {
    Before,
    Writing,
    After,
    GuestOptions,
    ClusterOptions,
}

/// A firewall change between two requests: what was read and planned so far.
struct Course {
    change: Box<dyn FirewallChange>,
    kind: GuestKind,
    sections: Vec<Vec<String>>,
    /// The guest, as messages name it (`VM 100 on node pve1`).
    guest: String,
    /// `the firewall rules of VM 100 on node pve1`.
    label: String,
    stage: Stage,
    /// The sections read so far in this stage.
    read: Vec<Option<Value>>,
    writes: Vec<Write>,
    /// How many writes PVE accepted.
    sent: usize,
    /// What the sections read back show.
    shown: String,
    /// What keeps the firewall from applying (`a, b`): written in place, not a list joined
    /// (issue 32).
    off: String,
}

impl course::Course for Course {
    fn target(&self) -> &GuestRef {
        self.change.target()
    }

    fn absent(&self) -> &'static str {
        ": there is no firewall to change"
    }

    fn waits_lock(&self) -> bool {
        false
    }

    /// Takes the answer to the last request (if any) and says what to send next, or the verdict.
    fn next(&mut self, ev: &mut Evidence, input: Input) -> Next {
        let answer = match input {
            Input::Start(guest) => {
                self.label = format!("{} of {guest}", self.change.what());
                self.guest = guest;
                None
            }
            Input::Answer(answer) => Some(answer),
            // A firewall course has no wait.
            Input::Paused | Input::Stopped(_) => None,
        };
        match self.step(ev, answer) {
            Ok((request, via)) => Next::Send(request, via),
            Err(verdict) => Next::Done(verdict),
        }
    }
}

impl Course {
    fn new(change: Box<dyn FirewallChange>, kind: GuestKind) -> Self {
        Course {
            sections: change.sections(),
            change,
            kind,
            // Empty texts and lists written as constants (`const { … }`): in the size build std's
            // `String::new` and `Vec::new` are each a call, not inlined (issue 32).
            guest: const { String::new() },
            label: const { String::new() },
            stage: Stage::Before,
            read: const { Vec::new() },
            writes: const { Vec::new() },
            sent: 0,
            shown: const { String::new() },
            off: const { String::new() },
        }
    }

    /// Takes the answer to the last request (if any) and says what to send next, or the verdict.
    fn step(
        &mut self,
        ev: &mut Evidence,
        answer: Option<Result<Value, PveError>>,
    ) -> Result<(PveRequest, Via), Verdict> {
        if let Some(answer) = answer {
            self.take(ev, answer)?;
        }
        loop {
            match self.stage {
                Stage::Before | Stage::After if self.read.len() < self.sections.len() => {
                    let section = &self.sections[self.read.len()];
                    return Ok((self.read_request(ev, section), Via::Read));
                }
                Stage::Before => {
                    let planned = self.change.plan(&self.read);
                    self.writes = planned.map_err(|why| self.refused(&why))?;
                    self.next_stage(Stage::Writing);
                }
                Stage::Writing => match self.writes.get(self.sent) {
                    Some(write) => return Ok((self.write_request(ev, write), Via::Write)),
                    None => self.next_stage(Stage::After),
                },
                Stage::After => {
                    let judged = self.change.judge(&self.read);
                    self.shown = judged.map_err(|why| self.not_kept(&why))?;
                    // The options just read back are the guest's `enable` now: not asked for again.
                    // Matched, not compared with `[["options"]]`: no comparison of nested lists
                    // compiled for it (issue 32).
                    let only_options = matches!(self.sections.as_slice(),
                        [only] if matches!(only.as_slice(), [section] if section == "options"));
                    let options = match only_options {
                        true => self.read.first_mut().and_then(Option::take),
                        false => None,
                    };
                    match options {
                        Some(options) => {
                            self.note(false, Ok(options));
                            self.stage = Stage::ClusterOptions;
                        }
                        None => {
                            self.stage = Stage::GuestOptions;
                            let section = [String::from("options")];
                            return Ok((self.read_request(ev, &section), Via::Read));
                        }
                    }
                }
                Stage::GuestOptions | Stage::ClusterOptions => {
                    return Ok((endpoints::cluster_firewall_options(), Via::Coalesced))
                }
            }
        }
    }

    fn next_stage(&mut self, stage: Stage) {
        self.read.clear();
        self.stage = stage;
    }

    /// Takes the answer to the request the stage asked for (a write's is traced by the driver).
    fn take(&mut self, ev: &mut Evidence, answer: Result<Value, PveError>) -> Result<(), Verdict> {
        match self.stage {
            // Every section is an object (options) or a list (rules, IP sets, aliases); one PVE
            // says (`missing`) does not exist reads as absent.
            Stage::Before | Stage::After => match object_or_missing(
                answer,
                true,
                &self.change.what(),
                " were",
                self.change.missing().as_slice(),
            ) {
                Ok(read) => self.read.push(read),
                Err(why) => return Err(Err(self.unread(ev, &why))),
            },
            Stage::Writing => {
                if let Err(e) = answer {
                    return Err(Err(self.write_failed(ev, &e)));
                }
                self.sent += 1;
            }
            Stage::GuestOptions => {
                self.note(false, answer);
                self.stage = Stage::ClusterOptions;
            }
            Stage::ClusterOptions => {
                self.note(true, answer);
                return Err(Ok(self.in_effect(ev)));
            }
        }
        Ok(())
    }

    /// Why a section could not be read: before, nothing was changed; after, whether the writes
    /// applied is unknown.
    fn unread(&self, ev: &mut Evidence, why: &str) -> String {
        let (label, total) = (&self.label, self.writes.len());
        if self.stage == Stage::Before {
            return unread(label, why);
        }
        ev.trail.outcome_unknown = ev.trail.outcome_unknown || total > 0;
        format!("{label}: {total} writes were accepted, but it could not be read back ({why}): whether they applied is unknown")
    }

    fn refused(&self, why: &str) -> Verdict {
        Err(nothing_sent(&self.label, why))
    }

    fn not_kept(&self, why: &str) -> Verdict {
        Err(format!("{}: {} writes were accepted, but {why} — check what PVE kept with the method's read (run it again: it plans from what it reads)", self.label, self.writes.len()))
    }

    /// Why the write PVE answered `e` failed, with how many before it were accepted.
    fn write_failed(&self, ev: &Evidence, e: &PveError) -> String {
        let (label, done, total) = (&self.label, self.sent, self.writes.len());
        let request = match self.writes.get(done) {
            Some(write) => self.write_request(ev, write).label(),
            None => String::new(),
        };
        course::write_failed(
            format_args!("change {label} (write {} of {total}: {request})", done + 1),
            e,
            CHECK_READ,
            format_args!("; {done} earlier writes were accepted"),
        )
    }

    /// Notes whether firewall options read (the guest's, or the `cluster`'s) keep the guest's
    /// firewall from applying.
    fn note(&mut self, cluster: bool, read: Result<Value, PveError>) {
        let (disabled, options) = match cluster {
            true => (
                "the cluster's firewall is disabled",
                "the cluster's firewall options",
            ),
            false => ("its firewall option enable is off", "its firewall options"),
        };
        match read {
            Ok(v) if !on(&v) => push_item(&mut self.off, ", ", disabled),
            Ok(_) => {}
            Err(e) => push_item(
                &mut self.off,
                ", ",
                &format!("{options} could not be read ({e})"),
            ),
        }
    }

    /// The summary, once the options are read: what keeps the guest's firewall from applying
    /// (its `enable` option, the cluster's, its NICs without `firewall=1`) as a warning (logged
    /// by the driver) and words for the summary.
    fn in_effect(&mut self, ev: &mut Evidence) -> String {
        let off = &mut self.off;
        for (key, value) in &ev.config {
            let without = |v: String| property(&v, "firewall").is_none_or(|f| f != "1");
            if key.starts_with("net") && flex::string_of(value).is_some_and(without) {
                push_item(off, ", ", key);
                off.push_str(" has no firewall=1");
            }
        }
        let (label, shown, total) = (&self.label, &self.shown, self.writes.len());
        // The effect is pushed onto the summary, not made a text of its own first.
        let mut summary = format!("{label}: {shown} ({total} writes sent); ");
        match off.is_empty() {
            true => summary
                .push_str("in effect (guest and cluster firewall on, every NIC with firewall=1)"),
            false => {
                let warning = format!("{}: the firewall is not in effect: {off}", self.guest);
                ev.trail.warnings.push(warning);
                summary.push_str("not in effect: ");
                summary.push_str(off);
            }
        }
        summary
    }

    /// The request that reads a section: the guest's, or the datacenter's after [`DATACENTER`].
    fn read_request(&self, ev: &Evidence, section: &[String]) -> PveRequest {
        let guest = &ev.at;
        match section.split_first() {
            Some((dc, at)) if dc == DATACENTER => endpoints::cluster_firewall(at),
            _ => endpoints::guest_firewall(&guest.node, self.kind, guest.vmid, Verb::Get, section),
        }
    }

    /// The request that sends one write of the plan.
    fn write_request(&self, ev: &Evidence, write: &Write) -> PveRequest {
        let at = &ev.at;
        let mut request =
            endpoints::guest_firewall(&at.node, self.kind, at.vmid, write.verb, &write.at);
        request.params.extend(write.params.iter().cloned());
        request
    }
}

/// Whether firewall options read show `enable` on.
fn on(options: &Value) -> bool {
    options.get("enable").and_then(flex::bool_of) == Some(true)
}
