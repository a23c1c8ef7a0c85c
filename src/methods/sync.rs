//! `sync`: records every guest in scope, in as few requests as PVE allows.
//!
//! - Scope `node` (the default; the `node` argument, else the transport's node): one
//!   `GET /nodes/{node}/qemu?full=1` (`GET /nodes/{node}/lxc` for containers), which carries the
//!   status (and a VM's `qmpstatus`) of every guest.
//! - Scope `cluster`: `GET /nodes`, then that list once per online node (n + 1 requests for n nodes).
//!   Not `/cluster/resources`: its status comes from a ~10 s old cache, may be `unknown`, and has no
//!   `qmpstatus`, so it cannot be recorded as the guest's state.
//! - `nodes` (a list): those nodes' lists, each read like a node's; an unreadable one fails the sync
//!   after the others are written.
//! - `tags` (a list, PVE's tag syntax): only the listed guests that carry every one of them are
//!   recorded (compared without case, as PVE's datacenter default `tag-style` keeps tags:
//!   pve-guest-common `PVE/GuestHelpers.pm` get_unique_tags lower-cases them); a stored guest whose
//!   record lacks one of them is out of the selection. Every record a selection writes says which
//!   (`selection`: scope, nodes, tags, where).
//! - `where` (a CEL expression over a guest's fields, guest/select.rs): only the listed guests whose
//!   fields satisfy it are recorded, judged by the host (swamp's CEL environment); a stored guest
//!   whose record does not satisfy it is out of the selection. It is checked before anything is
//!   sent; a guest it cannot be evaluated over is not recorded and fails the sync after the others
//!   are written.
//! - With a guest reference (`vmid`/`vmName`): only that guest, read like `lookup`.
//!
//! Identity: the lists carry no `smbios1`. A guest's config is read only when a cheap signal says
//! the VMID may now hold another guest: its stored record says absent, or names another guest.
//! Otherwise the stored identity (if any) carries forward, and a guest seen for the first time is
//! recorded without one (`lookup` establishes it) — there is nothing to compare against yet. So a
//! sync of a 1,000-guest node is one request, first or steady-state. A reused VMID whose new guest
//! took the old name is not noticed by sync (`lookup` always compares identities).
//!
//! Absence: the stored records are listed through the host (swamp's
//! `ctx.dataRepository.findAllForModel`). A stored guest in scope whose record says present but that
//! no list holds is confirmed with `GET /cluster/nextid?vmid=N` (lists leave out guests the token may
//! not audit) before it is recorded `present: false`. One that still exists is left as recorded: a
//! node sync warns (it may have migrated), a cluster sync fails after writing everything else.

use crate::args::{segment_fault, ArgError, Fields, Kind, Read, Spec};
use crate::client::shaped;
use crate::explain::{could_not, hint};
use crate::guest::identity::{stored_identity, Identity};
use crate::guest::locate::next_id_free;
use crate::guest::observe::{carried_from, judge_identity, locked_note, same_guest};
use crate::guest::record::{GuestRecord, SyncSelection};
use crate::guest::select;
use crate::guest::settle::lock_of;
use crate::guest::upstream::{vmid_of_instance, with_superseded, written_by_upstream};
use crate::host::{Host, HostError};
use crate::outcome::{Failure, Outcome, RecordWrite};
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::pve::request::PveRequest;
use crate::pve::responses::{parse, GuestStatus};
use crate::quote::Joined;
use crate::record_json::set;
use crate::run::{write_value, Run};
use serde_json::{Map, Value};
use std::fmt::Write;

/// The arguments of `sync`: the selection as given, completed by [`Sweep::plan`] (one type for
/// both, not a second one it is moved into: issue 32).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncArgs<'a> {
    /// A guest reference was given: sync just that guest.
    pub one_guest: bool,
    /// Borrowed from the call's arguments: not copied (issue 32).
    pub node: Option<&'a str>,
    /// `nodes` was given: the nodes to read instead of one node or the cluster.
    pub listed: bool,
    /// The scope given (else `node`), the nodes listed (`nodes`), the tags every recorded guest
    /// must carry (lower-cased) and the expression its fields must satisfy.
    pub selection: SyncSelection,
}

/// The scope and the node, read borrowed and checked by one table walk.
const FIELDS: [Spec; 2] = [
    Spec::new("scope", Kind::Text).rule(scope_fault),
    Spec::new("node", Kind::Text).rule(segment_fault),
];

fn scope_fault(scope: &str) -> Option<&'static str> {
    (scope != "node" && scope != "cluster").then_some("must be \"node\" or \"cluster\"")
}

impl<'a> SyncArgs<'a> {
    /// Each field is read into the arguments as they are built, so a refusal drops them in one
    /// place (each early return otherwise drops every value read so far, issue 32).
    pub fn parse(args: &'a Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let one_guest = args.get("vmid").is_some() || args.get("vmName").is_some();
        if one_guest {
            crate::guest::reference::GuestRef::parse(&fields)?;
        }
        let mut read = [Read::default(); FIELDS.len()];
        fields.read_all(&FIELDS, &mut read)?;
        let [scope, node] = read;
        let scoped = scope.text.is_some();
        let mut parsed = SyncArgs {
            one_guest,
            node: node.text,
            listed: false,
            selection: SyncSelection {
                scope: scope.owned_or("node"),
                nodes: Vec::new(),
                tags: Vec::new(),
                r#where: None,
            },
        };
        let selection = &mut parsed.selection;
        let no_node = "must name at least one node";
        let nodes = names(&fields, "nodes", no_node, segment_fault, false)?;
        parsed.listed = nodes.is_some();
        selection.nodes = nodes.unwrap_or_default();
        let tags = names(
            &fields,
            "tags",
            "must name at least one tag",
            tag_fault,
            true,
        )?;
        selection.tags = tags.unwrap_or_default();
        // Whether it compiles is the host's to judge (guest/select.rs), before anything is sent.
        selection.r#where = fields.text("where")?.map(str::to_string);
        parsed.exclusions(scoped)?;
        Ok(parsed)
    }

    /// What cannot be given together: a guest reference and a selection; `nodes` and `node` or
    /// `scope` (`scoped`: it was given).
    fn exclusions(&self, scoped: bool) -> Result<(), ArgError> {
        let selection = &self.selection;
        let selects = self.listed || !selection.tags.is_empty() || selection.r#where.is_some();
        if self.one_guest && selects {
            let field = match (self.listed, selection.tags.is_empty()) {
                (true, _) => "nodes",
                (false, false) => "tags",
                (false, true) => "where",
            };
            return Err(ArgError::new(
                field,
                "cannot be given with vmid or vmName (a sync of one guest selects nothing more)",
            ));
        }
        if self.listed && (self.node.is_some() || scoped) {
            return Err(ArgError::new(
                "nodes",
                "cannot be given with node or scope: nodes is the scope",
            ));
        }
        Ok(())
    }
}

/// `nodes` or `tags`: a non-empty list (`empty` says so otherwise), each entry checked (`fault`:
/// the rule it breaks, if any, refused under its place, e.g. `tags[1]`), lower-cased when `fold`
/// says (tags compare without case), and kept once.
fn names(
    fields: &Fields,
    key: &str,
    empty: &str,
    fault: fn(&str) -> Option<&'static str>,
    fold: bool,
) -> Result<Option<Vec<String>>, ArgError> {
    let Some(given) = fields.optional::<Vec<String>>(key)? else {
        return Ok(None);
    };
    if given.is_empty() {
        return Err(ArgError::new(key, empty));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, name) in given.iter().enumerate() {
        if let Some(rule) = fault(name) {
            return Err(ArgError::new(format!("{key}[{i}]"), rule));
        }
        let mut name = name.clone();
        if fold {
            name.make_ascii_lowercase();
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(Some(out))
}

/// The rule an entry of `tags` breaks, if any: PVE's tag syntax (pve-common `PVE/JSONSchema.pm`
/// `$PVE_TAG_RE`: a letter, digit or `_`, then letters, digits and `_ - + .`).
fn tag_fault(tag: &str) -> Option<&'static str> {
    let mut fits = !tag.is_empty();
    let mut first = true;
    for b in tag.bytes() {
        fits &=
            b.is_ascii_alphanumeric() || b == b'_' || (!first && matches!(b, b'-' | b'+' | b'.'));
        first = false;
    }
    (!fits).then_some("must be a PVE tag: a letter, digit or _, then letters, digits, _, -, + or .")
}

/// What one sync covers, saw and wrote (`'n`: the nodes it reads, whose names it borrows).
struct Sweep<'n> {
    /// What this sync selects: its scope (`node`: one node; `nodes`; `cluster`: every online
    /// node, `nodes` empty), tags and expression.
    selection: SyncSelection,
    /// The selection as every record states it (`selection`), made JSON once.
    stated: Value,
    writes: Vec<RecordWrite>,
    /// VMIDs found in a list (as `usize`: the module sorts those already, `order::sort_by`).
    seen: Vec<usize>,
    /// Listed guests left out of the selection.
    unselected: usize,
    /// Listed guests `where` could not be evaluated over (not recorded).
    unjudged: usize,
    /// Nodes whose list was read.
    read: Vec<&'n str>,
    running: usize,
    absent: usize,
    /// `101 (clone), 102 (backup)`: guests whose config is locked (an operation on them has not
    /// finished), listed as the summary says them.
    locked: String,
    /// Why the sync cannot claim every guest in scope was read.
    problems: Vec<String>,
}

/// Whether `args` ask for a sync of one guest (a guest reference, and nothing `sync` refuses).
/// Dispatch runs it as `lookup` runs (`lookup::recorded` with [`synced_one`]): `lookup`'s own boxed
/// future, not one more held inside [`sync`]'s (issue 32).
pub fn of_one_guest(args: &Value) -> bool {
    SyncArgs::parse(args).is_ok_and(|parsed| parsed.one_guest)
}

/// Runs `sync` of a selection (a sync of one guest is dispatched apart: [`of_one_guest`]). Its
/// reads are one course of awaits, all in this function (each async fn around some of them would
/// be one more future, issue 32); what each read means is judged by plain functions, so the async
/// state machine holds little.
pub async fn sync<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let parsed = match SyncArgs::parse(args) {
        Ok(parsed) => parsed,
        Err(e) => return Failure::from(e).into(),
    };
    // The sweep of a selection: the scope's lists, then the stored guests in it that no list held.
    let mut sweep = match Sweep::plan(run, parsed) {
        Ok(sweep) => sweep,
        Err(failure) => return failure.into(),
    };
    let nodes = match sweep.selection.nodes.is_empty() {
        false => sweep.selection.nodes.clone(),
        true => {
            let listed = run.pve().call(&endpoints::nodes()).await;
            match sweep.online_nodes(listed) {
                Ok(nodes) => nodes,
                Err(failure) => return failure.into(),
            }
        }
    };
    for node in &nodes {
        let request = endpoints::node_guests(node, run.kind);
        let listed = run.pve().call(&request).await;
        let chosen = match sweep.listed(run, node, &request, listed) {
            Ok(Some(chosen)) => chosen,
            Ok(None) => continue,
            Err(failure) => return failure.into(),
        };
        // The guests the selection took. Their stored records are read in one host call
        // (`Host::read_records`): a 1,000-guest node is one read of the repository, not
        // 1,000 in a row.
        let mut instances = Vec::with_capacity(chosen.len());
        for (vmid, _) in &chosen {
            instances.push(run.guest_instance(*vmid));
        }
        // A stored record that cannot be read only costs a config read.
        let stored = run.host.read_records(&instances).await.unwrap_or_default();
        // One record for each guest: past the host's answer, none is stored. Taken by place,
        // not zipped nor drained: each adapter compiles its own code (issue 32).
        for (at, (vmid, status)) in chosen.iter().enumerate() {
            let vmid = *vmid;
            let instance = instances.get_mut(at).map(std::mem::take);
            let stored = stored.get(at).and_then(Option::as_ref);
            let mut record = carried(run, vmid, node, status, stored);
            // It may be another guest now: its config read and its identity compared
            // (see the module doc); a config that cannot be read leaves it carried.
            if stored.is_some_and(|s| !same_guest(s, status)) {
                let request = endpoints::guest_config(node, run.kind, vmid);
                let read = run.pve().call(&request).await;
                let read = shaped::<Map<String, Value>>(&request, "a guest config", read);
                let warning = match read {
                    Ok(config) => {
                        let identity = Identity::from_config(&config);
                        judge_identity(run, &mut record, identity, stored);
                        unproven_reuse(run.kind.noun(), vmid, stored)
                    }
                    Err(e) => Some(unchecked(run.kind.noun(), vmid, &e)),
                };
                if let Some(warning) = warning {
                    run.warn(&warning);
                    set(&mut record.fields, "warnings", Value::from(vec![warning]));
                }
            }
            sweep.record(run.guest_spec(), instance.unwrap_or_default(), record);
        }
    }
    // Stored guests in scope that no list held: absent records for the confirmed
    // absent.
    let listed = run.host.list_records(run.guest_spec()).await;
    let names = listed_records(run, listed).unwrap_or_default();
    // Sorted for the lookups below; a VMID is listed by one node only.
    crate::order::sort_by(&mut sweep.seen, &Ord::cmp);
    for name in &names {
        let vmid = vmid_of_instance(name, run.kind.record_prefix());
        let Some(vmid) = vmid.filter(|v| sweep.seen.binary_search(&(*v as usize)).is_err()) else {
            continue;
        };
        let Ok(Some(stored)) = run.host.read_record(name).await else {
            continue;
        };
        if sweep.takes_stored(run, vmid, &stored) {
            let free = next_id_free(&run.pve(), vmid).await;
            let node = stored.get("node").and_then(Value::as_str);
            sweep.confirmed(run, vmid, node, free);
        }
    }
    let said = sweep.said(run.kind.noun());
    let writes = with_superseded(run, sweep.writes).await;
    match said {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

/// The summary of a sync of one guest, read and written like `lookup` (`lookup::recorded`).
pub fn synced_one(kind: GuestKind, record: &GuestRecord) -> String {
    format!(
        "synced {} {}{}",
        kind.noun(),
        record.vmid,
        locked_note(record.lock.as_deref())
    )
}

impl<'n> Sweep<'n> {
    /// The sweep a selection asks for: `where` checked before anything is sent, then the
    /// selection its records state (the scope, its nodes, the tags, the expression).
    fn plan<H: Host>(run: &Run<'_, H>, parsed: SyncArgs<'_>) -> Result<Sweep<'n>, Failure> {
        let mut selection = parsed.selection;
        if let Some(expression) = &selection.r#where {
            select::check(run.host, expression)?;
        }
        match (parsed.listed, selection.scope.as_str()) {
            (true, _) => selection.scope = "nodes".to_string(),
            (false, "cluster") => {}
            (false, _) => {
                let node = parsed.node.unwrap_or(run.global.transport.node());
                selection.nodes.push(node.to_string());
            }
        }
        Ok(Sweep {
            stated: selection.json(),
            selection,
            writes: Vec::new(),
            seen: Vec::new(),
            unselected: 0,
            unjudged: 0,
            read: Vec::new(),
            running: 0,
            absent: 0,
            locked: String::new(),
            problems: Vec::new(),
        })
    }

    /// Whether the scope is one node (which fails the sync when its list cannot be read).
    fn one_node(&self) -> bool {
        self.selection.scope == "node"
    }

    /// Whether a guest is in the selection: it carries every selected tag and its record (the
    /// one listed, or the one stored) satisfies `where`; `Err`: `where` cannot be evaluated over it.
    fn selects<H: Host>(&self, run: &Run<'_, H>, guest: Candidate) -> Result<bool, String> {
        let selection = &self.selection;
        for wanted in &selection.tags {
            if !guest.carries(wanted) {
                return Ok(false);
            }
        }
        match &selection.r#where {
            Some(expression) => select::selects(run.host, expression, &guest.fields(run)),
            None => Ok(true),
        }
    }

    /// `GET /nodes` as answered: the online nodes; an offline or oddly named node is a problem of
    /// the sweep.
    fn online_nodes(&mut self, listed: Result<Value, PveError>) -> Result<Vec<String>, Failure> {
        let entries = match listed {
            Ok(Value::Array(entries)) => entries,
            Ok(other) => {
                return Err(no_nodes(&PveError::malformed_args(format_args!(
                    "GET /nodes answered {other} where a list of nodes was expected",
                    other = crate::quote::json(&other)
                ))))
            }
            Err(e) => return Err(no_nodes(&e)),
        };
        let mut online = Vec::new();
        for entry in &entries {
            let name = entry.get("node").and_then(Value::as_str).unwrap_or("");
            let status = entry
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            if segment_fault(name).is_some() {
                self.problems.push(format!(
                    "GET /nodes listed a node named {name:?}, which cannot be read"
                ));
            } else if status != "online" {
                self.problems
                    .push(format!("node {name} is {status}: its guests were not read"));
            } else {
                online.push(name.to_string());
            }
        }
        if online.is_empty() && self.problems.is_empty() {
            let data = Value::Array(entries);
            return Err(Failure::new(format!(
                "GET /nodes answered no nodes: {data}",
                data = crate::quote::json(&data)
            )));
        }
        Ok(online)
    }

    /// A node's list as answered: the guests in it the selection takes (`None`: it could not be
    /// read). A node scope whose list cannot be read fails without records; in a wider scope, an
    /// unreadable list is a problem of the sweep.
    fn listed<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        node: &'n str,
        request: &PveRequest,
        listed: Result<Value, PveError>,
    ) -> Result<Option<Vec<(u32, GuestStatus)>>, Failure> {
        let list = match listed.and_then(list_of) {
            Ok(list) => list,
            Err(e) => {
                let failure = list_failure(run.kind.noun(), node, request, &e);
                if self.one_node() {
                    return Err(failure);
                }
                self.problems.push(failure.0);
                return Ok(None);
            }
        };
        self.read.push(node);
        let mut chosen = Vec::new();
        for entry in &list {
            if let Some(guest) = self.select_listed(run, node, entry) {
                chosen.push(guest);
            }
        }
        Ok(Some(chosen))
    }

    /// One entry of a node's list, counted in the sweep: its VMID and state when the selection
    /// takes it.
    fn select_listed<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        node: &str,
        entry: &Value,
    ) -> Option<(u32, GuestStatus)> {
        let vmid = entry
            .get("vmid")
            .and_then(flex::u64_of)
            .and_then(|v| u32::try_from(v).ok());
        let (Some(vmid), Some(status)) = (vmid, parse::<GuestStatus>(entry)) else {
            self.problems.push(format!(
                "node {node} listed a guest whose state cannot be read: {entry}",
                entry = crate::quote::json(entry)
            ));
            return None;
        };
        self.seen.push(vmid as usize);
        let listed = Candidate::Listed {
            vmid,
            node,
            status: &status,
        };
        match self.selects(run, listed) {
            Ok(true) => {}
            Ok(false) => {
                self.unselected += 1;
                return None;
            }
            Err(e) => {
                self.unjudged += 1;
                self.problems.push(unjudged(run.kind.noun(), vmid, &e));
                return None;
            }
        }
        self.running += usize::from(status.status == "running");
        if let Some(lock) = lock_of(&status) {
            if !self.locked.is_empty() {
                self.locked.push_str(", ");
            }
            let _ = write!(self.locked, "{vmid} ({lock})");
        }
        Some((vmid, status))
    }

    /// A stored record that says present, on a node this sweep read, in the selection; a record
    /// `where` cannot be evaluated over is a problem of the sweep.
    fn takes_stored<H: Host>(&mut self, run: &Run<'_, H>, vmid: u32, stored: &Value) -> bool {
        let node = stored.get("node").and_then(Value::as_str);
        // Upstream's records (no `present`: unknown, deleted or tombstoned) claim a guest there too.
        let present =
            stored.get("present") == Some(&Value::Bool(true)) || written_by_upstream(stored);
        // A node sync that got here read its node's list: `read` is that node.
        let on_a_read_node = self.read.iter().any(|r| Some(*r) == node);
        if !present || !on_a_read_node {
            return false;
        }
        match self.selects(run, Candidate::Stored(stored)) {
            Ok(selected) => selected,
            Err(e) => {
                self.problems.push(format!(
                    "whether stored {} {vmid} is in the selection could not be judged: where cannot be evaluated over its record: {e}",
                    run.kind.noun()
                ));
                false
            }
        }
    }

    /// Writes a guest's record, stating the selection (made JSON once, in [`Sweep::plan`]).
    fn record(&mut self, spec: &str, instance: String, record: GuestRecord) {
        let mut written = write_value(spec, instance, record.json());
        if let Value::Object(data) = &mut written.data {
            set(data, "selection", self.stated.clone());
        }
        self.writes.push(written);
    }

    /// What `GET /cluster/nextid` said of a stored guest no list held: absent (recorded so), still
    /// there (left as recorded), or unknown.
    fn confirmed<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        vmid: u32,
        stored_node: Option<&str>,
        free: Result<(), PveError>,
    ) {
        let noun = run.kind.noun();
        match free {
            Ok(()) => {
                run.info_args(format_args!("{noun} {vmid} no longer exists: recorded as absent"));
                let record = GuestRecord::absent(vmid, run.method, run.now_iso());
                self.record(run.guest_spec(), run.guest_instance(vmid), record);
                self.absent += 1;
            }
            Err(e) if e.kind == ErrorKind::IdTaken => match self.selection.nodes.is_empty() {
                // On a node or some nodes of the cluster, it may have moved to another.
                false => run.warn_args(format_args!(
                    "{noun} {vmid} was recorded on node {} but is no longer listed there, and it still exists: it migrated, or the token may no longer audit it — its record was left as it was (run lookup for it)",
                    stored_node.unwrap_or("?")
                )),
                true => self.problems.push(format!(
                    "{noun} {vmid} exists but no node lists it as a {} guest the token may audit — grant VM.Audit on /vms/{vmid} (its record was left as it was)",
                    run.kind.segment()
                )),
            },
            Err(e) => self.problems.push(format!(
                "whether {noun} {vmid} still exists could not be confirmed (GET /cluster/nextid): {e} — {}",
                hint(e.kind)
            )),
        }
    }

    /// The sweep's summary, or its failure when not every guest in scope was read. Written piece
    /// by piece into one text.
    fn said(&self, noun: &str) -> Result<String, String> {
        let selection = &self.selection;
        let recorded = self.seen.len() - self.unselected - self.unjudged;
        let mut said = format!("synced {recorded} {noun}s");
        // Fixed words pushed as they are: a `write!` is an argument table each (issue 32).
        if !selection.tags.is_empty() {
            said.push_str(" with the tags ");
            said.push_str(&selection.tags.joined(", "));
        }
        if let Some(expression) = &selection.r#where {
            said.push_str(" where ");
            said.push_str(expression);
        }
        said.push_str(match self.one_node() {
            true => " in node ",
            false => " in nodes ",
        });
        said.push_str(&self.read.joined(", "));
        let _ = write!(
            said,
            " ({} running); {} confirmed absent",
            self.running, self.absent
        );
        if self.unselected > 0 {
            let outside = match selection.r#where {
                None => " listed without every selected tag (not recorded)",
                Some(_) => " listed outside the selection (not recorded)",
            };
            let _ = write!(said, "; {}", self.unselected);
            said.push_str(outside);
        }
        if !self.locked.is_empty() {
            said.push_str("; locked (an operation on them has not finished): ");
            said.push_str(&self.locked);
        }
        match self.problems.is_empty() {
            true => Ok(said),
            false => {
                said.push_str(", but not every guest in scope was read: ");
                said.push_str(&self.problems.joined("; "));
                Err(said)
            }
        }
    }
}

/// A guest a selection judges: as its node listed it, or as its stored record says. One reader of
/// both, not a closure each behind a `dyn` (issue 32).
#[derive(Clone, Copy)]
enum Candidate<'a> {
    Listed {
        vmid: u32,
        node: &'a str,
        status: &'a GuestStatus,
    },
    Stored(&'a Value),
}

impl Candidate<'_> {
    /// Whether the guest carries `wanted` (compared without case: the module doc): in its list
    /// entry's tags (PVE's `a;b`), or its record's list.
    fn carries(self, wanted: &str) -> bool {
        match self {
            Candidate::Listed { status, .. } => {
                flex::has_tag(status.tags.as_deref().unwrap_or(""), wanted)
            }
            Candidate::Stored(stored) => {
                let tags = stored.get("tags").and_then(Value::as_array);
                let tags = tags.map(Vec::as_slice).unwrap_or_default();
                tags.iter()
                    .any(|t| t.as_str().is_some_and(|t| t.eq_ignore_ascii_case(wanted)))
            }
        }
    }

    /// The fields `where` is evaluated over: the record this sync would write for a listed guest,
    /// or the stored one.
    fn fields<H: Host>(self, run: &Run<'_, H>) -> Value {
        match self {
            Candidate::Listed { vmid, node, status } => {
                let record = GuestRecord::observed(vmid, node, status, run.method, run.now_iso());
                record.json()
            }
            Candidate::Stored(stored) => stored.clone(),
        }
    }
}

/// A node's list: an array, or the answer is wrong.
fn list_of(data: Value) -> Result<Vec<Value>, PveError> {
    match data {
        Value::Array(list) => Ok(list),
        other => Err(PveError::malformed_args(format_args!(
            "not a list: {other}",
            other = crate::quote::json(&other)
        ))),
    }
}

fn no_nodes(e: &PveError) -> Failure {
    could_not("list the cluster's nodes (GET /nodes)", e)
}

/// Why a node's list could not be read, naming the request with its query.
fn list_failure(noun: &str, node: &str, request: &PveRequest, e: &PveError) -> Failure {
    let mut action = format!("list the {noun}s of node {node} ({}", request.label());
    let mut separator = '?';
    for (key, value) in &request.params {
        action.push(separator);
        action.push_str(key);
        action.push('=');
        action.push_str(value);
        separator = '&';
    }
    action.push(')');
    could_not(&action, e)
}

fn unjudged(noun: &str, vmid: u32, e: &str) -> String {
    format!("{noun} {vmid} was not recorded: where cannot be evaluated over its fields: {e}")
}

/// The record of a listed guest as observed, its stored identity carried forward without
/// re-reading it, with the time it was read ([`carried_from`]).
fn carried<H: Host>(
    run: &Run<'_, H>,
    vmid: u32,
    node: &str,
    status: &GuestStatus,
    stored: Option<&Value>,
) -> GuestRecord {
    let mut record = GuestRecord::observed(vmid, node, status, run.method, run.now_iso());
    if let Some((identity, read_at)) = stored.and_then(carried_from) {
        record.identity = identity.json();
        record.identity_observed_at = Some(read_at);
    }
    record
}

/// A guest whose config could not be read: its identity carried, not checked.
fn unchecked(noun: &str, vmid: u32, e: &PveError) -> String {
    format!("{noun} {vmid}: identity not checked, its config could not be read: {e}")
}

/// A guest whose record named another guest but held no fingerprint: a reuse cannot be proven
/// either way, so the warning says so.
fn unproven_reuse(noun: &str, vmid: u32, stored: Option<&Value>) -> Option<String> {
    if stored.and_then(stored_identity).is_some() {
        return None;
    }
    Some(format!(
        "{noun} {vmid}: its record named another guest ({}) but held no identity to compare: the VMID may have been reused; its identity is recorded now",
        stored.and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or("none")
    ))
}

/// The stored records' names, or why guests that disappeared are not detected (warned).
fn listed_records<H: Host>(
    run: &Run<'_, H>,
    listed: Result<Option<Vec<String>>, HostError>,
) -> Option<Vec<String>> {
    match listed {
        Ok(Some(names)) => Some(names),
        Ok(None) => {
            run.warn(
                "the host cannot list stored records: guests that disappeared are not detected",
            );
            None
        }
        Err(e) => {
            run.warn_args(format_args!(
                "stored records could not be listed ({}): guests that disappeared are not detected",
                e.message
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::pve::endpoints::GuestKind;
    use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    fn run_sync(host: &ScriptedHost, extra: Value) -> Outcome {
        let args = api_args(extra);
        run_method_of(GuestKind::Qemu, host, "sync", &args)
    }

    fn guest(vmid: u32, name: &str, status: &str) -> Value {
        json!({"vmid": vmid, "name": name, "status": status, "qmpstatus": status})
    }

    fn stored(host: &ScriptedHost, vmid: u32, name: &str, node: &str) {
        host.records.borrow_mut().insert(
            format!("vm-{vmid}"),
            json!({"vmid": vmid, "present": true, "name": name, "node": node,
                   "identity": {"smbiosUuid": format!("uuid-{vmid}")},
                   "identityObservedAt": "2026-11-01T00:00:00.000Z"}),
        );
    }

    fn tagged(vmid: u32, name: &str, tags: &str) -> Value {
        let mut entry = guest(vmid, name, "running");
        entry["tags"] = json!(tags);
        entry
    }

    fn selection_rule(extra: Value) -> Option<String> {
        SyncArgs::parse(&extra).err().map(|e| e.field.clone())
    }

    #[test]
    fn selection_arguments_follow_pves_tag_syntax_and_exclude_each_other() {
        assert_eq!(
            selection_rule(json!({"tags": ["web", "Prod_1", "a+b.c-d"]})),
            None
        );
        assert_eq!(selection_rule(json!({"nodes": ["pve1", "pve2"]})), None);
        assert_eq!(
            selection_rule(json!({"nodes": ["pve1"], "tags": ["web"]})),
            None
        );
        assert_eq!(selection_rule(json!({"tags": []})), Some("tags".into()));
        assert_eq!(
            selection_rule(json!({"tags": ["-web"]})),
            Some("tags[0]".into())
        );
        assert_eq!(
            selection_rule(json!({"tags": ["ok", "a b"]})),
            Some("tags[1]".into())
        );
        assert_eq!(selection_rule(json!({"tags": "web"})), Some("tags".into()));
        assert_eq!(selection_rule(json!({"nodes": []})), Some("nodes".into()));
        assert_eq!(
            selection_rule(json!({"nodes": ["a/b"]})),
            Some("nodes[0]".into())
        );
        assert_eq!(
            selection_rule(json!({"nodes": ["pve1"], "node": "pve1"})),
            Some("nodes".into())
        );
        assert_eq!(
            selection_rule(json!({"nodes": ["pve1"], "scope": "node"})),
            Some("nodes".into())
        );
        assert_eq!(
            selection_rule(json!({"vmid": 100, "tags": ["web"]})),
            Some("tags".into())
        );
        assert_eq!(
            SyncArgs::parse(&json!({"tags": ["WEB", "web"]}))
                .unwrap()
                .selection
                .tags,
            vec!["web".to_string()]
        );
    }

    #[test]
    fn a_tag_selection_records_only_the_guests_carrying_every_tag_and_says_so() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu",
            json!([
                tagged(100, "web", "prod;Web"),
                tagged(101, "db", "prod"),
                tagged(102, "x", "")
            ]),
        );
        let outcome = run_sync(&host, json!({"tags": ["web", "prod"]}));
        assert!(outcome.is_success(), "{outcome:?}");
        let written: Vec<&str> = outcome.writes.iter().map(|w| w.instance.as_str()).collect();
        assert_eq!(written, vec!["vm-100"]);
        assert_eq!(
            outcome.writes[0].data["selection"],
            json!({"scope": "node", "nodes": ["pve1"], "tags": ["web", "prod"]})
        );
        let Verdict::Succeeded { summary } = &outcome.verdict else {
            unreachable!()
        };
        assert!(
            summary.starts_with("synced 1 VMs with the tags web, prod in node pve1"),
            "{summary}"
        );
        assert!(
            summary.contains("2 listed without every selected tag"),
            "{summary}"
        );
    }

    /// A host whose selector stands in for swamp's CEL: a guest is selected when every `field=value`
    /// pair of the expression (space-separated) matches its fields; an unknown field fails.
    fn selecting_host() -> ScriptedHost {
        let mut host = ScriptedHost::new();
        host.selector = Some(Box::new(|expression, fields| {
            let mut all = true;
            for pair in expression.split(' ') {
                let (key, want) = pair.split_once('=').ok_or("Unexpected token")?;
                all &= match &fields[key] {
                    Value::String(got) => got == want,
                    Value::Null => return Err(format!("Unknown variable: {key}")),
                    other => serde_json::from_str::<Value>(want).ok().as_ref() == Some(other),
                };
            }
            Ok(all)
        }));
        host
    }

    #[test]
    fn where_is_refused_naming_it_before_anything_is_sent_when_it_cannot_select() {
        assert_eq!(
            selection_rule(json!({"vmid": 100, "where": "node=pve1"})),
            Some("where".into())
        );
        let host = selecting_host();
        let outcome = run_sync(&host, json!({"where": "nmae=web"}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.starts_with("invalid argument `where`: must be a CEL expression over the guest's fields (vmid, name, node, status, tags, lock, template, cpus, maxMemBytes, maxDiskBytes) that yields a bool: Unknown variable: nmae"),
            "{message}"
        );
        assert!(host.requests.borrow().is_empty());
        assert_eq!(host.selections.borrow()[0]["status"], "");
    }

    #[test]
    fn a_where_selection_records_only_the_listed_guests_whose_fields_satisfy_it_with_the_tags() {
        let host = selecting_host();
        let mut stopped = tagged(101, "db", "web");
        stopped["status"] = json!("stopped");
        host.data(
            "GET /nodes/pve1/qemu",
            json!([tagged(100, "web", "web"), stopped, tagged(102, "x", "db")]),
        );
        let outcome = run_sync(&host, json!({"tags": ["web"], "where": "status=running"}));
        assert!(outcome.is_success(), "{outcome:?}");
        let written: Vec<&str> = outcome.writes.iter().map(|w| w.instance.as_str()).collect();
        assert_eq!(written, vec!["vm-100"]);
        assert_eq!(
            outcome.writes[0].data["selection"],
            json!({"scope": "node", "nodes": ["pve1"], "tags": ["web"], "where": "status=running"})
        );
        let asked: Vec<Value> = host
            .selections
            .borrow()
            .iter()
            .map(|s| s["vmid"].clone())
            .collect();
        assert_eq!(
            asked,
            vec![json!(0), json!(100), json!(101)],
            "the untagged 102 is not asked about"
        );
        assert_eq!(host.selections.borrow()[1]["node"], "pve1");
        assert_eq!(host.selections.borrow()[1]["tags"], json!(["web"]));
        let Verdict::Succeeded { summary } = &outcome.verdict else {
            unreachable!()
        };
        assert!(
            summary.starts_with("synced 1 VMs with the tags web where status=running in node pve1")
                && summary.contains("2 listed outside the selection"),
            "{summary}"
        );
    }

    #[test]
    fn a_stored_guest_whose_record_does_not_satisfy_where_is_left_alone() {
        let host = selecting_host();
        host.data("GET /nodes/pve1/qemu", json!([]));
        for (vmid, status) in [(105, "running"), (106, "stopped")] {
            host.records.borrow_mut().insert(
                format!("vm-{vmid}"),
                json!({"vmid": vmid, "present": true, "node": "pve1", "status": status, "tags": []}),
            );
        }
        host.data("GET /cluster/nextid", json!("105"));
        let outcome = run_sync(&host, json!({"where": "status=running"}));
        assert!(outcome.is_success(), "{outcome:?}");
        let written: Vec<&str> = outcome.writes.iter().map(|w| w.instance.as_str()).collect();
        assert_eq!(written, vec!["vm-105"]);
        assert_eq!(outcome.writes[0].data["present"], false);
        assert_eq!(
            outcome.writes[0].data["selection"]["where"],
            "status=running"
        );
        assert_eq!(
            host.routes_called(),
            vec!["GET /nodes/pve1/qemu", "GET /cluster/nextid"]
        );
    }

    #[test]
    fn a_guest_where_cannot_be_evaluated_over_fails_the_sync_after_the_others_are_written() {
        let mut host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu",
            json!([guest(100, "web", "running"), guest(101, "db", "running")]),
        );
        // The stand-in evaluates over the blank guest and 100, and fails over 101.
        host.selector = Some(Box::new(|_, fields| match fields["vmid"].as_u64() {
            Some(101) => Err("no such overload: dyn<string> > int".into()),
            _ => Ok(true),
        }));
        let outcome = run_sync(&host, json!({"where": "name > 5 || true"}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("VM 101 was not recorded: where cannot be evaluated over its fields: no such overload"),
            "{message}"
        );
        assert!(message.starts_with("synced 1 VMs where"), "{message}");
        let written: Vec<&str> = outcome.writes.iter().map(|w| w.instance.as_str()).collect();
        assert_eq!(written, vec!["vm-100"]);
    }

    #[test]
    fn a_nodes_selection_reads_those_nodes_and_fails_after_writing_when_one_is_unreadable() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu",
            json!([guest(100, "web", "running")]),
        );
        host.on(
            "GET /nodes/pve2/qemu",
            [Answer::Error(595, "no route to host".into())],
        );
        let outcome = run_sync(&host, json!({"nodes": ["pve1", "pve2"]}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("could not list the VMs of node pve2"),
            "{message}"
        );
        assert_eq!(outcome.writes.len(), 1);
        assert_eq!(outcome.writes[0].data["selection"]["scope"], "nodes");
        assert!(!host.routes_called().contains(&"GET /nodes".to_string()));
    }

    #[test]
    fn an_unreadable_node_list_is_named_with_its_query() {
        let host = ScriptedHost::new();
        host.on("GET /nodes/pve1/qemu", [Answer::Error(500, "boom".into())]);
        let outcome = run_sync(&host, json!({}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("could not list the VMs of node pve1 (GET /nodes/pve1/qemu?full=1)"),
            "{message}"
        );
    }

    #[test]
    fn a_vanished_guest_is_confirmed_absent_only_when_its_record_carries_the_tags() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/qemu", json!([]));
        for (vmid, tags) in [(105, json!(["web"])), (106, json!(["db"]))] {
            host.records.borrow_mut().insert(
                format!("vm-{vmid}"),
                json!({"vmid": vmid, "present": true, "node": "pve1", "tags": tags}),
            );
        }
        host.data("GET /cluster/nextid", json!("105"));
        let outcome = run_sync(&host, json!({"tags": ["web"]}));
        assert!(outcome.is_success(), "{outcome:?}");
        let written: Vec<&str> = outcome.writes.iter().map(|w| w.instance.as_str()).collect();
        assert_eq!(written, vec!["vm-105"]);
        assert_eq!(outcome.writes[0].data["present"], false);
        assert_eq!(outcome.writes[0].data["selection"]["tags"], json!(["web"]));
    }

    #[test]
    fn a_steady_state_node_sync_is_one_request() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu",
            json!([guest(100, "web", "running"), guest(102, "db", "stopped")]),
        );
        stored(&host, 100, "web", "pve1");
        stored(&host, 102, "db", "pve1");
        let outcome = run_sync(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(host.routes_called(), vec!["GET /nodes/pve1/qemu"]);
        assert_eq!(outcome.writes.len(), 2);
        assert_eq!(outcome.writes[0].data["identity"]["smbiosUuid"], "uuid-100");
        assert_eq!(
            outcome.writes[0].data["identityObservedAt"], "2026-11-01T00:00:00.000Z",
            "a carried identity keeps the time it was read"
        );
        assert_eq!(outcome.writes[1].data["status"], "stopped");
    }

    #[test]
    fn the_stored_records_of_a_nodes_selected_guests_are_read_in_one_host_call() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu",
            json!([
                tagged(100, "web", "prod"),
                tagged(101, "db", ""),
                tagged(102, "api", "prod")
            ]),
        );
        stored(&host, 100, "web", "pve1");
        let outcome = run_sync(&host, json!({"tags": ["prod"]}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(
            *host.record_batches.borrow(),
            vec![vec!["vm-100".to_string(), "vm-102".to_string()]],
            "one call, for the guests the selection takes"
        );
        assert_eq!(outcome.writes[0].data["identity"]["smbiosUuid"], "uuid-100");
    }

    #[test]
    fn a_stored_identity_without_its_time_is_not_asserted() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu",
            json!([guest(100, "web", "running")]),
        );
        host.records.borrow_mut().insert(
            "vm-100".into(),
            json!({"vmid": 100, "present": true, "name": "web", "identity": {"smbiosUuid": "old"}}),
        );
        let outcome = run_sync(&host, json!({}));
        assert_eq!(outcome.writes[0].data.get("identity"), None);
    }

    #[test]
    fn a_renamed_guest_has_its_identity_read_and_a_reuse_reported() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu",
            json!([guest(100, "new", "running")]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=other"}),
        );
        stored(&host, 100, "web", "pve1");
        let outcome = run_sync(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        let data = &outcome.writes[0].data;
        assert_eq!(
            data["identityChanged"]["previous"]["smbiosUuid"],
            "uuid-100"
        );
        assert_eq!(data["identity"]["smbiosUuid"], "other");
    }

    #[test]
    fn a_vanished_guest_is_recorded_absent_only_once_confirmed() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/qemu", json!([]));
        host.data("GET /cluster/nextid", json!("102"));
        stored(&host, 102, "db", "pve1");
        stored(&host, 101, "other-node", "pve2");
        host.records
            .borrow_mut()
            .insert("vm-102-exec".into(), json!({}));
        let outcome = run_sync(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes.len(), 1);
        assert_eq!(outcome.writes[0].instance, "vm-102");
        assert_eq!(outcome.writes[0].data["present"], json!(false));
    }

    #[test]
    fn a_vanished_guest_that_still_exists_is_left_alone_on_a_node_sync() {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve1/qemu", json!([]));
        host.on(
            "GET /cluster/nextid",
            [Answer::Error(
                400,
                "Parameter verification failed. (vmid: VM 102 already exists)".into(),
            )],
        );
        stored(&host, 102, "db", "pve1");
        let outcome = run_sync(&host, json!({}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(outcome.writes.is_empty());
    }

    #[test]
    fn a_cluster_sync_reads_every_online_node_and_reports_the_rest() {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes",
            json!([{"node": "pve1", "status": "online"}, {"node": "pve2", "status": "online"},
                   {"node": "pve3", "status": "offline"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu",
            json!([guest(100, "web", "running")]),
        );
        host.data("GET /nodes/pve2/qemu", json!([guest(101, "db", "running")]));
        stored(&host, 100, "web", "pve1");
        stored(&host, 101, "db", "pve2");
        stored(&host, 103, "gone-with-node", "pve3");
        let outcome = run_sync(&host, json!({"scope": "cluster"}));
        let Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(message.contains("node pve3 is offline"), "{message}");
        assert_eq!(outcome.writes.len(), 2);
        assert_eq!(outcome.writes[1].data["node"], "pve2");
        assert_eq!(host.routes_called().len(), 3, "{:?}", host.routes_called());
    }

    #[test]
    fn an_unreadable_node_list_fails_a_node_sync_without_records() {
        let host = ScriptedHost::new();
        host.on("GET /nodes/pve1/qemu", [Answer::Error(500, "boom".into())]);
        let outcome = run_sync(&host, json!({}));
        assert!(!outcome.is_success());
        assert!(outcome.writes.is_empty());
    }

    #[test]
    fn scope_and_node_arguments_are_checked() {
        assert!(SyncArgs::parse(&json!({"scope": "world"})).is_err());
        assert!(SyncArgs::parse(&json!({"node": "a/b"})).is_err());
        assert!(SyncArgs::parse(&json!({"vmid": 5})).is_err());
        assert!(SyncArgs::parse(&json!({"vmid": 100})).unwrap().one_guest);
        assert!(!SyncArgs::parse(&json!({})).unwrap().one_guest);
    }
}
