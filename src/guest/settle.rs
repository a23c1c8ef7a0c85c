//! Waiting until a guest's observed state satisfies a target. A task that ended OK proves nothing
//! (for an HA-managed guest it only queued a request): only `status/current` shows the effect.
//!
//! A `lock` is "not yet", whatever else the status says: PVE locks a guest while an operation
//! changes it (`clone`, `create`, `migrate`, `backup`, `snapshot`, `rollback`, `disk`, …), and
//! qemu-server's clone and pve-container's create write the new guest's config — final name and
//! tags included — under the lock before the work is done. Every wait here therefore holds out for
//! the target AND no lock, and a wait that runs out while locked names the lock.
//!
//! Every wait on repeated reads — this one, the guest agent's, a command's status — runs the one
//! loop here ([`poll`]), judging each answer in its own plain code ([`Watch`]).

use super::locate::Located;
use crate::client::{shaped, Pve};
use crate::explain::hint;
use crate::host::Host;
use crate::poll::{Pacer, Stopped};
use crate::progress::Progress;
use crate::pve::endpoints::{self, GuestKind};
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::request::{PveRequest, Repeat};
use crate::pve::responses::GuestStatus;
use serde_json::Value;
use std::fmt::Write;

/// How a wait's error begins when the state could not be read (not when it was read and wrong).
pub const UNREADABLE: &str = "its state could not be read";

/// `GET …/status/current` of a located guest (`once`: not tried again after a failure). Sent from
/// each course's own await, its answer read by [`status_of`]: no future of its own (issue 32).
pub fn status_request(kind: GuestKind, at: &Located, once: bool) -> PveRequest {
    let mut request = endpoints::guest_status(&at.node, kind, at.vmid);
    if once {
        request.repeat = Repeat::Never;
    }
    request
}

/// The status a [`status_request`] was answered.
pub fn status_of(
    request: &PveRequest,
    answer: Result<Value, PveError>,
) -> Result<GuestStatus, PveError> {
    shaped(request, "a guest status", answer)
}

/// Where a wait keeps the last status it read, when it read it, and after how many of the run's
/// mutations (`mutations`, stored in `after` on each read); `unreadable`, when given: whether the
/// wait ended because the state could not be read.
pub struct Seen<'a> {
    pub status: &'a mut GuestStatus,
    pub at_ms: &'a mut f64,
    pub after: &'a mut u32,
    pub mutations: u32,
    pub unreadable: Option<&'a mut bool>,
}

/// The guest's lock, if PVE reports one.
pub fn lock_of(s: &GuestStatus) -> Option<&str> {
    s.lock.as_deref().map(str::trim).filter(|l| !l.is_empty())
}

/// The lock of a VM suspended to disk: qemu-server `PVE/QemuServer/RunState.pm` vm_suspend sets it
/// once the state is saved and QEMU has quit, and only a start (`vm_start`, which a resume of such a
/// VM runs) drops it. Not an operation in progress but the state itself: no wait ends it.
pub const HIBERNATED: &str = "suspended";

/// The guest's lock when it is an operation in progress: every lock but [`HIBERNATED`].
pub fn busy_lock(s: &GuestStatus) -> Option<&str> {
    lock_of(s).filter(|l| *l != HIBERNATED)
}

/// Why a lock stops a method, and what the user can do about it.
pub fn locked_advice(kind: GuestKind, lock: &str, verb: &str) -> String {
    let noun = match kind {
        GuestKind::Qemu => "VM",
        GuestKind::Lxc => "CT",
    };
    format!(
        "{noun} is locked ({lock}) and PVE refuses to {verb} a locked guest: wait for the operation holding the lock to end, or clear a stale lock (`{}`)",
        unlock_command(kind)
    )
}

/// The node's command that clears a stale lock.
fn unlock_command(kind: GuestKind) -> &'static str {
    match kind {
        GuestKind::Qemu => "qm unlock",
        GuestKind::Lxc => "pct unlock",
    }
}

/// Polls `status/current` until `reached` holds and no lock is held, within `budget_ms` (reading at
/// least once), backing off from a fast first poll up to `pollIntervalSec`. `seen` keeps the last
/// status read whatever happens; `Err` says why the target was not observed (naming a lock still
/// held).
///
/// Its arguments are taken whole, so that a caller that only fills them in returns this future as
/// its own (no wrapper's state machine, issue 32).
pub async fn settle<H: Host>(
    pve: Pve<'_, H>,
    kind: GuestKind,
    at: &Located,
    budget_ms: u64,
    reached: &dyn Fn(&GuestStatus) -> bool,
    mut seen: Seen<'_>,
) -> Result<(), String> {
    if let Some(unreadable) = seen.unreadable.as_deref_mut() {
        *unreadable = false;
    }
    let mut pacer = Pacer::new(pve.host.now_ms(), budget_ms, pve.poll_cap_ms);
    let request = endpoints::guest_status(&at.node, kind, at.vmid);
    let mut progress = Progress::start(pve.host.now_ms());
    let deadline = pacer.deadline_ms();
    let mut watch = Settling {
        host: pve.host,
        kind,
        at,
        budget_ms,
        reached,
        seen,
    };
    // Each read ends by the wait's end (`Pve::call_by`): the budget is met within one request.
    let settled = poll(
        &pve,
        &request,
        deadline,
        (&mut pacer, &mut progress),
        &mut watch,
    )
    .await;
    settled.map(drop)
}

/// [`settle`]'s judging of each status read.
struct Settling<'a, 's, H> {
    host: &'a H,
    kind: GuestKind,
    at: &'a Located,
    budget_ms: u64,
    reached: &'a dyn Fn(&GuestStatus) -> bool,
    seen: Seen<'s>,
}

impl<H: Host> Watch for Settling<'_, '_, H> {
    fn heard(&mut self, request: &PveRequest, answer: Result<Value, PveError>, cut: bool) -> Heard {
        let seen = &mut self.seen;
        match shaped::<GuestStatus>(request, "a guest status", answer) {
            Ok(status) => *seen.status = status,
            // The wait's end cut the read short: the wait ran out, the last status stands.
            Err(e) if cut => {
                let why = stopped(Stopped::OutOfTime, self.budget_ms, seen.status);
                return Heard::Failed(format!("{why}; its last read was not answered ({e})"));
            }
            Err(e) => {
                if let Some(unreadable) = seen.unreadable.as_deref_mut() {
                    *unreadable = true;
                }
                return Heard::Failed(format!("{UNREADABLE} ({e} — {})", hint(e.kind)));
            }
        }
        *seen.at_ms = self.host.now_ms();
        *seen.after = seen.mutations;
        match (self.reached)(seen.status) && busy_lock(seen.status).is_none() {
            true => Heard::Done(String::new()),
            false => Heard::Again { tick: true },
        }
    }

    fn waiting(&self) -> String {
        waiting_on(self.kind, self.at, self.seen.status)
    }

    fn stopped(&mut self, stop: Stopped) -> String {
        stopped(stop, self.budget_ms, self.seen.status)
    }
}

/// What an answer means to the wait that asked for it ([`Watch`]).
pub enum Heard {
    /// The wait is over; what it found.
    Done(String),
    /// Ask again after a pause; `tick`: a progress line may be logged meanwhile.
    Again { tick: bool },
    /// The wait cannot end well: why.
    Failed(String),
}

/// One wait on repeated reads of one request — a guest's state ([`settle`]), its agent
/// (guest/readiness.rs, `start`'s waitForIp), a command's status (guest/agent_exec.rs) — judged in
/// plain code, so that every such wait shares one loop ([`poll`]).
pub trait Watch {
    /// Judges one answer to `request`; `cut`: it is a timeout the wait's deadline cut short.
    fn heard(&mut self, request: &PveRequest, answer: Result<Value, PveError>, cut: bool) -> Heard;
    /// What the progress line says is waited for.
    fn waiting(&self) -> String;
    /// Why the wait failed once its pacer stopped it.
    fn stopped(&mut self, stop: Stopped) -> String;
}

/// Sends `request` by `deadline_ms` until `watch` is done with its answers, pausing between them
/// as `pacer` says: the one loop of every wait (one state machine for all, issue 32).
pub async fn poll<H: Host>(
    pve: &Pve<'_, H>,
    request: &PveRequest,
    deadline_ms: f64,
    (pacer, progress): (&mut Pacer, &mut Progress),
    watch: &mut dyn Watch,
) -> Result<String, String> {
    loop {
        let answer = pve.call_by(request, deadline_ms).await;
        // A request the wait's deadline cut short: the wait is over, not broken.
        let cut = answer
            .as_ref()
            .is_err_and(|e| e.kind == ErrorKind::Timeout && pve.host.now_ms() >= deadline_ms);
        match watch.heard(request, answer, cut) {
            Heard::Done(found) => return Ok(found),
            Heard::Failed(why) => return Err(why),
            Heard::Again { tick: true } => progress.tick(pve.host, || watch.waiting()),
            Heard::Again { tick: false } => {}
        }
        if let Err(stop) = pacer.pause(pve.host).await {
            return Err(watch.stopped(stop));
        }
    }
}

/// Why a wait stopped, naming a lock still held in the last status.
fn stopped(stop: Stopped, budget_ms: u64, last: &GuestStatus) -> String {
    let why = match stop {
        Stopped::OutOfTime if budget_ms == 0 => {
            "not at its one read (no time was left to wait)".into()
        }
        Stopped::OutOfTime => format!("not within {}", seconds(budget_ms)),
        Stopped::Aborted => "the run was aborted while waiting".to_string(),
    };
    naming_lock(why, last)
}

/// `why`, naming a lock still held in the last status read.
pub fn naming_lock(why: String, last: &GuestStatus) -> String {
    match lock_of(last) {
        Some(lock) => format!("{why} (still locked: {lock} — an operation on it has not finished)"),
        None => why,
    }
}

/// What to do about a lock still held after a task ended: the operation holding it is PVE's.
pub fn lock_advice(kind: GuestKind, node: &str) -> String {
    format!(
        "check the task list of node {node} for the operation holding the lock and wait for it (a lock left by a task that died is cleared with `{}`)",
        unlock_command(kind)
    )
}

/// What a settle waits on, for progress lines: the guest and what it shows now (a lock being
/// waited out is named: `lock backup`).
fn waiting_on(kind: GuestKind, at: &Located, now: &GuestStatus) -> String {
    let (its, lock, wait) = match lock_of(now) {
        Some(lock) => ("its ", lock, " lock to be released"),
        None => ("", "", "the state asked for"),
    };
    format!(
        "{} {} on node {} — {its}{lock}{wait} (now: {})",
        kind.noun(),
        at.vmid,
        at.node,
        describe(now)
    )
}

/// `status running, qmpstatus paused, lock backup, HA-managed (state started)`, for messages.
pub fn describe(s: &GuestStatus) -> String {
    let mut text = format!("status {}", s.status);
    if let Some(qmp) = &s.qmpstatus {
        let _ = write!(text, ", qmpstatus {qmp}");
    }
    if let Some(lock) = lock_of(s) {
        let _ = write!(text, ", lock {lock}");
    }
    if let Some(ha) = s.ha.as_ref().filter(|ha| ha.managed == Some(true)) {
        let state = ha.state.as_deref().unwrap_or("unknown");
        let _ = write!(text, ", HA-managed (HA state {state})");
    }
    text
}

/// A budget in seconds as users set it (`taskTimeoutSec=300s`-style messages say the knob).
pub fn seconds(ms: u64) -> String {
    format!("{}s", crate::units::whole_or_tenths(ms, 1000))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wait_names_the_lock_it_waits_out() {
        let at = Located {
            vmid: 100,
            node: "pve1".to_string(),
        };
        let locked = parse(&json!({"status": "running", "lock": "backup"})).unwrap();
        assert_eq!(
            waiting_on(GuestKind::Qemu, &at, &locked),
            "VM 100 on node pve1 — its backup lock to be released (now: status running, lock backup)"
        );
        let stopped = parse(&json!({"status": "stopped"})).unwrap();
        assert_eq!(
            waiting_on(GuestKind::Lxc, &at, &stopped),
            "container 100 on node pve1 — the state asked for (now: status stopped)"
        );
    }

    use super::*;
    use crate::global_args::GlobalArgs;
    use crate::poll::ANSWER_MS;
    use crate::pve::responses::parse;
    use crate::testing::{api_args, block_on, Answer, ScriptedHost};
    use serde_json::json;

    const ROUTE: &str = "GET /nodes/pve1/qemu/100/status/current";

    fn wait(host: &ScriptedHost, budget_ms: u64) -> (Result<(), String>, GuestStatus) {
        let global = GlobalArgs::parse(&api_args(json!({}))).unwrap();
        let pve = Pve {
            host,
            settings: &global.transport,
            task_timeout_ms: 60_000,
            poll_cap_ms: 1000,
            request_timeout_ms: 30_000,
            scrub: &crate::scrub::Scrubber::default(),
            budget: &crate::poll::WaitBudget::new(60_000),
            shared: &crate::watch::Shared::default(),
        };
        let at = Located {
            vmid: 100,
            node: "pve1".into(),
        };
        let mut seen = parse(&json!({"status": "stopped"})).unwrap();
        let (mut at_ms, mut after) = (0.0, 0);
        let result = block_on(settle(
            pve,
            GuestKind::Qemu,
            &at,
            budget_ms,
            &|s| s.status == "running",
            Seen {
                status: &mut seen,
                at_ms: &mut at_ms,
                after: &mut after,
                mutations: 0,
                unreadable: None,
            },
        ));
        (result, seen)
    }

    #[test]
    fn returns_once_the_target_is_seen_and_polls_fast_at_first() {
        let host = ScriptedHost::new();
        host.on(
            ROUTE,
            [
                Answer::Data(json!({"status": "stopped"})),
                Answer::Data(json!({"status": "running", "qmpstatus": "running"})),
            ],
        );
        let (result, seen) = wait(&host, 10_000);
        assert_eq!(result, Ok(()));
        assert_eq!(seen.status, "running");
        assert!(host.elapsed_ms() <= 100.0, "{}", host.elapsed_ms());
    }

    #[test]
    fn a_state_that_never_comes_fails_at_the_budget_keeping_the_last_status() {
        let host = ScriptedHost::new();
        host.data(
            ROUTE,
            json!({"status": "stopped", "ha": {"managed": 1, "state": "started"}}),
        );
        let (result, seen) = wait(&host, 5_000);
        assert_eq!(result, Err("not within 5s".to_string()));
        assert_eq!(
            describe(&seen),
            "status stopped, HA-managed (HA state started)"
        );
        // The last read went out one read's time before the end, with time to answer.
        let waited = host.elapsed_ms();
        assert!((5_000.0 - ANSWER_MS..5_000.0).contains(&waited), "{waited}");
    }

    #[test]
    fn a_lock_is_not_yet_even_when_the_state_is_reached() {
        let host = ScriptedHost::new();
        host.on(
            ROUTE,
            [
                Answer::Data(json!({"status": "running", "lock": "clone"})),
                Answer::Data(json!({"status": "running"})),
            ],
        );
        let (result, seen) = wait(&host, 10_000);
        assert_eq!(result, Ok(()));
        assert_eq!(seen.lock, None);
        assert_eq!(host.routes_called().len(), 2);
    }

    #[test]
    fn a_lock_that_never_clears_fails_at_the_budget_naming_it() {
        let host = ScriptedHost::new();
        host.data(ROUTE, json!({"status": "running", "lock": "backup"}));
        let (result, seen) = wait(&host, 5_000);
        let why = result.unwrap_err();
        assert!(
            why.starts_with("not within 5s (still locked: backup"),
            "{why}"
        );
        assert_eq!(describe(&seen), "status running, lock backup");
    }

    fn infos(host: &ScriptedHost) -> Vec<String> {
        let logs = host.logs.borrow();
        let info = logs
            .iter()
            .filter(|(l, _)| *l == crate::host::LogLevel::Info);
        info.map(|(_, m)| m.clone()).collect()
    }

    #[test]
    fn a_long_lock_wait_says_what_it_waits_out_after_5_s_then_every_15_s() {
        let host = ScriptedHost::new();
        host.data(ROUTE, json!({"status": "running", "lock": "backup"}));
        let (result, _) = wait(&host, 40_000);
        assert!(result.is_err());
        let lines = infos(&host);
        assert_eq!(lines.len(), 3, "at ~5 s, ~20 s, ~35 s: {lines:?}");
        assert!(
            lines[0].starts_with(
                "waiting for VM 100 on node pve1 — its backup lock to be released (now: status running, lock backup) — 5 s so far"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains("— 2"), "{}", lines[1]);
    }

    #[test]
    fn a_short_wait_logs_no_progress() {
        let host = ScriptedHost::new();
        host.data(ROUTE, json!({"status": "stopped"}));
        let (result, _) = wait(&host, 4_000);
        assert!(result.is_err());
        assert!(infos(&host).is_empty(), "{:?}", infos(&host));
    }

    #[test]
    fn a_zero_budget_read_is_given_one_reads_time_to_answer() {
        let host = ScriptedHost::new();
        let running = Answer::Data(json!({"status": "running"}));
        host.on(ROUTE, [Answer::Slow(300, Box::new(running))]);
        assert_eq!(wait(&host, 0).0, Ok(()));
        assert_eq!(host.requests.borrow()[0].timeout_ms, ANSWER_MS as u64);
    }

    #[test]
    fn a_wait_that_runs_out_names_what_its_last_read_saw() {
        // Each answer takes 900 ms and names its read (lock l1, l2, …): the last read of the
        // 5 s wait is answered too, and its lock is the one the failure names.
        let host = ScriptedHost::new();
        let answers = (1..=20).map(|n| {
            let locked = json!({"status": "running", "lock": format!("l{n}")});
            Answer::Slow(900, Box::new(Answer::Data(locked)))
        });
        host.on(ROUTE, answers);
        let (result, seen) = wait(&host, 5_000);
        let last = format!("l{}", host.requests.borrow().len());
        assert_eq!(seen.lock.as_deref(), Some(last.as_str()));
        let why = result.unwrap_err();
        assert!(
            why.starts_with(&format!("not within 5s (still locked: {last} ")),
            "{why}"
        );
        assert!(host.elapsed_ms() <= 5_000.0, "{}", host.elapsed_ms());
    }

    #[test]
    fn a_last_read_that_gets_no_answer_says_so() {
        let host = ScriptedHost::new();
        let hung = Answer::Slow(60_000, Box::new(Answer::Data(json!({"status": "running"}))));
        host.on(ROUTE, [hung]);
        let why = wait(&host, 2_000).0.unwrap_err();
        assert!(
            why.starts_with("not within 2s; its last read was not answered (")
                && why.contains("cut at the wait's end, after 2000 ms"),
            "{why}"
        );
    }

    #[test]
    fn a_zero_budget_still_reads_once() {
        let host = ScriptedHost::new();
        host.data(ROUTE, json!({"status": "running"}));
        assert_eq!(wait(&host, 0).0, Ok(()));
    }

    #[test]
    fn an_unreadable_state_fails_with_pves_words() {
        let host = ScriptedHost::new();
        host.on(
            ROUTE,
            [Answer::Error(
                403,
                "Permission check failed (/vms/100, VM.Audit)".into(),
            )],
        );
        let (result, _) = wait(&host, 5_000);
        assert!(result.unwrap_err().contains("Permission check failed"));
    }
}
