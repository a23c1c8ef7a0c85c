//! PVE tasks, one mechanism for every mutation: follow the UPID on the node that runs it until it
//! stops; `OK` and `WARNINGS: n` succeed (warnings kept), anything else fails with PVE's text.

use crate::client::{shaped, Pve};
use crate::explain::could_not_args;
use crate::host::{Host, HostError, LogLevel};
use crate::outcome::Failure;
use crate::poll::{Pacer, Stopped};
use crate::progress::Progress;
use crate::pve::endpoints;
use crate::pve::error::{ErrorKind, PveError};
use crate::pve::request::PveRequest;
use crate::pve::responses::{log_text, TaskLogLine, TaskStatus};
use crate::pve::upid::Upid;
use crate::quote::Joined;
use crate::watch::node_tasks::{own_read_due, ListStep, ListedTask, NodeTasks, Sighting};
use crate::watch::signal::first_of;
use serde_json::Value;
use std::cell::Cell;
use std::fmt::Write;
use std::future::Future;
use std::pin::Pin;

/// Right after dispatch PVE may not know the task yet ("no such task"): tolerated this long.
const NO_SUCH_TASK_GRACE_MS: f64 = 5_000.0;
/// A failed task's cause is its log's end: the last lines quoted (in the message and in what a
/// method records), at most this many…
pub const TAIL_LINES: usize = 10;
/// …and at most this many bytes of text (a longer last line keeps its end).
pub const TAIL_BYTES: usize = 2048;
/// A task log is read in pages of this many lines (PVE's `limit`), up to this many pages: the
/// log's end is where a task says why it failed, and the first page may not reach it.
const LOG_PAGE_LINES: usize = 500;
const LOG_PAGES: usize = 20;
/// A log that did not end plainly `OK` is kept as a file output of this spec (the model's `files`)…
pub const LOG_FILE_SPEC: &str = "taskLog";
/// …of at most this many bytes: its end, where the cause is (and at most the lines read above).
pub const LOG_FILE_BYTES: usize = 1 << 20;

/// A task that ended successfully.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEnd {
    pub upid: Upid,
    /// `OK` or `WARNINGS: n`.
    pub exit_status: String,
    /// The task log's `WARN` lines (empty for `OK`).
    pub warnings: Vec<String>,
    /// The name of the file output holding its log ([`kept`]; `WARNINGS: n` only).
    pub log_file: Option<String>,
}

/// Reads a UPID out of a mutation's answer; `what` names the call in the error.
pub fn upid_of(data: &Value, what: &str) -> Result<Upid, Failure> {
    data.as_str().and_then(Upid::parse).ok_or_else(|| {
        Failure::new(format!(
            "{what} answered {data} where a task id (UPID) was expected",
            data = crate::quote::json(data)
        ))
    })
}

/// Why a followed task did not end successfully.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskTrouble {
    /// PVE reported the task's end with an error (its exit status).
    Failed(Box<TaskFailed>),
    /// The task's end was not observed: its status could not be read, it outlived
    /// `taskTimeoutSec`, or the run was aborted. It may still finish; its effect is unknown.
    Unknown(Failure),
}

/// A task PVE reports ended with an error.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskFailed {
    pub exit_status: String,
    /// The log's last lines ([`log_tail`]; already scrubbed like everything PVE answers).
    pub tail: Vec<String>,
    /// The name of the file output holding its log ([`kept`]), when the host stored one.
    pub log_file: Option<String>,
    /// The message: the task, its exit status, its log's tail, what to check.
    pub failure: Failure,
}

impl TaskFailed {
    /// Where a record points to its log: the file's name, or (a host that stores no files) the
    /// log's tail.
    pub fn log_ref(&self) -> (Option<String>, Vec<String>) {
        match &self.log_file {
            Some(file) => (Some(file.clone()), Vec::new()),
            None => (None, self.tail.clone()),
        }
    }
}

/// Where a record points to a followed task's log ([`TaskFailed::log_ref`]; an end with warnings:
/// its file; an unobserved end: nowhere).
pub fn log_ref_of(followed: &Result<TaskEnd, TaskTrouble>) -> (Option<String>, Vec<String>) {
    match followed {
        Ok(end) => (end.log_file.clone(), Vec::new()),
        Err(TaskTrouble::Failed(failed)) => failed.log_ref(),
        Err(TaskTrouble::Unknown(_)) => Default::default(),
    }
}

impl TaskTrouble {
    pub fn into_failure(self) -> Failure {
        match self {
            TaskTrouble::Failed(f) => f.failure,
            TaskTrouble::Unknown(f) => f,
        }
    }
}

/// Follows a task to its end within `taskTimeoutSec`.
pub async fn await_task<H: Host>(pve: &Pve<'_, H>, upid: &Upid) -> Result<TaskEnd, Failure> {
    follow_task(pve, upid)
        .await
        .map_err(TaskTrouble::into_failure)
}

/// Follows a task to its end within `taskTimeoutSec`, telling a failed task from an unobserved end.
///
/// Probes start fast and back off ([`Pacer`]). While other runs of the process follow tasks on the
/// same node, a probe is the node's one shared task-list read ([`NodeTasks`]), and a list read that
/// shows this task's end ends the wait early; otherwise — alone, the list unusable, this task not in
/// it, or when [`own_read_due`] — a probe reads this task's own status, and it has the last word.
pub async fn follow_task<H: Host>(pve: &Pve<'_, H>, upid: &Upid) -> Result<TaskEnd, TaskTrouble> {
    // The probe loop, in this function's own state machine (issue 32): the task's final status,
    // or why its end was not observed. Only its exit status is kept (not held across the log's
    // awaits).
    let TaskStatus { exitstatus, .. } = 'watch: {
        let started = pve.host.now_ms();
        // The method's one budget: what earlier waits spent is not given back.
        let mut pacer = Pacer::until(pve.budget.deadline(started), pve.poll_cap_ms);
        let following = pve.shared.follow_task(pve.settings, upid);
        let watcher = following.as_ref().map(|f| &*f.watcher);
        let mut read_own_at = started;
        // None yet: a budget spent before the first probe still ends with one read of the task.
        let mut last_probe_own = false;
        let mut progress = Progress::start(started);
        loop {
            // A task is a forked worker: none ends within a round trip, so even the first probe
            // waits.
            let stopped = match pacer.next_probe(pve.host.now_ms()) {
                Ok((due, own_pause)) => {
                    let pause = watcher.map_or(own_pause, |w| w.fleet_pause(own_pause));
                    let due = due - (own_pause - pause) as f64;
                    // What the run's own pace would have probed since its last probe is banked.
                    let since = pacer.probed_at().unwrap_or(started);
                    while let Some(ms) = pause_left(pve, due, watcher, upid) {
                        let mut ended = watcher.map(|watcher| watcher.ended(upid.as_str()));
                        let wake = ended.as_mut().map(|e| Pin::new(e) as Wake);
                        pause_until(pve, ms, wake).await;
                    }
                    if pve.host.aborted() {
                        break 'watch Err(stopped_waiting(pve, upid, Stopped::Aborted));
                    }
                    let now = pve.host.now_ms();
                    if let Some(watcher) = watcher {
                        watcher.credit((now - since) / own_pause.max(1) as f64);
                    }
                    pacer.probed(now);
                    // A long task says how far it got (its log, read at the progress cadence only).
                    // Sent from this loop's own await: no state machine of `tick_task`'s.
                    if let Some(request) = progress.task_log_due(pve.host.now_ms(), upid) {
                        let answer = pve.call(&request).await;
                        progress.heard(pve.host, upid, answer);
                    }
                    if let Some(ended) = watcher.and_then(|w| listed_end(w, upid)) {
                        break 'watch Ok(ended);
                    }
                    let verify =
                        pve.host.now_ms() >= own_read_due(read_own_at, pacer.last_probe_ms());
                    if let Some(watcher) = watcher.filter(|w| w.worth_reading() && !verify) {
                        // A list read sent within half a pause before this probe was due answers it
                        // too — but not one sent before the task was: it cannot show the task.
                        let fresh_since = (due - pause as f64 / 2.0).max(started);
                        // Makes sure a list read of the node sent at or after `fresh_since` (epoch
                        // ms) was published: waits for another run's read in flight, or sends one
                        // for everyone. `false` when no such read could be had (the list is
                        // unusable, the run was aborted, the budget ran out): this run reads its
                        // own task's status. In this loop's state machine, not a function's of its
                        // own (issue 32).
                        let node = &upid.node;
                        let fresh = 'list: loop {
                            let now = pve.host.now_ms();
                            let remaining = pve.budget.remaining_ms(now);
                            if pve.host.aborted() || remaining == 0 {
                                break 'list false;
                            }
                            // One await for both pauses: until a read in flight is published (or
                            // the budget is spent), or until a read may be sent.
                            let (pause, seen) = match watcher.next_step(fresh_since, now) {
                                ListStep::Fresh => break 'list true,
                                ListStep::Unusable => break 'list false,
                                ListStep::AwaitInFlight => {
                                    (remaining, Some(watcher.publications()))
                                }
                                ListStep::NotBefore(at) => ((at - now).ceil() as u64, None),
                                // Sent for every task followed there from this loop's own await;
                                // what it says is published by the plain `publish_list`.
                                ListStep::Send => {
                                    let asked = pve.host.now_ms();
                                    let (request, in_flight) = watcher.begin_read(node, asked);
                                    let left = Cell::new(asked);
                                    let note_left = |at| left.set(at);
                                    let answer = pve.call_noting(&request, &note_left).await;
                                    let answer =
                                        shaped::<Vec<ListedTask>>(&request, "a task list", answer);
                                    publish_list(pve, watcher, node, (asked, left.get()), answer);
                                    drop(in_flight);
                                    continue;
                                }
                            };
                            let mut published = seen.map(|seen| watcher.published_after(seen));
                            let wake = published.as_mut().map(|p| Pin::new(p) as Wake);
                            pause_until(pve, pause, wake).await;
                        };
                        if fresh {
                            if let Some(ended) = listed_end(watcher, upid) {
                                break 'watch Ok(ended);
                            }
                            if watcher.sighting(upid.as_str()) == Sighting::Running {
                                last_probe_own = false;
                                continue;
                            }
                        }
                    }
                    None
                }
                Err(stop) if last_probe_own => break 'watch Err(stopped_waiting(pve, upid, stop)),
                // The budget is spent on list reads only: the task's own status has the last word.
                Err(stop) => Some(stop),
            };
            read_own_at = pve.host.now_ms();
            last_probe_own = true;
            if let Some(watcher) = watcher {
                watcher.spend_read();
            }
            let request = endpoints::task_status(upid);
            let answer = pve.call(&request).await;
            match own_probe(pve, upid, started, &request, answer) {
                Probe::Ended(status) => break 'watch Ok(status),
                Probe::Running => {}
                Probe::Trouble(trouble) => break 'watch Err(trouble),
            }
            if let Some(stop) = stopped {
                break 'watch Err(stopped_waiting(pve, upid, stop));
            }
        }
    }?;
    let exit_status = exitstatus.unwrap_or_default();
    // Only a task that did not end plainly OK has a log worth reading: its warnings or its cause.
    let (log, log_file) = match exit_status.as_str() {
        "OK" => (Vec::new(), None),
        _ => {
            let log = read_log(pve, upid).await;
            // Kept from this course's own await: no state machine of a wrapper's.
            let mut file = None;
            if !log.is_empty() {
                let name = format!("tasklog-{}", upid.key());
                let text = log_file_text(&log);
                let stored = pve.host.write_file(LOG_FILE_SPEC, &name, &text).await;
                file = kept(pve, upid, stored);
            }
            (log, file)
        }
    };
    judge(pve, upid, exit_status, log, log_file).map_err(|f| TaskTrouble::Failed(Box::new(f)))
}

/// What the host said when asked to keep a task's log (not empty) as the file
/// `tasklog-<node>-<pid>-<starttime>` ([`log_file_text`]): the name it was stored under, or `None`
/// when the host stores no files or could not (logged: only the file is lost, never the verdict).
fn kept<H: Host>(
    pve: &Pve<'_, H>,
    upid: &Upid,
    stored: Result<Option<String>, HostError>,
) -> Option<String> {
    match stored {
        Ok(stored) => stored,
        Err(e) => {
            pve.host.log_args(
                LogLevel::Warning,
                format_args!(
                    "the log of task {upid} could not be kept as a file: {}",
                    e.message
                ),
            );
            None
        }
    }
}

/// A log as a file's text, one line each: its last lines within [`LOG_FILE_BYTES`], after a first
/// line saying how many earlier ones were left out.
pub fn log_file_text(log: &[String]) -> String {
    // A loop, not an iterator chain: smaller in the module (docs/performance.md).
    let (mut bytes, mut kept) = (0, 0);
    for line in log.iter().rev() {
        bytes += line.len() + 1;
        if bytes > LOG_FILE_BYTES {
            break;
        }
        kept += 1;
    }
    let skipped = log.len() - kept;
    let mut text = match skipped {
        0 => String::new(),
        n => format!("… {n} earlier lines left out (this file keeps the log's end)\n"),
    };
    for line in log.iter().skip(skipped) {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// Publishes what one list read of `node`, asked at `asked` and gone at `left`, said.
fn publish_list<H: Host>(
    pve: &Pve<'_, H>,
    watcher: &NodeTasks,
    node: &str,
    (asked, left): (f64, f64),
    answer: Result<Vec<ListedTask>, PveError>,
) {
    match answer {
        Ok(rows) => watcher.publish(&rows, asked, left, pve.host.now_ms()),
        // Our run was aborted: the list is fine, another run reads it next.
        Err(e) if e.kind == ErrorKind::Aborted => {}
        Err(e) => {
            watcher.give_up();
            pve.host.log_args(
                LogLevel::Warning,
                format_args!(
                    "the task list of node {node} could not be read ({e}): each run now reads its own task's status there"
                ),
            );
        }
    }
}

/// What one read of a task's own status said.
enum Probe {
    Ended(TaskStatus),
    Running,
    Trouble(TaskTrouble),
}

/// The answer to `GET …/tasks/{upid}/status`; "no such task" right after dispatch counts as still
/// running. Plain: the watch loop sends the read from its own await.
fn own_probe<H: Host>(
    pve: &Pve<'_, H>,
    upid: &Upid,
    started: f64,
    request: &PveRequest,
    answer: Result<Value, PveError>,
) -> Probe {
    match shaped::<TaskStatus>(request, "a task status", answer) {
        Ok(status) if status.status == "stopped" => Probe::Ended(status),
        Ok(_) => Probe::Running,
        Err(e)
            if e.kind == ErrorKind::NoSuchTask
                && pve.host.now_ms() - started < NO_SUCH_TASK_GRACE_MS =>
        {
            Probe::Running
        }
        Err(e) => Probe::Trouble(TaskTrouble::Unknown(unfollowable(upid, &e))),
    }
}

/// The end a shared list read already showed, as the task's status.
fn listed_end(watcher: &NodeTasks, upid: &Upid) -> Option<TaskStatus> {
    match watcher.sighting(upid.as_str()) {
        Sighting::Ended(exit) => Some(TaskStatus {
            status: "stopped".into(),
            exitstatus: Some(exit),
        }),
        _ => None,
    }
}

/// How long the wait until `due` still pauses: `None` once it is due, the run was aborted (the
/// host's sleep returns early then) or a shared list read shows the task's end. Plain: the watch
/// loop pauses from its own await, woken early only by this task's end ([`NodeTasks::ended`]: a
/// list read that shows other tasks' ends does not wake every run of a fleet).
fn pause_left<H: Host>(
    pve: &Pve<'_, H>,
    due: f64,
    watcher: Option<&NodeTasks>,
    upid: &Upid,
) -> Option<u64> {
    let now = pve.host.now_ms();
    if now >= due || pve.host.aborted() {
        return None;
    }
    if watcher.is_some_and(|watcher| listed_end(watcher, upid).is_some()) {
        return None;
    }
    Some((due - now).ceil() as u64)
}

/// What may end a pause early: a shared list read's news.
type Wake<'a> = Pin<&'a mut dyn Future<Output = ()>>;

/// Sleeps `ms`, or less when `wake` is ready first: every pause of the watch is this one future
/// type, so its code is one copy (docs/performance.md).
fn pause_until<'a, H: Host>(
    pve: &'a Pve<'_, H>,
    ms: u64,
    wake: Option<Wake<'a>>,
) -> impl Future<Output = ()> + 'a {
    first_of(pve.host.sleep(ms), wake)
}

/// The task's end was not observed: out of time, or the run was aborted.
fn stopped_waiting<H: Host>(pve: &Pve<'_, H>, upid: &Upid, stop: Stopped) -> TaskTrouble {
    TaskTrouble::Unknown(Failure::new(match stop {
        Stopped::OutOfTime => format!(
            "task {upid} ({}) was still running after taskTimeoutSec={}s (the method's whole wait); it was not cancelled and may still finish",
            upid.task_type,
            pve.budget.total_ms / 1000
        ),
        Stopped::Aborted => {
            format!("the run was aborted while task {upid} ran; the task was not cancelled")
        }
    }))
}

/// The task runs (PVE gave its UPID) but its status cannot be read: its outcome is unknown.
fn unfollowable(upid: &Upid, error: &PveError) -> Failure {
    let Failure(detail) = could_not_args(format_args!("read the status of task {upid}"), error);
    Failure::new(format!(
        "the {} task was started, but {detail}; its outcome is unknown and it was not cancelled, so it may still finish — check the task list of node {} and the guest's state (run lookup)",
        upid.task_type, upid.node
    ))
}

/// A stopped task's verdict from its exit status and (unless `OK`) its log: `WARNINGS: n` succeeds
/// with its `WARN` lines (logged); anything else fails quoting the log's last lines.
fn judge<H: Host>(
    pve: &Pve<'_, H>,
    upid: &Upid,
    exit_status: String,
    log: Vec<String>,
    log_file: Option<String>,
) -> Result<TaskEnd, TaskFailed> {
    // `OK` comes with no log read ([`follow_task`]): no warnings, no file.
    if exit_status == "OK" || exit_status.starts_with("WARNINGS") {
        let mut warnings = Vec::new();
        for line in log {
            // PVE prints `WARN: <text>`; the closing `TASK WARNINGS: n` line is not a warning.
            if line.trim_start().starts_with("WARN") {
                warnings.push(line);
            }
        }
        for warning in &warnings {
            pve.host.log_args(
                LogLevel::Warning,
                format_args!("task {} ({}): {warning}", upid.task_type, upid.id),
            );
        }
        return Ok(TaskEnd {
            upid: upid.clone(),
            exit_status,
            warnings,
            log_file,
        });
    }
    let reason = if exit_status.is_empty() {
        "no exit status"
    } else {
        &exit_status
    };
    let tail = log_tail(&log);
    // The message grows where it lies: the verdict, the log's end if any, what to do (issue 32).
    let mut message = format!("task {} {upid} failed: {reason}", upid.task_type);
    if !tail.is_empty() {
        let _ = write!(message, " (task log ends: {})", tail.joined(" | "));
    }
    let _ = match reason {
        // PVE's word for a task whose worker vanished (the node crashed or restarted).
        "unexpected status" => write!(
            message,
            " — PVE lost track of the task (its worker on node {} died, e.g. the node restarted), so what it did is unknown: check the guest's state (run lookup) before trying again",
            upid.node
        ),
        _ => write!(
            message,
            " — see the task's log on node {} for the cause",
            upid.node
        ),
    };
    let failure = Failure::new(message);
    Err(TaskFailed {
        exit_status,
        tail,
        log_file,
        failure,
    })
}

/// The last [`TAIL_LINES`] lines of a log within [`TAIL_BYTES`]: whole lines from the end while
/// they fit; a last line longer than the whole allowance keeps its end, after `…`.
pub fn log_tail(log: &[String]) -> Vec<String> {
    let mut tail = Vec::new();
    let mut bytes = 0;
    for line in log.iter().rev().take(TAIL_LINES) {
        if bytes + line.len() > TAIL_BYTES {
            if tail.is_empty() {
                let mut cut = line.len() - TAIL_BYTES;
                while !line.is_char_boundary(cut) {
                    cut += 1;
                }
                tail.push(format!("…{}", &line[cut..]));
            }
            break;
        }
        bytes += line.len();
        tail.push(line.clone());
    }
    tail.reverse();
    tail
}

/// The task's log lines (its non-empty ones), read page by page to its end (at most
/// `LOG_PAGES` pages; a longer log ends with a line saying its end was not read, so neither the
/// tail nor the file passes its first lines off as its end); an unreadable log only loses
/// context, never the verdict.
pub async fn read_log<H: Host>(pve: &Pve<'_, H>, upid: &Upid) -> Vec<String> {
    let mut lines = Vec::new();
    let mut start = 0;
    for page_number in 1..=LOG_PAGES {
        let request = endpoints::task_log(upid, start, LOG_PAGE_LINES);
        // Sent and shaped apart (`client::shaped`): the shape's reading is one copy with
        // `downloadUrl`'s.
        let answer = pve.call(&request).await;
        match shaped::<Vec<TaskLogLine>>(&request, "a task log", answer) {
            Ok(page) => {
                start += page.len();
                let last = page.len() < LOG_PAGE_LINES;
                // A loop, not an iterator chain: smaller in the module (docs/performance.md).
                for line in page {
                    match log_text(&line) {
                        Some(text) if !text.trim().is_empty() => lines.push(text),
                        _ => {}
                    }
                }
                if last {
                    break;
                }
                if page_number == LOG_PAGES {
                    lines.push(format!(
                        "(the log goes on past its first {start} lines; its end was not read)"
                    ));
                }
            }
            Err(e) => {
                pve.host.log_args(
                    LogLevel::Debug,
                    format_args!("task log of {upid} unreadable: {e}"),
                );
                break;
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::global_args::GlobalArgs;
    use crate::poll::ANSWER_MS;
    use crate::testing::{api_args, block_on, Answer, ScriptedHost};
    use crate::watch::node_tasks::VERIFY_AFTER_MS;
    use serde_json::json;

    const UPID: &str = "UPID:pve2:0000AAAA:0000BBBB:6571E3A1:qmstart:100:root@pam!t:";

    fn follow(host: &ScriptedHost, timeout_sec: u64) -> Result<TaskEnd, Failure> {
        follow_beside(host, timeout_sec, &[])
    }

    /// Follows UPID while other runs of the process follow `others` on the same node.
    fn follow_beside(
        host: &ScriptedHost,
        timeout_sec: u64,
        others: &[&str],
    ) -> Result<TaskEnd, Failure> {
        let global = GlobalArgs::parse(&api_args(json!({"taskTimeoutSec": timeout_sec}))).unwrap();
        let shared = crate::watch::Shared::default();
        let _others: Vec<_> = others
            .iter()
            .map(|upid| shared.follow_task(&global.transport, &Upid::parse(upid).unwrap()))
            .collect();
        let pve = Pve {
            host,
            settings: &global.transport,
            task_timeout_ms: timeout_sec * 1000,
            poll_cap_ms: 1000,
            request_timeout_ms: 30_000,
            scrub: &crate::scrub::Scrubber::default(),
            budget: &crate::poll::WaitBudget::new(timeout_sec * 1000),
            shared: &shared,
        };
        block_on(await_task(&pve, &Upid::parse(UPID).unwrap()))
    }

    /// Another run's task on the same node as UPID.
    const OTHER: &str = "UPID:pve2:0000AAAB:0000BBBC:6571E3A2:qmstart:101:root@pam!t:";

    fn listing(status: &str) -> Answer {
        Answer::Data(
            json!([{"upid": OTHER, "status": "RUNNING"}, {"upid": UPID, "status": status}]),
        )
    }

    #[test]
    fn beside_other_runs_the_end_and_its_exit_status_come_from_the_nodes_task_list() {
        let host = ScriptedHost::new();
        host.on("GET /nodes/pve2/tasks", [listing("RUNNING"), listing("OK")]);
        let end = follow_beside(&host, 60, &[OTHER]).unwrap();
        assert_eq!(end.exit_status, "OK");
        assert_eq!(
            host.routes_called(),
            vec!["GET /nodes/pve2/tasks", "GET /nodes/pve2/tasks"],
            "no status read of its own"
        );
        let url = &host.requests.borrow()[0].url;
        assert!(
            url.contains("source=all") && url.contains("since=1701962657"),
            "{url}"
        );
    }

    #[test]
    fn a_failure_the_list_shows_fails_with_the_tasks_words() {
        let host = ScriptedHost::new();
        host.on(
            "GET /nodes/pve2/tasks",
            [listing("start failed: QEMU exited with code 1")],
        );
        let failure = follow_beside(&host, 60, &[OTHER]).unwrap_err();
        assert!(
            failure
                .0
                .contains("failed: start failed: QEMU exited with code 1"),
            "{}",
            failure.0
        );
    }

    #[test]
    fn a_task_list_that_cannot_be_read_sends_the_run_back_to_its_own_task_saying_so() {
        let host = ScriptedHost::new();
        host.on(
            "GET /nodes/pve2/tasks",
            [Answer::Error(500, "unable to read task index".into())],
        );
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        assert!(follow_beside(&host, 60, &[OTHER]).is_ok());
        assert_eq!(
            host.routes_called(),
            vec!["GET /nodes/pve2/tasks".to_string(), status_route()]
        );
        assert!(host
            .logs
            .borrow()
            .iter()
            .any(|(level, m)| *level == LogLevel::Warning
                && m.contains("task list of node pve2 could not be read")));
    }

    /// A host whose node task list answers `list` and whose task status says the task ended OK.
    fn listed_then_ended(list: Value) -> ScriptedHost {
        let host = ScriptedHost::new();
        host.data("GET /nodes/pve2/tasks", list);
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        host
    }

    #[test]
    fn a_task_the_list_leaves_out_is_read_on_its_own() {
        let host = listed_then_ended(json!([{"upid": OTHER, "status": "RUNNING"}]));
        assert!(follow_beside(&host, 60, &[OTHER]).is_ok());
        assert_eq!(host.routes_called().last(), Some(&status_route()));
    }

    #[test]
    fn a_list_that_never_moves_holds_a_run_no_longer_than_the_verification_period() {
        let host = listed_then_ended(json!([{"upid": UPID, "status": "RUNNING"}]));
        assert!(follow_beside(&host, 60, &[OTHER]).is_ok());
        let waited = host.elapsed_ms();
        assert!(
            (VERIFY_AFTER_MS..VERIFY_AFTER_MS + 1_500.0).contains(&waited),
            "{waited}"
        );
    }

    #[test]
    fn a_budget_spent_on_list_reads_ends_with_the_tasks_own_status() {
        let host = listed_then_ended(json!([{"upid": UPID, "status": "RUNNING"}]));
        assert!(
            follow_beside(&host, 3, &[OTHER]).is_ok(),
            "the end is read, not timed out"
        );
        assert_eq!(host.routes_called().last(), Some(&status_route()));
    }

    #[test]
    fn beside_a_list_that_never_moves_a_short_wait_reads_its_own_task_at_half_of_what_is_left() {
        // taskTimeoutSec 8: the last probe may go at 7 s, so the task's own status is read at
        // 3.5 s, leaving the rest to read the guest's state after the task's end.
        let host = listed_then_ended(json!([{"upid": UPID, "status": "RUNNING"}]));
        assert!(follow_beside(&host, 8, &[OTHER]).is_ok());
        let waited = host.elapsed_ms();
        assert!((3_500.0..4_000.0).contains(&waited), "{waited}");
        let own = host
            .routes_called()
            .iter()
            .filter(|r| **r == status_route())
            .count();
        assert_eq!(own, 1);
    }

    #[test]
    fn beside_a_list_that_never_moves_the_last_probe_is_the_tasks_own_status_one_read_before_the_end(
    ) {
        let host = ScriptedHost::new();
        host.data(
            "GET /nodes/pve2/tasks",
            json!([{"upid": UPID, "status": "RUNNING"}]),
        );
        host.data(&status_route(), json!({"status": "running"}));
        let failure = follow_beside(&host, 8, &[OTHER]).unwrap_err();
        assert!(
            failure.0.contains("still running after taskTimeoutSec=8s"),
            "{}",
            failure.0
        );
        assert_eq!(host.routes_called().last(), Some(&status_route()));
        assert_eq!(host.elapsed_ms().round(), 8_000.0 - ANSWER_MS);
    }

    #[test]
    fn a_budget_spent_before_the_first_probe_still_reads_the_task_once() {
        let host = ScriptedHost::new();
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let global = GlobalArgs::parse(&api_args(json!({}))).unwrap();
        let budget = crate::poll::WaitBudget::new(1_000);
        budget.deadline(host.now_ms() - 1_000.0); // an earlier wait spent it all
        let pve = Pve {
            host: &host,
            settings: &global.transport,
            task_timeout_ms: 1_000,
            poll_cap_ms: 1000,
            request_timeout_ms: 30_000,
            scrub: &crate::scrub::Scrubber::default(),
            budget: &budget,
            shared: &crate::watch::Shared::default(),
        };
        assert!(block_on(await_task(&pve, &Upid::parse(UPID).unwrap())).is_ok());
        assert_eq!(host.routes_called(), vec![status_route()]);
    }

    fn status_route() -> String {
        format!("GET /nodes/pve2/tasks/{UPID}/status")
    }

    #[test]
    fn ok_task_succeeds_and_is_polled_on_the_upid_node() {
        let host = ScriptedHost::new();
        host.on(
            &status_route(),
            [
                Answer::Data(json!({"status": "running"})),
                Answer::Data(json!({"status": "stopped", "exitstatus": "OK"})),
            ],
        );
        let end = follow(&host, 60).unwrap();
        assert_eq!(end.exit_status, "OK");
        assert!(host
            .routes_called()
            .iter()
            .all(|r| r.starts_with("GET /nodes/pve2/tasks/")));
    }

    #[test]
    fn warnings_succeed_and_keep_the_warn_lines() {
        let host = ScriptedHost::new();
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "WARNINGS: 1"}),
        );
        host.data(
            &format!("GET /nodes/pve2/tasks/{UPID}/log"),
            json!([{"n": 1, "t": "starting"}, {"n": 2, "t": "WARN: no efidisk configured"}, {"n": 3, "t": "TASK WARNINGS: 1"}]),
        );
        let end = follow(&host, 60).unwrap();
        assert_eq!(
            end.warnings,
            vec!["WARN: no efidisk configured".to_string()]
        );
        assert!(host
            .logs
            .borrow()
            .iter()
            .any(|(l, m)| *l == LogLevel::Warning && m.contains("no efidisk")));
    }

    #[test]
    fn an_error_exit_status_fails_with_the_task_text() {
        let host = ScriptedHost::new();
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "start failed: QEMU exited with code 1"}),
        );
        let failure = follow(&host, 60).unwrap_err();
        assert!(
            failure
                .0
                .contains("failed: start failed: QEMU exited with code 1"),
            "{}",
            failure.0
        );
    }

    #[test]
    fn a_failure_quotes_the_end_of_a_long_log_read_page_by_page() {
        let host = ScriptedHost::new();
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "command 'vma' failed: exit code 1"}),
        );
        let page = |from: usize, to: usize| {
            let lines: Vec<Value> = (from..=to)
                .map(|n| json!({"n": n, "t": format!("line {n}")}))
                .collect();
            Answer::Data(Value::Array(lines))
        };
        host.on(
            &format!("GET /nodes/pve2/tasks/{UPID}/log"),
            [page(1, 500), page(501, 620)],
        );
        let failure = follow(&host, 60).unwrap_err().0;
        assert!(
            failure.contains("(task log ends: line 611 | line 612 |")
                && failure.contains("| line 620) — see the task's log"),
            "{failure}"
        );
        assert!(!failure.contains("line 610 "), "{failure}");
        let urls: Vec<String> = host
            .requests
            .borrow()
            .iter()
            .filter(|r| r.url.contains("/log"))
            .map(|r| r.url.clone())
            .collect();
        assert_eq!(urls.len(), 2, "{urls:?}");
        assert!(urls[1].contains("start=500"), "{}", urls[1]);
    }

    /// Follows UPID (its log: `lines` lines) to `exit_status` on a host that stores files or not.
    fn follow_logged(
        exit_status: &str,
        lines: usize,
        files: bool,
    ) -> (ScriptedHost, Result<TaskEnd, TaskTrouble>) {
        let mut host = ScriptedHost::new();
        host.files = files.then(Default::default);
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": exit_status}),
        );
        let log: Vec<Value> = (1..=lines)
            .map(|n| json!({"n": n, "t": format!("WARN: line {n}")}))
            .collect();
        host.data(&format!("GET /nodes/pve2/tasks/{UPID}/log"), json!(log));
        let followed = follow_alone(&host);
        (host, followed)
    }

    /// `follow_task` of UPID on `host`, alone on its node, with a 10 s budget.
    fn follow_alone(host: &ScriptedHost) -> Result<TaskEnd, TaskTrouble> {
        let global = GlobalArgs::parse(&api_args(json!({}))).unwrap();
        let pve = Pve {
            host,
            settings: &global.transport,
            task_timeout_ms: 10_000,
            poll_cap_ms: 1000,
            request_timeout_ms: 30_000,
            scrub: &crate::scrub::Scrubber::default(),
            budget: &crate::poll::WaitBudget::new(10_000),
            shared: &crate::watch::Shared::default(),
        };
        block_on(follow_task(&pve, &Upid::parse(UPID).unwrap()))
    }

    fn failed(followed: Result<TaskEnd, TaskTrouble>) -> TaskFailed {
        match followed {
            Err(TaskTrouble::Failed(failed)) => *failed,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failed_tasks_whole_log_is_kept_as_a_file_named_after_the_task() {
        let (host, followed) = follow_logged("command 'vma' failed: exit code 1", 450, true);
        let failed = failed(followed);
        let name = "tasklog-pve2-0000AAAA-6571E3A1";
        assert_eq!(failed.log_file.as_deref(), Some(name));
        assert_eq!(failed.log_ref(), (Some(name.to_string()), Vec::new()));
        let files = host.files.unwrap().into_inner();
        assert_eq!(files.len(), 1);
        assert_eq!(
            (files[0].0.as_str(), files[0].1.as_str()),
            (LOG_FILE_SPEC, name)
        );
        let lines: Vec<&str> = files[0].2.lines().collect();
        assert_eq!(lines.len(), 450);
        assert_eq!((lines[0], lines[449]), ("WARN: line 1", "WARN: line 450"));
    }

    #[test]
    fn a_host_that_stores_no_files_leaves_a_failed_task_its_tail_for_the_record() {
        let (_, followed) = follow_logged("job errors", 30, false);
        let failed = failed(followed);
        assert_eq!(failed.log_file, None);
        let (file, tail) = failed.log_ref();
        assert_eq!(file, None);
        assert_eq!(tail.len(), TAIL_LINES);
        assert_eq!(tail.last().map(String::as_str), Some("WARN: line 30"));
    }

    #[test]
    fn a_log_ending_in_warnings_is_kept_as_a_file_and_an_ok_one_is_not() {
        let (_, warned) = follow_logged("WARNINGS: 3", 3, true);
        let end = warned.unwrap();
        assert_eq!(end.warnings.len(), 3);
        assert_eq!(
            end.log_file.as_deref(),
            Some("tasklog-pve2-0000AAAA-6571E3A1")
        );
        let (host, ok) = follow_logged("OK", 3, true);
        assert_eq!(ok.unwrap().log_file, None);
        assert!(host.files.unwrap().into_inner().is_empty());
    }

    #[test]
    fn a_log_longer_than_the_pages_read_says_its_end_was_not_read() {
        // Every page answers full, as a log past LOG_PAGES pages does.
        let failed = failed(follow_logged("exit code 1", LOG_PAGE_LINES, true).1);
        let tail = failed.tail;
        assert_eq!(
            tail.last().map(String::as_str),
            Some("(the log goes on past its first 10000 lines; its end was not read)")
        );
    }

    #[test]
    fn a_log_file_keeps_the_end_of_a_log_beyond_a_mebibyte_saying_what_it_left_out() {
        let log: Vec<String> = (1..=3000).map(|n| format!("{n:>1023}")).collect();
        let text = log_file_text(&log);
        assert!(text.len() <= LOG_FILE_BYTES + 100, "{}", text.len());
        let kept = LOG_FILE_BYTES / 1024;
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "… {} earlier lines left out (this file keeps the log's end)",
                3000 - kept
            )
        );
        assert!(text.ends_with(&format!("{}\n", log[2999])));
        assert_eq!(text.lines().count(), kept + 1);
        assert_eq!(
            log_file_text(&log[..3]).lines().count(),
            3,
            "a short log whole"
        );
    }

    #[test]
    fn a_tail_holds_at_most_ten_lines_and_two_kilobytes() {
        let log: Vec<String> = (1..=30).map(|n| format!("{n:>300}")).collect();
        let tail = log_tail(&log);
        assert_eq!(tail.len(), TAIL_BYTES / 300, "whole lines while they fit");
        assert_eq!(tail.last(), log.last());
        let short: Vec<String> = (1..=30).map(|n| n.to_string()).collect();
        assert_eq!(log_tail(&short), short[20..].to_vec());
    }

    #[test]
    fn a_last_line_longer_than_the_tail_keeps_its_end() {
        let line = format!("{}é the cause", "x".repeat(5000));
        let tail = log_tail(&[line]);
        assert_eq!(tail.len(), 1);
        assert!(tail[0].starts_with('…') && tail[0].ends_with("é the cause"));
        assert!(tail[0].len() <= TAIL_BYTES + '…'.len_utf8());
    }

    #[test]
    fn no_such_task_right_after_dispatch_is_retried() {
        let host = ScriptedHost::new();
        host.on(
            &status_route(),
            [
                Answer::Error(400, "no such task".into()),
                Answer::Data(json!({"status": "stopped", "exitstatus": "OK"})),
            ],
        );
        assert!(follow(&host, 60).is_ok());
    }

    #[test]
    fn a_task_running_past_the_timeout_fails_saying_so() {
        let host = ScriptedHost::new();
        host.data(&status_route(), json!({"status": "running"}));
        let failure = follow(&host, 5).unwrap_err();
        assert!(
            failure.0.contains("still running after taskTimeoutSec=5s"),
            "{}",
            failure.0
        );
        // Its last read went out one read's time before the end, with time to answer.
        let waited = host.elapsed_ms();
        assert!((5000.0 - ANSWER_MS..5000.0).contains(&waited), "{waited}");
    }

    #[test]
    fn an_unreadable_task_status_fails_saying_the_task_may_still_finish() {
        let host = ScriptedHost::new();
        host.on(
            &status_route(),
            [Answer::Error(
                500,
                "unable to read tail (got timeout)".into(),
            )],
        );
        let failure = follow(&host, 60).unwrap_err();
        assert!(
            failure.0.starts_with(
                "the qmstart task was started, but could not read the status of task UPID:pve2:"
            ),
            "{}",
            failure.0
        );
        assert!(failure
            .0
            .contains("unable to read tail (got timeout) (HTTP 500)"));
        assert!(failure.0.contains("may still finish"), "{}", failure.0);
        assert!(
            failure.0.contains("task list of node pve2"),
            "{}",
            failure.0
        );
        assert_eq!(host.routes_called().len(), 1, "a PVE error is not retried");
    }

    #[test]
    fn unexpected_status_after_a_node_crash_fails() {
        let host = ScriptedHost::new();
        host.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "unexpected status"}),
        );
        let failure = follow(&host, 60).unwrap_err().0;
        assert!(failure.contains("failed: unexpected status"), "{failure}");
        assert!(
            failure.contains("PVE lost track of the task") && failure.contains("run lookup"),
            "{failure}"
        );
    }

    #[test]
    fn a_failed_task_is_told_from_an_end_that_was_not_observed() {
        let follow = follow_alone;
        let failed = ScriptedHost::new();
        failed.data(
            &status_route(),
            json!({"status": "stopped", "exitstatus": "VM quit/powerdown failed"}),
        );
        assert!(matches!(follow(&failed), Err(TaskTrouble::Failed(_))));
        let unreadable = ScriptedHost::new();
        unreadable.on(
            &status_route(),
            [Answer::Error(403, "Permission check failed".into())],
        );
        assert!(matches!(follow(&unreadable), Err(TaskTrouble::Unknown(_))));
        let endless = ScriptedHost::new();
        endless.data(&status_route(), json!({"status": "running"}));
        assert!(matches!(follow(&endless), Err(TaskTrouble::Unknown(_))));
    }
}
