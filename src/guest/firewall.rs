//! A guest's firewall as the firewall methods change it (firewallOptions, firewallRules,
//! firewallIpset, firewallAlias): one engine, configured by each method with data and two plain
//! functions — find the guest, read the section, `plan` the writes that make it what was asked
//! from what was read, send them, read the section back and `judge` it. PVE's firewall API is
//! synchronous: each write answers once the guest's `<vmid>.fw` is written (pve-firewall
//! `PVE/API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm`, `Aliases.pm`). Whether the result applies is
//! read too and reported: pve-firewall compiles a guest's rules only when its own `enable` option
//! and the cluster's are on, and only for NICs with `firewall=1` (`PVE/Firewall.pm`
//! compile_vm_rules / generate_tap_rules_direct).

use super::evidence::{sight_or_absent, Evidence};
use super::reference::GuestRef;
use crate::explain::{hint, outcome_unknown};
use crate::host::Host;
use crate::outcome::Outcome;
use crate::pve::endpoints;
use crate::pve::error::ErrorKind;
use crate::pve::flex;
use crate::pve::property::property;
use crate::pve::request::{owned_segments, Verb};
use crate::run::Run;
use serde_json::Value;

/// One write of a plan: the verb, the segments under `…/firewall/`, the parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub verb: Verb,
    pub at: Vec<String>,
    pub params: Vec<(String, String)>,
}

impl Write {
    pub fn new(verb: Verb, at: &[&str], params: Vec<(String, String)>) -> Self {
        Write {
            verb,
            at: owned_segments(at),
            params,
        }
    }

    /// A write of the parameters given (`None`: left out).
    pub fn of(verb: Verb, at: &[&str], params: &[(&str, Option<&str>)]) -> Self {
        let mut given = Vec::new();
        for (k, v) in params {
            if let Some(v) = v {
                given.push((k.to_string(), v.to_string()));
            }
        }
        Write::new(verb, at, given)
    }
}

/// The first segment of a section that is the datacenter's (`/cluster/firewall/…`), not the
/// guest's — as pve-firewall names the scope of an alias reference (`dc/web`).
pub const DATACENTER: &str = "dc/";

/// The sections as read, in the order the change names them (`None`: it does not exist).
pub type Read = [Option<Value>];
/// Makes the writes that turn the sections read into what was asked, or says why it cannot be
/// done (then nothing is sent).
pub type Plan<'a> = dyn Fn(&Read) -> Result<Vec<Write>, String> + 'a;
/// Judges the sections read back: what they show, or why they are not what was asked.
pub type Judge<'a> = dyn Fn(&Read) -> Result<String, String> + 'a;

/// One firewall method as data.
pub struct FirewallChange<'a> {
    /// What is changed, for messages (`the firewall rules`).
    pub what: String,
    /// The sections read before and after, each the segments under `…/firewall/` (the guest's, or
    /// the datacenter's after [`DATACENTER`]).
    pub sections: Vec<Vec<String>>,
    /// PVE's words when a section does not exist (an IP set not made yet): it reads as absent.
    pub missing: Option<&'static str>,
    pub plan: &'a Plan<'a>,
    pub judge: &'a Judge<'a>,
}

/// Runs a firewall change on the guest `target` names; the guest record is written on every path
/// once it was found.
pub async fn change_firewall<H: Host>(
    run: &Run<'_, H>,
    target: &GuestRef,
    change: &FirewallChange<'_>,
) -> Outcome {
    let absent = |vmid| {
        let noun = run.kind.noun();
        format!("{noun} {vmid} does not exist on any node: there is no firewall to change")
    };
    let mut ev = match sight_or_absent(run, target, &absent).await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    let verdict = apply(run, &mut ev, change).await;
    ev.outcome(run, verdict).await
}

async fn apply<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    change: &FirewallChange<'_>,
) -> Result<String, String> {
    let label = format!("{} of {}", change.what, ev.label(run));
    let before = read(run, ev, change)
        .await
        .map_err(|why| format!("could not read {label}: {why}; nothing was changed"))?;
    let writes = (change.plan)(&before)
        .map_err(|why| format!("cannot change {label}: {why}; nothing was sent"))?;
    let total = writes.len();
    for (done, write) in writes.iter().enumerate() {
        let (node, vmid) = (&ev.at.node, ev.at.vmid);
        let mut request = endpoints::guest_firewall(node, run.kind, vmid, write.verb, &write.at);
        request.params.extend(write.params.iter().cloned());
        ev.trail.sending();
        let answer = run.pve().call(&request).await;
        ev.trail.answered(&answer);
        if let Err(e) = answer {
            let action = format!(
                "change {label} (write {} of {total}: {})",
                done + 1,
                request.label()
            );
            let check = "it with the method's read (run it again: it plans from what it reads)";
            return Err(match e.outcome_unknown() {
                true => outcome_unknown(&action, &e, check).0,
                false => format!(
                    "PVE refused to {action}: {e} — {}; {done} earlier writes were accepted",
                    hint(e.kind)
                ),
            });
        }
    }
    let after = match read(run, ev, change).await {
        Ok(after) => after,
        Err(why) => {
            ev.trail.outcome_unknown = ev.trail.outcome_unknown || total > 0;
            return Err(format!(
                "{label}: {total} writes were accepted, but it could not be read back ({why}): whether they applied is unknown"
            ));
        }
    };
    let shown = (change.judge)(&after).map_err(|why| {
        format!("{label}: {total} writes were accepted, but {why} — check what PVE kept with the method's read (run it again: it plans from what it reads)")
    })?;
    // The options just read back are the guest's `enable` now: not asked for again.
    let options = match change.sections == [["options"]] {
        true => after.into_iter().next().flatten(),
        false => None,
    };
    let effect = in_effect(run, ev, options).await;
    Ok(format!("{label}: {shown} ({total} writes sent){effect}"))
}

/// The sections, each `None` when PVE says (`missing`) it does not exist.
async fn read<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    change: &FirewallChange<'_>,
) -> Result<Vec<Option<Value>>, String> {
    let mut read = Vec::new();
    for section in &change.sections {
        read.push(read_one(run, ev, change, section).await?);
    }
    Ok(read)
}

async fn read_one<H: Host>(
    run: &Run<'_, H>,
    ev: &Evidence,
    change: &FirewallChange<'_>,
    section: &[String],
) -> Result<Option<Value>, String> {
    let (node, vmid) = (&ev.at.node, ev.at.vmid);
    let request = match section.split_first() {
        Some((dc, at)) if dc == DATACENTER => endpoints::cluster_firewall(at),
        _ => endpoints::guest_firewall(node, run.kind, vmid, Verb::Get, section),
    };
    match run.pve().call(&request).await {
        // Every section is an object (options) or a list (rules, IP sets, aliases).
        Ok(value) if value.is_object() || value.is_array() => Ok(Some(value)),
        Ok(other) => {
            let what = format!("PVE answered {other} where {} were expected", change.what);
            Err(format!("{what} — {}", hint(ErrorKind::Malformed)))
        }
        Err(e)
            if change
                .missing
                .is_some_and(|words| e.message.contains(words)) =>
        {
            Ok(None)
        }
        Err(e) => Err(format!("{e} — {}", hint(e.kind))),
    }
}

/// What keeps the guest's firewall from applying, read now: its `enable` option, the cluster's,
/// its NICs without `firewall=1` — as a warning and words for the summary.
async fn in_effect<H: Host>(run: &Run<'_, H>, ev: &mut Evidence, options: Option<Value>) -> String {
    let (node, vmid) = (&ev.at.node, ev.at.vmid);
    let section = [String::from("options")];
    let guest = endpoints::guest_firewall(node, run.kind, vmid, Verb::Get, &section);
    let on = |v: &Value| v.get("enable").and_then(flex::bool_of) == Some(true);
    let mut off = Vec::new();
    let read = match options {
        Some(options) => Ok(options),
        None => run.pve().call(&guest).await,
    };
    match read {
        Ok(v) if !on(&v) => off.push("its firewall option enable is off".to_string()),
        Ok(_) => {}
        Err(e) => off.push(format!("its firewall options could not be read ({e})")),
    }
    match run
        .pve()
        .call_coalesced(&endpoints::cluster_firewall_options())
        .await
    {
        Ok(v) if !on(&v) => off.push("the cluster's firewall is disabled".to_string()),
        Ok(_) => {}
        Err(e) => off.push(format!(
            "the cluster's firewall options could not be read ({e})"
        )),
    }
    let nics = ev.config.iter().filter(|(key, value)| {
        key.starts_with("net")
            && flex::string_of(value)
                .is_some_and(|v| property(&v, "firewall").is_none_or(|f| f != "1"))
    });
    off.extend(nics.map(|(key, _)| format!("{key} has no firewall=1")));
    if off.is_empty() {
        return "; in effect (guest and cluster firewall on, every NIC with firewall=1)"
            .to_string();
    }
    let why = format!("not in effect: {}", off.join(", "));
    ev.warn(run, format!("{}: the firewall is {why}", ev.label(run)));
    format!("; {why}")
}
