//! What a mutating method saw on its way — the guest's last observed state, the tasks it followed
//! and their warnings — and how that becomes the `vm-<vmid>` record, written before any verdict.

use super::gates::Gate;
use super::identity::Identity;
use super::locate::{absent_message, refused, Found, Located, Placing};
pub use super::observe::Look;
use super::observe::{read_guest, record_for};
use super::record::GuestRecord;
use super::reference::GuestRef;
use super::seen::{Changes, Marks, Reading};
use super::settle::{
    busy_lock, describe, lock_advice, lock_of, locked_advice, settle, status_of, status_request,
    Seen, HIBERNATED,
};
use crate::client::{shaped, Pve};
use crate::explain::{could_not_args, mutation_failed};
use crate::host::{Host, LogLevel};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::flex::split_tags;
use crate::pve::request::PveRequest;
use crate::pve::responses::GuestStatus;
use crate::pve::upid::Upid;
use crate::record_json::{list, put};
use crate::run::{write_value, Run};
use crate::task::{follow_task, log_ref_of, upid_of, TaskEnd, TaskTrouble};
use serde_json::{Map, Value};
use std::fmt;
use std::future::Future;

/// The tasks a run followed: their warnings (kept in the record) and the last UPID — and what is
/// known of the run's mutations: when the last one was sent, and whether its outcome is unknown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskTrail {
    pub warnings: Vec<String>,
    pub last_task: Option<String>,
    /// Where the last followed task's log is kept when it did not end plainly `OK`: a file
    /// output's name, or (no file stored) a failed task's tail ([`log_ref_of`]).
    pub last_task_log: (Option<String>, Vec<String>),
    /// How many mutations this run has sent.
    pub mutations_sent: u32,
    /// Whether PVE may or may not have carried out a mutation of this run: its answer was lost or
    /// unreadable, or its task's end was not observed.
    pub outcome_unknown: bool,
}

impl TaskTrail {
    /// What the run knows of its changes so far, for a record's marks.
    pub fn changes(&self) -> Changes {
        Changes {
            sent: self.mutations_sent,
            outcome_unknown: self.outcome_unknown,
        }
    }

    /// Notes that a mutation is being sent.
    pub fn sending(&mut self) {
        self.mutations_sent += 1;
    }

    /// Notes how a mutation's call ended: a lost or unreadable answer leaves its outcome unknown.
    pub fn answered<T>(&mut self, result: &Result<T, PveError>) {
        if result.as_ref().is_err_and(PveError::outcome_unknown) {
            self.outcome_unknown = true;
        }
    }

    /// The answer to a task-creating request (sent once, never re-sent, after
    /// [`TaskTrail::sending`]): its task. `Err` when PVE refused it — no task started — or when
    /// its answer was lost or unreadable: then the task may run, and the message says so. Plain:
    /// each course sends the request from its own await (issue 32).
    pub fn accepted(
        &mut self,
        answer: Result<Value, PveError>,
        request: &PveRequest,
        action: fmt::Arguments<'_>,
    ) -> Result<Upid, String> {
        self.answered(&answer);
        let error = match answer.map(|data| upid_of(&data, &request.label())) {
            Ok(Ok(upid)) => {
                self.last_task = Some(upid.to_string());
                return Ok(upid);
            }
            // PVE accepted the request (HTTP 200) but the task id is unreadable: a task may be
            // running (an unreadable answer's outcome is unknown: `mutation_failed` says so).
            Ok(Err(f)) => {
                self.outcome_unknown = true;
                PveError::malformed(&f.0)
            }
            Err(e) => e,
        };
        // What to check, written for a refusal or a lost answer only (issue 32).
        let (of, node) = match request.segments.as_slice() {
            [first, node, ..] if first == "nodes" => ("node ", node.as_str()),
            _ => ("the node", ""),
        };
        let check = format!("the guest's state (run lookup) and the task list of {of}{node}");
        Err(mutation_failed(action, &error, &check).0)
    }

    /// Keeps what a task followed to its end ([`follow_task`]) left: `WARNINGS: n` counts as
    /// success and its warnings are kept. Plain: each course awaits `follow_task` itself, so no
    /// wrapper's state machine sits between (issue 32).
    pub fn followed(&mut self, followed: Result<TaskEnd, TaskTrouble>) -> Result<(), String> {
        self.followed_outcome(followed)
            .map_err(|trouble| trouble.into_failure().0)
    }

    /// [`TaskTrail::followed`], telling a failed task from one whose end was not observed.
    pub fn followed_outcome(
        &mut self,
        followed: Result<TaskEnd, TaskTrouble>,
    ) -> Result<(), TaskTrouble> {
        self.last_task_log = log_ref_of(&followed);
        if let Err(TaskTrouble::Unknown(_)) = followed {
            self.outcome_unknown = true;
        }
        self.warnings.extend(followed?.warnings);
        Ok(())
    }

    /// Sends a task-creating request and follows its task (kept as `last_task`; none when `may_skip`
    /// and PVE answered a bare `OK`: it started nothing — vzdump skipping the guest — so nothing
    /// changed). `Err` when PVE did not take it, or its task did not end well — unless `kept` takes
    /// how it ended (shutdown's graceful attempt: the guest's state decides). One future for every
    /// course's task (issue 32). `action` names it in a failure, and is written only then.
    pub async fn run<H: Host>(
        &mut self,
        pve: &Pve<'_, H>,
        request: &PveRequest,
        action: fmt::Arguments<'_>,
        kept: Option<&mut Result<(), TaskTrouble>>,
        may_skip: bool,
    ) -> Result<(), String> {
        self.sending();
        let answer = pve.call(request).await;
        if may_skip
            && answer
                .as_ref()
                .is_ok_and(|data| data.as_str() == Some("OK"))
        {
            self.mutations_sent -= 1;
            return Ok(());
        }
        let upid = self.accepted(answer, request, action)?;
        let followed = follow_task(pve, &upid).await;
        let followed = self.followed_outcome(followed);
        match kept {
            Some(kept) => *kept = followed,
            // The task's own words name it by UPID only: say which action it was.
            None => {
                followed.map_err(|trouble| format!("{action}: {}", trouble.into_failure().0))?
            }
        }
        Ok(())
    }
}

/// A guest that was found, and everything seen of it since.
#[derive(Debug, Clone)]
pub struct Evidence {
    pub at: Located,
    pub identity: Identity,
    /// When `identity` was read from the guest's config (ISO time): at the sighting, or carried
    /// from the stored record with its own time; `None` when it is not known.
    pub identity_at: Option<String>,
    /// The guest's config as read with its status when it was found.
    pub config: Map<String, Value>,
    /// The last `status/current` read: the record's observed state.
    pub status: GuestStatus,
    /// When (host clock, ms) `status` was read.
    pub observed_at: f64,
    /// How many of this run's mutations had been sent when `status` was read.
    pub observed_after: u32,
    pub trail: TaskTrail,
    pub ipv4: Option<String>,
    /// Whether the last attempt to read the state failed (then a failure is not followed by one
    /// more read of it: the read had its retries).
    pub unreadable: bool,
}

/// What a guest reference led to.
#[derive(Debug)]
pub enum Sighting {
    Present(Box<Evidence>),
    /// Confirmed absent on every node.
    Absent(u32),
}

/// Finds the guest and reads its state and identity. A guest that migrated between the cluster
/// listing and the read is looked up once more.
pub fn sight<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    target: &'a GuestRef,
) -> impl Future<Output = Result<Sighting, Failure>> + use<'a, 'r, H> {
    // Its future is sight_with's: no wrapper of its own (issue 32).
    sight_with(run, target, Look::WithConfig)
}

/// [`sight`], reading as much as `look` says.
pub async fn sight_with<H: Host>(
    run: &Run<'_, H>,
    target: &GuestRef,
    look: Look,
) -> Result<Sighting, Failure> {
    // Read where it lives (`locate::send_where_it_lives`'s steps, from this course's own awaits: its
    // read is several requests). Acting needs no config: its identity is carried from the stored
    // record (see `read_guest`).
    // Each ending said where it is met: the read is not moved through an enum of its endings on
    // its way to the evidence (issue 32).
    let mut placing = Placing::new(target);
    let (at, (status, config, identity, identity_at)) = loop {
        let at = match placing.next(run, target).await? {
            Found::Absent { vmid } => return Ok(Sighting::Absent(vmid)),
            Found::Present(at) => at,
        };
        match read_guest(run, &at, look).await {
            Ok(value) => break (at, value),
            Err(e) if placing.may_retry(&e) => {}
            Err(error) => return Err(refused(run.kind, "the state", &at, &error)),
        }
    };
    Ok(Sighting::Present(Box::new(Evidence {
        at,
        identity,
        identity_at,
        config,
        status,
        observed_at: run.host.now_ms(),
        observed_after: 0,
        trail: TaskTrail::default(),
        ipv4: None,
        unreadable: false,
    })))
}

impl Evidence {
    /// When `status` was read, relative to the run's changes.
    pub fn reading(&self) -> Reading {
        Reading::at(self.observed_at, self.observed_after)
    }

    /// Keeps a status just read on `at` as the observed state (read now, after every change sent).
    pub fn saw<H: Host>(&mut self, run: &Run<'_, H>, at: Located, status: GuestStatus) {
        self.at = at;
        self.status = status;
        self.observed_at = run.host.now_ms();
        self.observed_after = self.trail.mutations_sent;
    }

    /// Reads the guest's state again into the evidence.
    pub async fn refresh<H: Host>(&mut self, run: &Run<'_, H>) -> Result<(), String> {
        let request = status_request(run.kind, &self.at, false);
        let answer = run.pve().call(&request).await;
        let read = status_of(&request, answer);
        self.unreadable = read.is_err();
        let status =
            read.map_err(|e| could_not_args(format_args!("read back {}", self.label(run)), &e).0)?;
        self.saw(run, self.at.clone(), status);
        Ok(())
    }

    /// After a failed step, the state the record will hold is read again when it predates the
    /// run's last change (a lock or a power state a failed task left shows in the record) — once,
    /// and only while the budget lasts. What cannot be read keeps the before-the-change marks.
    pub async fn reread_after_failure<H: Host>(&mut self, run: &Run<'_, H>) {
        let stale = self.reading().predates(self.trail.changes());
        if !stale || self.unreadable || !has_budget_left(run) {
            return;
        }
        // One attempt: a read that failed on the way has had its retries.
        let request = status_request(run.kind, &self.at, true);
        let answer = run.pve().call(&request).await;
        match status_of(&request, answer) {
            Ok(status) => self.saw(run, self.at.clone(), status),
            Err(e) => run.host.log_args(
                LogLevel::Debug,
                format_args!("the state could not be read again after the failure ({e}): the record keeps the earlier reading, marked as such"),
            ),
        }
    }

    /// A read of the guest's config (`request`, answered `read`): its keys, or what could not be
    /// read, naming the guest. Plain, for every course that reads a config from its own await
    /// (issue 32).
    pub fn config_read<H: Host>(
        &self,
        run: &Run<'_, H>,
        request: &PveRequest,
        read: Result<Value, PveError>,
    ) -> Result<Map<String, Value>, String> {
        shaped(request, "a guest config", read).map_err(|e| {
            could_not_args(format_args!("read the config of {}", self.label(run)), &e).0
        })
    }

    /// Reads the guest's config again into the evidence (and its identity with it).
    pub async fn reread_config<H: Host>(&mut self, run: &Run<'_, H>) -> Result<(), String> {
        let request = endpoints::guest_config(&self.at.node, run.kind, self.at.vmid);
        let answer = run.pve().call(&request).await;
        self.config = self.config_read(run, &request, answer)?;
        self.identity = Identity::from_config(&self.config);
        self.identity_at = Some(run.now_iso());
        Ok(())
    }

    /// Applies a safety gate to the guest's tags; a gate overridden by `force` is logged and kept.
    pub fn pass_gate<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        gate: &Gate,
        force: bool,
    ) -> Result<(), String> {
        let tags = self
            .status
            .tags
            .as_deref()
            .map(split_tags)
            .unwrap_or_default();
        if let Some(overridden) = gate.check(run.kind.noun(), self.at.vmid, &tags, force)? {
            self.warn(run, overridden);
        }
        Ok(())
    }

    /// Logs a warning and keeps it in the record.
    pub fn warn<H: Host>(&mut self, run: &Run<'_, H>, message: String) {
        run.warn(&message);
        self.trail.warnings.push(message);
    }

    /// `VM 100 on node pve1`, for messages.
    pub fn label<H: Host>(&self, run: &Run<'_, H>) -> String {
        format!(
            "{} {} on node {}",
            run.kind.noun(),
            self.at.vmid,
            self.at.node
        )
    }

    /// When the identity was read, for a record holding it (`identityObservedAt`).
    pub fn identity_seen_at(&self) -> Option<String> {
        self.identity_at
            .clone()
            .filter(|_| !self.identity.is_empty())
    }

    /// The record of the guest as last read ([`record_for`]), before [`Evidence::record_of`]. A
    /// course awaits it itself and completes the record in plain code: no wrapper's state machine
    /// (issue 32).
    pub fn observed<'a, 'r, H: Host>(
        &'a self,
        run: &'a Run<'r, H>,
    ) -> impl Future<Output = GuestRecord> + use<'a, 'r, H> {
        record_for(run, &self.at, &self.status, self.identity.clone())
    }

    /// `record` ([`Evidence::observed`]) with what the run's tasks left behind. It never presents a
    /// state read before this run's last mutation as current: such a record says when its state was
    /// read (`observedAt`) and that it predates the mutation (`observedBeforeMutation`); after a
    /// mutation whose outcome is unknown it says `outcome: "unknown"`.
    pub fn record_of(&self, mut record: GuestRecord) -> GuestRecord {
        record.identity_observed_at = self.identity_seen_at();
        let fields = &mut record.fields;
        list(fields, "warnings", &self.trail.warnings);
        put(fields, "ipv4", self.ipv4.as_deref());
        put(fields, "lastTask", self.trail.last_task.as_deref());
        let (log, tail) = &self.trail.last_task_log;
        put(fields, "lastTaskLog", log.as_deref());
        list(fields, "lastTaskLogTail", tail);
        Marks::of(self.reading(), self.trail.changes()).put_into(fields);
        record
    }

    /// The outcome: the observed-state record first, then the verdict.
    pub fn outcome<'a, 'r, H: Host>(
        &'a mut self,
        run: &'a Run<'r, H>,
        verdict: Result<String, String>,
    ) -> impl Future<Output = Outcome> + use<'a, 'r, H> {
        // Its future is outcome_with's: no wrapper of its own (issue 32).
        self.outcome_with(run, verdict, None)
    }

    /// [`Evidence::outcome`] of a method whose record holds more than the guest's state (the
    /// changes it left pending): `extend` adds that to the record.
    /// The evidence itself is read again after a failure (no copy of it held: issue 32).
    pub async fn outcome_with<H: Host>(
        &mut self,
        run: &Run<'_, H>,
        verdict: Result<String, String>,
        extend: Option<&mut dyn FnMut(&mut GuestRecord)>,
    ) -> Outcome {
        let ev = self;
        if verdict.is_err() {
            ev.reread_after_failure(run).await;
        }
        let record = ev.observed(run).await;
        let mut record = ev.record_of(record);
        if let Some(extend) = extend {
            extend(&mut record);
        }
        let writes = vec![write_value(
            run.guest_spec(),
            run.guest_instance(ev.at.vmid),
            record.json(),
        )];
        match verdict {
            Ok(summary) => Outcome::succeeded(writes, summary),
            Err(message) => Outcome::failed(writes, message),
        }
    }
}

/// Whether the method's one budget has time left (a budget not yet started has all of it).
pub fn has_budget_left<H: Host>(run: &Run<'_, H>) -> bool {
    run.pve().budget.remaining_ms(run.host.now_ms()) > 0
}

/// Finds a guest a method must act on ([`Look::ToAct`]); a confirmed absence ends the run as a
/// failure (recorded as `absent`) saying there is nothing to `verb`.
pub fn sight_present<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    target: &'a GuestRef,
    verb: &'a str,
) -> impl Future<Output = Result<Box<Evidence>, Outcome>> + use<'a, 'r, H> {
    sight_for(
        run,
        target,
        Look::ToAct,
        Absent::Words(NOTHING_TO, verb),
        false,
    )
}

/// Finds a guest a method changes ([`sight_present`]) and waits out a lock on it ([`unlocked`]).
pub fn sight_to_change<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    target: &'a GuestRef,
    verb: &'a str,
) -> impl Future<Output = Result<Box<Evidence>, Outcome>> + use<'a, 'r, H> {
    sight_for(
        run,
        target,
        Look::ToAct,
        Absent::Words(NOTHING_TO, verb),
        true,
    )
}

/// [`sight_or_absent`] reading as much as `look` says, for a method that changes the guest (its
/// config, its disks, a template): a lock on it is waited out ([`unlocked`]). One sighting for the
/// methods of one course (`methods::change_course`, issue 32). Its absence is said as
/// [`absent_message`] with `words`, then `verb`, after it.
pub fn sight_look_to_change<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    target: &'a GuestRef,
    look: Look,
    (words, verb): (&'a str, &'a str),
) -> impl Future<Output = Result<Box<Evidence>, Outcome>> + use<'a, 'r, H> {
    sight_for(run, target, look, Absent::Words(words, verb), true)
}

/// Finds a guest a method must act on; a confirmed absence ends the run as a failure (recorded as
/// `absent`) with the message `absent` says. `change`: a lock on it is waited out ([`unlocked`]).
pub fn sight_or_absent<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    target: &'a GuestRef,
    absent: Absent<'a>,
    change: bool,
) -> impl Future<Output = Result<Box<Evidence>, Outcome>> + use<'a, 'r, H> {
    sight_for(run, target, Look::WithConfig, absent, change)
}

/// `… does not exist on any node …: there is nothing to <verb>`.
pub const NOTHING_TO: &str = ": there is nothing to ";

/// Finds a guest a method removes ([`sight_to_change`]); a confirmed absence is the success the
/// method wants, its summary [`absent_message`] with `words` after it (recorded as `absent`).
pub fn sight_to_remove<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    target: &'a GuestRef,
    words: &'a str,
) -> impl Future<Output = Result<Box<Evidence>, Outcome>> + use<'a, 'r, H> {
    sight_for(run, target, Look::ToAct, Absent::Gone(words), true)
}

/// What a method says of a guest confirmed absent.
pub enum Absent<'a> {
    /// Nothing is wrong: the method wanted it gone; [`absent_message`] with these words after it.
    Gone(&'a str),
    /// [`absent_message`] with these two words after it: plain words, not a closure handed over
    /// per method (issue 32).
    Words(&'a str, &'a str),
    /// The method's own words for the VMID.
    Said(&'a dyn Fn(u32) -> String),
}

/// The one course of the sightings above (one state machine for all, issue 32): the guest
/// sighted as `look` says, its absence the failure `absent` words, and — for a change — a lock
/// on it waited out.
async fn sight_for<H: Host>(
    run: &Run<'_, H>,
    target: &GuestRef,
    look: Look,
    absent: Absent<'_>,
    change: bool,
) -> Result<Box<Evidence>, Outcome> {
    let ev = present_or_absent(run, sight_with(run, target, look).await, &absent)?;
    match change {
        true => unlocked(run, ev).await,
        false => Ok(ev),
    }
}

/// Waits out a lock on a sighted guest the method is about to change ([`lock_to_wait`]); one that
/// outlasts the budget ends the run as a failure recording the state last observed. A config read
/// while the lock stood is read again: the operation holding it may have changed it.
pub async fn unlocked<H: Host>(
    run: &Run<'_, H>,
    mut ev: Box<Evidence>,
) -> Result<Box<Evidence>, Outcome> {
    // The lock waited out by the one course of every lock wait ([`lock_waited`], issue 32).
    let waited = match lock_to_wait(run, &ev) {
        Ok(Some(lock)) => lock_waited(run, &mut ev, Wait::Before(&lock)).await,
        Ok(None) => Ok(()),
        Err(message) => Err(message),
    };
    match waited {
        Ok(()) => Ok(ev),
        Err(message) => Err(ev.outcome(run, Err(message)).await),
    }
}

fn present_or_absent<H: Host>(
    run: &Run<'_, H>,
    sighting: Result<Sighting, Failure>,
    absent: &Absent,
) -> Result<Box<Evidence>, Outcome> {
    match sighting {
        Ok(Sighting::Present(ev)) => Ok(ev),
        Ok(Sighting::Absent(vmid)) => {
            let verdict = match absent {
                Absent::Gone(words) => Ok(absent_message(run.kind, vmid, words)),
                Absent::Words(rest, verb) => {
                    let mut message = absent_message(run.kind, vmid, rest);
                    message.push_str(verb);
                    Err(message)
                }
                Absent::Said(said) => Err(said(vmid)),
            };
            Err(absent_outcome(run, vmid, verdict))
        }
        Err(failure) => Err(failure.into()),
    }
}

/// The outcome for a guest confirmed absent: its `absent` record, then the verdict.
pub fn absent_outcome<H: Host>(
    run: &Run<'_, H>,
    vmid: u32,
    verdict: Result<String, String>,
) -> Outcome {
    let record = GuestRecord::absent(vmid, run.method, run.now_iso());
    let writes = vec![write_value(
        run.guest_spec(),
        run.guest_instance(vmid),
        record.json(),
    )];
    match verdict {
        Ok(summary) => Outcome::succeeded(writes, summary),
        Err(message) => Outcome::failed(writes, message),
    }
}

/// The methods PVE lets act on a VM suspended to disk (lock [`HIBERNATED`]); every other change
/// meets `check_lock`. qemu-server `PVE/QemuServer.pm` vm_start skips it for that lock (and
/// resumes), destroy_vm skips it, and _do_vm_stop (stop, shutdown) returns before it when QEMU is
/// not running; `PVE/API2/Qemu.pm` vm_resume starts such a VM, vm_suspend refuses it as not
/// running (its own refusal, `Change::refusal`).
const HIBERNATED_ALLOWS: [&str; 6] = ["start", "resume", "stop", "shutdown", "delete", "suspend"];

/// A lock PVE holds on a guest (a backup, a migration, a snapshot being taken…) makes PVE refuse
/// changes to it (PVE::AbstractConfig `check_lock`): a state that is not yet a result. A method
/// that changes the guest waits it out within what is left of its one budget (`taskTimeoutSec`);
/// a lock that outlasts the budget fails the method, naming it, before anything is sent
/// ([`unlocked`]). The lock to wait out (`None`: none), or why no wait ends it.
fn lock_to_wait<H: Host>(run: &Run<'_, H>, ev: &Evidence) -> Result<Option<String>, String> {
    // A VM suspended to disk stays locked until it is resumed: no wait ends that lock.
    if lock_of(&ev.status) == Some(HIBERNATED) && !HIBERNATED_ALLOWS.contains(&run.method) {
        return Err(format!(
            "{} is locked ({HIBERNATED}) and PVE refuses to change it (\"VM is locked ({HIBERNATED})\"): it is suspended to disk: resume it (resume, or start with resume: true) first; nothing was sent",
            ev.label(run)
        ));
    }
    Ok(busy_lock(&ev.status).map(str::to_owned))
}

/// After a change that ended OK (`done` says how), the guest's last status must show no lock: one
/// still there means the task's work (or another operation's) has not finished — qemu-server's
/// create_vm and clone_vm and pve-container's create drop theirs only when they write the final
/// config (PVE/API2/Qemu.pm, PVE/API2/LXC.pm). Not yet, within what is left of the method's one
/// budget; a lock that outlasts it fails the method naming it. A config read while it stood is
/// read again.
pub fn unlocked_after<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    ev: &'a mut Evidence,
    done: &'a str,
) -> impl Future<Output = Result<(), String>> + use<'a, 'r, H> {
    lock_waited(run, ev, Wait::After(done))
}

/// After a task that ended OK (`done` says how), the guest's status read again and held to
/// [`unlocked_after`]. A status that cannot be read fails the course, or (`unread_warns`: the
/// change was already verified another way) stays a warning and the record keeps the earlier
/// reading. For the methods that end so (resizeDisk, moveDisk, convertToTemplate).
pub fn settled_after<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    ev: &'a mut Evidence,
    done: &'a str,
    unread_warns: bool,
) -> impl Future<Output = Result<(), String>> + use<'a, 'r, H> {
    lock_waited(run, ev, Wait::Settled { done, unread_warns })
}

/// A lock a course found on a guest, waited out within what is left of the method's one budget;
/// then (`reread`) its config read again, as an unfinished operation may have changed it. `Err`
/// says why in the wait's own words: the course says what it was waiting for.
pub fn lock_released<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    ev: &'a mut Evidence,
    reread: bool,
) -> impl Future<Output = Result<(), String>> + use<'a, 'r, H> {
    lock_waited(run, ev, Wait::Held { reread })
}

/// Which lock wait [`lock_waited`] is.
enum Wait<'a> {
    /// Before a change, of this lock ([`unlocked`]).
    Before(&'a str),
    /// After a change that ended OK, said by `done` ([`unlocked_after`]).
    After(&'a str),
    /// [`Wait::After`] once the status is read again ([`settled_after`]).
    Settled { done: &'a str, unread_warns: bool },
    /// Of a lock the course found, its config read again when `reread` ([`lock_released`]).
    Held { reread: bool },
}

/// The one course of every lock wait ([`unlocked`], [`unlocked_after`], [`settled_after`],
/// [`lock_released`]): one state machine holds the reads (issue 32).
async fn lock_waited<H: Host>(
    run: &Run<'_, H>,
    ev: &mut Evidence,
    wait: Wait<'_>,
) -> Result<(), String> {
    if let Wait::Settled { unread_warns, .. } = wait {
        match ev.refresh(run).await {
            Ok(()) => {}
            Err(e) if unread_warns => {
                ev.warn(run, e);
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
    // After a change, a guest without any lock is done; before one, only a busy lock is waited; a
    // lock a course found is waited out.
    if matches!(wait, Wait::After(_) | Wait::Settled { .. }) && lock_of(&ev.status).is_none() {
        return Ok(());
    }
    let waited = settle_evidence(run, ev, run.wait_budget_ms(), &|_| true).await;
    waited.map_err(|why| lock_wait_failed(run, ev, &wait, why))?;
    let reread = match wait {
        Wait::Held { reread } => reread,
        _ => !ev.config.is_empty(),
    };
    match reread {
        false => Ok(()),
        true => ev.reread_config(run).await,
    }
}

/// Why a lock wait ([`lock_waited`]) ran out: before a change, with what to do about the lock;
/// after one, after what was done.
fn lock_wait_failed<H: Host>(run: &Run<'_, H>, ev: &Evidence, wait: &Wait, why: String) -> String {
    match *wait {
        Wait::Before(lock) => {
            let why = unlock_failed(run, ev, "its lock released", why);
            format!("{why} — {}", locked_advice(run.kind, lock, "change"))
        }
        Wait::After(done) | Wait::Settled { done, .. } => {
            let why = locked_out(run, ev, "its lock released", why);
            format!("{done}, but {why}")
        }
        Wait::Held { .. } => why,
    }
}

/// Whether a read within a wait (by `deadline_ms`) was cut short by the wait's end: nothing was
/// seen, and the wait is over. Plain, for the courses that poll a read themselves (issue 32).
pub fn cut_at_the_end<H: Host>(
    run: &Run<'_, H>,
    read: &Result<Value, PveError>,
    deadline_ms: Option<f64>,
) -> bool {
    read.as_ref().is_err_and(|e| cut_short(run, e, deadline_ms))
}

/// [`cut_at_the_end`] of the error a read within a wait ended with.
pub fn cut_short<H: Host>(run: &Run<'_, H>, e: &PveError, deadline_ms: Option<f64>) -> bool {
    e.kind == ErrorKind::Timeout && deadline_ms.is_some_and(|d| run.host.now_ms() >= d)
}

/// [`settle`] on the guest of `ev`, keeping each status it reads in `ev`: the observed state, when
/// it was read, and after how many of the run's mutations. Its future is settle's (issue 32).
pub fn settle_evidence<'a, 'r, H: Host>(
    run: &'a Run<'r, H>,
    ev: &'a mut Evidence,
    budget_ms: u64,
    reached: &'a dyn Fn(&GuestStatus) -> bool,
) -> impl Future<Output = Result<(), String>> + use<'a, 'r, H> {
    let seen = Seen {
        status: &mut ev.status,
        at_ms: &mut ev.observed_at,
        after: &mut ev.observed_after,
        mutations: ev.trail.mutations_sent,
        unreadable: Some(&mut ev.unreadable),
    };
    settle(run.pve(), run.kind, &ev.at, budget_ms, reached, seen)
}

/// A wait until `status/current` shows no lock (and the state a task's change implies) that ran
/// out, after a task: a lock left behind is a transitional state, not a result (`settle` holds out
/// for no lock by itself). What [`unlock_failed`] says, and what to check when a lock was last
/// seen. Plain: each course awaits [`settle_evidence`] itself, within what is left of the method's
/// one budget (`run.wait_budget_ms()`), so no wrapper's state machine sits between (issue 32).
pub fn locked_out<H: Host>(run: &Run<'_, H>, ev: &Evidence, wanted: &str, why: String) -> String {
    let why = unlock_failed(run, ev, wanted, why);
    match lock_of(&ev.status) {
        Some(_) => format!("{why} — {}", lock_advice(run.kind, &ev.at.node)),
        None => why,
    }
}

/// A wait for the guest unlocked that ran out, without advice: `{guest} did not show {wanted}:
/// {why}; last observed: …`.
fn unlock_failed<H: Host>(run: &Run<'_, H>, ev: &Evidence, wanted: &str, why: String) -> String {
    format!(
        "{} did not show {wanted}: {why}; last observed: {}",
        ev.label(run),
        describe(&ev.status)
    )
}
