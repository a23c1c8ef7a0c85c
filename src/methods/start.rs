//! `start`: succeeds only when `status/current` shows the guest running (a VM: with qmpstatus
//! `running`) — a task that ended OK is not enough (an HA-managed guest's start only queues a
//! request). With `waitForIp` it also needs an IPv4 address (`allowNoIp` makes a missing one a
//! warning): a VM's comes from its guest agent, waited for; a container has no agent, so its address
//! is the static `ip=` of its netN in the config (`ip=dhcp` has none to read).
//!
//! A container that does not live on the node asked still gets a UPID whose task fails
//! (pve-container does not load the config first): the guest is always located before the start.

use crate::args::{ArgError, Fields, Kind, Spec};
use crate::explain::could_not;
use crate::guest::addresses::{describe_skipped, unusable};
use crate::guest::create_course::{create_course, NewGuest};
use crate::guest::evidence::{sight_to_change, Evidence};
use crate::guest::power::{already, reach, transition};
use crate::guest::readiness::{
    await_ready, interfaces, no_agent, stopped_after, waits_for_agent, Readiness, ReadyArgs,
};
use crate::guest::reference::GuestRef;
use crate::guest::settle::{describe, lock_of, poll, Heard, Watch, HIBERNATED};
use crate::guest::target::Target;
use crate::host::Host;
use crate::methods::wait_ready::ready_outcome;
use crate::outcome::{Failure, Outcome};
use crate::poll::{Pacer, Stopped};
use crate::progress::Progress;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::PveError;
use crate::pve::flex;
use crate::pve::property::property;
use crate::pve::request::PveRequest;
use crate::quote::push_item;
use crate::run::Run;
use serde_json::{Map, Value};
use std::fmt::Write;

/// The arguments of `start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartArgs {
    pub target: GuestRef,
    pub wait_for_ip: bool,
    pub allow_no_ip: bool,
    /// A VM's `waitReady` option: after the start, wait until it is usable (`guest::readiness`).
    pub ready: Option<ReadyArgs>,
    /// A VM's `resume` option: a paused or suspended VM is resumed (otherwise refused).
    pub resume: bool,
}

/// The fields after the guest, in order (one table walk, issue 32).
const FIELDS: [Spec; 2] = [
    Spec::new("waitForIp", Kind::Flag(false)),
    Spec::new("allowNoIp", Kind::Flag(false)),
];

impl StartArgs {
    /// A plain start of `vmid`: no address or readiness wait.
    pub fn plain(vmid: u32) -> Self {
        StartArgs {
            target: GuestRef {
                vmid: Some(vmid),
                name: None,
            },
            wait_for_ip: false,
            allow_no_ip: false,
            ready: None,
            resume: false,
        }
    }

    /// The arguments as `kind`'s start takes them (`waitReady` is a VM's: containers have no agent).
    pub fn parse_for(kind: GuestKind, args: &Value) -> Result<Self, ArgError> {
        let fields = Fields::of(args, "")?;
        // A container's start has no such arguments: like zod, ignore them there.
        let (ready, resume) = match kind {
            GuestKind::Qemu => (
                ReadyArgs::wait_ready(&fields)?,
                fields.flag_or("resume", false)?,
            ),
            GuestKind::Lxc => (None, false),
        };
        let target = GuestRef::parse(&fields)?;
        let [wait_for_ip, allow_no_ip, ..] = fields.read_table(&FIELDS)?;
        Ok(StartArgs {
            target,
            wait_for_ip: wait_for_ip.int != 0,
            allow_no_ip: allow_no_ip.int != 0,
            ready,
            resume,
        })
    }
}

/// Runs `start`.
pub async fn start<H: Host>(run: &Run<'_, H>, args: &Value) -> Outcome {
    let args = match StartArgs::parse_for(run.kind, args) {
        Ok(args) => args,
        Err(e) => return Failure::from(e).into(),
    };
    let mut ev = match sight_to_change(run, &args.target, "start").await {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    up(run, &mut ev, &args, args.ready.as_ref(), None).await
}

/// `create` of either model, its arguments read: the one course (`guest::create_course`), then the
/// start its request asks for.
pub async fn create_then_start<H: Host>(
    run: &Run<'_, H>,
    parsed: Result<Box<dyn NewGuest + '_>, ArgError>,
) -> Outcome {
    let guest = match parsed {
        Ok(guest) => guest,
        Err(e) => return Failure::from(e).into(),
    };
    match create_course(run, &*guest).await {
        Ok((mut ev, verdict, asked)) => {
            let (start, ready) = match asked {
                true => (guest.start(), guest.ready()),
                false => (false, None),
            };
            // The start its request asks for after what was `done` — `waitReady`'s start and
            // wait, or `start: true`'s verified start — and the outcome with its records, awaited
            // here (no wrapper's state machine, issue 32).
            match verdict {
                Ok(done) if start || ready.is_some() => {
                    let args = StartArgs::plain(ev.at.vmid);
                    up(run, &mut ev, &args, ready, Some(&done)).await
                }
                verdict => ev.outcome(run, verdict).await,
            }
        }
        Err(outcome) => outcome,
    }
}

/// The verified start of `start`, then (`ready`) the readiness wait, after what was `done` (a
/// `create`, a `clone`; nothing for `start` itself); the outcome with its records (with the wait:
/// the state record and the `-ready` record).
async fn up<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &StartArgs,
    ready: Option<&ReadyArgs>,
    done: Option<&str>,
) -> Outcome {
    // The verified start: the guest started unless it already runs, then (`waitForIp`) its
    // address read; in this course, not an async fn of its own (issue 32).
    let brought_up = 'up: {
        let label = ev.label(run);
        let there = match already(run, ev, Target::Running) {
            Ok(there) => there,
            Err(context) => {
                let budget_ms = run.wait_budget_ms();
                or_break!('up, reach(run, ev, Target::Running, budget_ms, &context).await);
                true
            }
        };
        let mut summary = if there {
            format!("{label} was already running; no start was sent")
        } else {
            let verb = or_break!('up, wake_verb(ev, args, &label));
            let request = endpoints::power(&ev.at.node, run.kind, ev.at.vmid, verb);
            or_break!('up, transition(run, ev, &request, verb, Target::Running).await);
            format!("{label} is running")
        };
        if args.wait_for_ip {
            let found = match run.kind {
                // A VM's: the guest agent's interfaces polled until a usable IPv4 address appears,
                // within what the start left of the method's one budget (taskTimeoutSec); in this
                // course, not an async fn of its own (issue 32).
                GuestKind::Qemu => {
                    let request = endpoints::agent_interfaces(&ev.at.node, ev.at.vmid);
                    let deadline = run.budget.deadline(run.host.now_ms());
                    let mut pacer = Pacer::until(deadline, run.pve().poll_cap_ms);
                    let mut progress = Progress::start(run.host.now_ms());
                    let mut watch = IpWatch {
                        vmid: ev.at.vmid,
                        timeout_sec: run.global.task_timeout_sec,
                        last: "no answer yet".to_string(),
                    };
                    let pve = run.pve();
                    poll(
                        &pve,
                        &request,
                        deadline,
                        (&mut pacer, &mut progress),
                        &mut watch,
                    )
                    .await
                }
                // A container's address: the first static IPv4 `ip=` of its netN, in index order,
                // from the config it runs with; read from this course's own await (no wrapper's
                // state machine).
                GuestKind::Lxc => {
                    let request =
                        endpoints::guest_config_current(&ev.at.node, run.kind, ev.at.vmid);
                    let read = run.pve().call(&request).await;
                    let config = ev.config_read(run, &request, read);
                    config.and_then(|config| config_ipv4(&config))
                }
            };
            or_break!('up, took_ip(run, ev, args, &label, found, &mut summary));
        }
        Ok(summary)
    };
    let (ready, started) = match (ready, brought_up) {
        (Some(ready), Ok(started)) => (ready, started),
        (ready, verdict) => {
            let verdict = started_words(done, ready.is_some(), verdict);
            return ev.outcome(run, verdict).await;
        }
    };
    let since = run.host.now_ms();
    let mut seen = Readiness::default();
    let verdict = await_ready(run, &ev.at, ready, &mut seen).await;
    let verdict = ready_words(done, &started, verdict);
    let state = ev.observed(run).await;
    ready_outcome(run, ev, seen, since, verdict, state)
}

/// The verdict of a start without a readiness wait after it (or of a start that failed), after
/// what was `done`.
fn started_words(
    done: Option<&str>,
    ready: bool,
    verdict: Result<String, String>,
) -> Result<String, String> {
    match (done, verdict) {
        (None, verdict) => verdict,
        (Some(done), Ok(started)) => Ok(format!("{done}; {started}")),
        (Some(done), Err(why)) => {
            let start = if ready {
                "the start for waitReady"
            } else {
                "start: true"
            };
            Err(format!("{done}, but {start} failed: {why}"))
        }
    }
}

/// The verdict of a start and its readiness wait, after what was `done`.
fn ready_words(
    done: Option<&str>,
    started: &str,
    verdict: Result<String, String>,
) -> Result<String, String> {
    match (done, verdict) {
        (None, Err(why)) => Err(why),
        (done, Ok(ready)) => {
            let (done, then) = done.map_or(("", ""), |done| (done, "; "));
            Ok(format!("{done}{then}{started}; {ready}"))
        }
        (Some(done), Err(why)) => Err(format!("{done}; {started}, but {why}")),
    }
}

/// The call that brings a guest that does not run up. A QEMU process that exists but does not run
/// (paused, suspended by its guest) is resumed, not started (PVE refuses that); one suspended to
/// disk would resume from its saved state on a start too (qemu-server `vm_start`): both only when
/// asked.
// Inlined into its one caller (issue 32).
#[inline(always)]
fn wake_verb(ev: &Evidence, args: &StartArgs, label: &str) -> Result<&'static str, String> {
    let asleep = ev.status.status == "running" || lock_of(&ev.status) == Some(HIBERNATED);
    match (asleep, args.resume) {
        (true, false) => Err(format!(
            "{label} shows {}: start resumes a paused or suspended VM only with resume: true (or run resume)",
            describe(&ev.status)
        )),
        (true, true) => Ok("resume"),
        (false, _) => Ok("start"),
    }
}

/// What `waitForIp` found: the address, added to the record and the summary; none, warned of
/// (`allowNoIp`) or the start's failure.
// Inlined into its one caller (issue 32).
#[inline(always)]
fn took_ip<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    args: &StartArgs,
    label: &str,
    found: Result<String, String>,
    summary: &mut String,
) -> Result<(), String> {
    match found {
        Ok(ip) => {
            let _ = write!(summary, " with IPv4 address {ip}");
            ev.ipv4 = Some(ip);
        }
        Err(why) if args.allow_no_ip => ev.warn(
            run,
            format!("waitForIp found no IPv4 address ({why}); allowNoIp: true accepts that"),
        ),
        Err(why) => return Err(format!(
            "{label} is running, but waitForIp found no IPv4 address: {why} — {}, or set allowNoIp: true",
            no_ip_advice(run.kind)
        )),
    }
    Ok(())
}

/// What to do about a missing address, by where the address comes from.
fn no_ip_advice(kind: GuestKind) -> &'static str {
    match kind {
        GuestKind::Qemu => "check that the QEMU guest agent runs in the guest and that the guest got an address (DHCP, cloud-init)",
        GuestKind::Lxc => "give the container a static address in its config (net0: …,ip=<address>/<prefix>); an address from DHCP cannot be read without a guest agent",
    }
}

/// The first static IPv4 address (`ip=10.0.0.5/24` → `10.0.0.5`) of the netN keys, in index order;
/// `Err` says what the interfaces hold instead.
pub fn config_ipv4(config: &Map<String, Value>) -> Result<String, String> {
    let mut nets = Vec::new();
    for (key, value) in config {
        let index = key.strip_prefix("net").and_then(|n| n.parse::<u32>().ok());
        if let (Some(index), Some(value)) = (index, flex::string_of(value)) {
            // Placed in index order as they come (the keys come in text order: net10 before net2),
            // after any of the same index: pushed, then walked back past those of a higher index
            // (no sort, no `Vec::insert` compiled for this one list).
            nets.push((index, key.as_str(), value));
            let mut end = nets.len();
            while let Some([before, new]) = nets.get_mut(end.wrapping_sub(2)..end) {
                if before.0 <= new.0 {
                    break;
                }
                std::mem::swap(before, new);
                end -= 1;
            }
        }
    }
    // What each interface holds instead, written straight into one text (`net0 has ip=dhcp, …`).
    let mut seen = String::new();
    for (_, key, value) in &nets {
        let ip = property(value, "ip");
        if let Some((address, prefix)) = ip.and_then(|ip| ip.split_once('/')) {
            if is_ipv4(address) && unusable(address, prefix.parse().ok()).is_none() {
                return Ok(address.to_string());
            }
        }
        push_item(&mut seen, ", ", key);
        let _ = match ip {
            Some(ip) => write!(seen, " has ip={ip}"),
            None => write!(seen, " has no ip="),
        };
    }
    Err(match seen.is_empty() {
        true => "the container has no network interface (no netN in its config)".to_string(),
        false => format!("no static IPv4 address in its config ({seen})"),
    })
}

fn is_ipv4(text: &str) -> bool {
    let mut parts = 0;
    for part in text.split('.') {
        parts += 1;
        if part.is_empty() || part.len() > 3 || part.parse::<u8>().is_err() {
            return false;
        }
    }
    parts == 4
}

/// The first usable IPv4 address the agent reports (guest/addresses.rs, as `waitReady` counts
/// them); `Err` says there is none, naming the addresses seen and skipped.
fn first_usable_ipv4(data: &Value) -> Result<String, String> {
    let nics = interfaces(data);
    let mut skipped = Vec::new();
    for nic in &nics {
        for ip in &nic.addresses {
            if !ip.contains(':') {
                return Ok(ip.clone());
            }
        }
        skipped.extend_from_slice(&nic.skipped);
    }
    Err(match skipped.is_empty() {
        true => "the agent reported no IPv4 address".to_string(),
        false => format!(
            "the agent reported no usable IPv4 address (skipped: {})",
            describe_skipped(&skipped)
        ),
    })
}

/// `waitForIp`'s wait on a VM's agent: what its last answer said.
struct IpWatch {
    vmid: u32,
    timeout_sec: u64,
    last: String,
}

impl Watch for IpWatch {
    fn heard(&mut self, _: &PveRequest, answer: Result<Value, PveError>, cut: bool) -> Heard {
        self.last = match answer {
            Ok(data) => match first_usable_ipv4(&data) {
                Ok(ip) => return Heard::Done(ip),
                Err(none) => none,
            },
            // The budget's end cut the read short: what the last answer said stands.
            Err(_) if cut => return Heard::Again { tick: true },
            Err(e) if no_agent(&e) => return Heard::Failed(e.to_string()),
            // The agent comes up some time after the guest boots.
            Err(e) if waits_for_agent(&e) => e.to_string(),
            Err(e) => return Heard::Failed(could_not("read the guest agent's interfaces", &e).0),
        };
        Heard::Again { tick: true }
    }

    fn waiting(&self) -> String {
        format!("an IPv4 address of VM {} — {}", self.vmid, self.last)
    }

    fn stopped(&mut self, stop: Stopped) -> String {
        match stop {
            Stopped::OutOfTime => format!(
                "none within taskTimeoutSec={}s ({})",
                self.timeout_sec,
                stopped_after(stop, &self.last)
            ),
            Stopped::Aborted => stopped_after(stop, &self.last),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_words_after_what_was_done() {
        let ok = |s: &str| Ok::<String, String>(s.to_string());
        let err = |s: &str| Err::<String, String>(s.to_string());
        assert_eq!(super::started_words(None, true, err("x")), err("x"));
        assert_eq!(
            super::started_words(Some("made"), false, ok("up")),
            ok("made; up")
        );
        assert_eq!(
            super::started_words(Some("made"), true, err("no")),
            err("made, but the start for waitReady failed: no")
        );
        assert_eq!(
            super::started_words(Some("made"), false, err("no")),
            err("made, but start: true failed: no")
        );
        assert_eq!(super::ready_words(None, "up", ok("ready")), ok("up; ready"));
        assert_eq!(super::ready_words(None, "up", err("no")), err("no"));
        assert_eq!(
            super::ready_words(Some("made"), "up", ok("ready")),
            ok("made; up; ready")
        );
        assert_eq!(
            super::ready_words(Some("made"), "up", err("no")),
            err("made; up, but no")
        );
    }

    use super::*;
    use crate::testing::{api_args, failure_of, run_method, run_method_of, Answer, ScriptedHost};
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmstart:100:root@pam!t:";

    fn cluster(host: &ScriptedHost, status: Value) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 100, "type": "qemu", "node": "pve1", "name": "web"}]),
        );
        host.data(
            "GET /nodes/pve1/qemu/100/config",
            json!({"smbios1": "uuid=u-1"}),
        );
        host.data("GET /nodes/pve1/qemu/100/status/current", status);
    }

    fn run_start(host: &ScriptedHost, args: Value) -> Outcome {
        let mut all = api_args(json!({"taskTimeoutSec": 10}));
        for (k, v) in args.as_object().unwrap() {
            all[k] = v.clone();
        }
        run_method_of(GuestKind::Qemu, host, "start", &all)
    }

    fn record(outcome: &Outcome) -> &Value {
        &outcome.writes[0].data
    }

    #[test]
    fn an_already_running_vm_succeeds_without_a_task() {
        let host = ScriptedHost::new();
        cluster(&host, json!({"status": "running", "qmpstatus": "running"}));
        let outcome = run_start(&host, json!({"vmid": 100}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
        assert_eq!(record(&outcome)["status"], "running");
    }

    #[test]
    fn a_paused_vm_is_refused_with_the_qmpstatus() {
        let host = ScriptedHost::new();
        cluster(&host, json!({"status": "running", "qmpstatus": "paused"}));
        let outcome = run_start(&host, json!({"vmid": 100}));
        assert!(failure_of(&outcome).contains("only with resume: true"));
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
        assert_eq!(record(&outcome)["qmpStatus"], "paused");
    }

    #[test]
    fn a_paused_vm_is_resumed_when_asked() {
        let host = ScriptedHost::new();
        cluster(&host, json!({"status": "running", "qmpstatus": "paused"}));
        host.on(
            "GET /nodes/pve1/qemu/100/status/current",
            [Answer::Data(
                json!({"status": "running", "qmpstatus": "running"}),
            )],
        );
        let upid = "UPID:pve1:0000AAAA:0000BBBB:6571E3A1:qmresume:100:root@pam!t:";
        host.data("POST /nodes/pve1/qemu/100/status/resume", json!(upid));
        host.data(
            &format!("GET /nodes/pve1/tasks/{upid}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let outcome = run_start(&host, json!({"vmid": 100, "resume": true}));
        assert!(outcome.is_success(), "{outcome:?}");
        let posts: Vec<_> = host
            .routes_called()
            .into_iter()
            .filter(|r| r.starts_with("POST"))
            .collect();
        assert_eq!(posts, vec!["POST /nodes/pve1/qemu/100/status/resume"]);
        assert_eq!(record(&outcome)["qmpStatus"], "running");
    }

    #[test]
    fn a_vm_suspended_to_disk_is_refused_at_once_without_resume() {
        let host = ScriptedHost::new();
        cluster(
            &host,
            json!({"status": "stopped", "qmpstatus": "stopped", "lock": "suspended"}),
        );
        let outcome = run_start(&host, json!({"vmid": 100}));
        let message = failure_of(&outcome);
        assert!(message.contains("lock suspended"), "{message}");
        assert!(message.contains("resume: true"), "{message}");
        assert!(!host.routes_called().iter().any(|r| r.starts_with("POST")));
        assert!(host.elapsed_ms() < 1_000.0, "the lock is not waited out");
    }

    /// A start whose task fails with a log, on a host that stores files or not.
    fn failed_start(files: bool) -> (ScriptedHost, Outcome) {
        let mut host = ScriptedHost::new();
        host.files = files.then(Default::default);
        cluster(&host, json!({"status": "stopped", "qmpstatus": "stopped"}));
        host.data("POST /nodes/pve1/qemu/100/status/start", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "start failed: QEMU exited with code 1"}),
        );
        let log = json!([{"n": 1, "t": "kvm: cannot open disk"}, {"n": 2, "t": "TASK ERROR: start failed"}]);
        host.data(&format!("GET /nodes/pve1/tasks/{UPID}/log"), log);
        let outcome = run_start(&host, json!({"vmid": 100}));
        assert!(!outcome.is_success(), "{outcome:?}");
        (host, outcome)
    }

    #[test]
    fn a_failed_start_task_records_the_file_holding_its_log() {
        let (host, outcome) = failed_start(true);
        let record = record(&outcome);
        assert_eq!(record["lastTask"], UPID);
        let name = "tasklog-pve1-0000AAAA-6571E3A1";
        assert_eq!(record["lastTaskLog"], name);
        assert!(record.get("lastTaskLogTail").is_none());
        let files = host.files.unwrap().into_inner();
        assert_eq!(files[0].1, name);
        assert_eq!(
            files[0].2,
            "kvm: cannot open disk\nTASK ERROR: start failed\n"
        );
    }

    #[test]
    fn a_failed_start_task_records_its_log_tail_where_no_file_can_be_stored() {
        let (_, outcome) = failed_start(false);
        let record = record(&outcome);
        assert!(record.get("lastTaskLog").is_none());
        assert_eq!(
            record["lastTaskLogTail"],
            json!(["kvm: cannot open disk", "TASK ERROR: start failed"])
        );
    }

    #[test]
    fn a_task_ok_without_the_state_fails_naming_the_ha_state() {
        let host = ScriptedHost::new();
        cluster(
            &host,
            json!({"status": "stopped", "qmpstatus": "stopped", "ha": {"managed": 1, "state": "started"}}),
        );
        host.data("POST /nodes/pve1/qemu/100/status/start", json!(UPID));
        host.data(
            &format!("GET /nodes/pve1/tasks/{UPID}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let outcome = run_start(&host, json!({"vmid": 100}));
        let crate::outcome::Verdict::Failed { message } = &outcome.verdict else {
            panic!("{outcome:?}")
        };
        assert!(
            message.contains("did not reach status running with qmpstatus running"),
            "{message}"
        );
        assert!(message.contains("HA state started"), "{message}");
        assert_eq!(record(&outcome)["lastTask"], UPID);
        // The wait ran to its last read, one read's time before the budget's end.
        assert!(host.elapsed_ms() >= 10_000.0 - crate::poll::ANSWER_MS);
    }

    #[test]
    fn wait_for_ip_without_an_agent_fails_at_once_or_warns_when_allowed() {
        let host = ScriptedHost::new();
        cluster(&host, json!({"status": "running", "qmpstatus": "running"}));
        host.on(
            "GET /nodes/pve1/qemu/100/agent/network-get-interfaces",
            [Answer::Error(500, "No QEMU guest agent configured".into())],
        );
        let failed = run_start(&host, json!({"vmid": 100, "waitForIp": true}));
        assert!(!failed.is_success());
        assert!(
            host.elapsed_ms() < 1000.0,
            "no waiting for an agent that cannot come"
        );
        let allowed = run_start(
            &host,
            json!({"vmid": 100, "waitForIp": true, "allowNoIp": true}),
        );
        assert!(allowed.is_success(), "{allowed:?}");
        assert!(record(&allowed)["warnings"][0]
            .as_str()
            .unwrap()
            .contains("allowNoIp"));
    }

    #[test]
    fn wait_for_ip_waits_for_the_agent_and_records_the_address() {
        let host = ScriptedHost::new();
        cluster(&host, json!({"status": "running", "qmpstatus": "running"}));
        host.on(
            "GET /nodes/pve1/qemu/100/agent/network-get-interfaces",
            [
                Answer::Error(500, "QEMU guest agent is not running".into()),
                Answer::Data(json!({"result": [{"name": "eth0", "ip-addresses": [
                    {"ip-address": "10.0.0.5", "ip-address-type": "ipv4"}]}]})),
            ],
        );
        let outcome = run_start(&host, json!({"vmid": 100, "waitForIp": true}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(record(&outcome)["ipv4"], "10.0.0.5");
    }

    fn container(host: &ScriptedHost, net0: &str) {
        host.data(
            "GET /cluster/resources",
            json!([{"vmid": 300, "type": "lxc", "node": "pve2", "name": "ct"}]),
        );
        host.data("GET /nodes/pve2/lxc/300/config", json!({"net0": net0}));
        host.data(
            "GET /nodes/pve2/lxc/300/status/current",
            json!({"status": "running", "name": "ct"}),
        );
    }

    fn run_ct(host: &ScriptedHost, mut args: Value) -> Outcome {
        args["taskTimeoutSec"] = json!(10);
        run_method(host, "lxc", "start", args)
    }

    #[test]
    fn a_container_is_started_on_its_own_node_and_needs_no_qmpstatus() {
        let host = ScriptedHost::new();
        container(&host, "name=eth0,bridge=vmbr0,ip=dhcp");
        host.on(
            "GET /nodes/pve2/lxc/300/status/current",
            [
                Answer::Data(json!({"status": "stopped"})),
                Answer::Data(json!({"status": "stopped"})),
                Answer::Data(json!({"status": "running"})),
            ],
        );
        let upid = "UPID:pve2:0000AAAA:0000BBBB:6571E3A1:vzstart:300:root@pam!t:";
        host.data("POST /nodes/pve2/lxc/300/status/start", json!(upid));
        host.data(
            &format!("GET /nodes/pve2/tasks/{upid}/status"),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let outcome = run_ct(&host, json!({"vmid": 300}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(outcome.writes[0].instance, "ct-300");
        assert_eq!(record(&outcome)["status"], "running");
    }

    #[test]
    fn a_container_address_is_its_static_ip_and_dhcp_has_none() {
        let host = ScriptedHost::new();
        container(&host, "name=eth0,bridge=vmbr0,ip=10.0.0.5/24,gw=10.0.0.1");
        let outcome = run_ct(&host, json!({"vmid": 300, "waitForIp": true}));
        assert!(outcome.is_success(), "{outcome:?}");
        assert_eq!(record(&outcome)["ipv4"], "10.0.0.5");

        let host = ScriptedHost::new();
        container(&host, "name=eth0,bridge=vmbr0,ip=dhcp");
        let failed = run_ct(&host, json!({"vmid": 300, "waitForIp": true}));
        let message = failure_of(&failed);
        assert!(message.contains("net0 has ip=dhcp"), "{message}");
        assert!(message.contains("static address"), "{message}");
        assert!(!host.routes_called().iter().any(|r| r.contains("agent")));
        let allowed = run_ct(
            &host,
            json!({"vmid": 300, "waitForIp": true, "allowNoIp": true}),
        );
        assert!(allowed.is_success(), "{allowed:?}");
        assert!(record(&allowed).get("ipv4").is_none());
    }

    #[test]
    fn the_first_static_ipv4_of_the_nets_in_index_order_counts() {
        let config = |v: Value| v.as_object().unwrap().clone();
        let found = config_ipv4(&config(json!({
            "net10": "name=eth10,ip=192.0.2.10/24",
            "net0": "name=eth0,ip=dhcp",
            "net1": "name=eth1,ip=192.0.2.21/24,ip6=auto",
        })));
        assert_eq!(found.as_deref(), Ok("192.0.2.21"));
        assert_eq!(
            config_ipv4(&config(json!({"hostname": "x"}))),
            Err("the container has no network interface (no netN in its config)".to_string())
        );
        assert_eq!(
            config_ipv4(&config(
                json!({"net0": "name=eth0,ip=manual", "net1": "name=eth1"})
            )),
            Err(
                "no static IPv4 address in its config (net0 has ip=manual, net1 has no ip=)"
                    .to_string()
            )
        );
    }

    #[test]
    fn config_ipv4_names_interfaces_in_index_order_same_index_as_they_come() {
        let config = |v: Value| v.as_object().unwrap().clone();
        let found = config_ipv4(&config(json!({
            "net10": "ip=dhcp",
            "net2": "ip=manual",
            "net01": "ip=dhcp",
            "net1": "name=eth1",
            "net3": 7,
        })));
        assert_eq!(
            found,
            Err("no static IPv4 address in its config (net01 has ip=dhcp, net1 has no ip=, net2 has ip=manual, net3 has no ip=, net10 has ip=dhcp)".to_string())
        );
    }
}
