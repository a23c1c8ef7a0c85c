//! Finding the node a guest lives on — or confirming that it does not exist anywhere.
//!
//! `/cluster/resources` maps every guest the token may audit to its node. Absence from it is not proof
//! of absence (PVE leaves out what the token may not see), so absence is confirmed with
//! `/cluster/nextid?vmid=N`, which answers "VM N already exists" for any user.
//!
//! Its `name` is not proof either: PVE takes it from pvestatd's broadcast, refreshed every 10 s
//! (pve-manager `PVE/API2Tools.pm` extract_vm_stats; a guest not broadcast yet has no name at all).
//! So a name is decided by a live read: a match is confirmed with the guest's `status/current`, and
//! a miss is looked up again in the live guest lists of the nodes (`GET /nodes/{node}/<kind>`).

use super::reference::GuestRef;
use crate::args::check_segment;
use crate::client::{shaped, Pve};
use crate::explain::could_not_args;
use crate::host::{Host, HostError};
use crate::outcome::Failure;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex;
use crate::pve::read::Obj;
use crate::pve::request::PveRequest;
use crate::pve::responses::ClusterGuest;
use crate::quote::Joined;
use crate::run::Run;
use serde_json::{Map, Value};
use std::future::Future;

/// A guest that exists, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub vmid: u32,
    pub node: String,
}

/// What the cluster says about a guest reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Present(Located),
    /// Confirmed absent on every node.
    Absent {
        vmid: u32,
    },
}

/// What acting on a guest where it lives gave.
pub enum Placed<T> {
    /// Confirmed absent on every node.
    Absent { vmid: u32 },
    /// Done on `at`.
    Done { at: Located, value: T },
    /// `at` answered with an error other than "the guest is not here".
    Refused { at: Located, error: PveError },
}

/// Why a read where the guest lives (the sighting's, a [`send_where_it_lives`] reading's) was
/// refused: one copy of the message for both.
pub fn refused(kind: GuestKind, what: &str, at: &Located, error: &PveError) -> Failure {
    let noun = kind.noun();
    could_not_args(
        format_args!("read {what} of {noun} {} on node {}", at.vmid, at.node),
        error,
    )
}

/// Sends a request (built by `request` for the node tried) on the node the guest is expected on —
/// where an earlier run recorded it, else the configured node — and asks `/cluster/resources` only
/// when that node answers that the guest is not there. PVE answers so before acting (it loads the
/// guest's config first), so the request is never re-sent after anything that may have run. A
/// guest that moved between the listing and the request is looked up once more. A reference by
/// name is always looked up.
///
/// The answer comes back with its request, read by the caller's plain code (an answer it cannot
/// read is the node's refusal, as an error is): one future for every such act (getConfig,
/// listSnapshots, guestExec), where a generic act was a copy of the course each (issue 32). An
/// act of several requests (the sighting) walks [`Placing`] from its own course.
pub async fn send_where_it_lives<H: Host>(
    run: &Run<'_, H>,
    target: &GuestRef,
    request: &dyn Fn(&Located) -> PveRequest,
) -> Result<Placed<(PveRequest, Value)>, Failure> {
    let mut placing = Placing::new(target);
    loop {
        let at = match placing.next(run, target).await? {
            Found::Absent { vmid } => return Ok(Placed::Absent { vmid }),
            Found::Present(at) => at,
        };
        let sent = request(&at);
        match run.pve().call(&sent).await {
            Ok(value) => {
                return Ok(Placed::Done {
                    at,
                    value: (sent, value),
                })
            }
            Err(e) if placing.may_retry(&e) => {}
            Err(error) => return Ok(Placed::Refused { at, error }),
        }
    }
}

/// Where an act on a guest ([`send_where_it_lives`]) tries next: the expected node first (a reference by VMID alone),
/// then the node the cluster lists the guest on, once more if it moved in between.
pub struct Placing {
    /// The expected node is still to be tried.
    expected: bool,
    /// Lookups made.
    lookups: u32,
}

impl Placing {
    pub fn new(target: &GuestRef) -> Self {
        Placing {
            expected: matches!((target.vmid, &target.name), (Some(_), None)),
            lookups: 0,
        }
    }

    /// The node to act on next, or the guest's confirmed absence.
    pub async fn next<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        target: &GuestRef,
    ) -> Result<Found, Failure> {
        if let (true, Some(vmid)) = (self.expected, target.vmid) {
            self.expected = false;
            // The record read from this step's own await, judged by a plain step.
            let stored = run.host.read_record(&run.guest_instance(vmid)).await;
            return Ok(Found::Present(expected_at(run, vmid, stored)));
        }
        if self.lookups == 2 {
            return Err(Failure::new(format!(
                "{} {} moved between nodes twice while being read; try again",
                run.kind.noun(),
                target.describe()
            )));
        }
        self.lookups += 1;
        locate(&run.pve(), run.kind, target).await
    }

    /// Whether `error` of acting where [`Placing::next`] said is "the guest is not here" while
    /// one more place is left to try: the expected node was wrong, or the guest moved once.
    pub fn may_retry(&self, error: &PveError) -> bool {
        error.kind == ErrorKind::GuestNotOnNode && self.lookups <= 1
    }
}

/// Where the guest is expected: the node its stored record last observed it on (what an earlier
/// run learned), else the configured node. A record that cannot be read only costs a lookup.
fn expected_at<H: Host>(
    run: &Run<'_, H>,
    vmid: u32,
    stored: Result<Option<Value>, HostError>,
) -> Located {
    let stored = stored.ok().flatten();
    let recorded_node = stored
        .as_ref()
        .filter(|r| r.get("present").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("node"))
        .and_then(Value::as_str)
        .filter(|n| check_segment("node", n).is_ok());
    Located {
        vmid,
        node: recorded_node
            .unwrap_or(run.global.transport.node())
            .to_string(),
    }
}

/// `<noun> <vmid> does not exist on any node<rest>`: the one wording of a guest's confirmed absence.
// Not inlined, for size: one copy of the formatting for a dozen call sites.
#[inline(never)]
pub fn absent_message(kind: GuestKind, vmid: u32, rest: &str) -> String {
    format!("{} {vmid} does not exist on any node{rest}", kind.noun())
}

/// Finds the guest's node, or confirms its absence; anything in between is a failure.
///
/// Every request of the course (the cluster's list, then nextid, the candidates' live names or
/// the nodes' live lists) is sent from one await, each answer judged by a plain step: each await
/// point costs the course room (docs/performance.md).
pub async fn locate<H: Host>(
    pve: &Pve<'_, H>,
    kind: GuestKind,
    target: &GuestRef,
) -> Result<Found, Failure> {
    let mut guests: Vec<ClusterGuest> = Vec::new();
    let (mut listed, mut name): (Vec<Located>, &str) = (Vec::new(), "");
    let (mut confirmed, mut live, mut nodes) = (Vec::new(), None, Vec::<String>::new());
    let mut step = Step::List;
    // Every unreadable answer leaves the loop with the step it answered: one copy of the failure's
    // code below, not one in each step (issue 32).
    let (failed, error) = loop {
        // `i` is always in range: the checks at the loop's end leave it (or move on) once a step
        // reaches its list's length, before any request for that index is made.
        let request = match step {
            Step::List => endpoints::cluster_guests(),
            Step::Absent(vmid) => endpoints::next_id(vmid),
            Step::Live(i) => endpoints::guest_status(&listed[i].node, kind, listed[i].vmid),
            Step::Nodes(i) => endpoints::node_guests(&nodes[i], kind),
        };
        let answer = pve.call(&request).await;
        step = match step {
            Step::List => {
                guests = match shaped(&request, "a list of guests", answer) {
                    Ok(guests) => guests,
                    Err(e) => break (step, e),
                };
                match listed_as(kind, &guests, target) {
                    Listed::Known(found) => return found,
                    Listed::Unlisted(vmid) => Step::Absent(vmid),
                    Listed::Confirm(candidates, wanted) => {
                        (listed, name) = (candidates, wanted);
                        Step::Live(0)
                    }
                }
            }
            Step::Absent(vmid) => return absent(vmid, id_echoed(&request, vmid, answer)),
            Step::Live(i) => {
                let at = &listed[i];
                let status: Map<String, Value> = match shaped(&request, "a guest status", answer) {
                    Ok(status) => status,
                    Err(e) => break (step, e),
                };
                live = Obj(&status).opt_string("name");
                if live.as_deref() == Some(name) {
                    confirmed.push(at.clone());
                }
                Step::Live(i + 1)
            }
            Step::Nodes(i) => {
                let entries: Vec<Map<String, Value>> =
                    match shaped(&request, "a list of guests", answer) {
                        Ok(entries) => entries,
                        Err(e) => break (step, e),
                    };
                named_live(&entries, &nodes[i], name, &mut confirmed);
                Step::Nodes(i + 1)
            }
        };
        if matches!(step, Step::Live(i) if i == listed.len()) {
            if let Some(vmid) = target.vmid {
                return confirmed.pop().map(Found::Present).ok_or_else(|| {
                    Failure::new(format!(
                        "VMID {vmid} is named {:?}, not {name:?}: vmid and vmName point at different guests",
                        live.as_deref().unwrap_or("")
                    ))
                });
            }
            if !confirmed.is_empty() {
                return one_named(kind, name, confirmed);
            }
            // A miss in the broadcast names: the guests of every node holding guests of this
            // kind, live.
            nodes = nodes_of(kind, &guests);
            step = Step::Nodes(0);
        }
        if matches!(step, Step::Nodes(i) if i == nodes.len()) {
            return one_named(kind, name, confirmed);
        }
    };
    let noun = kind.noun();
    Err(match failed {
        Step::Live(i) => {
            let at = &listed[i];
            let (vmid, node) = (at.vmid, &at.node);
            could_not_args(
                format_args!("read the current name of {noun} {vmid} on node {node}"),
                &error,
            )
        }
        Step::Nodes(i) => could_not_args(
            format_args!(
                "list the guests of node {} to find {noun} {name:?}",
                nodes[i]
            ),
            &error,
        ),
        // nextid's answer is judged by `absent`, never here.
        Step::List | Step::Absent(_) => could_not_args(
            format_args!(
                "list the cluster's guests to find {noun} {} (GET /cluster/resources)",
                target.describe()
            ),
            &error,
        ),
    })
}

/// The request [`locate`] sends next.
#[derive(Clone, Copy)]
enum Step {
    /// `GET /cluster/resources`.
    List,
    /// nextid for a VMID the list does not show.
    Absent(u32),
    /// The live name of the `i`th candidate.
    Live(usize),
    /// The live guest list of the `i`th node.
    Nodes(usize),
}

/// The nodes holding guests of this kind, each once.
fn nodes_of(kind: GuestKind, guests: &[ClusterGuest]) -> Vec<String> {
    let mut nodes = Vec::new();
    for guest in guests {
        if guest.kind == kind.segment() {
            nodes.push(guest.node.clone());
        }
    }
    crate::order::sort_dedup(&mut nodes);
    nodes
}

/// The guests a node's live list shows named `name`. Its entries, like the guest's
/// `status/current`, are read as plain objects, their `vmid` and `name` tolerantly: the readers
/// of objects and lists of objects are shared with every other such read, where a type of their
/// own was two more readers (issue 32).
fn named_live(entries: &[Map<String, Value>], node: &str, name: &str, found: &mut Vec<Located>) {
    for entry in entries {
        let entry = Obj(entry);
        let vmid = entry
            .opt_u64("vmid")
            .and_then(|vmid| u32::try_from(vmid).ok());
        if let (Some(vmid), true) = (vmid, entry.opt_string("name").as_deref() == Some(name)) {
            found.push(Located {
                vmid,
                node: node.to_string(),
            });
        }
    }
}

/// What the cluster's guest list tells of the target before any live read.
enum Listed<'t> {
    /// Found, or refused, by the list alone.
    Known(Result<Found, Failure>),
    /// The VMID is not listed: PVE's nextid tells whether it is free.
    Unlisted(u32),
    /// The guests whose live name decides (`status/current`): those listed with the name, or the
    /// one the VMID names when its broadcast name differs from vmName (it may be stale).
    Confirm(Vec<Located>, &'t str),
}

fn listed_as<'t>(kind: GuestKind, guests: &[ClusterGuest], target: &'t GuestRef) -> Listed<'t> {
    let (vmid, name) = match (target.vmid, target.name.as_deref()) {
        (Some(vmid), name) => (vmid, name),
        (None, Some(name)) => return Listed::Confirm(listed_named(kind, guests, name), name),
        (None, None) => return Listed::Known(Err(Failure::new("Provide vmid or vmName"))),
    };
    let Some(guest) = guests.iter().find(|g| g.vmid == Some(u64::from(vmid))) else {
        return Listed::Unlisted(vmid);
    };
    if guest.kind != kind.segment() {
        return Listed::Known(Err(Failure::new(format!(
            "VMID {vmid} is a {} guest on node {}, not a {}: use the @stateless/proxmox/{} model for it",
            guest.kind,
            guest.node,
            kind.segment(),
            guest.kind
        ))));
    }
    let at = Located {
        vmid,
        node: guest.node.clone(),
    };
    match name {
        // The broadcast name may be stale: only the live name can refute vmName.
        Some(wanted) if guest.name.as_deref() != Some(wanted) => Listed::Confirm(vec![at], wanted),
        _ => Listed::Known(Ok(Found::Present(at))),
    }
}

/// The guests of this kind the list shows named `name`.
fn listed_named(kind: GuestKind, guests: &[ClusterGuest], name: &str) -> Vec<Located> {
    let mut listed = Vec::new();
    for guest in guests {
        if guest.kind == kind.segment() && guest.name.as_deref() == Some(name) {
            // Pushed, not extended from the option: `extend` is code of its own (issue 32).
            if let Some(at) = located(guest) {
                listed.push(at);
            }
        }
    }
    listed
}

/// The one guest confirmed named `name`: none or many is the failure.
fn one_named(kind: GuestKind, name: &str, confirmed: Vec<Located>) -> Result<Found, Failure> {
    match confirmed.as_slice() {
        [] => Err(Failure::new(format!(
            "no {} named {name:?} is visible (in /cluster/resources or the nodes' live guest lists; a guest the token may not audit is left out; give vmid to be sure)",
            kind.noun()
        ))),
        [one] => Ok(Found::Present(one.clone())),
        many => {
            let mut ids = Vec::new();
            for guest in many {
                ids.push(guest.vmid.to_string());
            }
            Err(Failure::new(format!("{} name {name:?} is ambiguous (vmids {})", kind.noun(), ids.joined(", "))))
        }
    }
}

fn located(guest: &ClusterGuest) -> Option<Located> {
    let vmid = u32::try_from(guest.vmid?).ok()?;
    Some(Located {
        vmid,
        node: guest.node.clone(),
    })
}

/// `GET /cluster/nextid?vmid=N`: `Ok` when no guest holds N — PVE then echoes N back; any other
/// answer is unreadable, never "free" (absence is claimed only on PVE's word). A taken id is
/// `Err` of kind [`ErrorKind::IdTaken`].
///
/// Hands back [`next_id_free_by`]'s future rather than awaiting it: a wrapper's own state machine
/// would only add room (docs/performance.md).
pub fn next_id_free<'a, H: Host>(
    pve: &'a Pve<'_, H>,
    vmid: u32,
) -> impl Future<Output = Result<(), PveError>> + 'a {
    next_id_free_by(pve, vmid, None)
}

/// [`next_id_free`], its request ending by a wait's `deadline_ms` when given (`Pve::call_by`).
pub async fn next_id_free_by<H: Host>(
    pve: &Pve<'_, H>,
    vmid: u32,
    deadline_ms: Option<f64>,
) -> Result<(), PveError> {
    let request = endpoints::next_id(vmid);
    // One await for both kinds (`Pve::call_within`): each await point is its own state.
    id_echoed(&request, vmid, pve.call_within(&request, deadline_ms).await)
}

/// nextid's answer for `vmid`: `Ok` when PVE echoes it back (no guest holds it).
fn id_echoed(
    request: &PveRequest,
    vmid: u32,
    answer: Result<Value, PveError>,
) -> Result<(), PveError> {
    let data = answer?;
    match flex::u64_of(&data) == Some(u64::from(vmid)) {
        true => Ok(()),
        false => Err(PveError::malformed_args(format_args!(
            "{} answered {data} where VMID {vmid} was expected back",
            request.label(),
            data = crate::quote::json(&data)
        ))),
    }
}

/// A VMID the cluster's list leaves out, by nextid's word (`free`).
fn absent(vmid: u32, free: Result<(), PveError>) -> Result<Found, Failure> {
    match free {
        Ok(_) => Ok(Found::Absent { vmid }),
        Err(e) if e.kind == ErrorKind::IdTaken => Err(Failure::new(format!(
            "VMID {vmid} exists but this token cannot see it: /cluster/resources leaves it out — grant VM.Audit on /vms/{vmid}"
        ))),
        Err(e) => Err(could_not_args(format_args!("confirm whether VMID {vmid} exists (GET /cluster/nextid)"), &e)),
    }
}

#[cfg(test)]
mod placement_tests {
    use crate::outcome::Outcome;
    use crate::testing::{run_method, Answer, ScriptedHost};
    use serde_json::{json, Value};

    const STATUS_PVE1: &str = "GET /nodes/pve1/qemu/100/status/current";
    const STATUS_PVE2: &str = "GET /nodes/pve2/qemu/100/status/current";

    fn running() -> Value {
        json!({"status": "running", "qmpstatus": "running", "name": "web"})
    }

    fn lookup(host: &ScriptedHost) -> Outcome {
        run_method(host, "qemu", "lookup", json!({"vmid": 100}))
    }

    #[test]
    fn a_guest_on_the_configured_node_is_read_there_without_a_cluster_listing() {
        let host = ScriptedHost::new();
        host.data(STATUS_PVE1, running());
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=a"}),
        );
        assert!(lookup(&host).is_success());
        assert_eq!(
            host.routes_called(),
            [STATUS_PVE1, "GET /nodes/pve1/qemu/100/config"]
        );
    }

    #[test]
    fn a_node_that_says_the_guest_is_not_there_sends_the_lookup_to_the_cluster_listing() {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve2"}]),
        );
        host.data(STATUS_PVE2, running());
        host.data("GET /nodes/pve2/qemu/100/config", json!({}));
        let outcome = lookup(&host);
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].data["node"], "pve2");
        assert_eq!(
            host.routes_called(),
            [
                STATUS_PVE1,
                "GET /cluster/resources",
                STATUS_PVE2,
                "GET /nodes/pve2/qemu/100/config"
            ]
        );
    }

    #[test]
    fn any_other_answer_of_the_configured_node_is_the_verdict_not_a_reason_to_look_elsewhere() {
        let host = ScriptedHost::new();
        host.on(
            STATUS_PVE1,
            [Answer::Error(
                403,
                "Permission check failed (/vms/100, VM.Audit)".into(),
            )],
        );
        let outcome = lookup(&host);
        assert!(!outcome.is_success());
        assert!(outcome.writes.is_empty());
        assert_eq!(host.routes_called(), [STATUS_PVE1]);
    }

    #[test]
    fn the_node_a_stored_record_observed_is_asked_first() {
        let host = ScriptedHost::new();
        host.records.borrow_mut().insert(
            "vm-100".into(),
            json!({"present": true, "node": "pve2", "name": "web"}),
        );
        host.data(STATUS_PVE2, running());
        host.data("GET /nodes/pve2/qemu/100/config", json!({}));
        assert!(lookup(&host).is_success());
        assert_eq!(host.routes_called()[0], STATUS_PVE2);
    }

    #[test]
    fn an_exec_the_node_refused_as_not_there_is_sent_where_the_guest_lives_and_nowhere_else() {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve2"}]),
        );
        host.data("POST /nodes/pve2/qemu/100/agent/exec", json!({"pid": 7}));
        host.data(
            "GET /nodes/pve2/qemu/100/agent/exec-status",
            json!({"exited": 1, "exitcode": 0}),
        );
        let outcome = run_method(
            &host,
            "qemu",
            "guestExec",
            json!({"vmid": 100, "command": ["true"]}),
        );
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(
            host.routes_called(),
            [
                "POST /nodes/pve1/qemu/100/agent/exec",
                "GET /cluster/resources",
                "POST /nodes/pve2/qemu/100/agent/exec",
                "GET /nodes/pve2/qemu/100/agent/exec-status"
            ]
        );
    }

    #[test]
    fn an_exec_whose_answer_was_lost_is_never_sent_again() {
        let host = ScriptedHost::new();
        host.on(
            "POST /nodes/pve1/qemu/100/agent/exec",
            [Answer::Fail(crate::host::HostError {
                kind: crate::host::HostErrorKind::Network,
                message: "connection reset by peer".into(),
            })],
        );
        let outcome = run_method(
            &host,
            "qemu",
            "guestExec",
            json!({"vmid": 100, "command": ["true"]}),
        );
        assert!(!outcome.is_success());
        assert_eq!(outcome.writes[0].data["outcome"], "unconfirmed");
        assert_eq!(
            host.routes_called(),
            ["POST /nodes/pve1/qemu/100/agent/exec"]
        );
    }
}

#[cfg(test)]
mod name_tests {
    use crate::testing::{failure_of, run_method, ScriptedHost};
    use serde_json::json;

    fn cluster(host: &ScriptedHost, name: Option<&str>) {
        let mut entry = json!({"vmid": 100, "type": "qemu", "node": "pve1", "status": "running"});
        if let Some(name) = name {
            entry["name"] = json!(name);
        }
        host.data("GET /cluster/resources", json!([entry]));
    }

    fn live(host: &ScriptedHost, name: &str) {
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running", "qmpstatus": "running", "name": name}),
        );
        host.data(
            "GET /nodes/pve1/qemu",
            json!([{"vmid": 100, "name": name, "status": "running"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"name": name, "smbios1": "uuid=U"}),
        );
    }

    #[test]
    fn a_broadcast_name_is_confirmed_live_before_it_counts() {
        let host = ScriptedHost::new();
        cluster(&host, Some("web"));
        live(&host, "renamed");
        let outcome = run_method(&host, "qemu", "lookup", json!({"vmName": "web"}));
        assert!(
            failure_of(&outcome).contains("no VM named \"web\""),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_guest_renamed_since_the_last_broadcast_is_found_by_its_new_name() {
        let host = ScriptedHost::new();
        cluster(&host, Some("web"));
        live(&host, "renamed");
        let outcome = run_method(&host, "qemu", "lookup", json!({"vmName": "renamed"}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(host
            .routes_called()
            .contains(&"GET /nodes/pve1/qemu".to_string()));
    }

    #[test]
    fn a_guest_not_broadcast_yet_is_found_by_name_live() {
        let host = ScriptedHost::new();
        cluster(&host, None);
        live(&host, "fresh");
        let outcome = run_method(&host, "qemu", "lookup", json!({"vmName": "fresh"}));
        assert!(outcome.is_success(), "{outcome:?}");
    }

    #[test]
    fn vmid_and_a_vmname_the_broadcast_has_not_caught_up_with_agree_live() {
        let host = ScriptedHost::new();
        cluster(&host, Some("old"));
        live(&host, "new");
        let outcome = run_method(
            &host,
            "qemu",
            "lookup",
            json!({"vmid": 100, "vmName": "new"}),
        );
        assert!(outcome.is_success(), "{outcome:?}");
    }
}
