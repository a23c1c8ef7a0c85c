//! `convertToTemplate`: turns a stopped, managed guest into a template (both models). Succeeds only
//! when the guest's config says `template: 1` AND its node lists it as a template — a flag set
//! in the config while the conversion failed half-way (qemu-server writes `template: 1` before it
//! converts the disks, PVE/API2/Qemu.pm `template`) is not a template until the listing says so.
//! The node's own list (`GET /nodes/{node}/<kind>`, read live by vmstatus) is asked, not
//! `/cluster/resources`, whose `template` comes from pvestatd's broadcast and lags up to 10 s
//! (pve-manager PVE/API2Tools.pm extract_vm_stats). Then its state must show no lock (a lock
//! left after the task is "not yet", and names itself when it outlasts the budget).
//!
//! Gated like `delete` (the `swamp` tag, never `production`/`protected`; `force` overrides): a
//! template never runs again. A running guest is refused — PVE refuses it too ("you can't convert a
//! VM to template if VM is running") — or, with `shutdownFirst`, shut down gracefully first, which
//! `shutdown` verifies. A guest that already is a template succeeds without a request.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::client::shaped;
use crate::explain::could_not_args;
use crate::guest::evidence::{cut_at_the_end, settled_after, Evidence};
use crate::guest::gates;
use crate::guest::locate::{locate, Found};
use crate::guest::power::{shut_down, Shutdown};
use crate::guest::reference::GuestRef;
use crate::guest::settle::seconds;
use crate::guest::target::Target;
use crate::host::Host;
use crate::poll::Pacer;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::read::Obj;
use crate::pve::request::PveRequest;
use crate::run::Run;
use serde_json::{Map, Value};

/// The arguments of `convertToTemplate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateArgs {
    pub target: GuestRef,
    /// Shut a running guest down (gracefully, verified) instead of refusing it.
    pub shutdown_first: bool,
    /// The graceful shutdown's budget.
    pub timeout_sec: u64,
    /// Overrides the safety gates.
    pub force: bool,
}

/// The fields after the guest, in order (one table walk, issue 32).
const FIELDS: [Spec; 3] = [
    Spec::new("shutdownFirst", Kind::Flag(false)),
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 120)),
    Spec::new("force", Kind::Flag(false)),
];

impl TemplateArgs {
    /// Always inlined into its one caller, the method's change (`change_course`): the arguments
    /// are then built in their place, with no result of their own to match and move (issue 32).
    #[inline(always)]
    pub fn parse(args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        let target = GuestRef::parse(&fields)?;
        let [shutdown_first, timeout, force, ..] = fields.read_table(&FIELDS)?;
        Ok(TemplateArgs {
            target,
            shutdown_first: shutdown_first.int != 0,
            timeout_sec: timeout.int as u64,
            force: force.int != 0,
        })
    }
}

/// The conversion, once the guest is found ([`guest_change`]).
pub async fn convert<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &TemplateArgs,
) -> Result<String, String> {
    let label = ev.label(run);
    if ev.status.template == Some(true) && shown_as_template(run, ev, false).await? {
        return Ok(format!(
            "{label} already is a template; nothing was converted"
        ));
    }
    ev.pass_gate(run, &gates::TEMPLATE, args.force)?;
    if !Target::Stopped.reached(run.kind, &ev.status) {
        let shutdown = stop_first(run, ev, args)?;
        shut_down(run, ev, &shutdown, args.force)
            .await
            .map_err(|why| format!("shutdownFirst: {why}; nothing was converted"))?;
    }
    // The request and its action end with their await: the waits after it need not carry them
    // (issue 32).
    {
        let request = endpoints::guest_template(&ev.at.node, run.kind, ev.at.vmid);
        let action = format_args!("convert {label} to a template");
        let pve = run.pve();
        match run.kind {
            GuestKind::Qemu => ev.trail.run(&pve, &request, action, None, false).await?,
            // pve-container answers null and converts in a worker whose UPID it does not return.
            GuestKind::Lxc => {
                ev.trail.sending();
                let answer = pve.call(&request).await;
                ev.trail.answered(&answer);
                answer.map_err(|e| {
                    let check = "its config (run getConfig)";
                    crate::explain::mutation_failed(action, &e, check).0
                })?;
            }
        }
    }
    shown_as_template(run, ev, true).await?;
    let done = "the conversion shows in its config and its node's list";
    settled_after(run, ev, done, false).await?;
    Ok(format!(
        "{label} is a template: its config says template: 1 and the cluster lists it as one"
    ))
}

/// A running guest: refused, or (`shutdownFirst`) the graceful, verified shutdown to send first.
fn stop_first<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    args: &TemplateArgs,
) -> Result<Shutdown, String> {
    let label = ev.label(run);
    if !args.shutdown_first {
        return Err(format!(
            "{label} is {}: PVE converts only a stopped guest (\"you can't convert a VM to template if VM is running\") — shut it down first, or pass shutdownFirst: true",
            ev.status.status
        ));
    }
    run.info_args(format_args!(
        "{label} is {}: shutting it down first (shutdownFirst: true)",
        ev.status.status
    ));
    Ok(Shutdown {
        timeout_sec: args.timeout_sec,
        force_stop_after: false,
    })
}

/// Whether the config says `template: 1` and the guest's node lists it as a template: looked at
/// once, or (`waiting`) until both do, within what the conversion task left of the method's one
/// budget — then its reads end by the wait's end (`Pve::call_within`), and `Err` when it ran out.
async fn shown_as_template<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    waiting: bool,
) -> Result<bool, String> {
    let pve = run.pve();
    let config = endpoints::guest_config(&ev.at.node, run.kind, ev.at.vmid);
    let list = endpoints::node_guests(&ev.at.node, run.kind);
    let deadline = waiting.then(|| run.budget.deadline(run.host.now_ms()));
    let poll_ms = run.global.poll_interval_sec * 1000;
    let mut pacer = deadline.map(|deadline| Pacer::until(deadline, poll_ms));
    // Each look reads the config, then (when it says template: 1) the node's list, from one
    // await: `flag` is the config's flag while the list is being read.
    let mut flag = false;
    loop {
        let request = if flag { &list } else { &config };
        let read = pve.call_within(request, deadline).await;
        let shown = match flag {
            false => {
                flag = flagged(run, ev, &config, read, deadline)?;
                if flag {
                    continue;
                }
                false
            }
            true => {
                flag = false;
                match listed(run, ev, &list, read, deadline)? {
                    Some(template) => template,
                    None => {
                        // Gone from its node: look once more, to say where it went.
                        let target = GuestRef {
                            vmid: Some(ev.at.vmid),
                            name: None,
                        };
                        still_there(run, locate(&pve, run.kind, &target).await)?
                    }
                }
            }
        };
        let Some(pacer) = pacer.as_mut().filter(|_| !shown) else {
            return Ok(shown);
        };
        if pacer.pause(run.host).await.is_err() {
            return Err(format!(
                "the conversion of {} was accepted, but when taskTimeoutSec={} (the method's whole wait) ran out, its config and its node's guest list do not both show it as a template — check the task log ({}) and its disks",
                ev.label(run),
                seconds(run.budget.total_ms),
                match run.kind {
                    GuestKind::Qemu => "qmtemplate",
                    GuestKind::Lxc => "vztemplate",
                }
            ));
        }
    }
}

/// Whether the config read says `template: 1`. A lock left with the flag is "not yet" too:
/// `unlocked_after` waits it out, naming it.
fn flagged<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    request: &PveRequest,
    read: Result<Value, PveError>,
    deadline_ms: Option<f64>,
) -> Result<bool, String> {
    if cut_at_the_end(run, &read, deadline_ms) {
        return Ok(false);
    }
    let config = ev.config_read(run, request, read)?;
    Ok(config.get("template").and_then(flex::bool_of) == Some(true))
}

/// Whether the node's guest list shows the guest as a template; `None` when it does not list it.
fn listed<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    request: &PveRequest,
    read: Result<Value, PveError>,
    deadline_ms: Option<f64>,
) -> Result<Option<bool>, String> {
    if cut_at_the_end(run, &read, deadline_ms) {
        return Ok(Some(false));
    }
    // Its entries are read as plain objects, their `vmid` and `template` tolerantly: the reader of
    // a list of objects is shared with `locate`'s, where a type of its own was one more (issue 32).
    let guests: Vec<Map<String, Value>> =
        shaped(request, "a list of guests", read).map_err(|e| {
            could_not_args(
                format_args!(
                    "list the guests of node {} to see whether {} is listed as a template ({})",
                    ev.at.node,
                    ev.label(run),
                    request.label()
                ),
                &e,
            )
            .0
        })?;
    let vmid = Some(u64::from(ev.at.vmid));
    let entry = guests.iter().map(Obj).find(|g| g.opt_u64("vmid") == vmid);
    Ok(entry.map(|g| g.opt_bool("template") == Some(true)))
}

/// A guest its node no longer lists: not a template yet while it is elsewhere, a failure when gone.
fn still_there<H: Host>(
    run: &Run<'_, H>,
    found: Result<Found, crate::outcome::Failure>,
) -> Result<bool, String> {
    match found.map_err(|f| f.0)? {
        Found::Present(_) => Ok(false),
        Found::Absent { vmid } => Err(format!(
            "{} {vmid} disappeared while it was being converted to a template",
            run.kind.noun()
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{failure_of, run_method, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmtemplate:100:root@pam!t:";

    fn guest(host: &ScriptedHost, status: &str, tags: &str) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1", "name": "gold"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": status, "qmpstatus": status, "name": "gold", "tags": tags}),
        );
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host.data("POST /nodes/pve1/qemu/100/template", json!(UPID));
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=U"}),
        );
        host.data(
            "GET /nodes/pve1/qemu",
            json!([{"vmid": 100, "name": "gold"}]),
        );
    }

    fn converted(host: &ScriptedHost) {
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=U", "template": 1}),
        );
        host.on(
            "GET /nodes/pve1/qemu",
            [Answer::Data(
                json!([{"vmid": 100, "name": "gold", "template": 1}]),
            )],
        );
    }

    #[test]
    fn a_stopped_managed_vm_is_converted_and_verified_in_config_and_its_nodes_listing() {
        let host = ScriptedHost::new();
        guest(&host, "stopped", "swamp");
        converted(&host);
        let outcome = run_method(&host, "qemu", "convertToTemplate", json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(host
            .routes_called()
            .contains(&"POST /nodes/pve1/qemu/100/template".to_string()));
    }

    #[test]
    fn a_flag_the_listing_never_shows_is_not_a_template() {
        let host = ScriptedHost::new();
        guest(&host, "stopped", "swamp");
        host.data("GET /nodes/pve1/qemu/100/config", json!({"template": 1}));
        let outcome = run_method(&host, "qemu", "convertToTemplate", json!({"vmid": 100}));
        let message = failure_of(&outcome);
        assert!(
            message.contains("do not both show it as a template"),
            "{message}"
        );
    }

    #[test]
    fn a_running_vm_is_refused_without_shutdown_first() {
        let host = ScriptedHost::new();
        guest(&host, "running", "swamp");
        let outcome = run_method(&host, "qemu", "convertToTemplate", json!({"vmid": 100}));
        assert!(failure_of(&outcome).contains("pass shutdownFirst: true"));
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }

    #[test]
    fn an_unmanaged_or_production_vm_is_refused_like_delete() {
        for tags in ["web", "swamp;production"] {
            let host = ScriptedHost::new();
            guest(&host, "stopped", tags);
            let outcome = run_method(&host, "qemu", "convertToTemplate", json!({"vmid": 100}));
            let message = failure_of(&outcome);
            assert!(
                message.starts_with("refusing to convert (to a template) VM 100: it "),
                "{message}"
            );
        }
    }

    #[test]
    fn an_absent_guest_fails_saying_there_is_nothing_to_convert() {
        let host = ScriptedHost::new();
        host.data("GET /cluster/resources", json!([]));
        host.data("GET /cluster/nextid", json!("100"));
        let outcome = run_method(&host, "qemu", "convertToTemplate", json!({"vmid": 100}));
        assert_eq!(
            failure_of(&outcome),
            "VM 100 does not exist on any node: there is nothing to convert to a template"
        );
        assert_eq!(outcome.writes[0].instance, "vm-100");
    }

    #[test]
    fn a_template_already_is_done_without_a_request() {
        let host = ScriptedHost::new();
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1", "name": "gold", "template": 1}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "stopped", "name": "gold", "tags": "web", "template": 1}),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({"template": 1}));
        host.data(
            "GET /nodes/pve1/qemu",
            json!([{"vmid": 100, "name": "gold", "template": 1}]),
        );
        let outcome = run_method(&host, "qemu", "convertToTemplate", json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
    }
}
