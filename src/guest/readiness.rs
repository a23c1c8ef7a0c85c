//! Whether a running VM is usable — shared by `waitReady` and `start`'s `waitReady` option. Ready
//! means, within `timeoutSec`: the guest agent answers `ping`; the interfaces carry the addresses
//! asked for (IPv4 and/or a global IPv6; only on the NIC whose MAC is `nic`'s when asked; only
//! usable addresses count, guest/addresses.rs — the others are recorded as skipped); and, when asked, `cloud-init status --wait` inside the guest exited
//! 0 — run through guestExec's own machinery, so its exit-code truth is guestExec's. What was seen
//! (the agent's version, the addresses per NIC, the cloud-init result) is kept for the record,
//! whatever the verdict.

use super::addresses::{push_skipped, unusable, Skipped};
use super::agent_exec::execute;
use super::exec::{verdict_message, ExecArgs, ExitPolicy};
use super::locate::Located;
use super::reference::GuestRef;
use super::settle::{poll, Heard, Watch};
use crate::args::{ArgError, Fields, Kind, Spec};
use crate::client::shaped;
use crate::explain::{could_not, could_not_args};
use crate::host::Host;
use crate::poll::{Pacer, Stopped};
use crate::progress::Progress;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::property::property;
use crate::pve::request::PveRequest;
use crate::quote::Joined;
use crate::record_json::{opt, put, set};
use crate::run::Run;
use serde_json::{Map, Value};
use std::fmt::Write;

/// What "ready" must include.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyArgs {
    pub ipv4: bool,
    pub ipv6: bool,
    /// Only the NIC whose MAC is this `netN`'s counts.
    pub nic: Option<String>,
    pub cloud_init: bool,
    pub timeout_sec: u64,
}

/// The readiness fields in the order they are checked (one table walk, issue 32).
const READY: [Spec; 5] = [
    Spec::new("nic", Kind::OptionalLine).rule(nic_fault),
    Spec::new("ipv4", Kind::Flag(true)),
    Spec::new("ipv6", Kind::Flag(false)),
    Spec::new("cloudInit", Kind::Flag(false)),
    Spec::new("timeoutSec", Kind::IntOr(1, 86_400, 300)),
];

fn nic_fault(nic: &str) -> Option<&'static str> {
    let index = nic.strip_prefix("net").and_then(|n| n.parse::<u8>().ok());
    let canonical = index.is_some_and(|i| i < 32 && nic == format!("net{i}"));
    (!canonical).then_some("must be net0 … net31")
}

impl ReadyArgs {
    /// The `waitReady` object of a method's arguments (`start`, `clone`, `create`), when given.
    pub fn wait_ready(fields: &Fields) -> Result<Option<Self>, ArgError> {
        match fields.present("waitReady")? {
            Some(_) => Ok(Some(ReadyArgs::parse(&fields.object("waitReady")?)?)),
            None => Ok(None),
        }
    }

    /// Reads the readiness fields of `fields` (`ipv4`, `ipv6`, `nic`, `cloudInit`, `timeoutSec`).
    pub fn parse(fields: &Fields) -> Result<Self, ArgError> {
        let [nic, ipv4, ipv6, cloud_init, timeout, ..] = fields.read_table(&READY)?;
        Ok(ReadyArgs {
            ipv4: ipv4.int != 0,
            ipv6: ipv6.int != 0,
            nic: nic.owned(),
            cloud_init: cloud_init.int != 0,
            timeout_sec: timeout.int as u64,
        })
    }
}

/// One network interface as the agent reported it: what could reach it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NicSeen {
    pub name: String,
    pub mac: Option<String>,
    /// The usable addresses (guest/addresses.rs).
    pub addresses: Vec<String>,
    /// The addresses it reported that do not count, and why.
    pub skipped: Vec<Skipped>,
}

/// Everything a readiness wait saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readiness {
    pub agent_up: bool,
    pub agent_version: Option<String>,
    pub interfaces: Vec<NicSeen>,
    /// How `cloud-init status --wait` ended (`outcome`, `exitCode`, `status`): JSON built by
    /// [`cloud_init_seen`].
    pub cloud_init: Option<Value>,
    pub ipv4: Option<String>,
    pub ipv6: Option<String>,
}

impl Readiness {
    /// What was seen, as the `-ready` record holds it (`agentUp`, `agentVersion`, `interfaces`
    /// — each `name`, `mac`, `addresses` and, when any, `skipped` as `{address, why}` — then
    /// `cloudInit`, `ipv4`, `ipv6`; what is absent left out): built as JSON in plain loops, not
    /// through derived serializers of these types (issue 32).
    pub fn record(&self) -> Map<String, Value> {
        let mut nics = Vec::new();
        for nic in &self.interfaces {
            let mut one = Map::new();
            put(&mut one, "name", Some(&nic.name));
            put(&mut one, "mac", nic.mac.as_deref());
            set(&mut one, "addresses", Value::from(nic.addresses.clone()));
            let mut skipped = Vec::new();
            for s in &nic.skipped {
                let mut entry = Map::new();
                put(&mut entry, "address", Some(&s.address));
                put(&mut entry, "why", Some(s.why));
                skipped.push(Value::Object(entry));
            }
            if !skipped.is_empty() {
                set(&mut one, "skipped", Value::Array(skipped));
            }
            nics.push(Value::Object(one));
        }
        let mut out = Map::new();
        set(&mut out, "agentUp", Value::Bool(self.agent_up));
        put(&mut out, "agentVersion", self.agent_version.as_deref());
        set(&mut out, "interfaces", Value::Array(nics));
        opt(&mut out, "cloudInit", self.cloud_init.clone());
        put(&mut out, "ipv4", self.ipv4.as_deref());
        put(&mut out, "ipv6", self.ipv6.as_deref());
        out
    }
}

/// Waits until the VM at `at` is ready as `args` asks; `seen` keeps what was observed. The agent's
/// phases are one course over [`poll`] (each judged by [`Readying`] in plain code); then, when
/// asked, cloud-init.
pub async fn await_ready<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    args: &ReadyArgs,
    seen: &mut Readiness,
) -> Result<String, String> {
    let mut pacer = Pacer::new(
        run.host.now_ms(),
        args.timeout_sec * 1000,
        run.global.poll_interval_sec * 1000,
    );
    let mut progress = Progress::start(run.host.now_ms());
    let mut course = Readying {
        phase: Some(Phase::Ping),
        at,
        args,
        seen,
        mac: None,
        last: String::new(),
        stalled: None,
        answered: false,
    };
    let (pve, deadline) = (run.pve(), pacer.deadline_ms());
    while let Some(request) = course.request(run.kind) {
        let heard = poll(
            &pve,
            &request,
            deadline,
            (&mut pacer, &mut progress),
            &mut course,
        )
        .await;
        course.next(heard)?;
    }
    let mut summary = course.summary();
    if args.cloud_init {
        let ended = cloud_init_done(run, at, pacer.deadline_ms(), seen).await;
        ended.map_err(|why| cloud_init_failed(at, seen, &why))?;
        summary.push_str("; cloud-init status --wait exited 0");
    }
    Ok(summary)
}

/// No agent configured: no answer can ever come, so waiting would only burn the budget.
pub fn no_agent(e: &PveError) -> bool {
    e.message.contains("No QEMU guest agent configured")
}

/// An agent that is not up yet (the guest still boots) or a guest not running yet.
pub fn waits_for_agent(e: &PveError) -> bool {
    e.kind == ErrorKind::Agent || e.kind == ErrorKind::GuestNotRunning
}

/// The pacer's end of a wait that keeps the last answer: what it said, or the abort.
pub fn stopped_after(stop: Stopped, last: &str) -> String {
    match stop {
        Stopped::OutOfTime => format!("last answer: {last}"),
        Stopped::Aborted => "the run was aborted while waiting".to_string(),
    }
}

/// The agent's phases of a readiness wait, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `POST …/agent/ping` until it answers.
    Ping,
    /// `GET …/agent/info` once: the agent's version (what cannot be read is left out).
    Info,
    /// The config once: the MAC of the NIC asked for.
    Mac,
    /// The interfaces until the asked addresses are there.
    Addresses,
}

/// A readiness wait's course through its agent phases, and what it saw.
struct Readying<'a> {
    phase: Option<Phase>,
    at: &'a Located,
    args: &'a ReadyArgs,
    seen: &'a mut Readiness,
    mac: Option<String>,
    /// The ping's last answer.
    last: String,
    /// In the address phase: the agent's error, when the last answer was one.
    stalled: Option<String>,
    /// Whether the agent has listed its interfaces in this wait (the list may hold only `lo`).
    answered: bool,
}

impl Readying<'_> {
    /// The request of the phase the course is in; `None` once it is through.
    fn request(&self, kind: GuestKind) -> Option<PveRequest> {
        let (node, vmid) = (&self.at.node, self.at.vmid);
        Some(match self.phase? {
            Phase::Ping => endpoints::agent_ping(node, vmid),
            Phase::Info => endpoints::agent_info(node, vmid),
            Phase::Mac => endpoints::guest_config_current(node, kind, vmid),
            Phase::Addresses => endpoints::agent_interfaces(node, vmid),
        })
    }

    /// Moves on after a phase, or says why the VM is not ready.
    fn next(&mut self, heard: Result<String, String>) -> Result<(), String> {
        let Some(phase) = self.phase else {
            return Ok(());
        };
        let found = match (phase, heard) {
            (_, Ok(found)) => found,
            (Phase::Ping | Phase::Addresses, Err(why)) => return Err(self.not_ready(phase, &why)),
            (_, Err(why)) => return Err(why),
        };
        self.phase = match phase {
            Phase::Ping => {
                self.seen.agent_up = true;
                Some(Phase::Info)
            }
            Phase::Info if self.args.nic.is_some() => Some(Phase::Mac),
            Phase::Info => Some(Phase::Addresses),
            Phase::Mac => {
                self.mac = Some(found);
                Some(Phase::Addresses)
            }
            Phase::Addresses => None,
        };
        Ok(())
    }

    /// Why the VM is not ready: the ping got no answer, or (the address phase) `why` names the
    /// addresses missing.
    fn not_ready(&self, phase: Phase, why: &str) -> String {
        let (vmid, node, after) = (self.at.vmid, &self.at.node, self.args.timeout_sec);
        match phase {
            Phase::Ping => format!(
                "VM {vmid} on node {node} is not ready: the guest agent does not answer ping after {after} s (timeoutSec) ({why})"
            ),
            _ => {
                // Each piece written onto the message, not formatted apart and copied in.
                let mut out = format!("VM {vmid} on node {node} is not ready: ");
                push_agent(&mut out, self.seen);
                let _ = write!(out, "; no {why} on ");
                self.push_scope(&mut out);
                let _ = write!(out, " after {after} s (timeoutSec) (seen: ");
                push_described(&mut out, &self.seen.interfaces);
                out.push(')');
                out
            }
        }
    }

    /// Where the addresses must be: "net0 (bc:24:…)", or any interface; written onto `out`.
    fn push_scope(&self, out: &mut String) {
        match (&self.args.nic, &self.mac) {
            (Some(nic), Some(mac)) => {
                let _ = write!(out, "{nic} ({mac})");
            }
            _ => out.push_str("any interface"),
        }
    }

    /// The verdict of a VM whose agent phases all ended well.
    fn summary(&self) -> String {
        let mut summary = format!("VM {} on node {} is ready: ", self.at.vmid, self.at.node);
        push_agent(&mut summary, self.seen);
        for (kind, address) in [("IPv4", &self.seen.ipv4), ("IPv6", &self.seen.ipv6)] {
            if let Some(address) = address {
                // Written in place, not formatted apart and copied in.
                let _ = write!(summary, "; {kind} {address} on ");
                self.push_scope(&mut summary);
            }
        }
        summary
    }

    /// The interfaces the agent listed: what is missing, said, or nothing (an empty text).
    fn listed(&mut self, data: &Value) -> String {
        self.answered = true;
        self.seen.interfaces = interfaces(data);
        self.seen.ipv4 = self.find(false);
        self.seen.ipv6 = self.find(true);
        missing(self.args, self.seen)
    }

    /// The first usable address of the family asked (IPv6: a global one) on the NIC asked.
    fn find(&self, v6: bool) -> Option<String> {
        for nic in &self.seen.interfaces {
            if self
                .mac
                .as_ref()
                .is_some_and(|m| nic.mac.as_ref() != Some(m))
            {
                continue;
            }
            for address in &nic.addresses {
                if address.contains(':') == v6 && (!v6 || is_global_v6(address)) {
                    return Some(address.clone());
                }
            }
        }
        None
    }

    fn ping(&mut self, answer: Result<Value, PveError>, cut: bool) -> Heard {
        self.last = match answer {
            // The agent's answer is `{"result": {}}`: anything else is not its answer.
            Ok(data) if data.get("result").is_some() => return Heard::Done(String::new()),
            Ok(data) => format!(
                "the ping answered {data}, not the agent's result",
                data = crate::quote::json(&data)
            ),
            Err(e) if no_agent(&e) => return Heard::Failed(e.to_string()),
            Err(e) if waits_for_agent(&e) || cut => e.to_string(),
            Err(e) => return Heard::Failed(could_not("ping the guest agent", &e).0),
        };
        Heard::Again { tick: true }
    }

    fn addresses(&mut self, answer: Result<Value, PveError>, cut: bool) -> Heard {
        match answer {
            Ok(data) => {
                self.stalled = None;
                match self.listed(&data).is_empty() {
                    true => Heard::Done(String::new()),
                    false => Heard::Again { tick: true },
                }
            }
            // The wait's end cut a slow answer short: what is missing is what the last answer lacked.
            Err(_) if cut && self.answered => Heard::Failed(missing(self.args, self.seen)),
            Err(e) if waits_for_agent(&e) || cut => {
                self.stalled = Some(e.to_string());
                Heard::Again { tick: false }
            }
            Err(e) => Heard::Failed(format!(
                "address readable ({})",
                could_not("read the guest agent's interfaces", &e).0
            )),
        }
    }
}

impl Watch for Readying<'_> {
    fn heard(&mut self, request: &PveRequest, answer: Result<Value, PveError>, cut: bool) -> Heard {
        match self.phase {
            Some(Phase::Ping) => self.ping(answer, cut),
            Some(Phase::Info) => {
                self.seen.agent_version = answer.ok().and_then(|data| version_of(&data));
                Heard::Done(String::new())
            }
            Some(Phase::Mac) => match nic_mac(request, answer, self.at.vmid, self.args) {
                Ok(mac) => Heard::Done(mac),
                Err(why) => Heard::Failed(why),
            },
            _ => self.addresses(answer, cut),
        }
    }

    fn waiting(&self) -> String {
        let (vmid, node) = (self.at.vmid, &self.at.node);
        match self.phase {
            Some(Phase::Addresses) => {
                let on = self.args.nic.as_deref().unwrap_or("any interface");
                let wanted = missing(self.args, self.seen);
                format!("VM {vmid} on node {node}: agent up; no {wanted} on {on} yet")
            }
            _ => {
                format!("the guest agent of VM {vmid} on node {node} to answer — not answering yet")
            }
        }
    }

    fn stopped(&mut self, stop: Stopped) -> String {
        match (self.phase, &self.stalled) {
            (Some(Phase::Addresses), None) => missing(self.args, self.seen),
            (Some(Phase::Addresses), Some(e)) => {
                format!("address (the agent stopped answering: {e})")
            }
            _ => stopped_after(stop, &self.last),
        }
    }
}

/// The agent's version in `GET …/agent/info`'s answer.
fn version_of(data: &Value) -> Option<String> {
    data.get("result")?
        .get("version")?
        .as_str()
        .map(str::to_string)
}

/// The MAC of the NIC asked (`virtio=BC:24:11:…,bridge=…`) in the config the VM runs with.
fn nic_mac(
    request: &PveRequest,
    answer: Result<Value, PveError>,
    vmid: u32,
    args: &ReadyArgs,
) -> Result<String, String> {
    let nic = args.nic.as_deref().unwrap_or_default();
    let config: Map<String, Value> = shaped(request, "a guest config", answer)
        .map_err(|e| could_not_args(format_args!("read the config of VM {vmid}"), &e).0)?;
    let value = config.get(nic).and_then(Value::as_str).ok_or_else(|| {
        format!("VM {vmid} has no {nic} in its config: nic names a network device of the VM")
    })?;
    let model = value.split(',').next().unwrap_or_default();
    let mac = model
        .split_once('=')
        .map(|(_, mac)| mac)
        .or_else(|| property(value, "macaddr"));
    mac.map(str::to_ascii_lowercase)
        .ok_or_else(|| format!("{nic} of VM {vmid} has no MAC address ({value})"))
}

/// Why a VM whose addresses are up is not ready: how cloud-init ended.
fn cloud_init_failed(at: &Located, seen: &Readiness, why: &str) -> String {
    let mut out = format!("VM {} on node {} is not ready: ", at.vmid, at.node);
    push_agent(&mut out, seen);
    let _ = write!(out, ", addresses up; cloud-init did not end well: {why}");
    out
}

/// "agent 5.2.0 up", or "agent up" when its version could not be read; written onto `out`.
fn push_agent(out: &mut String, seen: &Readiness) {
    out.push_str("agent ");
    if let Some(version) = &seen.agent_version {
        out.push_str(version);
        out.push(' ');
    }
    out.push_str("up");
}

/// The addresses asked for and not found, said ("IPv4 address and global IPv6 address"); empty
/// when none is missing. Said as it is found rather than listed and joined (issue 32).
fn missing(args: &ReadyArgs, seen: &Readiness) -> String {
    let mut out = String::new();
    if args.ipv4 && seen.ipv4.is_none() {
        out.push_str("IPv4 address");
    }
    if args.ipv6 && seen.ipv6.is_none() {
        crate::quote::push_item(&mut out, " and ", "global IPv6 address");
    }
    out
}

/// The agent's `network-get-interfaces` (its `lo` left out), each address sorted into usable and
/// skipped.
pub fn interfaces(data: &Value) -> Vec<NicSeen> {
    let list = data.get("result").and_then(Value::as_array);
    let mut nics = Vec::new();
    for i in list.into_iter().flatten() {
        let name = i.get("name").and_then(Value::as_str);
        if name == Some("lo") {
            continue;
        }
        nics.push({
            let mut nic = NicSeen {
                name: name.unwrap_or_default().to_string(),
                mac: i
                    .get("hardware-address")
                    .and_then(Value::as_str)
                    .map(str::to_ascii_lowercase),
                // Written out, not `..NicSeen::default()`, which builds a whole default value
                // and drops what it overwrites (issue 32).
                addresses: Vec::new(),
                skipped: Vec::new(),
            };
            let reported = i.get("ip-addresses").and_then(Value::as_array);
            for entry in reported.into_iter().flatten() {
                let Some(address) = entry.get("ip-address").and_then(Value::as_str) else {
                    continue;
                };
                let prefix = entry
                    .get("prefix")
                    .and_then(Value::as_u64)
                    .and_then(|p| u8::try_from(p).ok());
                match unusable(address, prefix) {
                    None => nic.addresses.push(address.to_string()),
                    Some(why) => nic.skipped.push(Skipped {
                        address: address.to_string(),
                        why,
                    }),
                }
            }
            nic
        });
    }
    nics
}

/// A global unicast IPv6 address (2000::/3).
fn is_global_v6(address: &str) -> bool {
    let first = address.split(':').next().unwrap_or_default();
    u16::from_str_radix(first, 16)
        .is_ok_and(|hextet| first.len() == 4 && (0x2000..0x4000).contains(&hextet))
}

/// The interfaces the agent listed, written onto `out` (the message that names them).
fn push_described(out: &mut String, nics: &[NicSeen]) {
    if nics.is_empty() {
        out.push_str("no interfaces besides lo");
    }
    // Each NIC written in place, not formatted apart in pieces and copied in (issue 32).
    for (at, n) in nics.iter().enumerate() {
        if at > 0 {
            out.push_str("; ");
        }
        let mac = n.mac.as_deref().unwrap_or("(no MAC)");
        let _ = write!(out, "{} {mac}: ", n.name);
        match n.addresses.is_empty() {
            true => out.push_str("no address"),
            false => out.push_str(&n.addresses.joined(", ")),
        }
        if !n.skipped.is_empty() {
            out.push_str(" (skipped: ");
            push_skipped(out, &n.skipped);
            out.push(')');
        }
    }
}

/// `cloud-init status --wait` in the guest, through guestExec's machinery: exit 0 or it failed.
async fn cloud_init_done<H: Host>(
    run: &Run<'_, H>,
    at: &Located,
    deadline_ms: f64,
    seen: &mut Readiness,
) -> Result<(), String> {
    // `timeoutSec` of the command in whole seconds (at least one); the deadline cuts it exactly.
    let left_ms = (deadline_ms - run.host.now_ms()).max(0.0);
    let timeout_sec = ((left_ms / 1000.0).ceil() as u64).max(1);
    let args = ExecArgs {
        target: GuestRef {
            vmid: Some(at.vmid),
            name: None,
        },
        command: vec![
            "cloud-init".to_string(),
            "status".to_string(),
            "--wait".to_string(),
        ],
        timeout_sec,
        policy: ExitPolicy::ZeroOnly,
        input: None,
    };
    // Run exactly as `guestExec` does, without writing its record, all of it by the outer wait's
    // deadline; the verdict says why it does not count as success under `args.policy`. Awaited
    // here rather than through a wrapper of its own (one state machine less, issue 32).
    let (_, outcome, status) = execute(run, at, &args, Some(deadline_ms)).await;
    let verdict =
        verdict_message(run.kind, at, &args, &outcome, status.as_ref()).map_or(Ok(()), Err);
    let stdout = status.as_ref().and_then(|s| s.stdout.as_ref());
    let stdout = stdout.map_or("", |out| out.text.as_str());
    let status_line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("status:"))
        .map(str::trim);
    seen.cloud_init = Some(cloud_init_seen(
        outcome.label(),
        status.as_ref().and_then(|s| s.exit_code),
        status_line,
    ));
    verdict
}

/// How `cloud-init status --wait` ended, as recorded: its outcome, exit code and `status:` line,
/// each left out when absent.
fn cloud_init_seen(outcome: &str, exit_code: Option<i64>, status: Option<&str>) -> Value {
    let mut seen = Map::new();
    put(&mut seen, "outcome", Some(outcome));
    if let Some(code) = exit_code {
        set(&mut seen, "exitCode", Value::from(code));
    }
    put(&mut seen, "status", status);
    Value::Object(seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The interfaces as the not-ready message names them.
    fn described(nics: &[NicSeen]) -> String {
        let mut out = String::new();
        push_described(&mut out, nics);
        out
    }

    #[test]
    fn the_unspecified_address_is_seen_skipped_and_said() {
        let data = json!({"result": [
            {"name": "eth0", "hardware-address": "bc:24:11:00:00:01", "ip-addresses": [
                {"ip-address": "0.0.0.0", "ip-address-type": "ipv4", "prefix": 8}]}]});
        let nics = interfaces(&data);
        assert!(nics[0].addresses.is_empty());
        assert_eq!(nics[0].skipped[0].why, "unspecified");
        assert_eq!(
            described(&nics),
            "eth0 bc:24:11:00:00:01: no address (skipped: 0.0.0.0 (unspecified))"
        );
    }

    #[test]
    fn loopback_and_link_local_never_count() {
        let data = json!({"result": [
            {"name": "lo", "ip-addresses": [{"ip-address": "127.0.0.1"}]},
            {"name": "eth0", "hardware-address": "BC:24:11:00:00:01", "ip-addresses": [
                {"ip-address": "169.254.3.4"}, {"ip-address": "fe80::1"}, {"ip-address": "10.0.0.5"},
                {"ip-address": "2001:db8::5"}]}]});
        let nics = interfaces(&data);
        assert_eq!(nics.len(), 1);
        assert_eq!(nics[0].mac.as_deref(), Some("bc:24:11:00:00:01"));
        assert_eq!(nics[0].addresses, vec!["10.0.0.5", "2001:db8::5"]);
    }

    #[test]
    fn each_nic_is_said_with_its_addresses_or_none() {
        let data = json!({"result": [
            {"name": "eth0", "hardware-address": "BC:24:11:00:00:01", "ip-addresses": [
                {"ip-address": "10.0.0.5"}, {"ip-address": "2001:db8::5"}]},
            {"name": "eth1"}]});
        assert_eq!(
            described(&interfaces(&data)),
            "eth0 bc:24:11:00:00:01: 10.0.0.5, 2001:db8::5; eth1 (no MAC): no address"
        );
        assert_eq!(described(&[]), "no interfaces besides lo");
    }

    #[test]
    fn only_2000_slash_3_is_a_global_ipv6() {
        assert!(is_global_v6("2001:db8::5"));
        assert!(!is_global_v6("fd00::5"));
        assert!(!is_global_v6("::1"));
    }

    #[test]
    fn a_slow_boot_says_which_phase_it_waits_in() {
        use crate::host::LogLevel;
        use crate::pve::endpoints::GuestKind;
        use crate::testing::{api_args, run_method_of, Answer, ScriptedHost};
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve1/qemu/100/status/current",
            json!({"status": "running", "qmpstatus": "running", "pid": 42}),
        );
        host.data("GET /nodes/pve1/qemu/100/config", json!({"agent": "1"}));
        let not_up = Answer::Error(500, "QEMU guest agent is not running".into());
        let mut pings = vec![not_up; 40];
        pings.push(Answer::Data(json!({"result": {}})));
        host.on("POST /nodes/pve1/qemu/100/agent/ping", pings);
        host.data(
            "GET /nodes/pve1/qemu/100/agent/info",
            json!({"result": {"version": "7.2.22"}}),
        );
        let no_ip = json!({"result": [{"name": "eth0", "ip-addresses": []}]});
        let mut nics = vec![Answer::Data(no_ip); 30];
        nics.push(Answer::Data(
            json!({"result": [{"name": "eth0", "ip-addresses": [
            {"ip-address": "10.0.0.5"}]}]}),
        ));
        host.on(
            "GET /nodes/pve1/qemu/100/agent/network-get-interfaces",
            nics,
        );
        let args = api_args(json!({"vmid": 100, "timeoutSec": 120}));
        let outcome = run_method_of(GuestKind::Qemu, &host, "waitReady", &args);
        assert!(outcome.is_success(), "{outcome:?}");
        let logs = host.logs.borrow();
        let lines: Vec<&String> = logs
            .iter()
            .filter(|(l, m)| *l == LogLevel::Info && m.starts_with("waiting for"))
            .map(|(_, m)| m)
            .collect();
        assert!(
            lines[0].starts_with(
                "waiting for the guest agent of VM 100 on node pve1 to answer — not answering yet — 5 s so far"
            ),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("agent up; no IPv4 address on any interface yet — ")),
            "{lines:?}"
        );
    }

    #[test]
    fn missing_addresses_are_said_joined_by_and() {
        let args = |ipv4, ipv6| ReadyArgs {
            ipv4,
            ipv6,
            nic: None,
            cloud_init: false,
            timeout_sec: 1,
        };
        let mut seen = Readiness::default();
        assert_eq!(
            missing(&args(true, true), &seen),
            "IPv4 address and global IPv6 address"
        );
        assert_eq!(missing(&args(false, true), &seen), "global IPv6 address");
        seen.ipv4 = Some("10.0.0.5".into());
        assert_eq!(missing(&args(true, false), &seen), "");
    }

    #[test]
    fn nic_must_be_a_net_key() {
        let parse = |v: Value| ReadyArgs::parse(&Fields::of(&v, "").unwrap());
        assert!(parse(json!({"nic": "net0"})).is_ok());
        assert_eq!(parse(json!({"nic": "eth0"})).unwrap_err().field, "nic");
        assert_eq!(parse(json!({"nic": "net32"})).unwrap_err().field, "nic");
        assert_eq!(parse(json!({"nic": "net01"})).unwrap_err().field, "nic");
    }
}
